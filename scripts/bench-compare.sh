#!/usr/bin/env bash
# Runs the in-run ratio benchmarks of a base revision and of the work tree
# alternately, RUNS times each (default 6), and compares them with benchstat: a
# figure worse by more than 5 % at p < 0.05 fails the script, naming it.
#
#   scripts/bench-compare.sh BASE_REVISION            # e.g. origin/main, HEAD~3
#   BENCHES='./events Canonicalize 1s' RUNS=2 scripts/bench-compare.sh HEAD~1
#
# BENCHES is a list of "PACKAGE REGEXP BENCHTIME" lines. The base is built in a
# worktree of its own under TMPDIR; both sides run on this machine, in turns, so
# the machine's drift within the hour falls on both alike.
set -euo pipefail
base=${1:?usage: scripts/bench-compare.sh BASE_REVISION}
runs=${RUNS:-6}
benches=${BENCHES:-"./fsm EngineStep 1x
./fsm ApprovalRoundTrip|HistoryRead 200x
./adapters/stores/sqlite AppendVsRawInsert 20000x
./adapters/stores/sqlite Rebuild 1x
./httpapi HTTPTurn 300x"}
benchstat="go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da"

here=$(git rev-parse --show-toplevel)
work=$(mktemp -d "${TMPDIR:-/tmp}/turnlog-bench-compare.XXXXXX")
trap 'git -C "$here" worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$here" worktree add --detach "$work/base" "$base" >/dev/null
(cd "$work/base" && make helper >/dev/null 2>&1 || true)
(cd "$here" && make helper >/dev/null 2>&1 || true)

run() { # dir out
	local dir=$1 out=$2
	while read -r pkg pattern benchtime; do
		[ -z "$pkg" ] && continue
		# A base from before adapters/ was grouped by kind has the package one level up.
		[ -d "$dir/$pkg" ] || pkg=$(sed -E 's#^\./adapters/[a-z]+/#./adapters/#' <<<"$pkg")
		# Without its pkg: line, a benchmark compares with itself across a move.
		(cd "$dir" && go test -run '^$' -bench "$pattern" -benchtime "$benchtime" -p 1 -timeout 60m "$pkg") | grep -v '^pkg:' >>"$out"
	done <<<"$benches"
}
for i in $(seq "$runs"); do
	echo "run $i of $runs: base" >&2
	run "$work/base" "$work/base.txt"
	echo "run $i of $runs: work tree" >&2
	run "$here" "$work/new.txt"
done
$benchstat "$work/base.txt" "$work/new.txt" | tee "$work/stat.txt"

# Which way is worse: a rate (…/s) or a share of work done (…ratio with turns/s) is
# worse when it falls; times, sizes and ratios to a baseline are worse when they grow.
awk '
	/│/ && /vs base/ { unit = $0; next }
	/\(p=/ {
		match($0, /[+-][0-9.]+%/); if (RSTART == 0) next
		delta = substr($0, RSTART, RLENGTH); sub(/%/, "", delta); delta += 0
		match($0, /p=[0-9.]+/); p = substr($0, RSTART + 2, RLENGTH - 2) + 0
		higherBetter = (unit ~ /\/s/ || unit ~ /turns\/s-ratio/)
		worse = higherBetter ? -delta : delta
		if (p < 0.05 && worse > 5) { print "worse by " worse "% (p=" p "): " $1 " " unit; bad = 1 }
	}
	END { exit bad }
' "$work/stat.txt"
