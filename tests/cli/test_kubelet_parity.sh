#!/usr/bin/env bash
# Issue 13: evictd reads its configuration as the kubelet does. The acceptance commands,
# repeated map flags, the defaults and where each value came from (--validate). Under
# --profile=kubernetes: this host may have no kubelet (the host profile is test_host_profile.sh).
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
tmp=$(mktemp -d /tmp/evictd-parity-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

thresholds() { grep -E '^(hard|soft) ' <<<"$1" | sort; }

# Acceptance 1: a soft threshold alone keeps the five default hard thresholds
# (v1beta1 defaults.go: evictionHard is defaulted only when it is not set at all).
out=$("$EVICTD" --profile=kubernetes --validate --eviction-soft='memory.available<300Mi' \
	--eviction-soft-grace-period='memory.available=1m30s' 2>"$tmp/err"); rc=$?
expected=$(sort <<'EOF'
hard memory.available<100Mi
hard nodefs.available<10%
hard nodefs.inodesFree<5%
hard imagefs.available<15%
hard imagefs.inodesFree<5%
soft memory.available<300Mi grace=1m30s
EOF
)
got=$(thresholds "$out")
if [ $rc -eq 0 ] && [ "$got" = "$expected" ]; then
	pass "--eviction-soft alone: the five default hard thresholds and the soft one"
else
	fail "--eviction-soft alone: the five default hard thresholds and the soft one" "rc=$rc got: $got $(cat "$tmp/err")"
fi

# Acceptance 2: repeated --eviction-hard merge key by key (component-base map flag Set).
out=$("$EVICTD" --profile=kubernetes --validate --eviction-hard='memory.available<100Mi' \
	--eviction-hard='nodefs.available<10%' 2>"$tmp/err"); rc=$?
got=$(thresholds "$out")
if [ $rc -eq 0 ] && [ "$got" = $'hard memory.available<100Mi\nhard nodefs.available<10%' ]; then
	pass "repeated --eviction-hard: both thresholds, nothing else"
else
	fail "repeated --eviction-hard: both thresholds, nothing else" "rc=$rc got: $got $(cat "$tmp/err")"
fi

# The same key again: the later value, as MapStringString.Set does.
out=$("$EVICTD" --profile=kubernetes --validate --eviction-hard='memory.available<100Mi,pid.available<1000' \
	--eviction-hard='memory.available<2Gi' 2>&1); rc=$?
got=$(thresholds "$out")
check "a key repeated across --eviction-hard flags takes the later value" \
	[ $rc -eq 0 -a "$got" = $'hard memory.available<2Gi\nhard pid.available<1000' ]

# Repeated --eviction-soft-grace-period and --eviction-minimum-reclaim merge too.
out=$("$EVICTD" --profile=kubernetes --validate --eviction-hard= --eviction-soft='memory.available<1Gi,nodefs.available<2Gi' \
	--eviction-soft-grace-period=memory.available=1m --eviction-soft-grace-period=nodefs.available=2m \
	--eviction-minimum-reclaim=memory.available=10Mi --eviction-minimum-reclaim=nodefs.available=1Gi 2>&1); rc=$?
if [ $rc -eq 0 ] && grep -qx 'soft memory.available<1Gi grace=1m0s' <<<"$out" &&
	grep -qx 'soft nodefs.available<2Gi grace=2m0s' <<<"$out" &&
	grep -qx 'min-reclaim memory.available=10Mi' <<<"$out" && grep -qx 'min-reclaim nodefs.available=1Gi' <<<"$out"; then
	pass "repeated grace-period and minimum-reclaim flags merge key by key"
else
	fail "repeated grace-period and minimum-reclaim flags merge key by key" "rc=$rc: $out"
fi

check "--validate names the source of grace periods and minimum reclaims" \
	grep -qx 'source min-reclaim nodefs.available: --eviction-minimum-reclaim' <<<"$out"

# The first flag clears what the file set (kubeletConfigFlagPrecedence re-parses the flags).
cat > "$tmp/kubelet.yaml" <<'YAML'
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
evictionHard:
  memory.available: "1Gi"
  imagefs.available: "20%"
evictionPressureTransitionPeriod: 0s
YAML
out=$("$EVICTD" --profile=kubernetes --validate --config "$tmp/kubelet.yaml" --eviction-hard='pid.available<500' 2>&1); rc=$?
got=$(thresholds "$out")
check "--eviction-hard replaces the file's evictionHard" [ $rc -eq 0 -a "$got" = 'hard pid.available<500' ]
check "--validate names the flag as the source" grep -qx 'source hard pid.available: --eviction-hard' <<<"$out"
check "evictionPressureTransitionPeriod: 0s in a file is defaulted to 5m" \
	grep -qx 'pressure-transition-period 5m0s' <<<"$out"
out=$("$EVICTD" --profile=kubernetes --validate --config "$tmp/kubelet.yaml" 2>&1); rc=$?
check "--validate names the file and key as the source" \
	grep -qx "source hard imagefs.available: $tmp/kubelet.yaml: evictionHard" <<<"$out"
check "--validate names the default as the source" \
	grep -qx 'source --eviction-pressure-transition-period: '"$tmp/kubelet.yaml"': evictionPressureTransitionPeriod' <<<"$out"
out=$("$EVICTD" --profile=kubernetes --validate --eviction-pressure-transition-period=0s 2>&1); rc=$?
check "a 0s transition period given as a flag stays 0s" grep -qx 'pressure-transition-period 0s' <<<"$out"

# mergeDefaultEvictionSettings: the defaults fill in what evictionHard does not name.
out=$("$EVICTD" --profile=kubernetes --validate --eviction-hard='memory.available<500Mi' --merge-default-eviction-settings 2>&1); rc=$?
got=$(thresholds "$out")
expected=$(sort <<'EOF'
hard memory.available<500Mi
hard nodefs.available<10%
hard nodefs.inodesFree<5%
hard imagefs.available<15%
hard imagefs.inodesFree<5%
EOF
)
check "mergeDefaultEvictionSettings keeps the defaults evictionHard does not name" [ $rc -eq 0 -a "$got" = "$expected" ]

# allocatableMemory.available follows the hard memory.available thresholds (enforceNodeAllocatable=pods).
out=$("$EVICTD" --profile=kubernetes --validate --eviction-hard='memory.available<300Mi' 2>&1); rc=$?
check "--validate shows the derived allocatableMemory.available threshold" \
	grep -qx 'derived hard allocatableMemory.available<300Mi (from memory.available; enforceNodeAllocatable: pods)' <<<"$out"
out=$("$EVICTD" --profile=kubernetes --validate --eviction-hard='memory.available<300Mi' --enforce-node-allocatable=none 2>&1); rc=$?
check "--enforce-node-allocatable=none: no allocatable threshold" \
	[ $rc -eq 0 -a -z "$(grep allocatableMemory <<<"$out" | grep -v '^enforce')" ]

# Values the kubelet refuses: exit 2, one line each.
for bad in 'memory.available<0' 'memory.available<-1Mi' 'memory.available<101%' 'memory.available<NaN%' \
	'<1Gi' 'memory.available' 'memory.available<1Gi, '; do
	"$EVICTD" --profile=kubernetes --validate --eviction-hard="$bad" >/dev/null 2>"$tmp/err"; rc=$?
	check "--eviction-hard='$bad' exits 2" [ $rc -eq 2 -a "$(wc -l <"$tmp/err")" -ge 1 ]
done
"$EVICTD" --profile=kubernetes --validate --eviction-minimum-reclaim=memory.available=0% >/dev/null 2>&1; rc=$?
check "a 0% minimum reclaim exits 2 (parseMinimumReclaims: must be positive)" [ $rc -eq 2 ]
"$EVICTD" --profile=kubernetes --validate --eviction-minimum-reclaim=memory.available=150% >/dev/null 2>&1; rc=$?
check "a 150% minimum reclaim is accepted (no upper bound)" [ $rc -eq 0 ]
# Values the kubelet accepts that evictd refused before.
out=$("$EVICTD" --profile=kubernetes --validate --eviction-hard='memory.available<10%%,nodefs.available<+5%' 2>&1); rc=$?
check "'10%%' and '+5%' are percentages, as strconv.ParseFloat reads them" \
	[ $rc -eq 0 -a "$(thresholds "$out")" = $'hard memory.available<10%%\nhard nodefs.available<+5%' ]
out=$("$EVICTD" --profile=kubernetes --validate --eviction-soft='memory.available<1Gi' --eviction-soft-grace-period=memory.available=0s 2>&1); rc=$?
check "a soft threshold with a 0s grace period acts as a hard one (isHardEvictionThreshold)" \
	grep -qx 'hard memory.available<1Gi' <<<"$out"

# --config-dir: the kubelet's drop-ins, merged key by key in lexical order; --validate names them.
mkdir -p "$tmp/conf.d/sub"
printf 'kind: KubeletConfiguration\nevictionHard:\n  nodefs.available: "5%%"\n' >"$tmp/conf.d/10-disk.conf"
printf 'kind: KubeletConfiguration\nevictionHard:\n  memory.available: "2Gi"\n' >"$tmp/conf.d/20-mem.conf"
printf 'kind: KubeletConfiguration\nevictionHard:\n  pid.available: "1"\n' >"$tmp/conf.d/30-ignored.yaml"
out=$("$EVICTD" --profile=kubernetes --validate --config "$tmp/kubelet.yaml" --config-dir "$tmp/conf.d" 2>&1); rc=$?
got=$(thresholds "$out")
check "--config-dir drop-ins merge over the file key by key (*.conf only)" \
	[ $rc -eq 0 -a "$got" = $'hard imagefs.available<20%\nhard memory.available<2Gi\nhard nodefs.available<5%' ]
check "--validate names the drop-in a value came from" \
	grep -qx "source hard memory.available: $tmp/conf.d/20-mem.conf: evictionHard" <<<"$out"

# The hard-eviction grace: evictd's default kills at once; the kubelet's 1s on request.
out=$("$EVICTD" --profile=kubernetes --validate 2>&1)
check "hard evictions kill at once by default" grep -qx 'hard-eviction-grace-period 0s' <<<"$out"
out=$("$EVICTD" --profile=kubernetes --validate --hard-eviction-grace-period=1s 2>&1)
check "--hard-eviction-grace-period=1s is the kubelet's" grep -qx 'hard-eviction-grace-period 1s' <<<"$out"

done_testing
