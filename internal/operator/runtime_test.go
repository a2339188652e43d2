package operator

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/go-logr/logr"
)

func TestTuneRuntime(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })

	t.Run("GOGC unset", func(t *testing.T) {
		if v, set := os.LookupEnv("GOGC"); set {
			t.Setenv("GOGC", v) // restored after the test
			os.Unsetenv("GOGC")
		}
		debug.SetGCPercent(100)
		TuneRuntime(logr.Discard())
		if got := debug.SetGCPercent(100); got != DefaultGCPercent {
			t.Errorf("GOGC after TuneRuntime = %d, want the default %d", got, DefaultGCPercent)
		}
	})
	t.Run("GOGC set", func(t *testing.T) {
		t.Setenv("GOGC", "80")
		debug.SetGCPercent(80) // as the runtime read it at start
		TuneRuntime(logr.Discard())
		if got := debug.SetGCPercent(100); got != 80 {
			t.Errorf("GOGC after TuneRuntime = %d, want 80, the environment's", got)
		}
	})
	t.Run("GOMEMLIMIT set", func(t *testing.T) {
		prevLimit := debug.SetMemoryLimit(-1)
		t.Cleanup(func() { debug.SetMemoryLimit(prevLimit) })
		t.Setenv("GOMEMLIMIT", "123MiB")
		debug.SetMemoryLimit(123 << 20) // as the runtime read it at start
		TuneRuntime(logr.Discard())
		if got := debug.SetMemoryLimit(-1); got != 123<<20 {
			t.Errorf("soft memory limit after TuneRuntime = %d, want %d, the environment's", got, 123<<20)
		}
	})
}
