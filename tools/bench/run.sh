#!/usr/bin/env bash
# make bench: every benchmark, side by side in one run; results in bench/results.md (the tables,
# the targets, the exact commands) and bench/memory-race.png.
# Usage: tools/bench/run.sh [PART...]
#        tools/bench/run.sh --report    (rewrite results.md from the last run, run nothing)
#   parts: overhead footprint scale host-race race race-systemd plain-host fleet benign-ahead reserve
#          node-race (default: all, in this order)
#   overhead   BPF programs attached vs not (A/B alternating): fork/exit, page-cache read,
#              write, create/unlink loops, per configuration (default, --bpf-inspect, the
#              memory-hook candidates); kernel event -> handler latency
#              (tools/bench/bpf-overhead.sh). tools/bench/overhead-guest.sh runs the loops on
#              Debian 6.1 in the TCG guest, where the fentry memory hook loads (not part of
#              make bench: under TCG on a shared host its spread is ±10%)
#   footprint  evictd's CPU idle and on a busy node, its RSS (tools/bench/footprint.sh)
#   scale      one full evaluation over 1,000 pods, cgroup.kill of a 1,000-process pod, on this
#              host and in the QEMU guest (tools/bench/scale.sh)
#   host-race  crossing -> cgroup.kill on this machine, hog at 1 GiB/s and as fast as it can
#              (tools/bench/host-race.sh)
#   race       the memory race against the peers in the QEMU guest (tools/bench/memory-race.sh)
#   race-systemd  the same race in a Debian systemd guest, where systemd-oomd and nohang (Python)
#              can run, beside evictd and earlyoom (tools/bench/memory-race-systemd.sh)
#   plain-host the race on the peers' ground: a Debian systemd guest with zram swap, a session and two
#              services; evictd, earlyoom, nohang, systemd-oomd with their packaged defaults and at
#              matched thresholds, against a fast hog, a slow leak, a tmpfs filler and a thrashing
#              working set (tools/bench/plain-host-race.sh; PHR_* there)
#   fleet      500 nodes' pod sources (the real pods source of libevictd.a each, its own node
#              identity) against a real kube-apiserver (tests/cluster) through a real restart and
#              an etcd compaction, beside as many client-go reflectors in the same run, measured by
#              the apiserver's /metrics (tools/bench/fleet.sh; FLEET_NODES and the others there)
#   benign-ahead  --act-ahead against three benign loads near a hard threshold: BENIGN_RUNS (10)
#              boots of tests/vm/scenarios/25-benign-ahead.sh, the kills per load (want 0) and the
#              closest estimates, then BENIGN_PROOF_RUNS (2) boots at --act-ahead=3s, which must
#              fail (tools/bench/benign-ahead.sh)
#   reserve    the least headroom that wins: per hog rate, the smallest memory.available<X at
#              which evictd (defaults, SCHED_FIFO as shipped, --no-bpf, --act-ahead=1s) and
#              earlyoom stop the hog before the kernel OOM killer in every one of RESERVE_RUNS
#              (10) runs, beside the physical floor (min watermark + rate x detection latency);
#              one guest boot per kernel, 6.1 and 6.12 (tools/bench/reserve.sh)
#   node-race  the race on a real Kubernetes node (the kubelet v1.34, containerd, runc in a QEMU
#              guest joined to a real control plane): one hog pod, the kubelet's eviction manager
#              alone at its defaults, with evictd at its shipped thresholds, and the kubelet alone
#              with --housekeeping-interval=1s, one boot each (tools/bench/node-race.sh;
#              NODE_RACE_RATES, NODE_RACE_RUNS, NODE_RACE_CONFIGS there)
# Environment: FOOTPRINT_SECONDS (60), RACE_RUNS (12), RACE_SYSTEMD_RUNS (7), HOST_RACE_RUNS (20),
# FLEET_SMOKE=1 (the fleet part's --smoke: 20 nodes, under 3 min), and those of each part's
# script. Parts not run keep nothing: results.md describes this run only.
set -uo pipefail
cd "$(dirname "$0")/../.."
mkdir -p bench
out=bench/results.md
raw=bench/raw.txt
env_file=bench/run.env
export RACE_RUNS=${RACE_RUNS:-12}
export RACE_SYSTEMD_RUNS=${RACE_SYSTEMD_RUNS:-7}
export HOST_RACE_RUNS=${HOST_RACE_RUNS:-20}
declare -A took
report_only=0
if [ "${1:-}" = --report ]; then
	# Rewrite results.md from the last run's bench/raw.txt and bench/run.env, running nothing.
	report_only=1
	[ -f "$raw" ] && [ -f "$env_file" ] || { echo "bench: no previous run (bench/raw.txt, bench/run.env)" >&2; exit 1; }
	# shellcheck disable=SC1090
	. "$env_file"
