#!/bin/sh
# node-images.sh - import the node disk's image archives into containerd's k8s.io namespace
# (no registry in the tests; node-images.service, after containerd). /node/images/list has one
# "ARCHIVE [BASE-NAME]" a line: an archive whose index names its image
# (io.containerd.image.name) needs no base name; one that has only a tag
# (org.opencontainers.image.ref.name, buildah's) gets BASE-NAME:TAG.
set -eu
while read -r f base; do
    [ -n "$f" ] || continue
    ctr -n k8s.io images import ${base:+--base-name "$base"} "/node/images/$f" >/dev/null
done </node/images/list
ctr -n k8s.io images ls -q | sed 's/^/EVICTD-VM: image /' >/dev/console
