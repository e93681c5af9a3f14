#!/bin/bash
# node-sampler.sh - memory.available as the kubelet computes it, every SAMPLER_INTERVAL seconds
# (/etc/evictd-node/env; unset: not at all), on the guest's fourth serial port (ttyS3, the
# host's sampler.log), for the node race bench (tools/bench/node-race.sh). One line a sample:
#   S REALTIME AVAILABLE MEMAVAILABLE OOM_KILLS
# REALTIME: the guest's CLOCK_REALTIME (bash's EPOCHREALTIME, seconds with microseconds);
# AVAILABLE: bytes, MemTotal - (anon + file - inactive_file) of the root cgroup's memory.stat:
# the kubelet's memory.available on cgroup v2 (its capacity is MemTotal; the root has no
# memory.current, so usage is anon + file: doc/DESIGN.md §1, user/signals/signals.c);
# MEMAVAILABLE: /proc/meminfo's, bytes; OOM_KILLS: /proc/vmstat oom_kill (kernel OOM kills so far).
# Bash builtins only between samples (no fork): the loop itself costs the guest little.
. /etc/evictd-node/env
[ -n "${SAMPLER_INTERVAL:-}" ] || exit 0
exec >/dev/ttyS3
memtotal=0
while read -r k v _; do [ "$k" = MemTotal: ] && memtotal=$((v * 1024)); done </proc/meminfo
fifo=/run/node-sampler.fifo
rm -f "$fifo"; mkfifo "$fifo"; exec 3<>"$fifo"
while :; do
    anon=0 file=0 inactive=0 memavail=0 oom=0
    while read -r k v; do
        case $k in anon) anon=$v ;; file) file=$v ;; inactive_file) inactive=$v ;; esac
    done </sys/fs/cgroup/memory.stat
    while read -r k v _; do
        case $k in MemAvailable:) memavail=$((v * 1024)); break ;; esac
    done </proc/meminfo
    while read -r k v; do
        case $k in oom_kill) oom=$v; break ;; esac
    done </proc/vmstat
    echo "S $EPOCHREALTIME $((memtotal - (anon + file - inactive))) $memavail $oom"
    read -r -t "$SAMPLER_INTERVAL" -u 3 _
done
