#!/bin/sh
# node-images.sh - import the node disk's OCI archives into containerd's k8s.io namespace (the
# CRI's): no registry anywhere; the names come from the io.containerd.image.name annotation.
set -eu
for f in /node/images/*.tar; do
    ctr -n k8s.io images import "$f" >/dev/console 2>&1 \
        || { echo "EVICTD-NODE: image import failed: $f" >/dev/console; exit 1; }
done
echo "EVICTD-NODE: images $(ctr -n k8s.io images ls -q | tr '\n' ' ') uptime=$(cut -d' ' -f1 /proc/uptime)" >/dev/console
