#!/usr/bin/env bash
# Hostile and mistaken configuration: every bad value is one error line and exit 2, found by
# --validate before anything starts (doc/DESIGN.md §9), and nothing hangs or spins.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
tmp=$(mktemp -d /tmp/evictd-hostile-XXXXXX)
cg=""
cleanup() {
	[ -n "$cg" ] && rmdir "$cg" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# Error lines about the value; "nothing started" is the summary every invalid run ends with.
# Before the configuration is valid, errors are usage errors: "evictd: ..." without "error:".
value_errors() { grep -E ' error: |^evictd: ' "$1" | grep -v -e 'invalid configuration; nothing started' -e '^evictd: warning: '; }

# expect_error NAME PATTERN ARG...: --validate exits 2 within 10 s with exactly one short error
# line matching PATTERN (grep -E).
expect_error() {
	local name=$1 pattern=$2 rc n width
	shift 2
	timeout 10 "$EVICTD" --validate "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
	n=$(value_errors "$tmp/err" | wc -l)
	width=$(value_errors "$tmp/err" | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }')
	if [ $rc -eq 2 ] && [ "$n" -eq 1 ] && [ "$width" -lt 400 ] && value_errors "$tmp/err" | grep -qE -- "$pattern"; then
		pass "$name"
	else
		fail "$name" "rc=$rc lines=$n width=$width: $(head -c 600 "$tmp/err")"
	fi
}

# expect_ok NAME ARG...: --validate exits 0 with no error line.
expect_ok() {
	local name=$1 rc
	shift
	timeout 10 "$EVICTD" --validate "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
	if [ $rc -eq 0 ] && ! value_errors "$tmp/err" | grep -q .; then
		pass "$name"
	else
		fail "$name" "rc=$rc: $(head -c 600 "$tmp/err")"
	fi
}

# ---- finding 1: --workload-root ---------------------------------------------------------
for dir in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	if [ "$(stat -f -c %T "$dir" 2>/dev/null)" = cgroup2fs ] && [ -w "$dir" ]; then
		cg="$dir/evictd-hostile-$$"
		mkdir "$cg" || cg=""
		break
	fi
done
if [ -n "$cg" ]; then
	expect_ok "workload-root: a cgroup v2 directory is accepted" --workload-root="$cg"
	timeout 10 "$EVICTD" --validate --workload-root="$cg/" >"$tmp/out" 2>"$tmp/err"; rc=$?
	if [ $rc -eq 0 ] && grep -qx "workload-root $cg" "$tmp/out" && grep -q 'warning: .*normalised to' "$tmp/err"; then
		pass "workload-root: a trailing slash is normalised and says so"
	else
		fail "workload-root: a trailing slash is normalised and says so" "rc=$rc: $(cat "$tmp/out" "$tmp/err" | head -c 600)"
	fi
	expect_error "workload-root: a .. component exits 2" 'workload-root.*canonical' \
		--workload-root="$cg/../$(basename "$cg")"
	expect_error "workload-root: a missing directory exits 2" 'workload-root.*No such file' \
		--workload-root="$cg/missing"
	ln -s "$cg" "$tmp/link"
	expect_error "workload-root: a symlink (last component) exits 2" 'workload-root.*symlink' \
		--workload-root="$tmp/link"
	ln -s "$(dirname "$cg")" "$tmp/linkdir"
	expect_error "workload-root: a symlink (middle component) exits 2" 'workload-root.*linkdir is a symlink' \
		--workload-root="$tmp/linkdir/$(basename "$cg")"
else
	pass "workload-root: cgroup v2 cases # SKIP no writable cgroup2 mount"
fi
expect_error "workload-root: a relative path exits 2" 'workload-root.*absolute' --workload-root=sys/fs/cgroup/x
expect_error "workload-root: a missing path exits 2" 'workload-root.*No such file' --workload-root=/nonexistent/evictd
mkdir -p "$tmp/plain"
expect_error "workload-root: a directory not on cgroup2 exits 2" 'workload-root.*not on a cgroup2 filesystem' \
	--workload-root="$tmp/plain"
# Under a fixture --root the tree is plain directories: everything but the fs type is checked.
mkdir -p "$tmp/fixture/workloads"
expect_ok "workload-root: under a fixture --root a plain directory is accepted" \
	--root="$tmp/fixture" --workload-root=/workloads
expect_error "workload-root: under a fixture --root a missing directory exits 2" 'workload-root.*No such file' \
	--root="$tmp/fixture" --workload-root=/missing
# One argument holds at most 128 KiB with its NUL and the "--flag=" (MAX_ARG_STRLEN).
huge=$(head -c 131000 /dev/zero | tr '\0' a)
expect_error "workload-root: a 128 KiB value is one truncated line" '"/a{63}\.\.\."' --workload-root="/$huge"

# ---- finding 2: deep nesting ------------------------------------------------------------
{ printf 'kind: KubeletConfiguration\nx: '; head -c 100000 /dev/zero | tr '\0' '['; head -c 100000 /dev/zero | tr '\0' ']'; echo; } >"$tmp/deep.yaml"
start=$(date +%s%N)
expect_error "nesting: 100,000 levels exit 2 at once" 'nested more than 32 levels' --config "$tmp/deep.yaml"
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
check "nesting: refused within 2 s (took $elapsed_ms ms)" [ "$elapsed_ms" -lt 2000 ]

# ---- finding 3: repeated keys, nested list entries --------------------------------------
printf 'kind: EvictdConfiguration\ndryRun: true\ndryRun: false\n' >"$tmp/twice.yaml"
expect_error "repeated key: EvictdConfiguration key twice exits 2 naming key and file" \
	"twice\.yaml: .*\"dryRun\" given twice" --config "$tmp/twice.yaml"
printf 'kind: KubeletConfiguration\nhousekeepingInterval: 5s\nhousekeepingInterval: 7s\n' >"$tmp/ktwice.yaml"
timeout 10 "$EVICTD" --validate --config "$tmp/ktwice.yaml" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc -eq 0 ] && grep -qx 'housekeeping-interval 7s' "$tmp/out" &&
	grep -q 'warning: .*ktwice\.yaml: .*"housekeepingInterval" given twice' "$tmp/err"; then
	pass "repeated key: KubeletConfiguration key twice warns and the last wins (the kubelet's lenient decoding)"
