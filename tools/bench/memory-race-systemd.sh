#!/usr/bin/env bash
# memory-race-systemd.sh - the memory race of tools/bench/memory-race.sh in the Debian systemd
# guest (tools/vm/build-systemd-root.sh, 1 GiB, real cgroup v2, no swap, systemd 252 as pid 1),
# so the peers that need systemd or Python race too: systemd-oomd (the Debian package) and nohang
# (Python, the Debian package), beside evictd and earlyoom again in the same boot so the rows
# compare side by side. Same hog, sampler, ftrace and analysis as the busybox race; the tree is
# made of systemd units (kubepods*.slice, pod slices, container scopes), as the kubelet's systemd
# driver and containerd make it. Each contender's configuration: tools/bench/memory-race-guest.sh
# (start_contender), exactly as run: OUTDIR/commands.txt.
#
# Usage: tools/bench/memory-race-systemd.sh [OUTDIR]      (default bench/memory-race-systemd)
# Environment: those of memory-race.sh, with these defaults here:
#   RACE_SYSTEMD_RUNS [7]   runs per contender and mode (RACE_RUNS is the busybox race's)
#   RACE_SYSTEMD_CONTENDERS ["evictd earlyoom nohang nohang-at-x systemd-oomd systemd-oomd-1s"]
#   RACE_SYSTEMD_MODES [RACE_MODES or "256 max plateau"]
#   RACE_SYSTEMD_CELL_RUNS ["nohang:plateau:2 systemd-oomd:plateau:2 systemd-oomd-1s:plateau:2"]
#       The plateau holds memory.available 32 MiB below X: MemAvailable stays ~2x above nohang's
#       default threshold (5% of MemTotal) and nothing stalls, so neither nohang's default nor
#       systemd-oomd (PSI) can act by construction; each such run waits out the whole 16 s limit,
#       so 2 runs show it and the time goes to the races the kernel OOM killer can win.
# 7 runs take ~10 min on this 2-core machine (~5 s a run, 16 s a plateau run nobody ends; 6 runs took 517 s at a host load of 2).
set -euo pipefail
cd "$(dirname "$0")/../.."
export RACE_GUEST=systemd
export RACE_RUNS=${RACE_SYSTEMD_RUNS:-7}
export RACE_CELL_RUNS=${RACE_SYSTEMD_CELL_RUNS-"nohang:plateau:2 systemd-oomd:plateau:2 systemd-oomd-1s:plateau:2"}
export RACE_CONTENDERS=${RACE_SYSTEMD_CONTENDERS:-"evictd earlyoom nohang nohang-at-x systemd-oomd systemd-oomd-1s"}
export RACE_MODES=${RACE_SYSTEMD_MODES:-${RACE_MODES:-"256 max plateau"}}
exec tools/bench/memory-race.sh "${1:-bench/memory-race-systemd}"
