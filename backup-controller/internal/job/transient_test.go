package job

import (
	"context"
	"errors"
	"testing"
)

func TestTransient(t *testing.T) {
	if transient(context.Canceled) {
		t.Error("a cancelled context is transient")
	}
	if !transient(errors.New("connection reset by peer")) {
		t.Error("a dropped connection is not transient")
	}
}
