#!/bin/sh
# memsampler.sh OUT THRESHOLD_BYTES STOPFILE [INTERVAL_S]
#
# Samples the kubelet's memory.available (MemTotal - (anon + file - inactive_file) of the
# root memory.stat, as evictd computes it) and /proc/meminfo MemAvailable every INTERVAL_S
# (default 0.01) until STOPFILE exists, using shell builtins only (no fork per sample, so it
# costs little CPU even under TCG).  Then writes one line to OUT:
#   samples=N first_below=UPTIME|none min_avail=BYTES min_at=UPTIME min_memavailable=BYTES start=UPTIME end=UPTIME
# first_below is the /proc/uptime (10 ms resolution) of the first sample under THRESHOLD_BYTES.
out=$1 thr=$2 stop=$3 iv=${4:-0.01}
stat=/sys/fs/cgroup/memory.stat
mt=0
while read -r k v _; do
    if [ "$k" = MemTotal: ]; then mt=$((v * 1024)); break; fi
done </proc/meminfo
fifo=/tmp/memsampler.$$.fifo
mkfifo "$fifo" && exec 3<>"$fifo" && rm -f "$fifo"
n=0 first=none min=-1 minat=0 minma=-1 a=0 f=0 i=0 ma=0
read -r start _ </proc/uptime
while [ ! -e "$stop" ]; do
    read -r up _ </proc/uptime
    while read -r k v; do
        case $k in
            anon) a=$v ;;
            file) f=$v ;;
            inactive_file) i=$v; break ;;
        esac
    done <"$stat"
    while read -r k v _; do
        if [ "$k" = MemAvailable: ]; then ma=$((v * 1024)); break; fi
    done </proc/meminfo
    ws=$((a + f - i))
    [ $ws -lt 0 ] && ws=0
    av=$((mt - ws))
    n=$((n + 1))
    if [ $min -lt 0 ] || [ $av -lt $min ]; then min=$av; minat=$up; fi
    if [ $minma -lt 0 ] || [ $ma -lt $minma ]; then minma=$ma; fi
    if [ "$first" = none ] && [ $av -lt "$thr" ]; then first=$up; fi
    read -r -t "$iv" _ <&3
done
read -r end _ </proc/uptime
echo "samples=$n first_below=$first min_avail=$min min_at=$minat min_memavailable=$minma start=$start end=$end" >"$out.tmp"
mv "$out.tmp" "$out"
