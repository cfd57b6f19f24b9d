#!/bin/sh
# Echo: libfiberloop's echo_server on io_uring and on libev against a plain
# epoll echo server (bench/epoll_echo.c), with the same load generator.
#
# Each server runs alone on CPU 0, the load generator (examples/load, on
# io_uring for every server) on CPU 1. Cases: 1, 50 and 200 connections x
# 64 B and 4 KiB messages, closed loop (one message in flight per
# connection). The machine is noisy, so the servers are interleaved
# (uring libev epoll, uring libev epoll, ... for ROUNDS rounds of every
# case) and each ratio is the median of the per-round ratios.
#
# Per run: messages/s (load's count / duration), server CPU per message
# (utime + stime from /proc/PID/stat across the run / messages) and p99.
#
#   BUILD=build ROUNDS=5 DURATION=2 sh bench/echo.sh
set -eu
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-2}
CONNS=${CONNS:-"1 50 200"}
SIZES=${SIZES:-"64 4096"}
SERVERS="uring libev epoll"
SRV_CPU=${SRV_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}

load=$BUILD/examples/load
for b in "$load" "$BUILD/examples/echo_server" "$BUILD/bench/epoll_echo"; do
	[ -x "$b" ] || { echo "echo.sh: $b missing (make all benches)" >&2; exit 2; }
done
command -v taskset >/dev/null || { echo "echo.sh: taskset missing (util-linux)" >&2; exit 2; }

. "$(dirname "$0")/lib_common.sh"
bench_tmp echo-bench

# Starts server $1 pinned to SRV_CPU; sets $pid and $port.
start() {
	case $1 in
	uring) set -- env FL_BACKEND=io_uring "$BUILD/examples/echo_server" ;;
	libev) set -- env FL_BACKEND=libev "$BUILD/examples/echo_server" ;;
	epoll) set -- "$BUILD/bench/epoll_echo" ;;
	esac
	out=$tmp/srv.$$.$(date +%s%N)
	# the shm segment of the runtime's servers stays out of /dev/shm
	LOOPSTAT_SHM_DIR=$tmp taskset -c "$SRV_CPU" "$@" --port 0 >"$out" 2>>"$tmp/servers.err" &
	pid=$!
	pids="$pids $pid"
	port=""
	i=0
	while [ -z "$port" ] && [ $i -lt 100 ]; do
		port=$(awk '/^port /{ print $2; exit }' "$out" 2>/dev/null || true)
		[ -n "$port" ] || sleep 0.05
		i=$((i + 1))
	done
	[ -n "$port" ] || { echo "echo.sh: server $1 did not start" >&2; cat "$tmp/servers.err" >&2; exit 1; }
}

