package depscheck

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const root = "../../.."

// projectPrograms are built by the project itself (make local-build, make images, the
// tests' own go build), so no setup step installs them.
var projectPrograms = map[string]string{
	"pause":                   "the pause program of images/cmd/pause, built by its test",
	"kubectl":                 "built by make local-build into .cache/k8s (hack/k8sbin)",
	"kube-controller-manager": "built by make local-build into .cache/k8s; e2e/standin runs it from KUBEBUILDER_ASSETS",
	"/nonexistent/program":    "the runner's test of a program that does not exist",
}

// imageContents are files whose programs run inside an unpacked image (its own loader
// and libraries), not on the host.
var imageContents = map[string]bool{
	"images/e2e_test.go": true,
}

// optional programs are used only where present.
var optional = map[string]string{
	"systemctl": "hack/deps.sh stops the services the docker-registry and redis-server packages start, where systemd runs",
}

// unresolved are program positions the scan cannot read, each with what it runs.
var unresolved = map[string]string{
	"valkey/valkeytest/server.go|bin":                                          "valkey-server from Binary (exec.LookPath)",
	"valkey/valkeytest/defaults_test.go|bin":                                   "valkey-server from Binary (exec.LookPath)",
	"acl-controller/internal/acl/exporter_integration_test.go|bin":             "redis_exporter extracted from the exporter image make images builds",
	"webhooks/internal/integration/examples_test.go|kubectlPath":               "kubectl of .cache/k8s (make local-build)",
	`localkube/controlplane.go|c.bin("etcd")`:                                  "built by make local-build",
	`localkube/controlplane.go|c.bin("kube-apiserver")`:                        "built by make local-build",
	`localkube/controlplane.go|c.bin("kube-controller-manager")`:               "built by make local-build",
	`localkube/controlplane.go|c.bin("kube-scheduler")`:                        "built by make local-build",
	`localkube/controlplane.go|c.CoreDNSBinary()`:                              "CoreDNS, built by make local-build",
	`localkube/noderun.go|c.bin("kubelet")`:                                    "built by make local-build",
	`localkube/noderun.go|c.bin("kube-proxy")`:                                 "built by make local-build",
	"localkube/network.go|s[0]":                                                "ip, from the steps table of setupNode",
	"e2e/tests/release/release_test.go|k.Paths.Kubectl":                        "kubectl of .cache/k8s (make local-build)",
	"e2e/framework/kubectl.go|k.Paths.Kubectl":                                 "kubectl of .cache/k8s (make local-build)",
	"e2e/tests/operate/operate_test.go|plugin":                                 "kubectl-valkey, built by the suite's TestMain from the checkout",
	"e2e/framework/local.go|p.opts.Paths.Localkube":                            "bin/localkube",
	"e2e/framework/certmanager_test.go|bin":                                    "cert-manager, built by localkube build --certmanager (make certmanager-build)",
	"node-controller/internal/node/pod_test.go|cmd[0]":                         "sh: the pod's container commands, run with the host's sh (and awk) by the tests",
	"hack/devtools/depscheck/deps_script_test.go|e.Program":                    "looks up the table's own programs, to build a PATH without one",
	"hack/devtools/depscheck/deps_script_test.go|p":                            "looks up bash and sh, for the fixture table's PATH",
	"hack/devtools/configtable/measure.go|c[0]":                                "valkey-server: the Valkey images' servers (localkube valkey-servers, through their own loader), or -server",
	"hack/devtools/configtable/main.go|*server":                                "valkey-server (make config-table's -server, the test's PATH)",
	"backup-controller/internal/tests3/tests3.go|Binary(t)":                    "versitygw (hack/deps.txt), from $VERSITYGW, hack/tools/bin or PATH",
	"backup-controller/internal/testvalkey/testvalkey.go|valkeytest.Binary(t)": "valkey-server from valkeytest.Binary",
	"e2e/framework/clients.go|argv[0]":                                         "a writer of the client matrix: its go build output, /usr/bin/python3 or node (ClientPrograms)",
	"e2e/perf/baseline/main.go|filepath.Join(c.bin, program)":                  "the operator's binaries, built by the program (go build) or given with -bin",
	"e2e/standin/kubelet.go|argv[0]":                                           "sh: the member pod's own server command",
	"e2e/standin/operator.go|filepath.Join(bin, comp.Binary)":                  "the operator's binaries, built by the stand-in (go build) or from STANDIN_BIN",
	"e2e/standin/operator_test.go|helm":                                        "helm (hack/deps.txt), found in hack/tools/bin or PATH",
	"e2e/standin/fleet_bench_test.go|tools.Helm":                               "helm (hack/deps.txt), found in hack/tools/bin or PATH",
	"e2e/standin/standin_test.go|tools.Helm":                                   "helm (hack/deps.txt), found in hack/tools/bin or PATH",
	"node-controller/internal/node/scripts_test.go|bin":                        "shellcheck (hack/deps.txt), from exec.LookPath",
	"node-controller/internal/node/scripts_test.go|cmd[0]":                     "sh: the server command's prepare_start, with valkey-server and redis-server (hack/deps.txt) on PATH",
	"valkeyconf/redact/redact_test.go|bin":                                     "valkey-server and redis-server (hack/deps.txt), from exec.LookPath",
	`localkube/kindnode/kube.go|b.toolBin("ctr")`:                              "ctr, built by make kind-image (kindnode tools)",
	`localkube/kindnode/preload.go|b.toolBin("containerd")`:                    "containerd, built by make kind-image (kindnode tools)",
	`localkube/kindnode/preload.go|b.toolBin("ctr")`:                           "ctr, built by make kind-image (kindnode tools)",
}