else
	parts=("$@")
	[ ${#parts[@]} -gt 0 ] || parts=(overhead footprint scale host-race race race-systemd plain-host fleet benign-ahead reserve node-race)
	: >"$raw"
	load_start=$(cut -d' ' -f1-3 /proc/loadavg)
	run_date=$(date -u +%Y-%m-%dT%H:%MZ)
	# make bench rebuilt build/evictd from the working tree just before this
	built_from="$(git log -1 --format='%h' 2>/dev/null || echo '?')$(git diff --quiet HEAD -- user bpf 2>/dev/null || echo ' plus uncommitted changes in user/ or bpf/')"
fi
t_start=$(date +%s)

# host-race compares with the previous release in the same run (ABBA): HOST_RACE_PREV (a binary),
# else HOST_RACE_PREV_REF (a commit, default the last main before issue 24's detection-latency
# work) built in a scratch worktree under /tmp; "none": this build alone.
export HOST_RACE_PREV_REF=${HOST_RACE_PREV_REF:-6de0a2d}
prev_release() {
	local dir
	HOST_RACE_PREV=${HOST_RACE_PREV:-}
	[ -n "$HOST_RACE_PREV" ] || [ "$HOST_RACE_PREV_REF" = none ] && return 0
	dir=/tmp/evictd-prev-$(git rev-parse --short "$HOST_RACE_PREV_REF" 2>/dev/null || echo unknown)
	if [ ! -x "$dir/build/evictd" ]; then
		[ -d "$dir" ] || git worktree add --detach "$dir" "$HOST_RACE_PREV_REF" >/dev/null 2>&1 ||
			{ echo "bench: cannot check out $HOST_RACE_PREV_REF; host-race without the previous release" >&2; return 0; }
		make -C "$dir" -s build/evictd >/dev/null 2>&1 ||
			{ echo "bench: cannot build $HOST_RACE_PREV_REF in $dir; host-race without the previous release" >&2; return 0; }
	fi
	HOST_RACE_PREV=$dir/build/evictd
}

run_part() {	# run_part NAME COMMAND...: print and keep its output
	local name=$1 t0=$(date +%s)
	shift
	echo "## $name: $*" | tee -a "$raw"
	"$@" 2>&1 | tee -a "$raw"
	took[$name]=$(( $(date +%s) - t0 ))
	echo "## $name took ${took[$name]} s (load now $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$raw"
}

[ $report_only = 1 ] || for part in "${parts[@]}"; do
	case "$part" in
	overhead) run_part overhead tools/bench/bpf-overhead.sh ;;
	footprint) run_part footprint tools/bench/footprint.sh "${FOOTPRINT_SECONDS:-60}" ;;
	scale) run_part scale tools/bench/scale.sh ;;
	host-race) prev_release && run_part host-race env HOST_RACE_PREV="$HOST_RACE_PREV" tools/bench/host-race.sh bench/host-race ;;
	race) rm -rf bench/memory-race; run_part race tools/bench/memory-race.sh bench/memory-race ;;
	race-systemd) rm -rf bench/memory-race-systemd; run_part race-systemd tools/bench/memory-race-systemd.sh bench/memory-race-systemd ;;
	plain-host) rm -rf bench/plain-host; run_part plain-host tools/bench/plain-host-race.sh bench/plain-host ;;
	fleet) run_part fleet tools/bench/fleet.sh ${FLEET_SMOKE:+--smoke} ;;
	benign-ahead) run_part benign-ahead tools/bench/benign-ahead.sh bench/benign-ahead ;;
	reserve)
		rm -rf bench/reserve bench/reserve-6.12
		run_part reserve tools/bench/reserve.sh bench/reserve
		EVICTD_VM_KERNEL=6.12 run_part reserve-6.12 tools/bench/reserve.sh bench/reserve-6.12
		took[reserve]=$(( took[reserve] + took[reserve-6.12] )) ;;
	node-race) run_part node-race tools/bench/node-race.sh bench/node-race ;;
	*) echo "bench: unknown part $part" >&2; exit 2 ;;
	esac
done
if [ $report_only = 0 ]; then
	total=$(( $(date +%s) - t_start ))
	load_end=$(cut -d' ' -f1-3 /proc/loadavg)
	RACE_RUNS_USED=$RACE_RUNS HOST_RACE_RUNS_USED=$HOST_RACE_RUNS RACE_SYSTEMD_RUNS_USED=$RACE_SYSTEMD_RUNS
	declare -p parts took load_start load_end run_date built_from total RACE_RUNS_USED HOST_RACE_RUNS_USED RACE_SYSTEMD_RUNS_USED >"$env_file"
else
	RACE_RUNS=$RACE_RUNS_USED HOST_RACE_RUNS=$HOST_RACE_RUNS_USED RACE_SYSTEMD_RUNS=${RACE_SYSTEMD_RUNS_USED:-$RACE_SYSTEMD_RUNS}
fi

# ---- helpers over the raw output --------------------------------------------------------
has() { [[ " ${parts[*]} " == *" $1 "* ]]; }
num() { grep -oE "$2[0-9.]+" <<<"$1" | head -n1 | grep -oE '[0-9.]+$'; }	# num TEXT PREFIX
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 <= b + 0) }'; }
verdict() { if "$@"; then echo met; else echo "**not met**"; fi; }
rsum=bench/memory-race/summary.tsv
rcol() {	# rcol CONTENDER MODE COLUMN: a column of the race summary
	[ -f "$rsum" ] && awk -F'\t' -v c="$1" -v m="$2" -v col="$3" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
		$1 == c && $2 == m { print $h[col] }' "$rsum"
}

