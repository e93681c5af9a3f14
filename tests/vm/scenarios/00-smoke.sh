#!/bin/sh
# 00-smoke: the guest has what the evictd scenarios need.
# vm-mem: 512M
# vm-timeout: 180
# vm-disk: 16M ext4 -N 128 -m 0
# vm-expect: cgroup2-mounted controllers-enabled memcg-oom-kill cgroup-kill
# vm-expect: btf-vmlinux bpffs-mounted bpf-ringbuf-tracepoint tracefs-mounted psi
# vm-expect: pids-max-enforced
# vm-expect: tmpfs-inodes-enospc ext4-disk-inodes-enospc
#
# Runs as /scenario.sh from the busybox /init (tools/vm/build-initramfs.sh);
# the test programs (memhog, forkbomb, mkfiles, bpfcheck) are in /usr/bin.
. /usr/lib/evictd-vm/vm-lib.sh
CG=/sys/fs/cgroup

# -- cgroup v2 with the memory and pids controllers on for children
if grep -q " $CG cgroup2 " /proc/mounts; then
    vm_pass cgroup2-mounted
else
    vm_fail cgroup2-mounted "no cgroup2 on $CG in /proc/mounts: $(grep cgroup /proc/mounts | tr '\n' ' ')"
fi
sc=$(cat $CG/cgroup.subtree_control 2>&1)
missing=""
for c in memory pids; do
    case " $sc " in *" $c "*) ;; *) missing="$missing $c" ;; esac
done
if [ -z "$missing" ]; then
    vm_pass controllers-enabled
else
    vm_fail controllers-enabled "missing:$missing in $CG/cgroup.subtree_control='$sc'"
fi
vm_info "controllers: available='$(cat $CG/cgroup.controllers)' enabled='$sc'"

# -- memory.max 64M: a hog in it is OOM-killed by the kernel, memory.events says so
OOM=$CG/smoke-oom
mkdir -p $OOM
echo 64M >$OOM/memory.max
echo 0 >$OOM/memory.swap.max 2>/dev/null || true
max=$(cat $OOM/memory.max)
t0=$(vm_uptime)
# the subshell moves itself into the cgroup, then becomes memhog
timeout 60 sh -c "echo \$\$ >$OOM/cgroup.procs && exec memhog --max 512 --chunk 8 --quiet"
rc=$?
t1=$(vm_uptime)
kills=$(vm_kv $OOM/memory.events oom_kill)
if [ "$max" = 67108864 ] && [ "$kills" = 1 ] && [ "$rc" = 137 ]; then
    vm_pass memcg-oom-kill
else
    vm_fail memcg-oom-kill "memory.max=$max memhog exit=$rc (want 137=SIGKILL) memory.events: $(tr '\n' ' ' <$OOM/memory.events)"
fi
vm_info "memcg-oom-kill: OOM kill after $(awk -v a=$t0 -v b=$t1 'BEGIN{printf "%.2f", b-a}') s, peak $(( $(cat $OOM/memory.peak 2>/dev/null || echo 0) / 1048576 )) MiB"
rmdir $OOM || vm_fail memcg-oom-kill "rmdir $OOM failed"

# -- cgroup.kill: 3 sleepers gone (populated 0) within 1 s
K=$CG/smoke-kill
mkdir -p $K
for _ in 1 2 3; do
    sh -c "echo \$\$ >$K/cgroup.procs && exec sleep 1000" &
done
vm_wait_for 5 sh -c "[ \$(wc -l <$K/cgroup.procs) -eq 3 ]" \
    || vm_fail cgroup-kill "the 3 sleepers never showed up in $K/cgroup.procs: $(cat $K/cgroup.procs | tr '\n' ' ')"
before=$(vm_kv $K/cgroup.events populated)
t0=$(vm_uptime)
echo 1 >$K/cgroup.kill
ok=0
for _ in $(seq 1 100); do
    if [ "$(vm_kv $K/cgroup.events populated)" = 0 ]; then ok=1; break; fi
    sleep 0.01
done
t1=$(vm_uptime)
wait
el=$(awk -v a=$t0 -v b=$t1 'BEGIN{printf "%.2f", b-a}')
if [ "$before" = 1 ] && [ $ok = 1 ] && awk -v e="$el" 'BEGIN{exit !(e <= 1.0)}'; then
    vm_pass cgroup-kill
    vm_info "cgroup-kill: populated 0 after ${el} s"
else
    vm_fail cgroup-kill "populated before=$before, after ${el} s: $(tr '\n' ' ' <$K/cgroup.events) procs: $(cat $K/cgroup.procs | tr '\n' ' ')"
