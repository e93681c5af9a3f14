#!/usr/bin/env bash
# The fleet benchmark (issue 20, make bench part "fleet"): FLEET_NODES simulated nodes, each the
# real pods source of build/libevictd.a (tools/bench/fleet.c), against the stand-in API server
# (tests/cli/kube-standin.py) through an API server restart, a partition and a 429 storm.
# Prints "fleet ..." lines (bench/raw.txt); tools/bench/run.sh renders them with --table.
# Usage: tools/bench/fleet.sh [--smoke]     (--smoke: 20 nodes, short windows, ~2 min)
#        tools/bench/fleet.sh --table RAW   (the results.md section from RAW's fleet lines)
# Environment: FLEET_NODES (500), FLEET_WINDOW (60 s observed after each event),
# FLEET_PARTITION (60 s), FLEET_STORM (30 s), FLEET_RETRY_AFTER (5 s), FLEET_BOOKMARK (60 s,
# the stand-in's bookmark period), BUILD (build).
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "${1:-}" = --table ]; then
	raw=$2
	val() { grep -oE "(^| )$2=[^ ]+" <<<"$1" | head -n1 | cut -d= -f2; }
	params=$(grep -m1 '^fleet params:' "$raw")
	nodes=$(val "$params" nodes)
	target_peak=$(awk -v n="$nodes" 'BEGIN { printf "%.0f", n / 10 }')
	echo "## Fleet: $nodes nodes against the stand-in API server"
	echo
	standin=$(grep -m1 '^fleet stand-in:' "$raw" || true)
	echo "Measured on commit $(val "$standin" built_from) (user/kube as of that commit); the stand-in used $(val "$standin" cpu_s) s of CPU in all."
	echo
	echo "Each simulated node is the real pods source of build/libevictd.a (\`kube_pods_source_new\`: list, then watch, in its own thread; user/kube/pods_watch.c), with its own node name and 3 pods, all against one tests/cli/kube-standin.py (Python, HTTPS, a thread per connection: $nodes watches at once are within what it serves on 2 cores). Server side (requests, lists, peak per 1 s bin from the event's start) from the stand-in's request log; client side (watching again, stale) from each source's health sampled every 100 ms. Events: **restart** = \`/standin/restart\` (every watch cut, a new watch cache: a watch from an older resourceVersion gets 410); **partition** = \`/standin/blackhole\` for $(val "$params" partition_s) s (open watches get nothing, not even bookmarks, on an open socket; bookmarks every 60 s as the API server's); **storm** = every GET of pods answered 429 with \`Retry-After: $(val "$params" retry_after_s)\` for $(val "$params" storm_s) s, every watch cut at its start. Each event is observed for $(val "$params" window_s) s after it ends. *watching again* = from the end of the event, a watch open that was opened, or brought a list, event or bookmark, after the end (until the window's end: a 410's watch open for an instant does not count; a watch reopened inside the partition counts from its first bookmark); *stale* = seconds without a list, event or bookmark beyond the $(val "$params" progress_timeout_s) s progress bound (\`evictd_kube_pods_stale_seconds\`), mean (max) per node; *late* = requests a node made more than 2 s after it watched again, or from a node that never did (a request loop would show there)."
	echo
	echo "The client-go column is computed, not run: a model of tools/cache/reflector.go (\`RunWithContext\` delayHandler.Until with Backoff{800 ms, ×2, jitter 1.0, cap 30 s} reset after 2 min; \`watch()\`: a watch that ends is made again at once, a 410 ends ListAndWatch, a 429 is \`isWatchErrorRetriable\`; \`list()\`: no paging for a non-zero resourceVersion) and rest/request.go \`Watch\` with rest/with_retry.go \`IsNextRetry\`/\`checkWait\` (a 429 retried after Retry-After, up to 10 times), no latency, on the same node count (tools/bench/fleet.c \`model\`)."
	echo
	echo "| event | who | requests / node (max) | full lists / node (max) | server peak req/s (at s) | every node watching again after s (median) | stale s / node (max) | late requests |"
	echo "|---|---|---|---|---|---|---|---|"
	grep -E '^fleet (restart|partition|storm) ' "$raw" | while read -r _ event who rest; do
		all=$(val "$rest" watching_all_s)
		[ "$all" = "-1.0" ] && all="not all ($(val "$rest" not_watching) never)"
		stale="$(val "$rest" stale_mean_s) ($(val "$rest" stale_max_s))"
		# The model follows no bookmark timer after a storm: its staleness is not computed.
		[ "$event $who" = "storm client-go:" ] && stale="— (not modelled)"
		echo "| $event | ${who%:} | $(val "$rest" requests_per_node) ($(val "$rest" requests_max)) | $(val "$rest" lists_per_node) ($(val "$rest" lists_max)) | $(val "$rest" peak_rps) ($(val "$rest" peak_at_s)) | $all ($(val "$rest" watching_median_s)) | $stale | $(val "$rest" late_requests) |"
	done
	echo
	echo "Targets (evictd, measured):"
	echo
	echo "| target | measured | verdict |"
	echo "|---|---|---|"
	r=$(grep -m1 '^fleet restart evictd' "$raw"); p=$(grep -m1 '^fleet partition evictd' "$raw"); s=$(grep -m1 '^fleet storm evictd' "$raw")
	ok() { if awk "BEGIN { exit !($1) }"; then echo met; else echo "**not met**"; fi; }
	echo "| one full list per node per restart | $(val "$r" lists_per_node) per node, max $(val "$r" lists_max) | $(ok "$(val "$r" lists_max) <= 1 && $(val "$r" lists_per_node) >= 0.99") |"
	for l in "$r" "$p" "$s"; do
		e=$(cut -d' ' -f2 <<<"$l")
		echo "| $e: server peak < a tenth of the nodes per second (< $target_peak req/s) | $(val "$l" peak_rps) req/s | $(ok "$(val "$l" peak_rps) < $target_peak") |"
		echo "| $e: every node watching again within 60 s | $(val "$l" watching_all_s) s | $(ok "$(val "$l" watching_all_s) >= 0 && $(val "$l" watching_all_s) <= 60") |"
		echo "| $e: no request loop (no request after watching again) | $(val "$l" late_requests) | $(ok "$(val "$l" late_requests) == 0") |"
	done
	echo
	exit 0
