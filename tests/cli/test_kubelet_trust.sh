#!/usr/bin/env bash
# --kubelet-flags-from=auto on the real host (doc/DESIGN.md, "Hostile input"): a process any
# user names kubelet is not read. Fake kubelets are copies of bash named kubelet that wait
# in a builtin `read -t` (no child) with kubelet flags in their argv (GNU sleep would refuse
# the flags): one run by nobody, one by root from a group/other-writable binary, and a root
# one from a root-owned 0755 binary, which is the only one read.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh

if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
	echo "ok 1 - kubelet trust # SKIP needs root and setpriv to start processes as another user"
	echo "1..1"
	exit 0
fi
tmp=$(mktemp -d /tmp/evictd-trust-XXXXXX)
pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
chmod 0755 "$tmp"
mkfifo -m 0666 "$tmp/fifo"

# fake_kubelet DIR MODE [setpriv args...] -- FLAGS...: start $tmp/DIR/kubelet (mode MODE)
# with FLAGS, and wait until it runs under that name; its pid in $fake.
fake_kubelet() {
	local dir=$tmp/$1 mode=$2 wrap=()
	shift 2
	while [ "$1" != -- ]; do wrap+=("$1"); shift; done
	shift
	mkdir -p -m 0755 "$dir"
	[ -e "$dir/kubelet" ] || cp "$(command -v bash)" "$dir/kubelet"
	chmod "$mode" "$dir/kubelet"
	"${wrap[@]}" "$dir/kubelet" -c "read -r -t 120 _ <> $tmp/fifo" kubelet "$@" &
	fake=$!
	pids+=("$fake")
	for _ in $(seq 100); do
		[ "$(cat /proc/$fake/comm 2>/dev/null)" = kubelet ] && return 0
		sleep 0.05
	done
	echo "# fake kubelet $fake did not start" >&2
	return 1
}

# auto: run --validate; rc, stdout and stderr in $rc, $tmp/out, $tmp/err.
auto() {
	timeout 20 "$EVICTD" --kubelet-flags-from=auto --validate "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# A real kubelet on this host would be read too; the checks below then only hold for ours.
real_kubelets=0
for comm in /proc/[0-9]*/comm; do
	[ "$(cat "$comm" 2>/dev/null)" = kubelet ] && real_kubelets=$((real_kubelets + 1))
done
if [ "$real_kubelets" -gt 0 ]; then
	echo "ok 1 - kubelet trust # SKIP a process named kubelet already runs on this host"
	echo "1..1"
	exit 0
fi

# 1. nobody renames itself kubelet with a flag that would evict every pod: not read.
fake_kubelet user 0755 setpriv --reuid=65534 --regid=65534 --clear-groups -- \
	'--eviction-hard=pid.available<99%'
nobody=$fake
auto
if [ $rc -eq 2 ] && grep -q "ignoring pid $nobody, named kubelet: it runs as uid 65534" "$tmp/err" &&
	grep -q 'no kubelet process run by root' "$tmp/err" && ! grep -q 'pid.available<99%' "$tmp/out"; then
	pass "a kubelet run by nobody is ignored, with a line saying why"
else
	fail "a kubelet run by nobody is ignored, with a line saying why" "rc=$rc $(cat "$tmp/err" "$tmp/out")"
fi

# 2. root, but from a binary the group may rewrite: not read.
fake_kubelet writable 0775 -- '--eviction-hard=pid.available<98%'
writable=$fake
auto
if [ $rc -eq 2 ] && grep -q "ignoring pid $writable, named kubelet: its executable .*/writable/kubelet is writable by group or others" "$tmp/err" &&
	! grep -q 'pid.available<98%' "$tmp/out"; then
	pass "a root kubelet from a group-writable binary is ignored"
else
	fail "a root kubelet from a group-writable binary is ignored" "rc=$rc $(cat "$tmp/err" "$tmp/out")"
fi

# 3. root from a root-owned 0755 binary: read, its flags applied, the impostors still ignored.
fake_kubelet good 0755 -- '--eviction-hard=memory.available<321Mi' --eviction-max-pod-grace-period=17
good=$fake
auto
if [ $rc -eq 0 ] && grep -q "reading the kubelet's configuration from pid $good " "$tmp/err" &&
	grep -q '^hard memory.available<321Mi' "$tmp/out" && ! grep -q 'pid.available<9' "$tmp/out" &&
	grep -q "ignoring pid $nobody" "$tmp/err" && grep -q "ignoring pid $writable" "$tmp/err"; then
	pass "a root kubelet from a root-owned 0755 binary is read"
else
	fail "a root kubelet from a root-owned 0755 binary is read" "rc=$rc $(cat "$tmp/err" "$tmp/out")"
fi

# 4. two trusted kubelets: one error naming both.
fake_kubelet good 0755 -- '--eviction-hard=memory.available<322Mi'
second=$fake
auto
if [ $rc -eq 2 ] && grep -E "2 root kubelet processes \(pids ($good, $second|$second, $good)\)" "$tmp/err" >/dev/null; then
	pass "two trusted kubelets are one error naming their pids"
else
	fail "two trusted kubelets are one error naming their pids" "rc=$rc $(cat "$tmp/err")"
fi

done_testing
