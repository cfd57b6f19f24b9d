#!/bin/sh
# Prints the path of file-format-schema.json, the JSON schema that the
# speedscope npm package ships, installing the package (a pinned version)
# into DIR (default build/npm) first when it is not there yet. The profile
# tests validate loopstat's speedscope output against it. Test-only: nothing
# installed here is used by the build.
set -eu
dir=${1:-build/npm}
ver=1.25.0
schema="$dir/node_modules/speedscope/dist/release/file-format-schema.json"
mkdir -p "$dir"
# both builds' suites may ask at once: one installs, the other waits
exec 9>"$dir/.lock"
flock 9
if [ ! -f "$schema" ]; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "speedscope-schema: npm not found (scripts/deps.sh installs it)" >&2
		exit 1
	fi
	npm install --prefix "$dir" --no-audit --no-fund --ignore-scripts --no-save \
		"speedscope@$ver" >&2
fi
if [ ! -f "$schema" ]; then
	echo "speedscope-schema: $schema missing after npm install speedscope@$ver" >&2
	exit 1
fi
echo "$schema"
