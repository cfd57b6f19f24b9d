#!/bin/sh
# idle-prio.sh: the prefix `make test` runs its background compile under.
# SCHED_IDLE (chrt -i 0) as a rule: the suites' workers then never wait
# for a CPU behind it. But beside niced CPU work (the `nice -n 19` hogs a
# loaded host is tried with, a batch job) an idle-class compile gets no
# CPU at all until the suites are over, and make test waits minutes for
# it (884 s beside two hogs, against ~730 quiet); at nice 19 it only
# shares the spare CPU with them (the sanitizer build ended at 434 s
# against 256). At nice 10 (CFS weight 110 against their 15 each) it
# takes most of it, and still yields to the suites' nice-0 workers, which
# already wait behind the hogs. So: a half-second look at /proc/stat's
# nice column, and nice 10 when niced work kept more than half a CPU busy.
# Work at nice 0 (a package install's triggers) leaves the choice alone.
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
	echo nice -n 10
else
	echo chrt -i 0
fi
