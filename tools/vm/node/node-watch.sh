#!/bin/sh
# node-watch.sh - the guest node's markers, and its switches (node-watch.service). The host
# cannot reach the guest (qemu's user network forwards only guest -> host), so the host asks
# through annotations on the Node, read with the node's own credentials (which may read their
# own Node):
#   'EVICTD-VM: node Ready' on the console once the kubelet has registered the Node and it is
#   Ready;
#   evictd.test/metrics=TOKEN (a new TOKEN each time): evictd's /metrics, as a scraper on the
#   node reads it (the DaemonSet's --metrics-address, port 9808 on the node's network), on the
#   pod-logs port (ttyS2), each line prefixed 'evictd-metrics/TOKEN ', then
#   'evictd-metrics/TOKEN end';
#   evictd.test/poweroff=1: the guest powers off.
. /etc/evictd-node/env
kc() { timeout 60 /usr/local/bin/kubebin kubectl --kubeconfig /etc/evictd-node/kubelet.kubeconfig "$@" 2>/dev/null; }
ready=0 metrics_done=""
while :; do
    out=$(kc get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}|{.metadata.annotations.evictd\.test/metrics}|{.metadata.annotations.evictd\.test/poweroff}')
    ready_now=${out%%|*} rest=${out#*|}
    token=${rest%%|*} poweroff=${rest#*|}
    case $ready_now in
        True) [ $ready = 1 ] || { ready=1; echo "EVICTD-VM: node Ready uptime=$(cut -d' ' -f1 /proc/uptime)" >/dev/console; } ;;
    esac
    if [ -n "$token" ] && [ "$token" != "$metrics_done" ]; then
        metrics_done=$token
        # bash's /dev/tcp (the root has no curl; its busybox wget died with SIGSEGV here)
        { timeout 20 bash -c 'exec 5<>/dev/tcp/127.0.0.1/9808 &&
            printf "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" >&5 && cat <&5' 2>&1 |
            tr -d '\r' | sed '1,/^$/d'; echo end; } |
            sed "s|^|evictd-metrics/$token |" >/dev/ttyS2
    fi
    case $poweroff in
        1) echo "EVICTD-VM: node poweroff asked" >/dev/console; systemctl --no-block poweroff; exit 0 ;;
    esac
    sleep 5
done
