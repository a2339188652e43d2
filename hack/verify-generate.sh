#!/usr/bin/env bash
# Fails when the generated files differ from what `make generate` produces now: it hashes
# every file under the generated paths, regenerates, and compares.
set -euo pipefail
cd "$(dirname "$0")/.."
paths=(api/v1alpha1 config charts/valkey-operator/templates/crds charts/valkey-operator/templates/generated docs/api.md docs/architecture.md valkeyconf/zz_generated.keys.go)
digest() { find "${paths[@]}" -type f 2>/dev/null | LC_ALL=C sort | xargs -r sha256sum; }
before=$(digest)
hack/generate.sh
after=$(digest)
if [ "$before" != "$after" ]; then
  echo "generated files were stale: 'make generate' changed:" >&2
  diff <(echo "$before") <(echo "$after") >&2 || true
  exit 1
fi
echo "generated files are up to date"
