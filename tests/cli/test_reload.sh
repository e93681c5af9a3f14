#!/usr/bin/env bash
# SIGHUP re-reads the configuration: a bad file keeps the running configuration and says
# why; a good one takes effect (evictctl shows the new thresholds). The kubelet's profile is
# pinned: on this host "auto" picks a host profile, whose swap and zram gates would join the list.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
tmp=$(mktemp -d /tmp/evictd-reload-XXXXXX)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

cat > "$tmp/config.yaml" <<'YAML'
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
evictionHard:
  memory.available: "100Mi"
YAML
"$EVICTD" --profile=kubernetes --dry-run --no-bpf --state-dir="$tmp/state" --config "$tmp/config.yaml" --control-socket="$tmp/sock" \
	--metrics-address=off --event-log=off >"$tmp/out" 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ -S "$tmp/sock" ] && break; sleep 0.1; done
thresholds() { "$BUILD_DIR/evictctl" --socket "$tmp/sock" status --json | jq -r '[.thresholds[] | select(.signal != "oom.guard" and (.derived | not)) | "\(.signal)<\(.value)"] | join(",")'; }
check "starts with the file's threshold ($(thresholds))" [ "$(thresholds)" = "memory.available<100Mi" ]

printf 'kind: KubeletConfiguration\nevictionHard:\n  memory.avail: "1Gi"\n' > "$tmp/config.yaml"
kill -HUP "$pid"
for _ in $(seq 1 50); do grep -q "keeping the running one" "$tmp/out" && break; sleep 0.1; done
check "a bad reload is refused with the reason" grep -q 'unknown signal "memory.avail"' "$tmp/out"
check "a bad reload keeps the daemon running" kill -0 "$pid"
check "a bad reload keeps the old thresholds ($(thresholds))" [ "$(thresholds)" = "memory.available<100Mi" ]

printf 'kind: KubeletConfiguration\nevictionHard:\n  memory.available: "200Mi"\n  pid.available: "1000"\n' > "$tmp/config.yaml"
kill -HUP "$pid"
for _ in $(seq 1 50); do grep -q "configuration reloaded" "$tmp/out" && break; sleep 0.1; done
sleep 0.2
check "a good reload takes effect ($(thresholds))" [ "$(thresholds)" = "memory.available<200Mi,pid.available<1000" ]

kill -TERM "$pid"; wait "$pid"; rc=$?; pid=""
check "SIGTERM after reloads exits 0" [ $rc -eq 0 ]
done_testing
