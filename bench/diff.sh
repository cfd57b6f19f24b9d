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
#   diff_false_alarm_rate_apart the same for runs recorded at different times (a run
#                              against the next batch's), as a CI baseline and a new run are
#   diff_run_sd_side, diff_run_sd_apart  the run-to-run standard deviation of idle_pct
#                              beyond each run's own interval (the term diff adds, points)
#
#   BUILD=build PAIRS=40 PARALLEL=2 DURATION=4 RATE=200 IDLE=0.6 sh bench/diff.sh
#   RUN_SD=PTS: diff --run-sd PTS (default: diff's own, 1 point a run)
set -eu
BUILD=${BUILD:-build}
PAIRS=${PAIRS:-40}
PARALLEL=${PARALLEL:-2}
DURATION=${DURATION:-4}
RATE=${RATE:-200}
IDLE=${IDLE:-0.6}
PERIOD_MS=${PERIOD_MS:-100}
RUN_SD=${RUN_SD:-}

ls_bin=$BUILD/loopstat
duty=$BUILD/examples/duty_cycle
command -v jq >/dev/null || { echo "diff.sh: jq missing (scripts/deps.sh)" >&2; exit 2; }
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

# one pair's worker idle_pct row: "a a_se b b_se change lo hi verdict", and
# whether any metric of the worker alarmed (1/0)
judge() {
	"$ls_bin" diff --json ${RUN_SD:+--run-sd "$RUN_SD"} "$1" "$2" 2>/dev/null | jq -r '
		[.units[] | select(.kind == "worker")][0].metrics as $m
		| ($m[] | select(.metric == "idle_pct")) as $r
		| [$r.a.value, $r.a.se, $r.b.value, $r.b.se, $r.change.value, $r.change.lo, $r.change.hi, $r.verdict,
		   ([$m[] | select(.verdict == "worse" or .verdict == "better")] | length | if . > 0 then 1 else 0 end)]
		| map(tostring) | join(" ")' 2>/dev/null || true
}

# side by side: a_i against b_i; apart: a_i against a_(i+PARALLEL), runs
# recorded at different times, as a CI baseline and its new run are
: >"$tmp/side" >"$tmp/apart"
i=0
while [ "$i" -lt "$PAIRS" ]; do
	row=$(judge "$tmp/a$i.rec" "$tmp/b$i.rec")
	echo "pair $i: idle_pct ${row:-no verdict}"
	[ -n "$row" ] && echo "$row" >>"$tmp/side"
	k=$((i + PARALLEL))
	if [ "$k" -lt "$PAIRS" ]; then
		row=$(judge "$tmp/a$i.rec" "$tmp/a$k.rec")
		[ -n "$row" ] && echo "$row" >>"$tmp/apart"
	fi
	i=$((i + 1))
done
[ -s "$tmp/side" ] || { echo "diff.sh: no pair was judged" >&2; exit 1; }

# false alarms, and the run-to-run spread the pairs show (ISO 5725's
# reproducibility, from differences of identical runs whose true change is
# 0): sigma_R^2 = (mean d^2 - mean(se_a^2 + se_b^2)) / 2
summary() {
	awk -v what="$1" '
		$8 == "same" || $8 == "worse" || $8 == "better" {
			n++; if ($8 != "same") a++; any += $9
			d2 += $5 * $5; w += $2 * $2 + $4 * $4
		}
		END {
			if (!n) exit
			r2 = (d2 / n - w / n) / 2
			sd = r2 > 0 ? sqrt(r2) : 0   # (awk reads > in printf arguments as a redirection)
			printf "%s: %d pairs judged, idle_pct alarms %d, any metric %d; rms change %.2f, rms within-run se %.2f, run sd %.2f points\n", \
				what, n, a, any, sqrt(d2 / n), sqrt(w / (2 * n)), sd
			printf "figure %s %.3f\n", what == "side" ? "diff_false_alarm_rate" : "diff_false_alarm_rate_apart", a / n
			if (what == "side")
				printf "figure diff_any_metric_alarm_rate %.3f\n", any / n
			printf "figure %s %.2f points\n", what == "side" ? "diff_run_sd_side" : "diff_run_sd_apart", sd
		}' "$tmp/$1"
}
summary side
summary apart
