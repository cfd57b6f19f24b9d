#!/bin/sh
# stats_overhead — cost of the live counters: the switch benchmark and the
# echo server built with the stats writer (build/) and with it compiled out
# (-DFL_NO_STATS, build/nostats/), run interleaved A B B A A B ... for ROUNDS
# rounds, both pinned to the same CPU; each run reports the minimum of its
# 7 in-process repetitions (filters out interruptions by other processes)
# and stats_overhead_pct is the median of the per-round overheads. The echo
# rounds (50 connections x 64 B through examples/load, 2 s each, servers
# alternating) give stats_overhead_echo_pct, the median of their per-round
# overheads; that path is dominated by TCP syscalls, so single rounds
# vary by +-10-25% on this machine.
set -eu
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-21}
# both variants on the same CPU: the two cores of this machine differ in load
PIN="taskset -c ${CPU:-1}"
NOSTATS=$BUILD/nostats
make --no-print-directory -s BUILD="$BUILD" benches examples >/dev/null
make --no-print-directory -s BUILD="$NOSTATS" EXTRA_CFLAGS=-DFL_NO_STATS benches examples >/dev/null

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

ov=$(mktemp); trap 'rm -f "$ov"' EXIT
i=0
while [ $i -lt "$ROUNDS" ]; do
	# alternate which variant goes first: no bias from the order
	if [ $((i % 2)) -eq 0 ]; then
		on=$(SWITCH_ITERS=500000 $PIN "$BUILD/bench/switch" --fl-only | awk '/^switch_ns_min/{print $2}')
		off=$(SWITCH_ITERS=500000 $PIN "$NOSTATS/bench/switch" --fl-only | awk '/^switch_ns_min/{print $2}')
	else
		off=$(SWITCH_ITERS=500000 $PIN "$NOSTATS/bench/switch" --fl-only | awk '/^switch_ns_min/{print $2}')
		on=$(SWITCH_ITERS=500000 $PIN "$BUILD/bench/switch" --fl-only | awk '/^switch_ns_min/{print $2}')
	fi
	pct=$(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.2f", (a - b) / b * 100}')
	echo "round $i: switch_ns stats=$on nostats=$off overhead=$pct%"
	echo "$pct" >>"$ov"
	i=$((i + 1))
done

# echo: one server per variant, 50 connections x 64 B, closed loop
echo_rate() {
	srv=$1
	out=$(mktemp)
	"$srv" --port 0 >"$out" 2>/dev/null &
	pid=$!
	while ! grep -q '^port' "$out"; do sleep 0.05; done
	port=$(awk '/^port/{print $2}' "$out")
	"$BUILD/examples/load" --port "$port" --connections 50 --size 64 --duration 2 |
		awk '/^messages_per_sec/{print $2}'
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null || true
	rm -f "$out"
}
eo=$(mktemp); trap 'rm -f "$ov" "$eo"' EXIT
i=0
while [ $i -lt "${ECHO_ROUNDS:-6}" ]; do
	if [ $((i % 2)) -eq 0 ]; then
		a=$(echo_rate "$BUILD/examples/echo_server")
		b=$(echo_rate "$NOSTATS/examples/echo_server")
	else
		b=$(echo_rate "$NOSTATS/examples/echo_server")
		a=$(echo_rate "$BUILD/examples/echo_server")
	fi
	# overhead = how much slower the instrumented server is
	pct=$(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.2f", (b / a - 1) * 100}')
	echo "echo round $i: msgs/s stats=$a nostats=$b overhead=$pct%"
	echo "$pct" >>"$eo"
	i=$((i + 1))
done

echo "figure stats_overhead_pct $(median <"$ov") %"
echo "figure stats_overhead_echo_pct $(median <"$eo") %"
