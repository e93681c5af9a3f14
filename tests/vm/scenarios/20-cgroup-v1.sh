#!/bin/sh
# 20-cgroup-v1: a cgroup v1 node (doc/DESIGN.md "Cannot act").  The guest's init mounts
# cgroup2; this scenario takes it away and mounts cgroup v1 hierarchies instead (a named
# systemd one, as a legacy-hierarchy systemd does, and memory where the kernel lets it: the
# harness boots with cgroup_no_v1=all, tools/vm/run-guest.sh, so memory stays unbound), so
# /sys/fs/cgroup holds no cgroup2.
# evictd must say it cannot evict: one CANNOT EVICT error at start, /readyz 503 naming
# no_cgroup2, evictd_can_evict 0, and --once exits 3 (0 with --dry-run).
# vm-mem: 512M
# vm-timeout: 180
# vm-bins: evictd
# vm-add: tests/vm/data:/usr/lib/evictd-vm/data
# vm-expect: v1-mounted once-exit-3 once-dry-run-exit-0 cannot-evict-logged readyz-503
# vm-expect: metric-can-evict-0 evictd-alive
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/data/evictd-vm.sh
CG=/sys/fs/cgroup

# The controllers leave the v2 hierarchy before it goes, so v1 can take memory.
for c in $(cat $CG/cgroup.subtree_control); do echo "-$c" >$CG/cgroup.subtree_control; done
umount $CG || vm_info "umount $CG failed"
mount -t tmpfs -o mode=755 cgroup $CG
mkdir -p $CG/memory $CG/systemd
# The controller's css on the v2 hierarchy go away asynchronously: rebinding it is -EBUSY
# until they have (rebind_subsystems() in kernel/cgroup/cgroup.c).
for i in 1 2 3 4 5 6 7 8 9 10; do
    mount -t cgroup -o memory cgroup $CG/memory 2>/tmp/mount.err && break
    sleep 0.5
done
grep -q " $CG/memory cgroup " /proc/mounts || vm_info "mount -t cgroup -o memory: $(cat /tmp/mount.err) $(dmesg | grep -i cgroup | tail -n 3 | tr '\n' '|')"
mount -t cgroup -o none,name=systemd cgroup $CG/systemd || vm_info "mount name=systemd failed"
vm_info "mounts: $(grep cgroup /proc/mounts | tr '\n' '|')"
if ! grep -q ' cgroup2 ' /proc/mounts && grep -q " $CG/systemd cgroup " /proc/mounts; then
    vm_pass v1-mounted
else
    vm_fail v1-mounted "$(grep cgroup /proc/mounts | tr '\n' ' ')"
fi

ARGS="--no-bpf --oom-guard=off --housekeeping-interval=1s --eviction-hard=memory.available<1Mi"
evictd --once $ARGS >/tmp/once.out 2>/tmp/once.err
rc=$?
if [ $rc = 3 ] && grep -q 'cannot evict: no_cgroup2: no cgroup v2 hierarchy' /tmp/once.err; then
    vm_pass once-exit-3
else
    vm_fail once-exit-3 "rc=$rc: $(tail -n 5 /tmp/once.err | tr '\n' '|')"
fi
evictd --once --dry-run --output=json $ARGS >/tmp/once.json 2>/tmp/once.err
rc=$?
if [ $rc = 0 ] && grep -q '"can_evict":false' /tmp/once.json; then
    vm_pass once-dry-run-exit-0
else
    vm_fail once-dry-run-exit-0 "rc=$rc: $(grep can_evict /tmp/once.json) $(tail -n 3 /tmp/once.err | tr '\n' '|')"
fi

ev_start $ARGS || vm_fail cannot-evict-logged "evictd did not start"
if [ "$(grep -c 'CANNOT EVICT' "$EV_LOG")" = 1 ] && grep -q 'cannot evict: no_cgroup2' "$EV_LOG"; then
    vm_pass cannot-evict-logged
else
    vm_fail cannot-evict-logged "$(head -n 10 "$EV_LOG" | tr '\n' '|')"
fi
sleep 3	# three housekeeping ticks: still one line
out=$(wget -S -O /tmp/readyz http://127.0.0.1:9808/readyz 2>&1)
if echo "$out" | grep -q '503'; then
    vm_pass readyz-503
    vm_info "readyz: $(echo "$out" | tr '\n' '|')"
else
    vm_fail readyz-503 "$(echo "$out" | tr '\n' '|')"
fi
metrics=$(wget -q -O - http://127.0.0.1:9808/metrics 2>&1)
if echo "$metrics" | grep -qx 'evictd_can_evict 0' &&
    echo "$metrics" | grep -qx 'evictd_cannot_evict_reason{reason="no_cgroup2"} 1'; then
    vm_pass metric-can-evict-0
else
    vm_fail metric-can-evict-0 "$(echo "$metrics" | grep evict | tr '\n' '|')"
fi
if ev_alive && [ "$(grep -c 'CANNOT EVICT' "$EV_LOG")" = 1 ]; then
    vm_pass evictd-alive
else
    vm_fail evictd-alive "alive: $(ev_alive && echo y); $(grep -c 'CANNOT EVICT' "$EV_LOG") CANNOT EVICT lines"
fi
ev_stop
vm_done
