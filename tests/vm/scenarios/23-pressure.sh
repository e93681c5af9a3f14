#!/bin/sh
# 23-pressure: the memory pressure criterion acting (doc/DESIGN.md §1 "Memory pressure"), as
# systemd-oomd's ManagedOOMMemoryPressure=kill. evictd runs the server profile over a workload
# root with --memory-pressure-limit='full avg10 40%' for 5 s. "bystander" holds 300 MiB, the
# largest workload, so evictd's memory ranking would name it; "stall" is capped by memory.high
# (48 MiB, no swap) and allocates 160 MiB: the kernel throttles it in reclaim
# (mem_cgroup_handle_over_high), its own memory.pressure climbs while the node stays calm and
# memory.available stays far above every threshold. evictd kills stall, not the bystander,
# through cgroup.kill, with the workload's own pressure as the reason; no kernel OOM kill.
# vm-mem: 1024M
# vm-smp: 2
# vm-timeout: 240
# vm-bins: evictd
# vm-add: tests/vm/data:/usr/lib/evictd-vm/data
# vm-expect: evictd-started workloads-running stall-throttled node-memory-fine
# vm-expect: stall-killed-for-its-pressure bystander-untouched no-oom-kill evictd-alive
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/data/evictd-vm.sh
oom_trace_on

ROOT=/sys/fs/cgroup/workloads
mkdir -p $ROOT
echo "+memory +pids" >$ROOT/cgroup.subtree_control
mkdir -p $ROOT/bystander $ROOT/stall
echo 48M >$ROOT/stall/memory.high

ev_start --profile=server --workload-root=$ROOT --memory-pressure-limit='full avg10 40%' \
    --memory-pressure-duration=5s \
    && vm_pass evictd-started || vm_fail evictd-started "see the log above"
grep -m1 'memory-pressure\|standalone mode' "$EV_LOG" | while IFS= read -r l; do vm_info "$l"; done

cg_run $ROOT/bystander memhog --max 300 --quiet 2>/tmp/bystander.log
BY_PID=$CG_PID
vm_wait_for 60 grep -q reached /tmp/bystander.log
MARK=$(ev_mark)
cg_run $ROOT/stall memhog --max 160 --quiet 2>/tmp/stall.log
STALL_PID=$CG_PID
if kill -0 $BY_PID 2>/dev/null && kill -0 $STALL_PID 2>/dev/null; then
    vm_pass workloads-running
else
    vm_fail workloads-running "bystander or stall did not start"
fi
# The stall's own full avg10 above the limit while it is alive.
stall_high() {
    awk '$1 == "full" { split($2, a, "="); exit !(a[2] + 0 > 40) }' $ROOT/stall/memory.pressure 2>/dev/null
}
if vm_wait_for 30 stall_high; then
    vm_pass stall-throttled
else
    vm_fail stall-throttled "stall's memory.pressure: $(tr '\n' ' ' <$ROOT/stall/memory.pressure 2>/dev/null)"
fi
vm_info "stall: $(tr '\n' ' ' <$ROOT/stall/memory.pressure 2>/dev/null); node: $(tr '\n' ' ' </proc/pressure/memory)"
avail=$(mem_available)
if [ "$avail" -gt $((400 * MiB)) ]; then
    vm_pass node-memory-fine
else
    vm_fail node-memory-fine "memory.available $(mib "$avail") MiB: a memory threshold could act instead"
fi
evicted_since_mark() { ev_since "$MARK" | grep -q 'evicted'; }
vm_wait_for 60 evicted_since_mark
lines=$(ev_since "$MARK")
vm_info "$(echo "$lines" | grep -m1 'decision: memory.pressure')"
vm_info "$(echo "$lines" | grep -m1 'evicted')"
if echo "$lines" | grep -q "decision: memory.pressure .*victim=stall reason=\"memory pressure: the workload's own" &&
    echo "$lines" | grep -q 'evicted stall .* for memory.pressure full avg10>40.00% for 5s' &&
    ! kill -0 $STALL_PID 2>/dev/null; then
    vm_pass stall-killed-for-its-pressure
else
    vm_fail stall-killed-for-its-pressure "$(echo "$lines" | tail -n 6 | tr '\n' '|')"
fi
sleep 3
if kill -0 $BY_PID 2>/dev/null && ! ev_since "$MARK" | grep -q 'evicted bystander'; then
    vm_pass bystander-untouched
else
    vm_fail bystander-untouched "bystander gone: $(ev_since "$MARK" | grep -m1 bystander)"
fi
why=$(no_oom_kill) && vm_pass no-oom-kill || vm_fail no-oom-kill "$why"
ev_alive && vm_pass evictd-alive || vm_fail evictd-alive "evictd exited"
kill $BY_PID 2>/dev/null
ev_stop
vm_done
