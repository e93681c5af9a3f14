#!/bin/sh
# node-logs.sh - the node's container logs, live, on the guest's third serial port (ttyS2; the
# host's pod-logs.log): the API server cannot reach this kubelet for `kubectl logs` (qemu's
# user network forwards guest -> host only). Each line is prefixed with
# NAMESPACE_POD_UID/CONTAINER/N.log's path below /var/log/pods.
followed=" "
while :; do
    for f in /var/log/pods/*/*/*.log; do
        [ -f "$f" ] || continue
        case $followed in *" $f "*) continue ;; esac
        followed="$followed$f "
        p=${f#/var/log/pods/}
        tail -n +1 -F "$f" 2>/dev/null | sed -u "s|^|$p |" >/dev/ttyS2 &
    done
    sleep 2
done
