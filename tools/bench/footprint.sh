#!/usr/bin/env bash
# footprint.sh - evictd's own cost: CPU over an idle window and over a busy one (fork and
# page-cache churn on the other core), and its memory (RSS, peak RSS).
# Usage: tools/bench/footprint.sh [SECONDS]   (default 60 per window)
# Prints:
#   footprint idle: cpu 0.0123% of a core over 60 s, rss 6.1 MiB (peak 6.3 MiB), evaluations N
#   footprint busy: cpu ...% of a core over 60 s, ... bpf wake-ups N
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
seconds=${1:-60}
tmp=$(mktemp -d /tmp/evictd-footprint-XXXXXX)
pid=""
load_pids=()
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	for p in "${load_pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
[ -x "$BUILD/evictd" ] || make -s "$BUILD/evictd"
[ -x "$BUILD/evictctl" ] || make -s "$BUILD/evictctl"	# status --json: evaluations per window

# Nanoseconds on CPU (schedstat), finer than the 10 ms ticks of /proc/PID/stat.
cpu_ns() { awk '{print $1}' "/proc/$1/schedstat"; }
kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }

# The default configuration, in dry-run so nothing on this machine is ever killed.
"$BUILD/evictd" --dry-run --control-socket="$tmp/sock" --metrics-address=off --event-log=off \
	--bpf-pin-dir="/sys/fs/bpf/evictd-footprint-$$" >"$tmp/out" 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ -S "$tmp/sock" ] && break; sleep 0.1; done
grep -q "BPF on" "$tmp/out" || echo "# note: BPF is not on: $(grep -i bpf "$tmp/out" | head -1)"
sleep 2

window() {	# window NAME: measure evictd over $seconds
	local name=$1 t0 t1 e0 e1
	t0=$(cpu_ns "$pid")
	e0=$("$BUILD/evictctl" --socket "$tmp/sock" status --json | jq '.evaluations')
	sleep "$seconds"
	t1=$(cpu_ns "$pid")
	e1=$("$BUILD/evictctl" --socket "$tmp/sock" status --json | jq '.evaluations')
	awk -v d=$((t1 - t0)) -v s="$seconds" -v rss="$(kib "$pid" VmRSS)" \
		-v hwm="$(kib "$pid" VmHWM)" -v ev=$((e1 - e0)) -v name="$name" \
		-v anon="$(kib "$pid" RssAnon)" -v file="$(kib "$pid" RssFile)" \
		'BEGIN { printf "footprint %s: cpu %.4f%% of a core over %d s, rss %.1f MiB (private %.1f, shared library pages %.1f; peak %.1f MiB), evaluations %d\n",
			name, 100 * d / 1e9 / s, s, rss / 1024, anon / 1024, file / 1024, hwm / 1024, ev }'
}

window idle

# Busy: fork/exit and page-cache churn on the machine while evictd watches.
( while :; do /bin/true; done ) &
load_pids+=($!)
( f="$tmp/churn"; while :; do head -c 8M /dev/zero > "$f"; cat "$f" > /dev/null; rm -f "$f"; done ) &
load_pids+=($!)
window busy

# The floor of the peak: evictd without BPF, and one parse of the kernel's BTF on its own
# (libbpf must parse it to resolve tp_btf/fentry attach targets: doc/DESIGN.md, "Memory").
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
pid=""
"$BUILD/evictd" --dry-run --no-bpf --control-socket="$tmp/sock2" --metrics-address=off --event-log=off \
	>"$tmp/out2" 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ -S "$tmp/sock2" ] && break; sleep 0.1; done
sleep 2
nobpf_hwm=$(kib "$pid" VmHWM)
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
pid=""
${CC:-gcc} -O2 -Wall -Werror tools/bench/btf-peak.c $(pkg-config --cflags --libs libbpf) -o "$tmp/btf-peak"
btf=$("$tmp/btf-peak")
awk -v n="$nobpf_hwm" -v b="$btf" 'BEGIN { printf "footprint floor: peak %.1f MiB with --no-bpf; %s\n", n / 1024, b }'
