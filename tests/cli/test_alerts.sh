#!/usr/bin/env bash
# The alerting rules (tools/deploy/monitoring/alerts.yaml): `promtool check rules`, then
# `promtool test rules` on tests/monitoring/alerts_test.yaml (each alert fires when it must,
# not before its `for`, not on healthy series). promtool: Debian's prometheus package
# (tools/install-deps.sh test).
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh

rules=tools/deploy/monitoring/alerts.yaml
if ! command -v promtool >/dev/null; then
	echo "ok 1 - alert rules # SKIP promtool is not installed (tools/install-deps.sh test)"
	echo "1..1"
	exit 0
fi
out=$(promtool check rules "$rules" 2>&1)
check "promtool check rules $rules" grep -q SUCCESS <<<"$out" || echo "$out" | sed 's/^/# /'
for alert in EvictdCannotEvict EvictdDryRunLeftOn EvictdEvictionsFailing EvictdPodMetadataStale \
	EvictdEvictionRateHigh EvictdLoopStalled; do
	check "$alert is defined and unit-tested" bash -c \
		"grep -q 'alert: $alert\$' '$rules' && grep -q 'alertname: $alert\$' tests/monitoring/alerts_test.yaml"
done
out=$(promtool test rules tests/monitoring/alerts_test.yaml 2>&1)
if grep -q SUCCESS <<<"$out" && ! grep -q FAILED <<<"$out"; then
	pass "promtool test rules: every alert fires and stays silent as expected"
else
	fail "promtool test rules"
	echo "$out" | sed 's/^/# /'
fi
done_testing
