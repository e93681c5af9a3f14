#!/usr/bin/env bash
# make bench: every benchmark, side by side in one run; results in bench/results.md.
# Usage: tools/bench/run.sh [PART...]   parts: overhead footprint (default: all)
# Environment: FOOTPRINT_SECONDS (default 60).
set -uo pipefail
cd "$(dirname "$0")/../.."
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(overhead footprint)
mkdir -p bench
out=bench/results.md
raw=bench/raw.txt
: > "$raw"

run_part() {	# run_part NAME COMMAND...: print and keep its output
	echo "## $1: $*" | tee -a "$raw"
	shift
	"$@" 2>&1 | tee -a "$raw"
}

for part in "${parts[@]}"; do
	case "$part" in
	overhead) run_part overhead tools/bench/bpf-overhead.sh ;;
	footprint) run_part footprint tools/bench/footprint.sh "${FOOTPRINT_SECONDS:-60}" ;;
	*) echo "bench: unknown part $part" >&2; exit 2 ;;
	esac
done

{
	echo "# evictd benchmarks"
	echo
	echo "Run: \`make bench\` ($(date -u +%Y-%m-%dT%H:%MZ), kernel $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))."
	echo
	echo "| measurement | result | target |"
	echo "|---|---|---|"
	grep -E '^overhead ' "$raw" | while read -r _ name rest; do
		echo "| BPF overhead: $name | $(sed -E 's/.*: (\+?-?[0-9.]+% cpu).*/\1/' <<<"$rest") per op | ≤ 2% |"
	done
	grep -E '^latency ' "$raw" | while read -r line; do
		echo "| event → handler latency | ${line#latency } | p99 ≤ 1 ms |"
	done
	grep -E '^footprint ' "$raw" | while read -r _ name rest; do
		echo "| evictd ${name%:} | $rest | idle CPU ≤ 0.1% of a core, RSS ≤ 16 MiB |"
	done
	echo
	echo "## Commands and raw output"
	echo
	echo '```'
	cat "$raw"
	echo '```'
} > "$out"
echo "bench: wrote $out"
