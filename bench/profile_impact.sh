#!/bin/sh
# Profile impact: what `loopstat profile` at 1 kHz (its on-CPU perf
# sampling included) costs an echo worker, against the same worker without
# a profiler, with `strace -c -f -p` attached and, where linux-perf is
# installed, under `perf record -F 1000 --call-graph dwarf`, in one run.
#
# One echo_server (BACKEND, default libev) pinned to CPU 0 for the whole run; the load
# generator (examples/load, closed loop: CONNS connections x 64 B, one
# message in flight each) pinned to CPU 1. The profiler and strace are not
# pinned: they share the machine, as they would in production. Cases are
# interleaved (none, profile, strace) for ROUNDS rounds and each impact is
# the median of the per-round drops in messages/s against that round's
# run without a profiler.
#
#   profiler_impact_pct  messages/s lost while loopstat profile runs (goal <= 1)
#   strace_impact_pct    messages/s lost under strace -c -f (for comparison)
#   perf_record_impact_pct  messages/s lost under perf record -F 1000 --call-graph dwarf
#                        (for comparison; goal: profiler_impact_pct at or below it)
#   profiler_cpu_pct     the profiler's own CPU (utime + stime) over its wall time (goal <= 5)
#
#   BUILD=build ROUNDS=5 DURATION=2 CONNS=50 BACKEND=libev sh bench/profile_impact.sh
set -eu
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-2}
CONNS=${CONNS:-50}
RATE=${RATE:-1000}
BACKEND=${BACKEND:-libev}   # libev: one syscall per read/write, the epoll worker strace is usually pointed at

load=$BUILD/examples/load
srv=$BUILD/examples/echo_server
ls_bin=$BUILD/loopstat
for b in "$load" "$srv" "$ls_bin"; do
	[ -x "$b" ] || { echo "profile_impact.sh: $b missing (make all)" >&2; exit 2; }
done
for c in taskset strace; do
	command -v $c >/dev/null || { echo "profile_impact.sh: $c missing" >&2; exit 2; }
done

. "$(dirname "$0")/lib_common.sh"
bench_tmp profile-impact

LOOPSTAT_SHM_DIR=$tmp FL_BACKEND=$BACKEND taskset -c 0 "$srv" --port 0 >"$tmp/srv.out" 2>"$tmp/srv.err" &
spid=$!
pids="$pids $spid"
port=""
i=0
while [ -z "$port" ] && [ $i -lt 100 ]; do
	port=$(awk '/^port /{ print $2; exit }' "$tmp/srv.out" 2>/dev/null || true)
	[ -n "$port" ] || sleep 0.05
	i=$((i + 1))
done
[ -n "$port" ] || { echo "profile_impact.sh: echo_server did not start" >&2; cat "$tmp/srv.err" >&2; exit 1; }

pressure() { awk '/^some/{ print $2 }' /proc/pressure/cpu 2>/dev/null || echo "avg10=?"; }
echo "# profile_impact: $(nproc) CPUs, kernel $(uname -r), load avg $(cut -d' ' -f1-3 /proc/loadavg), cpu pressure $(pressure)"
echo "# echo_server ($BACKEND) pid $spid on CPU 0, load on CPU 1 ($CONNS conns x 64 B closed loop), $ROUNDS rounds x ${DURATION}s, profiler at $RATE Hz"
tck=$(getconf CLK_TCK)

run_load() {
	FL_BACKEND=io_uring LOOPSTAT_SHM_DIR=$tmp taskset -c 1 "$load" --port "$port" --connections "$CONNS" \
		--size 64 --rate 0 --duration "$DURATION" >"$tmp/load.out" ||
		{ echo "profile_impact.sh: load failed:" >&2; cat "$tmp/load.out" >&2; exit 1; }
	awk '/^messages_per_sec /{ print $2 }' "$tmp/load.out"
}

raw=$tmp/raw
: >"$raw"
pdur=$(awk -v d="$DURATION" 'BEGIN { print d + 0.6 }')
for r in $(seq 1 "$ROUNDS"); do
	none=$(run_load)

	# the profiler: its CPU is read from the wrapper shell's cutime + cstime once it exited
	LOOPSTAT_SHM_DIR=$tmp sh -c '"$@" >/dev/null 2>&1; awk "{ print \$16 + \$17 }" /proc/$$/stat' sh \
		"$ls_bin" profile -p "$spid" --rate "$RATE" --duration "$pdur" -o /dev/null >"$tmp/prof.ticks" &
	ppid=$!
	sleep 0.3
	prof=$(run_load)
	wait "$ppid"
	pticks=$(cat "$tmp/prof.ticks")

	strace -c -f -p "$spid" -o "$tmp/strace.out" 2>/dev/null &
	stpid=$!
	sleep 0.3
	st=$(run_load)
	kill -INT "$stpid" 2>/dev/null || true
	wait "$stpid" 2>/dev/null || true

	pr=0
	if command -v perf >/dev/null; then
		perf record -q -F "$RATE" --call-graph dwarf -p "$spid" -o "$tmp/perf.data" -- sleep "$pdur" \
			>/dev/null 2>&1 &
		prpid=$!
		sleep 0.3
		pr=$(run_load)
		wait "$prpid" 2>/dev/null || true
		rm -f "$tmp/perf.data"
	fi

	awk -v r="$r" -v n="$none" -v p="$prof" -v s="$st" -v t="$pticks" -v tck="$tck" -v d="$pdur" -v pr="$pr" 'BEGIN {
		printf "raw round %d none_msgs_per_sec %d profiled %d straced %d profiler_cpu_pct %.2f perf_recorded %d\n",
			r, n, p, s, 100 * t / tck / d, pr
	}' | tee -a "$raw"
done

awk '
function median(name,    n, i, j, t, a) {
	n = cnt[name]
	for (i = 1; i <= n; i++) a[i] = val[name, i]
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function add(name, v) { val[name, ++cnt[name]] = v }
$5 > 0 {
	add("p", 100 * (1 - $7 / $5)); add("s", 100 * (1 - $9 / $5)); add("c", $11)
	add("none", $5); add("prof", $7); add("st", $9)
	if ($13 > 0) { add("r", 100 * (1 - $13 / $5)); add("pr", $13) }
}
END {
	printf "median msgs/s none %d profiled %d straced %d\n", median("none"), median("prof"), median("st")
	printf "figure profiler_impact_pct %.2f %%\n", median("p")
	printf "figure strace_impact_pct %.2f %%\n", median("s")
	printf "figure profiler_cpu_pct %.2f %%\n", median("c")
	if (cnt["r"]) {
		printf "median msgs/s perf recorded %d\n", median("pr")
		printf "figure perf_record_impact_pct %.2f %%\n", median("r")
	}
}' "$raw"
echo "# load avg after: $(cut -d' ' -f1-3 /proc/loadavg), cpu pressure $(pressure)"
