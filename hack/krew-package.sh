#!/usr/bin/env bash
# Packages the kubectl plugin (kubectl-valkey) as krew archives, one per platform, and
# writes the krew plugin manifest (valkey.yaml) that points at them with their sha256.
# Usage: hack/krew-package.sh <out dir> <version> <platforms, comma-separated> [uri base]
set -euo pipefail

out=$1 version=$2 platforms=$3
base=${4:-https://github.com/valkey-operator/valkey-operator/releases/download/v${version}}
root=$(cd "$(dirname "$0")/.." && pwd)

rm -rf "$out" && mkdir -p "$out"
platform_entries=""
for p in ${platforms//,/ }; do
	os=${p%/*} arch=${p#*/}
	work=$(mktemp -d)
	ext=""
	[ "$os" = windows ] && ext=.exe
	(cd "$root/kubectl-valkey" && GOWORK=off CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath \
		-ldflags="-s -w -X github.com/valkey-operator/valkey-operator/kubectl-valkey/internal/plugin.Version=$version" \
		-o "$work/kubectl-valkey$ext" .)
	archive="kubectl-valkey_${version}_${os}_${arch}.tar.gz"
	tar -C "$work" -czf "$out/$archive" .
	rm -rf "$work"
	sum=$(sha256sum "$out/$archive" | awk '{print $1}')
	platform_entries+="  - selector:
      matchLabels:
        os: $os
        arch: $arch
    uri: $base/$archive
    sha256: $sum
    bin: kubectl-valkey$ext
"
	echo "krew-package: $out/$archive"
done

cat > "$out/valkey.yaml" <<MANIFEST
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: valkey
spec:
  version: v$version
  homepage: https://github.com/valkey-operator/valkey-operator
  shortDescription: Operate Valkey clusters of the valkey-operator
  description: |
    Shows a ValkeyCluster's shards, members, slots, conditions and events on one
    screen, and asks the operator for planned failovers, rolling restarts and
    pauses through the API; runs valkey-cli in a temporary pod with the user's
    password from its Secret.
  platforms:
$platform_entries
MANIFEST
echo "krew-package: $out/valkey.yaml"
