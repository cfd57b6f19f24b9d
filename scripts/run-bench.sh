#!/bin/sh
# Runs one benchmark (B=name) or all of them. A benchmark is either a
# program built from bench/NAME.c or a driver script bench/NAME.sh; each
# prints its raw figures and `figure <name> <value> [unit]` lines.
set -eu
build=$1
only=${2:-}
status=0
run_one() {
	name=$1
	echo "== bench $name"
	if [ -f "bench/$name.sh" ]; then
		BUILD="$build" sh "bench/$name.sh" || status=1
	elif [ -x "$build/bench/$name" ]; then
		"$build/bench/$name" || status=1
	else
		echo "run-bench: no benchmark named '$name' (bench/$name.c or bench/$name.sh)" >&2
		exit 2
	fi
}
if [ -n "$only" ]; then
	run_one "$only"
else
	for f in bench/*.c bench/*.sh; do
		[ -e "$f" ] || continue
		n=$(basename "$f"); n=${n%.*}
		# a .c that a .sh drives is run through the script only
		case "$f" in *.c) [ -f "bench/$n.sh" ] && continue ;; esac
		case "$n" in *_lib|lib_*) continue ;; esac
		run_one "$n"
	done
fi
exit $status
