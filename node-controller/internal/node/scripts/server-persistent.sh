# shellcheck shell=sh
# The server container of a member with persistence: valkey-server on the member's
# volume, after the shard IDs of its cluster state file are repaired.
#
#   sh -c "$(cat version.sh start.sh takeover.sh server-persistent.sh)" server CONFIG REQUIRED KEYS DEFAULTS INCLUDE NODES_CONF RESTART_WAIT USER AUTH_FILE LIFECYCLE_USER LIFECYCLE_PASSWORD_FILE [TLS_CA]
#
# (REQUIRED to INCLUDE: see prepare_start in start.sh.)
#
# A server that held slots, with replicas, when it stopped unplanned (a crash, a node
# lost) first waits until a replica took them over (wait_for_takeover in takeover.sh, at
# most RESTART_WAIT seconds, then as long again after it had its most caught-up replica
# take over without a vote). If one did, the data on the volume is older than the new
# owner's, and the old identity must not serve the slots it still claims in its file
# until gossip corrects it: the server starts as a new, empty node instead, which joins
# as a replica and syncs. If none did (no replica could), it starts on its volume as the
# owner. A planned restart (an in-place roll) finds itself a replica in the file and
# starts at once.
#
# Valkey without the fix for valkey-io/valkey#2171 (8.0.1 among them) refuses to start
# ("corrupted cluster config file") when the file records a replica with another shard
# ID than its primary's. The file holds what gossip had told the server, and shard IDs
# settle some seconds after a replica is attached, so a restart soon after the cluster
# formed or a replica moved (an in-place roll, a drain) can leave such a file: the member
# would crash-loop on its own volume. Versions with the fix mend the file the same way as
# they load it. The shard ID is cluster metadata the servers gossip again at once; no
# data depends on it.
#
# Only the shard-id field of replica lines changes; the file is replaced atomically, and
# each change is written to the container's log. awk reads the file twice: first the
# shard ID of every primary, then every line, a replica's with its primary's shard ID
# (POSIX awk: mawk, busybox, gawk). Without awk (an unusual image) the file is left as it
# is.
config=$1
nodes_conf=$6
wait=$7
user=$8
auth=$9
lifecycle_user=${10}
lifecycle_password=${11}
ca=${12:-}
prepare_start "$2" "$3" "$4" "$5"
if wait_for_takeover "$nodes_conf" "$wait" "$user" "$auth" "$lifecycle_user" "$lifecycle_password" "$ca"; then
  echo "its slots have a new owner: starting as a new, empty node"
  data=$(dirname "$nodes_conf")
  rm -rf "$nodes_conf" "$data/dump.rdb" "$data/appendonlydir"
fi
if [ -s "$nodes_conf" ] && command -v awk >/dev/null 2>&1; then
  if awk '
function sid(f) { return match(f, /shard-id=[0-9a-f]+/) ? substr(f, RSTART + 9, RLENGTH - 9) : "" }
NR == FNR { if (NF >= 8 && $3 ~ /master|primary/ && sid($2) != "") shard[$1] = sid($2); next }
NF >= 8 && $3 ~ /slave|replica/ && ($4 in shard) && sid($2) != "" && sid($2) != shard[$4] {
  print "nodes.conf: replica " $1 " takes the shard ID of its primary " $4 > "/dev/stderr"
  sub(/shard-id=[0-9a-f]+/, "shard-id=" shard[$4], $2)
}
{ print }' "$nodes_conf" "$nodes_conf" >"$nodes_conf.repair"; then
    mv "$nodes_conf.repair" "$nodes_conf"
  else
    rm -f "$nodes_conf.repair"
  fi
fi
exec valkey-server "$config" --cluster-announce-ip "$POD_IP"
