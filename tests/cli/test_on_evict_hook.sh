#!/usr/bin/env bash
# --on-evict (doc/DESIGN.md §9, "Hooks and notifications"): a hook that hangs never holds the
# loop. The daemon evicts a workload, starts the hook (which writes its EVICTD_* environment and
# then sleeps), keeps answering evictctl and evicting the next workload while it sleeps, and
# kills the hook's process group at --on-evict-timeout.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
EVICTD=${EVICTD:-build/evictd}
EVICTCTL=${EVICTCTL:-build/evictctl}

v2=""
for dir in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	[ -f "$dir/cgroup.controllers" ] && [ -w "$dir" ] && { v2=$dir; break; }
done
if [ -z "$v2" ]; then
	echo "ok 1 # SKIP no writable cgroup v2 mount on this machine"
	echo "1..1"
	exit 0
fi
tmp=$(mktemp -d /tmp/evictd-hook-XXXXXX)
root="$v2/evictd-hook-$$"
tpids=()
. tests/cli/daemonlib.sh
trap 'for p in $(cat "$tmp/hook.pids" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done; cleanup_daemons' EXIT
mem_total=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024 ))

spawn() {	# spawn WORKLOAD PRIORITY
	mkdir -p "$root/$1"
	setfattr -n user.evictd.priority -v "$2" "$root/$1"
	sh -c "echo \$\$ > '$root/$1/cgroup.procs'; exec sleep 300" &
	disown
}
populated() { grep -q '^populated 1' "$root/$1/cgroup.events" 2>/dev/null; }

mkdir -p "$root"
spawn first 1; spawn second 2
sleep 0.3
# The hook records its environment and pid, then hangs far past its timeout.
cat > "$tmp/hook.sh" <<HOOK
echo "\$EVICTD_KIND|\$EVICTD_VICTIM|\$EVICTD_CGROUP|\$EVICTD_SIGNAL|\$EVICTD_THRESHOLD|\$EVICTD_OBSERVED" >> "$tmp/hook.log"
echo \$\$ >> "$tmp/hook.pids"
exec sleep 600
HOOK
port=$(free_port)
sock="$tmp/ctl.sock"
# The threshold is always met; each kill gives nothing back (sleeping processes), so the
# second eviction follows the first after the ledger's backoff.
start d "$EVICTD" -- --no-bpf --oom-guard=off --state-dir="$tmp" --control-socket="$sock" \
	--metrics-address="127.0.0.1:$port" --event-log=off --housekeeping-interval=200ms \
	--eviction-hard="memory.available<$((mem_total + 1))" --workload-root="$root" \
	--on-evict="sh $tmp/hook.sh" --on-evict-timeout=3s
if ! wait_up "$sock" "$port"; then
	fail "the daemon starts" "$(tail -5 "$tmp/d.err")"
	exit 1
fi
wait_log "$tmp/hook.log" 'first' 10
check "the hook runs after the eviction with its environment" \
	grep -qE "^evicted\|first\|$root/first\|memory.available\|$((mem_total + 1))\|[0-9]+$" "$tmp/hook.log"
check "the first workload is gone" sh -c "! grep -q '^populated 1' '$root/first/cgroup.events' 2>/dev/null"
# While the hook sleeps: evictctl answers at once, every time.
slow=0
for _ in 1 2 3 4 5; do
	t0=$(date +%s%N)
	timeout 2 "$EVICTCTL" --socket "$sock" status >/dev/null 2>&1 || slow=$((slow + 1))
	[ "$(ms_since "$t0")" -lt 1000 ] || slow=$((slow + 1))
	sleep 0.2
done
check "evictctl answers while the hook hangs ($slow slow or failed of 5)" [ "$slow" -eq 0 ]
hook_pid=$(head -1 "$tmp/hook.pids" 2>/dev/null)
check "the hook is still running before its timeout" kill -0 "${hook_pid:-0}"
# Its timeout: the group is SIGTERMed (sleep dies of it).
check "the hook is killed at its timeout" wait_log "$tmp/d.err" 'on-evict for evicted first: timed out' 8
# Dead: gone, or a zombie its new parent has not reaped yet (the hook's sh forked it).
check "the hook's process is dead" sh -c "! ps -o stat= -p ${hook_pid:-0} | grep -q '^[^Z]'"
# The loop went on evicting meanwhile: the second workload goes too, hook or no hook.
wait_log "$tmp/d.err" "evicted second" 30
check "the next workload was evicted (the loop did not wait for the hook)" sh -c "! grep -q '^populated 1' '$root/second/cgroup.events' 2>/dev/null"
max=$(loop_max "$port")
check "no loop iteration took a second (max ${max:-?} s)" below_1s "$max"
stop "${tpids[0]}"
check "the daemon exits cleanly (rc $rc)" [ "$rc" = 0 ]
check "no sanitizer report" no_sanitizer_report "$tmp/d.err"
done_testing
