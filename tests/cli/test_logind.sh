#!/usr/bin/env bash
# evictd with a logind that hangs, and a reload during a graceful shutdown in progress. A
# private dbus-daemon stands in for the system bus (DBUS_SYSTEM_BUS_ADDRESS) and
# build/tests-progs/fake-logind owns org.freedesktop.login1 on it.
#
#   a. logind takes every call and never answers: evictd starts, /healthz and evictctl status
#      answer within 1 s, a hard threshold met at start kills its workload at once, the loop's
#      longest iteration stays below 1 s.
#   b. (build/evictd-san) logind grants the delay lock and announces a shutdown; the workload
#      ignores SIGTERM, so it is in its grace when evictd gets 5 SIGHUPs: it stays up, the
#      workload is killed at the end of the first group's period, then the critical workload
#      in the second group (its kill starts after the reloads: the shutdown killer used to read
#      the freed kill rules there), the lock is released, SIGTERM exits 0 with no sanitizer
#      report.
#
# Needs a writable cgroup v2 tree with cgroup.kill and /usr/bin/dbus-daemon; skipped without.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
EVICTD_SAN=${EVICTD_SAN:-$BUILD_DIR/evictd-san}
EVICTCTL=${EVICTCTL:-$BUILD_DIR/evictctl}
FAKE_LOGIND=${FAKE_LOGIND:-$BUILD_DIR/tests-progs/fake-logind}

tmp=$(mktemp -d /tmp/evictd-logind-XXXXXX)
tpids=()
root=""
bus_pid="" fake_pid=""
. tests/cli/daemonlib.sh

cleanup() {
	[ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null
	[ -n "$bus_pid" ] && kill "$bus_pid" 2>/dev/null
	cleanup_daemons
}
trap cleanup EXIT

skip_all() { echo "ok 1 # SKIP $1"; echo "1..1"; exit 0; }
for bin in "$EVICTD" "$EVICTD_SAN" "$EVICTCTL" "$FAKE_LOGIND"; do
	[ -x "$bin" ] || { echo "not ok 1 - $bin is not built (make test builds it)"; echo "1..1"; exit 1; }
done
[ -x /usr/bin/dbus-daemon ] || skip_all "no /usr/bin/dbus-daemon (tools/install-deps.sh test installs it)"
v2=""
for dir in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	[ -f "$dir/cgroup.controllers" ] && [ -w "$dir" ] && { v2=$dir; break; }
done
[ -n "$v2" ] || skip_all "no writable cgroup v2 tree"
root="$v2/evictd-logind-$$"
mkdir -p "$root" || skip_all "cannot make $root"
[ -e "$root/cgroup.kill" ] || skip_all "no cgroup.kill (Linux < 5.14)"
populated() { grep -q '^populated 1' "$root/$1/cgroup.events" 2>/dev/null; }
# workload NAME: a process in its own cgroup below $root that ignores SIGTERM.
workload() {
	mkdir -p "$root/$1"
	sh -c "echo \$\$ > '$root/$1/cgroup.procs'; trap '' TERM; exec sleep 300" &
	disown
	for _ in $(seq 1 50); do populated "$1" && return 0; sleep 0.02; done
	return 1
}

# The private bus and the stand-in logind.
cat > "$tmp/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>system</type><listen>unix:path=$tmp/bus</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/>
<allow own="*"/><allow user="*"/></policy></busconfig>
CONF
/usr/bin/dbus-daemon --config-file="$tmp/bus.conf" --nofork --nopidfile &
bus_pid=$!
for _ in $(seq 1 100); do [ -S "$tmp/bus" ] && break; sleep 0.05; done
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$tmp/bus"
start_logind() {
	[ -n "$fake_pid" ] && { kill "$fake_pid" 2>/dev/null; wait "$fake_pid" 2>/dev/null; }
	"$FAKE_LOGIND" "$@" > "$tmp/logind.out" 2>&1 &
	fake_pid=$!
	for _ in $(seq 1 100); do grep -q ready "$tmp/logind.out" 2>/dev/null && return 0; sleep 0.05; done
	return 1
}
mem_total=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024 ))

# ---- a. logind never answers -----------------------------------------------------------------
name="a. logind never answers"
start_logind --silent || fail "$name: fake-logind starts" "$(cat "$tmp/logind.out")"
workload hog || fail "$name: the workload starts"
port=$(free_port)
t0=$(date +%s%N)
start a "$EVICTD" -- --no-bpf --oom-guard=off --event-log=off --state-dir="$tmp/state-a" \
	--logind-dropin-dir="$tmp/dropin" --shutdown-grace-period=20s \
	--shutdown-grace-period-critical-pods=5s \
	--eviction-hard="memory.available<$((mem_total + 1))" --workload-root="$root" \
	--control-socket="$tmp/a.sock" --metrics-address="127.0.0.1:$port"
killed_ms=""
for _ in $(seq 1 50); do
	populated hog || { killed_ms=$(ms_since "$t0"); break; }
	sleep 0.1
