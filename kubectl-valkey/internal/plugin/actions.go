package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// failoverCommand requests a planned failover (annotation valkey.io/failover, a new
// value each time) and waits until the cluster-controller answers it in status.failover:
// done (the shard's new primary serves it) or refused.
func failoverCommand(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
	shard := fs.Int32("shard", -1, "the shard to fail over (required)")
	to := fs.String("to", "", "the replica (a ValkeyNode of the shard) to take over; default: the most caught-up replica in sync")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long to wait for the failover")
	return func(ctx context.Context, e *env, args []string) error {
		name, err := clusterArg(args)
		if err != nil {
			return err
		}
		if *shard < 0 {
			return errors.New("--shard is required")
		}
		vc, err := e.getCluster(ctx, name)
		if err != nil {
			return err
		}
		if pending := pendingFailover(vc); pending != "" {
			return fmt.Errorf("a failover request is pending (%s): wait for it, or remove the %s annotation", pending, v1alpha1.AnnotationFailover)
		}
		old := primaryOf(vc, *shard)
		if old == "" {
			return fmt.Errorf("shard %d has no primary in the cluster's status", *shard)
		}
		if *to == old {
			fmt.Fprintf(e.out, "%s already serves shard %d\n", old, *shard)
			return nil
		}
		value := failoverValue(*shard, *to, time.Now())
		if err := e.annotate(ctx, vc, v1alpha1.AnnotationFailover, &value); err != nil {
			return err
		}
		fmt.Fprintf(e.out, "requested a failover of shard %d (primary %s): %s=%s\n", *shard, old, v1alpha1.AnnotationFailover, value)
		last := ""
		return e.until(ctx, name, *timeout, func(vc *v1alpha1.ValkeyCluster) (bool, error) {
			done, line, err := failoverProgress(vc, value, *shard, old)
			if line != "" && line != last {
				fmt.Fprintln(e.out, line)
				last = line
			}
			return done, err
		})
	}
}

// failoverValue is a new valkey.io/failover value: "<shard>[/<member>]@<time>", the time
// making each request new.
func failoverValue(shard int32, to string, now time.Time) string {
	v := fmt.Sprint(shard)
	if to != "" {
		v += "/" + to
	}
	return v + "@" + now.UTC().Format(time.RFC3339Nano)
}

// pendingFailover describes the cluster's failover request when status does not answer
// it yet, or returns "".
func pendingFailover(vc *v1alpha1.ValkeyCluster) string {
	value, ok := vc.Annotations[v1alpha1.AnnotationFailover]
	if !ok || vc.Status.Failover.Answered(value) {
		return ""
	}
	if f := vc.Status.Failover; f != nil && f.Request == value {
		return fmt.Sprintf("%q %s: %s", value, f.Phase, f.Message)
	}
	return fmt.Sprintf("%q, not seen by the cluster-controller yet", value)
}

// failoverProgress reads the answer to request value in the cluster's status: done once
// it is Done, an error when Refused, and the line to show of where it stands.
func failoverProgress(vc *v1alpha1.ValkeyCluster, value string, shard int32, old string) (bool, string, error) {
	f := vc.Status.Failover
	if f == nil || f.Request != value {
		return false, "", nil
	}
	switch f.Phase {
	case v1alpha1.FailoverRequestDone:
		return true, fmt.Sprintf("shard %d: %s is the primary now (was %s)", shard, f.Target, old), nil
	case v1alpha1.FailoverRequestRefused:
		return false, "", fmt.Errorf("the failover request was refused: %s", f.Message)
	}
	return false, fmt.Sprintf("%s: %s", f.Phase, f.Message), nil
}

// primaryOf is the primary of a shard as the cluster's status names it.
func primaryOf(vc *v1alpha1.ValkeyCluster, shard int32) string {
	for _, sh := range vc.Status.Shards {
		if sh.Index == shard {
			return sh.Primary
		}
	}
	return ""
}

