#!/usr/bin/env bash
# Checks, and where it can installs, every program the project runs (the table is
# hack/deps.txt). Every entry point (make demo, test, e2e, bench, chaos, local-up, tools)
# runs it first, so a missing program stops the run before any build starts.
#
#   hack/deps.sh [demo|release|test|kind|clients|fresh]   the programs of that profile,
#                                               with the ones it builds on (test: demo and
#                                               release)
#
# DEPS=install (default) installs what is missing when it can: Debian packages on Debian
# 12 as root (bookworm-backports added when a package needs it), Go programs into
# hack/tools/bin anywhere Go runs. DEPS=check never installs. What cannot be installed is
# listed with how to get it, before anything is built, and the script exits 1. With
# everything present it only looks (well under a second).
#
# The kind profile also needs a running Docker engine: when none answers, it starts
# dockerd (see start_dockerd) and waits until it serves.
set -euo pipefail
here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
ROOT=$(cd "$here/.." && pwd)
TABLE=${DEPS_TABLE:-$ROOT/hack/deps.txt}
TOOLS_BIN=${TOOLS_BIN:-$ROOT/hack/tools/bin}
MODE=${DEPS:-install}
PROFILE=${1:-test}
GO_MIN_MINOR=26

case "$PROFILE" in
demo) profiles=" demo " ;;
release) profiles=" demo release " ;;
test) profiles=" demo release test " ;;
kind) profiles=" demo release test kind " ;;
clients) profiles=" demo release test clients " ;;
fresh) profiles=" demo release test fresh " ;;
*) echo "deps: unknown profile $PROFILE (demo, release, test, kind, clients or fresh)" >&2; exit 2 ;;
esac
case "$MODE" in
install | check) ;;
*) echo "deps: DEPS=$MODE: use install or check" >&2; exit 2 ;;
esac

# present PROGRAM: a name in PATH, or an absolute path that exists.
present() {
	if [[ $1 == /* ]]; then [[ -e $1 ]]; else command -v "$1" >/dev/null 2>&1; fi
}

# go_tool_ok NAME VERSION: hack/tools/bin/NAME exists and was installed at VERSION.
go_tool_ok() {
	[[ -x $TOOLS_BIN/$1 && -f $TOOLS_BIN/.$1.version && $(<"$TOOLS_BIN/.$1.version") == "$2" ]]
}

# go_ok: a Go toolchain of version 1.GO_MIN_MINOR or later.
go_ok() {
	local v
	command -v go >/dev/null 2>&1 || return 1
	v=$(go env GOVERSION 2>/dev/null) || return 1
	[[ $v =~ ^go1\.([0-9]+) ]] && ((BASH_REMATCH[1] >= GO_MIN_MINOR))
}

declare -a missing_apt=() missing_go=() missing_manual=()
declare -A apt_pkgs=()

scan() {
	missing_apt=() missing_go=() missing_manual=()
	apt_pkgs=()
	local prog rest src profile
	while read -r prog rest; do
		[[ -z $prog || $prog == \#* ]] && continue
		# The profile is the last word; the source (which may hold spaces) is the rest.
		profile=${rest##* } src=${rest% *}
		src=${src%"${src##*[![:space:]]}"}
		[[ $profiles == *" $profile "* ]] || continue
		case "$src" in
		apt:*)
			present "$prog" && continue
			missing_apt+=("$prog ${src#apt:}")
			apt_pkgs[${src#apt:}]=1
			;;
		go:*)
			local mod=${src#go:}
			go_tool_ok "$prog" "${mod##*@}" && continue
			missing_go+=("$prog $mod")
			;;
		manual:*)
			if [[ $prog == go ]]; then go_ok && continue; else present "$prog" && continue; fi
			missing_manual+=("$prog|${src#manual:}")
			;;
		*) echo "deps: $TABLE: bad source $src for $prog" >&2; exit 2 ;;
		esac
	done <"$TABLE"
}

report() {
	local e
	echo "deps: missing for '$PROFILE':" >&2
	for e in "${missing_manual[@]}"; do echo "  ${e%%|*}: ${e#*|}" >&2; done
	for e in "${missing_apt[@]}"; do
		local pkg=${e#* }
		if [[ $pkg == */* ]]; then
			echo "  ${e%% *}: apt-get install -t ${pkg#*/} ${pkg%/*}   (Debian 12, suite ${pkg#*/})" >&2
		else
			echo "  ${e%% *}: apt-get install $pkg" >&2
		fi
	done
	for e in "${missing_go[@]}"; do echo "  ${e%% *}: GOBIN=$TOOLS_BIN go install ${e#* } (hack/deps.sh does it without DEPS=check)" >&2; done
}

# why_not_install prints why this machine is not installed on, or nothing.
why_not_install() {
	if [[ $(id -u) -ne 0 ]]; then echo "not root"; return; fi
	local id="" version=""
	if [[ -r /etc/os-release ]]; then
		# shellcheck disable=SC1091
		id=$(. /etc/os-release && echo "${ID:-}") version=$(. /etc/os-release && echo "${VERSION_ID:-}")
	fi
	if [[ $id != debian || $version != 12 ]]; then echo "not Debian 12 (${id:-unknown} ${version})"; return; fi
	command -v apt-get >/dev/null 2>&1 || echo "no apt-get"
}

ensure_backports() {
	grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/ && return
	echo "deps: adding bookworm-backports to the apt sources"
	cat >/etc/apt/sources.list.d/bookworm-backports.sources <<'SOURCES'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
}

