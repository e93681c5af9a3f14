#!/bin/sh
# 23-zram: swap on zram (doc/DESIGN.md §1 "Swap and zram").  zram0 is 384 MiB of swap; evictd
# runs the server profile (--profile=server: swap guard 10%, zram guard 10%) over a workload
# root with memory.available<250Mi.  A: "big" holds 700 MiB, memory.available falls below the
# threshold, but swap is nearly all free: evictd holds the threshold back, kills nothing for
# 8 s, and says why.  B: "hog" allocates until swap is short as evictd counts it: SwapFree below
# 10%, where zram's free swap counts only up to MemAvailable x its compression ratio (zram
# stores in RAM), or zram's room below 10%; then the threshold counts and evictd kills through
# cgroup.kill before the kernel's OOM killer acts (often before zram holds anything: with no
# data yet the ratio is 1, so the gate opens at MemAvailable < 10% of SwapTotal).
# vm-mem: 1024M
# vm-smp: 2
# vm-timeout: 300
# vm-bins: evictd
# vm-modules: zram
# vm-add: tests/vm/data:/usr/lib/evictd-vm/data
# vm-expect: zram-swap-on evictd-started memory-low-swap-free no-kill-while-swap-has-room
# vm-expect: killed-when-swap-short no-oom-kill evictd-alive
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/data/evictd-vm.sh
oom_trace_on

ROOT=/sys/fs/cgroup/workloads
THRESHOLD=250Mi
THR_BYTES=$((250 * MiB))

[ -e /sys/block/zram0 ] || modprobe zram 2>/dev/null
if [ -e /sys/block/zram0 ] && echo 384M >/sys/block/zram0/disksize && mkswap /dev/zram0 >/dev/null &&
    swapon /dev/zram0; then
    vm_pass zram-swap-on
else
    vm_fail zram-swap-on "no zram0 or swapon failed: $(ls /sys/block | tr '\n' ' ')"
fi
vm_info "meminfo: $(grep -E '^(MemTotal|MemAvailable|SwapTotal|SwapFree)' /proc/meminfo | tr -s ' ' | tr '\n' ' ')"

mkdir -p $ROOT
echo "+memory +pids" >$ROOT/cgroup.subtree_control
mkdir -p $ROOT/big $ROOT/hog

ev_start --profile=server --workload-root=$ROOT --eviction-hard="memory.available<$THRESHOLD" \
    && vm_pass evictd-started || vm_fail evictd-started "see the log above"

# A: memory low, swap free.
MARK=$(ev_mark)
cg_run $ROOT/big memhog --max 700 --quiet 2>/tmp/big.log
BIG_PID=$CG_PID
vm_wait_for 60 grep -q reached /tmp/big.log
avail=$(mem_available)
swapfree=$(awk '$1 == "SwapFree:" { print $2 * 1024 }' /proc/meminfo)
swaptotal=$(awk '$1 == "SwapTotal:" { print $2 * 1024 }' /proc/meminfo)
vm_info "A: memory.available $(mib "$avail") MiB, SwapFree $(mib "$swapfree") of $(mib "$swaptotal") MiB"
if [ "$avail" -lt $THR_BYTES ] && [ "$swapfree" -gt $((swaptotal / 10)) ]; then
    vm_pass memory-low-swap-free
else
    vm_fail memory-low-swap-free "memory.available $(mib "$avail") MiB, SwapFree $(mib "$swapfree") MiB: the test proves nothing"
fi
sleep 8
if kill -0 $BIG_PID 2>/dev/null && ! ev_since "$MARK" | grep -q 'decision: hard memory.available'; then
    vm_pass no-kill-while-swap-has-room
else
    vm_fail no-kill-while-swap-has-room "big gone or a decision: $(ev_since "$MARK" | grep -m1 'decision:')"
fi

# B: swap runs out.
MARK=$(ev_mark)
cg_run $ROOT/hog memhog --quiet 2>/tmp/hog.log
HOG_PID=$CG_PID
evicted_since_mark() { ev_since "$MARK" | grep -q 'evicted'; }
vm_wait_for 90 evicted_since_mark
lines=$(ev_since "$MARK")
vm_info "B: $(echo "$lines" | grep -m1 'decision: hard')"
vm_info "B: meminfo now: $(grep -E '^(MemAvailable|SwapFree)' /proc/meminfo | tr -s ' ' | tr '\n' ' ')"
if echo "$lines" | grep -q 'decision: hard memory.available' && echo "$lines" | grep -q 'evicted'; then
    vm_pass killed-when-swap-short
else
    vm_fail killed-when-swap-short "no eviction: $(echo "$lines" | tail -n 5 | tr '\n' '|')"
fi
why=$(no_oom_kill) && vm_pass no-oom-kill || vm_fail no-oom-kill "$why"
ev_alive && vm_pass evictd-alive || vm_fail evictd-alive "evictd exited"
kill $BIG_PID $HOG_PID 2>/dev/null
ev_stop
swapoff /dev/zram0 2>/dev/null
vm_done
