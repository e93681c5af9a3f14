#!/bin/sh
# 23-module-late: a filesystem module loaded after evictd started gets its inode hook.  ext4
# is a module on Debian's 6.1 (the harness loads it at boot for the disk): it is unloaded
# before evictd starts, so ext4_allocate_inode does not exist then (evictd says "not in this
# kernel yet"), then loaded again.  Within the retry interval (5 s) evictd attaches the
# tracepoint ("ext4_allocate_inode appeared", one more program attached), and files created
# on the ext4 disk are counted (evictd_bpf_events_total{event="inode_alloc"} moves).
# vm-mem: 1024M
# vm-smp: 2
# vm-timeout: 180
# vm-bins: evictd
# vm-disk: 32M ext4
# vm-add: tests/vm/data:/usr/lib/evictd-vm/data
# vm-expect: ext4-unloaded evictd-started waits-for-module module-loaded hook-attached
# vm-expect: inodes-counted evictd-alive
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/data/evictd-vm.sh

DISK=/mnt/late
inode_allocs() {
    wget -q -O - http://127.0.0.1:9808/metrics 2>/dev/null |
        awk '$1 == "evictd_bpf_events_total{event=\"inode_alloc\"}" { print $2 }'
}

if rmmod ext4 2>/dev/null && ! grep -qw ext4 /proc/filesystems; then
    vm_pass ext4-unloaded
else
    vm_fail ext4-unloaded "cannot unload ext4: $(grep ext4 /proc/modules | tr '\n' ' ')"
fi

ev_start --dry-run --oom-guard=off --eviction-hard="nodefs.inodesFree<1%" &&
    vm_pass evictd-started || vm_fail evictd-started "see the log above"
if grep -q 'skipping ext4_allocate_inode: tracepoint not in this kernel yet' "$EV_LOG"; then
    vm_pass waits-for-module
else
    vm_fail waits-for-module "no 'not in this kernel yet' line for ext4_allocate_inode"
    ev_dump 20
fi
ATTACHED_BEFORE=$(sed -n 's/.*BPF on: \([0-9]*\) tracepoints.*/\1/p' "$EV_LOG")
MARK=$(ev_mark)

if modprobe ext4 2>/dev/null || insmod "$(grep '/ext4.ko' /etc/evictd-vm/modules.load)"; then
    grep -qw ext4 /proc/filesystems && vm_pass module-loaded
else
    vm_fail module-loaded "modprobe ext4 failed"
fi
if vm_wait_for 12 sh -c "tail -n +$((MARK + 1)) $EV_LOG | grep -q 'ext4_allocate_inode appeared'"; then
    vm_info "$(ev_since "$MARK" | grep -m1 'appeared')"
    vm_pass hook-attached
else
    vm_fail hook-attached "no 'ext4_allocate_inode appeared' line within 12 s (before: $ATTACHED_BEFORE programs)"
    ev_dump 20
fi

mkdir -p $DISK && mount -t ext4 /dev/vda $DISK || vm_fail inodes-counted "cannot mount /dev/vda"
BEFORE=$(inode_allocs)
i=0
while [ $i -lt 200 ]; do : >"$DISK/f$i"; i=$((i + 1)); done
sync
vm_wait_for 15 sh -c "[ \"\$(wget -q -O - http://127.0.0.1:9808/metrics 2>/dev/null |
    awk '\$1 == \"evictd_bpf_events_total{event=\\\"inode_alloc\\\"}\" { print \$2 }')\" -ge $((${BEFORE:-0} + 200)) ]"
AFTER=$(inode_allocs)
vm_info "inode_alloc: ${BEFORE:-absent} -> ${AFTER:-absent} after 200 files"
if [ -n "$AFTER" ] && [ "$AFTER" -ge $((${BEFORE:-0} + 200)) ]; then
    vm_pass inodes-counted
else
    vm_fail inodes-counted "evictd_bpf_events_total{event=\"inode_alloc\"} ${BEFORE:-absent} -> ${AFTER:-absent} (want +200)"
fi
umount $DISK

if ev_alive; then vm_pass evictd-alive; else vm_fail evictd-alive "evictd exited"; ev_dump 30; fi
ev_stop
