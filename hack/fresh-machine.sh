#!/usr/bin/env bash
# Runs a make target (default: demo) in a pristine Debian 12 root, as a new user's fresh
# machine would: a minbase debootstrap of bookworm (nothing but Debian's essential
# packages and apt), Go copied in from this machine, make (to type the README's command),
# a clean clone of this checkout's HEAD, and nothing else: every other package and tool
# must come from the make path.
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
# The local Kubernetes inside uses this machine's network: wait for e2e runs of other
# checkouts (hack/e2e.sh holds the same lock).
exec 9>"${E2E_LOCK:-/tmp/valkey-operator-e2e.lock}"
flock 9
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
	cp /etc/resolv.conf "$tmp/etc/resolv.conf"
	chroot "$tmp" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends make
	tar -C "$tmp" -cf "$base.tmp" .
	rm -rf "$tmp"
	mv "$base.tmp" "$base"
fi

rootfs=$(mktemp -d "$CACHE/root.XXXXXX")
mounted=()
# shellcheck disable=SC2317 # run by the EXIT trap
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
# The network is the machine's, not the project's: a local CA this machine trusts (a
# TLS-intercepting egress proxy, say) is trusted inside too, once ca-certificates is in.
mkdir -p "$rootfs/usr/local/share/ca-certificates"
cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/" 2>/dev/null || true

mnt() { mount "$@" && mounted+=("${!#}"); }
# The root must be a mount point of its own, as on any machine: `ip netns exec` makes
# the mount tree a slave of /, which fails on a plain directory.
mnt --bind "$rootfs" "$rootfs"
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
