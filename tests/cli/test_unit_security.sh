#!/usr/bin/env bash
# The unit's hardening (issue 22, doc/DESIGN.md "The systemd unit"): `systemd-analyze security
# --offline=true` rates tools/deploy/evictd.service at most 1.9, systemd-oomd's exposure, and
# the settings the daemon relies on under it stay: the metrics socket it is handed
# (evictd.socket), writable BPF pins under ProtectKernelTunables=. That the daemon still does
# its work under these settings is the systemd guest's to show (tests/vm/systemd-scenarios).
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
unit=tools/deploy/evictd.service
socket=tools/deploy/evictd.socket
tmp=$(mktemp -d /tmp/evictd-unitsec-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# --offline appeared in systemd 250.
if ! command -v systemd-analyze >/dev/null || ! systemd-analyze security --help 2>&1 | grep -q -- '--offline'; then
	echo "ok 1 - unit exposure # SKIP systemd-analyze without 'security --offline' (systemd < 250)"
	echo "1..1"
	exit 0
fi

# exposure FILE VAR: VAR = the overall exposure systemd-analyze gives ("1.9"); rc, out set.
exposure() {
	out=$(systemd-analyze security --offline=true --threshold=19 --no-pager "$1" 2>&1); rc=$?
	printf -v "$2" '%s' "$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$out")"
}
exposure "$unit" score
if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 1.9) }' && [ $rc -eq 0 ]; then
	pass "evictd.service exposure $score <= 1.9 (systemd-oomd's), --threshold=19 passes"
else
	fail "evictd.service exposure ${score:-?} <= 1.9 (systemd-oomd's), --threshold=19 passes" "rc=$rc $(tail -n 3 <<<"$out")"
fi
# The check has teeth: the unit with its network back scores above and fails the threshold.
mkdir -p "$tmp/loose"
sed -e 's/^PrivateNetwork=yes/PrivateNetwork=no/' "$unit" > "$tmp/loose/evictd.service"
exposure "$tmp/loose/evictd.service" loose
if [ -n "$loose" ] && awk -v s="$loose" 'BEGIN { exit !(s > 1.9) }' && [ $rc -ne 0 ]; then
	pass "with PrivateNetwork=no the exposure ($loose) fails the threshold"
else
	fail "with PrivateNetwork=no the exposure (${loose:-?}) fails the threshold" "rc=$rc"
fi

# What the daemon needs under these settings.
setting() { sed -n "s/^$1=//p" "$2" | tail -1; }
check "evictd.socket listens on 127.0.0.1:9808 (the --metrics-address default)" \
	[ "$(setting ListenStream "$socket")" = 127.0.0.1:9808 ]
check "the service requires and is ordered after evictd.socket, and takes its fd" \
	sh -c "[ '$(setting Requires "$unit")' = evictd.socket ] && [ '$(setting After "$unit" | grep -o evictd.socket)' = evictd.socket ] && [ '$(setting Sockets "$unit")' = evictd.socket ]"
check "PrivateNetwork=yes comes with the socket (no AF_INET of its own)" \
	sh -c "[ '$(setting PrivateNetwork "$unit")' = yes ] && [ '$(setting RestrictAddressFamilies "$unit")' = AF_UNIX ]"
check "ProtectKernelTunables=yes comes with the pin directory made and writable" \
	sh -c "[ '$(setting ProtectKernelTunables "$unit")' != yes ] || { grep -q '^ReadWritePaths=-/sys/fs/bpf/evictd$' '$unit' && grep -q '^ExecStartPre=-+/bin/mkdir -p -m 0700 /sys/fs/bpf/evictd$' '$unit'; }"
check "bpf() allowed; no perf_event_open, @mount or CAP_IPC_LOCK" \
	sh -c "grep -q '^SystemCallFilter=@system-service bpf$' '$unit' && ! grep -v '^#' '$unit' | grep -qE 'perf_event_open|@mount|CAP_IPC_LOCK' && [ '$(setting LimitMEMLOCK "$unit")' = infinity ]"
# Both units load together (ExecStart pointed at the build, as test_deploy.sh does).
mkdir -p "$tmp/units"
sed "s#/usr/sbin/evictd#$PWD/$EVICTD#" "$unit" > "$tmp/units/evictd.service"
cp "$socket" "$tmp/units/"
out=$(systemd-analyze verify --man=no "$tmp/units/evictd.socket" "$tmp/units/evictd.service" 2>&1); rc=$?
if [ $rc -eq 0 ] && [ -z "$out" ]; then pass "systemd-analyze verify accepts evictd.socket with the service"
else fail "systemd-analyze verify accepts evictd.socket with the service" "rc=$rc $out"; fi
done_testing
