# shellcheck shell=sh
# The preStop hook of every member: a primary's replicas that INFO lists as online are
# asked in turn to run CLUSTER FAILOVER (a coordinated one: the primary pauses writes
# until the replica has caught up, so no acknowledged write is lost); once the server
# reports it is a replica, the hook waits until its clients have moved to the new primary
# (drain_clients, at most DRAIN_SECONDS), so the server's exit resets no connection in
# use. Valkey 9.0 also hands over by itself on SIGTERM (shutdown-on-sigterm failover,
# which the start command sets): that covers a hook that could not run, without the
# wait for the clients. busybox sh and valkey-cli.
#
#   sh -c "$(cat drain.sh handover.sh)" handover PASSWORD_FILE USER PORT WAIT_SECONDS DRAIN_SECONDS CONTROL [TLS_CA]
#
# The password reaches valkey-cli through the environment (REDISCLI_AUTH for 8.0,
# VALKEYCLI_AUTH later), never its command line.
password_file=$1
user=$2
port=$3
wait=$4
drain=$5
control=$6
ca=${7:-}
REDISCLI_AUTH="$(cat "$password_file")"
VALKEYCLI_AUTH=$REDISCLI_AUTH
export REDISCLI_AUTH VALKEYCLI_AUTH
cli() {
  if [ -n "$ca" ]; then
    valkey-cli --no-auth-warning --user "$user" --tls --cacert "$ca" "$@"
  else
    valkey-cli --no-auth-warning --user "$user" "$@"
  fi
}
primary() { cli -h 127.0.0.1 -p "$port" info replication | grep -q '^role:master'; }
primary || exit 0
for r in $(cli -h 127.0.0.1 -p "$port" info replication | awk -F'[:=,]' '/^slave[0-9]+:/ && /state=online/ {print $3 ":" $5}'); do
  cli -h "${r%%:*}" -p "${r##*:}" cluster failover | grep -q OK || continue
  end=$(($(date +%s) + wait))
  while [ "$(date +%s)" -lt "$end" ]; do
    if ! primary; then
      drain_clients "$port" "$drain" "$control" || true
      exit 0
    fi
    sleep 0.2 2>/dev/null || sleep 1
  done
  exit 0
done
exit 0
