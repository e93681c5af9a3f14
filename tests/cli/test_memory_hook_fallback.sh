#!/usr/bin/env bash
# The memory hook's self-check with the real daemon on this host: with the hooks muted that
# can be attached first (EVICTD_TEST_MUTE_MEMORY_HOOKS=3: page_counter_try_charge and
# mm_page_alloc_zone_locked attach and do nothing, as a hook the kernel never calls), evictd
# sees the kernel allocate memory that its hook did not, says so, attaches mm_lru_insertion
# instead and confirms it; the fallback is counted in /metrics. Unmuted, the hook attached
# is confirmed and nothing falls back. Runs build/evictd, then build/evictd-san.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
tmp=$(mktemp -d /tmp/evictd-hookfb-XXXXXX)
tpids=()
. tests/cli/daemonlib.sh
trap 'rm -f "${shm:-/nonexistent}/evictd-hookfb-$$"; cleanup_daemons' EXIT
[ -n "${KEEP:-}" ] && trap - EXIT

if [ "$(id -u)" != 0 ]; then
	echo "ok 1 - memory hook fallback # SKIP needs root (BPF)"
	echo "1..1"; exit 0
fi

# 256 MiB held on a tmpfs across the daemon's once-a-second check, then released: page
# allocations the kernel counts, and more than the per-CPU lists hold (100+ MiB on a kernel that
# auto-tunes them), so pages leave the buddy lists too, which is what the buddy hook is judged by.
shm=/dev/shm
[ -d "$shm" ] && [ -w "$shm" ] || shm=$tmp
# First the clean page cache is dropped: on a host whose memory sits at the watermarks every
# allocation is matched by reclaim through the per-CPU lists, and the buddy lists never move
# (tests/bpf/test_bpf_hooks.c free_page_cache).
sync
echo 1 >/proc/sys/vm/drop_caches 2>/dev/null || echo "# drop_caches failed: the check may stay undecided"
allocate() {
	dd if=/dev/zero of="$shm/evictd-hookfb-$$" bs=1M count=256 status=none
	sleep 1.2
	rm -f "$shm/evictd-hookfb-$$"
}

run() { # NAME BIN MASK
	local name=$1 bin=$2 mask=$3 port
	port=$(free_port)
	start "$name" "$bin" "${SAN_ENV[@]}" EVICTD_TEST_MUTE_MEMORY_HOOKS="$mask" -- \
		--dry-run --oom-guard=off --housekeeping-interval=60s --state-dir="$tmp/$name.state" \
		--bpf-pin-dir="/sys/fs/bpf/evictd-hookfb-$$-$name" --control-socket="$tmp/$name.sock" \
		--metrics-address="127.0.0.1:$port" --event-log=off
	if ! wait_up "$tmp/$name.sock" "$port"; then
		fail "$name: evictd starts" "$(cat "$tmp/$name.err" "$tmp/$name.out")"
		return 1
	fi
	for _ in $(seq 1 20); do
		allocate
		grep -q "memory hook .* confirmed" "$tmp/$name.err" 2>/dev/null && [ "$mask" = 0 ] &&
			break
		grep -q "memory hook mm_lru_insertion confirmed" "$tmp/$name.err" "$tmp/$name.out" \
			2>/dev/null && break
	done
	[ "$mask" = 0 ] || wait_log "$tmp/$name.err" "memory hook mm_lru_insertion confirmed" 5
	wait_log "$tmp/$name.err" "memory hook [a-z_]+ confirmed" 5
	fallbacks=$(curl -s -m 1 "http://127.0.0.1:$port/metrics" |
		awk '/^evictd_bpf_events_total\{event="memory_hook_fallback"\}/ {print $2}')
	stop "$tpid"
	cat "$tmp/$name.out" "$tmp/$name.err" >"$tmp/$name.log"
}

for bin in "$EVICTD" "$BUILD_DIR/evictd-san"; do
	tag=$(basename "$bin")
	[ -x "$bin" ] || { fail "$tag built" "$bin missing (make $bin)"; continue; }

	run "$tag-muted" "$bin" 3 || continue
	log="$tmp/$tag-muted.log"
	first=$(sed -n 's/.*memory hook \([a-z_]*\) saw no page while the kernel .*/\1/p' "$log" | head -1)
	check "$tag: a silent memory hook is detached, saying why (${first:-none})" \
		grep -qE "memory hook (page_counter_try_charge|mm_page_alloc_zone_locked) saw no page while the kernel (allocated|took from the buddy lists) [0-9]+ pages; detached it" "$log"
	check "$tag: mm_lru_insertion paces memory instead and is seen firing" \
		grep -qE "memory hook mm_lru_insertion confirmed: it saw [0-9]+ pages" "$log"
	check "$tag: the fallback is counted in /metrics (${fallbacks:-absent})" \
		[ "${fallbacks:-0}" -ge 1 ]
	check "$tag: exits 0 (rc=$rc)" [ "$rc" = 0 ]
	check "$tag: no sanitizer report" no_sanitizer_report "$log"

	run "$tag-plain" "$bin" 0 || continue
	log="$tmp/$tag-plain.log"
	check "$tag: unmuted, the memory hook attached is confirmed" \
		grep -qE "memory hook [a-z_]+ confirmed: it saw [0-9]+ pages" "$log"
	check "$tag: unmuted, nothing falls back" bash -c "! grep -q 'saw no page' '$log'"
	check "$tag: unmuted, no fallback counted (${fallbacks:-absent})" [ "${fallbacks:-x}" = 0 ]
	check "$tag: unmuted exits 0 (rc=$rc)" [ "$rc" = 0 ]
done
done_testing