fi

BUILD=${BUILD:-build}
NODES=${FLEET_NODES:-500}
WINDOW=${FLEET_WINDOW:-60}
PARTITION=${FLEET_PARTITION:-60}
STORM=${FLEET_STORM:-30}
RETRY_AFTER=${FLEET_RETRY_AFTER:-5}
BOOKMARK=${FLEET_BOOKMARK:-60}	# the API server's bookmarkFrequency (cacher.go)
if [ "${1:-}" = --smoke ]; then
	NODES=${FLEET_NODES:-20} WINDOW=${FLEET_WINDOW:-25} PARTITION=${FLEET_PARTITION:-10} STORM=${FLEET_STORM:-10}
	RETRY_AFTER=${FLEET_RETRY_AFTER:-2} BOOKMARK=${FLEET_BOOKMARK:-5}
fi

make -s "$BUILD/libevictd.a" >/dev/null
bin=$BUILD/bench/fleet
mkdir -p "$BUILD/bench"
if [ ! -x "$bin" ] || [ tools/bench/fleet.c -nt "$bin" ] || [ "$BUILD/libevictd.a" -nt "$bin" ]; then
	${CC:-gcc} -O2 -g -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter \
		-Iuser -Ibpf -I"$BUILD" $(pkg-config --cflags libbpf json-c) \
		tools/bench/fleet.c "$BUILD/libevictd.a" \
		$(pkg-config --libs libbpf yaml-0.1 json-c libsystemd libmicrohttpd libcurl) \
		-lelf -lz -lm -lpthread -o "$bin"
fi

work=$(mktemp -d /tmp/evictd-fleet.XXXXXX)
standin_pid=""
cleanup() {
	[ -n "$standin_pid" ] && kill -TERM "$standin_pid" 2>/dev/null && wait "$standin_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
# A socket per watch on each side.
ulimit -n "$(( NODES * 4 + 256 > 4096 ? NODES * 4 + 256 : 4096 ))" 2>/dev/null || true

python3 tests/cli/kube-standin.py --make-certs "$work/certs"
mkdir -p "$work/fixtures"
python3 - "$NODES" >"$work/fixtures/pods.json" <<'EOF'
import json, sys
items = []
for n in range(int(sys.argv[1])):
    for p, qos in enumerate(("BestEffort", "Burstable", "Guaranteed")):
        items.append({"metadata": {"name": "app-%d" % p, "namespace": "ns-%d" % n,
                                   "uid": "f1ee7000-%04x-4000-8000-%012x" % (p, n)},
                      "spec": {"nodeName": "fleet-node-%04d" % n, "priority": p * 1000},
                      "status": {"phase": "Running", "qosClass": qos}})
print(json.dumps({"kind": "PodList", "apiVersion": "v1", "items": items}))
EOF
echo '[]' >"$work/faults.json"
max=$(( 300 + 3 * WINDOW + PARTITION + STORM ))
python3 tests/cli/kube-standin.py --cert "$work/certs/server.crt" --key "$work/certs/server.key" \
	--port-file "$work/port" --log "$work/requests.jsonl" --fixtures "$work/fixtures" \
	--faults "$work/faults.json" --max-seconds "$max" --log-time --listen-backlog 1024 \
	--bookmark-seconds "$BOOKMARK" &
standin_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { echo "fleet: the stand-in did not start" >&2; exit 1; }
cpu() { awk '{ print ($14 + $15) / 100 }' "/proc/$standin_pid/stat"; }

"$bin" --server "https://127.0.0.1:$(cat "$work/port")" --ca "$work/certs/ca.crt" \
	--log "$work/requests.jsonl" --faults "$work/faults.json" --nodes "$NODES" \
	--window "$WINDOW" --partition "$PARTITION" --storm "$STORM" --retry-after "$RETRY_AFTER" \
	2>"$work/fleet.err" || { echo "fleet: the driver failed:" >&2; tail -n 20 "$work/fleet.err" >&2; exit 1; }
echo "fleet stand-in: cpu_s=$(cpu) built_from=$(git log -1 --format=%h 2>/dev/null || echo '?')$(git diff --quiet HEAD -- user 2>/dev/null || echo '+uncommitted')"
