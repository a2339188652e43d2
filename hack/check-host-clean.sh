#!/usr/bin/env bash
# Checks that the local Kubernetes leaves the machine as it found it: snapshot the host
# state, make local-up, run the localkube e2e suite, make local-down, snapshot again and
# diff. Exits non-zero when the suite failed or the snapshots differ.
#
#   hack/check-host-clean.sh [DIR]    DIR keeps the snapshots (default: a temporary folder)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-$(mktemp -d /tmp/host-clean.XXXXXX)}
mkdir -p "$OUT"
LOCALKUBE="$ROOT/bin/localkube"
cd "$ROOT"

# Build first, so that nothing but the cluster happens between the snapshots.
make -s local-build
if "$LOCALKUBE" status >/dev/null 2>&1; then
	echo "check-host-clean: a local cluster is running; run make local-down first" >&2
	exit 2
fi

"$LOCALKUBE" snapshot >"$OUT/before"
suite=0
down=0
# The cluster comes down whatever the suite did.
make local-up && make e2e SUITE=localkube || suite=$?
make local-down || down=$?
"$LOCALKUBE" snapshot >"$OUT/after"

echo
if diff -u "$OUT/before" "$OUT/after" >"$OUT/diff"; then
	echo "check-host-clean: host state after local-down equals the one before local-up ($OUT)"
	clean=0
else
	echo "check-host-clean: the host state changed ($OUT/diff):"
	cat "$OUT/diff"
	clean=1
fi
echo "check-host-clean: suite exit $suite, local-down exit $down, snapshot diff $clean"
[[ $suite -eq 0 && $down -eq 0 && $clean -eq 0 ]]
