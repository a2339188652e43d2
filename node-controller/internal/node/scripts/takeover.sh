# shellcheck shell=sh
# wait_for_takeover NODES_CONF MAX_SECONDS USER AUTH_FILE LIFECYCLE_USER LIFECYCLE_PASSWORD_FILE [TLS_CA]
# waits, before a server starts again, until its shard's slots have a new owner, and
# returns 0 once they have.
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
# election or the operator's) or does not know it, the wait ends.
#
# After MAX_SECONDS without a takeover, the server itself, which is the proof that its
# old identity's process is gone, asks the most caught-up of its former replicas (those
# whose own view still has them follow it; INFO replication as LIFECYCLE_USER, whose
# password is in LIFECYCLE_PASSWORD_FILE: the highest offset, not in a full sync) to
# take over without a vote
# (CLUSTER FAILOVER TAKEOVER), and waits up to MAX_SECONDS more for the others to see it:
# no election is needed where the old primary is known dead, and an empty server must
# not come up at an address a replica still follows. It returns 1 when no takeover is
# seen after that, or when the file says there is nothing to wait for. Passwords reach
# valkey-cli through the environment, never its command line.
wait_for_takeover() {
  conf=$1
  max=$2
  user=$3
  auth=$4
  lifecycle_user=$5
  lifecycle_password=$6
  ca=${7:-}
  [ -s "$conf" ] || return 1
  me=$(awk '$3 ~ /myself/ { print $1; exit }' "$conf")
  [ -n "$me" ] || return 1
  awk -v me="$me" '$1 == me && $3 ~ /master|primary/ && NF > 8 { held = 1 } $4 == me { replicas++ }
    END { exit !(held && replicas) }' "$conf" || return 1
  peers=$(awk -v me="$me" '$1 != me && $3 !~ /noaddr/ && NF >= 8 { split($2, a, "[@,]"); print a[1] }' "$conf")
  [ -n "$peers" ] || return 1
  auth_password=$(awk '{ print $2; exit }' "$auth" 2>/dev/null)
  lifecycle_auth=$(cat "$lifecycle_password" 2>/dev/null)
  echo "restarted after holding slots as $me: waiting up to ${max}s for a replica to take them over"
  taken_over "$max" && return 0
  replicas=$(awk -v me="$me" '$4 == me && NF >= 8 { split($2, a, "[@,]"); print a[1] }' "$conf")
  best=
  best_offset=-1
  for r in $replicas; do
    # Only a replica that follows me still in its own view: one moved to another shard
    # since would take that shard's slots.
    follows=$(cli_as "$user" "$auth_password" "$r" cluster nodes | awk '$3 ~ /myself/ { print $4; exit }')
    [ "$follows" = "$me" ] || continue
    repl=$(cli_as "$lifecycle_user" "$lifecycle_auth" "$r" info replication | tr -d '\r') || continue
    offset=$(printf '%s\n' "$repl" | awk -F: '
      $1 ~ /^(master|primary)_sync_in_progress$/ && $2 != "0" { syncing = 1 }
      $1 ~ /^(slave|replica)_repl_offset$/ { offset = $2 }
      END { if (!syncing && offset != "") print offset }')
    if [ -n "$offset" ] && [ "$offset" -gt "$best_offset" ]; then
      best=$r
      best_offset=$offset
    fi
  done
  if [ -z "$best" ]; then
    echo "no takeover seen within ${max}s, and no replica of $me to take over: starting"
    return 1
  fi
  echo "no takeover seen within ${max}s: this server is what is left of $me, so its replica $best (offset $best_offset) takes over without a vote (CLUSTER FAILOVER TAKEOVER)"
  cli_as "$lifecycle_user" "$lifecycle_auth" "$best" cluster failover takeover
  taken_over "$max" && return 0
  echo "no takeover seen within ${max}s after asking $best: starting"
  return 1
}

# cli_as USER PASSWORD HOST:PORT ARGS... runs valkey-cli against one member as USER (the
# password reaches it through its environment only), with TLS when ca is set; one
# second to connect.
cli_as() {
  u=$1
  pw=$2
  addr=$3
  shift 3
  if [ -n "$ca" ]; then
    REDISCLI_AUTH=$pw VALKEYCLI_AUTH=$pw valkey-cli --no-auth-warning -t 1 --user "$u" --tls --cacert "$ca" -h "${addr%:*}" -p "${addr##*:}" "$@" 2>/dev/null
  else
    REDISCLI_AUTH=$pw VALKEYCLI_AUTH=$pw valkey-cli --no-auth-warning -t 1 --user "$u" -h "${addr%:*}" -p "${addr##*:}" "$@" 2>/dev/null
  fi
}

# taken_over SECONDS polls the peers' views for SECONDS and returns 0 once one shows me
# without slots (or not at all).
taken_over() {
  end=$(($(date +%s) + $1))
  while [ "$(date +%s)" -lt "$end" ]; do
    for p in $peers; do
      view=$(cli_as "$user" "$auth_password" "$p" cluster nodes) || continue
      # Only a real view counts (an error is printed on stdout too): it has a myself line.
      printf '%s\n' "$view" | grep -q myself || continue
      if ! printf '%s\n' "$view" | awk -v me="$me" '$1 == me && NF > 8 { owns = 1 } END { exit !owns }'; then
        echo "$p no longer lists $me as an owner of slots: starting"
        return 0
      fi
    done
    sleep 0.2 2>/dev/null || sleep 1
  done
  return 1
}
