#!/bin/sh
# 18-refault-mglru: --memory-refault-aware under MGLRU (lru_gen/enabled switched on; Debian's
# 6.12 boots with it on, 6.1 has it built in and off). A pod reads a 400 MiB file twice: the
# cache stays in the older generations (inactive_file; active_file is only the two youngest,
# include/linux/mm_inline.h lru_gen_is_active()), which the kubelet's formula already counts as
# free. evictd refuses the option with a line saying so and uses the kubelet's memory.available
# (user/signals/memory.c mglru_enabled(); DESIGN.md "Refault-aware memory.available").
# vm-mem: 1024M
# vm-smp: 2
# vm-timeout: 300
# vm-disk: 1024M ext4 -m 0
# vm-bins: evictd
# vm-add: tests/vm/lib/kubepods.sh:/usr/lib/evictd-vm/kubepods.sh
# vm-add: tests/vm/data:/usr/lib/evictd-vm/data
# vm-expect: mglru-on disk-mounted pods-running cache-inactive
# vm-expect: once-refused daemon-refused kubelet-formula-used evictd-alive
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/kubepods.sh
. /usr/lib/evictd-vm/data/evictd-vm.sh

LRU=/sys/kernel/mm/lru_gen/enabled
DATA=/mnt/data
PODS=/run/pods.json
MiB=1048576
REFUSED='memory-refault-aware refused: MGLRU is on'

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
sync
echo 3 >/proc/sys/vm/drop_caches

kp_init systemd || vm_fail pods-running "kp_init systemd failed"
kp_pod cache BestEffort
kp_podlist $PODS
kp_run cache sh -c "cat $DATA/cold >/dev/null; cat $DATA/cold >/dev/null; echo read >/tmp/cache.done; exec sleep 100000"
vm_wait_for 120 test -f /tmp/cache.done && vm_pass pods-running || vm_fail pods-running "the cache pod did not finish reading"

active=$(vm_kv /sys/fs/cgroup/memory.stat active_file)
inactive=$(vm_kv /sys/fs/cgroup/memory.stat inactive_file)
vm_info "root active_file $(mib "$active") MiB, inactive_file $(mib "$inactive") MiB, $(grep -E 'workingset_(refault|activate)_file' /sys/fs/cgroup/memory.stat | tr '\n' ' ')"
if [ "$inactive" -gt $((300 * MiB)) ] && [ "$active" -lt $((100 * MiB)) ]; then
    vm_pass cache-inactive
else
    vm_fail cache-inactive "read-twice cache not in the older generations"
fi

once() {
    evictd --once --dry-run --pods-file=$PODS --node-name=evictd-vm --output json \
        --metrics-address=off --event-log=off --control-socket=/run/evictd-once.sock \
        --state-dir=/run/evictd-once --eviction-hard="memory.available<1Ki" "$@"
}
avail() { once "$@" 2>/dev/null | tr -d ' \n' | grep -o '"memory.available":{[^}]*}' | grep -o '"available":[0-9]*' | grep -o '[0-9]*$'; }
once --memory-refault-aware 2>/tmp/once.err >/dev/null
if grep -q "$REFUSED" /tmp/once.err; then
    vm_pass once-refused
else
    vm_fail once-refused "no refusal line: $(tail -c 300 /tmp/once.err)"
fi
K=$(avail)
R=$(avail --memory-refault-aware)
vm_info "memory.available kubelet $(mib "$K") MiB, with --memory-refault-aware $(mib "$R") MiB"
d=$(( K > R ? K - R : R - K ))
# two samples a moment apart: equal but for the memory that moved in between
if [ -n "$K" ] && [ -n "$R" ] && [ "$d" -lt $((16 * MiB)) ]; then
    vm_pass kubelet-formula-used
else
    vm_fail kubelet-formula-used "kubelet $K, refault-aware $R"
fi

ev_start --dry-run --pods-file=$PODS --node-name=evictd-vm --memory-refault-aware \
    --eviction-hard="memory.available<1Ki" --housekeeping-interval=1s --event-log=off \
    || vm_fail daemon-refused "evictd did not start"
m=$(wget -q -O - http://127.0.0.1:9808/metrics | grep -E 'formula="refault-aware"|^evictd_file_cache_refaulting' | tr '\n' ' ')
if grep -q "$REFUSED" "$EV_LOG" && [ -z "$m" ]; then
    vm_pass daemon-refused
else
    vm_fail daemon-refused "log: $(grep -m1 refault "$EV_LOG"); refault-aware metrics: $m"
fi
ev_alive && vm_pass evictd-alive || vm_fail evictd-alive "evictd exited"
ev_stop
exit 0
