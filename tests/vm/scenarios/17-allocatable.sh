#!/bin/sh
# 17-allocatable: allocatableMemory.available end to end.  The kubepods cgroup gets a 400 MiB
# memory.max (the node's allocatable, as the kubelet sets it when it enforces "pods"); a
# BestEffort pod takes the pods' working set past 400Mi - 100Mi while the node as a whole
# still has far more than 100Mi available.  evictd (default thresholds: memory.available<100Mi,
# so allocatableMemory.available<100Mi is derived) evicts that pod for allocatableMemory.available,
# not memory.available; the Guaranteed pod is untouched and the kernel never OOM-kills (the
# hog stops at 330 MiB, below the 400 MiB limit).  --validate shows the derived threshold and
# /metrics the signal.
# vm-mem: 1024M
# vm-smp: 2
# vm-timeout: 240
# vm-bins: evictd
# vm-add: tests/vm/lib/kubepods.sh:/usr/lib/evictd-vm/kubepods.sh
# vm-add: tests/vm/data:/usr/lib/evictd-vm/data
# vm-expect: validate-derived evictd-started pods-running signal-exported
# vm-expect: evicted-for-allocatable node-had-memory guaranteed-untouched no-oom-kill evictd-alive
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/kubepods.sh
. /usr/lib/evictd-vm/data/evictd-vm.sh
oom_trace_on

LIMIT_MIB=400           # kubepods memory.max: the node's allocatable
HOG_MIB=330             # with db's 40 MiB: 370 MiB, past 400 - 100, below 400
PODS=/run/pods.json

out=$(evictd --validate 2>&1)
if echo "$out" | grep -qx 'derived hard allocatableMemory.available<100Mi (from memory.available; enforceNodeAllocatable: pods)'; then
    vm_pass validate-derived
else
    vm_fail validate-derived "$(echo "$out" | grep -E '^(hard|soft|derived)' | tr '\n' '|')"
fi

kp_init systemd || vm_fail pods-running "kp_init systemd failed"
echo $((LIMIT_MIB * MiB)) >"$KP_CG/kubepods.slice/memory.max" ||
    vm_fail pods-running "cannot set kubepods.slice/memory.max"
kp_pod db Guaranteed --request 64Mi --priority 1000 --grace 30
kp_podlist $PODS
kp_run db memhog --max 40 --quiet 2>/tmp/db.log
DB_PID=$KP_PID
vm_wait_for 20 grep -q reached /tmp/db.log
if kp_populated db && grep -q reached /tmp/db.log; then
    vm_pass pods-running
else
    vm_fail pods-running "db: $(cat /tmp/db.log)"
fi

ev_start --pods-file=$PODS --node-name=evictd-vm && vm_pass evictd-started || vm_fail evictd-started "see the log above"
metric=$(wget -q -O - http://127.0.0.1:9808/metrics 2>/dev/null |
    awk '/^evictd_signal_capacity_bytes\{.*allocatableMemory.available/ { print $2 }')
if [ "$metric" = $((LIMIT_MIB * MiB)) ]; then
    vm_pass signal-exported
else
    vm_fail signal-exported "evictd_signal_capacity_bytes for allocatableMemory.available: '${metric:-none}'"
fi

mark=$(ev_mark)
kp_pod hog BestEffort
kp_podlist $PODS
kp_run hog memhog --max $HOG_MIB --chunk 4 --quiet 2>/tmp/hog.log
HOG_PID=$KP_PID
path=$(kp_path hog)
vm_wait_for 60 sh -c "! kill -0 $HOG_PID 2>/dev/null"
avail_after=$(mem_available)
lines=$(ev_since "$mark")
evicted=$(echo "$lines" | grep -m1 ' evicted ')
decision=$(echo "$lines" | grep -m1 'decision: hard allocatableMemory.available=')
vm_info "hog: $(tail -n 1 /tmp/hog.log); decision: $(echo "$decision" | sed 's/^[^ ]* //')"
vm_info "evicted: $(echo "$evicted" | sed 's/^[^ ]* //')"
if ! kill -0 $HOG_PID 2>/dev/null && echo "$evicted" | grep -q "vmtest/hog .* for allocatableMemory.available"; then
    vm_pass evicted-for-allocatable
else
    vm_fail evicted-for-allocatable "hog alive=$(kill -0 $HOG_PID 2>/dev/null && echo yes || echo no); ${evicted:-no eviction}"
    ev_dump 20
fi
# The node itself never came near memory.available<100Mi: no memory.available decision, and
# its available memory is far above the threshold.
if ! echo "$lines" | grep -q 'decision: hard memory.available=' && [ "$avail_after" -gt $((300 * MiB)) ]; then
    vm_pass node-had-memory
else
    vm_fail node-had-memory "memory.available $(mib "$avail_after") MiB; $(echo "$lines" | grep -m1 'decision: hard memory.available=')"
fi
if kill -0 $DB_PID 2>/dev/null && kp_populated db; then
    vm_pass guaranteed-untouched
else
    vm_fail guaranteed-untouched "db pid $DB_PID gone"
fi
if oom=$(no_oom_kill); then vm_pass no-oom-kill; else vm_fail no-oom-kill "$oom"; fi
if ev_alive; then vm_pass evictd-alive; else vm_fail evictd-alive "evictd exited"; fi
ev_stop
