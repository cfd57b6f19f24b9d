#!/bin/sh
# Checks for every Debian package the build and the tests need; as root it
# installs what is missing, otherwise it prints the exact install line and fails.
# Quiet when everything is present, so `make test` output stays readable.
#
#   deps.sh build             what building loopstat needs (make demo)
#   deps.sh [test]            that, and what the suites run against (make test)
#   deps.sh --list build|test the package names, installing nothing
set -eu

list=0
[ "${1:-}" = "--list" ] && { list=1; shift; }
mode=${1:-test}
case "$mode" in
build|test) ;;
*) echo "usage: deps.sh [--list] [build|test]" >&2; exit 2 ;;
esac

# "package:probe" pairs; the probe is a header or a command that proves the
# package is installed without asking dpkg (works in containers with odd dpkg state).
BUILD_PKGS="
gcc:gcc
make:make
pkg-config:pkg-config
liburing-dev:/usr/include/liburing.h
libev-dev:/usr/include/ev.h
libproc2-dev:/usr/include/libproc2/pids.h
libncurses-dev:/usr/include/ncursesw/ncurses.h
libseccomp-dev:/usr/include/seccomp.h
libjson-c-dev:/usr/include/json-c/json.h
libdw-dev:/usr/include/elfutils/libdwfl.h
libiberty-dev:/usr/include/libiberty/demangle.h
libmicrohttpd-dev:/usr/include/microhttpd.h
protobuf-c-compiler:protoc-c
libprotobuf-c-dev:/usr/include/protobuf-c/protobuf-c.h
zlib1g-dev:/usr/include/zlib.h
"
# The suites: Criterion, and the real peers they run against.
PKGS="
libcriterion-dev:/usr/include/criterion/criterion.h
python3-jsonschema:/usr/lib/python3/dist-packages/jsonschema/__init__.py
npm:npm
tmux:tmux
graphite-carbon:carbon-cache
python3-whisper:whisper-fetch
carbon-c-relay:carbon-c-relay
prometheus:promtool
"
# loopstat serve: its tests scrape it with a real Prometheus
PKGS="$PKGS
prometheus:prometheus
"
# loopstat check's report tests: JUnit read back by junitparser (Debian's
# /usr/bin/python3), TAP by Perl's TAP::Parser and prove.
PKGS="$PKGS
python3-junitparser:/usr/lib/python3/dist-packages/junitparser/__init__.py
perl:/usr/bin/prove
"
# every output against hostile names: TAP's YAML blocks read by PyYAML
PKGS="$PKGS
python3-yaml:/usr/lib/python3/dist-packages/yaml/__init__.py
"
# bench/diff.sh reads diff --json with jq
PKGS="$PKGS
jq:jq
"
# loopstat profile: the access test runs loopstat as another user (setpriv),
# bench/profile_impact compares against strace.
PKGS="$PKGS
util-linux:setpriv
strace:strace
"
# profile --format pprof: its tests read it back with go tool pprof and
# protoc --decode.
PKGS="$PKGS
golang-go:go
protobuf-compiler:protoc
"
# schedulers (tests/programs): a Go server, a tokio server built offline from
# Debian's crates, a Netty server; Debian's cargo and rustc, not a rustup one.
PKGS="$PKGS
rustc:/usr/bin/rustc
cargo:/usr/bin/cargo
librust-tokio-dev:/usr/share/cargo/registry/tokio-1.24.2/Cargo.toml
openjdk-17-jdk-headless:javac
libnetty-java:/usr/share/java/netty-transport.jar
"
# discovery and roles: real loops nobody instrumented (test_discover, test_roles), beside python3's
# asyncio and node, which the machine has.
PKGS="$PKGS
redis-server:/usr/bin/redis-server
nginx-light:/usr/sbin/nginx
curl:curl
ruby-eventmachine:/usr/lib/ruby/vendor_ruby/eventmachine.rb
python3:/usr/bin/python3
"
# the bpf source: programs built by clang -target bpf against the kernel's
# BTF (bpftool btf dump), embedded by bpftool gen skeleton, loaded by libbpf
PKGS="$PKGS
clang:clang
llvm:llc
libbpf-dev:/usr/include/bpf/libbpf.h
bpftool:/usr/sbin/bpftool
"

if [ "$mode" = build ]; then PKGS=$BUILD_PKGS; else PKGS="$BUILD_PKGS $PKGS"; fi
if [ "$list" = 1 ]; then
	for pair in $PKGS; do echo "${pair%%:*}"; done | sort -u
	exit 0
fi

missing=""
for pair in $PKGS; do
	pkg=${pair%%:*}
	probe=${pair#*:}
	case "$probe" in
	/*) [ -e "$probe" ] && continue ;;
	*) command -v "$probe" >/dev/null 2>&1 && continue ;;
	esac
	case " $missing " in *" $pkg "*) continue ;; esac
	missing="$missing $pkg"
done

[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "loopstat: missing $mode packages; install them with:" >&2
	echo "  sudo apt-get install -y$missing" >&2
	exit 1
fi

echo "deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "deps: done" >&2
