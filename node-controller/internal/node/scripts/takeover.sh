# shellcheck shell=sh
# wait_for_takeover NODES_CONF MAX_SECONDS USER AUTH_FILE [TLS_CA] waits, before a server
# starts again, until its shard's slots have a new owner, and returns 0 once they have.
#
# A primary whose process died has replicas that keep reconnecting to its address, and a
# cluster that still lists its old identity as the owner of its slots. Were it to start
# at once, empty (no persistence), a replica would resync from it and lose the shard's
# data; on its volume (persistence), it would believe it still owns the slots and
# acknowledge writes until gossip of the new owner reaches it, writes that are then lost.
# So a server whose cluster state file (NODES_CONF, from its previous run) says it was a
# primary holding slots, with replicas, first asks the other members of that file, as
# USER with the password in AUTH_FILE (a "primaryauth PASSWORD" line), for their view:
# once one of them shows its old identity without slots (a replica took over, Valkey's
# election or the operator's) or does not know it, the wait ends. After MAX_SECONDS, or
# when the file says there is nothing to wait for, it returns 1. The password reaches
# valkey-cli through the environment, never its command line.
wait_for_takeover() {
  conf=$1
  max=$2
  user=$3
  auth=$4
  ca=${5:-}
  [ -s "$conf" ] || return 1
  me=$(awk '$3 ~ /myself/ { print $1; exit }' "$conf")
  [ -n "$me" ] || return 1
  awk -v me="$me" '$1 == me && $3 ~ /master|primary/ && NF > 8 { held = 1 } $4 == me { replicas++ }
    END { exit !(held && replicas) }' "$conf" || return 1
  peers=$(awk -v me="$me" '$1 != me && $3 !~ /noaddr/ && NF >= 8 { split($2, a, "[@,]"); print a[1] }' "$conf")
  [ -n "$peers" ] || return 1
  REDISCLI_AUTH=$(awk '{ print $2; exit }' "$auth" 2>/dev/null)
  VALKEYCLI_AUTH=$REDISCLI_AUTH
  export REDISCLI_AUTH VALKEYCLI_AUTH
  echo "restarted after holding slots as $me: waiting up to ${max}s for a replica to take them over"
  end=$(($(date +%s) + max))
  while [ "$(date +%s)" -lt "$end" ]; do
    for p in $peers; do
      if [ -n "$ca" ]; then
        view=$(valkey-cli --no-auth-warning -t 1 --user "$user" --tls --cacert "$ca" -h "${p%:*}" -p "${p##*:}" cluster nodes 2>/dev/null) || continue
      else
        view=$(valkey-cli --no-auth-warning -t 1 --user "$user" -h "${p%:*}" -p "${p##*:}" cluster nodes 2>/dev/null) || continue
      fi
      # Only a real view counts (an error is printed on stdout too): it has a myself line.
      printf '%s\n' "$view" | grep -q myself || continue
      if ! printf '%s\n' "$view" | awk -v me="$me" '$1 == me && NF > 8 { owns = 1 } END { exit !owns }'; then
        echo "$p no longer lists $me as an owner of slots: starting"
        return 0
      fi
    done
    sleep 0.2 2>/dev/null || sleep 1
  done
  echo "no takeover seen within ${max}s: starting"
  return 1
}