{
	echo "# evictd benchmarks"
	echo
	echo "Run: \`make bench\` (started $run_date), host kernel $(uname -r), $(nproc) CPUs, evictd built from commit $built_from, load average at the start $load_start, at the end $load_end (other work shares this machine: the load is part of the result). Took $((total / 60)) min $((total % 60)) s: $(for p in "${parts[@]}"; do printf '%s %s s, ' "$p" "${took[$p]:-?}"; done | sed 's/, $//')."
	echo
	if [ -n "${note:-}" ]; then	# a note about this run, kept in bench/run.env
		echo "Note: $note"
		echo
	fi

	if has race && [ -f bench/memory-race/summary.md ]; then
		thr=$(sed -n 's/^guest .*threshold=\([0-9]*\).*/\1/p' bench/memory-race/guest/runs.txt)
		ginfo=$(sed -n 's/^guest //p' bench/memory-race/guest/runs.txt)
		echo "## Memory race (QEMU TCG guest, 1 GiB, real cgroup v2, no swap)"
		echo
		echo "N = $RACE_RUNS runs per contender and hog mode, each contender in turn in the same guest boot, a new BestEffort hog pod per run. Threshold: \`memory.available<$((thr / 1048576))Mi\`. Guest: $ginfo."
		echo
		cat bench/memory-race/summary.md
		echo
		echo "![memory.available over time per contender](memory-race.png)"
		echo
		cat <<'EOF'
How to read it. *detection* = the contender's own signal crossing its threshold (the sampler's 1 ms series, linearly interpolated between the last sample above and the first below) → the contender's first SIGKILL to the hog (ftrace `signal:signal_generate`, CLOCK_MONOTONIC, the sampler's clock); for evictd that is the cgroup.kill write, which follows its decision by well under 1 ms. *kill* = that SIGKILL → the pod cgroup empty (`cgroup:cgroup_notify_populated`, i.e. the hog's memory is freed). *acted first*: the contender's kill came before the kernel OOM killer's `oom:mark_victim` (kernel OOM), or nobody acted within the run's limit. *overshoot* = how far memory.available (sampled) fell below the threshold, over all runs, kernel OOM runs included. Percentiles: p95 by nearest rank (with 12 runs, the largest value). *× evictd* = the contender's detection median over evictd's in the same mode.

- N: a guest run costs ~4.5 s on average (fill, kill, settle; a plateau run of a 10 s poller ~12 s with its random wait), so 12 runs × 5 contenders × 3 modes take ~17–19 min; with the other parts (~6 min) and the systemd guest's race (~10 min, next section) `make bench` takes about 35 min on this 2-core machine, with room for other load. 20 runs per cell would need ~30 min for the race alone.
- Order: contender by contender (each started once, its runs back to back). Before each *plateau* run of a poller (evictd-nobpf, poll-10s: up to 10 s; poll-1s, earlyoom: up to 1 s) the guest waits a uniformly random time within one poll period: a plateau run ends at the poller's tick, so without the wait the next crossing falls at the same tick phase every time (a first full run measured 6.46 s ± 0.03 s for the 10 s poller in 14 of 15 runs instead of a uniform 0–10 s).
- *as fast as it can*: under TCG the hog reaches only ~350–400 MiB/s (the achieved rate is in brackets), so a 1 GiB/s mode would be the same; 1 GiB/s is measured on the host (below). *plateau*: the hog stops 32 MiB below the threshold and holds, so the kernel cannot OOM and every contender eventually acts: pure detection latency (a 10 s poller waits 0–10 s).
- Contenders: **evictd** = `--pods-file --eviction-hard=memory.available<X` (BPF + PSI, housekeeping 10 s, OOM guard 10%); **evictd-nobpf** = `--no-bpf` with every default (PSI, the adaptive memory poll of 100 ms–1 s that the OOM guard brings without BPF, housekeeping 10 s); **poll-10s / poll-1s** = `--no-bpf --no-psi --housekeeping-interval=10s|1s --oom-guard=off`, the kubelet's model; **earlyoom** 1.7 (Debian) = `-M K,K -s 100,100 -r 0`, K = X minus (memory.available − MemAvailable) measured at rest just before it starts, i.e. SIGKILL at the same memory state as memory.available<X (its own signal is MemAvailable; `-m` in whole percent cannot express it, and X/MemTotal as a percentage would make it fire ~110 MiB earlier than everyone else). Exact command lines: bench/memory-race/commands.txt (below).
- Why X = 250Mi in a 1 GiB guest: (1) the kernel OOM killer fires while memory.available still reads ~80–110 MiB here (DESIGN.md §1 measured 75–114 MiB): the threshold must be well above that for any contender to be able to win; (2) memory.available reads ~115 MiB above MemAvailable in this guest, so evictd's default OOM guard (MemAvailable < 10% ≈ 96 MiB) corresponds to memory.available ≈ 210 MiB: with X = 150Mi the guard, not the configured threshold, would fire first for evictd and the detection latencies would not compare like with like (tests/vm/scenarios/10-memory.sh chose 250Mi for the same reason). The gap between X and the OOM point (~150 MiB) is the race window: ~0.6 s at 256 MiB/s, ~0.4 s as fast as TCG goes.
- nohang (Python: the busybox guest has no interpreter) and systemd-oomd (needs systemd as pid 1 and its managed units) race in the systemd guest: next section, with evictd and earlyoom again in the same boot.
- TCG caveats: all guest times include emulation; the guest's vCPUs are host threads competing with the host's other load, and the sampler shows gaps of several ms (interval_max_us in bench/memory-race/runs.tsv); the hog's anonymous memory comes in 2 MiB THP steps (THP "always" in the Debian kernel), so memory.available moves in 2 MiB jumps every ~5–8 ms. Timestamps taken on different vCPUs disagree now and then by 20–45 ms (a traced "cgroup empty" stamped before the SIGKILL that caused it, while the sampler still saw the pod populated): "empty" then comes from the sampler (counted under the table), and single runs of *kill* and *detection* can be off by that much; the medians are not affected. evictd's own log gives 9–35 ms from cgroup.kill to empty for every kill it made in the guest.
EOF
		echo
	fi

	sdir=bench/memory-race-systemd
	if has race-systemd && [ -f $sdir/summary.md ]; then
		sthr=$(sed -n 's/^guest .*threshold=\([0-9]*\).*/\1/p' $sdir/guest/runs.txt)
		sginfo=$(sed -n 's/^guest //p' $sdir/guest/runs.txt)
		spk=$(sed -n 's/^guest (systemd): //p' $sdir/commands.txt)
		scells=$(sed -n 's/^# memory-race (systemd guest): .*, except \([^)]*\)).*/\1/p' "$raw" | head -n1)
		echo "## Memory race in a systemd guest: systemd-oomd and nohang"
		echo
		echo "The same race (hog, sampler, ftrace, analysis) in a Debian 12 systemd guest (systemd as pid 1, 1 GiB, real cgroup v2, no swap), where the peers that need systemd or Python run: systemd-oomd and nohang, with evictd and earlyoom again in the same boot so the rows compare side by side. N = $RACE_SYSTEMD_RUNS runs per contender and hog mode${scells:+ (except: $scells, as CONTENDER:MODE:N)}; the whole part took ${took[race-systemd]:-?} s. Threshold: \`memory.available<$((sthr / 1048576))Mi\`. Packages: $spk. Guest: $sginfo."
		echo
		cat $sdir/summary.md
		echo
		echo "![memory.available over time per contender, systemd guest](memory-race-systemd.png)"
		echo
		# how long kubepods stalled on memory (PSI "full", what systemd-oomd watches) in the runs
		# where the kernel OOM killer acted, against the run's length
		psi=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
			$h["first"] == "kernel" && $h["psi_full_ms"] != "NA" { n++; v[n] = $h["psi_full_ms"] + 0; if (v[n] > mx) mx = v[n]; d += ($h["t_oom"] - $h["t_pop"]) / 1e6 }
			END { if (n) { for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }; printf "median %s ms, at most %s ms, over %d runs whose hog ran %.0f ms on average before the kernel OOM killer chose it", (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2, mx, n, d / n } }' $sdir/runs.tsv)
		skills=$(cat $sdir/guest/systemd-oomd*.log 2>/dev/null | grep -c 'Killed ' || true)
		sboot=$(sed -n 's/^peer units running at boot (stopped before the race): //p' $sdir/commands.txt)
		sma=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next } $1 == "nohang" && $2 == "plateau" { v = $h["min_memavail_mib"] + 0; if (m == "" || v < m) m = v } END { print m }' $sdir/runs.tsv)
		spsi=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next } $1 ~ /^systemd-oomd/ && $2 == "plateau" && $h["psi_full_ms"] != "NA" { v = $h["psi_full_ms"] + 0; if (v > m) m = v } END { print m + 0 }' $sdir/runs.tsv)
		cat <<EOF
