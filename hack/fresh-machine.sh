#!/usr/bin/env bash
# Runs a make target (default: demo) in a pristine Debian 12 root, as a new user's fresh
# machine would: a minbase debootstrap of bookworm (nothing but Debian's essential
# packages and apt), Go copied in from this machine, a clean clone of this checkout's
# HEAD, and nothing else: every other package and tool must come from the make path.
#
#   hack/fresh-machine.sh [TARGET]
#
# The pristine root is cached as a tarball under .cache/fresh; each run unpacks a new
# copy, so one run's installs never reach the next. It shares this machine's kernel,
# network and cgroups (the local Kubernetes inside it makes its namespaces here), so no
# local Kubernetes may run on the host meanwhile. FRESH_KEEP=1 keeps the root afterwards.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET=${1:-demo}
CACHE=${LOCALKUBE_CACHE:-$ROOT/.cache}/fresh
MIRROR=${FRESH_MIRROR:-http://deb.debian.org/debian}
GOROOT_HOST=${GOROOT_HOST:-/usr/local/go}

"$ROOT/hack/deps.sh" fresh
if "$ROOT/bin/localkube" status >/dev/null 2>&1; then
	echo "fresh-machine: a local Kubernetes runs on this machine: make local-down first" >&2
	exit 1
fi
mkdir -p "$CACHE"
base=$CACHE/bookworm-minbase.tar
if [[ ! -s $base ]]; then
	echo "fresh-machine: debootstrap --variant=minbase bookworm (once; cached in $base)"
	tmp=$(mktemp -d "$CACHE/debootstrap.XXXXXX")
	debootstrap --variant=minbase bookworm "$tmp" "$MIRROR"
	tar -C "$tmp" -cf "$base.tmp" .
	rm -rf "$tmp"
	mv "$base.tmp" "$base"
fi

rootfs=$(mktemp -d "$CACHE/root.XXXXXX")
mounted=()
cleanup() {
	set +e
	if [[ -x $rootfs/root/valkey-operator/bin/localkube ]]; then
		chroot "$rootfs" /usr/bin/env -i PATH=/usr/local/go/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			/root/valkey-operator/bin/localkube down --repo-root /root/valkey-operator >/dev/null 2>&1
	fi
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}"; done
	if [[ -z ${FRESH_KEEP:-} ]]; then rm -rf "$rootfs"; else echo "fresh-machine: kept $rootfs"; fi
}
trap cleanup EXIT
tar -C "$rootfs" -xf "$base"
cp -a "$GOROOT_HOST" "$rootfs/usr/local/go"
git clone -q "$ROOT" "$rootfs/root/valkey-operator"
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"

mnt() { mount "$@" && mounted+=("${!#}"); }
mnt -t proc proc "$rootfs/proc"
mnt --rbind /sys "$rootfs/sys"
mount --make-rslave "$rootfs/sys"
mnt --rbind /dev "$rootfs/dev"
mount --make-rslave "$rootfs/dev"
mnt -t tmpfs tmpfs "$rootfs/run"
mnt -t tmpfs tmpfs "$rootfs/tmp"

echo "fresh-machine: make $TARGET in $rootfs ($(date -u +%FT%TZ))"
start=$(date +%s)
rc=0
chroot "$rootfs" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
	PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	/bin/bash -c "cd /root/valkey-operator && make $TARGET" || rc=$?
echo "fresh-machine: make $TARGET exited $rc after $(($(date +%s) - start)) s"
exit "$rc"
