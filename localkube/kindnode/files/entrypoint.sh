#!/bin/bash
# The entrypoint of the project's kind node image (localkube/kindnode): it prepares the
# container's mounts, cgroups and identity for systemd, containerd and the kubelet, then
# runs the init it is given (/sbin/init). kind starts it with --privileged, a private
# cgroup namespace, tmpfs /run and /tmp, and a volume on /var.
#
# kind takes a node as started once its log says systemd reached the multi-user target
# (or names cgroup v1, which this script never does, so that kind waits for systemd on
# cgroup v1 hosts too).
set -o errexit -o nounset -o pipefail

say() { echo "kind-node: $*" >&2; }

# /sys read-only, as in any container (the kubelet and containerd check it), and every
# mount shared, so that volume mounts made by the kubelet reach the pods.
mount -o remount,ro /sys
mount --make-rshared /

# cgroup v1: the kubelet runs its pods under /kubelet (cgroupRoot) and /kubelet.slice
# (the systemd driver's name for it). Each becomes a mount point of its own in every
# hierarchy, so that the kubelet's and cAdvisor's view of the root matches the
# container's. Needs a private cgroup namespace (kind asks Docker for one).
cgroup_v1() {
	local own hierarchy root
	own=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ {print $3}' /proc/self/cgroup)
	if [[ $own != / ]]; then
		say "cgroup v1 without a private cgroup namespace (the node's cgroup is $own): not supported"
		exit 1
	fi
	mount --make-rprivate /sys/fs/cgroup
	while read -r hierarchy; do
		for root in kubelet kubelet.slice; do
			mkdir -p "$hierarchy/$root"
			if [[ -f $hierarchy/cpuset.cpus ]]; then
				cat "$hierarchy/cpuset.cpus" >"$hierarchy/$root/cpuset.cpus"
				cat "$hierarchy/cpuset.mems" >"$hierarchy/$root/cpuset.mems"
			fi
			mount --bind "$hierarchy/$root" "$hierarchy/$root"
		done
	done < <(findmnt -ln -t cgroup -o TARGET)
}
if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
	say "cgroup v2"
else
	say "cgroup version 1 host: preparing the kubelet's cgroup roots"
	cgroup_v1
fi

# Every node gets a machine ID of its own.
rm -f /etc/machine-id
systemd-machine-id-setup >/dev/null

# The iptables backend the node's tools use is the one that already holds rules in this
# network namespace (Docker writes its DNS rules here with the host's backend).
legacy=$( (iptables-legacy-save; ip6tables-legacy-save) 2>/dev/null | grep -c '^-' || true)
nft=$( (timeout 5 iptables-nft-save; timeout 5 ip6tables-nft-save) 2>/dev/null | grep -c '^-' || true)
mode=nft
((legacy > nft)) && mode=legacy
say "iptables backend: $mode"
update-alternatives --set iptables "/usr/sbin/iptables-$mode" >/dev/null
update-alternatives --set ip6tables "/usr/sbin/ip6tables-$mode" >/dev/null

say "starting $*"
exec "$@"
