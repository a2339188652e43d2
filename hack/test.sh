#!/usr/bin/env bash
# `make test`: the steps CI runs, in order, each timed; stops at the first that fails and
# prints the durations so far either way.
set -uo pipefail
cd "$(dirname "$0")/.." || exit
steps=(deps verify-generate vet lint unit e2e-ci)
declare -a done_steps
report() {
	echo
	echo "make test: step             duration"
	for d in "${done_steps[@]}"; do echo "make test: $d"; done
}
for s in "${steps[@]}"; do
	start=$(date +%s)
	make --no-print-directory "$s"
	rc=$?
	result=ok
	[[ $rc -eq 0 ]] || result=FAIL
	done_steps+=("$(printf '%-18s %-4s %5d s' "$s" "$result" $(($(date +%s) - start)))")
	if [[ $rc -ne 0 ]]; then
		report
		exit "$rc"
	fi
done
report
