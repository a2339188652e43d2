package node

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// TestScriptsPassShellcheck runs shellcheck on every shell program a member's pod runs,
// as the pod gets it (the embedded files put together), for each kind of member.
func TestScriptsPassShellcheck(t *testing.T) {
	bin, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Fatal("shellcheck is not installed (Debian package shellcheck): run make deps")
	}
	plain := testNode()
	persistent := testNode(func(vn *v1alpha1.ValkeyNode) { vn.Spec.Persistence = &v1alpha1.PersistenceSpec{} })
	tls := testNode(withTLS)
	commands := map[string][]string{
		"server without persistence": serverCommand(plain),
		"server with persistence":    serverCommand(persistent),
		"preStop hand-over":          handoverHook(plain).PreStop.Exec.Command,
		"preStop hand-over with TLS": handoverHook(tls).PreStop.Exec.Command,
	}
	for name, cmd := range commands {
		if len(cmd) < 3 || cmd[0] != "sh" || cmd[1] != "-c" {
			t.Errorf("%s: not a shell command: %q", name, cmd)
			continue
		}
		c := exec.Command(bin, "-s", "sh", "-")
		c.Stdin = strings.NewReader(cmd[2])
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		if err := c.Run(); err != nil {
			t.Errorf("%s: shellcheck: %v\n%s", name, err, out.String())
		}
	}
}