fi
rmdir $K || vm_fail cgroup-kill "rmdir $K failed"

# -- BPF prerequisites: kernel BTF and bpffs; tracefs for tracepoints; PSI
if [ -s /sys/kernel/btf/vmlinux ]; then
    vm_pass btf-vmlinux
    vm_info "btf-vmlinux: $(wc -c </sys/kernel/btf/vmlinux) bytes"
else
    vm_fail btf-vmlinux "/sys/kernel/btf/vmlinux missing or empty"
fi
if grep -q ' /sys/fs/bpf bpf ' /proc/mounts; then
    vm_pass bpffs-mounted
else
    vm_fail bpffs-mounted "no bpf file system on /sys/fs/bpf"
fi
# a raw tracepoint program writing to a BPF ring buffer that user space reads
if out=$(bpfcheck 2>&1); then
    vm_pass bpf-ringbuf-tracepoint
    vm_info "$(echo "$out" | tail -n 1)"
else
    vm_fail bpf-ringbuf-tracepoint "$(echo "$out" | tail -n 5 | tr '\n' ' ')"
fi
if grep -q ' /sys/kernel/tracing tracefs ' /proc/mounts && [ -d /sys/kernel/tracing/events/oom ]; then
    vm_pass tracefs-mounted
else
    vm_fail tracefs-mounted "no tracefs with events/oom on /sys/kernel/tracing"
fi
if [ -r /proc/pressure/memory ] && [ -r /proc/pressure/cpu ] && [ -r /proc/pressure/io ]; then
    vm_pass psi
    vm_info "psi: $(head -n1 /proc/pressure/memory)"
else
    vm_fail psi "/proc/pressure/{memory,cpu,io} not all readable: $(ls /proc/pressure 2>&1)"
fi

# -- pids.max stops a fork bomb in its cgroup
P=$CG/smoke-pids
mkdir -p $P
echo 20 >$P/pids.max
timeout 30 sh -c "echo \$\$ >$P/cgroup.procs && exec forkbomb --max 100 --exit-on-fail" 2>/tmp/forkbomb.err
rc=$?
pmax=$(vm_kv $P/pids.events max)
echo 1 >$P/cgroup.kill
vm_wait_for 5 sh -c "grep -q 'populated 0' $P/cgroup.events"
if [ "$rc" = 1 ] && [ "${pmax:-0}" -ge 1 ] && grep -q 'fork failed after 19 children' /tmp/forkbomb.err; then
    vm_pass pids-max-enforced
else
    vm_fail pids-max-enforced "forkbomb exit=$rc pids.events max=$pmax: $(tail -n 2 /tmp/forkbomb.err | tr '\n' ' ')"
fi
rmdir $P 2>/dev/null || true

# -- inode exhaustion on a tmpfs with nr_inodes
mkdir -p /mnt/tmpfs-inodes
mount -t tmpfs -o nr_inodes=50,size=4M tmpfs /mnt/tmpfs-inodes
out=$(mkfiles /mnt/tmpfs-inodes 2>/dev/null)
ffree=$(stat -f -c %d /mnt/tmpfs-inodes)
case $out in
    "created=49 enospc") vm_pass tmpfs-inodes-enospc ;;   # the root dir uses 1 of 50
    *) vm_fail tmpfs-inodes-enospc "mkfiles said '$out', want 'created=49 enospc' (f_ffree=$ffree)" ;;
esac
umount /mnt/tmpfs-inodes

# -- inode exhaustion on the ext4 virtio disk (mkfs.ext4 -N 128 on the host)
if vm_wait_for 5 test -b /dev/vda && mkdir -p /mnt/disk && mount -t ext4 /dev/vda /mnt/disk; then
    free0=$(stat -f -c %d /mnt/disk)
    out=$(mkfiles /mnt/disk 2>/dev/null)
    free1=$(stat -f -c %d /mnt/disk)
    if [ "$out" = "created=$free0 enospc" ] && [ "$free1" = 0 ]; then
        vm_pass ext4-disk-inodes-enospc
        vm_info "ext4-disk-inodes-enospc: $out, f_ffree $free0 -> $free1"
    else
        vm_fail ext4-disk-inodes-enospc "mkfiles said '$out', f_ffree before=$free0 after=$free1"
    fi
    umount /mnt/disk
else
    vm_fail ext4-disk-inodes-enospc "cannot mount /dev/vda as ext4: $(ls /dev/vd* 2>&1) $(dmesg | tail -n 3 | tr '\n' ' ')"
fi

vm_done
