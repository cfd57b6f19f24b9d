#!/bin/sh
# make demo: starts instrumented demo workers, shows them with loopstat,
# and stops everything it started on exit or Ctrl-C.
set -u
build=$1
pids=""
cleanup() {
	[ -n "$pids" ] && kill $pids 2>/dev/null
	wait 2>/dev/null
}
trap cleanup EXIT INT TERM

for busy in 20 60; do
	"$build/examples/counters" -b "$busy" -s 30 >/dev/null &
	pids="$pids $!"
done
sleep 1
echo "demo: two workers publishing counters (20% and 60% busy); Ctrl-C stops"
for round in 1 2 3 4 5; do
	echo
	"$build/loopstat" list
	sleep 2
done
