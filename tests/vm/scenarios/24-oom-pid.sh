#!/bin/sh
# 24-oom-pid: a kernel OOM kill attributed to its cgroup from the victim's pid alone
# (doc/DESIGN.md "mark_victim's two shapes").  On 5.14-5.15 and 6.2-6.8 the mark_victim
# tracepoint passes only an int pid, and evictd reads the victim's cgroup from /proc/PID/cgroup
# when the record arrives.  No such kernel is served here, so the daemon is told to drop the
# cgroup id the task_struct tracepoint gives (EVICTD_TEST_OOM_PID_ONLY=1): the record is then
# what the int-pid program sends, at the same moment of the kill, and the attribution runs on a
# real kernel OOM kill.  A Burstable pod limited to 64Mi allocates 200 MiB: the memcg OOM
# killer kills it; evictd must log the kill with the container cgroup's id (its inode number),
# not "its cgroup is unknown", and say that the pod (or its container) reached its own memory.max
# (a limit of its own, logged at info), not that evictd "did not act in time" (the node was never
# short).
# vm-mem: 1024M
# vm-smp: 2
# vm-timeout: 180
# vm-bins: evictd
# vm-add: tests/vm/lib/kubepods.sh:/usr/lib/evictd-vm/kubepods.sh
# vm-add: tests/vm/data:/usr/lib/evictd-vm/data
# vm-expect: evictd-started pid-only-said oom-killed attributed-from-pid own-limit-said
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/kubepods.sh
. /usr/lib/evictd-vm/data/evictd-vm.sh

PODS=/run/pods.json
kp_init systemd || vm_fail evictd-started "kp_init systemd failed"
kp_pod capped Burstable --request 32Mi --limit 64Mi --priority 0 --grace 30
kp_podlist $PODS
CDIR=$(_kp_get capped cpath)
PDIR=$(kp_path capped)	# both have memory.max 64Mi; the pod, holding a little more, hits it first
WANT_ID=$(stat -c %i "$CDIR")

export EVICTD_TEST_OOM_PID_ONLY=1
ev_start --pods-file=$PODS --node-name=evictd-vm --eviction-hard="memory.available<50Mi" &&
    vm_pass evictd-started || vm_fail evictd-started "see the log above"
unset EVICTD_TEST_OOM_PID_ONLY
if grep -q 'EVICTD_TEST_OOM_PID_ONLY=1: OOM kill records carry the pid alone' "$EV_LOG"; then
    vm_pass pid-only-said
else
    vm_fail pid-only-said "no warning for EVICTD_TEST_OOM_PID_ONLY in the log"
fi

kp_run capped memhog --max 200 --quiet 2>/tmp/capped.log
CAPPED_PID=$KP_PID
wait $CAPPED_PID 2>/dev/null
kills=$(vm_kv "$CDIR/memory.events" oom_kill)
if [ "${kills:-0}" -ge 1 ]; then
    vm_pass oom-killed
else
    vm_fail oom-killed "memory.events oom_kill '${kills:-none}' in $CDIR (memhog: $(tail -n 2 /tmp/capped.log | tr '\n' ' '))"
fi
vm_wait_for 5 grep -q 'the kernel OOM killer chose pid' "$EV_LOG"
line=$(grep -m1 'the kernel OOM killer chose pid' "$EV_LOG")
vm_info "victim pid $CAPPED_PID, container cgroup id $WANT_ID; log: ${line:-none}"
if echo "$line" | grep -q "chose pid $CAPPED_PID (cgroup id $WANT_ID)"; then
    vm_pass attributed-from-pid
else
    vm_fail attributed-from-pid "want 'chose pid $CAPPED_PID (cgroup id $WANT_ID)', got '${line:-no line}'"
fi
if echo "$line" | grep -q " info: .* within $PDIR[^ ]*, which reached its memory.max (64 MiB): a limit of its own, not node pressure" &&
    ! grep -q 'did not act in time' "$EV_LOG"; then
    vm_pass own-limit-said
else
    vm_fail own-limit-said "want an info line naming the memory.max (64 MiB) of $PDIR or its container and no 'did not act in time', got '${line:-no line}'"
fi
ev_stop
vm_done
