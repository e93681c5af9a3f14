#!/usr/bin/env bash
# bpf-overhead.sh - cost of evictd's BPF programs and the kernel event -> handler latency.
#
# Usage: tools/bench/bpf-overhead.sh [bpf-overhead options] [fork] [read] [cached] [write] [create] [latency]
#   (default: every workload for each configuration below, then the latency; 48 ABBA slices
#   of 0.25 s per workload; see tools/bench/bpf-overhead.c)
# Environment: BUILD (default build), BENCH_DIR (a disk filesystem, default /var/tmp),
#              BENCH_CPU (pin the overhead workloads to this CPU, default 1 when >1 CPU).
# Needs root and a built build/libevictd.a (make builds it). Prints one line per workload:
#   overhead fork  fork+exit+wait  a -> b us cpu/op: +x.xx% cpu (ABBA groups: ...), +y.yy% wall
#   latency event->handler over N wake-ups: p50 ..., p99 ...
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
BENCH_DIR=${BENCH_DIR:-/var/tmp}

if [ "$(id -u)" != 0 ]; then
	echo "bpf-overhead.sh: needs root (loads BPF programs)" >&2
	exit 1
fi
[ -f "$BUILD/libevictd.a" ] || make -s "$BUILD/libevictd.a"

# Built here with the project's flags: the Makefile has no rule for tools/bench.
bin=$BUILD/bench/bpf-overhead
mkdir -p "$BUILD/bench"
if [ ! -x "$bin" ] || [ tools/bench/bpf-overhead.c -nt "$bin" ] || [ "$BUILD/libevictd.a" -nt "$bin" ]; then
	${CC:-gcc} -O2 -g -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter \
		-Iuser -Ibpf -I"$BUILD" $(pkg-config --cflags libbpf) \
		tools/bench/bpf-overhead.c "$BUILD/libevictd.a" \
		$(pkg-config --libs libbpf yaml-0.1 json-c libsystemd libmicrohttpd libcurl 2>/dev/null || pkg-config --libs libbpf) \
		-lelf -lz -lm -o "$bin"
fi

cpu_args=()
if [ "$(nproc)" -gt 1 ]; then
	cpu_args=(--cpu "${BENCH_CPU:-1}")
fi
echo "# bpf-overhead: kernel $(uname -r), $(nproc) CPUs, dir $BENCH_DIR ($(stat -f -c %T "$BENCH_DIR")), load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ $# -gt 0 ]; then
	exec "$bin" --dir "$BENCH_DIR" "${cpu_args[@]}" "$@"
fi
# Each configuration is measured against no programs within its own ABBA run; the lines
# after "# config: NAME" belong to it (tools/bench/run.sh reads them so).
# The target row: twice the slices (24 ABBA groups per loop), as this VM's own noise moves a
# 12-group mean by several percent on the cold read.
echo "# config: default (evictd's default: the wake-up programs only, 1 GiB memory step)"
"$bin" --dir "$BENCH_DIR" "${cpu_args[@]}" --slices 96 fork read cached write create
# Where fentry is refused, a step within twice the per-CPU page lists (here 16 MiB) adds
# mm_lru_insertion beside the buddy hook: what the default costs near a threshold.
echo "# config: near a threshold (the default at a 16 MiB memory step)"
"$bin" --dir "$BENCH_DIR" "${cpu_args[@]}" --memory-step-mib 16 fork read write
echo "# config: --bpf-inspect (every program, per-cgroup counters: the previous default)"
"$bin" --dir "$BENCH_DIR" "${cpu_args[@]}" --inspect fork read cached write create
echo "# config: --bpf-inspect --no-page-cache-bpf"
"$bin" --dir "$BENCH_DIR" "${cpu_args[@]}" --inspect --no-page-cache read write
# The memory wake-up's candidate hooks, each alone, on the loops that allocate memory (the
# default, memcg charge batches by fentry, falls back to the buddy hook where fentry is
# refused: tools/bench/overhead-guest.sh measures the fentry hook on Debian's kernel).
echo "# config: memory hook mm_lru_insertion (candidate)"
"$bin" --dir "$BENCH_DIR" "${cpu_args[@]}" --memory-hook lru fork read write
echo "# config: memory hook mm_page_alloc (candidate)"
"$bin" --dir "$BENCH_DIR" "${cpu_args[@]}" --memory-hook page-alloc fork read write
echo "# config: memory hook mm_page_alloc_zone_locked (candidate)"
"$bin" --dir "$BENCH_DIR" "${cpu_args[@]}" --memory-hook buddy fork read write
echo "# config: latency"
"$bin" latency
# Latency once more with the handler SCHED_FIFO 10, as a daemon may run its loop:
# on a busy node the default policy's p99 is the scheduler's, not the data plane's.
"$bin" --fifo 10 latency
