#!/bin/bash
# Run before the kubelet (kubelet.service.d/10-node.conf): on cgroup v2, the kubelet's
# roots /kubelet and /kubelet.slice exist with every controller delegated to them; on
# cgroup v1 the entrypoint made them already.
set -o errexit -o nounset -o pipefail
cg=/sys/fs/cgroup
[[ -f $cg/cgroup.controllers ]] || exit 0
delegate() {
	local c out=""
	for c in $(<"$cg/$1/cgroup.controllers"); do out+=" +$c"; done
	[[ -z $out ]] || echo "${out# }" >"$cg/$1/cgroup.subtree_control"
}
# Controllers can be delegated only from a cgroup without processes (systemd keeps its
# own in init.scope).
if [[ -s $cg/cgroup.procs ]]; then
	echo "kubelet-cgroups: processes in the root cgroup: cannot delegate controllers" >&2
	exit 1
fi
delegate /
for root in kubelet kubelet.slice; do
	mkdir -p "$cg/$root"
	delegate "/$root"
done
