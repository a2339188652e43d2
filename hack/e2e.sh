#!/usr/bin/env bash
# Runs the e2e suites (e2e/tests/<suite>/, build tag e2e) and prints each one's duration.
#
#   hack/e2e.sh            every suite
#   hack/e2e.sh SUITE      one suite (the folder name, which is also its suite= label)
#   hack/e2e.sh ci         the suites that fit CI
#
# E2E_PROVIDER=local|kind chooses the cluster (see e2e/framework/doc.go for the other
# variables); E2E_TIMEOUT is go test's timeout per suite (default 20m, the soak 60m); E2E_ARGS are
# passed to the suites after -args (e.g. E2E_ARGS='--feature=drain').
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TESTS="$ROOT/e2e/tests"
# The suites make test runs (docs/testing.md, "CI budget": CI has 90 minutes on 2 cores
# with cold caches, and make test keeps within 60 of them). localkube, chart, release and
# every suite on kind run in make e2e (E2E_PROVIDER=kind make e2e for kind).
CI_SUITES=(api node cluster-form heal config roll scale acl tls)
# The CI suites that make test also runs on kind, after the local ones: none, as the kind
# node image alone takes up to 9 minutes to build with cold caches.
CI_KIND_SUITES=()
# Tests of the CI suites that only make e2e runs (go test -skip patterns), to keep make test
# within its budget (docs/testing.md): TestScaleOn80 (3 -> 5 -> 2 shards with MIGRATE on
# Valkey 8.0, about 7 minutes; the cluster-controller's integration suite scales real 8.0
# servers with keys in make unit).
declare -A CI_SKIP=([scale]='^TestScaleOn80$')
# Suites longer than go test's timeout by default: the soak runs six features of twenty
# kills each, about 6 minutes apiece.
declare -A SUITE_TIMEOUT=([soak]=60m)
export LOCALKUBE_CACHE=${LOCALKUBE_CACHE:-$ROOT/.cache}

