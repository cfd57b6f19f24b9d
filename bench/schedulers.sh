#!/bin/sh
# The pooled runtimes' truth (issue 37), at full length: real Go servers
# with and without symbols at 30, 70 and 95 % busy, a tokio server, Netty's
# event loops and a ForkJoinPool, each read by `loopstat list` against the
# program's own clock (its CPU time over its capacity, tokio's
# worker_total_busy_duration), plus an idle prometheus. This is
# tests/test_schedulers run alone (make test runs its short versions,
# test_probe_rt and test_sched_rows); its judged cases are printed as
#
#   sched_idle_err_pp_CASE   |loopstat's idle - the program's own|, points (goal <= 5)
#   sched_idle_err_pp_max    the largest of them
#
# A case the suite could not judge (the server waited for a CPU) prints no
# figure, and says so. Exits non-zero when the suite failed.
#
#   BUILD=build sh bench/schedulers.sh
set -eu
BUILD=${BUILD:-build}
make -s --no-print-directory BUILD="$BUILD" "$BUILD/tests/test_schedulers" programs
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
LOOPSTAT_BIN="$BUILD/loopstat" LOOPSTAT_DISCOVER=instrumented LOOPSTAT_SOURCE="${LOOPSTAT_SOURCE:-proc}" \
	LOOPSTAT_TRUTH=full timeout -k 10 600 "$BUILD/tests/test_schedulers" --jobs 1 --verbose >"$out" 2>&1 || rc=$?
grep -E '^\[(FAIL|====)\]|busy: the server waited' "$out" || true
n=$(grep -c ' truth [a-z_0-9-]* idle ' "$out" || true)
if [ "$n" -eq 0 ]; then
	echo "schedulers: no case was judged (see above); no figure" >&2
	exit 1
fi
grep ' truth [a-z_0-9-]* idle ' "$out" | sed 's/.* truth //' | awk '
	{ e = $3 - $5; if (e < 0) e = -e; printf "  %-22s idle %6.2f  own %6.2f\n", $1, $3, $5
	  gsub(/-/, "_", $1); printf "figure sched_idle_err_pp_%s %.2f pp\n", $1, e; if (e > max) max = e }
	END { printf "figure sched_idle_err_pp_max %.2f pp\n", max }'
exit $rc
