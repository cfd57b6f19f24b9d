#!/bin/sh
# Runs every Criterion suite given, each bounded in time, and keeps going
# after a failure so one run shows them all. Prints Criterion's synthesis
# line per suite and a closing "N passed, N failed" line; exits non-zero if
# any suite failed or crashed.
#
# Suites named in $SOLO (space-separated names, e.g. "test_sampler") measure
# timing or shares of CPU: each runs alone. The others run $PAR at a time
# (default 2): most of their time is spent waiting on the children they
# sample, and they assert nothing about how fast anything ran.
#
# Suites named in $UNIT run in this process alone (no child, no thread,
# no timing): they run beside anything, as $PAR at a time too.
#
# With ONLY=CLASS[+CLASS...] (solo, par, unit), only those of the suites
# given run (and are tallied): make test runs each build's classes apart.
#
#   run-tests.sh BUILD SUITE...     run them, print, tally
#   run-tests.sh --one BUILD SUITE  (internal) run one suite into BUILD/.suites/
set -u

# Fibers switch stacks by hand: ASan must not treat that as stack misuse,
# and leaks in forked test workers are still reported.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_stack_use_after_return=0:abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# The suites measure workers of their own among whatever else runs here:
# loopstat's default sweep of the host would list every loop on it (the
# tmux server, other suites' children). test_discover tests that default.
export LOOPSTAT_DISCOVER="${LOOPSTAT_DISCOVER:-instrumented}"
# The suites judge the sampler unless they say --source (test_bpf* do):
# auto, the default, would load the kernel's programs in each root run.
export LOOPSTAT_SOURCE="${LOOPSTAT_SOURCE:-proc}"

if [ "${1:-}" = "--one" ]; then
	build=$2 t=$3
	name=$(basename "$t")
	dir="$build/.suites"
	export LOOPSTAT_BIN="$build/loopstat"
	t0=$(date +%s)
	# 300 s bounds a suite; each test also sets its own .timeout.
	timeout -k 10 300 "$t" --jobs 2 >"$dir/$name.out" 2>&1
	echo $? >"$dir/$name.rc"
	echo $(($(date +%s) - t0)) >"$dir/$name.time"
	exit 0
fi

build=$1; shift
label=$(basename "$build")
dir="$build/.suites"
mkdir -p "$dir"
solo=""; par=""; all=""
for t in "$@"; do
	n=$(basename "$t")
	case " ${SOLO:-} " in
	*" $n "*) class=solo ;;
	*) case " ${UNIT:-} " in *" $n "*) class=unit ;; *) class=par ;; esac ;;
	esac
	case "+${ONLY:-solo+par+unit}+" in *"+$class+"*) ;; *) continue ;; esac
	if [ $class = solo ]; then solo="$solo $t"; else par="$par $t"; fi
	rm -f "$dir/$(basename "$t")".*
	all="$all $t"
done
set -- $all

# the longest first (by the last run's times, else tests/suite-times, as a
# fresh clone has no run; unknown ones count as long), so that no long
# suite starts last and runs alone
times=$(dirname "$0")/../tests/suite-times
# The sanitizer build's suites are slowed unevenly (test_cli 9 -> 42 s):
# where it has no run of its own, its lines in that file ("asan/NAME")
# come before the plain build's times.
case "$label" in asan) key=asan/ ;; *) key= ;; esac
par=$(for t in $par; do
	n=$(basename "$t")
	tm=$(cat "$dir/.last/$n.time" 2>/dev/null | head -n 1)
	[ -n "$tm" ] || [ -z "$key" ] || tm=$(sed -n "s|^$key$n \([0-9]*\)$|\1|p" "$times" 2>/dev/null)
	[ -n "$tm" ] || tm=$(cat "$build/../.suites/.last/$n.time" 2>/dev/null | head -n 1)
	[ -n "$tm" ] || tm=$(sed -n "s/^$n \([0-9]*\)$/\1/p" "$times" 2>/dev/null)
	echo "${tm:-999} $t"
done | sort -rn | cut -d' ' -f2)

t_start=$(date +%s)
[ -n "$par" ] && printf '%s\n' $par | xargs -P "${PAR:-2}" -I{} sh "$0" --one "$build" {}
# SOLO_PAR=2: two at a time (make test's sanitizer solo suites, on an
# otherwise idle machine: they are alone there only to keep clear of the
# parallel ones' children)
[ -n "$solo" ] && printf '%s\n' $solo | xargs -P "${SOLO_PAR:-1}" -I{} sh "$0" --one "$build" {}

passed=0; failed=0; bad_suites=""
for t in "$@"; do
	name=$(basename "$t")
	out="$dir/$name.out"
	rc=$(cat "$dir/$name.rc" 2>/dev/null || echo 125)
	# Criterion's verdicts, plus what the sanitizers say (their reports
	# otherwise hide behind a bare [FAIL])
	grep -v '^\[----\].*Criterion' "$out" 2>/dev/null |
		grep -E '^\[(FAIL|----|====)\]|runtime error:|ERROR: (Address|Leak)Sanitizer|^SUMMARY:' || true
	echo "[time] $label/$name $(cat "$dir/$name.time" 2>/dev/null || echo '?') s"
	syn=$(grep 'Synthesis:' "$out" 2>/dev/null | tail -n 1)
	p=$(echo "$syn" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
	f=$(echo "$syn" | sed -n 's/.*Failing: \([0-9]*\).*Crashing: \([0-9]*\).*/\1 \2/p')
	p=${p:-0}
	nf=0; for x in $f; do nf=$((nf + x)); done
	if [ "$rc" -ne 0 ] || [ -z "$syn" ]; then
		[ "$nf" -eq 0 ] && nf=1
		bad_suites="$bad_suites $name"
		[ -z "$syn" ] && { echo "[FAIL] $label/$name: exited $rc without a synthesis:"; tail -n 30 "$out" 2>/dev/null; }
	fi
	passed=$((passed + p)); failed=$((failed + nf))
done

mkdir -p "$dir/.last"
for t in "$@"; do cp "$dir/$(basename "$t").time" "$dir/.last/" 2>/dev/null; done
echo "[$label${ONLY:+ $ONLY}] $# suites in $(($(date +%s) - t_start)) s; suites failing:${bad_suites:- none}"
echo "$passed $failed" > "$build/.test-tally${TALLY:+.$TALLY}"
echo "tests: $passed passed, $failed failed"
[ -z "$bad_suites" ]
