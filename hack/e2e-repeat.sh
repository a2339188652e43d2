#!/usr/bin/env bash
# Runs one e2e suite N times in a row and reports every run: a flaky feature shows up
# here with its recap, where one green run would hide it.
#
#   hack/e2e-repeat.sh SUITE N
#
# E2E_REPEAT_LOAD=cpu keeps every core busy beside the runs (stress-ng, one CPU worker
# per core at the lowest priority the kernel gives a normal process, so the operator and
# the servers compete with it as on a crowded node). E2E_SLOW_API=bloat (see
# e2e/framework/slowapi.go) gives the cluster under test a large etcd first.
# E2E_PROVIDER chooses the cluster as for hack/e2e.sh. Each run's output is kept in
# .cache/e2e-repeat/<suite>-<time>/run-<i>.log; the table at the end lists each run's
# result and duration, then the failed features with their recap lines.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
suite=${1:?usage: hack/e2e-repeat.sh SUITE N}
n=${2:?usage: hack/e2e-repeat.sh SUITE N}
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "e2e-repeat: N must be a positive number, not $n" >&2; exit 2; }
load=${E2E_REPEAT_LOAD:-none}
case $load in
none | cpu) ;;
*) echo "e2e-repeat: E2E_REPEAT_LOAD=$load: want cpu or none" >&2; exit 2 ;;
esac

out="$ROOT/.cache/e2e-repeat/$suite-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
stress=
stop_stress() { [[ -n $stress ]] && kill "$stress" 2>/dev/null; stress=; }
trap stop_stress EXIT

echo "e2e-repeat: $suite x $n on ${E2E_PROVIDER:-local}, load $load, API ${E2E_SLOW_API:-as it is}; logs in $out"
declare -a rows
failures=0
for i in $(seq 1 "$n"); do
	if [[ $load == cpu ]]; then
		nice -n 19 stress-ng --cpu "$(nproc)" --quiet &
		stress=$!
	fi
	start=$(date +%s)
	log="$out/run-$i.log"
	if "$ROOT/hack/e2e.sh" "$suite" >"$log" 2>&1; then
		result=ok
	else
		result=FAIL
		failures=$((failures + 1))
	fi
	stop_stress
	took=$(($(date +%s) - start))
	failed=$(grep -E '^--- FAIL: ' "$log" | awk '{print $3}' | sort -u | xargs || true)
	rows+=("$(printf '%3d  %-4s %5d s  %s' "$i" "$result" "$took" "$failed")")
	echo "e2e-repeat: run $i of $n: $result after $took s${failed:+ ($failed)}"
done

echo
echo "e2e-repeat: run result duration failed features"
for r in "${rows[@]}"; do echo "e2e-repeat: $r"; done
for i in $(seq 1 "$n"); do
	log="$out/run-$i.log"
	grep -q '^e2e: | ' "$log" || continue
	echo
	echo "e2e-repeat: run $i, the recap of its failed features ($log):"
	grep -E '^e2e: (\||.*the last [0-9]+ lines)' "$log" || true
done
echo "e2e-repeat: $suite: $failures of $n runs failed"
((failures == 0))