// restartCommand requests a rolling restart (annotation valkey.io/restarted-at, or
// valkey.io/restarted-at-shard-N) and waits until every member of the shards runs a pod
// built after it and the cluster is back to Progressing=False.
func restartCommand(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
	shard := fs.Int32("shard", -1, "restart only this shard (default: every shard)")
	wait := fs.Bool("wait", true, "wait until the restart is done")
	timeout := fs.Duration("timeout", 30*time.Minute, "how long to wait")
	return func(ctx context.Context, e *env, args []string) error {
		name, err := clusterArg(args)
		if err != nil {
			return err
		}
		vc, err := e.getCluster(ctx, name)
		if err != nil {
			return err
		}
		if *shard >= vc.Spec.ShardCount() {
			return fmt.Errorf("the cluster has %d shards (0 to %d)", vc.Spec.ShardCount(), vc.Spec.ShardCount()-1)
		}
		key, what := v1alpha1.AnnotationRestartedAt, "every shard"
		if *shard >= 0 {
			key, what = v1alpha1.AnnotationRestartedAtShard(*shard), fmt.Sprintf("shard %d", *shard)
		}
		at := time.Now().UTC().Truncate(time.Second)
		value := at.Format(time.RFC3339)
		if err := e.annotate(ctx, vc, key, &value); err != nil {
			return err
		}
		fmt.Fprintf(e.out, "requested a rolling restart of %s (%s=%s)\n", what, key, value)
		if isPaused(vc) {
			fmt.Fprintln(e.out, "the cluster is paused: the restart starts when it is resumed (kubectl valkey resume)")
			return nil
		}
		if !*wait {
			return nil
		}
		last := ""
		return e.until(ctx, name, *timeout, func(vc *v1alpha1.ValkeyCluster) (bool, error) {
			nodes := &v1alpha1.ValkeyNodeList{}
			if err := e.c.List(ctx, nodes, client.InNamespace(vc.Namespace), client.MatchingLabels{v1alpha1.LabelInstance: vc.Name}); err != nil {
				return false, err
			}
			done, total, leaving := restartProgress(nodes.Items, *shard, at)
			line := fmt.Sprintf("%d of %d members restarted", done, total)
			if leaving > 0 {
				line += fmt.Sprintf(", %d leaving", leaving)
			}
			if line != last {
				fmt.Fprintln(e.out, line)
				last = line
			}
			c := meta(vc.Status.Conditions, v1alpha1.ConditionProgressing)
			settled := c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == vc.Generation
			if done == total && leaving == 0 && settled {
				fmt.Fprintf(e.out, "restart of %s done\n", what)
				return true, nil
			}
			return false, nil
		})
	}
}

// restartProgress counts the members of shard (all when < 0) whose running pod was built
// for a restart at or after at, the members in all, and those leaving.
func restartProgress(nodes []v1alpha1.ValkeyNode, shard int32, at time.Time) (done, total, leaving int) {
	for _, n := range nodes {
		if shard >= 0 && n.Spec.ShardIndex != shard {
			continue
		}
		if !n.DeletionTimestamp.IsZero() {
			leaving++
			continue
		}
		total++
		t, err := time.Parse(time.RFC3339, n.Spec.RestartedAt)
		if err == nil && !t.Before(at) && n.Status.Revision == n.Spec.Revision {
			done++
		}
	}
	return done, total, leaving
}

func isPaused(vc *v1alpha1.ValkeyCluster) bool {
	return vc.Annotations[v1alpha1.AnnotationPaused] == "true"
}

// pauseCommand sets (pause) or removes (resume) valkey.io/paused and waits until the
// cluster-controller's Paused condition says so.
func pauseCommand(pause bool) command {
	return func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
		timeout := fs.Duration("timeout", time.Minute, "how long to wait for the cluster-controller to confirm")
		return func(ctx context.Context, e *env, args []string) error {
			name, err := clusterArg(args)
			if err != nil {
				return err
			}
			vc, err := e.getCluster(ctx, name)
			if err != nil {
				return err
			}
			var value *string
			want := metav1.ConditionFalse
			if pause {
				v := "true"
				value, want = &v, metav1.ConditionTrue
			}
			if err := e.annotate(ctx, vc, v1alpha1.AnnotationPaused, value); err != nil {
				return err
			}
			return e.until(ctx, name, *timeout, func(vc *v1alpha1.ValkeyCluster) (bool, error) {
				c := meta(vc.Status.Conditions, v1alpha1.ConditionPaused)
				if c == nil || c.Status != want {
					return false, nil
				}
				verb := "resumed"
				if pause {
					verb = "paused"
				}
				fmt.Fprintf(e.out, "%s %s: %s\n", verb, name, strings.TrimSpace(c.Message))
				return true, nil
			})
		}
	}
}