done
if wait_up "$tmp/a.sock" "$port"; then
	t=$(date +%s%N); healthz_ok "$port"; hz_ok=$?; hz_ms=$(ms_since "$t")
	t=$(date +%s%N); timeout 1 "$EVICTCTL" --socket "$tmp/a.sock" status >/dev/null 2>&1; ctl_ok=$?
	ctl_ms=$(ms_since "$t")
	check "$name: /healthz answers 200 within 1 s (${hz_ms} ms)" [ $hz_ok = 0 ]
	check "$name: evictctl status answers within 1 s (${ctl_ms} ms)" [ $ctl_ok = 0 ]
else
	fail "$name: evictd comes up (/healthz, control socket)" "$(tail -5 "$tmp/a.err")"
fi
check "$name: a hard threshold met at start kills its workload meanwhile (${killed_ms:-never} ms)" \
	[ -n "$killed_ms" ]
check "$name: evictd asked logind for the lock (the call was taken and not answered)" \
	grep -q call-ignored "$tmp/logind.out"
sleep 1
lmax=$(loop_max "$port")
check "$name: evictd_loop_iteration_max_since_start_seconds below 1 ('$lmax')" below_1s "$lmax"
stop "$tpid"
check "$name: SIGTERM exits 0 while a logind call is pending (rc '$rc')" [ "$rc" = 0 ]

# ---- b. SIGHUP during a graceful shutdown in progress -----------------------------------------
name="b. SIGHUP x5 during a graceful shutdown (evictd-san)"
start_logind --delay 60 --prepare-after 2 || fail "$name: fake-logind starts" "$(cat "$tmp/logind.out")"
workload slow || fail "$name: the workload starts"
workload crit || fail "$name: the critical workload starts"
setfattr -n user.evictd.priority -v 2000000000 "$root/crit"
port=$(free_port)
start b "$EVICTD_SAN" "${SAN_ENV[@]}" -- --no-bpf --oom-guard=off --event-log=off \
	--state-dir="$tmp/state-b" --logind-dropin-dir="$tmp/dropin" \
	--shutdown-grace-period=8s --shutdown-grace-period-critical-pods=2s \
	--workload-root="$root" --control-socket="$tmp/b.sock" --metrics-address="127.0.0.1:$port"
if ! wait_log "$tmp/b.err" 'kill: sent SIGTERM to [0-9]+ processes in .*/slow' 20; then
	fail "$name: the shutdown sends SIGTERM to the workload" "$(tail -5 "$tmp/b.err"; cat "$tmp/logind.out")"
else
	t_term=$(date +%s%N)
	pass "$name: the shutdown sends SIGTERM to the workload"
	for _ in 1 2 3 4 5; do kill -HUP "$dpid" 2>/dev/null; sleep 0.1; done
	sleep 0.5
	check "$name: alive after the SIGHUPs" kill -0 "$dpid"
	check "$name: the workload is still in its grace after the reloads" populated slow
	t=$(date +%s%N); healthz_ok "$port"; hz_ok=$?
	check "$name: /healthz answers 200 within 1 s during the shutdown ($(ms_since "$t") ms)" [ $hz_ok = 0 ]
	gone_ms=""
	for _ in $(seq 1 150); do
		populated slow || { gone_ms=$(ms_since "$t_term"); break; }
		sleep 0.1
	done
	# The first group's period: 8 s - 2 s for critical pods = 6 s.
	if [ -n "$gone_ms" ] && [ "$gone_ms" -ge 4500 ] && [ "$gone_ms" -le 9000 ]; then
		pass "$name: the workload is killed at the end of its group's period (${gone_ms} ms)"
	else
		fail "$name: the workload is killed at the end of its group's period (~6 s)" \
			"after '${gone_ms:-never}' ms; $(grep -E 'shutdown|kill:' "$tmp/b.err" | tail -5)"
	fi
	crit_ms=""
	for _ in $(seq 1 60); do
		populated crit || { crit_ms=$(ms_since "$t_term"); break; }
		sleep 0.1
	done
	# Its group starts when the first ends (~6 s) and lasts 2 s; it ignores SIGTERM.
	if [ -n "$crit_ms" ] && [ "$crit_ms" -ge 6500 ] && [ "$crit_ms" -le 11000 ]; then
		pass "$name: the critical workload is terminated in the second group, after the reloads (${crit_ms} ms)"
	else
		fail "$name: the critical workload is terminated in the second group (~8 s)" \
			"after '${crit_ms:-never}' ms; $(grep -E 'shutdown|kill:' "$tmp/b.err" | tail -5)"
	fi
	wait_log "$tmp/logind.out" lock-released 10
	check "$name: the delay lock is released after the sequence" grep -q lock-released "$tmp/logind.out"
	check "$name: a reload was done during the shutdown" grep -q 'configuration reloaded' "$tmp/b.err"
fi
alive=no
kill -0 "$dpid" 2>/dev/null && alive=yes
stop "$tpid"
if [ $alive = yes ] && [ "$rc" = 0 ] && no_sanitizer_report "$tmp/b.err"; then
	pass "$name: SIGTERM exits 0, no sanitizer report"
else
	fail "$name: SIGTERM exits 0, no sanitizer report" "alive: $alive; exit status '$rc'
$(grep -E "$SAN_PATTERN" "$tmp/b.err" | head -3)
$(tail -4 "$tmp/b.err")"
fi
done_testing
