#!/bin/sh
# unidle.sh PID: moves PID and every process below it from the idle
# scheduling class (or nice 19) back to the normal one. `make test`
# compiles the sanitizer build idly beside the first build's suites; once
# they are over, the rest of that compile, which the timed suites wait
# for, need not lose the CPUs to whatever else runs on the machine.
# Parents first, so that a child forked meanwhile inherits the normal
# class. Best effort: without the right to (CAP_SYS_NICE), nothing moves.
up() {
	chrt -a -o -p 0 "$1" >/dev/null 2>&1 || renice -n 0 -p "$1" >/dev/null 2>&1
	for c in $(pgrep -P "$1" 2>/dev/null); do up "$c"; done
}
[ -n "${1:-}" ] && up "$1"
exit 0