else
	fail "repeated key: KubeletConfiguration key twice warns and the last wins (the kubelet's lenient decoding)" \
		"rc=$rc: $(cat "$tmp/out" "$tmp/err" | head -c 600)"
fi
printf 'kind: EvictdConfiguration\nreclaimCommands: [[a]]\n' >"$tmp/nested.yaml"
expect_error "list entry: reclaimCommands: [[a]] exits 2 naming the key" 'reclaimCommands: expected a list of single values' \
	--config "$tmp/nested.yaml"

# ---- finding 4: ranges ------------------------------------------------------------------
expect_error "range: --housekeeping-interval=1ns exits 2" 'housekeeping-interval: "1ns": out of range' --housekeeping-interval=1ns
expect_error "range: --housekeeping-interval=25h exits 2" 'housekeeping-interval: "25h": out of range' --housekeeping-interval=25h
expect_ok "range: --housekeeping-interval=100ms is accepted" --housekeeping-interval=100ms
expect_error "range: --kill-timeout=2562047h (overflows a clock) exits 2" 'kill-timeout: "2562047h": out of range' --kill-timeout=2562047h
expect_error "range: --kube-pods-refresh=1ns exits 2" 'kube-pods-refresh: "1ns": out of range' --kube-pods-refresh=1ns
expect_error "range: --eviction-pressure-transition-period=25h exits 2" 'pressure-transition-period: "25h": out of range' \
	--eviction-pressure-transition-period=25h
expect_error "range: --eviction-max-pod-grace-period=86401 exits 2" 'max-pod-grace-period: "86401": out of range' \
	--eviction-max-pod-grace-period=86401
expect_error "range: --shutdown-grace-period=500ms exits 2 (the kubelet: 0 or >= 1s)" 'shutdown-grace-period: "500ms": out of range' \
	--shutdown-grace-period=500ms
expect_error "range: a shutdown priority group of 86401 s exits 2" 'by-pod-priority: "86401": out of range' \
	--shutdown-grace-period-by-pod-priority=0=86401
expect_error "range: a soft grace period of 25h exits 2" 'soft-grace-period: memory.available: "25h": out of range' \
	--eviction-soft='memory.available<1Gi' --eviction-soft-grace-period=memory.available=25h
printf 'kind: EvictdConfiguration\nkillTimeout: 1ns\n' >"$tmp/range.yaml"
expect_error "range: killTimeout: 1ns in YAML exits 2" 'killTimeout: "1ns": out of range' --config "$tmp/range.yaml"
expect_error "range: a 128 KiB duration is one truncated line" '"1{64}\.\.\."' \
	--housekeeping-interval="$(head -c 131000 /dev/zero | tr '\0' 1)s"
help=$("$EVICTD" --help)
# --help puts a long option's help on the lines after it.
check "range: --help states the housekeeping interval's range" grep -qzP 'housekeeping-interval=DURATION\n[^-]*100ms to 24h' <<<"$help"

# ---- finding 5: zero thresholds ---------------------------------------------------------
expect_error "zero threshold: memory.available<0 exits 2 (the kubelet: must be positive)" \
	'memory.available<0: eviction threshold must be positive' --eviction-hard='memory.available<0'
printf 'kind: KubeletConfiguration\nevictionHard: {nodefs.available: "0Gi"}\n' >"$tmp/zero.yaml"
expect_error "zero threshold: evictionHard nodefs.available: 0Gi in YAML exits 2" \
	'nodefs.available<0Gi: eviction threshold must be positive' --config "$tmp/zero.yaml"
expect_ok "zero threshold: 0% still switches a threshold off, as the kubelet" --eviction-hard='memory.available<0%'

# ---- finding 6: a FIFO as --config ------------------------------------------------------
mkfifo "$tmp/fifo"
start=$(date +%s%N)
expect_error "config FIFO: exits 2 with one line" 'fifo: a FIFO: expected a regular file' --config "$tmp/fifo"
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
check "config FIFO: no wait (took $elapsed_ms ms)" [ "$elapsed_ms" -lt 2000 ]
expect_error "config directory: exits 2 with one line" 'a directory: expected a regular file' --config "$tmp"

done_testing
