# shellcheck shell=sh
# The server container of a member without persistence.
#
#   sh -c "$(cat version.sh start.sh server-ephemeral.sh)" server CONFIG REQUIRED KEYS DEFAULTS INCLUDE DATA_DIR NODES_CONF STARTED_MARKER RESTART_WAIT
#
# (REQUIRED to INCLUDE: see prepare_start in start.sh.)
#
# A server that restarts in its pod (a crash, a killed process, a failed liveness probe)
# must come back as a new, empty node. Its data directory (an emptyDir) outlives the
# container: with its old nodes.conf it would rejoin under its old identity, still
# claiming its slots, with whatever stale or empty dataset the directory holds, and its
# replica would copy that. So the cluster state and data files are removed first, and the
# new node joins as a replica.
#
# It must not come back at once either. Its replicas keep reconnecting to the pod's
# address: an empty primary there would give them a full resync of nothing, and the other
# nodes, finding another identity at the old one's address, stop probing it, so Valkey
# never fails it over. A restart therefore waits RESTART_WAIT seconds (marked by a file
# the liveness probe's delay accounts for) while the cluster sees the old identity fail
# and promotes a replica. The first start of a pod does not wait: its directory is new.
config=$1
data=$6
nodes_conf=$7
marker=$8
wait=$9
prepare_start "$2" "$3" "$4" "$5"
if [ -e "$data/$marker" ]; then
  echo "restarted in its pod: waiting ${wait}s for the cluster to fail over the old identity"
  sleep "$wait"
fi
touch "$data/$marker"
rm -rf "${data:?}/$nodes_conf" "$data/dump.rdb" "$data/appendonlydir"
exec valkey-server "$config" --cluster-announce-ip "$POD_IP"
