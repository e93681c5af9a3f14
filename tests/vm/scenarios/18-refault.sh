#!/bin/sh
# 18-refault: the refault-aware memory signal (--memory-refault-aware; kubernetes issue 43916).
#  Clean: a BestEffort pod ("cache") reads a 400 MiB file twice and sleeps: 400 MiB of clean
#     active file cache that nobody reads again. A threshold between the kubelet's
#     memory.available (which counts active_file as used) and the refault-aware one: the
#     kubelet formula decides an eviction, the refault-aware mode does not.
#  Thrash: a second pod ("thrash", memory.max 96 MiB) reads a 320 MiB file over and over: its
#     cache refaults all the time. The refault-aware daemon sees the file cache refaulting
#     (evictd_file_cache_refaulting 1) and counts the cache as the kubelet does: with the
#     threshold again between the two values, it evicts the thrash pod (a real kill).
# The clean-cache decisions: the kubelet formula from --once's JSON (no rate needed); the
# refault-aware one from a --dry-run daemon that runs long enough to measure the refault rate
# (a window of at least 1 s, user/signals/memory.c refaulting_now()): --once reads one sample
# only, so it would report the not-refaulting value whatever the cache did.
# Classic LRU on every kernel: MGLRU (on in Debian's 6.12) is switched off before any cache is
# made and before evictd starts; under MGLRU a second read does not activate and the option
# has its own rule (18-refault-mglru).
# vm-mem: 1024M
# vm-smp: 2
# vm-timeout: 420
# vm-disk: 1024M ext4 -m 0
# vm-bins: evictd
# vm-add: tests/vm/lib/kubepods.sh:/usr/lib/evictd-vm/kubepods.sh
# vm-add: tests/vm/lib/refault.sh:/usr/lib/evictd-vm/refault.sh
# vm-add: tests/vm/data:/usr/lib/evictd-vm/data
# vm-expect: disk-mounted pods-running cache-active
# vm-expect: clean-kubelet-evicts clean-refault-aware-keeps
# vm-expect: thrash-refaulting thrash-refault-aware-evicts evictd-alive
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/kubepods.sh
. /usr/lib/evictd-vm/refault.sh
. /usr/lib/evictd-vm/data/evictd-vm.sh

if [ -w /sys/kernel/mm/lru_gen/enabled ]; then
    echo n >/sys/kernel/mm/lru_gen/enabled
    vm_info "lru_gen/enabled $(cat /sys/kernel/mm/lru_gen/enabled): classic LRU"
fi
DATA=/mnt/data
PODS=/run/pods.json
MiB=1048576

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

active=$(awk '$1 == "active_file" { print $2 }' /sys/fs/cgroup/memory.stat)
vm_info "root active_file $(mib "$active") MiB, $(grep -E 'inactive_file|workingset_refault_file' /sys/fs/cgroup/memory.stat | tr '\n' ' ')"
[ "$active" -gt $((300 * MiB)) ] && vm_pass cache-active || vm_fail cache-active "only $(mib "$active") MiB of active file cache"

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

K=$(avail)
R=$(avail --memory-refault-aware)
T=$(( (K + R) / 2 ))
vm_info "clean cache: memory.available kubelet $(mib "$K") MiB, refault-aware $(mib "$R") MiB; threshold $(mib "$T") MiB"
d=$(victim --eviction-hard="memory.available<$T")
[ "$d" = cache ] && vm_pass clean-kubelet-evicts || vm_fail clean-kubelet-evicts "kubelet formula decided: $d"
# evaluations: evictd_evaluations_total of the running daemon
evaluations() { wget -q -O - http://127.0.0.1:9808/metrics | awk '$1 == "evictd_evaluations_total" { print $2 }'; }
# aware_metrics: the refault-aware value and the refaulting gauge, one line
aware_metrics() { wget -q -O - http://127.0.0.1:9808/metrics | grep -E '^evictd_(file_cache_refaulting|memory_available_bytes)' | tr '\n' ' '; }
ev_start --dry-run --pods-file=$PODS --node-name=evictd-vm --memory-refault-aware \
    --eviction-hard="memory.available<$T" --housekeeping-interval=1s --event-log=/tmp/ev-clean.jsonl \
    || vm_fail clean-refault-aware-keeps "evictd did not start"
# 4 s and 4 evaluations at least: several complete 1 s refault windows were measured.
sleep 4
enough_evaluations() { [ "$(evaluations)" -ge 4 ]; }
vm_wait_for 20 enough_evaluations
n=$(evaluations)
m=$(aware_metrics)
vm_info "clean cache, refault-aware daemon after $n evaluations: $m"
if [ "${n:-0}" -ge 4 ] && echo "$m" | grep -q 'evictd_file_cache_refaulting 0' &&
    ! grep -q '"memory.available"' /tmp/ev-clean.jsonl; then
    vm_pass clean-refault-aware-keeps
else
    vm_fail clean-refault-aware-keeps "evaluations ${n:-none}; $m; log: $(tail -c 400 /tmp/ev-clean.jsonl)"
fi
ev_stop

start_thrash
K=$(avail)
R=$(avail --memory-refault-aware)	# one read: no rate yet, so the not-refaulting value
T=$(( (K + R) / 2 ))
vm_info "thrashing: memory.available kubelet $(mib "$K") MiB, refault-aware before any rate $(mib "$R") MiB; threshold $(mib "$T") MiB"
ev_start --pods-file=$PODS --node-name=evictd-vm --memory-refault-aware \
    --eviction-hard="memory.available<$T" --housekeeping-interval=1s --event-log=/tmp/ev.jsonl \
    || vm_fail thrash-refault-aware-evicts "evictd did not start"
expect_refaulting
vm_info "metrics: $(wget -q -O - http://127.0.0.1:9808/metrics | grep -E '^evictd_memory_available_bytes' | tr '\n' ' ')"
expect_thrash_killed
kill $THRASH_PID 2>/dev/null
ev_alive && vm_pass evictd-alive || vm_fail evictd-alive "evictd exited"
# End the thrash before evictd detaches its programs: lift the limit, then kill the pod. Once
# (1 run in ~3 under TCG) the thrashing cat held a CPU in memcg reclaim for minutes (soft
# lockup), and a BPF detach waits for every CPU to pass an RCU-tasks quiescent state.
echo max >"$(kp_path thrash)/memory.max"
echo 1 >"$(kp_path thrash)/cgroup.kill"
vm_wait_for 30 grep -q 'populated 0' "$(kp_path thrash)/cgroup.events" ||
    vm_info "the thrash pod still runs 30 s after cgroup.kill"
ev_stop
exit 0
