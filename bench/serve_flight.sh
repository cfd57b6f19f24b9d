#!/bin/sh
# What serve's flight recorder (--flight-recorder, a 120-s ring) costs
# serve itself: its CPU (utime + stime over wall time) and its RSS beside
# LOOPS plain duty-cycle loops sampled at RATE Hz, against serve alone in
# the same run. Cases are interleaved (plain, flight) for ROUNDS rounds of
# DURATION seconds; the figures are the medians (the ratio's: of each
# round's, so that a load that drifts between rounds cancels).
#
#   serve_cpu_pct              serve alone
#   serve_flight_cpu_pct       serve --flight-recorder (each sample unwound into the ring)
#   serve_flight_cpu_ratio     the two, flight over plain in the same round
#   serve_flight_rss_mb        its RSS at the end (the ring as far as it filled; its bound is 256 MB)
#
#   BUILD=build ROUNDS=3 DURATION=20 LOOPS=4 RATE=100 sh bench/serve_flight.sh
set -eu
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-20}
LOOPS=${LOOPS:-4}
RATE=${RATE:-100}
ls_bin=$BUILD/loopstat
duty=$BUILD/examples/duty_cycle
for b in "$ls_bin" "$duty"; do
	[ -x "$b" ] || { echo "serve_flight.sh: $b missing (make all)" >&2; exit 2; }
done
. "$(dirname "$0")/lib_common.sh"
bench_tmp serve-flight
targets=""
i=0
while [ $i -lt "$LOOPS" ]; do
	"$duty" --idle 0.7 --seconds 100000 --plain >/dev/null 2>&1 &
	pids="$pids $!"
	targets="$targets,$!"
	i=$((i + 1))
done
targets=${targets#,}
sleep 1
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
# one case: serve's CPU % over DURATION (after 2 s of start) and its RSS in MB
run() {
	LOOPSTAT_SOURCE=proc "$ls_bin" serve --listen 127.0.0.1:0 -p "$targets" -r "$RATE" "$@" \
		>/dev/null 2>"$tmp/serve.err" &
	s=$!
	sleep 2
	a=$(ticks $s)
	sleep "$DURATION"
	b=$(ticks $s)
	rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$s/status")
	kill -TERM $s
	wait $s || { echo "serve_flight.sh: serve failed" >&2; cat "$tmp/serve.err" >&2; exit 1; }
	echo "$a $b $rss" | awk -v hz="$hz" -v d="$DURATION" '{ printf "%.3f %.1f\n", 100 * ($2 - $1) / hz / d, $3 / 1024 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
r=1
while [ $r -le "$ROUNDS" ]; do
	mkdir -p "$tmp/rec"
	set -- $(run)
	echo "round $r plain: serve cpu $1 % rss $2 MB"
	echo "$1" >>"$tmp/plain"
	p=$1
	set -- $(run --flight-recorder "$tmp/rec" --ring 120s --trigger 'lag_max_ms>5000')
	echo "round $r flight: serve cpu $1 % rss $2 MB"
	echo "$1" >>"$tmp/flight"
	echo "$2" >>"$tmp/rss"
	awk -v a="$1" -v b="$p" 'BEGIN { print (b > 0 ? a / b : 0) }' >>"$tmp/ratio"
	r=$((r + 1))
done
plain=$(median <"$tmp/plain")
flight=$(median <"$tmp/flight")
rss=$(median <"$tmp/rss")
echo "figure serve_cpu_pct $plain %"
echo "figure serve_flight_cpu_pct $flight %"
printf "figure serve_flight_cpu_ratio %.2f x\n" "$(median <"$tmp/ratio")"
echo "figure serve_flight_rss_mb $rss MB"
