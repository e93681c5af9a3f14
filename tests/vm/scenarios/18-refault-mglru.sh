#!/bin/sh
# 18-refault-mglru: --memory-refault-aware under MGLRU (lru_gen/enabled switched on; Debian's
# 6.12 boots with it on, 6.1 has it built in and off), with 18-refault's workloads.
#  Clean: a BestEffort pod ("cache") reads a 400 MiB file twice and sleeps. Under MGLRU its
#     cache stays in the older generations (inactive_file; active_file is only the two
#     youngest, include/linux/mm_inline.h lru_gen_is_active()): not refaulting, the
#     refault-aware value is the kubelet's and does not count that cache. A threshold between
#     "cache not counted" and "all file cache counted": the refault-aware daemon decides
#     nothing.
#  Thrash: a second pod ("thrash", memory.max 96 MiB) reads a 320 MiB file over and over.
#     Under MGLRU its refaulted pages go back to the oldest generations too, so the kubelet's
#     formula counts that cache as free (kubelet-formula-misses). The refault-aware daemon sees
#     the file cache refaulting and counts all of it: with the threshold between the two
#     values, it evicts the thrash pod (a real kill). The rule: user/signals/memory.c
#     signals_refault_aware_working_set(), DESIGN.md §1 "Refault-aware memory.available under
#     MGLRU".
#  Before 6.5 (Debian's 6.1 with MGLRU switched on) MGLRU's workingset_refault_file misses
#     refaults once the generations age (mm/workingset.c lru_gen_refault(); DESIGN.md §1), so
#     evictd refuses the option there: the same markers then check the refusal: its line, no
#     refault-aware value or refaulting gauge exported, and the kubelet's formula deciding
#     nothing at the threshold (no kill).
# vm-mem: 1024M
# vm-smp: 2
# vm-timeout: 420
# vm-disk: 1024M ext4 -m 0
# vm-bins: evictd
# vm-add: tests/vm/lib/kubepods.sh:/usr/lib/evictd-vm/kubepods.sh
# vm-add: tests/vm/lib/refault.sh:/usr/lib/evictd-vm/refault.sh
# vm-add: tests/vm/data:/usr/lib/evictd-vm/data
# vm-expect: mglru-on disk-mounted pods-running cache-inactive
# vm-expect: clean-cache-not-counted clean-refault-aware-keeps
# vm-expect: thrash-refaulting kubelet-formula-misses thrash-refault-aware-evicts evictd-alive
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/kubepods.sh
. /usr/lib/evictd-vm/refault.sh
. /usr/lib/evictd-vm/data/evictd-vm.sh

LRU=/sys/kernel/mm/lru_gen/enabled
# COUNTS=1 on 6.5 and later, where MGLRU counts every refault (evictd applies its rule).
COUNTS=$(awk -F. '{ print ($1 > 6 || ($1 == 6 && $2 + 0 >= 5)) ? 1 : 0 }' /proc/sys/kernel/osrelease)
vm_info "kernel $(cat /proc/sys/kernel/osrelease): $([ "$COUNTS" = 1 ] && echo 'the MGLRU rule applies' || echo 'before 6.5, the option is refused under MGLRU')"
refused_line() { grep -q 'memory-refault-aware refused: MGLRU is on' "$EV_LOG"; }
DATA=/mnt/data
PODS=/run/pods.json
MiB=1048576

if [ -w $LRU ] && echo y >$LRU && [ "$(cat $LRU)" != 0x0000 ]; then
    vm_pass mglru-on
    vm_info "lru_gen/enabled $(cat $LRU)"
else
    vm_fail mglru-on "cannot switch MGLRU on: $(cat $LRU 2>&1)"
fi
mkdir -p $DATA
if vm_wait_for 10 test -b /dev/vda && mount -t ext4 /dev/vda $DATA; then
    vm_pass disk-mounted
else
    vm_fail disk-mounted "cannot mount /dev/vda on $DATA"
fi
dd if=/dev/zero of=$DATA/cold bs=1M count=400 2>/dev/null
dd if=/dev/zero of=$DATA/hot bs=1M count=320 2>/dev/null
sync
echo 3 >/proc/sys/vm/drop_caches

