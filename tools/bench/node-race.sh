#!/usr/bin/env bash
# node-race.sh - the race on a real Kubernetes node (make bench part node-race): the same hog
# pod on the same node (tests/cluster/test_node.sh's guest: the kubelet v1.34 built from source,
# containerd 1.6, runc, cgroup v2, 2 GiB, Debian's 6.1 kernel, under QEMU TCG) in three
# configurations, one boot each:
#   kubelet        the kubelet's eviction manager alone at its defaults (NODE_EVICTD=0; the
#                  kubelet configuration's evictionHard memory.available<100Mi, polled every 10 s:
#                  evictionMonitoringPeriod, pkg/kubelet/kubelet.go)
#   evictd         with evictd, deployed by kubectl apply -k at its shipped thresholds
#                  (memory.available<500Mi hard, tools/deploy/configmap.yaml)
#   kubelet-hk1s   the kubelet alone with --housekeeping-interval=1s (cAdvisor's stats every
#                  second; the eviction manager's own loop stays at 10 s)
# In each boot tools/bench/node-race-runs.sh runs NODE_RACE_RUNS runs per rate of
# NODE_RACE_RATES (MiB/s) with NODE_RACE_INNOCENTS small pods beside the hog, and the guest
# samples memory.available every NODE_SAMPLER_INTERVAL s (tools/vm/node/node-sampler.sh);
# tools/bench/node-race-analyze.py makes OUTDIR/runs.tsv and OUTDIR/summary.md.
#
# Usage: tools/bench/node-race.sh OUTDIR            run (NODE_RACE_CONFIGS: a subset, in order)
#        tools/bench/node-race.sh --analyze OUTDIR  re-analyse what is there
#        tools/bench/node-race.sh --section OUTDIR SECONDS   results.md's section (run.sh)
set -uo pipefail
cd "$(dirname "$0")/../.."
mode=run
case ${1:-} in --analyze|--section) mode=${1#--}; shift ;; esac
out=${1:?usage: node-race.sh [--analyze|--section] OUTDIR}
export NODE_RACE_RATES=${NODE_RACE_RATES:-50 200} NODE_RACE_RUNS=${NODE_RACE_RUNS:-5}
export NODE_RACE_INNOCENTS=${NODE_RACE_INNOCENTS:-3} NODE_SAMPLER_INTERVAL=${NODE_SAMPLER_INTERVAL:-0.1}

if [ "$mode" = section ]; then
	took=${2:-?}
	[ -f "$out/summary.md" ] || exit 0
	echo "## The race on a real node: evictd against the kubelet's eviction manager"
	echo
	echo "One hog pod (a Deployment's BestEffort pod, \`memhog --rate R\`: allocates and touches R MiB/s until stopped) on tests/cluster/test_node.sh's node: the kubelet v1.34.4 (built from source), containerd 1.6, runc, cgroup v2, cgroupfs driver, in a QEMU TCG guest (2 vCPUs, 2 GiB, no swap, Debian's 6.1 kernel) joined to a real control plane on this host; $(cat "$out/innocents" 2>/dev/null || echo 3) small Burstable pods beside it. One boot per configuration, the runs looped in it (tools/bench/node-race-runs.sh); the part took $took s. $(cat "$out/runs-info" 2>/dev/null)"
	echo
	cat "$out/summary.md"
	echo
	awk 'FNR == 1 { p = "" } $2 == "S" { if (p != "" && $3 - p < 10) { d = $3 - p; n++; s += d; if (d > m) m = d } p = $3 }
		END { if (n) printf "Sampler: %d intervals, mean %.3f s, longest %.2f s (asked: 0.1 s).\n", n, s / n, m }' "$out"/*/sampler-stamped.log
	echo
	cat <<'TXT'
- *Configurations*: **kubelet** = the kubelet's eviction manager alone at its default hard threshold (`evictionHard: memory.available: 100Mi`, set explicitly in the node's kubelet configuration; no evictd); **evictd** = evictd deployed with `kubectl apply -k` at its shipped thresholds (`memory.available<500Mi` hard, tools/deploy/configmap.yaml; only `evictionPressureTransitionPeriod` shortened to 30s), the kubelet's 100Mi still live behind it; **kubelet-hk1s** = the kubelet alone with `--housekeeping-interval=1s`. The kubelet's eviction manager runs its loop every 10 s whatever the housekeeping interval (`evictionMonitoringPeriod`, pkg/kubelet/kubelet.go; no memcg notification: `kernelMemcgNotification` is off by default); the housekeeping interval only makes cAdvisor's statistics it reads fresher.
- *memory.available* = MemTotal − (anon + file − inactive_file) of the root cgroup's memory.stat, the kubelet's formula on cgroup v2 (the root has no memory.current; doc/DESIGN.md §1), sampled in the guest every NODE_SAMPLER_INTERVAL (0.1 s) plus the loop's own time (tools/vm/node/node-sampler.sh, bash builtins, to a serial port; the sample's stamp is taken after its reads). *Crossing* = its fall below the threshold of the configuration's actor (500Mi for evictd, 100Mi for the kubelet), interpolated between the two samples around it. The sampling is coarse on a loaded host (see the interval line below): evictd, woken by the kernel, often read its own memory.available below 500Mi before the next sample did, hence negative *crossing → evictd's decision*; where no sample fell below 500Mi at all, evictd's own reading at its decision is the crossing. Where memory.available never fell below the threshold (the kernel OOM killer acted first, above it), the run has no crossing and its times are "—".
- *500Mi crossing → kill*: from the fall below evictd's shipped threshold in every configuration, one clock for all three (how long the node ran below 500Mi before anything killed the hog). *Acted first* and *kill*: the earliest of evictd's cgroup.kill (its log line "kill: PATH empty X ms after the kill", by evictd's own stamp, less X), the kubelet eviction manager's "Evicting pod" line (eviction_manager.go evictPod, just before it kills the pod; klog time), and the kernel OOM killer (the first sample whose /proc/vmstat oom_kill grew: up to one sample interval late). *Pod Failed* and *replacement created*: when a host-side `kubectl get pods -w` saw the hog's pod Failed and the ReplicaSet's new pod appear. A kernel OOM kill of the hog's container restarts it in place (restartPolicy Always): no Failed pod, no replacement ("—").
- *Other pods lost*: innocent pods whose phase or restart count changed during the run. *Kernel OOM kills*: /proc/vmstat oom_kill's growth over the run, victims from the guest console's "Out of memory: Killed process" lines (here every kill of the hog is two: two OOM invocations chose the same process, 1 ms apart; the processes killed are counted in brackets).
- *Clocks*: the guest stamps each sample with its CLOCK_REALTIME; the host stamps each sample line as it reads it from the serial port's file (`tail -F`, bash EPOCHREALTIME). Per run, offset = the least (host − guest) over the run's samples (offset plus the fastest line's delivery, ≥ 0); guest times (samples, klog, containerd's log stamps) are moved to the host's clock with it, the watch's times are the host's. The column gives the offsets measured (median, range over runs).
- TCG: every guest time includes emulation on a 2-core host shared with other work. The hog's achieved rate (in brackets) is memhog's own average from its start to its end (its progress lines): below the asked one where the guest cannot keep up, and lowest where the hog ran on into reclaim near exhaustion (the kernel OOM runs); memory.available's own slope is runs.tsv's avail_rate.
TXT
	echo
	echo "Per run: bench/node-race/runs.tsv. Command: \`tools/bench/run.sh node-race\` (= \`tools/bench/node-race.sh bench/node-race\`; NODE_RACE_RATES=\"$NODE_RACE_RATES\" NODE_RACE_RUNS=$NODE_RACE_RUNS; one configuration: NODE_RACE_CONFIGS=evictd)."
	exit 0
fi

if [ "$mode" = run ]; then
	mkdir -p "$out"
	echo "$NODE_RACE_INNOCENTS" >"$out/innocents"
	echo "$NODE_RACE_RUNS runs per rate, rates $NODE_RACE_RATES MiB/s." >"$out/runs-info"
	image=${IMAGE_ARCHIVE:-build/evictd-image.tar}
	[ -f "$image" ] || { echo "node-race: no evictd image ($image): make image" >&2; exit 1; }
	for config in ${NODE_RACE_CONFIGS:-kubelet evictd kubelet-hk1s}; do
		rm -rf "${out:?}/$config"; mkdir -p "$out/$config"
		env=(NODE_RACE_OUT="$PWD/$out/$config" NODE_SCENARIOS="$PWD/tools/bench/node-race-runs.sh")
		case $config in
			kubelet) env+=(NODE_EVICTD=0) ;;
			evictd) env+=(NODE_EVICTD_SHIPPED=1) ;;
			kubelet-hk1s) env+=(NODE_EVICTD=0 NODE_KUBELET_ARGS=--housekeeping-interval=1s) ;;
			*) echo "node-race: unknown configuration $config" >&2; exit 2 ;;
		esac
		t0=$(date +%s)
		echo "# node-race: configuration $config: ${env[*]} tests/cluster/test_node.sh"
		env "${env[@]}" nice bash tests/cluster/test_node.sh >"$out/$config/test_node.log" 2>&1
		echo "# node-race: $config took $(( $(date +%s) - t0 )) s: $(grep -c '^ok' "$out/$config/test_node.log") ok, $(grep -c '^not ok' "$out/$config/test_node.log") not ok"
		grep '^not ok\|^# node-race' "$out/$config/test_node.log"
	done
fi
# Every configuration's directory there, in the table's order; CONFIG@WHAT is a second boot of
# CONFIG (another rate: NODE_RACE_RATES=200 node-race.sh DIR2, then DIR2/CONFIG moved to
# OUTDIR/CONFIG@200).
specs=()
for c in kubelet kubelet-hk1s evictd; do
	for dir in "$out/$c" "$out/$c"@*; do
		[ -f "$dir/meta.tsv" ] || continue
		case $c in evictd) thr=500 ;; *) thr=100 ;; esac
		specs+=("$(basename "$dir"):$thr")
	done
done
python3 tools/bench/node-race-analyze.py "$out" "${specs[@]}"
