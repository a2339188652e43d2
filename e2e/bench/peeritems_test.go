//go:build bench

package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/checker"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/e2e/peer"
	"github.com/valkey-operator/valkey-operator/e2e/perf"
	"github.com/valkey-operator/valkey-operator/localkube/images"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// The comparison's timing: how long a cluster may take to converge after a create or a
// fault, and after a roll or a scale; the rest windows (as item 9's); how many clusters
// the larger rest point has.
const (
	cmpTimeout       = 3 * time.Minute
	cmpChangeTimeout = 10 * time.Minute
	cmpSettle        = 20 * time.Second
	cmpWindow        = 60 * time.Second
	cmpRestClusters  = 20
	cmpPoll          = 100 * time.Millisecond
)

// side is one operator of the comparison: how the bench makes, reads, changes and
// deletes its clusters. The two have the same kinds with different schemas: ours are
// typed, the peer's unstructured.
type side struct {
	// key names the side's clusters ("ours-ready-1").
	key string
	// namespace runs the operator's pods, which the rest windows measure.
	namespace  string
	newCluster func(ns, name string, shards, replicas int32, image string) client.Object
	// ready is the operator's own word on a cluster just read: it serves its current spec.
	ready     func(obj client.Object) (bool, string)
	setImage  func(obj client.Object, image string) error
	setShards func(obj client.Object, shards int32) error
	pods      func(name string) client.MatchingLabels
	delete    func(ctx context.Context, c client.Client, obj client.Object) error
}

// oursSide is this operator, its clusters made as the other items make them.
func oursSide() side {
	vc := func(obj client.Object) *v1alpha1.ValkeyCluster { return obj.(*v1alpha1.ValkeyCluster) }
	return side{
		key: "ours", namespace: framework.OperatorNamespace,
		newCluster: func(ns, name string, shards, replicas int32, image string) client.Object {
			c := framework.NewValkeyCluster(ns, name, shards, replicas)
			c.Spec.Image = image
			return c
		},
		ready:     func(obj client.Object) (bool, string) { return framework.ClusterReady(vc(obj)) },
		setImage:  func(obj client.Object, image string) error { vc(obj).Spec.Image = image; return nil },
		setShards: func(obj client.Object, shards int32) error { vc(obj).Spec.Shards = shards; return nil },
		pods: func(name string) client.MatchingLabels {
			return client.MatchingLabels{v1alpha1.LabelInstance: name, v1alpha1.LabelName: v1alpha1.AppName}
		},
		delete: func(ctx context.Context, c client.Client, obj client.Object) error {
			stuck, err := perf.DeleteCluster(ctx, c, vc(obj), cmpTimeout)
			if len(stuck) > 0 {
				results.Anomaly("the system users Secret kept finalizers %v after its ValkeyCluster was deleted (the bench removed them)", stuck)
			}
			return err
		},
	}
}

// peerSide is the valkey-io operator of manifest m; its clusters' exporter runs exporter.
func peerSide(m peer.Manifest, exporter string) side {
	u := func(obj client.Object) *unstructured.Unstructured { return obj.(*unstructured.Unstructured) }
	return side{
		key: "peer", namespace: m.Namespace,
		newCluster: func(ns, name string, shards, replicas int32, image string) client.Object {
			return peer.NewCluster(ns, name, peer.ClusterSpec{Shards: shards, Replicas: replicas, Image: image, ExporterImage: exporter, User: framework.TestUser})
		},
		ready:     func(obj client.Object) (bool, string) { return peer.ClusterReady(u(obj)) },
		setImage:  func(obj client.Object, image string) error { return peer.SetImage(u(obj), image) },
		setShards: func(obj client.Object, shards int32) error { return peer.SetShards(u(obj), shards) },
		pods:      peer.Pods,
		delete: func(ctx context.Context, c client.Client, obj client.Object) error {
			if err := c.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
				return err
			}
			if err := framework.WaitForDeletion(ctx, c, obj, cmpTimeout); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, cmpTimeout)
			defer cancel()
			return perf.WaitPodsGone(ctx, c, obj.GetNamespace(), peer.Pods(obj.GetName()))
		},
	}
}

