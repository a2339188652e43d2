#!/usr/bin/env bash
# Imports the official valkey-io operator (github.com/valkey-io/valkey-operator) at one
# commit into third_party/valkey-operator: what `BENCH_PEER=1 make bench` builds and
# installs next to ours. Only what builds and installs it is kept: its LICENSE, go.mod,
# go.sum, cmd/, api/ and internal/ without their tests, and config/ (CRDs, RBAC, the
# manager and the default install's composition). COMMIT records the commit. Running it
# again with the same commit gives the same tree, byte for byte.
# Usage: hack/peer-import.sh <git dir of a clone or mirror> <commit>
set -euo pipefail

if [ $# -ne 2 ]; then
	echo "usage: $0 <git dir> <commit>" >&2
	exit 2
fi
gitdir=$1
commit=$(git --git-dir="$gitdir" rev-parse --verify "$2^{commit}")
root=$(cd "$(dirname "$0")/.." && pwd)
dest=$root/third_party/valkey-operator

paths=(LICENSE go.mod go.sum cmd api internal config/crd config/rbac config/manager config/default)

rm -rf "$dest"
mkdir -p "$dest"
git --git-dir="$gitdir" archive --format=tar "$commit" -- "${paths[@]}" | tar -x -C "$dest"
find "$dest" -name '*_test.go' -delete
echo "$commit" >"$dest/COMMIT"
echo "imported github.com/valkey-io/valkey-operator at $commit into ${dest#"$root"/}"
