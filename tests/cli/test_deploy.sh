#!/usr/bin/env bash
# Deploy files and man pages: `systemd-analyze verify` on the systemd unit (works without a
# running systemd), the unit's must-have settings, --kubelet-config's warnings at start on the
# shipped ConfigMap, the man pages render without warnings and document every option. The
# manifests are checked with libyaml by tests/unit/test_deploy.c and test_admission.c; the
# image by tests/cli/test_image.sh.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
EVICTCTL=${EVICTCTL:-build/evictctl}
unit=tools/deploy/evictd.service
tmp=$(mktemp -d /tmp/evictd-deploy-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# ---- systemd unit -----------------------------------------------------------------------
if ! command -v systemd-analyze >/dev/null; then
	fail "systemd-analyze is installed (apt-get install systemd)"
else
	# verify wants ExecStart's binary to exist and Documentation= man pages to resolve: point
	# it at the build and at doc/.
	mkdir -p "$tmp/man/man8" "$tmp/unit"
	cp doc/evictd.8 doc/evictctl.8 "$tmp/man/man8/"
	sed "s#/usr/sbin/evictd#$PWD/$EVICTD#" "$unit" > "$tmp/unit/evictd.service"
	cp tools/deploy/evictd.socket "$tmp/unit/"	# Requires=evictd.socket
	out=$(MANPATH="$tmp/man" systemd-analyze verify "$tmp/unit/evictd.service" 2>&1); rc=$?
	if [ $rc -eq 0 ] && [ -z "$out" ]; then
		pass "systemd-analyze verify accepts the unit with no warning"
	else
		fail "systemd-analyze verify accepts the unit with no warning" "rc=$rc $out"
	fi
	# The check has teeth: a misspelt key and a bad value are both reported.
	sed -e 's/^Nice=/Nicee=/' -e 's/^WatchdogSec=30s/WatchdogSec=soon/' "$tmp/unit/evictd.service" > "$tmp/unit/broken.service"
	out=$(MANPATH="$tmp/man" systemd-analyze verify "$tmp/unit/broken.service" 2>&1)
	if grep -q "Unknown key" <<<"$out" && grep -q "soon" <<<"$out"; then
		pass "systemd-analyze verify reports a broken copy of the unit"
	else
		fail "systemd-analyze verify reports a broken copy of the unit" "$out"
	fi
fi

# The unit's settings that matter (last assignment wins in systemd; there is one of each).
setting() { sed -n "s/^$1=//p" "$unit" | tail -1; }
check "Type=notify" [ "$(setting Type)" = notify ]
check "WatchdogSec=30s" [ "$(setting WatchdogSec)" = 30s ]
check "Restart=always" [ "$(setting Restart)" = always ]
check "ExecReload sends SIGHUP to the main process" [ "$(setting ExecReload)" = '/bin/kill -HUP $MAINPID' ]
check "OOMScoreAdjust=-1000" [ "$(setting OOMScoreAdjust)" = -1000 ]
caps=" $(setting CapabilityBoundingSet) "
missing=""
for cap in CAP_BPF CAP_PERFMON CAP_SYS_ADMIN CAP_KILL CAP_SYS_RESOURCE CAP_DAC_OVERRIDE; do
	grep -q " $cap " <<<"$caps" || missing="$missing $cap"
done
check "CapabilityBoundingSet keeps what BPF and cgroup writes need (missing:$missing)" [ -z "$missing" ]
check "cgroup writes stay possible (no ProtectControlGroups=yes)" sh -c "! grep -qE '^ProtectControlGroups=(yes|true|strict)' '$unit'"
check "BPF pins stay writable (ProtectKernelTunables=yes only with ReadWritePaths=-/sys/fs/bpf/evictd)" \
	sh -c "! grep -qE '^ProtectKernelTunables=(yes|true)' '$unit' || grep -q '^ReadWritePaths=-/sys/fs/bpf/evictd$' '$unit'"
check "the unit is hardened (NoNewPrivileges, ProtectSystem=strict)" \
	sh -c "[ '$(setting NoNewPrivileges)' = yes ] && [ '$(setting ProtectSystem)' = strict ]"
check "the unit passes the control socket and event log" \
	sh -c "grep -q -- '--control-socket=/run/evictd/evictd.sock' '$unit' && grep -q -- '--event-log=' '$unit'"

# ---- beside the kubelet: --kubelet-config warns at start (README "evictd and the kubelet") ---
# The shipped ConfigMap's config.yaml (a literal block under data:) against kubelet files.
awk '/^  config.yaml: \|/ { on = 1; next } on && /^    / { print substr($0, 5); next }
	on && /^[^ ]/ { on = 0 } on && /^$/ { print "" }' tools/deploy/configmap.yaml > "$tmp/evictd.yaml"
printf 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nshutdownGracePeriod: 1m\nevictionHard:\n  memory.available: 500Mi\n' > "$tmp/kubelet-clash.yaml"
# expect NAME CONDITION-STATUS OUTPUT: the output shown when it fails.
expect() { if [ "$2" -eq 0 ]; then pass "$1"; else fail "$1" "$3"; fi; }
out=$("$EVICTD" --validate --no-bpf --config "$tmp/evictd.yaml" --kubelet-config tests/fixtures/kubelet/kubeadm-config.yaml 2>&1); rc=$?
[ $rc -eq 0 ] && ! grep -q 'warning: kubelet coexistence' <<<"$out" && grep -q 'no clash' <<<"$out"
expect "the shipped ConfigMap beside a kubeadm kubelet (its defaults): valid, no warning" $? "$out"
out=$("$EVICTD" --validate --no-bpf --config "$tmp/evictd.yaml" --kubelet-config "$tmp/kubelet-clash.yaml" 2>&1); rc=$?
grep -q 'warning: graceful node shutdown: the kubelet runs it (shutdownGracePeriod 60s.*evictd.s is off' <<<"$out" &&
	grep -q '^shutdown-grace-period 0s' <<<"$out"
expect "both configured for graceful shutdown: the kubelet owns it, evictd's is off (said, and --validate shows 0s)" $? "$out"
[ $rc -eq 0 ] && grep -q "warning: kubelet coexistence.*kubelet's hard memory.available<500Mi.*evictd's hard memory.available<500Mi" <<<"$out"
expect "equal memory thresholds: a warning naming both (exit 0: a warning, not an error)" $? "$out"
out=$("$EVICTD" --validate --no-bpf --config "$tmp/evictd.yaml" --kubelet-config "$tmp/none.yaml" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q 'coexistence with the kubelet not checked' <<<"$out"
expect "a missing kubelet file is said and skipped" $? "$out"

# ---- man pages --------------------------------------------------------------------------
for page in doc/evictd.8 doc/evictctl.8; do
	out=$(groff -man -ww -z "$page" 2>&1); rc=$?
	check "$page renders with groff -man -ww without warnings" [ $rc -eq 0 -a -z "$out" ]
	if command -v man >/dev/null; then
		out=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null); rc=$?
		check "man -l $page renders without warnings" [ $rc -eq 0 -a -z "$out" ]
	fi
done
# Every option --help lists is documented (as \-\-name in roff).
documented() {	# documented PAGE BINARY
	local missing=""
	for option in $("$2" --help 2>&1 | grep -oE '^ +--[a-z][a-z0-9-]*' | tr -d ' '); do
		grep -qF -- "$(sed 's/-/\\-/g' <<<"$option")" "$1" || missing="$missing $option"
	done
	echo "$missing"
}
if [ -x "$EVICTD" ]; then
	missing=$(documented doc/evictd.8 "$EVICTD")
	check "doc/evictd.8 documents every option of evictd --help (missing:$missing)" [ -z "$missing" ]
else
	fail "$EVICTD is built"
fi
for option in --metrics-address --event-log --control-socket; do
	check "doc/evictd.8 documents $option" grep -qF -- "$(sed 's/-/\\-/g' <<<"$option")" doc/evictd.8
done
if [ -x "$EVICTCTL" ]; then
	missing=$(documented doc/evictctl.8 "$EVICTCTL")
	check "doc/evictctl.8 documents every option of evictctl --help (missing:$missing)" [ -z "$missing" ]
	for command in status pods events; do
		check "doc/evictctl.8 documents the $command command" grep -qE "^\.(B|BR) $command" doc/evictctl.8
	done
else
	fail "$EVICTCTL is built"
fi
for section in SYNOPSIS DESCRIPTION OPTIONS "CONFIGURATION FILE" "EVICTION SIGNALS" "PROCESS SIGNALS" \
	"EXIT STATUS" FILES; do
	check "doc/evictd.8 has a $section section" grep -qx ".SH $section" doc/evictd.8
done

done_testing