// figures are one side's measurements by row key, and why a row stopped.
type figures struct {
	values map[string][]float64
	failed map[string]string
	notes  map[string]string
}

func newFigures() *figures {
	return &figures{values: map[string][]float64{}, failed: map[string]string{}, notes: map[string]string{}}
}

func (f *figures) add(key string, v float64) { f.values[key] = append(f.values[key], v) }

// fail records why the rows of keys stopped (the first reason of each).
func (f *figures) fail(err error, keys ...string) {
	for _, k := range keys {
		if f.failed[k] == "" {
			f.failed[k] = err.Error()
		}
	}
}

// cell is the comparison's cell of a row key.
func (f *figures) cell(key string) perf.Cell {
	c := perf.Measured(f.values[key])
	c.Note = f.notes[key]
	if why := f.failed[key]; why != "" {
		if c.Stat == nil {
			c.Missing = why
		} else {
			c.Note = strings.TrimPrefix(c.Note+fmt.Sprintf("; %d repetitions, then: %s", len(f.values[key]), why), "; ")
		}
	}
	return c
}

// cmpRun measures the compared items on one side.
type cmpRun struct {
	k *framework.Cluster
	// quiet creates clusters without printing the API server's warnings (ours warns of a
	// shard without replica).
	quiet client.Client
	ns    string
	side  side
	// valkey is the Valkey 9.1 image of every cluster.
	valkey images.Image
	fig    *figures
	// pauseSampler pauses the run-wide sampler in the rest windows (the peer's side runs
	// with it paused throughout).
	pauseSampler bool
}

// cmpCluster is a cluster of the comparison and the shape it should converge to.
type cmpCluster struct {
	obj   client.Object
	shape perf.Shape
}

// measure runs every compared item on the side, each recording its figures or why not.
func (r *cmpRun) measure(ctx context.Context, t *testing.T) {
	start := time.Now()
	for _, item := range []struct {
		name string
		keys []string
		run  func(context.Context, *testing.T) error
	}{
		{"3x1 apply → converged", []string{"ready"}, r.ready},
		{"roll under writes", []string{"roll_duration", "roll_failed", "roll_lost", "roll_gap"}, r.roll},
		{"primaries taken down", killKeys(), r.kills},
		{"scale 3 → 4 with 100k keys", []string{"scale_duration", "scale_gap", "scale_failed", "scale_lost", "scale_missing"}, r.scale},
		{"at rest with 1 and 20 clusters", restKeys(), r.rest},
	} {
		itemStart := time.Now()
		if err := item.run(ctx, t); err != nil {
			r.fig.fail(err, item.keys...)
			t.Logf("%s: %s: %v", r.side.key, item.name, err)
		}
		t.Logf("%s: %s took %s", r.side.key, item.name, time.Since(itemStart).Round(time.Second))
	}
	t.Logf("%s: the compared items took %s", r.side.key, time.Since(start).Round(time.Second))
}

// create makes a cluster and returns it with the time just before the create call.
func (r *cmpRun) create(ctx context.Context, name string, shards, replicas int32, image string) (*cmpCluster, time.Time, error) {
	c := &cmpCluster{obj: r.side.newCluster(r.ns, r.side.key+"-"+name, shards, replicas, image),
		shape: perf.Shape{Shards: int(shards), Replicas: int(replicas), Image: image}}
	start := time.Now()
	if err := r.quiet.Create(ctx, c.obj); err != nil {
		return nil, start, fmt.Errorf("create %s: %w", c.obj.GetName(), err)
	}
	return c, start, nil
}

// withConverged creates a 3x1 cluster named name on the compared Valkey image, waits
// until it converged, runs f on it and removes it (the first error is returned).
func (r *cmpRun) withConverged(ctx context.Context, name string, f func(c *cmpCluster) error) (err error) {
	c, start, err := r.create(ctx, name, 3, 1, r.valkey.Ref)
	if err != nil {
		return err
	}
	defer func() {
		if rerr := r.remove(ctx, c); err == nil {
			err = rerr
		}
	}()
	if _, _, err := r.waitConverged(ctx, c, start, cmpTimeout); err != nil {
		return err
	}
	return f(c)
}

