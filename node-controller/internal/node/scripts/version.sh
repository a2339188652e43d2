# shellcheck shell=sh
# Functions the server commands and the preStop hook share: what the image's own server
# says of its version, which decides what the server is given (the pod does not know
# its version before it runs, and an image tag is only a claim).

# valkey_version prints major.minor.patch of this image's valkey-server.
valkey_version() {
  v=$(valkey-server --version) || return 1
  v=${v#*v=}
  echo "${v%% *}"
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
