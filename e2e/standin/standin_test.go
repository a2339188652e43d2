package standin

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/e2e/perf"
	"github.com/valkey-operator/valkey-operator/internal/envtestenv"
	"github.com/valkey-operator/valkey-operator/valkey"
)

func TestMain(m *testing.M) {
	code := m.Run()
	envtestenv.Stop()
	os.Exit(code)
}

// TestFleetSmall runs the fleet measurement with 1, then 3 members, split and combined,
// with short rests: every cluster becomes Ready with a real server at its pod's own
// address, every process is measured, and deleting the clusters stops their servers.
func TestFleetSmall(t *testing.T) {
	if testing.Short() || os.Getenv("STANDIN_TEST") == "" {
		t.Skip("starts an API server, the operator's binaries and valkey-servers (about two minutes): set STANDIN_TEST=1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "standin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			_ = os.RemoveAll(dir)
		}
	})
	tools, err := FindTools(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	e, err := Start(ctx, Options{Dir: dir, Octet: AddressOctet(), Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	f := &Fleet{Env: e, Bin: tools.Bin, Helm: tools.Helm, Root: tools.Root, Totals: []int{1, 3}, Namespaces: 2,
		Settle: time.Second, Window: 12 * time.Second, Modes: Modes, Workers: 4, Timeout: 3 * time.Minute, Logf: t.Logf,
		AfterReady: func(ctx context.Context, _ string, vcs []*v1alpha1.ValkeyCluster) error {
			return serversAnswer(ctx, e, vcs)
		}}
	modes, err := f.Run(ctx)
	if err != nil {
		t.Fatalf("%v (logs in %s)", err, dir)
	}
	t.Logf("\n%s", perf.FleetMarkdown(modes))
	for _, m := range modes {
		if len(m.Points) != 2 || m.DeletedMembers != 3 {
			t.Errorf("%s: %d points, %d members deleted; want 2 and 3", m.Mode, len(m.Points), m.DeletedMembers)
			continue
		}
		for _, p := range m.Points {
			if p.Ready <= 0 || len(p.Usage.RSSMiB) == 0 || p.LeaseWrites <= 0 {
				t.Errorf("%s, %d members: Ready after %.2fs, RSS %v, %.1f lease writes/min; want all measured", m.Mode, p.Members, p.Ready, p.Usage.RSSMiB, p.LeaseWrites)
			}
			for comp, mib := range p.Usage.RSSMiB {
				if mib < 5 {
					t.Errorf("%s, %d members: %s has %.1f MiB resident: not the process", m.Mode, p.Members, comp, mib)
				}
			}
		}
		if _, err := m.PerMember(); err != nil {
			t.Error(err)
		}
	}
	if want := map[string]int{"split": 5, "combined": 1}; len(modes) == 2 {
		for _, m := range modes {
			if n := len(m.Points[0].Usage.RSSMiB); n != want[m.Mode] {
				t.Errorf("%s: %d components measured, want %d", m.Mode, n, want[m.Mode])
			}
		}
	}
	if n := e.Kubelet.Servers(); n != 0 {
		t.Errorf("%d servers still run after every cluster was deleted", n)
	}
	for _, a := range f.Anomalies {
		t.Errorf("anomaly: %s", a)
	}
}

// serversAnswer checks what a user of each cluster would see: its member's server at
// the pod IP the operator reports, in a cluster whose state is ok, listening on that
// address and announcing it.
func serversAnswer(ctx context.Context, e *Env, vcs []*v1alpha1.ValkeyCluster) error {
	for _, vc := range vcs {
		var nodes v1alpha1.ValkeyNodeList
		if err := e.Client.List(ctx, &nodes, client.InNamespace(vc.Namespace), client.MatchingLabels{v1alpha1.LabelInstance: vc.Name}); err != nil {
			return err
		}
		if len(nodes.Items) != 1 {
			return fmt.Errorf("%s: %d ValkeyNodes, want 1", vc.Name, len(nodes.Items))
		}
		ip := nodes.Items[0].Status.PodIP
		c, err := valkey.Dial(ctx, valkey.Options{Addr: ip + ":6379", Username: framework.TestUser})
		if err != nil {
			return fmt.Errorf("%s: dial its member at %s: %w", vc.Name, ip, err)
		}
		info, err := c.ClusterInfo(ctx)
		if err != nil {
			c.Close()
			return err
		}
		cfg, err := c.ConfigGet(ctx, "*")
		c.Close()
		if err != nil {
			return err
		}
		if info["cluster_state"] != "ok" || cfg["bind"] != ip || cfg["cluster-announce-ip"] != ip {
			return fmt.Errorf("%s: the server at %s has cluster_state %q, bind %q, cluster-announce-ip %q", vc.Name, ip, info["cluster_state"], cfg["bind"], cfg["cluster-announce-ip"])
		}
	}
	return nil
}
