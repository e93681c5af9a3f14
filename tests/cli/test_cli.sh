#!/usr/bin/env bash
# The CLI contract of issue 2: --validate, exit status 2 on bad input, --once JSON.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
tmp=$(mktemp -d /tmp/evictd-cli-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# --validate with nothing configured: exactly the five kubelet default hard thresholds (the
# kubernetes profile: on a host without a kubelet, test_host_profile.sh).
out=$("$EVICTD" --validate --profile=kubernetes 2>"$tmp/err"); rc=$?
expected=$'hard memory.available<100Mi\nhard nodefs.available<10%\nhard nodefs.inodesFree<5%\nhard imagefs.available<15%\nhard imagefs.inodesFree<5%'
got=$(printf '%s\n' "$out" | grep -E '^(hard|soft) ')
if [ $rc -eq 0 ] && [ "$(sort <<<"$got")" = "$(sort <<<"$expected")" ]; then
	pass "--validate prints exactly the five default hard thresholds"
else
	fail "--validate prints exactly the five default hard thresholds" "rc=$rc got: $got"
fi

out=$("$EVICTD" --validate --eviction-hard='memory.available<500Mi' 2>&1); rc=$?
got=$(printf '%s\n' "$out" | grep -E '^(hard|soft) ')
if [ $rc -eq 0 ] && [ "$got" = "hard memory.available<500Mi" ]; then
	pass "--validate with one hard threshold prints it alone"
else
	fail "--validate with one hard threshold prints it alone" "rc=$rc got: $got"
fi

out=$("$EVICTD" --validate --eviction-soft='memory.available<1.5Gi' \
	--eviction-soft-grace-period='memory.available=1m30s' \
	--eviction-minimum-reclaim='memory.available=200Mi' 2>&1); rc=$?
if [ $rc -eq 0 ] && grep -qx 'soft memory.available<1.5Gi grace=1m30s' <<<"$out" &&
	grep -qx 'min-reclaim memory.available=200Mi' <<<"$out"; then
	pass "--validate prints soft thresholds with grace and min-reclaim"
else
	fail "--validate prints soft thresholds with grace and min-reclaim" "$out"
fi

# Soft without a grace period: exit 2, and the message names the grace period.
err=$("$EVICTD" --validate --eviction-soft='memory.available<1Gi' 2>&1 >/dev/null); rc=$?
if [ $rc -eq 2 ] && grep -q 'grace period' <<<"$err" && grep -q 'memory.available' <<<"$err"; then
	pass "soft threshold without grace period exits 2 naming the grace period"
else
	fail "soft threshold without grace period exits 2 naming the grace period" "rc=$rc: $err"
fi

# Each malformed value: one line naming key and value, exit 2, nothing starts.
err=$("$EVICTD" --validate --eviction-hard='memory.avail<1Gi,nodefs.available<lots' \
	--eviction-pressure-transition-period=soon 2>&1 >/dev/null); rc=$?
if [ $rc -eq 2 ] && grep -q 'unknown signal "memory.avail".*memory.available' <<<"$err" &&
	grep -q 'nodefs.available<lots' <<<"$err" && grep -q 'pressure-transition-period: "soon"' <<<"$err"; then
	pass "malformed values are each reported with key, value and what was expected"
else
	fail "malformed values are each reported with key, value and what was expected" "rc=$rc: $err"
fi

cat > "$tmp/kubelet.yaml" <<'YAML'
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
clusterDNS: [10.96.0.10]
evictionHard:
  memory.available: "300Mi"
  nodefs.available: "1Gi"
evictionMinimumReclaim:
  nodefs.available: "500Mi"
YAML
out=$("$EVICTD" --validate --config "$tmp/kubelet.yaml" 2>&1); rc=$?
if [ $rc -eq 0 ] && grep -qx 'hard memory.available<300Mi' <<<"$out" && grep -qx 'hard nodefs.available<1Gi' <<<"$out" &&
	grep -qx 'min-reclaim nodefs.available=500Mi' <<<"$out" && [ "$(grep -c '^hard ' <<<"$out")" = 2 ]; then
	pass "--config reads a KubeletConfiguration as is"
else
	fail "--config reads a KubeletConfiguration as is" "rc=$rc: $out"
fi
printf 'kind: KubeletConfiguration\nevictionHard:\n  memory.available: "1Gi\n' > "$tmp/broken.yaml"
"$EVICTD" --validate --config "$tmp/broken.yaml" >/dev/null 2>&1; rc=$?
check "a YAML syntax error exits 2" [ $rc -eq 2 ]
"$EVICTD" --validate --config "$tmp/missing.yaml" >/dev/null 2>&1; rc=$?
check "a missing config file exits 2" [ $rc -eq 2 ]

# --once --dry-run --output json on a fixture --root (not this host's live, moving memory.stat),
# checked exactly against doc/DESIGN.md §1: 8 GiB - (anon 2 GiB + file 3 GiB - inactive_file
# 2 GiB) = 5 GiB. The real kernel's numbers are checked in the guest (tests/vm/scenarios).
fx="$tmp/once-root"
mkdir -p "$fx/proc/sys/kernel" "$fx/sys/fs/cgroup"
printf 'MemTotal:        8388608 kB\nMemFree:         1048576 kB\nMemAvailable:    4194304 kB\n' >"$fx/proc/meminfo"
echo 4194304 >"$fx/proc/sys/kernel/pid_max"
echo 126000 >"$fx/proc/sys/kernel/threads-max"
echo '0.52 0.58 0.59 3/1187 40231' >"$fx/proc/loadavg"
echo 'cpuset cpu io memory pids' >"$fx/sys/fs/cgroup/cgroup.controllers"
printf 'anon 2147483648\nfile 3221225472\nkernel 0\nactive_file 1073741824\ninactive_file 2147483648\n' \
	>"$fx/sys/fs/cgroup/memory.stat"
json=$("$EVICTD" --once --dry-run --output json --root "$fx" --state-dir="$tmp/once-state" 2>"$tmp/once.err"); rc=$?
mem_total=8589934592
expected=5368709120
available=$(jq -r '.signals["memory.available"].available' <<<"$json" 2>/dev/null)
capacity=$(jq -r '.signals["memory.available"].capacity' <<<"$json" 2>/dev/null)
if [ $rc -eq 0 ] && [ "$available" = "$expected" ]; then
	pass "--once json memory.available is DESIGN.md §1's formula on a fixture root ($available)"
else
	fail "--once json memory.available is DESIGN.md §1's formula on a fixture root" "rc=$rc available=$available expected=$expected $(head -c 600 <<<"$json") $(cat "$tmp/once.err")"
fi
check "--once json memory capacity is MemTotal" [ "$capacity" = "$mem_total" ]
keys=$(jq -r '[has("signals"), has("thresholds"), has("conditions"), has("decision")] | all' <<<"$json" 2>/dev/null)
check "--once json has signals, thresholds, conditions and decision" [ "$keys" = true ]
conds=$(jq -r '.conditions | keys | join(",")' <<<"$json" 2>/dev/null)
check "--once json reports the three node conditions" [ "$conds" = "DiskPressure,MemoryPressure,PIDPressure" ]
# min(pid_max 4194304, threads-max 126000) - 1187 tasks
pid_ok=$(jq -r '.signals["pid.available"] | (.available == 124813 and .capacity == 126000)' <<<"$json" 2>/dev/null)
check "--once json reports pid.available (126000 - 1187)" [ "$pid_ok" = true ]

# A hard threshold above all memory makes a decision (no candidates: no pods source yet).
json=$("$EVICTD" --once --dry-run --output json --oom-guard=off --root "$fx" --state-dir="$tmp/once-state" \
	--eviction-hard="memory.available<$((mem_total + 1))" 2>/dev/null)
sig=$(jq -r '.decision.signal' <<<"$json" 2>/dev/null)
cond=$(jq -r '.conditions.MemoryPressure' <<<"$json" 2>/dev/null)
check "--once json decides on a met threshold and reports MemoryPressure" [ "$sig" = memory.available -a "$cond" = true ]
json=$("$EVICTD" --once --dry-run --output json --root "$fx" --state-dir="$tmp/once-state" --eviction-hard='memory.available<1' 2>/dev/null)
check "--once json decision is null when nothing is met" [ "$(jq -r '.decision' <<<"$json")" = null ]

"$EVICTD" --help | grep -q -- '--eviction-hard'; check "--help lists the kubelet flags" [ $? -eq 0 ]

# ---- help, usage errors, the default configuration file (issue 22) ----
help=$("$EVICTD" --help); rc=$?
short=$("$EVICTD" -h); rc_h=$?
[ $rc -eq 0 ] && [ $rc_h -eq 0 ] && [ "$short" = "$help" ]; check "-h prints the --help text and exits 0" [ $? -eq 0 ]
wide=$(awk 'length($0) > 100' <<<"$help")
check "--help: no line over 100 columns" [ -z "$wide" ]
missing=""
for group in "Thresholds" "Configuration sources" "Kubernetes API" "Graceful node shutdown" \
	"BPF and signals" "Actions" "Operations"; do
	grep -q "^$group.*:\$" <<<"$help" || missing="$missing $group"
done
check "--help is grouped by concern${missing:+ (missing:$missing)}" [ -z "$missing" ]
n_flags=$(grep -cE '^  --[a-z]' <<<"$help")
n_rows=$(grep -cE '^[[:space:]]+\{ "[a-z-]+", (NULL|"[a-zA-Z]+"), ' user/config/options.c)
check "--help lists each option once ($n_flags of $n_rows)" [ "$n_flags" -eq "$n_rows" ]

# Usage errors read like any command's: no timestamp, "did you mean" when a name is close.
err=$("$EVICTD" --evction-hard='memory.available<1Gi' 2>&1 </dev/null >/dev/null); rc=$?
if [ $rc -eq 2 ] && [ "$(head -1 <<<"$err")" = "evictd: unknown option '--evction-hard'; did you mean '--eviction-hard'?" ]; then
	pass "a mistyped flag: 'did you mean', no timestamp, exit 2"
else
	fail "a mistyped flag: 'did you mean', no timestamp, exit 2" "rc=$rc: $err"
fi
err=$("$EVICTD" --bogus 2>&1 </dev/null >/dev/null); rc=$?
[ $rc -eq 2 ] && [ "$(head -1 <<<"$err")" = "evictd: unknown option '--bogus' (see --help)" ]; check "an unknown flag with nothing close: one plain line, exit 2" [ $? -eq 0 ]
err=$("$EVICTD" --validate --eviction-hard='memory.availble<1Gi' 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && grep -q '^evictd: --eviction-hard: unknown signal "memory.availble".*did you mean memory.available?' <<<"$err"; check "a mistyped signal: did you mean memory.available" [ $? -eq 0 ]
err=$("$EVICTD" --validate --eviction-hard 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && grep -q "^evictd: option '--eviction-hard' requires a value" <<<"$err"; check "a flag without its value says so" [ $? -eq 0 ]

# /etc/evictd/config.yaml below --root: read when present (and listed), an explicit --config
# wins, a missing one is fine, an invalid or unreadable one is an error.
dr="$tmp/default-root"
mkdir -p "$dr/etc/evictd"
out=$("$EVICTD" --validate --root="$dr" 2>&1); rc=$?
[ $rc -eq 0 ] && ! grep -q '^config ' <<<"$out"; check "no default config file: not an error, none listed" [ $? -eq 0 ]
printf 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nevictionHard: {memory.available: "700Mi"}\n' \
	>"$dr/etc/evictd/config.yaml"
out=$("$EVICTD" --validate --root="$dr" 2>&1); rc=$?
if [ $rc -eq 0 ] && grep -qx 'hard memory.available<700Mi' <<<"$out" &&
	grep -qx "config $dr/etc/evictd/config.yaml (default)" <<<"$out" &&
	grep -q "^source hard memory.available: .*$dr/etc/evictd/config.yaml" <<<"$out"; then
	pass "the default config file is read and listed by --validate"
else
	fail "the default config file is read and listed by --validate" "rc=$rc: $out"
fi
printf 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nevictionHard: {memory.available: "900Mi"}\n' \
	>"$tmp/explicit.yaml"
out=$("$EVICTD" --validate --root="$dr" --config="$tmp/explicit.yaml" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -qx 'hard memory.available<900Mi' <<<"$out" && ! grep -q '700Mi\|^config .*(default)' <<<"$out"; check "an explicit --config replaces the default file" [ $? -eq 0 ]
printf 'evictionHard: [not, a, map\n' >"$dr/etc/evictd/config.yaml"
"$EVICTD" --validate --root="$dr" >/dev/null 2>&1; rc=$?
check "an invalid default config file exits 2" [ $rc -eq 2 ]
rm "$dr/etc/evictd/config.yaml"
mkdir "$dr/etc/evictd/config.yaml"
err=$("$EVICTD" --validate --root="$dr" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && grep -q "$dr/etc/evictd/config.yaml" <<<"$err"; check "an unreadable default config file (a directory) exits 2 naming it" [ $? -eq 0 ]

done_testing
