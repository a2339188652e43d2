# shellcheck shell=sh
# Functions the server commands and the preStop hook share: what the image's own server
# says of its version, which decides what the server is given (the pod does not know
# its version before it runs, and an image tag is only a claim).

# server_version prints the name and major.minor.patch of this image's valkey-server, as
# its --version says ("Valkey server v=8.0.1 ..." gives "Valkey 8.0.1"; a Redis server
# under that name says "Redis server v=7.0.15 ...").
# A line without "v=" gives the first word and "unknown".
server_version() {
  v=$(valkey-server --version) || return 1
  name=${v%% *}
  case $v in
    *v=*) v=${v#*v=} ;;
    *) v=unknown ;;
  esac
  echo "$name ${v%% *}"
}

# valkey_version prints major.minor.patch of this image's valkey-server.
valkey_version() {
  v=$( server_version ) || return 1
  echo "${v#* }"
}

# at_least VERSION MAJOR.MINOR: whether VERSION (major.minor[.patch]) is MAJOR.MINOR or later.
at_least() {
  have_major=${1%%.*}
  have_rest=${1#*.}
  have_minor=${have_rest%%.*}
  want_major=${2%%.*}
  want_minor=${2#*.}
  [ "$have_major" -gt "$want_major" ] || { [ "$have_major" -eq "$want_major" ] && [ "$have_minor" -ge "$want_minor" ]; }
}
