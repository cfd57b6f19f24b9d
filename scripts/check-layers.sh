#!/bin/sh
# The layers' include rules (docs/design.md, "Layers"), checked on every
# quoted #include of runtime/, probes/ and monitor/. Prints each wrong
# include as FILE:LINE: what it includes, and why that is not allowed;
# exits 1 if there is any. `make check-layers`, and first thing in `make test`.
set -u
cd "$(dirname "$0")/.."

# The probes' vocabulary (names, lengths, classes) that a view may name;
# the rest of probes/ reads data, which only collect/ and commands do.
VOCAB='loopstat_shm.h probe_shm.h probe_classify.h probe_stat.h'
# profile's live hook and its runner consume the sample stream itself
# (collect/sampler.h's on_sample, the unwinder, the recording's events),
# not the model: the one view that does, named here so it stays the one.
PROFILE_STREAM='monitor/profile/profile_live.c monitor/profile/profile_live.h monitor/profile/profile_run.c
monitor/profile/profile_run.h monitor/profile/profile_acc.h monitor/profile/flight_ring.c
monitor/profile/flight_ring.h monitor/profile/flight_dir.h monitor/profile/flight.c monitor/profile/profile_stalls.h'
# record's flight recorder judges its triggers as check judges thresholds
# (its grammar and metric list): those, and nothing else of check's.
FLIGHT_USES='check/check_expr.h check/check_series.h'
FLIGHT_FILES='monitor/profile/flight.c monitor/profile/flight_opts.c monitor/profile/flight_int.h'
# serve is the Prometheus format served live: it renders through export's
# points and writer (one spelling of every name) and takes its host name
# the same way; nothing else of export's, and export nothing of serve's.
# Its flight recorder is record's (profile/flight.h: one recorder, driven
# from serve's feed), through serve_flight.h alone.
SERVE_USES='export/export_points.h export/export_prom.h export/export_name.h export/export_config.h'
SERVE_FLIGHT='profile/flight.h'

# diff judges changes as check judges thresholds (its grammar, verdicts,
# baseline reader, metric list) and draws profiles with profile's tree,
# accumulator and writers: those, and nothing else of either.
DIFF_USES='check/check_expr.h check/check_verdict.h check/check_baseline.h check/check_series.h
profile/profile_tree.h profile/profile_acc.h profile/profile_out.h'

bad=0
fail() { echo "$1: $2"; bad=1; }

in_list() { for x in $2; do [ "$x" = "$1" ] && return 0; done; return 1; }

check_file() {
	f=$1
	dir=${f%/*}
	base=${f##*/}
	layer=${dir#monitor/}
	grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | while IFS= read -r line; do
		n=${line%%:*}
		inc=${line#*\"}   # no sed per line: it took 15 s of make test
		inc=${inc%%\"*}
		where="$f:$n"
		case "$f" in
		runtime/*)
			case "$inc" in
			probe_*|*/*) fail "$where" "runtime/ includes \"$inc\": the runtime depends on nothing above it" ;;
			esac ;;
		probes/*)
			case "$inc" in
			*/*) fail "$where" "probes/ includes \"$inc\": probes depend on the shm ABI only, never on monitor/" ;;
			esac ;;
		monitor/*/*)
			case "$inc" in
			util/stats.h)
				case "$layer" in
				top|list|export|check|profile|serve|diff)
					fail "$where" "a view includes \"$inc\": views compute no share or interval, they print the model's" ;;
				esac ;;
			util/*) ;;
			"$layer"/*) ;;
			collect/*)
				case "$layer" in
				model) ;;
				top|list|export|check|profile|serve|diff)
					in_list "$f" "$PROFILE_STREAM" ||
						fail "$where" "a view includes \"$inc\": no view drives a source; it reads the feed (model/feed.h, opened by cli_feed_open)" ;;
				*) fail "$where" "$layer/ includes \"$inc\"" ;;
				esac ;;
			model/*)
				case "$layer" in
				collect) fail "$where" "collect/ includes \"$inc\": collect never depends on the model" ;;
				util) fail "$where" "util/ includes \"$inc\": util depends on nothing of the monitor's" ;;
				esac ;;
			top/*|list/*|export/*|check/*|profile/*|serve/*|diff/*)
				{ [ "$layer" = serve ] && in_list "$inc" "$SERVE_USES"; } ||
				{ [ "$f" = monitor/serve/serve_flight.h ] && in_list "$inc" "$SERVE_FLIGHT"; } ||
				{ [ "$layer" = diff ] && in_list "$inc" "$DIFF_USES"; } ||
				{ in_list "$f" "$FLIGHT_FILES" && in_list "$inc" "$FLIGHT_USES"; } ||
				fail "$where" "$layer/ includes \"$inc\": a layer or view never includes another view" ;;
			cli.h|exitcodes.h)
				case "$layer" in collect|model|util) fail "$where" "$layer/ includes \"$inc\": the CLI sits above it" ;; esac ;;
			probe_*|loopstat_shm.h|fiberloop*)
				case "$layer" in
				collect|model) ;;
				util) fail "$where" "util/ includes \"$inc\"" ;;
				*)
					case "$base" in cmd_*.c) ;;
					*) in_list "$inc" "$VOCAB" || in_list "$f" "$PROFILE_STREAM" ||
						fail "$where" "a view includes \"$inc\": it reads data; views read the model (its vocabulary: $VOCAB)" ;;
					esac ;;
				esac ;;
			*) fail "$where" "\"$inc\" is no header of this project's layers" ;;
			esac ;;
		esac
	done
}

# the while loop runs in a subshell: collect its verdicts through the output
out=$(for f in $(find runtime probes monitor -name '*.[ch]' | sort); do check_file "$f"; done)
if [ -n "$out" ]; then
	echo "$out"
	echo "check-layers: wrong-way includes (docs/design.md, Layers)" >&2
	exit 1
fi
exit 0
