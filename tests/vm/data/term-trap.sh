#!/bin/sh
# term-trap.sh LOG MIB - a pod's main process for the soft-eviction scenario: holds MIB MiB
# (memhog, started with SIGTERM ignored, so the memory stays until the SIGKILL) and appends
# "TERM <uptime>" to LOG when SIGTERM arrives, then goes on running (a slow shutdown that
# only cgroup.kill ends).  Writes "READY <uptime>" once memhog holds the memory.  Its loops
# use shell builtins only (no fork, no allocation), so that the pod does nothing that could
# wake evictd: evictd must find the end of the grace period by itself.
log=$1 mib=$2
fifo=/tmp/term-trap.$$.fifo
mkfifo "$fifo" && exec 3<>"$fifo" && rm -f "$fifo"
trap '' TERM
memhog --max "$mib" --quiet 2>"$log.memhog" &
trap 'read -r _up _ </proc/uptime; echo "TERM $_up" >>"$log"' TERM
ready=0
while [ $ready = 0 ]; do
    while read -r l; do case $l in *reached*) ready=1 ;; esac; done <"$log.memhog"
    read -r -t 0.05 _ <&3
done
read -r up _ </proc/uptime
echo "READY $up" >>"$log"
while :; do read -r -t 1 _ <&3; done
