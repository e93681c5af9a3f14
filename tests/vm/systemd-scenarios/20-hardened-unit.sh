#!/bin/sh
# 20-hardened-unit: the shipped tools/deploy/evictd.service and evictd.socket, unchanged but
# for ExecStart's path and EVICTD_ARGS, run evictd with BPF under every hardening setting
# (doc/DESIGN.md "The systemd unit"): it starts (Type=notify), loads and pins its BPF programs
# (bpf() only, /sys/fs/bpf bound writable under ProtectKernelTunables=), answers evictctl on
# its control socket, serves /metrics on the socket systemd passed although it has no network
# of its own, sees the workloads' processes (ProtectProc=invisible) and kills a workload
# through cgroup.kill; `systemd-analyze security` rates the running unit at most 1.9; its event
# loop (the main thread) runs SCHED_FIFO 1 as the unit sets it, its other threads do not.
# vm-mem: 1024M
# vm-timeout: 240
# vm-bins: evictd evictctl
# vm-add: tools/deploy/evictd.service:/usr/lib/evictd-vm/evictd.service
# vm-add: tools/deploy/evictd.socket:/usr/lib/evictd-vm/evictd.socket
# vm-expect: unit-installed evictd-active bpf-attached pins-written evictctl-status
# vm-expect: metrics-via-socket no-host-network loop-fifo workload-killed exposure
. /usr/lib/evictd-vm/vm-lib.sh
export SYSTEMD_COLORS=0 SYSTEMD_PAGER=cat
SLICE=evictd-hard.slice
WROOT=/sys/fs/cgroup/evictd.slice/$SLICE

mkdir -p /run/systemd/system
sed 's#^ExecStart=/usr/sbin/evictd#ExecStart=/usr/bin/evictd#' /usr/lib/evictd-vm/evictd.service \
    >/run/systemd/system/evictd.service
cp /usr/lib/evictd-vm/evictd.socket /run/systemd/system/
# A hard threshold always crossed: the workload below is evicted once it runs.
mkdir -p /etc/default
echo "EVICTD_ARGS=--eviction-hard=memory.available<64Gi --workload-root=$WROOT" >/etc/default/evictd
systemctl daemon-reload
# A workload (its cgroup is the workload root's child) whose process runs as another user:
# evictd must see it (CAP_SYS_PTRACE under ProtectProc=invisible) and kill its cgroup.
systemd-run --quiet --unit=wl-hard --slice=$SLICE --service-type=exec -p User=nobody sleep 600
vm_check unit-installed systemctl cat evictd.service evictd.socket

if systemctl start evictd.service && vm_wait_for 20 sh -c 'systemctl is-active evictd.service | grep -qx active'; then
    vm_pass evictd-active
else
    vm_fail evictd-active "$(systemctl status evictd --no-pager 2>&1 | tail -n 15 | tr '\n' ' ')"
fi
st=$(evictctl --socket /run/evictd/evictd.sock --json status 2>&1)
vm_info "evictctl status: $(echo "$st" | tr -d '\n' | cut -c1-600)"
if echo "$st" | grep -q '"can_evict": *true'; then vm_pass evictctl-status; else
    vm_fail evictctl-status "$st"; fi
if echo "$st" | grep -Eq '"programs_attached": *[1-9]'; then
    vm_pass bpf-attached
else
    vm_fail bpf-attached "$(journalctl -u evictd --no-pager | grep -i bpf | tail -n 5 | tr '\n' ' ')"
fi
if [ -n "$(ls /sys/fs/bpf/evictd 2>/dev/null)" ]; then vm_pass pins-written; else
    vm_fail pins-written "/sys/fs/bpf/evictd: $(ls -la /sys/fs/bpf 2>&1 | tr '\n' ' ') $(journalctl -u evictd --no-pager | grep -i pin | tail -n 3 | tr '\n' ' ')"; fi

# /metrics from the host's network namespace, on the socket systemd holds.
m=$(timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/9808; printf "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n" >&3; cat <&3' 2>&1)
if echo "$m" | grep -q '^evictd_build_info'; then vm_pass metrics-via-socket; else
    vm_fail metrics-via-socket "$(echo "$m" | head -n 5 | tr '\n' ' ') $(journalctl -u evictd --no-pager | grep metrics | tr '\n' ' ')"; fi
pid=$(systemctl show -p MainPID --value evictd.service)
if [ "$(readlink /proc/$pid/ns/net)" != "$(readlink /proc/1/ns/net)" ]; then vm_pass no-host-network; else
    vm_fail no-host-network "evictd shares pid 1's network namespace"; fi
# /proc/PID/task/TID/stat: field 40 rt_priority, 41 policy (1 = SCHED_FIFO, 0 = SCHED_OTHER).
sched_of() { awk '{ print $41 "/" $40 }' "/proc/$pid/task/$1/stat"; }
others=$(for t in /proc/$pid/task/*; do t=${t##*/}; [ "$t" = "$pid" ] || sched_of "$t"; done | sort -u | tr '\n' ' ')
if [ "$(sched_of "$pid")" = 1/1 ] && [ -n "$others" ] && ! echo "$others" | grep -q '^1/\| 1/' &&
    journalctl -u evictd --no-pager | grep -q 'the event loop runs SCHED_FIFO at priority 1, as it was started$'; then
    vm_pass loop-fifo
    vm_info "main thread $(sched_of "$pid") (policy/rt_priority), other threads: $others"
else
    vm_fail loop-fifo "main $(sched_of "$pid"), others: ${others:-none}; $(journalctl -u evictd --no-pager | grep -i 'event loop runs' | tail -n 2 | tr '\n' ' ')"
fi

if vm_wait_for 30 sh -c '! systemctl is-active wl-hard.service | grep -qx active'; then
    vm_pass workload-killed
    vm_info "$(journalctl -u evictd --no-pager | grep -iE 'evict|kill' | tail -n 3 | tr '\n' ' ')"
else
    vm_fail workload-killed "$(journalctl -u evictd --no-pager | tail -n 10 | tr '\n' ' ')"
fi
journalctl -u evictd --no-pager | grep -iE 'warn|error|denied|not permitted' | tail -n 20 | sed 's/^/EVICTD-VM: INFO evictd: /'

out=$(systemd-analyze security evictd.service --no-pager 2>&1 | tail -n 1)
vm_info "$out"
if systemd-analyze security --threshold=19 evictd.service >/dev/null 2>&1; then vm_pass exposure; else
    vm_fail exposure "$out"; fi
