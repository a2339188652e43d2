package framework

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestExecRunner(t *testing.T) {
	ctx := context.Background()
	out, err := ExecRunner{}.Run(ctx, Command{Name: "sh", Args: []string{"-c", "cat; echo $X"}, Env: []string{"X=env"}, Stdin: "in\n"})
	if err != nil || out != "in\nenv\n" {
		t.Errorf("got %q, %v", out, err)
	}
	var echo strings.Builder
	_, err = ExecRunner{}.Run(ctx, Command{Name: "sh", Args: []string{"-c", "echo progress; echo bad >&2; exit 3"}, Echo: &echo})
	var ce *CommandError
	if !errors.As(err, &ce) || ce.ExitCode != 3 || strings.TrimSpace(ce.Stderr) != "bad" || ExitCode(err) != 3 {
		t.Fatalf("error %#v", err)
	}
	if !strings.Contains(err.Error(), "sh -c echo progress; echo bad >&2; exit 3: exit status 3: bad") {
		t.Errorf("message %q", err.Error())
	}
	if e := echo.String(); !strings.Contains(e, "progress\n") || !strings.Contains(e, "bad\n") {
		t.Errorf("echo %q", echo.String())
	}
	if _, err := (ExecRunner{}).Run(ctx, Command{Name: "/nonexistent/program"}); ExitCode(err) != -1 {
		t.Errorf("missing program: %v", err)
	}
}
