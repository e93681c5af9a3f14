#!/usr/bin/env bash
# Build the real Kubernetes components and etcd (tests/cluster/kubebin: the versions its go.mod
# pins) from the Go module proxy into a cache outside the repository, and print the binary's
# path. The binary is keyed by the hash of the module's sources, so a machine's second run
# reuses it; Go's module and build caches (GOMODCACHE, GOCACHE) stay where `go env` puts them
# (outside the repository), so a changed source is a warm rebuild.
#
#   tests/cluster/build.sh            build if needed, print the path (stdout), progress on stderr
#   tests/cluster/build.sh --path     print the path it would have, build nothing
#   KUBEBIN_CACHE=DIR                 where the binaries go (default ~/.cache/evictd-kube)
#   KUBEBIN_JOBS=N                    go build -p N (default: Go's, the number of CPUs)
#
# The time of each build is appended to $KUBEBIN_CACHE/build-times.log (cold or warm, seconds).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$here/kubebin
cache=${KUBEBIN_CACHE:-$HOME/.cache/evictd-kube}
hash=$(cd "$src" && cat go.mod go.sum ./*.go ../build.sh | sha256sum | cut -c1-16)
bin=$cache/kubebin-$hash
if [ "${1:-}" = --path ]; then echo "$bin"; exit 0; fi
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi

# A go outside PATH where tools/install-deps.sh cluster finds or puts one; the toolchain go.mod
# asks for is fetched when that go is older (Debian's go.env says GOTOOLCHAIN=local).
PATH=$PATH:/usr/local/go/bin:/usr/lib/go-1.23/bin
export GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
if ! command -v go >/dev/null; then
	echo "build.sh: no Go toolchain (go) on PATH: tools/install-deps.sh cluster installs one" >&2
	exit 1
fi
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
# Another run may have built it while this one waited for the lock.
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
kind=warm
[ -d "$(go env GOCACHE)" ] && [ -n "$(ls -A "$(go env GOCACHE)" 2>/dev/null)" ] || kind=cold
start=$(date +%s)
echo "build.sh: building the Kubernetes components and etcd ($kind Go cache) into $bin" >&2
# The version the release's own build stamps (hack/lib/version.sh): without it every component
# says v0.0.0-master and clients' version checks misread the server.
kver=$(awk '$1 == "k8s.io/kubernetes" {print $2; exit}' "$src/go.mod")
minor=${kver#v1.}; minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags="$ldflags -X $pkg.gitVersion=$kver -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
	ldflags="$ldflags -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
(cd "$src" && GOFLAGS=-mod=readonly go build -trimpath -ldflags "$ldflags" \
	${KUBEBIN_JOBS:+-p "$KUBEBIN_JOBS"} -o "$bin.tmp" .) >&2
mv "$bin.tmp" "$bin"
# Binaries of earlier sources go after a day (each is ~250 MB; a run may still use one).
find "$cache" -maxdepth 1 -name "kubebin-*" ! -name "kubebin-$hash" -mmin +1440 -delete
secs=$(( $(date +%s) - start ))
echo "$(date -u +%FT%TZ) $hash $kind ${secs}s jobs=${KUBEBIN_JOBS:-$(nproc)}" >>"$cache/build-times.log"
echo "build.sh: built in ${secs}s" >&2
echo "$bin"
