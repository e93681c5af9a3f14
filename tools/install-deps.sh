#!/usr/bin/env bash
# Install the Debian 12 packages evictd needs to build and test, only those missing (the build
# group is debian/control's Build-Depends, tests/cli/test_deb.sh checks; test adds the .deb tools).
# Usage: tools/install-deps.sh [--check] [build|test|vm|bench|image|arm64|cluster]...
#   --check  report what is missing and exit 1 instead of installing.
set -euo pipefail

build_pkgs=(make gcc clang llvm pkg-config libbpf-dev bpftool libelf-dev zlib1g-dev
	libsystemd-dev libyaml-dev libmicrohttpd-dev libcurl4-openssl-dev libjson-c-dev)
test_pkgs=(libcmocka-dev prometheus libclang-rt-14-dev attr jq e2fsprogs util-linux curl systemd groff-base man-db openssl
	python3 python3-yaml python3-h2 dbus-daemon dpkg-dev debhelper lintian)
vm_pkgs=(qemu-system-x86 busybox-static cpio mmdebstrap kmod e2fsprogs)
bench_pkgs=(earlyoom gnuplot-nox hyperfine jq)
# make image (buildah; no Docker engine), its test in make test (umoci unpacks it), pushing
# it (skopeo); busybox-static is the image's /bin/sh, ca-certificates libcurl's CA bundle.
image_pkgs=(buildah umoci skopeo busybox-static ca-certificates)
# make ARCH=arm64 (a cross build from x86: the libraries' :arm64 packages install beside the
# amd64 ones, Multi-Arch: same), the arm64 image and the aarch64 TCG guest (qemu-system-arm;
# the arm64 kernel, busybox and bpftool are downloaded, not installed: tools/vm/fetch-kernel.sh
# --arch arm64, tools/vm/fetch-arm64-userland.sh).
arm64_pkgs=(gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu libc6-dev:arm64 libbpf-dev:arm64
	libelf-dev:arm64 zlib1g-dev:arm64 libsystemd-dev:arm64 libyaml-dev:arm64 libmicrohttpd-dev:arm64
	libcurl4-openssl-dev:arm64 libjson-c-dev:arm64 libcmocka-dev:arm64 qemu-system-arm)

# The real Kubernetes components of the tests (tests/cluster/build.sh) build from the Go module
# proxy: they need Go >= 1.24 (tests/cluster/kubebin/go.mod). Debian 12's golang-go is 1.19, too
# old, and no Debian 12 package is newer than bookworm-backports' golang-1.23; from 1.21 on the go
# command fetches the toolchain go.mod asks for from the module proxy (GOTOOLCHAIN=auto). So: a
# go on PATH or in /usr/local/go/bin is used as it is; else backports' golang-1.23-go.
cluster_pkgs=(openssl curl jq util-linux)
go_found() {
	command -v go >/dev/null || [ -x /usr/local/go/bin/go ] || [ -x /usr/lib/go-1.23/bin/go ]
}
go_deps() {
	go_found && return 0
	if [ "$check_only" = 1 ]; then
		echo "install-deps: no Go toolchain (go >= 1.21; the tests fetch the one tests/cluster/kubebin/go.mod asks for)" >&2
		return 1
	fi
	[ "$(id -u)" = 0 ] || { echo "install-deps: no Go toolchain: as root, apt-get install -t bookworm-backports golang-1.23-go" >&2; return 1; }
	backports_source || return 1
	echo "install-deps: installing golang-1.23-go from bookworm-backports (tests/cluster/build.sh)" >&2
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
		--no-install-recommends -t bookworm-backports golang-1.23-go >/dev/null
}

