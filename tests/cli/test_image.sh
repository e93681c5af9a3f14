#!/usr/bin/env bash
# The OCI image `make image` builds (build/evictd-image.tar): an image index with linux/amd64
# and linux/arm64 images; this machine's platform selected (skopeo) and unpacked with umoci, as
# a runtime would, and run from inside it with chroot; the arm64 one checked as files (aarch64
# ELF binaries, their loader and libraries there); so the image is known to work: evictd
# --version and --validate (the shipped ConfigMap's configuration, and the DaemonSet's pin dir
# on the host's bpffs), the daemon itself for a moment (BPF attached, evictctl status, SIGTERM),
# the shell the reclaim steps use. The image holds exactly the libraries the loader resolves
# for the two binaries; one library taken away breaks the start. About 1 s.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
# expect NAME RC OUTPUT: passes when RC is 0, else fails showing OUTPUT.
expect() { if [ "$2" -eq 0 ]; then pass "$1"; else fail "$1" "$3"; fi; }
archive=${IMAGE_ARCHIVE:-$BUILD_DIR/evictd-image.tar}
configmap=tools/deploy/configmap.yaml

if [ "$(id -u)" != 0 ]; then
	pass "image test # SKIP chroot and umoci unpack need root"
	done_testing; exit
fi
for tool in umoci skopeo jq unshare readelf; do
	command -v "$tool" >/dev/null || { fail "$tool is installed (tools/install-deps.sh image test)"; done_testing; exit; }
done
if [ ! -f "$archive" ]; then
	fail "$archive exists (make image)"
	done_testing; exit
fi
tmp=$(mktemp -d /tmp/evictd-image-XXXXXX)
# The /sys and /proc mounts below live in a private mount namespace: nothing to unmount.
trap 'rm -rf "$tmp"; [ -n "${pin:-}" ] && rm -rf "$pin"' EXIT
start=$(date +%s%N)

