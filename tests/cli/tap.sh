# TAP helpers for the CLI tests: source it, call ok/not_ok through check, then done_testing.
tap_count=0
tap_failed=0
EVICTD=${EVICTD:-build/evictd}
BUILD_DIR=${BUILD_DIR:-build}

pass() { tap_count=$((tap_count + 1)); echo "ok $tap_count - $1"; }
fail() {
	tap_count=$((tap_count + 1)); tap_failed=$((tap_failed + 1))
	echo "not ok $tap_count - $1"
	[ $# -gt 1 ] && printf '%s\n' "$2" | sed 's/^/#   /'
	return 0
}
# check NAME COMMAND...: passes when COMMAND exits 0.
check() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name"; fi; }
done_testing() { echo "1..$tap_count"; [ "$tap_failed" -eq 0 ]; }