cpu_ticks() {
	# fields 14 and 15 of /proc/PID/stat; the comm has no spaces here
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# how much other work competed for the CPUs (PSI: share of time some task waited for a CPU)
pressure() { awk '/^some/{ print $2 }' /proc/pressure/cpu 2>/dev/null || echo "avg10=?"; }
echo "# echo: $(nproc) CPUs, kernel $(uname -r), load avg $(cut -d' ' -f1-3 /proc/loadavg), cpu pressure $(pressure)"
echo "# servers on CPU $SRV_CPU, load on CPU $LOAD_CPU, $ROUNDS rounds x ${DURATION}s per case"
tck=$(getconf CLK_TCK)

# One long-lived process per server for the whole run.
for s in $SERVERS; do
	start "$s"
	eval "pid_$s=$pid port_$s=$port"
done

raw=$tmp/raw
: >"$raw"
for r in $(seq 1 "$ROUNDS"); do
	for c in $CONNS; do
		for z in $SIZES; do
			for s in $SERVERS; do
				eval "p=\$pid_$s port=\$port_$s"
				t0=$(cpu_ticks "$p")
				FL_BACKEND=io_uring LOOPSTAT_SHM_DIR=$tmp taskset -c "$LOAD_CPU" "$load" --port "$port" \
					--connections "$c" --size "$z" --rate 0 --duration "$DURATION" >"$tmp/load.out" ||
					{ echo "echo.sh: load failed against $s:" >&2; cat "$tmp/load.out" >&2; exit 1; }
				t1=$(cpu_ticks "$p")
				awk -v r="$r" -v c="$c" -v z="$z" -v s="$s" -v dt="$((t1 - t0))" -v tck="$tck" '
					{ v[$1] = $2 }
					END {
						cpu = dt / tck / (v["messages"] > 0 ? v["messages"] : 1) * 1e6
						printf "raw round %d conns %d size %d server %s msgs_per_sec %d cpu_us_per_msg %.3f p99_us %d\n",
							r, c, z, s, v["messages_per_sec"], cpu, v["p99_us"]
					}' "$tmp/load.out" | tee -a "$raw"
			done
		done
	done
done

# Per case: the median over rounds of each per-round ratio against epoll.
awk '
function median(key,    n, i, j, t, a) {
	n = cnt[key]
	for (i = 1; i <= n; i++) a[i] = val[key, i]
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function add(key, v) { val[key, ++cnt[key]] = v }
{
	k = $5 " " $7
	m[$3, k, $9] = $11; cpu[$3, k, $9] = $13; p99[$3, k, $9] = $15
	rounds[$3] = 1; cases[k] = 1
}
END {
	for (k in cases) for (r in rounds) {
		e = m[r, k, "epoll"]; ec = cpu[r, k, "epoll"]
		if (e <= 0 || ec <= 0) continue
		add(k SUBSEP "uring", m[r, k, "uring"] / e)
		add(k SUBSEP "libev", m[r, k, "libev"] / e)
		add(k SUBSEP "uring_cpu", cpu[r, k, "uring"] / ec)
		add(k SUBSEP "libev_cpu", cpu[r, k, "libev"] / ec)
		add(k SUBSEP "p99_uring", p99[r, k, "uring"]); add(k SUBSEP "p99_libev", p99[r, k, "libev"])
		add(k SUBSEP "p99_epoll", p99[r, k, "epoll"])
		add(k SUBSEP "m_uring", m[r, k, "uring"]); add(k SUBSEP "m_libev", m[r, k, "libev"])
		add(k SUBSEP "m_epoll", e)
	}
	n = split("1 64,1 4096,50 64,50 4096,200 64,200 4096", order, ",")
	for (i = 1; i <= n; i++) {
		k = order[i]
		if (!(k in cases)) continue
		split(k, kk, " ")
		printf "ratio conns %d size %d msgs/s uring %.3f libev %.3f | cpu/msg uring %.3f libev %.3f | median msgs/s uring %d libev %d epoll %d | p99_us uring %d libev %d epoll %d\n",
			kk[1], kk[2], median(k SUBSEP "uring"), median(k SUBSEP "libev"),
			median(k SUBSEP "uring_cpu"), median(k SUBSEP "libev_cpu"),
			median(k SUBSEP "m_uring"), median(k SUBSEP "m_libev"), median(k SUBSEP "m_epoll"),
			median(k SUBSEP "p99_uring"), median(k SUBSEP "p99_libev"), median(k SUBSEP "p99_epoll")
	}
	k = "200 64"
	if (k in cases) {
		printf "figure echo_uring_vs_epoll_200c %.3f x\n", median(k SUBSEP "uring")
		printf "figure echo_libev_vs_epoll_200c %.3f x\n", median(k SUBSEP "libev")
		printf "figure echo_uring_cpu_per_msg_vs_epoll_200c %.3f x\n", median(k SUBSEP "uring_cpu")
	}
}' "$raw"
echo "# load avg after: $(cut -d' ' -f1-3 /proc/loadavg), cpu pressure $(pressure)"