# ---- the index: one image per platform ------------------------------------------------------
mkdir -p "$tmp/layout"
tar -xf "$archive" -C "$tmp/layout"
tag=$(jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"] // empty' "$tmp/layout/index.json")
version=$("$EVICTD" --version | sed -n 's/^evictd //p')
check "the archive is an OCI layout tagged with the binary's version ($tag = $version)" [ -n "$tag" -a "$tag" = "$version" ]
blob() { echo "$tmp/layout/blobs/$(sed 's#:#/#' <<<"$1")"; }
top=$(jq -r '.manifests[0] | .mediaType + " " + .digest' "$tmp/layout/index.json")
check "the tag names an OCI image index ($top)" [ "${top%% *}" = application/vnd.oci.image.index.v1+json ]
list=$(blob "${top#* }")
platforms=$(jq -r '[.manifests[].platform | .os + "/" + .architecture] | sort | join(" ")' "$list" 2>/dev/null)
check "the index holds linux/amd64 and linux/arm64 ($platforms)" [ "$platforms" = "linux/amd64 linux/arm64" ]
# Each platform's image config says the same platform (what docker/containerd check on pull).
for arch in amd64 arm64; do
	manifest=$(jq -r --arg a "$arch" '.manifests[] | select(.platform.architecture == $a) | .digest' "$list" 2>/dev/null)
	config=$(jq -r '.config.digest' "$(blob "$manifest")" 2>/dev/null)
	platform=$(jq -r '.os + "/" + .architecture' "$(blob "$config")" 2>/dev/null)
	check "the linux/$arch image's config is for linux/$arch ($platform)" [ "$platform" = "linux/$arch" ]
done

# ---- unpack as a runtime would: the image for this machine's platform -------------------------
want=$(dpkg --print-architecture 2>/dev/null || uname -m)
unpack() { # unpack ARCH DIR: select the platform's image (skopeo), unpack it (umoci)
	skopeo copy --quiet --override-os linux --override-arch "$1" "oci-archive:$archive:$tag" \
		"oci:$tmp/layout-$1:$tag" && umoci unpack --image "$tmp/layout-$1:$tag" "$2"
}
out=$(unpack "$want" "$tmp/bundle" 2>&1); rc=$?
[ -x "$tmp/bundle/rootfs/usr/sbin/evictd" ] || rc=1
expect "umoci unpacks the linux/$want image" $rc "$out"
rootfs=$tmp/bundle/rootfs
args=$(jq -c '.process.args' "$tmp/bundle/config.json" 2>/dev/null)
check "the entrypoint is /usr/sbin/evictd ($args)" [ "$args" = '["/usr/sbin/evictd"]' ]

# ---- the arm64 image, which this host cannot run: aarch64 binaries, loader and libraries ------
out=$(unpack arm64 "$tmp/bundle-arm64" 2>&1); rc=$?
expect "umoci unpacks the linux/arm64 image" $rc "$out"
arm=$tmp/bundle-arm64/rootfs
for binary in usr/sbin/evictd usr/sbin/evictctl bin/busybox; do
	machine=$(LC_ALL=C readelf -h "$arm/$binary" 2>/dev/null | sed -n 's/^ *Machine: *//p')
	check "the arm64 image's /$binary is an AArch64 ELF ($machine)" [ "$machine" = AArch64 ]
done
# Every DT_NEEDED of every ELF there is in the image's /lib/aarch64-linux-gnu, and the loader
# evictd asks for is in the image: what ld.so would find on a Graviton node.
interp=$(LC_ALL=C readelf -l "$arm/usr/sbin/evictd" | sed -n 's/.*interpreter: \(.*\)\]/\1/p')
check "the arm64 image has evictd's loader ($interp)" [ -n "$interp" -a -f "$arm$interp" ]
unresolved=$(cd "$arm" && for f in usr/sbin/evictd usr/sbin/evictctl lib/aarch64-linux-gnu/*; do
	LC_ALL=C readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; done | sort -u |
	while read -r so; do [ -e "lib/aarch64-linux-gnu/$so" ] || [ "/$so" = "$interp" ] ||
		[ "$so" = "$(basename "$interp")" ] || echo "$so"; done | tr '\n' ' ')
check "every library the arm64 binaries need is in the arm64 image (missing: $unresolved)" [ -z "$unresolved" ]

# ---- run from inside it -------------------------------------------------------------------
in_image() { chroot "$rootfs" "$@"; }
out=$(in_image /usr/sbin/evictd --version 2>&1); rc=$?
check "evictd --version runs inside the image ($out)" [ $rc -eq 0 -a "$out" = "evictd $version" ]
out=$(in_image /usr/sbin/evictctl --help 2>&1); rc=$?
grep -q status <<<"$out" || rc=1
expect "evictctl --help runs inside the image" $rc "$out"

# The ConfigMap's config.yaml (a literal block under data:), validated inside the image.
mkdir -p "$rootfs/etc/evictd"
awk '/^  config.yaml: \|/ { on = 1; next } on && /^    / { print substr($0, 5); next }
	on && /^[^ ]/ { on = 0 } on && /^$/ { print "" }' "$configmap" > "$rootfs/etc/evictd/config.yaml"
check "the ConfigMap holds a config.yaml" [ -s "$rootfs/etc/evictd/config.yaml" ]
out=$(in_image /usr/sbin/evictd --validate --no-bpf --config /etc/evictd/config.yaml 2>&1); rc=$?
expect "evictd --validate accepts the shipped ConfigMap inside the image" $rc "$out"
grep -q '^hard memory.available<500Mi' <<<"$out"
expect "--validate inside the image prints the ConfigMap's thresholds" $? "$out"
# The DaemonSet's pin dir is checked against a real bpffs: /sys bound in a private mount
# namespace, as the pod sees it.
out=$(unshare -m sh -c "mkdir -p '$rootfs/sys' '$rootfs/proc' && mount --rbind /sys '$rootfs/sys' &&
	mount -t proc proc '$rootfs/proc' && chroot '$rootfs' /usr/sbin/evictd --validate \
	--config /etc/evictd/config.yaml --bpf-pin-dir=/sys/fs/bpf/evictd" 2>&1); rc=$?
if ! mountpoint -q /sys/fs/bpf && ! grep -q ' /sys/fs/bpf bpf ' /proc/mounts; then
	pass "--validate with the host's /sys # SKIP no bpffs on /sys/fs/bpf on this host"
else
	expect "evictd --validate with the DaemonSet's pin dir, /sys from the host" $rc "$out"
fi
# The daemon itself, from the image, as the pod runs it: the host's /sys (bpffs, cgroups, BTF
# through sysfs: no BTF volume) and /proc, in a private mount namespace; the ConfigMap's
# configuration; its own pin dir, state and socket in the bundle's /tmp; no metrics port, no API.
# Up until it says it runs (at most 20 s), then SIGTERM; evictctl from the image asks it.
pin="/sys/fs/bpf/evictd-image-test-$$"
unshare -m sh -c "mkdir -p '$rootfs/sys' '$rootfs/proc' && mount --rbind /sys '$rootfs/sys' &&
	mount -t proc proc '$rootfs/proc' && exec chroot '$rootfs' /usr/sbin/evictd --dry-run \
	--config /etc/evictd/config.yaml --kube-api=off --state-dir=/tmp --bpf-pin-dir=$pin \
	--control-socket=/tmp/evictd.sock --metrics-address=off --event-log=off" >"$tmp/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 200); do
	grep -q 'evictd running' "$tmp/daemon.log" && break
	kill -0 $daemon 2>/dev/null || break
	sleep 0.1
done
grep -q 'evictd running' "$tmp/daemon.log"
expect "evictd starts from the image as a daemon" $? "$(tail -20 "$tmp/daemon.log")"
out=$(in_image /usr/sbin/evictctl --socket /tmp/evictd.sock status 2>&1); rc=$?
grep -q 'DRY RUN' <<<"$out" || rc=1
expect "evictctl from the image talks to it (evictctl status)" $rc "$out"
if grep -q 'BPF on:' "$tmp/daemon.log"; then
	pass "evictd in the image loads and attaches its BPF programs ($(grep -o 'BPF on: [0-9]* [a-z]*' "$tmp/daemon.log"))"
else
	pass "BPF from the image # SKIP this kernel or sandbox refuses BPF: $(grep -m1 -i 'bpf' "$tmp/daemon.log")"
fi
kill -TERM $daemon 2>/dev/null
# A daemon that ignores SIGTERM must not hang the suite: SIGKILL after 10 s.
( sleep 10; kill -KILL $daemon 2>/dev/null ) & watchdog=$!
wait $daemon; rc=$?
kill $watchdog 2>/dev/null; wait $watchdog 2>/dev/null
expect "it exits 0 on SIGTERM" $rc "$(tail -5 "$tmp/daemon.log")"
rm -rf "$pin"

out=$(in_image /bin/sh -c 'printf "a\nb\n" | xargs -r echo' 2>&1)
check "the reclaim steps' shell and xargs run inside the image ($out)" [ "$out" = "a b" ]
check "libcurl's CA bundle is in the image" [ -s "$rootfs/etc/ssl/certs/ca-certificates.crt" ]

# ---- exactly the libraries the loader resolves -----------------------------------------------
loader=$(cd "$rootfs" && ls lib64/ld-linux-*.so.* 2>/dev/null | head -1)
needed=$(for binary in /usr/sbin/evictd /usr/sbin/evictctl; do
	in_image "/$loader" --list "$binary"; done 2>&1)
! grep -q 'not found' <<<"$needed"
expect "every library resolves inside the image" $? "$(grep 'not found' <<<"$needed")"
resolved=$( (awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$needed"; echo "/$loader") | sort -u)
shipped=$(cd "$rootfs" && find . \( -name '*.so' -o -name '*.so.*' \) ! -type d | sed 's#^\.##' | sort -u)
extra=$(comm -13 <(echo "$resolved") <(echo "$shipped") | tr '\n' ' ')
missing=$(comm -23 <(echo "$resolved") <(echo "$shipped") | tr '\n' ' ')
check "the image ships no library the binaries do not load (extra: $extra)" [ -z "$extra" ]
check "the image ships every library the binaries load (missing: $missing)" [ -z "$missing" ]

# ---- the check has teeth: one library fewer and evictd does not start ----------------------
victim=$(grep -m1 libyaml <<<"$shipped")
rm -f "$rootfs$victim"
out=$(in_image /usr/sbin/evictd --version 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q libyaml <<<"$out"
expect "without $victim, evictd --version fails inside the image" $? "rc=$rc $out"

echo "# image test took $(( ($(date +%s%N) - start) / 1000000 )) ms; archive $(du -h "$archive" | cut -f1)"
done_testing