kp_init systemd || vm_fail pods-running "kp_init systemd failed"
kp_pod cache BestEffort
kp_pod thrash BestEffort
kp_podlist $PODS
kp_run cache sh -c "cat $DATA/cold >/dev/null; cat $DATA/cold >/dev/null; echo read >/tmp/cache.done; exec sleep 100000"
vm_wait_for 120 test -f /tmp/cache.done && vm_pass pods-running || vm_fail pods-running "the cache pod did not finish reading"

STAT=/sys/fs/cgroup/memory.stat
stat_line() { grep -E '^(anon|file|active_file|inactive_file|workingset_(refault|activate)_file) ' $STAT | tr '\n' ' '; }
active=$(vm_kv $STAT active_file)
inactive=$(vm_kv $STAT inactive_file)
vm_info "root: $(stat_line)"
if [ "$inactive" -gt $((300 * MiB)) ] && [ "$active" -lt $((100 * MiB)) ]; then
    vm_pass cache-inactive
else
    vm_fail cache-inactive "read-twice cache not in the older generations"
fi

# once MODE_FLAGS...: evictd --once --dry-run's JSON
once() {
    evictd --once --dry-run --pods-file=$PODS --node-name=evictd-vm --output json \
        --metrics-address=off --event-log=off --control-socket=/run/evictd-once.sock \
        --state-dir=/run/evictd-once "$@" 2>/dev/null
}
# (no jq in the guest: the JSON flattened, then matched)
avail() {
    once --eviction-hard="memory.available<1Ki" "$@" | tr -d ' \n' |
        grep -o '"memory.available":{[^}]*}' | grep -o '"available":[0-9]*' | grep -o '[0-9]*$'
}
victim() {
    _v=$(once "$@" | tr -d ' \n' | grep -o '"victim":{[^}]*}' | grep -o '"name":"[^"]*"' | cut -d'"' -f4)
    echo "${_v:-none}"
}
# all_counted: memory.available with all of the root's file cache counted (MemTotal - anon - file)
all_counted() {
    awk 'FILENAME == "/proc/meminfo" && $1 == "MemTotal:" { t = $2 * 1024 }
         FILENAME != "/proc/meminfo" && $1 == "anon" { a = $2 }
         FILENAME != "/proc/meminfo" && $1 == "file" { f = $2 }
         END { printf "%d\n", t - a - f }' /proc/meminfo $STAT
}
evaluations() { wget -q -O - http://127.0.0.1:9808/metrics | awk '$1 == "evictd_evaluations_total" { print $2 }'; }
aware_metrics() { wget -q -O - http://127.0.0.1:9808/metrics | grep -E '^evictd_(file_cache_refaulting|memory_available_bytes)' | tr '\n' ' '; }
aware_value() {
    wget -q -O - http://127.0.0.1:9808/metrics |
        awk '$1 == "evictd_memory_available_bytes{formula=\"refault-aware\"}" { printf "%d\n", $2 }'
}

K=$(avail)
R=$(avail --memory-refault-aware)
A=$(all_counted)
vm_info "clean cache: memory.available kubelet $(mib "$K") MiB, refault-aware $(mib "$R") MiB, all file cache counted $(mib "$A") MiB"
# Not refaulting: the kubelet's value (a moment apart), 300 MiB of the cache above counting all.
d=$(( K > R ? K - R : R - K ))
if [ -n "$K" ] && [ -n "$R" ] && [ "$d" -lt $((16 * MiB)) ] && [ "$R" -gt $((A + 300 * MiB)) ]; then
    vm_pass clean-cache-not-counted
else
    vm_fail clean-cache-not-counted "kubelet $K, refault-aware $R, all counted $A"
fi
T=$(( (R + A) / 2 ))
ev_start --dry-run --pods-file=$PODS --node-name=evictd-vm --memory-refault-aware \
    --eviction-hard="memory.available<$T" --housekeeping-interval=1s --event-log=/tmp/ev-clean.jsonl \
    || vm_fail clean-refault-aware-keeps "evictd did not start"
# 4 s and 4 evaluations at least: several complete 1 s refault windows were measured.
sleep 4
enough_evaluations() { [ "$(evaluations)" -ge 4 ]; }
vm_wait_for 20 enough_evaluations
n=$(evaluations)
m=$(aware_metrics)
vm_info "clean cache, refault-aware daemon (threshold $(mib "$T") MiB) after $n evaluations: $m"
if [ "$COUNTS" = 0 ]; then
    if [ "${n:-0}" -ge 4 ] && refused_line && ! echo "$m" | grep -q 'refault' &&
        ! grep -q '"memory.available"' /tmp/ev-clean.jsonl; then
        vm_pass clean-refault-aware-keeps
    else
        vm_fail clean-refault-aware-keeps "before 6.5: evaluations ${n:-none}; $m; refusal line: $(refused_line && echo yes || echo no); log: $(tail -c 400 /tmp/ev-clean.jsonl)"
    fi
elif [ "${n:-0}" -ge 4 ] && echo "$m" | grep -q 'evictd_file_cache_refaulting 0' &&
    ! grep -q '"memory.available"' /tmp/ev-clean.jsonl; then
    vm_pass clean-refault-aware-keeps
else
    vm_fail clean-refault-aware-keeps "evaluations ${n:-none}; $m; log: $(tail -c 400 /tmp/ev-clean.jsonl)"
fi
grep -m1 'refault-aware' "$EV_LOG" | sed 's/^/EVICTD-VM: INFO log: /'
ev_stop

start_thrash
K=$(avail)
A=$(all_counted)
T=$(( (K + A) / 2 ))
vm_info "thrashing: memory.available kubelet $(mib "$K") MiB, all file cache counted $(mib "$A") MiB; threshold $(mib "$T") MiB; root: $(stat_line)"
# The kubelet's formula does not count the thrashing cache: no decision at that threshold.
d=$(victim --eviction-hard="memory.available<$T")
[ "$d" = none ] && vm_pass kubelet-formula-misses || vm_fail kubelet-formula-misses "kubelet formula decided: $d"
ev_start --pods-file=$PODS --node-name=evictd-vm --memory-refault-aware \
    --eviction-hard="memory.available<$T" --housekeeping-interval=1s --event-log=/tmp/ev.jsonl \
    || vm_fail thrash-refault-aware-evicts "evictd did not start"
if [ "$COUNTS" = 1 ]; then
    expect_refaulting
    vm_info "metrics: $(aware_metrics)"
    expect_thrash_killed
else
    # Refused: the counter is read for the record (it moves, but misses what it should count),
    # the daemon exports no verdict, and at this threshold it decides nothing for 15 s.
    r0=$(vm_kv $STAT workingset_refault_file)
    sleep 15
    r1=$(vm_kv $STAT workingset_refault_file)
    m=$(aware_metrics)
    vm_info "before 6.5: workingset_refault_file $r0 -> $r1 in 15 s; metrics: $m"
    if refused_line && ! echo "$m" | grep -q 'refault'; then
        vm_pass thrash-refaulting
    else
        vm_fail thrash-refaulting "before 6.5 the option should be refused: refusal line $(refused_line && echo yes || echo no); $m"
    fi
    if ! grep -q '"memory.available"' /tmp/ev.jsonl && grep -q 'populated 1' "$(kp_path thrash)/cgroup.events"; then
        vm_pass thrash-refault-aware-evicts
    else
        vm_fail thrash-refault-aware-evicts "before 6.5 nothing should be decided: $(tail -c 600 /tmp/ev.jsonl)"
    fi
fi
kill $THRASH_PID 2>/dev/null
ev_alive && vm_pass evictd-alive || vm_fail evictd-alive "evictd exited"
# End the thrash before evictd detaches its programs (18-refault: a thrashing cat once held a
# CPU in memcg reclaim for minutes, and a BPF detach waits for every CPU).
echo max >"$(kp_path thrash)/memory.max"
echo 1 >"$(kp_path thrash)/cgroup.kill"
vm_wait_for 30 grep -q 'populated 0' "$(kp_path thrash)/cgroup.events" ||
    vm_info "the thrash pod still runs 30 s after cgroup.kill"
ev_stop
exit 0