// remove deletes a cluster and waits until it and its pods are gone.
func (r *cmpRun) remove(ctx context.Context, c *cmpCluster) error {
	if err := r.side.delete(ctx, r.k.Client, c.obj); err != nil {
		return fmt.Errorf("delete %s: %w", c.obj.GetName(), err)
	}
	return nil
}

// converged is the operator's Ready for the current generation, then the pods and their
// servers as perf.PodsConverged checks them.
func (r *cmpRun) converged(ctx context.Context, c *cmpCluster) (bool, string, error) {
	if err := r.k.Client.Get(ctx, client.ObjectKeyFromObject(c.obj), c.obj); err != nil {
		return false, "", err
	}
	if ok, detail := r.side.ready(c.obj); !ok {
		return false, detail, nil
	}
	ok, detail, err := perf.PodsConverged(ctx, r.k.Client, r.ns, r.side.pods(c.obj.GetName()), c.shape, framework.TestUser, "any")
	return ok, "Ready; " + detail, err
}

// waitConverged polls converged and returns the time since start.
func (r *cmpRun) waitConverged(ctx context.Context, c *cmpCluster, start time.Time, timeout time.Duration) (time.Duration, perf.Timeline, error) {
	d, tl, err := perf.Poll(ctx, start, timeout, cmpPoll, func(ctx context.Context) (bool, string, error) { return r.converged(ctx, c) })
	if err != nil {
		return d, tl, fmt.Errorf("%s not converged: %w", c.obj.GetName(), err)
	}
	return d, tl, nil
}

// update changes a cluster's spec as a user would, retrying on conflicts and while an
// admission webhook does not answer.
func (r *cmpRun) update(ctx context.Context, c *cmpCluster, mutate func(client.Object) error) error {
	backoff := retry.DefaultBackoff
	backoff.Steps, backoff.Cap = 12, 5*time.Second
	return retry.OnError(backoff, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err)
	}, func() error {
		if err := r.k.Client.Get(ctx, client.ObjectKeyFromObject(c.obj), c.obj); err != nil {
			return err
		}
		if err := mutate(c.obj); err != nil {
			return err
		}
		return r.k.Client.Update(ctx, c.obj)
	})
}

// livePods are the cluster's pods not being deleted.
func (r *cmpRun) livePods(ctx context.Context, c *cmpCluster) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := r.k.Client.List(ctx, &list, client.InNamespace(r.ns), r.side.pods(c.obj.GetName())); err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" {
			out = append(out, p)
		}
	}
	return out, nil
}

// addrs are the cluster's servers' addresses.
func (r *cmpRun) addrs(ctx context.Context, c *cmpCluster) ([]string, error) {
	pods, err := r.livePods(ctx, c)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pods {
		out = append(out, p.Status.PodIP+":6379")
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no pod with an address", c.obj.GetName())
	}
	return out, nil
}

