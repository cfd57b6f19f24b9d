#!/bin/sh
# diff's false alarms: PAIRS pairs of recordings of the same duty cycle
# (a plain epoll loop idle IDLE of each PERIOD_MS period), each run recorded
# for DURATION s at RATE Hz, PARALLEL pairs at a time (both runs of a pair
# side by side, so they share the machine's load), then `loopstat diff A B`.
# A false alarm is a pair whose idle_pct verdict is not "same": the 95%
# interval of the change leaves 0 although nothing changed.
#
#   diff_false_alarm_rate      pairs whose idle_pct is "worse" or "better" (goal <= 0.05)
#   diff_any_metric_alarm_rate pairs where any judged metric is (for comparison: a
#                              family of intervals, each at 95%, alarms more often)
#
#   BUILD=build PAIRS=40 PARALLEL=2 DURATION=4 RATE=200 IDLE=0.6 sh bench/diff.sh
set -eu
BUILD=${BUILD:-build}
PAIRS=${PAIRS:-40}
PARALLEL=${PARALLEL:-2}
DURATION=${DURATION:-4}
RATE=${RATE:-200}
IDLE=${IDLE:-0.6}
PERIOD_MS=${PERIOD_MS:-100}

ls_bin=$BUILD/loopstat
duty=$BUILD/examples/duty_cycle
for b in "$ls_bin" "$duty"; do
	[ -x "$b" ] || { echo "diff.sh: $b missing (make all)" >&2; exit 2; }
done
tmp=$(mktemp -d /tmp/bench-diff.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# one run: a worker, recorded for DURATION s once its loop runs
run() {
	"$duty" --idle "$IDLE" --period-ms "$PERIOD_MS" --plain --seconds $((DURATION + 3)) >/dev/null &
	w=$!
	sleep 0.3
	"$ls_bin" record -p "$w" -r "$RATE" --duration "$DURATION" -o "$1" 2>/dev/null || true
	kill "$w" 2>/dev/null || true
	wait "$w" 2>/dev/null || true
}

i=0
while [ "$i" -lt "$PAIRS" ]; do
	j=0
	while [ "$j" -lt "$PARALLEL" ] && [ $((i + j)) -lt "$PAIRS" ]; do
		n=$((i + j))
		run "$tmp/a$n.rec" &
		run "$tmp/b$n.rec" &
		j=$((j + 1))
	done
	wait
	i=$((i + j))
done

alarms=0 any=0 judged=0
i=0
while [ "$i" -lt "$PAIRS" ]; do
	"$ls_bin" diff "$tmp/a$i.rec" "$tmp/b$i.rec" >"$tmp/d$i.txt" 2>&1 || true
	# the worker's idle_pct row: metric before after change [lo, hi] verdict
	v=$(awk '/^worker /{w=1} /^service /{w=0} w && $1=="idle_pct"{print $NF; exit}' "$tmp/d$i.txt")
	echo "pair $i: idle_pct $(awk '/^worker /{w=1} /^service /{w=0} w && $1=="idle_pct"{print $2, "->", $3, $4, $5, $6; exit}' "$tmp/d$i.txt") $v"
	case "$v" in
	same) judged=$((judged + 1)) ;;
	worse|better) judged=$((judged + 1)); alarms=$((alarms + 1)) ;;
	*) echo "pair $i: no idle_pct verdict:"; cat "$tmp/d$i.txt" ;;
	esac
	if awk '/^worker /{w=1} /^service /{w=0} w && ($NF=="worse" || $NF=="better"){f=1} END{exit !f}' "$tmp/d$i.txt"; then
		any=$((any + 1))
	fi
	i=$((i + 1))
done
[ "$judged" -gt 0 ] || { echo "diff.sh: no pair was judged" >&2; exit 1; }
echo "pairs $PAIRS judged $judged, idle_pct alarms $alarms, pairs with any metric alarmed $any"
awk -v a="$alarms" -v n="$judged" 'BEGIN { printf "figure diff_false_alarm_rate %.3f\n", a / n }'
awk -v a="$any" -v n="$judged" 'BEGIN { printf "figure diff_any_metric_alarm_rate %.3f\n", a / n }'
