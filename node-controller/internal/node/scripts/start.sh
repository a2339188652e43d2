# shellcheck shell=sh
# The start of the server commands (after version.sh, before the command itself).

# prepare_start REQUIRED KEYS DEFAULTS INCLUDE refuses to start a server that is not
# Valkey 8.0 or later (exit code 78, the node-controller's UnsupportedServer) before it
# reads valkey.conf: an older server, or another one under the name valkey-server, stops
# at the first line it does not know and quotes it in its log, and valkey.conf includes
# the replication password (primaryauth). It refuses a server older than REQUIRED
# (major.minor, or - for none), which would refuse the config's KEYS and not start at
# all, and writes to INCLUDE (included by valkey.conf) the lines of DEFAULTS
# ("major.minor key value": the operator's defaults of newer versions) that this
# server's version takes.
prepare_start() {
  server=$( server_version ) || {
    echo "cannot read the version of valkey-server"
    exit 1
  }
  name=${server%% *}
  version=${server#* }
  case $version in
    [0-9]*.[0-9]*) known=true ;;
    *) known=false version="of an unknown version" ;;
  esac
  if [ "$name" != Valkey ] || [ "$known" = false ] || ! at_least "$version" 8.0; then
    echo "this image's valkey-server is $name $version; the operator runs Valkey 8.0 or later"
    exit 78
  fi
  if [ "$1" != "-" ] && ! at_least "$version" "$1"; then
    echo "config key $2 needs Valkey $1 or later; this image runs Valkey $version, whose server would refuse it and not start"
    exit 1
  fi
  : >"$4"
  while read -r since key value; do
    if [ -n "$since" ] && at_least "$version" "$since"; then
      echo "$key $value" >>"$4"
    fi
  done <"$3"
  echo "Valkey $version"
}
