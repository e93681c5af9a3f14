#!/bin/sh
# pidsampler.sh OUT THRESHOLD STOPFILE [INTERVAL_S]
#
# Samples the kubelet's pid.available (min(kernel.pid_max, kernel.threads-max) - the number
# of tasks, /proc/loadavg's 4th field after the '/') every INTERVAL_S (default 0.01) until
# STOPFILE exists, with shell builtins only.  Then writes one line to OUT, in memsampler.sh's
# format (min_memavailable is always -1):
#   samples=N first_below=UPTIME|none min_avail=TASKS min_at=UPTIME min_memavailable=-1 start=UPTIME end=UPTIME
out=$1 thr=$2 stop=$3 iv=${4:-0.01}
# not 'read' from /proc/sys: the shell reads byte by byte and an int sysctl reads as EOF at any
# offset but 0, so 'read' would get "2" out of "2000"
pm=$(cat /proc/sys/kernel/pid_max)
tm=$(cat /proc/sys/kernel/threads-max)
lim=$pm
[ "$tm" -lt "$lim" ] && lim=$tm
fifo=/tmp/pidsampler.$$.fifo
mkfifo "$fifo" && exec 3<>"$fifo" && rm -f "$fifo"
n=0 first=none min=-1 minat=0
read -r start _ </proc/uptime
while [ ! -e "$stop" ]; do
    read -r up _ </proc/uptime
    read -r _ _ _ rt _ </proc/loadavg
    av=$((lim - ${rt#*/}))
    n=$((n + 1))
    if [ $min -lt 0 ] || [ $av -lt $min ]; then min=$av; minat=$up; fi
    if [ "$first" = none ] && [ $av -lt "$thr" ]; then first=$up; fi
    read -r -t "$iv" _ <&3
done
read -r end _ </proc/uptime
echo "samples=$n first_below=$first min_avail=$min min_at=$minat min_memavailable=-1 start=$start end=$end" >"$out.tmp"
mv "$out.tmp" "$out"