// scan runs the whole scan over the repository.
func scan(t *testing.T) Result {
	t.Helper()
	var res Result
	if err := ScanGo(root, workspaceModules(t), &res); err != nil {
		t.Fatal(err)
	}
	var scripts []string
	err := filepath.WalkDir(filepath.Join(root, "hack"), func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && e.Name() == "tools" {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, ".sh") {
			rel, _ := filepath.Rel(root, p)
			scripts = append(scripts, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(scripts, ".ci/run") {
		if err := ScanShell(root, s, &res); err != nil {
			t.Fatal(err)
		}
	}
	if err := ScanMakefile(root, "Makefile", &res); err != nil {
		t.Fatal(err)
	}
	for p, sites := range res.Programs {
		var kept []Site
		for _, s := range sites {
			if !imageContents[s.File] {
				kept = append(kept, s)
			}
		}
		if len(kept) == 0 {
			delete(res.Programs, p)
		} else {
			res.Programs[p] = kept
		}
	}
	return res
}

// workspaceModules reads the module folders of go.work.
func workspaceModules(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var mods []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "./") {
			mods = append(mods, strings.TrimPrefix(l, "./"))
		}
	}
	if len(mods) == 0 {
		t.Fatal("no modules in go.work")
	}
	return mods
}

// TestSetupCoversEveryProgram is the fresh-machine check: every program the code, the
// scripts and the Makefile run is installed or checked by hack/deps.sh.
func TestSetupCoversEveryProgram(t *testing.T) {
	table, err := ReadTable(filepath.Join(root, "hack", "deps.txt"))
	if err != nil {
		t.Fatal(err)
	}
	res := scan(t)
	for _, p := range res.Names() {
		if table.Covers(p) || projectPrograms[p] != "" || optional[p] != "" {
			continue
		}
		t.Errorf("%s is run at %v but hack/deps.txt has no entry for it", p, res.Programs[p])
	}
	seen := map[string]bool{}
	for _, u := range res.Unresolved {
		if imageContents[u.File] {
			continue
		}
		key := u.File + "|" + u.Expr
		seen[key] = true
		if unresolved[key] == "" {
			t.Errorf("%s runs %s, which the scan cannot read: name the program with a literal, or add %q to the unresolved list with what it runs", u, u.Expr, key)
		}
	}
	for key := range unresolved {
		if !seen[key] {
			t.Errorf("unresolved entry %q matches nothing any more: remove it", key)
		}
	}
	for p := range projectPrograms {
		if _, ok := res.Programs[p]; !ok {
			t.Errorf("project program %q is run nowhere any more: remove it", p)
		}
	}
	t.Logf("%d programs found: %s", len(res.Programs), strings.Join(res.Names(), " "))
}

// TestScanFindsWhatTheCodeRuns pins the scan itself on programs it must find.
func TestScanFindsWhatTheCodeRuns(t *testing.T) {
	res := scan(t)
	want := map[string]string{
		"nft":           "localkube (run wrapper, snapshot table)",
		"ip":            "localkube (run wrapper)",
		"dpkg-deb":      "the image builder (exec.CommandContext literal)",
		"go":            "localkube build",
		"valkey-server": "valkeytest (exec.LookPath)",
		"staticcheck":   "Makefile ($(TOOLS_BIN)/staticcheck)",
		"diff":          "hack/verify-generate.sh",
		"awk":           "hack/generate.sh",
		"helm":          "the chart test (filepath.Join of hack/tools/bin)",
	}
	var missing []string
	for p, where := range want {
		if _, ok := res.Programs[p]; !ok {
			missing = append(missing, p+" ("+where+")")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("the scan missed: %s", strings.Join(missing, ", "))
	}
}
