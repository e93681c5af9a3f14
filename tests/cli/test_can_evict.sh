#!/usr/bin/env bash
# doc/DESIGN.md "Cannot act": the real daemon run as nobody (uid 65534, no capabilities)
# against a real cgroup below this host's cgroup v2 mount, whose cgroup.kill belongs to root:
# /readyz is 503 and names the reason, evictd_can_evict is 0 with the reason's gauge,
# `evictctl status` says CANNOT EVICT (text and --json), `--once` exits 3 (0 with --dry-run,
# whose JSON says can_evict false). As root on the same cgroup all of it says it can evict.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
EVICTCTL=${EVICTCTL:-build/evictctl}

v2=""
for dir in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	[ -f "$dir/cgroup.controllers" ] && [ -w "$dir" ] && { v2=$dir; break; }
done
if [ -z "$v2" ] || [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
	echo "ok 1 # SKIP needs root, setpriv and a writable cgroup v2 mount"
	echo "1..1"
	exit 0
fi
root="$v2/evictd-canevict-$$"
tmp=$(mktemp -d /tmp/evictd-canevict-XXXXXX)
chmod 0777 "$tmp"	# nobody's state dir, socket and logs
tpids=()
. tests/cli/daemonlib.sh
cleanup() {
	for t in "${tpids[@]}"; do stop "$t"; done
	rmdir "$root/w1" "$root" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$root/w1"
always_met="memory.available<$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024 + 1 ))"
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
common=(--oom-guard=off --no-bpf --no-psi --housekeeping-interval=200ms --workload-root="$root"
	--eviction-hard="$always_met")

# --once as nobody: it cannot evict, so it fails with 3 whatever the decision.
out=$("${nobody[@]}" "$EVICTD" --once "${common[@]}" --state-dir="$tmp/once" 2>&1)
rc=$?
check "--once as nobody exits 3 (cannot evict)" test "$rc" = 3
check "--once as nobody names cgroup.kill and the uid" grep -q "cannot evict: cgroup_kill_not_writable: $root/cgroup.kill: not writable by uid 65534" <<<"$out"
check "--once prints a CANNOT EVICT line" grep -q "^CANNOT EVICT: .*cgroup_kill_not_writable" <<<"$out"
out=$("${nobody[@]}" "$EVICTD" --once --dry-run --output=json "${common[@]}" 2>/dev/null)
rc=$?
check "--once --dry-run as nobody exits 0" test "$rc" = 0
check "--once --dry-run JSON: can_evict false with the reason" \
	test "$(jq -r '[.can_evict, .cannot_evict[0].reason] | join(" ")' <<<"$out")" = "false cgroup_kill_not_writable"

# The daemon as nobody.
port=$(free_port)
sock="$tmp/evictd.sock"
start nobody "${nobody[0]}" -- "${nobody[@]:1}" "$EVICTD" "${common[@]}" --state-dir="$tmp/state" \
	--control-socket="$sock" --metrics-address="127.0.0.1:$port"
if wait_up "$sock" "$port"; then pass "the daemon runs as nobody"; else fail "the daemon runs as nobody" "$(cat "$tmp/nobody.err")"; fi
code=$(curl -s -o "$tmp/readyz" -w '%{http_code}' "http://127.0.0.1:$port/readyz")
check "/readyz is 503" test "$code" = 503
check "/readyz names the reason and the path" grep -q "^cgroup_kill_not_writable: $root/cgroup.kill" "$tmp/readyz"
curl -s "http://127.0.0.1:$port/metrics" >"$tmp/metrics"
check "evictd_can_evict 0" grep -qx 'evictd_can_evict 0' "$tmp/metrics"
check "evictd_cannot_evict_reason{reason=\"cgroup_kill_not_writable\"} 1" \
	grep -qx 'evictd_cannot_evict_reason{reason="cgroup_kill_not_writable"} 1' "$tmp/metrics"
check "evictd_eviction_degraded_reason{reason=\"no_cap_kill\"} 1" \
	grep -qx 'evictd_eviction_degraded_reason{reason="no_cap_kill"} 1' "$tmp/metrics"
"$EVICTCTL" --socket="$sock" status >"$tmp/status" 2>&1
check "evictctl status: a CANNOT EVICT line" grep -q "^CANNOT EVICT: $root/cgroup.kill: not writable by uid 65534.*(cgroup_kill_not_writable)" "$tmp/status"
"$EVICTCTL" --socket="$sock" status --json >"$tmp/status.json" 2>&1
check "evictctl status --json: can_evict false, the reason" \
	test "$(jq -r '[.can_evict, .cannot_evict[0].reason] | join(" ")' "$tmp/status.json")" = "false cgroup_kill_not_writable"
# Logged once at start, not on every 200 ms tick.
sleep 1
check "the reason is logged once, not every tick" test "$(grep -c 'cannot evict: cgroup_kill_not_writable' "$tmp/nobody.err")" = 1
stop "$tpid"

# The same cgroup as root: it can evict, /readyz is ok.
port=$(free_port)
start root "$EVICTD" -- "${common[@]}" --dry-run --state-dir="$tmp/rstate" --control-socket="$sock" \
	--metrics-address="127.0.0.1:$port"
if wait_up "$sock" "$port"; then pass "the daemon runs as root"; else fail "the daemon runs as root" "$(cat "$tmp/root.err")"; fi
code=$(curl -s -o "$tmp/readyz" -w '%{http_code}' "http://127.0.0.1:$port/readyz")
check "as root /readyz is 200" test "$code" = 200
check "as root evictd_can_evict 1" sh -c "curl -s http://127.0.0.1:$port/metrics | grep -qx 'evictd_can_evict 1'"
"$EVICTCTL" --socket="$sock" status >"$tmp/status" 2>&1
check "as root no CANNOT EVICT line" sh -c "! grep -q 'CANNOT EVICT' '$tmp/status'"
stop "$tpid"
check "no error logged as root" sh -c "! grep -q 'cannot evict' '$tmp/root.err'"
done_testing