- Contenders: **evictd** and **earlyoom** as in the busybox race (same command lines). **nohang** = \`nohang --monitor --config /etc/nohang/nohang.conf\`, the package's file unchanged (what its nohang.service runs): SIGTERM when MemAvailable ≤ 5% of MemTotal and swap free ≤ 10% (no swap: always true), SIGKILL at 2% / 4%, checking every 0.1–3 s by how far memory is from the threshold; its *detection* counts from MemAvailable crossing its own 5%, so its overshoot (below X) is large by design. Debian 12 enables both nohang.service and nohang-desktop.service (the same memory thresholds, plus PSI checks over 30 s and GUI notifications), which conflict: whichever starts last runs (running at this boot: ${sboot:-none}). **nohang-at-x** = the same file with \`soft_threshold_min_mem\` and \`hard_threshold_min_mem\` both at K MiB, K derived as earlyoom's (the same memory state as memory.available<X, SIGKILL at once). **systemd-oomd** = \`systemctl set-property --runtime kubepods.slice ManagedOOMMemoryPressure=kill\` and the package's own settings: the default limit (DefaultMemoryPressureLimit=60%) and duration (Debian's drop-in /usr/lib/systemd/oomd.conf.d/10-oomd-defaults.conf: DefaultMemoryPressureDurationSec=20s; compiled-in 30 s). That is systemd-oomd.service(8)'s recommendation: \`ManagedOOMMemoryPressure=\` "tends to work better on the cgroups below the root slice", with 60% for units that "can usually ride out slowdowns" (kubepods.slice is the system.slice of a node); with no swap, the package's \`ManagedOOMSwap=kill\` on -.slice is inert ("Any swap-based actions on systems without swap will be ignored"); only leaf cgroups (the container scopes) are candidates. **systemd-oomd-1s** = the same plus \`DefaultMemoryPressureDurationSec=1s\` in /etc/systemd/oomd.conf.d/, the shortest oomd.conf(5) allows. Exact configuration (\`systemd-analyze cat-config\`, \`oomctl\`): $sdir/commands.txt (below).
- What systemd-oomd watches: the share of a 10 s window in which every task of kubepods.slice stalled on memory (PSI "full" avg10), polled every second, which must stay above the limit for the duration. Measured in this run, kubepods.slice's memory "full" stall in the runs the kernel OOM killer ended: ${psi:-none}; systemd-oomd's journal over its blocks logs ${skills:-0} kills of its own (its "Killed PATH due to memory pressure" lines). systemd-oomd.service(8) warns of this case: "Without swap, the system enters a livelocked state much more quickly and may prevent systemd-oomd from responding in a reasonable amount of time".
- Tree: kubepods.slice, the QoS slices and each pod's slice are systemd units started with systemctl, each container a transient scope (\`systemd-run --scope\`), as the kubelet's systemd cgroup driver and containerd make them, so systemd-oomd sees units it manages. The peers' packaged units that start at boot (earlyoom, nohang, nohang-desktop, systemd-oomd) are stopped first; each peer runs only during its own block, and a kill counts as the contender's only when its own process (ftrace comm) sent it.
- *plateau* for nohang (default) and systemd-oomd: memory.available held 32 MiB below X leaves MemAvailable above nohang's 5% (lowest sampled in nohang's plateau runs: ${sma:-?} MiB) and almost nothing stalls (kubepods' memory "full" stall in systemd-oomd's plateau runs: at most ${spsi:-?} ms), so neither can act by construction; each such run waits out the whole 16 s limit, so fewer runs show it (the cell counts above).
EOF
		echo
	fi

	if has benign-ahead && grep -q '^benign-ahead' "$raw"; then
		echo "## No false kills from seeing ahead"
		echo
		echo "\`tools/bench/benign-ahead.sh bench/benign-ahead\`: ${BENIGN_RUNS:-10} boots of tests/vm/scenarios/25-benign-ahead.sh (TCG, 1 GiB, 2 vCPUs): \`--act-ahead=500ms\`, a hard threshold 350 MiB below memory.available at rest; a page-cache stream (900 MiB file read), an allocate-free sawtooth (3 x 250 MiB at 100 MiB/s, ~100 MiB above the threshold at its peak), a build (4 x 60 processes of 16 MiB). Kills per load summed over the boots (want 0); the closest estimate is the least evictd_time_to_threshold_seconds polled every 200 ms in each boot (least and lower median over the boots); then ${BENIGN_PROOF_RUNS:-2} boots at \`--act-ahead=3s\`, where the sawtooth must be killed (the scenario can fail). Serial logs: bench/benign-ahead/."
		echo
		echo '```'
		grep '^benign-ahead' "$raw"
		echo '```'
		echo
	fi
	if has reserve && [ -f bench/reserve/serial.log ]; then
		echo "## The least headroom that wins"
		echo
		echo "\`tools/bench/reserve.sh bench/reserve\` (RESERVE_RUNS=${RESERVE_RUNS:-10}; 6.12: \`EVICTD_VM_KERNEL=6.12 ... bench/reserve-6.12\`): in one guest boot per kernel, per hog rate and contender, the smallest hard threshold memory.available<X (levels ascending, a level ends at its first loss, the contenders taking turns run by run) at which the contender's kill came before the kernel OOM killer's in every run. evictd with --oom-guard=off (the guard would be a second reserve), except evictd-nobpf-poll, whose guard at 1 KiB keeps --no-bpf's adaptive poll on; earlyoom 1.7 at -M K,K -s 100,100 -r 0 -p, K the MemAvailable equal to X at rest (-M 1 where that is not positive). See the script's header."
		echo
		tools/bench/reserve.sh --table bench/reserve
		echo
		if [ -f bench/reserve-6.12/serial.log ]; then
			tools/bench/reserve.sh --table bench/reserve-6.12
			echo
		fi
	fi

	if has plain-host && [ -f bench/plain-host/runs.tsv ]; then
		tools/bench/plain-host-race.sh --section bench/plain-host "${took[plain-host]:-?}"
	fi

	if has node-race && [ -f bench/node-race/summary.md ]; then
		tools/bench/node-race.sh --section bench/node-race "${took[node-race]:-?}"
		echo
	fi

	if has host-race && grep -q '^host-race ' "$raw"; then
		echo "## Detection on the host (no emulation)"
		echo
		echo "evictd in standalone mode (\`--workload-root\`, BPF + PSI, 10 s housekeeping, OOM guard off), restarted per run with \`memory.available<(memory.available at start − 512 MiB)\`; a hog in a workload cgroup allocates at the given rate (capped at 1 GiB). Detection = crossing (sampler, 250 µs, SCHED_FIFO) → cgroup.kill (the cgroup-empty time minus evictd's own \"empty N ms after the kill\"). $HOST_RACE_RUNS runs per mode; per run: bench/host-race/runs.tsv."
		echo
		echo "| hog | evictd acted | achieved MiB/s | detection ms median (p95) | kill ms median (p95) | overshoot MiB median (p95) |"
		echo "|---|---|---|---|---|---|"
		grep '^host-race ' "$raw" | sed -E 's/^host-race ([^:]*): evictd killed ([0-9/]+), achieved ([0-9.NA]+) MiB\/s; detection \(crossing -> cgroup.kill\) median ([0-9.NA]+) ms, p95 ([0-9.NA]+) ms; kill \(cgroup.kill -> empty\) median ([0-9.NA]+) ms, p95 ([0-9.NA]+) ms; overshoot median ([0-9.NA]+) MiB, p95 ([0-9.NA]+) MiB/| \1 | \2 | \3 | \4 (\5) | \6 (\7) | \8 (\9) |/'
		echo
	fi
	if has host-race && grep -q '^host-race-stage ' "$raw"; then
		echo "## Detection latency (issue 24)"
		echo
		echo "The same host race with this build (*new*) and the previous release (*prev*, \`HOST_RACE_PREV\`, by default commit $HOST_RACE_PREV_REF built in a scratch worktree) in the same run, alternating A B, B A, ... so that the machine's other load falls on both alike."
		echo
		echo "| build | hog | evictd acted | achieved MiB/s | detection ms median (p95) | kill ms median (p95) | overshoot MiB median |"
		echo "|---|---|---|---|---|---|---|"
		grep -E '^host-race(-prev)? ' "$raw" | sed -E 's/^host-race(-prev)? ([^:]*): evictd killed ([0-9/]+), achieved ([0-9.NA]+) MiB\/s; detection \(crossing -> cgroup.kill\) median ([0-9.NA]+) ms, p95 ([0-9.NA]+) ms; kill \(cgroup.kill -> empty\) median ([0-9.NA]+) ms, p95 ([0-9.NA]+) ms; overshoot median ([0-9.NA]+) MiB, p95 ([0-9.NA]+) MiB/| \1 | \2 | \3 | \4 | \5 (\6) | \7 (\8) | \9 |/; s/^\| -prev \|/| prev |/; s/^\|  \|/| new |/'
		echo
		echo "Where the time goes (this build, every run of both hog modes), from evictd's \"kill: detection path\" line (CLOCK_MONOTONIC stamps, the crossing from the sampler):"
		echo
		echo "| stage | median µs | p95 µs | share of the mean total |"
		echo "|---|---|---|---|"
		grep '^host-race-stage ' "$raw" | sed -E 's/^host-race-stage /| /; s/$/ |/'
		echo
		echo "Near-threshold churn (\`racekit churn\`: ${HOST_RACE_CHURN_MI:-64} MiB mapped, touched and unmapped again and again for ${HOST_RACE_CHURN_S:-10} s, ${HOST_RACE_CHURN_MARGIN_MI:-4} MiB above the threshold at its peak: allocatableMemory.available in a cgroup v1 kubepods memory cgroup of its own where the memory controller is on v1, else memory.available; see tools/bench/host-race.sh; per run: bench/host-race/churn.tsv):"
		echo
		echo '```'
		grep '^host-race-churn' "$raw"
		echo '```'
		echo
	fi

	if has scale && grep -q 'scale eval' "$raw"; then
		echo "## Scale: 1,000 pods"
		echo
		echo "One full evaluation = \`daemon_evaluate()\` from build/libevictd.a, exactly as the daemon runs it when a threshold is met (signals, thresholds, pods source, cgroup discovery, per-pod usage, ranking, victim), over 1,000 pod cgroups with one process each (kubepods tree, systemd driver, 10% Guaranteed / 30% Burstable / 60% BestEffort, PodList file). Kill = \`kill_cgroup()\` of a pod with 1,000 processes: cgroup.kill → \`populated 0\`."
		echo
		echo '```'
		grep -E '^(guest: )?(scale|# scale)' "$raw" | grep -v '^# scale guest: [0-9]'
		echo '```'
		echo
		echo "Host: this machine's v2 tree is /sys/fs/cgroup/unified of a hybrid host, without the memory and pids controllers, so per pod evictd reads no memory files and counts tasks through \`cgroup.threads\` (the pids.current fallback). Guest: QEMU TCG, cgroup v2 with memory and pids (the real per-pod reads), several times slower than hardware."
		echo
	fi

	if has fleet && grep -q '^fleet params:' "$raw"; then
		tools/bench/fleet.sh --table "$raw"	# its section and its own targets
	fi

	echo "## BPF overhead and footprint"
	echo
	echo "| measurement | result | target |"
	echo "|---|---|---|"
	# "# config: NAME" lines (host and guest) name the configuration of the lines after them.
	grep -E '^(# config: |(guest: )?overhead )' "$raw" | while read -r first name rest; do
		if [ "$first" = "#" ]; then cfg=${rest%% (*}; continue; fi
		if [ "$first" = "guest:" ]; then first=$name; name=${rest%% *}; rest=${rest#* }; fi
		what=$(sed -E 's/^ *(.*[a-z]) +[0-9.]+ +-> .*/\1/' <<<"$rest")
		cpu=$(sed -E 's/.*cpu\/op: +(\+?-?[0-9.]+% cpu).*/\1/' <<<"$rest")
		ab=$(sed -E 's/.* ([0-9.]+ +-> +[0-9.]+ us) cpu\/op.*/\1/' <<<"$rest" | tr -s ' ')
		wall=$(sed -E 's/.*, +(\+?-?[0-9.]+% wall).*/\1/' <<<"$rest")
		echo "| BPF overhead [$cfg]: $name ($what) | $cpu per op ($ab), $wall | ≤ 2% |"
	done
	grep -E '^latency ' "$raw" | while read -r line; do
		echo "| event → handler latency | ${line#latency } | p99 ≤ 1 ms |"
	done
	grep -E '^footprint ' "$raw" | while read -r _ name rest; do
		echo "| evictd ${name%:} | $rest | idle CPU ≤ 0.1% of a core, RSS ≤ 16 MiB |"
	done
	echo

	# ---- the targets ----------------------------------------------------------------
	echo "## Targets"
	echo
	echo "| target | measured | verdict |"
	echo "|---|---|---|"
	ssum=bench/memory-race-systemd/summary.tsv
	if has race-systemd && [ -f "$ssum" ]; then
		# scol CONTENDER MODE COLUMN: a column of the systemd race's summary
		scol() { awk -F'\t' -v c="$1" -v m="$2" -v col="$3" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next } $1 == c && $2 == m { print $h[col] }' "$ssum"; }
		smodes=$(awk -F'\t' 'NR > 1 && $2 != "plateau" { print $2 }' "$ssum" | awk '!s[$0]++' | tr '\n' ' ')
		m=""; ok=1
		for mode in $smodes; do
			w=$(scol evictd "$mode" contender_first); n=$(scol evictd "$mode" runs)
			m="$m$w/$n at $mode, "; [ -n "$w" ] && [ "$w" = "$n" ] || ok=0
		done
		echo "| evictd acts before the kernel OOM killer in every run, at every rate (systemd guest) | ${m%, } | $( [ $ok = 1 ] && echo met || echo '**not met**') |"
		for c in nohang nohang-at-x systemd-oomd systemd-oomd-1s; do
			m=""
			for mode in $smodes; do
				n=$(scol "$c" "$mode" runs); [ -n "$n" ] || continue
				m="$m$mode: $(scol "$c" "$mode" contender_first)/$n first, kernel OOM $(scol "$c" "$mode" kernel_first), nobody $(scol "$c" "$mode" none); "
			done
			[ -n "$m" ] && echo "| (peer, systemd guest) $c before the kernel OOM killer | ${m%; } | — |"
		done
	fi
	if has race && [ -f "$rsum" ]; then
		modes=$(awk -F'\t' 'NR > 1 && $2 != "plateau" { print $2 }' "$rsum" | awk '!s[$0]++' | tr '\n' ' ')
		m=""; ok=1
		for mode in $modes; do
			w=$(rcol evictd "$mode" contender_first); n=$(rcol evictd "$mode" runs)
			m="$m$w/$n at $mode, "; [ "$w" = "$n" ] || ok=0
		done
		echo "| evictd acts before the kernel OOM killer in every run, at every rate (guest) | ${m%, } | $( [ $ok = 1 ] && echo met || echo '**not met**') |"
		last=$(awk '{ print $NF }' <<<"$modes")
		e=$(rcol earlyoom "$last" contender_first); p=$(rcol poll-10s "$last" contender_first); n=$(rcol poll-10s "$last" runs)
		echo "| earlyoom and the 10 s poller do not, at the higher rates (guest, $last) | earlyoom $e/$n, poll-10s $p/$n before the kernel | $( [ -n "$e" ] && [ "$e" -lt "$n" ] && [ "$p" -lt "$n" ] && echo met || echo "**not met** (earlyoom at its equivalent threshold wins)") |"
		m=""; ok=1
		for mode in $modes; do
			w=$(rcol evictd-nobpf "$mode" contender_first); n=$(rcol evictd-nobpf "$mode" runs)
			m="$m$w/$n at $mode, "; [ -n "$w" ] && [ "$w" = "$n" ] || ok=0
		done
		echo "| evictd --no-bpf (every default) acts before the kernel OOM killer in every run, at every rate (guest) | ${m%, } | $( [ $ok = 1 ] && echo met || echo '**not met**') |"
		ev=$(rcol evictd plateau detection_ms_median); pl=$(rcol poll-10s plateau detection_ms_median)
		ratio=$(awk -v a="$pl" -v b="$ev" 'BEGIN { if (a != "" && a != "NA" && b > 0) printf "%.0f", a / b; else print "NA" }')
		echo "| detection ≥ 100× lower than the 10 s poller (guest, plateau) | evictd $ev ms, poll-10s $pl ms: ${ratio}× | $(verdict le 100 "$ratio") |"
		ov=$(rcol evictd max overshoot_mib_p95)
		echo "| (guest) overshoot of evictd as fast as the hog goes (~370 MiB/s) | p95 $ov MiB | $(verdict le "$ov" 64) (≤ 64 MiB) |"
	fi
	if has host-race && grep -q '^host-race 1024' "$raw"; then
		l=$(grep '^host-race 1024' "$raw"); f=$(grep '^host-race as-fast' "$raw")
		d1=$(num "$l" 'detection \(crossing -> cgroup.kill\) median '); d2=$(num "$f" 'detection \(crossing -> cgroup.kill\) median ')
		p1=$(num "$l" 'detection \(crossing -> cgroup.kill\) median [0-9.]+ ms, p95 '); p2=$(num "$f" 'detection \(crossing -> cgroup.kill\) median [0-9.]+ ms, p95 ')
		echo "| detection latency median ≤ 0.4 ms on the host (issue 24) | $d1 ms at 1 GiB/s, $d2 ms as fast as it can | 1 GiB/s: $(verdict le "$d1" 0.4); max: $(verdict le "$d2" 0.4) |"
		echo "| detection latency p95 ≤ 0.6 ms on the host (issue 24) | $p1 ms at 1 GiB/s, $p2 ms as fast as it can | 1 GiB/s: $(verdict le "$p1" 0.6); max: $(verdict le "$p2" 0.6) |"
		c=$(grep '^host-race-churn:' "$raw"); cp=$(grep '^host-race-churn-prev:' "$raw")
		if [ -n "$c" ]; then
			cw=$(num "$c" 'evaluations\/s, '); fk=$(num "$c" 'false kills ')
			echo "| near-threshold churn: CPU per wake-up no higher than before (~175 µs) | $cw µs${cp:+ (previous release: $(num "$cp" 'evaluations\/s, ') µs)} | $(verdict le "$cw" "$(if [ -n "$cp" ]; then num "$cp" 'evaluations\/s, '; else echo 175; fi)") |"
			echo "| near-threshold churn: no false kills | $fk | $(verdict le "$fk" 0) |"
		fi
		o=$(num "$l" 'overshoot median [0-9.]+ MiB, p95 ')
		echo "| overshoot ≤ 64 MiB at 1 GiB/s (host) | p95 $o MiB | $(verdict le "$o" 64) |"
	fi
	if has reserve; then
		for d in bench/reserve bench/reserve-6.12; do
			[ -f $d/serial.log ] && tools/bench/reserve.sh --targets $d
		done
	fi
	if has overhead; then
		# cfg_lines NAME: the overhead lines of one configuration ("guest: " prefix dropped)
		cfg_lines() { awk -v c="$1" '/^# config: / { on = (index($0, "# config: " c) == 1); next } on && /^(guest: )?overhead / { sub(/^guest: /, ""); print }' "$raw"; }
		worst_of() { sed -E 's/.*cpu\/op: +\+?(-?[0-9.]+)% cpu.*/\1/' | sort -g | tail -n1; }
		list_of() { awk '{ v = $0; sub(/.*cpu\/op: +\+?/, "", v); sub(/% cpu.*/, "", v); printf "%s%s %s%%", sep, $2, v; sep = ", " }'; }
		d=$(cfg_lines "default"); dw=$(worst_of <<<"$d")
		echo "| BPF overhead ≤ 2% on each loop, default configuration (host: fentry refused here, so buddy allocations pace memory: mm_page_alloc_zone_locked, 1 GiB step) | $(list_of <<<"$d") | $(verdict le "$dw" 2) (worst: $dw%) |"
		n=$(cfg_lines "near a threshold")
		[ -n "$n" ] && echo "| (for comparison) the same near a threshold: mm_lru_insertion joins the buddy hook (16 MiB step) | $(list_of <<<"$n") | while within 2× the per-CPU lists of a step |"
		g=$(cfg_lines "guest default")
		if [ -n "$g" ]; then
			gw=$(worst_of <<<"$g")
			echo "| BPF overhead ≤ 2% on each loop, default configuration (guest, Debian 6.1: memcg charge batches by fentry) | $(list_of <<<"$g") | $(verdict le "$gw" 2) (worst: $gw%) |"
		fi
		i=$(cfg_lines "--bpf-inspect (")
		[ -n "$i" ] && echo "| (for comparison) --bpf-inspect, every program | $(list_of <<<"$i") | opt-in |"
	fi
	if has footprint; then
		idle=$(grep '^footprint idle' "$raw" | grep -oE 'cpu [0-9.]+' | grep -oE '[0-9.]+')
		rss=$(grep '^footprint ' "$raw" | grep -oE 'rss [0-9.]+' | grep -oE '[0-9.]+' | sort -g | tail -n1)
		peak=$(grep '^footprint ' "$raw" | grep -oE 'peak [0-9.]+' | grep -oE '[0-9.]+' | sort -g | tail -n1)
		echo "| idle CPU ≤ 0.1% of a core | $idle% | $(verdict le "$idle" 0.1) |"
		nobpf_peak=$(grep '^footprint floor' "$raw" | grep -oE 'peak [0-9.]+' | grep -oE '[0-9.]+')
		btf_kib=$(grep '^footprint floor' "$raw" | grep -oE 'VmHWM \+[0-9]+' | grep -oE '[0-9]+')
		floor=$(awk -v n="${nobpf_peak:-0}" -v b="${btf_kib:-0}" 'BEGIN { printf "%.1f", n + b / 1024 }')
		echo "| RSS ≤ 16 MiB, or the floor and why | $rss MiB running (idle and busy); peak (VmHWM, reached while loading BPF at start) $peak MiB; floor: --no-bpf peaks at ${nobpf_peak:-?} MiB and one parse of the kernel's BTF, which libbpf 1.1 needs to attach tp_btf/fentry programs, adds $(awk -v b="${btf_kib:-0}" 'BEGIN { printf "%.1f", b / 1024 }') MiB (tools/bench/btf-peak.c): $floor MiB | running: $(verdict le "$rss" 16); peak: $(verdict le "$peak" 16), at the floor: $(verdict le "$peak" "$(awk -v f="$floor" 'BEGIN { print f + 1 }')") (within 1 MiB; doc/DESIGN.md, Memory) |"
	fi
	if has scale; then
		eh=$(grep -E '^scale eval pods' "$raw" | grep -oE 'median [0-9.]+' | head -n1 | grep -oE '[0-9.]+')
		eg=$(grep -E '^guest: scale eval pods' "$raw" | grep -oE 'median [0-9.]+' | head -n1 | grep -oE '[0-9.]+')
		kh=$(grep -E '^scale kill.*forks' "$raw" | grep -oE 'median [0-9.]+' | grep -oE '[0-9.]+')
		kh2=$(grep -E '^scale kill.*minimal' "$raw" | grep -oE 'median [0-9.]+' | grep -oE '[0-9.]+')
		kg=$(grep -E '^guest: scale kill.*forks' "$raw" | grep -oE 'median [0-9.]+' | grep -oE '[0-9.]+')
		kg2=$(grep -E '^guest: scale kill.*minimal' "$raw" | grep -oE 'median [0-9.]+' | grep -oE '[0-9.]+')
		# The guest scaled by how much slower TCG makes the very reads an evaluation does
		# (pread of every pod's cgroup.events, which both trees have).
		refh=$(grep -E '^scale eval reference' "$raw" | grep -oE 'median [0-9.]+' | grep -oE '[0-9.]+')
		refg=$(grep -E '^guest: scale eval reference' "$raw" | grep -oE 'median [0-9.]+' | grep -oE '[0-9.]+')
		tcg=$(awk -v h="${refh:-0}" -v g="${refg:-0}" 'BEGIN { if (h > 0 && g > 0) printf "%.1f", g / h }')
		egs=$(awk -v e="${eg:-0}" -v f="${tcg:-0}" 'BEGIN { if (f > 0) printf "%.2f", e / f }')
		echo "| one evaluation over 1,000 pods ≤ 5 ms | host ${eh:-?} ms, guest (TCG) ${eg:-?} ms; TCG reads cgroup.events ${tcg:-?}× slower than the host (${refg:-?} vs ${refh:-?} ms for 1,000), so the guest scaled: ${egs:-?} ms | host: $(verdict le "$eh" 5); guest scaled: $(verdict le "${egs:-1e9}" 5) |"
		rh=$(grep -E '^scale eval rediscovery' "$raw" | grep -oE 'median [0-9.]+' | grep -oE '[0-9.]+')
		rg=$(grep -E '^guest: scale eval rediscovery' "$raw" | grep -oE 'median [0-9.]+' | grep -oE '[0-9.]+')
		uh=$(grep -E '^scale eval usage' "$raw" | grep -oE 'median [0-9.]+' | head -n1 | grep -oE '[0-9.]+')
		ug=$(grep -E '^guest: scale eval usage' "$raw" | grep -oE 'median [0-9.]+' | head -n1 | grep -oE '[0-9.]+')
		echo "| (1,000 pods) where the time goes | per-pod cheap reads through the kept fds (cgroup.events, memory.current; memory.stat only for the pods the ranking reaches): host ${uh:-?} ms (no memory or pids files in this v2 tree), guest ${ug:-?} ms; a refresh right after a cgroup was made or removed beside the pods (rediscovery, kept fds taken over): host ${rh:-?} ms, guest ${rg:-?} ms | — |"
		echo "| a 1,000-process pod empty ≤ 100 ms after cgroup.kill | host ${kh:-?} ms (forks of a 10-library process), ${kh2:-?} ms (minimal static processes); guest (TCG) ${kg:-?} / ${kg2:-?} ms | forks: $(verdict le "$kh" 100); minimal: $(verdict le "$kh2" 100) |"
		grep -E '^(guest: )?scale memkill' "$raw" | while read -r line; do
			where=host; [[ $line == guest:* ]] && where="guest (TCG)"
			what=$(sed -E 's/^(guest: )?scale memkill ([^:]*):.*/\1\2/; s/^guest: //' <<<"$line")
			w=$(grep -oE 'with process_mrelease median [0-9.]+' <<<"$line" | grep -oE '[0-9.]+$')
			wo=$(grep -oE 'without median [0-9.]+' <<<"$line" | grep -oE '[0-9.]+$')
			echo "| memory back at once: cgroup.kill → 90% back in MemAvailable, $where, $what | with process_mrelease ${w:-?} ms, without ${wo:-?} ms (medians) | $(verdict le "${w:-1e9}" "${wo:-0}") (with ≤ without) |"
		done
	fi
	echo

	echo "## Commands"
	echo
	echo '```'
	echo "make bench                       # = tools/install-deps.sh vm bench && tools/bench/run.sh"
	echo "tools/bench/run.sh overhead      # tools/bench/bpf-overhead.sh"
	echo "tools/bench/run.sh footprint     # tools/bench/footprint.sh \${FOOTPRINT_SECONDS:-60}"
	echo "tools/bench/run.sh scale         # tools/bench/scale.sh [host] [guest]"
	echo "tools/bench/run.sh host-race     # tools/bench/host-race.sh bench/host-race"
	echo "tools/bench/run.sh race          # tools/bench/memory-race.sh bench/memory-race (RACE_RUNS=$RACE_RUNS)"
	echo "tools/bench/run.sh race-systemd  # tools/bench/memory-race-systemd.sh bench/memory-race-systemd (RACE_SYSTEMD_RUNS=$RACE_SYSTEMD_RUNS)"
	echo "tools/bench/run.sh plain-host    # tools/bench/plain-host-race.sh bench/plain-host (PHR_CONTENDERS, PHR_LOADS, PHR_WINDOW_S)"
	echo "tools/bench/run.sh fleet         # tools/bench/fleet.sh (FLEET_NODES=500; --smoke: 20 nodes)"
	echo "tools/bench/run.sh benign-ahead  # tools/bench/benign-ahead.sh bench/benign-ahead (BENIGN_RUNS=${BENIGN_RUNS:-10}, BENIGN_PROOF_RUNS=${BENIGN_PROOF_RUNS:-2})"
	echo "tools/bench/run.sh reserve       # tools/bench/reserve.sh bench/reserve (RESERVE_RUNS=${RESERVE_RUNS:-10}; EVICTD_VM_KERNEL=6.12 for 6.12)"
	echo "tools/bench/run.sh node-race     # tools/bench/node-race.sh bench/node-race (NODE_RACE_RATES, NODE_RACE_RUNS, NODE_RACE_CONFIGS)"
	echo "tools/bench/node-race.sh --analyze bench/node-race   # re-analyse the node race without re-running it"
	echo "tools/bench/race-analyze.sh bench/memory-race   # re-analyse and re-plot a race without re-running it"
	echo '```'
	if [ -f bench/memory-race/commands.txt ] && has race; then
		echo
		echo "Contenders in the guest, exactly as started:"
		echo
		echo '```'
		cat bench/memory-race/commands.txt
		echo '```'
	fi
	if [ -f bench/memory-race-systemd/commands.txt ] && has race-systemd; then
		echo
		echo "Contenders in the systemd guest, exactly as started and configured:"
		echo
		echo '```'
		cat bench/memory-race-systemd/commands.txt
		echo '```'
	fi
	echo
	echo "## Raw output"
	echo
	echo '```'
	cat "$raw"
	echo '```'
} >"$out"
echo "bench: wrote $out (total $((total / 60)) min $((total % 60)) s)"
