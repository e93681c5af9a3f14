#!/usr/bin/env bash
# Options are copied into fixed-size fields: a value that does not fit is refused with one
# error line and exit 2, never truncated or written past its field (doc/DESIGN.md §7).
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
tmp=$(mktemp -d /tmp/evictd-limits-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

long=$(printf 'a%.0s' {1..300})
# Error lines about the value; "nothing started" is the summary every invalid run ends with.
# Before the configuration is valid, errors are usage errors: "evictd: ..." without "error:".
value_errors() { grep -E ' error: |^evictd: ' "$1" | grep -v -e 'invalid configuration; nothing started' -e '^evictd: warning: '; }

"$EVICTD" --validate --cgroup-root=/custom.slice --node-name="$long" >"$tmp/out" 2>"$tmp/err"; rc=$?
n=$(value_errors "$tmp/err" | wc -l)
if [ $rc -eq 2 ] && [ "$n" -eq 1 ] && grep -q -- '--node-name: "a\{64\}\.\.\."' "$tmp/err"; then
	pass "--node-name of 300 characters exits 2 with exactly one error line"
else
	fail "--node-name of 300 characters exits 2 with exactly one error line" \
		"rc=$rc lines=$n: $(cat "$tmp/err" "$tmp/out")"
fi
if [ ! -s "$tmp/out" ]; then
	pass "an invalid node name prints no configuration"
else
	fail "an invalid node name prints no configuration" "$(cat "$tmp/out")"
fi

# The longest valid node name (253) is kept whole and leaves the cgroup root alone: the
# --validate output is the one without a node name plus the node-name line.
longest=$(printf 'a%.0s' {1..253})
"$EVICTD" --validate --cgroup-root=/custom.slice >"$tmp/base" 2>&1; rc1=$?
"$EVICTD" --validate --cgroup-root=/custom.slice --node-name="$longest" >"$tmp/with" 2>&1; rc2=$?
if [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && grep -qx 'cgroup-root /custom.slice' "$tmp/with" &&
	grep -qx "node-name $longest" "$tmp/with" &&
	[ "$(grep -Ev '^(node-name |source --node-name: )' "$tmp/with")" = "$(cat "$tmp/base")" ]; then
	pass "a 253-character node name is kept whole and changes no other field"
else
	fail "a 253-character node name is kept whole and changes no other field" \
		"rc=$rc1/$rc2: $(diff "$tmp/base" "$tmp/with")"
fi

"$EVICTD" --validate --node-name="${longest}a" >"$tmp/out" 2>"$tmp/err"; rc=$?
n=$(value_errors "$tmp/err" | wc -l)
if [ $rc -eq 2 ] && [ "$n" -eq 1 ] && grep -q 'DNS-1123' "$tmp/err"; then
	pass "a 254-character node name exits 2 naming DNS-1123"
else
	fail "a 254-character node name exits 2 naming DNS-1123" "rc=$rc: $(cat "$tmp/err")"
fi

"$EVICTD" --validate --node-name=Node_1 >/dev/null 2>"$tmp/err"; rc=$?
if [ $rc -eq 2 ] && [ "$(value_errors "$tmp/err" | wc -l)" -eq 1 ]; then
	pass "a node name that is not a DNS-1123 subdomain exits 2"
else
	fail "a node name that is not a DNS-1123 subdomain exits 2" "rc=$rc: $(cat "$tmp/err")"
fi

# Small fields: kube-api (8 bytes) sits before kube-api-server.
"$EVICTD" --validate --kube-api=automatic >/dev/null 2>"$tmp/err"; rc=$?
if [ $rc -eq 2 ] && [ "$(value_errors "$tmp/err" | wc -l)" -eq 1 ] &&
	grep -q -- '--kube-api: "automatic"' "$tmp/err"; then
	pass "--kube-api longer than its field exits 2 with one error line"
else
	fail "--kube-api longer than its field exits 2 with one error line" "rc=$rc: $(cat "$tmp/err")"
fi

# Every path option, at PATH_MAX bytes: one line each, echo truncated.
path=/$(printf 'p%.0s' {1..4095})
for flag in root root-dir imagefs-dir containerfs-dir bpf-pin-dir state-dir logind-dropin-dir \
	pods-file cgroup-root kube-api-server kube-token-file kube-ca-file kube-pods-client-cert metrics-address \
	event-log control-socket workload-root reclaim-command config; do
	"$EVICTD" --validate --"$flag"="$path" >/dev/null 2>"$tmp/err"; rc=$?
	n=$(value_errors "$tmp/err" | wc -l)
	width=$(value_errors "$tmp/err" | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }')
	if [ $rc -eq 2 ] && [ "$n" -eq 1 ] && [ "$width" -lt 300 ]; then
		pass "--$flag of $((${#path})) bytes exits 2 with one short error line"
	else
		fail "--$flag of $((${#path})) bytes exits 2 with one short error line" \
			"rc=$rc lines=$n width=$width: $(head -c 600 "$tmp/err")"
	fi
done

# The YAML keys go through the same setters; a 128 KiB value is not echoed in full.
huge=$(head -c 131072 /dev/zero | tr '\0' a)
printf 'kind: EvictdConfiguration\nnodeName: "%s"\ncgroupRoot: /custom.slice\n' "$huge" >"$tmp/big.yaml"
"$EVICTD" --validate --config "$tmp/big.yaml" >"$tmp/out" 2>"$tmp/err"; rc=$?
n=$(value_errors "$tmp/err" | wc -l)
size=$(wc -c <"$tmp/err")
if [ $rc -eq 2 ] && [ "$n" -eq 1 ] && [ "$size" -lt 1000 ] && grep -q 'nodeName: "a\{64\}\.\.\."' "$tmp/err"; then
	pass "nodeName of 128 KiB in YAML exits 2 with one truncated error line"
else
	fail "nodeName of 128 KiB in YAML exits 2 with one truncated error line" \
		"rc=$rc lines=$n bytes=$size: $(head -c 600 "$tmp/err")"
fi

done_testing