# The admission policy's CEL test (tests/cli/test_admission_cel.sh) needs the npm packages
# pinned in tests/admission/package-lock.json, in tests/admission/node_modules (npm ci; no global
# install). It needs Node.js >= 20.19, which Debian 12 does not package (bookworm has 18): without
# it the test skips and says so.
admission_dir="$(cd "$(dirname "$0")/.." && pwd)/tests/admission"
npm_missing() {
	local pkg want have
	for pkg in @marcbachmann/cel-js js-yaml; do
		want=$(sed -n "s|.*\"$pkg\": \"\([^\"]*\)\".*|\1|p" "$admission_dir/package.json")
		have=$(sed -n 's/^ *"version": "\([^"]*\)".*/\1/p' "$admission_dir/node_modules/$pkg/package.json" 2>/dev/null | head -1)
		[ "$want" = "$have" ] || echo "$pkg@$want"
	done
}
npm_deps() {
	local missing
	missing=$(npm_missing | tr "\n" " ")
	[ -z "$missing" ] && return 0
	if [ "$check_only" = 1 ]; then
		echo "install-deps: missing npm packages in $admission_dir: $missing" >&2
		return 1
	fi
	if ! command -v npm >/dev/null; then
		echo "install-deps: no npm: install Node.js >= 20.19 (not a Debian 12 package), then run this again" >&2
		return 0
	fi
	echo "install-deps: npm ci in $admission_dir ($missing)" >&2
	npm ci --prefix "$admission_dir" --no-audit --no-fund --loglevel=error >/dev/null
}

# The guest suite's second kernel (tools/vm/fetch-kernel.sh --kernel 6.12): Debian 12 serves
# linux-image-6.12*-amd64-unsigned from bookworm-security and bookworm-backports. When no apt
# source has it, add backports (deb822, next to the machine's own debian.sources).
backports_file=/etc/apt/sources.list.d/evictd-bookworm-backports.sources
kernel612_source() {
	apt-cache search --names-only '^linux-image-6\.12\.[0-9]+[^-]*-amd64-unsigned$' 2>/dev/null | grep -q . && return 0
	backports_source "the 6.12 guest kernel (linux-image-6.12*-amd64-unsigned)"
}
# backports_source WHAT: bookworm-backports in apt's sources (added when missing, as root).
backports_source() {
	local what=${1:-golang-1.23-go}
	grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/ && return 0
	if [ "$check_only" = 1 ]; then
		echo "install-deps: no apt source serves $what (bookworm-backports)" >&2
		return 1
	fi
	[ "$(id -u)" = 0 ] || { echo "install-deps: add bookworm-backports to apt (as root) for $what" >&2; return 1; }
	echo "install-deps: adding $backports_file for $what" >&2
	printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' >"$backports_file"
	apt-get -o DPkg::Lock::Timeout=900 update -qq
}

check_only=0
want=()
want_kernel612=0
want_npm=0
want_arm64=0
want_go=0
for arg in "$@"; do
	case "$arg" in
	--check) check_only=1 ;;
	build) want+=("${build_pkgs[@]}") ;;
	test) want+=("${build_pkgs[@]}" "${test_pkgs[@]}"); want_npm=1 ;;
	vm) want+=("${vm_pkgs[@]}"); want_kernel612=1 ;;
	bench) want+=("${bench_pkgs[@]}") ;;
	image) want+=("${image_pkgs[@]}") ;;
	arm64) want+=("${arm64_pkgs[@]}"); want_arm64=1 ;;
	cluster) want+=("${cluster_pkgs[@]}"); want_go=1 ;;
	-h|--help) sed -n '2,4p' "$0"; exit 0 ;;
	*) echo "install-deps: unknown argument '$arg' (expected --check, build, test, vm, bench, image, arm64 or cluster)" >&2; exit 2 ;;
	esac
done
[ ${#want[@]} -gt 0 ] || want=("${build_pkgs[@]}")

missing=()
for pkg in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
extra_rc=0
if [ "$want_kernel612" = 1 ]; then
	kernel612_source || extra_rc=1
fi
if [ "$want_go" = 1 ]; then
	go_deps || extra_rc=1
fi
if [ ${#missing[@]} -eq 0 ]; then
	[ "$want_npm" = 1 ] && { npm_deps || extra_rc=1; }
	exit $extra_rc
fi

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
# The :arm64 packages exist for apt only once dpkg knows the architecture.
if [ "$want_arm64" = 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
	echo "install-deps: dpkg --add-architecture arm64" >&2
	dpkg --add-architecture arm64
fi
# Another apt (unattended-upgrades on a fresh machine, a second make) may hold dpkg's lock:
# wait for it rather than fail the build (apt.conf(5) DPkg::Lock::Timeout, seconds).
apt_wait=(-o DPkg::Lock::Timeout=900)
apt-get "${apt_wait[@]}" update -qq
apt-get "${apt_wait[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
[ "$want_npm" = 1 ] && npm_deps
exit 0
