# shellcheck shell=sh
# drain_clients PORT MAX_SECONDS CONTROL waits, after the server on PORT handed its slots
# over, until no application connection sent it a data command within the last second,
# at most MAX_SECONDS, and returns 0 then (1 when the time is up). CLIENT LIST's idle is
# the difference of two whole-second clocks, so 1 may mean a few milliseconds ago: a
# connection is idle from 2.
#
# Clients still routed to the old primary get MOVED from it and follow the new one; were
# the server to stop at once, the requests they have in flight on it would fail with a
# reset connection. A connection counts as an application's unless it is a replica's or
# a primary's (flags S or M), a system user's (its name starts with _), or its last
# command is one of CONTROL, the commands client libraries send on their own
# (space-separated, as the cluster-controller's drain reads them: valkey.ControlCommands).
# It needs the caller's cli function (valkey-cli with the user and TLS settings).
drain_clients() {
  end=$(($(date +%s) + $2))
  while [ "$(date +%s)" -lt "$end" ]; do
    busy=$(cli -h 127.0.0.1 -p "$1" client list 2>/dev/null | awk -v control=" $3 " '
      {
        flags = ""; user = ""; cmd = ""; idle = 1
        for (i = 1; i <= NF; i++) {
          eq = index($i, "=")
          k = substr($i, 1, eq - 1); v = substr($i, eq + 1)
          if (k == "flags") flags = v
          else if (k == "user") user = v
          else if (k == "cmd") cmd = v
          else if (k == "idle") idle = v + 0
        }
        if (flags ~ /[SM]/ || user ~ /^_/ || index(control, " " cmd " ") > 0) next
        if (idle <= 1) n++
      }
      END { print n + 0 }')
    [ "${busy:-0}" = 0 ] && return 0
    sleep 0.2 2>/dev/null || sleep 1
  done
  return 1
}
