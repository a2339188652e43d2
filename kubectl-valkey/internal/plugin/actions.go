package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// failoverCommand requests a planned failover (annotation valkey.io/failover) and waits
// until the shard's new primary serves it, or the controller refused the request.
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
		if pending, ok := vc.Annotations[v1alpha1.AnnotationFailover]; ok {
			return fmt.Errorf("a failover request is pending (%s=%s): wait for it, or remove the annotation", v1alpha1.AnnotationFailover, pending)
		}
		old := primaryOf(vc, *shard)
		if old == "" {
			return fmt.Errorf("shard %d has no primary in the cluster's status", *shard)
		}
		if *to == old {
			fmt.Fprintf(e.out, "%s already serves shard %d\n", old, *shard)
			return nil
		}
		value := fmt.Sprint(*shard)
		if *to != "" {
			value += "/" + *to
		}
		asked := time.Now().Add(-time.Second) // events carry the controller's clock
		if err := e.annotate(ctx, vc, v1alpha1.AnnotationFailover, &value); err != nil {
			return err
		}
		fmt.Fprintf(e.out, "requested a failover of shard %d (primary %s)\n", *shard, old)
		return e.until(ctx, name, *timeout, func(vc *v1alpha1.ValkeyCluster) (bool, error) {
			if now := primaryOf(vc, *shard); now != old && now != "" && (*to == "" || now == *to) {
				fmt.Fprintf(e.out, "shard %d: %s is the primary now (was %s)\n", *shard, now, old)
				return true, nil
			}
			if _, pending := vc.Annotations[v1alpha1.AnnotationFailover]; pending {
				return false, nil
			}
			ev, err := e.latestEvent(ctx, vc, asked, "FailoverRefused")
			if err != nil || ev == nil {
				return false, err
			}
			return false, fmt.Errorf("%s: %s", ev.Reason, ev.Note)
		})
	}
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

// latestEvent returns the newest event about the cluster since t with one of reasons.
func (e *env) latestEvent(ctx context.Context, vc *v1alpha1.ValkeyCluster, since time.Time, reasons ...string) (*eventsv1.Event, error) {
	evs := &eventsv1.EventList{}
	if err := e.c.List(ctx, evs, client.InNamespace(vc.Namespace)); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	var best *eventsv1.Event
	for i := range evs.Items {
		ev := &evs.Items[i]
		if ev.Regarding.Kind != "ValkeyCluster" || ev.Regarding.Name != vc.Name || eventTime(*ev).Before(since) {
			continue
		}
		for _, r := range reasons {
			if ev.Reason == r && (best == nil || eventTime(*ev).After(eventTime(*best))) {
				best = ev
			}
		}
	}
	return best, nil
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
