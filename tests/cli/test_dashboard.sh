#!/usr/bin/env bash
# The Grafana dashboard (tools/deploy/monitoring/dashboard.json) asks only for what evictd
# serves: every evictd_* name in its queries and variables is a family a live /metrics
# declares (# TYPE), scraped from a dry-run daemon with BPF when this host loads it.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
tmp=$(mktemp -d /tmp/evictd-dash-XXXXXX)
tpids=()
. tests/cli/daemonlib.sh
dashboard=tools/deploy/monitoring/dashboard.json
pin=/sys/fs/bpf/evictd-dash-$$
cleanup() { for t in "${tpids[@]}"; do stop "$t"; done; rm -rf "$tmp" "$pin"; }
trap cleanup EXIT

if [ ! -x "$EVICTD" ] || ! command -v jq >/dev/null || ! command -v curl >/dev/null; then
	echo "not ok 1 - $EVICTD, jq and curl are needed"; echo "1..1"; exit 1
fi
check "the dashboard is valid JSON with panels" bash -c "jq -e '.panels | length > 0' '$dashboard' >/dev/null"
names=$(jq -r '.. | objects | (.expr?, .definition?) // empty' "$dashboard" |
	grep -oE '\bevictd_[a-z_]+' | sed -E 's/_(bucket|sum|count)$//' | sort -u)
check "the dashboard's queries name evictd metrics ($(wc -w <<<"$names"))" [ -n "$names" ]

port=$(free_port)
mem_total=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024 ))
# Thresholds on bytes and tasks, so both families exist; BPF pinned in the scratch dir.
start dash "$EVICTD" -- --dry-run --oom-guard=off --state-dir="$tmp/state" \
	--eviction-hard="memory.available<$((mem_total + 1))" --eviction-hard="pid.available<1" \
	--housekeeping-interval=1s --control-socket="$tmp/evictd.sock" --bpf-pin-dir="$pin" \
	--metrics-address="127.0.0.1:$port" --event-log="$tmp/decisions.log"
if ! wait_up "$tmp/evictd.sock" "$port"; then
	fail "the daemon came up" "$(tail -5 "$tmp/dash.err")"; done_testing; exit 1
fi
sleep 2	# a second evaluation: every family filled
curl -sf "http://127.0.0.1:$port/metrics" >"$tmp/metrics"
bpf=$(awk '$1 == "evictd_bpf_enabled" { print $2 }' "$tmp/metrics")
for name in $names; do
	if grep -qx "# TYPE $name [a-z]*" "$tmp/metrics"; then
		pass "/metrics serves $name"
	elif [[ $name == evictd_bpf_*_total ]] && [ "$bpf" != 1 ]; then
		echo "ok $((tap_count += 1)) - /metrics serves $name # SKIP BPF did not load on this host ($(grep -m1 -i bpf "$tmp/dash.err"))"
	else
		fail "/metrics serves $name" "not in the scrape"
	fi
done
done_testing
