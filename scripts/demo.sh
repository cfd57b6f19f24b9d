#!/bin/sh
# make demo: instrumented echo workers on both backends under a load that
# varies over time, a fiber worker with a swinging duty cycle, and one
# uninstrumented worker blocked in a synchronous read part of the time;
# then the dashboard on all of them. Quitting it stops everything started.
set -u
build=$1
pids=""
loaders=""
cleanup() {
	trap - EXIT INT TERM
	[ -n "$loaders" ] && kill $loaders 2>/dev/null
	[ -n "$pids" ] && kill $pids 2>/dev/null
	wait 2>/dev/null
}
trap cleanup EXIT INT TERM

# Sets $pid and $port (not in a subshell: $pids must keep the pid).
start_echo() { # backend
	out=$(mktemp)
	FL_BACKEND=$1 "$build/examples/echo_server" --port 0 >"$out" 2>&1 &
	pid=$!
	pids="$pids $pid"
	port=""
	for _ in $(seq 50); do
		port=$(sed -n 's/^port \([0-9]*\).*/\1/p' "$out")
		[ -n "$port" ] && break
		sleep 0.1
	done
	rm -f "$out"
	[ -n "$port" ] || { echo "demo: echo_server ($1) did not start" >&2; exit 1; }
}

# A load whose rate steps through a cycle, so idle% moves on the screen.
# Runs in a subshell; on TERM it takes its current load generator along.
vary_load() { # port, base rate
	child=""
	trap '[ -n "$child" ] && kill $child 2>/dev/null; exit 0' TERM
	while :; do
		for mult in 1 4 10 2 0; do
			if [ "$mult" -eq 0 ]; then
				sleep 4 & child=$!
			else
				"$build/examples/load" --port "$1" --connections 50 --size 64 \
					--rate $(($2 * mult)) --duration 4 >/dev/null 2>&1 & child=$!
			fi
			wait $child
		done
	done
}

start_echo io_uring; uring_pid=$pid; uring_port=$port
start_echo "${DEMO_EV_BACKEND:-libev}"; ev_pid=$pid; ev_port=$port
vary_load "$uring_port" 2000 & loaders="$loaders $!"
vary_load "$ev_port" 1500 & loaders="$loaders $!"
"$build/examples/duty_cycle" --idle 0.3 --wave 20 >/dev/null & pids="$pids $!"; duty_pid=$!
"$build/examples/duty_cycle" --plain --idle 0.4 --block 0.35 >/dev/null & pids="$pids $!"; block_pid=$!

targets="$uring_pid,$ev_pid,$duty_pid,$block_pid"
echo "demo: echo servers $uring_pid (io_uring) and $ev_pid (libev) under varying load,"
echo "      duty_cycle $duty_pid (fibers, swinging load), duty_cycle $block_pid (plain epoll, blocked in read)"
sleep 1
if [ -t 1 ]; then
	"$build/loopstat" top -p "$targets"
else
	"$build/loopstat" list -p "$targets" --duration 5
fi
