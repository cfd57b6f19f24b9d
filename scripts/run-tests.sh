#!/bin/sh
# Runs every Criterion suite given, each bounded in time, and keeps going
# after a failure so one run shows them all. Prints Criterion's synthesis
# line per suite and a closing "N passed, N failed" line; exits non-zero if
# any suite failed or crashed.
set -u
build=$1; shift
passed=0; failed=0; bad_suites=""
# Fibers switch stacks by hand: ASan must not treat that as stack misuse,
# and leaks in forked test workers are still reported.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_stack_use_after_return=0:abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
label=$(basename "$build")

for t in "$@"; do
	name=$(basename "$t")
	out=$(mktemp)
	export LOOPSTAT_BIN="$build/loopstat"
	# 300 s bounds a suite; each test also sets its own .timeout.
	t0=$(date +%s)
	timeout -k 10 300 "$t" --jobs 2 >"$out" 2>&1
	rc=$?
	# Criterion's verdicts, plus what the sanitizers say (their reports
	# otherwise hide behind a bare [FAIL])
	grep -v '^\[----\].*Criterion' "$out" |
		grep -E '^\[(FAIL|----|====)\]|runtime error:|ERROR: (Address|Leak)Sanitizer|^SUMMARY:' || true
	echo "[time] $label/$name $(($(date +%s) - t0)) s"
	syn=$(grep 'Synthesis:' "$out" | tail -n 1)
	p=$(echo "$syn" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
	f=$(echo "$syn" | sed -n 's/.*Failing: \([0-9]*\).*Crashing: \([0-9]*\).*/\1 \2/p')
	p=${p:-0}
	nf=0; for x in $f; do nf=$((nf + x)); done
	if [ "$rc" -ne 0 ] || [ -z "$syn" ]; then
		[ "$nf" -eq 0 ] && nf=1
		bad_suites="$bad_suites $name"
		[ -z "$syn" ] && { echo "[FAIL] $label/$name: exited $rc without a synthesis:"; tail -n 30 "$out"; }
	fi
	passed=$((passed + p)); failed=$((failed + nf))
	rm -f "$out"
done

echo "[$label] suites failing:${bad_suites:- none}"
echo "$passed $failed" > "$build/.test-tally${TALLY:+.$TALLY}"
echo "tests: $passed passed, $failed failed"
[ -z "$bad_suites" ]
