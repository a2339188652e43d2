# shellcheck shell=sh
# The start of the server commands (after version.sh, before the command itself).

# prepare_start REQUIRED KEYS DEFAULTS INCLUDE refuses to start a server older than
# REQUIRED (major.minor, or - for none), which would refuse the config's KEYS and not
# start at all, and writes to INCLUDE (included by valkey.conf) the lines of DEFAULTS
# ("major.minor key value": the operator's defaults of newer versions) that this
# server's version takes.
prepare_start() {
  version=$( valkey_version ) || {
    echo "cannot read the version of valkey-server"
    exit 1
  }
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
