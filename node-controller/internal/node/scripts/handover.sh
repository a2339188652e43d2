# shellcheck shell=sh
# The preStop hook of every member: on Valkey before 9.0 (9.0 hands over by itself on
# SIGTERM, shutdown-on-sigterm failover, which the start command sets), a primary's
# replicas that INFO lists as online are asked in turn
# to run CLUSTER FAILOVER (a coordinated one: the primary pauses writes until the replica
# has caught up, so no acknowledged write is lost), then the hook waits until the server
# reports it is a replica. busybox sh and valkey-cli.
#
#   sh -c "$(cat version.sh handover.sh)" handover PASSWORD_FILE USER PORT WAIT_SECONDS [TLS_CA]
#
# The password reaches valkey-cli through the environment (REDISCLI_AUTH for 8.0,
# VALKEYCLI_AUTH later), never its command line.
version=$( valkey_version ) || exit 0
if at_least "$version" 9.0; then
  exit 0
fi
password_file=$1
user=$2
port=$3
wait=$4
ca=${5:-}
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
  i=0
  while [ "$i" -lt "$wait" ]; do
    primary || exit 0
    sleep 1
    i=$((i + 1))
  done
  exit 0
done
exit 0
