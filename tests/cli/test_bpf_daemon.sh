#!/usr/bin/env bash
# evictd --dry-run with BPF on this host: its pinned maps read with bpftool show real counts;
# a fork burst crossing pid.available wakes it through the ring buffer long before the
# housekeeping poll; the default attaches only the wake-up programs (cgroup_stats stays
# empty), --bpf-inspect fills cgroup_stats with named fields; a clean exit removes the pins.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
tmp=$(mktemp -d /tmp/evictd-bpfd-XXXXXX)
pin="/sys/fs/bpf/evictd-test-$$"
pid=""
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	pkill -P $$ sleep 2>/dev/null
	rm -rf "$tmp" "$pin" 2>/dev/null
}
trap cleanup EXIT

# Leave 400 PIDs of margin: a burst of 500 sleepers crosses it.
read -r pid_max < /proc/sys/kernel/pid_max
read -r threads_max < /proc/sys/kernel/threads-max
cap=$(( pid_max < threads_max ? pid_max : threads_max ))
tasks=$(awk '{split($4, a, "/"); print a[2]}' /proc/loadavg)
limit=$(( cap - tasks - 400 ))

"$EVICTD" --dry-run --oom-guard=off --housekeeping-interval=60s --state-dir="$tmp/state" \
	--eviction-hard="pid.available<$limit" --bpf-pin-dir="$pin" \
	--control-socket="$tmp/evictd.sock" --metrics-address=off --event-log="$tmp/events.jsonl" \
	>"$tmp/out" 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ -S "$tmp/evictd.sock" ] && break; sleep 0.1; done

if grep -q "BPF on:" "$tmp/out"; then
	pass "evictd loads and attaches its BPF programs"
else
	fail "evictd loads and attaches its BPF programs" "$(cat "$tmp/out")"
	done_testing; exit
fi

modes=$(stat -c '%a %n' "$pin"/* 2>/dev/null | awk '{print $1}' | sort -u | tr '\n' ' ')
check "maps are pinned under --bpf-pin-dir with mode 0600 ($modes)" [ "$modes" = "600 " ]
check "the pin directory is mode 0700" [ "$(stat -c %a "$pin")" = 700 ]

# A burst of forks; node_stats must count them, cgroup_stats must have named fields.
before=$(bpftool -j map dump pinned "$pin/node_stats" | jq '[.[0].formatted.values[].value.forks] | add')
start_ms=$(date +%s%3N)
for _ in $(seq 1 500); do sleep 30 & done
after=$(bpftool -j map dump pinned "$pin/node_stats" | jq '[.[0].formatted.values[].value.forks] | add')
check "node_stats.forks counted the burst ($before -> $after)" [ $((after - before)) -ge 500 ]
entries=$(bpftool -j map dump pinned "$pin/cgroup_stats" | jq 'length')
check "by default no per-cgroup counters are kept ($entries cgroup_stats entries)" [ "$entries" = 0 ]

# The crossing must be seen through the BPF wake-up, not the 60 s poll.
seen=""
for _ in $(seq 1 50); do
	if grep -q '"signal":"pid.available"' "$tmp/events.jsonl" 2>/dev/null; then seen=1; break; fi
	sleep 0.1
done
elapsed=$(( $(date +%s%3N) - start_ms ))
check "a fork burst crossing pid.available is decided on within 5 s, not at the 60 s poll (${elapsed} ms)" [ -n "$seen" ]
wakes=$("$BUILD_DIR/evictctl" --socket "$tmp/evictd.sock" status --json 2>/dev/null | jq -r '.evaluations')
check "the wake-up caused extra evaluations ($wakes)" [ "${wakes:-0}" -ge 2 ]
pkill -P $$ sleep 2>/dev/null

kill -TERM "$pid"; wait "$pid"; rc=$?; pid=""
check "SIGTERM exits 0" [ $rc -eq 0 ]
check "a clean exit removes the pins" [ ! -e "$pin/node_stats" ]

# --bpf-inspect: the inspection programs too; cgroup_stats has named fields.
"$EVICTD" --dry-run --oom-guard=off --housekeeping-interval=60s --state-dir="$tmp/state" \
	--bpf-inspect --bpf-pin-dir="$pin" --control-socket="$tmp/evictd.sock" \
	--metrics-address=off --event-log=off >"$tmp/out2" 2>&1 &
pid=$!
for _ in $(seq 1 100); do grep -q "BPF on:" "$tmp/out2" && break; sleep 0.1; done
check "--bpf-inspect says the inspection counters are on" grep -q "inspection counters on" "$tmp/out2"
n_default=$(sed -n 's/.*BPF on: \([0-9]*\) tracepoints.*/\1/p' "$tmp/out")
n_inspect=$(sed -n 's/.*BPF on: \([0-9]*\) tracepoints.*/\1/p' "$tmp/out2")
check "--bpf-inspect attaches more programs than the default ($n_default -> $n_inspect)" \
	[ "${n_inspect:-0}" -gt "${n_default:-99}" ]
for _ in $(seq 1 20); do /bin/true; done
fields=$(bpftool -j map dump pinned "$pin/cgroup_stats" | jq -r '.[0].formatted.value | keys | join(",")')
check "with --bpf-inspect cgroup_stats entries carry named fields ($fields)" grep -q 'forks' <<<"$fields"
text=$(bpftool map dump pinned "$pin/cgroup_stats" | head -20)
check "plain bpftool dump prints field names" grep -q '"inode_allocs":' <<<"$text"
kill -TERM "$pid"; wait "$pid"; rc=$?; pid=""
check "SIGTERM exits 0 (--bpf-inspect)" [ $rc -eq 0 ]

out=$("$EVICTD" --once --no-bpf --output json --state-dir="$tmp/state" 2>&1 >/dev/null)
check "--no-bpf --once runs without BPF" [ $? -eq 0 ]

done_testing
