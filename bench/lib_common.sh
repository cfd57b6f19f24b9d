# What the bench drivers share; sourced (run-bench.sh runs no lib_*).
#
# bench_tmp NAME: a fresh directory in $tmp (/tmp/NAME.XXXXXX) and an
# empty $pids; at exit, or on INT or TERM, every pid in $pids is killed
# and waited for and the directory removed.
bench_tmp() {
	tmp=$(mktemp -d "/tmp/$1.XXXXXX")
	pids=""
	trap bench_cleanup EXIT INT TERM
}

bench_cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
