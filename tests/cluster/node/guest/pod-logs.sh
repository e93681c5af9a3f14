#!/bin/sh
# pod-logs.sh - evictd's container log on the console (EVICTD-LOG: lines): the API server
# cannot reach this kubelet (qemu's user network forwards only guest -> host), so
# `kubectl logs` does not work; the host reads the serial log instead.
while :; do
    for f in /var/log/pods/evictd-system_evictd-*/evictd/*.log; do
        [ -f "$f" ] && exec tail -n +1 -F "$f" | sed -u 's/^/EVICTD-LOG: /' >/dev/console
    done
    sleep 2
done
