#!/bin/sh
# idle-prio.sh: the prefix `make test` runs its background compile under.
# SCHED_IDLE (chrt -i 0) as a rule: the suites' workers then never wait
# for a CPU behind it. But beside niced CPU work (the `nice -n 19` hogs a
# loaded host is tried with, a batch job) an idle-class compile gets no
# CPU at all until the suites are over, and make test waits minutes for
# it, while the hogs already cost the suites what a nice-19 compile
# would. So: a half-second look at /proc/stat's nice column, and nice 19
# when niced work kept more than half a CPU busy. Work at nice 0 (a
# package install's triggers) leaves the choice alone.
nice_pct() {
	# niced and total jiffies of all CPUs, twice, 0.5 s apart
	a=$(awk '/^cpu /{ print $3, $2+$3+$4+$5+$6+$7+$8+$9 }' /proc/stat)
	sleep 0.5
	b=$(awk '/^cpu /{ print $3, $2+$3+$4+$5+$6+$7+$8+$9 }' /proc/stat)
	echo "$a $b" | awk '{ dt = $4 - $2; print (dt > 0 ? int(100 * ($3 - $1) / dt) : 0) }'
}
command -v chrt >/dev/null 2>&1 || { echo nice -n 19; exit 0; }
cpus=$(nproc 2>/dev/null || echo 1)
# half a CPU, as a share of all of them
if [ "$(nice_pct)" -gt $((50 / cpus)) ]; then
	echo nice -n 19
else
	echo chrt -i 0
fi