// clusterNodes is CLUSTER NODES of the first server that answers, as the test user.
func (r *cmpRun) clusterNodes(ctx context.Context, c *cmpCluster) ([]valkey.ClusterNode, error) {
	addrs, err := r.addrs(ctx, c)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, a := range addrs {
		vc, err := valkey.Dial(ctx, valkey.Options{Addr: a, Username: framework.TestUser, Password: "any", DialTimeout: time.Second})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		nodes, err := vc.ClusterNodes(ctx)
		vc.Close()
		if err == nil {
			return nodes, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("no server of %s answers: %w", c.obj.GetName(), errors.Join(errs...))
}

// firstSlots is the first slot of each primary, in order: the slots the write-checker's
// writers write to.
func (r *cmpRun) firstSlots(ctx context.Context, c *cmpCluster) ([]int, error) {
	nodes, err := r.clusterNodes(ctx, c)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, n := range nodes {
		if n.Primary && !n.Fail && len(n.Slots) > 0 {
			out = append(out, n.Slots[0].Start)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s serves no slot", c.obj.GetName())
	}
	slices.Sort(out)
	return out, nil
}

// primaryPod is the pod whose server serves slot as a primary, as the servers say.
func (r *cmpRun) primaryPod(ctx context.Context, c *cmpCluster, slot int) (*corev1.Pod, error) {
	nodes, err := r.clusterNodes(ctx, c)
	if err != nil {
		return nil, err
	}
	ip := ""
	for _, n := range nodes {
		if n.Primary && !n.Fail && valkey.ContainsSlot(n.Slots, slot) {
			ip = n.IP
		}
	}
	pods, err := r.livePods(ctx, c)
	if err != nil {
		return nil, err
	}
	for i := range pods {
		if ip != "" && pods[i].Status.PodIP == ip {
			return &pods[i], nil
		}
	}
	return nil, fmt.Errorf("no pod of %s serves slot %d as a primary (primary at %q)", c.obj.GetName(), slot, ip)
}

// startChecker starts the write-checker as the test user (a client without retries) and
// lets it write for a second.
func (r *cmpRun) startChecker(ctx context.Context, c *cmpCluster, interval time.Duration) (*checker.Checker, error) {
	addrs, err := r.addrs(ctx, c)
	if err != nil {
		return nil, err
	}
	ch, err := checker.Start(ctx, checker.Options{Addrs: addrs, Username: framework.TestUser, Password: "any", Interval: interval})
	if err != nil {
		return nil, fmt.Errorf("start the write-checker on %s: %w", c.obj.GetName(), err)
	}
	time.Sleep(time.Second)
	return ch, nil
}

// image91Tag is the 9.1 image under its other tag ("docker.io/valkey/valkey:9.1" for
// ":9.1.2"): the same server, another pod template, which rolls every member.
func (r *cmpRun) image91Tag() (string, error) {
	for _, tag := range r.valkey.Tags {
		if tag != r.valkey.Ref {
			return tag, nil
		}
	}
	return "", fmt.Errorf("the image %s has no second tag to roll to", r.valkey.Ref)
}

// ready times 3x1 clusters from apply to converged, a fresh cluster per repetition.
func (r *cmpRun) ready(ctx context.Context, t *testing.T) error {
	for rep := 1; rep <= reps; rep++ {
		c, start, err := r.create(ctx, fmt.Sprintf("ready-%d", rep), 3, 1, r.valkey.Ref)
		if err != nil {
			return err
		}
		d, tl, err := r.waitConverged(ctx, c, start, cmpTimeout)
		t.Logf("%s: %s converged after %.2fs: %v; %s", r.side.key, c.obj.GetName(), secs(d), err, tl)
		if err == nil {
			r.fig.add("ready", secs(d))
		}
		if rerr := r.remove(ctx, c); err == nil {
			err = rerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// roll changes the image of a converged 3x1 cluster to the same server under its other
// tag while the write-checker writes at 2000 writes/s, and times it until converged on
// the new image, a fresh cluster per repetition.
func (r *cmpRun) roll(ctx context.Context, t *testing.T) error {
	to, err := r.image91Tag()
	if err != nil {
		return err
	}
	for rep := 1; rep <= reps; rep++ {
		if err := r.rollOnce(ctx, t, rep, to); err != nil {
			return err
		}
	}
	return nil
}

func (r *cmpRun) rollOnce(ctx context.Context, t *testing.T, rep int, to string) error {
	return r.withConverged(ctx, fmt.Sprintf("roll-%d", rep), func(c *cmpCluster) error {
		ch, err := r.startChecker(ctx, c, rollWriteInterval)
		if err != nil {
			return err
		}
		start := time.Now()
		if err := r.update(ctx, c, func(obj client.Object) error { return r.side.setImage(obj, to) }); err != nil {
			_, _ = ch.Stop(ctx)
			return fmt.Errorf("change the image of %s: %w", c.obj.GetName(), err)
		}
		c.shape.Image = to
		d, tl, werr := r.waitConverged(ctx, c, start, cmpChangeTimeout)
		time.Sleep(500 * time.Millisecond)
		rp, err := ch.Stop(ctx)
		if err != nil {
			return fmt.Errorf("write-checker: %w", err)
		}
		t.Logf("%s: roll of %s: %.2fs (%v); %s; timeline %s", r.side.key, c.obj.GetName(), secs(d), werr, rp, tl)
		if werr != nil {
			return werr
		}
		r.fig.add("roll_duration", secs(d))
		r.fig.add("roll_failed", float64(rp.Errors))
		r.fig.add("roll_lost", float64(rp.Lost))
		r.fig.add("roll_gap", secs(rp.MaxGap()))
		return nil
	})
}

// cmpKills are the ways the comparison takes a primary down.
var cmpKills = []killMode{killModeOf("graceful"), killModeOf("grace0"), crashMode}

// killModeOf is the item 3 mode of key.
func killModeOf(key string) killMode {
	for _, m := range killModes {
		if m.key == key {
			return m
		}
	}
	panic("no kill mode " + key)
}

// killKeys are the row keys of cmpKills.
func killKeys() []string {
	var out []string
	for _, m := range cmpKills {
		out = append(out, "kill_"+m.key+"_gap", "kill_"+m.key+"_back", "kill_"+m.key+"_lost")
		if m.planned {
			out = append(out, "kill_"+m.key+"_failed")
		}
	}
	return out
}

// kills takes primaries down in each of cmpKills, a fresh 3x1 cluster per mode and the
// repetitions on it one shard after the other, each once the cluster converged again.
// A mode that fails stops, and the next one goes on.
func (r *cmpRun) kills(ctx context.Context, t *testing.T) error {
	for _, mode := range cmpKills {
		if err := r.killMode(ctx, t, mode); err != nil {
			r.fig.fail(err, "kill_"+mode.key+"_gap", "kill_"+mode.key+"_back", "kill_"+mode.key+"_lost", "kill_"+mode.key+"_failed")
			t.Logf("%s: primary %s: %v", r.side.key, mode.name, err)
		}
	}
	return nil
}

func (r *cmpRun) killMode(ctx context.Context, t *testing.T, mode killMode) error {
	return r.withConverged(ctx, "kill-"+mode.key, func(c *cmpCluster) error {
		for rep := 0; rep < reps; rep++ {
			if err := r.killOnce(ctx, t, c, rep, mode); err != nil {
				return err
			}
		}
		return nil
	})
}

// killOnce takes the primary of one shard down under the write-checker and measures its
// slots' write gap and the time until the cluster converged with a new server in place.
func (r *cmpRun) killOnce(ctx context.Context, t *testing.T, c *cmpCluster, rep int, mode killMode) error {
	if _, _, err := r.waitConverged(ctx, c, time.Now(), cmpTimeout); err != nil {
		return err
	}
	slots, err := r.firstSlots(ctx, c)
	if err != nil {
		return err
	}
	slot := slots[rep%len(slots)]
	pod, err := r.primaryPod(ctx, c, slot)
	if err != nil {
		return err
	}
	ch, err := r.startChecker(ctx, c, 0)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := mode.down(ctx, r.k, pod); err != nil {
		_, _ = ch.Stop(ctx)
		return fmt.Errorf("take %s down (%s): %w", pod.Name, mode.name, err)
	}
	d, tl, werr := perf.Poll(ctx, start, cmpTimeout, cmpPoll, func(ctx context.Context) (bool, string, error) {
		ok, detail, err := r.converged(ctx, c)
		return ok && newServer(ctx, r.k, pod), detail, err
	})
	rp, err := ch.Stop(ctx)
	if err != nil {
		return fmt.Errorf("write-checker: %w", err)
	}
	t.Logf("%s: primary %s of slot %d, %s: gap %.2fs, converged after %.2fs (%v); %s; timeline %s",
		r.side.key, pod.Name, slot, mode.name, secs(rp.GapOf(slot)), secs(d), werr, rp, tl)
	if werr != nil {
		return fmt.Errorf("no convergence after the primary %s went down: %w", pod.Name, werr)
	}
	r.fig.add("kill_"+mode.key+"_gap", secs(rp.GapOf(slot)))
	r.fig.add("kill_"+mode.key+"_back", secs(d))
	r.fig.add("kill_"+mode.key+"_lost", float64(rp.Lost))
	if mode.planned {
		r.fig.add("kill_"+mode.key+"_failed", float64(rp.Errors))
	}
	return nil
}

// scale loads 100k keys into a converged 3x1 cluster, scales it to 4 shards under the
// write-checker, times it until converged and reads the keys back, a fresh cluster per
// repetition.
func (r *cmpRun) scale(ctx context.Context, t *testing.T) error {
	for rep := 1; rep <= reps; rep++ {
		if err := r.scaleOnce(ctx, t, rep); err != nil {
			return err
		}
	}
	return nil
}

func (r *cmpRun) scaleOnce(ctx context.Context, t *testing.T, rep int) error {
	return r.withConverged(ctx, fmt.Sprintf("scale-%d", rep), func(c *cmpCluster) error {
		addrs, err := r.addrs(ctx, c)
		if err != nil {
			return err
		}
		kc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, Username: framework.TestUser, Password: "any", DisableCache: true})
		if err != nil {
			return fmt.Errorf("connect to %s: %w", c.obj.GetName(), err)
		}
		defer kc.Close()
		if err := storeKeys(ctx, kc); err != nil {
			return err
		}
		ch, err := r.startChecker(ctx, c, 0)
		if err != nil {
			return err
		}
		start := time.Now()
		if err := r.update(ctx, c, func(obj client.Object) error { return r.side.setShards(obj, 4) }); err != nil {
			_, _ = ch.Stop(ctx)
			return fmt.Errorf("scale %s: %w", c.obj.GetName(), err)
		}
		c.shape.Shards = 4
		d, tl, werr := r.waitConverged(ctx, c, start, cmpChangeTimeout)
		rp, err := ch.Stop(ctx)
		if err != nil {
			return fmt.Errorf("write-checker: %w", err)
		}
		missing := missingKeys(ctx, kc)
		t.Logf("%s: scale of %s: %.2fs (%v), %d of %d keys missing; %s; timeline %s", r.side.key, c.obj.GetName(), secs(d), werr, missing, scaleKeys, rp, tl)
		if werr != nil {
			return werr
		}
		r.fig.add("scale_duration", secs(d))
		r.fig.add("scale_gap", secs(rp.MaxGap()))
		r.fig.add("scale_failed", float64(rp.Errors))
		r.fig.add("scale_lost", float64(rp.Lost))
		r.fig.add("scale_missing", float64(missing))
		return nil
	})
}

// restKeys are the row keys of the rest windows.
func restKeys() []string {
	return []string{"rest_rss_1", "rest_cpu_1", "rest_rss_20", "rest_cpu_20", "rest_writes_20", "rest_leases_20"}
}

// rest measures the operator at rest with one cluster of one member, then with
// cmpRestClusters of them; it runs once whatever BENCH_REPS says, as item 9.
func (r *cmpRun) rest(ctx context.Context, t *testing.T) (err error) {
	var all []*cmpCluster
	defer func() {
		errs := perf.EachCluster(objects(all), fleetWorkers, func(obj client.Object) error {
			return r.side.delete(ctx, r.k.Client, obj)
		})
		if len(errs) > 0 && err == nil {
			err = fmt.Errorf("delete the rest clusters: %s", strings.Join(errs, "; "))
		}
	}()
	for _, total := range []int{1, cmpRestClusters} {
		var batch []*cmpCluster
		for i := len(all); i < total; i++ {
			batch = append(batch, &cmpCluster{obj: r.side.newCluster(r.ns, fmt.Sprintf("%s-rest-%02d", r.side.key, i), 1, 0, r.valkey.Ref),
				shape: perf.Shape{Shards: 1, Image: r.valkey.Ref}})
		}
		if errs := perf.EachCluster(objects(batch), fleetWorkers, func(obj client.Object) error { return r.quiet.Create(ctx, obj) }); len(errs) > 0 {
			return fmt.Errorf("create: %s", strings.Join(errs, "; "))
		}
		all = append(all, batch...)
		for _, c := range all {
			if _, _, err := r.waitConverged(ctx, c, time.Now(), cmpChangeTimeout); err != nil {
				return err
			}
		}
		usage, rates, err := r.window(ctx)
		if err != nil {
			return err
		}
		t.Logf("%s: at rest with %d clusters: RSS %.1f MiB %v, CPU %.3f s/min %v, writes %.1f/min (leases %.1f/min)", r.side.key, total,
			usage.TotalRSSMiB(), usage.RSSMiB, usage.TotalCPUPerMin(), usage.CPUPerMin, rates.Total(perf.WritesOther), rates.Total(perf.WritesLeases))
		n := fmt.Sprint(total)
		r.fig.add("rest_rss_"+n, usage.TotalRSSMiB())
		r.fig.notes["rest_rss_"+n] = describeUsage(usage.RSSMiB, perf.UnitMiB)
		r.fig.add("rest_cpu_"+n, usage.TotalCPUPerMin())
		if total == cmpRestClusters {
			r.fig.add("rest_writes_20", rates.Total(perf.WritesOther))
			r.fig.add("rest_leases_20", rates.Total(perf.WritesLeases))
		}
	}
	return nil
}

// window lets the operator rest for cmpSettle and measures it over cmpWindow: its pods'
// memory and CPU, and its API writes.
func (r *cmpRun) window(ctx context.Context) (perf.RestUsage, perf.WriteRates, error) {
	if r.pauseSampler {
		bench.sampler.Pause()
		defer bench.sampler.Resume(ctx)
	}
	if err := sleepCtx(ctx, cmpSettle); err != nil {
		return perf.RestUsage{}, perf.WriteRates{}, err
	}
	before, err := perf.SnapshotOperator(ctx, r.k.Client, r.side.namespace)
	if err != nil {
		return perf.RestUsage{}, perf.WriteRates{}, err
	}
	writesBefore, err := bench.writes.Snapshot(ctx)
	if err != nil {
		return perf.RestUsage{}, perf.WriteRates{}, err
	}
	if err := sleepCtx(ctx, cmpWindow); err != nil {
		return perf.RestUsage{}, perf.WriteRates{}, err
	}
	after, err := perf.SnapshotOperator(ctx, r.k.Client, r.side.namespace)
	if err != nil {
		return perf.RestUsage{}, perf.WriteRates{}, err
	}
	writesAfter, err := bench.writes.Snapshot(ctx)
	if err != nil {
		return perf.RestUsage{}, perf.WriteRates{}, err
	}
	usage, err := after.Usage(before)
	if err != nil {
		return perf.RestUsage{}, perf.WriteRates{}, err
	}
	if len(usage.RSSMiB) == 0 {
		return perf.RestUsage{}, perf.WriteRates{}, fmt.Errorf("no operator pod with a %s label in %s", perf.ComponentLabel, r.side.namespace)
	}
	return usage, writesAfter.Rates(writesBefore), nil
}

// describeUsage lists a figure per component ("acl-controller 61.4 MiB, ...").
func describeUsage(m map[string]float64, unit string) string {
	var parts []string
	for _, k := range perf.SortedKeys(m) {
		parts = append(parts, k+" "+perf.FormatValue(m[k], unit))
	}
	return strings.Join(parts, ", ")
}

// objects are the clusters' objects.
func objects(cs []*cmpCluster) []client.Object {
	out := make([]client.Object, len(cs))
	for i, c := range cs {
		out[i] = c.obj
	}
	return out
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// cmpRow is a row of the comparison: a key of both sides' figures, what it measures, its
// unit and our goal.
type cmpRow struct{ key, name, unit, goal string }

// cmpRows are the comparison's measured rows, in order.
func cmpRows() []cmpRow {
	rows := []cmpRow{
		{"ready", "3x1 on 9.1: apply → converged (Ready, every server agreeing)", perf.UnitSeconds, "5 s"},
		{"roll_duration", "roll 3x1 on 9.1 (the image's other tag) under 2000 writes/s: until converged", perf.UnitSeconds, "15 s"},
		{"roll_failed", "roll: writes failed for a client without retries", perf.UnitCount, "0"},
		{"roll_lost", "roll: acknowledged writes lost", perf.UnitCount, "0"},
		{"roll_gap", "roll: longest write gap (any shard)", perf.UnitSeconds, ""},
	}
	for _, m := range cmpKills {
		lostGoal := "small (unreplicated writes)"
		if m.planned {
			lostGoal = "0"
		}
		rows = append(rows,
			cmpRow{"kill_" + m.key + "_gap", "primary " + m.name + ": write gap on its slots", perf.UnitSeconds, fmt.Sprintf("%g s", m.gapGoal)},
			cmpRow{"kill_" + m.key + "_back", "primary " + m.name + ": until converged with a new server", perf.UnitSeconds, fmt.Sprintf("%g s", m.backGoal)},
			cmpRow{"kill_" + m.key + "_lost", "primary " + m.name + ": acknowledged writes lost", perf.UnitCount, lostGoal})
		if m.planned {
			rows = append(rows, cmpRow{"kill_" + m.key + "_failed", "primary " + m.name + ": writes failed for a client without retries", perf.UnitCount, "0"})
		}
	}
	return append(rows,
		cmpRow{"scale_duration", "scale 3 → 4 shards on 9.1 with 100k keys: until converged", perf.UnitSeconds, ""},
		cmpRow{"scale_gap", "scale: longest write gap (any shard)", perf.UnitSeconds, ""},
		cmpRow{"scale_failed", "scale: writes failed for a client without retries", perf.UnitCount, "0"},
		cmpRow{"scale_lost", "scale: acknowledged writes lost", perf.UnitCount, "0"},
		cmpRow{"scale_missing", "scale: of the 100k keys, not readable after", perf.UnitCount, "0"},
		cmpRow{"rest_rss_1", "operator memory at rest (RSS of all its pods), 1 cluster of 1x0", perf.UnitMiB, ""},
		cmpRow{"rest_rss_20", "operator memory at rest (RSS of all its pods), 20 clusters of 1x0", perf.UnitMiB, ""},
		cmpRow{"rest_cpu_1", "operator CPU at rest, 1 cluster", perf.UnitCPUPerMin, ""},
		cmpRow{"rest_cpu_20", "operator CPU at rest, 20 clusters", perf.UnitCPUPerMin, ""},
		cmpRow{"rest_writes_20", "operator API writes at rest, leader election aside, 20 clusters", perf.UnitPerMin, "0"},
		cmpRow{"rest_leases_20", "operator leader-election Lease writes at rest, 20 clusters", perf.UnitPerMin, ""},
	)
}

// peerLacks are what ours does and the peer cannot at its commit, each with what ours
// has and why the peer has not.
var peerLacks = []struct{ key, name, ours, peer string }{
	{"valkey8", "Valkey 8.0 and 8.1 servers", "yes: items 1-5 and 9 run on 8.0",
		"its servers' config sets shutdown-on-sigterm failover, which Valkey 8.x refuses at start (9.0 and later only)"},
	{"backup", "backup to object storage and restore (item 8)", "yes: item 8",
		"no backup or restore in its API"},
	{"external", "clients outside the Kubernetes (spec.externalAccess)", "yes: a LoadBalancer or NodePort per member, announced",
		"its members announce their pod IPs only"},
}

// addCmpRows puts both sides' figures into the comparison, then what the peer lacks.
func addCmpRows(cmp *perf.Comparison, ours, theirs *figures) {
	for _, r := range cmpRows() {
		cmp.Add(perf.CompareRow{Key: r.key, Name: r.name, Unit: r.unit, Goal: r.goal, Ours: ours.cell(r.key), Peer: theirs.cell(r.key)})
	}
	for _, l := range peerLacks {
		cmp.Add(perf.CompareRow{Key: l.key, Name: l.name, Ours: perf.Cell{Text: l.ours}, Peer: perf.Cell{Unsupported: l.peer}})
	}
}