install_apt() {
	local -a plain=() suites=() pkg
	local -A by_suite=()
	for pkg in "${!apt_pkgs[@]}"; do
		if [[ $pkg == */* ]]; then
			by_suite[${pkg#*/}]+=" ${pkg%/*}"
		else
			plain+=("$pkg")
		fi
	done
	suites=("${!by_suite[@]}")
	((${#suites[@]})) && ensure_backports
	echo "deps: apt-get install ${plain[*]}${suites:+ (and from ${suites[*]}:${by_suite[*]})}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	if ((${#plain[@]})); then
		apt-get install -y -q --no-install-recommends "${plain[@]}"
	fi
	local s
	for s in "${suites[@]}"; do
		# shellcheck disable=SC2086 # the list is split on purpose
		apt-get install -y -q --no-install-recommends -t "$s" ${by_suite[$s]}
	done
	# The registry package starts a registry on every address when systemd runs: the
	# project starts its own registry where its tests need one, and opens no port here.
	# The same for the Redis package's server on 127.0.0.1:6379: the tests start their own.
	if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
		[[ -n ${apt_pkgs[docker-registry]:-} ]] && { systemctl disable --now docker-registry >/dev/null 2>&1 || true; }
		[[ -n ${apt_pkgs[redis-server]:-} ]] && { systemctl disable --now redis-server >/dev/null 2>&1 || true; }
	fi
}

install_go() {
	local e prog mod
	mkdir -p "$TOOLS_BIN"
	for e in "${missing_go[@]}"; do
		prog=${e%% *} mod=${e#* }
		echo "deps: go install $mod"
		GOWORK=off GOBIN=$TOOLS_BIN CGO_ENABLED=0 go install "$mod"
		echo "${mod##*@}" >"$TOOLS_BIN/.$prog.version"
	done
}

# docker_ok: a Docker engine answers.
docker_ok() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

# start_dockerd starts Debian's dockerd in the background, for kind, so that it changes
# nothing the local Kubernetes relies on: the host keeps not forwarding (ip_forward 0, so
# the FORWARD policy stays ACCEPT) and masquerades nothing, no default bridge, and the
# containers' embedded DNS forwards to nothing (127.0.0.1), so no name a node looks up
# leaves the machine. Where the capability bounding set lacks capabilities the kernel
# has, kind's --privileged nodes need hack/bounded-runc.sh as the runtime. It closes the
# descriptors it was given, so that no lock (hack/e2e.sh's) stays held by the daemon.
start_dockerd() {
	local log=/var/log/valkey-operator-dockerd.log last bounding all
	local -a args=(--ip-forward=false --ip-masq=false --bridge=none --dns 127.0.0.1)
	last=$(</proc/sys/kernel/cap_last_cap)
	bounding=$((16#$(awk '/^CapBnd:/ {print $2}' /proc/self/status)))
	all=$(((1 << (last + 1)) - 1))
	if (((bounding & all) != all)); then
		local runtime=/usr/local/libexec/valkey-operator/bounded-runc
		mkdir -p "${runtime%/*}"
		cp "$ROOT/hack/bounded-runc.sh" "$runtime.tmp"
		chmod 0755 "$runtime.tmp"
		mv "$runtime.tmp" "$runtime"
		args+=(--add-runtime "bounded-runc=$runtime" --default-runtime bounded-runc)
	fi
	echo "deps: starting dockerd ${args[*]} (log $log)"
	(
		for fd in /proc/self/fd/*; do
			fd=${fd##*/}
			((fd > 2)) && eval "exec $fd>&-"
		done
		exec setsid dockerd "${args[@]}" </dev/null >>"$log" 2>&1
	) &
	local i
	for ((i = 0; i < 60; i++)); do
		docker_ok && return 0
		sleep 0.5
	done
	echo "deps: dockerd did not answer within 30 s; see $log" >&2
	return 1
}

# ensure_docker: for the kind profile, a Docker engine runs (started here when root).
ensure_docker() {
	[[ $PROFILE == kind ]] || return 0
	docker_ok && return 0
	if [[ $MODE == check || $(id -u) -ne 0 ]]; then
		echo "deps: no Docker engine answers: start dockerd (or run hack/deps.sh kind as root)" >&2
		return 1
	fi
	start_dockerd
}

scan
if ((${#missing_apt[@]} + ${#missing_go[@]} + ${#missing_manual[@]} == 0)); then
	ensure_docker
	exit
fi
# Debian packages need root on Debian 12; Go programs only need Go (they go into
# hack/tools/bin). Whatever cannot be installed is reported before anything is built.
if [[ $MODE == check ]]; then
	report
	echo "deps: not installing (DEPS=check)" >&2
	exit 1
fi
if ((${#missing_apt[@]})); then
	reason=$(why_not_install)
	if [[ -n $reason ]]; then
		report
		echo "deps: not installing Debian packages ($reason): install the above, or run as root on Debian 12" >&2
		exit 1
	fi
	install_apt
	scan
fi
if ((${#missing_manual[@]})); then
	report
	exit 1
fi
((${#missing_go[@]})) && install_go
scan
if ((${#missing_apt[@]} + ${#missing_go[@]} + ${#missing_manual[@]})); then
	report
	echo "deps: still missing after installing" >&2
	exit 1
fi
ensure_docker
echo "deps: everything for '$PROFILE' is installed"
