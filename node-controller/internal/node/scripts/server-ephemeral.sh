# shellcheck shell=sh
# The server container of a member without persistence.
#
#   sh -c "$(cat version.sh start.sh takeover.sh server-ephemeral.sh)" server CONFIG REQUIRED KEYS DEFAULTS INCLUDE DATA_DIR NODES_CONF STARTED_MARKER RESTART_WAIT USER AUTH_FILE LIFECYCLE_USER LIFECYCLE_PASSWORD_FILE [TLS_CA]
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
# A primary must not come back before its slots have a new owner either: its replicas
# keep reconnecting to the pod's address, and an empty primary there would give them a
# full resync of nothing. So a restart first waits (wait_for_takeover, RESTART_WAIT
# seconds, then as long again after it had its most caught-up replica take over without a
# vote; the liveness probe's delay accounts for both) until a replica took over; a
# replica, or a primary without slots or replicas, starts at once. The first start of a
# pod does not wait: its directory is new (STARTED_MARKER marks a later one).
config=$1
data=$6
nodes_conf=$7
marker=$8
wait=$9
user=${10}
auth=${11}
lifecycle_user=${12}
lifecycle_password=${13}
ca=${14:-}
prepare_start "$2" "$3" "$4" "$5"
if [ -e "$data/$marker" ]; then
  wait_for_takeover "$data/$nodes_conf" "$wait" "$user" "$auth" "$lifecycle_user" "$lifecycle_password" "$ca" || true
fi
touch "$data/$marker"
rm -rf "${data:?}/$nodes_conf" "$data/dump.rdb" "$data/appendonlydir"
exec valkey-server "$config" --cluster-announce-ip "$POD_IP"
