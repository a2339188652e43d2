#!/usr/bin/env bash
# Runs every release binary with --version before it goes into the image: natively on
# this machine's architecture, under qemu-user-static for the others (arm64 on amd64).
#
#   hack/release-smoke.sh BINDIR PLATFORMS VERSION COMPONENT...
set -euo pipefail
bins=$1 platforms=$2 version=$3
shift 3
host=$(uname -m)
case "$host" in x86_64) host=amd64 ;; aarch64) host=arm64 ;; esac
for p in ${platforms//,/ }; do
	arch=${p#*/}
	runner=()
	if [[ $arch != "$host" ]]; then
		case "$arch" in
		arm64) runner=(qemu-aarch64-static) ;;
		amd64) runner=(qemu-x86_64-static) ;;
		*) echo "release-smoke: no emulator for $arch" >&2; exit 1 ;;
		esac
	fi
	for c in "$@"; do
		out=$("${runner[@]}" "$bins/${p%/*}-$arch/$c" --version)
		if [[ $out != "$c $version "* || $out != *"/$arch)" ]]; then
			echo "release-smoke: $p $c --version printed: $out" >&2
			exit 1
		fi
		echo "release-smoke: $p ${runner[*]:-native}: $out"
	done
done
