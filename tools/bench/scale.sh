#!/usr/bin/env bash
# scale.sh - evictd at 1,000 pods: one full evaluation (signals, thresholds, pods source,
# discovery, per-pod usage, ranking, victim; daemon_evaluate() from build/libevictd.a) and
# cgroup.kill of a pod with 1,000 processes until "populated 0" (kill_cgroup()), the processes
# being forks of a dynamically linked program (evictd's ten libraries) and, second, a minimal
# static program (racekit pause).
#
# Usage: tools/bench/scale.sh [host] [guest]      (default: both)
#   host   on this machine's cgroup v2 tree (here /sys/fs/cgroup/unified on a hybrid host:
#          no memory or pids controller there, so per pod evictd reads no memory files and
#          counts tasks through cgroup.threads instead of pids.current)
#   guest  in the QEMU TCG guest (Debian kernel, cgroup v2 with memory and pids: the real
#          per-pod reads; TCG runs it several times slower than hardware would)
# Also: cgroup.kill -> MemAvailable 90% back, with and without process_mrelease(2), for one
# 700 MiB process and for 500 MiB in 1,000 processes (scale-bench memkill).
# Environment: SCALE_PODS (1000), SCALE_PROCS (1000), SCALE_ITERATIONS (host 100, guest 10),
#              SCALE_REPEAT (host 5, guest 3), SCALE_MEMKILL_REPEAT (host 8, guest 4),
#              SCALE_GUEST_PARTS (guest: "eval kill memkill", any of them).
# Prints "scale ..." lines (host) and "guest: scale ..." lines (guest). Needs root.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(host guest)
PODS=${SCALE_PODS:-1000}
PROCS=${SCALE_PROCS:-1000}
[ "$(id -u)" = 0 ] || { echo "scale.sh: needs root" >&2; exit 1; }

# Built here with the project's flags (the Makefile has no rule for tools/bench), against a
# library that matches the headers.
make -s "$BUILD/libevictd.a" >/dev/null
bin=$BUILD/bench/scale-bench
mkdir -p "$BUILD/bench"
if [ ! -x "$bin" ] || [ tools/bench/scale-bench.c -nt "$bin" ] || [ "$BUILD/libevictd.a" -nt "$bin" ]; then
	${CC:-gcc} -O2 -g -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter \
		-Iuser -Ibpf -I"$BUILD" $(pkg-config --cflags libbpf) \
		tools/bench/scale-bench.c "$BUILD/libevictd.a" \
		$(pkg-config --libs libbpf yaml-0.1 json-c libsystemd libmicrohttpd libcurl) \
		-lelf -lz -lm -o "$bin"
fi

racekit=$BUILD/bench/racekit	# static: the minimal pod process of the second kill test
if [ ! -x "$racekit" ] || [ tools/bench/racekit.c -nt "$racekit" ]; then
	${CC:-gcc} -O2 -static -std=gnu11 -Wall -Wextra -Werror tools/bench/racekit.c -o "$racekit"
fi
racekit=$(cd "$(dirname "$racekit")" && pwd)/$(basename "$racekit")

for part in "${parts[@]}"; do
	case $part in
	host)
		echo "# scale host: kernel $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
		"$bin" eval --pods "$PODS" --iterations "${SCALE_ITERATIONS:-100}" 2>&1 | grep -v ' info: '
		"$bin" kill --procs "$PROCS" --repeat "${SCALE_REPEAT:-5}" 2>&1 | grep -v ' info: '
		"$bin" kill --procs "$PROCS" --repeat "${SCALE_REPEAT:-5}" --child "$racekit" 2>&1 | grep -v ' info: '
		# A failed memkill is reported, not fatal: the guest part still runs.
		"$bin" memkill --mib 700 --procs 1 --repeat "${SCALE_MEMKILL_REPEAT:-8}" 2>&1 | grep -v ' info: ' || true
		"$bin" memkill --mib 500 --procs "$PROCS" --repeat "${SCALE_REPEAT:-5}" 2>&1 | grep -v ' info: ' || true
		;;
	guest)
		work=$(mktemp -d /tmp/evictd-scale.XXXXXX)
		trap 'rm -rf "$work"' EXIT
		printf 'PODS=%s\nPROCS=%s\nITERATIONS=%s\nREPEAT=%s\nMEMKILL_REPEAT=%s\nGUEST_PARTS="%s"\n' "$PODS" "$PROCS" \
			"${SCALE_ITERATIONS:-10}" "${SCALE_REPEAT:-3}" "${SCALE_MEMKILL_REPEAT:-4}" \
			"${SCALE_GUEST_PARTS:-eval kill memkill}" >"$work/scale.conf"
		kernel=$(tools/vm/fetch-kernel.sh 2>"$work/fetch.log") || { echo "scale.sh: fetch-kernel.sh failed" >&2; exit 1; }
		tools/vm/build-initramfs.sh "$work/initramfs.cpio.gz" --init tools/bench/scale-guest.sh \
			--add "$bin:/usr/bin/scale-bench" --add "$racekit:/usr/bin/racekit" --add "$work/scale.conf:/etc/scale.conf" >"$work/build.log" 2>&1 \
			|| { echo "scale.sh: build-initramfs.sh failed: $(tail -n 3 "$work/build.log")" >&2; exit 1; }
		echo "# scale guest: QEMU TCG, 2 vCPUs, 2 GiB, Debian kernel $(basename "$kernel"); host load $(cut -d' ' -f1-3 /proc/loadavg)"
		t0=$(date +%s)
		rc=0
		tools/vm/run-guest.sh --kernel "$kernel" --initramfs "$work/initramfs.cpio.gz" --mem 2048M --smp 2 \
			--timeout 900 --log "$work/serial.raw" >"$work/qemu.log" 2>&1 || rc=$?
		tr -d '\r' <"$work/serial.raw" | grep -E '^(guest: |scale-guest:)' || true
		echo "# scale guest: $(( $(date +%s) - t0 )) s (qemu exit $rc)"
		grep -q 'EVICTD-VM: PASS scale-done' "$work/serial.raw" || { echo "scale.sh: the guest did not finish" >&2; tail -n 20 "$work/serial.raw" >&2; exit 1; }
		;;
	*) echo "scale.sh: unknown part $part" >&2; exit 2 ;;
	esac
done