all_suites() {
	local d
	for d in "$TESTS"/*/; do
		compgen -G "$d*_test.go" >/dev/null && basename "$d"
	done
}

# The nodes' kubelets evict pods when the disk is nearly full (localkube: 1 % free), and a
# suite then fails for no reason of its own: say so before any suite starts. The Go build
# cache is the usual culprit on a machine that builds a lot (go clean -cache empties it).
MIN_FREE_GB=${E2E_MIN_FREE_GB:-8}
free_gb=$(df -P -BG "$LOCALKUBE_CACHE" 2>/dev/null | awk 'NR==2 {sub("G", "", $4); print $4}')
if [[ -n $free_gb && $free_gb -lt $MIN_FREE_GB ]]; then
	echo "e2e: only ${free_gb} GB free on the disk of $LOCALKUBE_CACHE, want ${MIN_FREE_GB} (E2E_MIN_FREE_GB);" \
		"the kubelets would evict the operator's pods. The Go build cache holds $(du -sh "$(go env GOCACHE)" 2>/dev/null | cut -f1)." >&2
	exit 1
fi

PROVIDER=${E2E_PROVIDER:-local}
case "${1:-}" in
"") mapfile -t SUITES < <(all_suites) ;;
ci) SUITES=("${CI_SUITES[@]}") ;;
*)
	[[ -d "$TESTS/$1" ]] || { echo "e2e: no suite $1 (have: $(all_suites | xargs))" >&2; exit 2; }
	SUITES=("$1")
	;;
esac
# RUNS are "suite provider" pairs, in order: every suite on E2E_PROVIDER, then, in ci
# mode on the local Kubernetes, CI_KIND_SUITES on kind.
RUNS=()
for s in "${SUITES[@]}"; do RUNS+=("$s $PROVIDER"); done
if [[ ${1:-} == ci && $PROVIDER == local ]]; then
	for s in "${CI_KIND_SUITES[@]}"; do RUNS+=("$s kind"); done
fi
uses_provider() {
	local r
	for r in "${RUNS[@]}"; do [[ ${r#* } == "$1" ]] && return 0; done
	return 1
}

# Suites that run no operator: they need the cluster's binaries and the Valkey and
# toolbox images, but not freshly built operator binaries (which may not build while
# the controllers are being worked on).
NO_OPERATOR_SUITES=(localkube)

needs_operator() {
	local s n
	for s in "${SUITES[@]}"; do
		for n in "${NO_OPERATOR_SUITES[@]}"; do [[ $s == "$n" ]] && continue 2; done
		return 0
	done
	return 1
}

# One local Kubernetes runs on a machine at a time (its bridge, namespaces and guard have
# fixed names): runs from several checkouts wait for each other here.
exec 9>"${E2E_LOCK:-/tmp/valkey-operator-e2e.lock}"
if ! flock -n 9; then
	echo "e2e: another checkout's e2e run holds ${E2E_LOCK:-/tmp/valkey-operator-e2e.lock}; waiting"
	flock 9
fi

# The binaries of the local cluster (kind needs the localkube program, which builds the
# images, and the project's node image unless E2E_KIND_IMAGE names another) and the
# images both providers load. Warm, this only checks the caches (and imports the images
# into a running local cluster).
echo "e2e: checking binaries and images"
for s in "${SUITES[@]}"; do [[ $s == clients ]] && "$ROOT/hack/deps.sh" clients; done
uses_provider local && make -s -C "$ROOT" local-build
if uses_provider kind; then
	if [[ -z ${E2E_KIND_IMAGE:-} ]]; then
		make -s -C "$ROOT" kind-image
	else
		make -s -C "$ROOT" deps-kind "$ROOT/bin/localkube"
	fi
fi
# The monitoring suite runs the Prometheus Operator, built from the Go module proxy once
# (hack/promop); the next images step then builds its images and Prometheus's. The
# certmanager suite runs cert-manager's controller, cainjector and webhook, built the
# same way (hack/certmanager), and their image. Both providers load every image of the
# manifest.
# The security suite runs a cluster on an image whose valkey-server is Redis
# (localkube images --impostor).
impostor=()
for s in "${SUITES[@]}"; do
	[[ $s == monitoring ]] && make -s -C "$ROOT" monitoring-build
	[[ $s == certmanager ]] && make -s -C "$ROOT" certmanager-build
	[[ $s == security ]] && impostor=(--impostor)
done
if needs_operator; then
	make -s -C "$ROOT" images IMAGES_FLAGS="${impostor[*]}"
else
	op=()
	[[ -d "$ROOT/bin/operator" ]] && op=(--operator-binaries "$ROOT/bin/operator")
	"$ROOT/bin/localkube" images "${op[@]}" "${impostor[@]}"
fi

# A run of several suites on the local Kubernetes ends with the RBAC check: every rule
# the chart gives a component was used by its service account in the API server's audit
# logs of these suites (e2e/rbacaudit, docs/security.md).
audit_check=0
[[ $PROVIDER == local && ( -z ${1:-} || ${1:-} == ci ) && -z ${E2E_ARGS:-} ]] && audit_check=1
audit_since=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# recap repeats, after a failed suite, each failed feature's last lines before the dump
# of its namespace (e2e/framework.DumpMarker): the failure is said there, and the pods
# and events that follow push it out of a short excerpt of the output.
recap() {
	awk -v suite="$1" -v n=15 '
		index($0, "pods and events of the failed feature'"'"'s namespace") {
			ns = $NF; sub(/:$/, "", ns)
			printf "e2e: %s: the last %d lines before the dump of %s\n", suite, n, ns
			for (i = NR - n; i < NR; i++) if (i > 0) print "e2e: | " buf[i % n]
			next
		}
		{ buf[NR % n] = $0 }'
}

LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
declare -a RESULTS
failed=0
for r in "${RUNS[@]}"; do
	s=${r% *} provider=${r#* } name=$s
	[[ $provider == "$PROVIDER" ]] || name="$s ($provider)"
	echo "e2e: suite $name"
	start=$(date +%s%N)
	args=()
	[[ -n "${E2E_ARGS:-}" ]] && read -r -a args <<<"-args $E2E_ARGS"
	skip=()
	if [[ ${1:-} == ci && -n ${CI_SKIP[$s]:-} ]]; then
		skip=(-skip "${CI_SKIP[$s]}")
		echo "e2e: $s: skipping ${CI_SKIP[$s]} in CI (make e2e SUITE=$s runs it)"
	fi
	timeout=${E2E_TIMEOUT:-${SUITE_TIMEOUT[$s]:-20m}}
	if (cd "$ROOT/e2e" && E2E_PROVIDER=$provider GOWORK=off go test -tags e2e -count=1 -v -timeout "$timeout" "${skip[@]}" "./tests/$s/..." "${args[@]}") 2>&1 | tee "$LOG"; then
		result=ok
	else
		result=FAIL
		failed=1
		recap "$name" <"$LOG"
	fi
	ms=$((($(date +%s%N) - start) / 1000000))
	RESULTS+=("$(printf '%-20s %-7s %5d.%d s' "$name" "$result" $((ms / 1000)) $((ms % 1000 / 100)))")
done

if ((audit_check)); then
	echo "e2e: RBAC rules against the audit logs of the suites"
	start=$(date +%s%N)
	if (cd "$ROOT/e2e" && E2E_AUDIT_SINCE=$audit_since E2E_AUDIT_SUITES="${SUITES[*]}" \
		GOWORK=off go test -tags e2e -count=1 -v ./rbacaudit/); then
		result=ok
	else
		result=FAIL
		failed=1
	fi
	ms=$((($(date +%s%N) - start) / 1000000))
	RESULTS+=("$(printf '%-20s %-7s %5d.%d s' "rbac-audit" "$result" $((ms / 1000)) $((ms % 1000 / 100)))")
fi

echo
echo "e2e: suite                result  duration"
for r in "${RESULTS[@]}"; do echo "e2e: $r"; done
exit "$failed"
