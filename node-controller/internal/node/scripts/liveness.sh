# shellcheck shell=sh
# The liveness probe of a server without TLS: an authenticated PING over loopback. A
# server loading its dataset answers LOADING and counts as alive.
#
#   sh -c "$(cat liveness.sh)" liveness PORT [PASSWORD_FILE USER]
#
# The password reaches valkey-cli through the environment (REDISCLI_AUTH for 8.0,
# VALKEYCLI_AUTH later), never its command line.
port=$1
if [ -n "${2:-}" ]; then
  REDISCLI_AUTH="$(cat "$2")"
  VALKEYCLI_AUTH=$REDISCLI_AUTH
  export REDISCLI_AUTH VALKEYCLI_AUTH
  valkey-cli -h 127.0.0.1 -p "$port" --user "$3" PING | grep -qE '^(PONG|LOADING)'
else
  valkey-cli -h 127.0.0.1 -p "$port" PING | grep -qE '^(PONG|LOADING)'
fi
