package node

import (
	_ "embed"
	"strings"
)

// The shell scripts of a member's pod, kept as files so shellcheck checks them (make
// lint). Each reads its values from its arguments: sh -c SCRIPT NAME ARG...
var (
	//go:embed scripts/server-persistent.sh
	serverPersistentSh string
	//go:embed scripts/server-ephemeral.sh
	serverEphemeralSh string
	//go:embed scripts/handover.sh
	handoverSh string
	//go:embed scripts/version.sh
	versionSh string
	//go:embed scripts/start.sh
	startSh string
	//go:embed scripts/takeover.sh
	takeoverSh string
	//go:embed scripts/drain.sh
	drainSh string
)

// shell is the command that runs script with sh, as $0 name and the arguments after. The
// script's comment lines (those starting with '#') stay in the file: the pod spec gets
// the code only.
func shell(script, name string, args ...string) []string {
	var code []string
	for _, l := range strings.Split(script, "\n") {
		if !strings.HasPrefix(l, "#") && l != "" {
			code = append(code, l)
		}
	}
	return append([]string{"sh", "-c", strings.Join(code, "\n"), name}, args...)
}
