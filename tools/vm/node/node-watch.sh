#!/bin/sh
# node-watch.sh - the guest node's markers, and its power switch (node-watch.service).
# Prints 'EVICTD-VM: node Ready' once the kubelet has registered the Node and it is Ready
# (read with the node's own credentials, which may read their own Node), and powers the guest
# off when the host's test annotates the Node evictd.test/poweroff=1: the host cannot reach
# the guest (qemu's user network forwards only guest -> host).
. /etc/evictd-node/env
kc() { timeout 60 /usr/local/bin/kubebin kubectl --kubeconfig /etc/evictd-node/kubelet.kubeconfig "$@" 2>/dev/null; }
ready=0
while :; do
    out=$(kc get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status} {.metadata.annotations.evictd\.test/poweroff}')
    case $out in
        "True "*) [ $ready = 1 ] || { ready=1; echo "EVICTD-VM: node Ready uptime=$(cut -d' ' -f1 /proc/uptime)" >/dev/console; } ;;
    esac
    case $out in
        *" 1") echo "EVICTD-VM: node poweroff asked" >/dev/console; systemctl --no-block poweroff; exit 0 ;;
    esac
    sleep 5
done
