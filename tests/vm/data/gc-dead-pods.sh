#!/bin/sh
# gc-dead-pods.sh [KUBELET_DIR] - what the kubelet does after an eviction, as an evictd
# --reclaim-command: remove KUBELET_DIR/pods/<uid> (volumes, logs) of every pod whose cgroup
# is gone or has no process left.  Prints one line per removed pod.
dir=${1:-/var/lib/kubelet}
cg=/sys/fs/cgroup
for p in "$dir"/pods/*/; do
    [ -d "$p" ] || continue
    uid=$(basename "$p")
    uidu=$(echo "$uid" | tr - _)
    live=0
    for c in $(find $cg/kubepods.slice $cg/kubepods -maxdepth 3 -type d \( -name "*pod$uidu.slice" -o -name "pod$uid" \) 2>/dev/null); do
        grep -q '^populated 1' "$c/cgroup.events" && live=1
    done
    [ $live = 1 ] && continue
    n=$(find "$p" | wc -l)
    rm -rf "$p" && echo "gc-dead-pods: removed $p ($n inodes)"
done
exit 0
