package modproxy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"

	"github.com/valkey-operator/valkey-operator/hack/devtools/modsync"
)

const (
	root       = "../../.."
	apiModule  = "github.com/valkey-operator/valkey-operator/api"
	crModule   = "sigs.k8s.io/controller-runtime"
	clientDemo = "docs/examples/goclient/main.go"
)

// TestConsumerBuildsTheClientExample publishes the API module and the siblings it needs
// at the release version into a file:// proxy, then, in a module of its own outside the
// workspace, does what a Go client of ValkeyCluster does: go get the API at that version
// and build docs/api.md's client example. The project's modules come from that proxy
// only; third-party ones from the machine's module cache or its GOPROXY.
func TestConsumerBuildsTheClientExample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds controller-runtime's client")
	}
	version, err := modsync.Version(root)
	if err != nil {
		t.Fatal(err)
	}
	crVersion, err := modsync.Required(root, crModule)
	if err != nil {
		t.Fatal(err)
	}
	proxy := t.TempDir()
	if err := Write(root, proxy, version, apiAndItsSiblings(t)); err != nil {
		t.Fatal(err)
	}

	consumer := t.TempDir()
	writeFile(t, filepath.Join(consumer, "go.mod"), "module example.com/consumer\n\ngo 1.26.0\n")
	example, err := os.ReadFile(filepath.Join(root, clientDemo))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(consumer, "main.go"), string(example))

	env := consumerEnv(t, proxy)
	goCmd(t, consumer, env, "get", apiModule+"@"+version, crModule+"@"+crVersion)
	goCmd(t, consumer, env, "mod", "tidy")
	goCmd(t, consumer, env, "build", "-o", filepath.Join(t.TempDir(), "goclient"), ".")
	// Every package of the API builds as a dependency, validation with its valkeyconf.
	goCmd(t, consumer, env, "build", apiModule+"/...")

	b, err := os.ReadFile(filepath.Join(consumer, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.Parse("go.mod", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(mf.Replace) > 0 {
		t.Errorf("the consumer's go.mod has replace lines:\n%s", b)
	}
	for _, m := range apiAndItsSiblings(t) {
		got := goCmd(t, consumer, env, "list", "-m", "-f", "{{.Version}}{{with .Replace}} => {{.Path}}{{end}}", m.Path)
		if got != version {
			t.Errorf("the consumer builds %s at %q, want %s", m.Path, got, version)
		}
	}
}

// apiAndItsSiblings are the API module and the modules of the workspace in its build.
func apiAndItsSiblings(t *testing.T) []modsync.Module {
	t.Helper()
	mods, err := modsync.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := modsync.MakePlan(root, mods)
	if err != nil {
		t.Fatal(err)
	}
	var out []modsync.Module
	for _, m := range mods {
		if m.Path == apiModule || slices.Contains(plan.Replace[apiModule], m.Path) {
			out = append(out, m)
		}
	}
	if len(out) < 2 {
		t.Fatalf("the API and its siblings: %v", out)
	}
	return out
}

// consumerEnv is the environment of a module outside the workspace that takes the
// project's modules from proxy alone, with a module cache of its own so that no module
// the test publishes outlives it. Third-party modules come from the machine's module
// cache (its download folder is a file:// proxy) and then from its GOPROXY. -trimpath
// keeps the module cache's path out of the build cache's keys, so the third-party
// packages compiled by an earlier run are not compiled again.
func consumerEnv(t *testing.T, proxy string) []string {
	t.Helper()
	goproxy := goEnv(t, "GOPROXY")
	cached := filepath.Join(goEnv(t, "GOMODCACHE"), "cache", "download")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GO") {
			env = append(env, kv)
		}
	}
	return append(env,
		"GOWORK=off",
		"GOTOOLCHAIN=local",
		"GOFLAGS=-mod=mod -modcacherw -trimpath",
		"GOMODCACHE="+t.TempDir(),
		"GOCACHE="+goEnv(t, "GOCACHE"),
		"GOPATH="+goEnv(t, "GOPATH"),
		"GOPROXY=file://"+absPath(t, proxy)+",file://"+cached+","+goproxy,
		"GONOPROXY=", "GOPRIVATE=",
		// The project's modules exist in no checksum database before a release, and the
		// third-party ones were checked when they entered the machine's cache.
		"GOSUMDB=off",
	)
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// goCmd runs go with args in dir and returns its standard output, trimmed.
func goCmd(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	start := time.Now()
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	t.Logf("go %s: %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	return strings.TrimSpace(string(out))
}

func absPath(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
