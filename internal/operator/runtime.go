package operator

import (
	"os"
	"runtime/debug"
	"strconv"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
)

// The memory policy of every operator process (the controllers, the manager and the
// webhooks), applied at start unless the environment sets its own.
//
// What a controller keeps is mostly its caches, which change slowly, so the garbage
// collector's default (GOGC=100: collect once the heap has doubled since the last
// collection) mostly holds garbage: at rest up to half the heap waits to be collected.
// DefaultGCPercent collects sooner; the CPU it costs is small because at rest little is
// allocated (docs/scale.md has the figures).
//
// The container's memory limit becomes the runtime's soft limit (MemoryLimitRatio of
// it), so that a burst (a tenant's many objects, a large reply) makes the collector work
// harder before the kernel would kill the process.
const (
	// DefaultGCPercent is the GOGC the processes run with when GOGC is not set.
	DefaultGCPercent = 25
	// MemoryLimitRatio is the share of the container's memory limit given to the Go
	// runtime as its soft limit when GOMEMLIMIT is not set.
	MemoryLimitRatio = 0.9
)

// TuneRuntime applies the memory policy above: GOGC unless set, and GOMEMLIMIT from the
// cgroup's memory limit unless set (none when the process has no limit).
func TuneRuntime(log logr.Logger) {
	gcPercent, set := os.LookupEnv("GOGC")
	if !set {
		debug.SetGCPercent(DefaultGCPercent)
		gcPercent = strconv.Itoa(DefaultGCPercent)
	}
	limit, err := memlimit.SetGoMemLimitWithOpts(
		memlimit.WithRatio(MemoryLimitRatio),
		memlimit.WithProvider(memlimit.FromCgroup),
	)
	if err != nil {
		// No cgroup or no limit in it (a process outside a container): no soft limit.
		log.V(1).Info("the Go runtime gets no soft memory limit", "reason", err.Error())
	}
	log.Info("memory policy", "GOGC", gcPercent, "softLimitBytes", debug.SetMemoryLimit(-1), "fromCgroup", limit > 0)
}
