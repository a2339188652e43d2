// Package component is the backup-controller as the operator runs it, alone (its own
// binary, which is also the program of its Jobs) or beside the other controllers in
// one process (the manager binary): backups, backup schedules and restores of
// ValkeyClusters.
package component

import (
	"context"
	"errors"
	"flag"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/valkey-operator/valkey-operator/api/validation"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/backup"
	"github.com/valkey-operator/valkey-operator/internal/operator"
)

// The metrics endpoint checks its clients (internal/operator.MetricsOptions).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

const name = "backup-controller"

// New returns the component.
func New() operator.Component {
	var image string
	var deadline time.Duration
	return operator.Component{
		Name: name,
		AddFlags: func(fs *flag.FlagSet) {
			fs.StringVar(&image, "job-image", os.Getenv("OPERATOR_IMAGE"), "image of the backup and restore Jobs (the operator image, which holds this binary)")
			fs.DurationVar(&deadline, "job-deadline", time.Hour, "how long one backup or restore Job may run")
		},
		// Only the Jobs this controller made are cached; Secrets and pods are read
		// uncached, when needed, and never watched.
		Setup: func(ctx context.Context, mgr ctrl.Manager, f operator.Flags) error {
			if image == "" {
				return errors.New("--job-image (or OPERATOR_IMAGE) is required")
			}
			env := &backup.Env{
				Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(),
				Recorder: mgr.GetEventRecorder(name),
				// The policy flags were applied before Setup: the Jobs get the same.
				Jobs: backup.JobSettings{Image: image, DeadlineSeconds: int64(deadline.Seconds()),
					StorePolicy: validation.CurrentPolicy().ObjectStore},
			}
			metrics.Registry.MustRegister(backup.NewCollector(mgr.GetClient()))
			if err := (&backup.BackupReconciler{Env: env}).SetupWithManager(mgr, f.MaxConcurrentReconciles); err != nil {
				return err
			}
			if err := (&backup.ScheduleReconciler{Env: env}).SetupWithManager(mgr, f.MaxConcurrentReconciles); err != nil {
				return err
			}
			return (&backup.RestoreReconciler{Env: env}).SetupWithManager(ctx, mgr, f.MaxConcurrentReconciles)
		},
	}
}
