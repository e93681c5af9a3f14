#!/usr/bin/env bash
# Log and disk discipline of a running daemon (doc/evictd.8 DECISION LOG): build/evictd
# --dry-run with a threshold that is always met and a real workload cgroup holding a sleeping
# process, evaluating every 100 ms for ~5 s with standard output to a file:
# - a held dry-run decision is tried and logged once (doc/DESIGN.md "Acting: one victim per
#   need"); the decision log stays small, every line is JSON with
#   "dry_run": true, and the decision reads "would kill ...";
# - no live table reaches the stdout file (it is for a terminal only);
# - with the default --event-log=- the stdout file holds decision lines only, all JSON;
# - --event-log-max-size / --event-log-max-files are accepted, bad values refused (exit 2).
# EVICTD=build/evictd-san runs it under ASan/UBSan.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
. tests/cli/daemonlib.sh

if [ ! -x "$EVICTD" ]; then
	echo "not ok 1 - $EVICTD is not built"
	echo "1..1"
	exit 1
fi
command -v jq >/dev/null || { echo "not ok 1 - jq is needed"; echo "1..1"; exit 1; }
jqfile() { jq -e -s "$1" "$2" >/dev/null; }

tmp=$(mktemp -d /tmp/evictd-eventlog-XXXXXX)
tpids=()
root=""
sleeper=""
cleanup() {
	for p in "${tpids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	[ -n "$sleeper" ] && kill -KILL "$sleeper" 2>/dev/null
	if [ -n "$root" ] && [ -d "$root" ]; then
		[ -d "$root/w1" ] && echo 1 >"$root/w1/cgroup.kill" 2>/dev/null
		sleep 0.2
		rmdir "$root/w1" "$root" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# A cgroup v2 tree we may write: the workload with a sleeping process.
for dir in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	if [ -f "$dir/cgroup.controllers" ] && [ -w "$dir" ] && [ -f "$dir/cgroup.procs" ]; then
		root="$dir/evictd-eventlog-$$"
		break
	fi
done
if [ -z "$root" ] || ! mkdir -p "$root/w1" 2>/dev/null; then
	echo "ok 1 - # SKIP no writable cgroup v2 tree (need root and /sys/fs/cgroup or /sys/fs/cgroup/unified)"
	echo "1..1"
	exit 0
fi
sh -c "echo \$\$ > '$root/w1/cgroup.procs'; exec sleep 300" &
sleeper=$!
disown "$sleeper"
sleep 0.3
check "the workload cgroup holds the sleeping process" grep -qx "$sleeper" "$root/w1/cgroup.procs"

mem_total=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024))
always="memory.available<$((mem_total + 1))"	# available is never above MemTotal
common=(--dry-run --no-bpf --oom-guard=off --eviction-hard="$always" --housekeeping-interval=100ms
	--metrics-address=off --workload-root="$root")

# ---- a file as --event-log, stdout to a file --------------------------------------------
log="$tmp/decisions.log"
start a "$EVICTD" "${SAN_ENV[@]}" -- "${common[@]}" --state-dir="$tmp/state-a" \
	--control-socket="$tmp/a.sock" --event-log="$log" --event-log-max-size=64Ki --event-log-max-files=2
sleep 5
check "the daemon is still running after 5 s of a held threshold" kill -0 "$dpid"
evaluations=$("${EVICTCTL:-$BUILD_DIR/evictctl}" --socket "$tmp/a.sock" status --json 2>/dev/null | jq -r '.evaluations // 0')
tries=$(grep -c 'kill: dry-run: would' "$tmp/a.err")
stop "$tpid"
check "it stops cleanly on SIGTERM (rc=$rc)" [ "$rc" = 0 ]
bytes=$(stat -c %s "$log" 2>/dev/null || echo 0)
lines=$(wc -l <"$log")
check "the threshold was evaluated on every round ($evaluations evaluations, >= 10)" [ "${evaluations:-0}" -ge 10 ]
# doc/DESIGN.md "Acting: one victim per need": a dry-run decision that holds is reported once.
check "the held dry-run decision is tried and logged once ($tries 'would' lines in $evaluations evaluations)" [ "$tries" = 1 ]
check "the decision log stays small: $bytes bytes in $lines lines for $evaluations evaluations" \
	test "$bytes" -gt 0 -a "$bytes" -le 4096 -a "$lines" -le 2
check "every line is one JSON object" jqfile 'length >= 1 and all(type == "object")' "$log"
check "every line says dry_run true" jqfile 'all(.dry_run == true)' "$log"
check "the decision reads \"would kill w1\"" \
	jqfile 'map(select(.summary == null)) | .[0] | .action == "dry_run" and .action_text == "would kill w1"' "$log"
out_bytes=$(stat -c %s "$tmp/a.out")
check "no live table in the stdout file ($out_bytes bytes)" [ "$out_bytes" -eq 0 ]
check "no sanitizer report" bash -c "! grep -qE '$SAN_PATTERN' '$tmp/a.err'"

# ---- the default --event-log=-: stdout to a file holds the decision lines only ----------
start b "$EVICTD" "${SAN_ENV[@]}" -- "${common[@]}" --state-dir="$tmp/state-b" --control-socket="$tmp/b.sock"
sleep 3
stop "$tpid"
check "stdout: only JSON decision lines, no table ($(wc -l <"$tmp/b.out") lines)" \
	jqfile 'length >= 1 and all(type == "object" and .dry_run == true)' "$tmp/b.out"
check "stdout stays small ($(stat -c %s "$tmp/b.out") bytes)" [ "$(stat -c %s "$tmp/b.out")" -le 4096 ]

# ---- the flags ----------------------------------------------------------------------------
"$EVICTD" --event-log-max-size=1k --validate >/dev/null 2>"$tmp/v.err"; rc=$?
check "--event-log-max-size below 4Ki is refused (exit 2, rc=$rc)" grep -q "^2 .*event-log-max-size" <(echo "$rc $(cat "$tmp/v.err")")
"$EVICTD" --event-log-max-files=101 --validate >/dev/null 2>"$tmp/v.err"; rc=$?
check "--event-log-max-files above 100 is refused (exit 2, rc=$rc)" grep -q "^2 .*event-log-max-files" <(echo "$rc $(cat "$tmp/v.err")")
done_testing
