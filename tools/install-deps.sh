#!/usr/bin/env bash
# Install the Debian 12 packages evictd needs to build and test, only those missing.
# Usage: tools/install-deps.sh [--check] [build|test|vm|bench|image]...
#   --check  report what is missing and exit 1 instead of installing.
set -euo pipefail

build_pkgs=(make gcc clang llvm pkg-config libbpf-dev bpftool libelf-dev zlib1g-dev
	libsystemd-dev libyaml-dev libmicrohttpd-dev libcurl4-openssl-dev libjson-c-dev)
test_pkgs=(libcmocka-dev libclang-rt-14-dev attr jq e2fsprogs util-linux curl systemd groff-base man-db openssl python3
	dbus-daemon)
vm_pkgs=(qemu-system-x86 busybox-static cpio mmdebstrap kmod e2fsprogs)
bench_pkgs=(earlyoom gnuplot-nox hyperfine jq)
# make image (buildah; no Docker engine), its test in make test (umoci unpacks it), pushing
# it (skopeo); busybox-static is the image's /bin/sh, ca-certificates libcurl's CA bundle.
image_pkgs=(buildah umoci skopeo busybox-static ca-certificates)

check_only=0
want=()
for arg in "$@"; do
	case "$arg" in
	--check) check_only=1 ;;
	build) want+=("${build_pkgs[@]}") ;;
	test) want+=("${build_pkgs[@]}" "${test_pkgs[@]}") ;;
	vm) want+=("${vm_pkgs[@]}") ;;
	bench) want+=("${bench_pkgs[@]}") ;;
	image) want+=("${image_pkgs[@]}") ;;
	-h|--help) sed -n '2,4p' "$0"; exit 0 ;;
	*) echo "install-deps: unknown argument '$arg' (expected --check, build, test, vm, bench or image)" >&2; exit 2 ;;
	esac
done
[ ${#want[@]} -gt 0 ] || want=("${build_pkgs[@]}")

missing=()
for pkg in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$check_only" = 1 ]; then
	echo "install-deps: missing packages: ${missing[*]}" >&2
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}; run as root or: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
