#!/usr/bin/env bash
# plain-host-race.sh - the race on the peers' own ground (issue 23): evictd, earlyoom, nohang and
# systemd-oomd on a plain Debian 12 host (the systemd guest of tools/vm/build-systemd-root.sh, QEMU
# TCG, 1 GiB, swap on zram, a lingering user with a session, two services), each with its
# packaged defaults and once at matched thresholds, against four loads: a fast anon hog in a
# service, a slow leak in the session, a tmpfs filler, a swap-thrashing working set. What happens
# inside: tools/bench/plain-host-race-guest.sh. (tools/bench/host-race.sh is another part: evictd's
# detection latency on this machine, no emulation.)
#
# Usage: tools/bench/plain-host-race.sh [OUTDIR]      (default bench/plain-host)
#        tools/bench/plain-host-race.sh --table OUTDIR (print the table of a run, run nothing)
#        tools/bench/plain-host-race.sh --section OUTDIR [SECONDS] (its bench/results.md section)
# Environment (defaults in brackets):
#   PHR_CONTENDERS ["evictd earlyoom nohang systemd-oomd evictd-matched earlyoom-matched
#                    nohang-matched systemd-oomd-matched"]; "none" = the kernel alone
#   PHR_LOADS ["hog leak fill thrash"]   PHR_WINDOW_S [30]  PHR_RECOVER_S [5]
#   PHR_EVICTD_ARGS ["--workload-root=/sys/fs/cgroup/system.slice --workload-root=/sys/fs/cgroup/user.slice"]
#       "evictd" is run with these only (no threshold flags): its defaults, whatever they are
#       in the build (today the kubelet's hard thresholds and the OOM guard)
#   PHR_MATCH_PCT [10]  matched: SIGKILL at MemAvailable <= this % of MemTotal, memory alone
#   PHR_ZRAM_PCT [50]  PHR_LEAK_RATE [48] MiB/s  PHR_FILL_RATE [96] MiB/s  PHR_MEM [1024M]
# Writes OUTDIR/runs.tsv, OUTDIR/summary.md (the table), OUTDIR/commands.txt, OUTDIR/guest/
# (per run: series, dmesg; the contenders' journals). Needs root (QEMU, the systemd root).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}

table() {	# table OUTDIR: runs.tsv -> the markdown table
	awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
		{
			f = $h["first"]; who = (f == "contender") ? $h["by"] : (f == "kernel" ? "kernel OOM" : "nobody")
			# the culprit among the victims, and who else the first actor killed with it
			v = $h["victims"]; n = split(v, vs, "+"); hit = 0; others = ""
			for (i = 1; i <= n; i++) if (vs[i] == $h["load"]) hit = 1; else others = others (others == "" ? "" : ", ") vs[i]
			right = (f == "nobody") ? "—" : (hit ? (others == "" ? "yes" : "yes, with " others) : "**no**: " v)
			rec = ($h["recover_ms"] < 0) ? "not within the run" : sprintf("%.1f", $h["recover_ms"] / 1000)
			act = (f == "nobody") ? "—" : $h["act_s"]
			printf "| %s | %s | %s | %s | %s | %s | %s | %.1f | %s |\n", $h["contender"], $h["load"], who, act, right,
				$h["min_memavail_mib"], $h["min_swapfree_mib"], $h["psi_full_ms"] / 1000, rec
		}' "$1/runs.tsv"
}
if [ "${1:-}" = --section ]; then	# --section OUTDIR [SECONDS]: the results.md section
	d=${2:?--section needs OUTDIR}
	g=$(sed -n 's/^guest //p' "$d/guest/runs.txt")
	echo "## Host race: evictd, earlyoom, nohang and systemd-oomd on a plain host"
	echo
	echo "A Debian 12 systemd guest (QEMU TCG, 2 vCPUs; $g), swap on zram (50% of RAM, lzo-rle), a lingering user (user@1000.service) with a session scope, two services (db 128 MiB, web 64 MiB). One run per contender and load (the part took ${3:-?} s); each load runs until its cgroup empties or 30 s (then the driver stops it: *nobody*), sampled 5 s more. Loads: **hog** = a service allocating anonymous memory as fast as it can (~2:1 compressible, as heap is); **leak** = the session scope leaking 48 MiB/s; **fill** = a service writing its private tmpfs (TemporaryFileSystem=, freed when the unit stops) at 96 MiB/s; **thrash** = a user-manager unit (user@1000.service/app.slice) writing 1.3× MemAvailable page by page, pass after pass. Per run: bench/plain-host/runs.tsv, the series and dmesg in bench/plain-host/guest/."
	echo
	echo "| contender | load | acted first | at s | victim = culprit? | min MemAvailable MiB | min SwapFree MiB | PSI full stall s | recovered s after the action |"
	echo "|---|---|---|---|---|---|---|---|---|"
	table "$d"
	echo
	cat <<'EOF2'
How to read it. *acted first*: the first SIGKILL/SIGTERM sent by a contender's own process (ftrace `signal:signal_generate`, by sender comm) before the kernel OOM killer's first `oom:mark_victim`, or *kernel OOM*, or *nobody* within 30 s; *at s* from the load's start. *victim*: the comms the first actor signalled (within 2 s; for the kernel, dmesg's "Killed process"); "yes, with X" = the culprit and others (killing the user's whole slice takes `systemd` and `(sd-pam)`, the user manager, with the session). A kill just after the 30 s (before the driver's stop, under TCG up to ~2 s later) still counts. *PSI full stall*: the delta of /proc/pressure/memory `full total` over the run (all non-idle tasks stalled on memory at once). *recovered*: from the action until MemAvailable is back at 80% of its level before the load ("not within the run" = not within the 5 s after).

- Contenders: **evictd** = `evictd --workload-root=/sys/fs/cgroup/system.slice --workload-root=/sys/fs/cgroup/user.slice` and no threshold flag: whatever the build's defaults are (at this commit the server profile: `memory.available<100Mi` and the OOM guard at MemAvailable < 10%, both held back while SwapFree and zram's room are ≥ 10% (`--swap-guard`, `--zram-guard`, earlyoom's both-below rule; since the *new* rows, free swap on zram counts only up to MemAvailable × zram's compression ratio, and zram's room at most MemAvailable); no disk threshold without /var/lib/kubelet; the workloads are the units below the roots: services, session scopes, the user manager's apps, never a user's slice or manager). **earlyoom**, **nohang**, **systemd-oomd**: the packaged units started as Debian ships them (earlyoom `-r 3600`; nohang.service with /etc/nohang/nohang.conf; systemd-oomd with the package's drop-ins: `ManagedOOMSwap=kill` on -.slice, `ManagedOOMMemoryPressure=kill` at 50% on user@.service, 20 s). **-matched**: SIGKILL at MemAvailable ≤ 10% of MemTotal on memory alone (earlyoom `-m 10,10 -s 100,100`; nohang soft = hard = 10%, swap thresholds 100%; evictd `memory.available<K` with K the same memory state, OOM guard, swap and zram guards off); systemd-oomd has no memory threshold: its matched row is `ManagedOOMMemoryPressure=kill` on system.slice and user.slice at the default 60% with the shortest duration, 1 s. Exact configuration: bench/plain-host/commands.txt.
- What the table shows, and why. Where evictd acts, its victim is the culprit's unit alone: `phr-hog.service`, `session-phrN.scope`, `phr-fill.service`, `user@1000.service/app.slice/phr-thrash.service` (bench/plain-host/guest*/evictd*.log), never the user's slice or the user manager (`systemd`, `(sd-pam)` live on). On memory alone (evictd-matched) it acts first on all four loads, at 1.3–5.1 s, with no PSI full stall; it acts at MemAvailable ≈ 250–275 MiB, not at the 10% (96 MiB) the others use, because K adds the gap of memory.available over MemAvailable measured at rest (≈ 290 MiB on that boot), which does not hold once zram and the tmpfs are in play. With its defaults on this zram host the swap gate holds it like earlyoom's rule holds earlyoom: it acts first on the hog (10 s) and the filler (27 s here, 10.8 s on the second boot), and not within 30 s on the session's leak (MemAvailable at 0 for ~20 s while SwapFree stayed above 360 MiB: the leak stalls in reclaim without filling swap) nor on the thrash (swap never short): only a pressure signal sees those, and the server profile keeps it off. The packaged peers wait for swap to be nearly full too, so their runs carry 4–20 s of full stall; none acts on the thrash within 30 s (swap never fills, and Debian's user@ pressure limit needs 20 s above 50%); two peer runs say little: earlyoom's hog run stalled the guest's sampler ~20 s at MemAvailable ≈ 100 MiB with no swap used (its both-below rule not met), and its thrash run never built its working set (MemAvailable ≥ 426 MiB throughout). The per-process killers pick by oom_score, which does not see tmpfs: on the filler they killed the user manager and the services (db, web, logind) instead; systemd-oomd, killing the cgroup with most swap, got it right.
- evictd-matched's rows are from a second boot (the same guest and loads; its command line had lacked `--swap-guard=off --zram-guard=off`, so its first-boot rows measured the swap gate again); on that boot evictd's defaults gave the same picture (hog 10.0 s, leak nobody, fill 10.8 s, thrash nobody; bench/plain-host/guest-second-boot/).
- One run per cell under TCG on a shared 2-core host: a single run, not a distribution. The guest's vCPUs compete with the host's other load, so times include emulation.
EOF2
	echo
	echo '```'
	cat "$d/commands.txt"
	echo '```'
	echo
	exit 0
fi
if [ "${1:-}" = --table ]; then
	d=${2:?--table needs OUTDIR}
	echo "| contender | load | acted first | at s | victim = culprit? | min MemAvailable MiB | min SwapFree MiB | PSI full stall s | recovered s after the action |"
	echo "|---|---|---|---|---|---|---|---|---|"
	table "$d"
	exit 0
fi

OUTDIR=${1:-bench/plain-host}
CONTENDERS=${PHR_CONTENDERS:-"evictd earlyoom nohang systemd-oomd evictd-matched earlyoom-matched nohang-matched systemd-oomd-matched"}
LOADS=${PHR_LOADS:-"hog leak fill thrash"}
WINDOW_S=${PHR_WINDOW_S:-30}
RECOVER_S=${PHR_RECOVER_S:-5}
EVICTD_ARGS=${PHR_EVICTD_ARGS:-"--workload-root=/sys/fs/cgroup/system.slice --workload-root=/sys/fs/cgroup/user.slice"}
# the peers' Debian packages: the same list as the systemd memory race, so both share one root
PACKAGES=systemd-oomd,nohang,earlyoom

die() { echo "plain-host-race: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (builds the guest root, boots QEMU)"
[ -x "$BUILD/evictd" ] || make -s "$BUILD/evictd"
mkdir -p "$BUILD/bench" "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
load=$BUILD/bench/plain-host-load
if [ ! -x "$load" ] || [ tools/bench/plain-host-load.c -nt "$load" ]; then
	${CC:-gcc} -O2 -static -std=gnu11 -Wall -Wextra -Werror tools/bench/plain-host-load.c -o "$load"
fi
work=$(mktemp -d /tmp/evictd-phr.XXXXXX)
trap 'rm -rf "$work"' EXIT
n_c=$(wc -w <<<"$CONTENDERS"); n_l=$(wc -w <<<"$LOADS")
# a run: WINDOW + RECOVER + settling and the start (~15 s under TCG); a contender's start ~10 s
TIMEOUT=${PHR_TIMEOUT:-$((240 + n_c * 15 + n_c * n_l * (WINDOW_S + RECOVER_S + 15)))}
cat >"$work/phr.conf" <<EOF
CONTENDERS="$CONTENDERS"
LOADS="$LOADS"
WINDOW_S=$WINDOW_S
RECOVER_S=$RECOVER_S
EVICTD_ARGS="$EVICTD_ARGS"
MATCH_PCT=${PHR_MATCH_PCT:-10}
ZRAM_PCT=${PHR_ZRAM_PCT:-50}
LEAK_RATE=${PHR_LEAK_RATE:-48}
FILL_RATE=${PHR_FILL_RATE:-96}
EOF
# The race runs as a oneshot service in its own slice (outside system.slice and user.slice, so no
# contender's workloads include the instrument), on ttyS0, then powers off.
cat >"$work/run-phr.sh" <<'EOF'
#!/bin/sh
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin SYSTEMD_COLORS=0 SYSTEMD_PAGER=cat
echo "EVICTD-VM: systemd ready uptime=$(cut -d' ' -f1 /proc/uptime)"
cd /
/bin/busybox sh /usr/lib/evictd-vm/phr.sh </dev/null
echo "EVICTD-VM: scenario exit=$? uptime=$(cut -d' ' -f1 /proc/uptime)"
systemctl --no-block poweroff
EOF
cat >"$work/evictd-phr.service" <<'EOF'
[Unit]
Description=evictd plain-host race (tools/bench/plain-host-race.sh)
After=multi-user.target

[Service]
Type=oneshot
Slice=bench.slice
StandardInput=null
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
ExecStart=/bin/sh /usr/lib/evictd-vm/run-phr.sh
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
EOF
tools/vm/build-systemd-root.sh "$work/initramfs.cpio.gz" --packages "$PACKAGES" \
	--add tools/bench/plain-host-race-guest.sh:/usr/lib/evictd-vm/phr.sh \
	--add "$work/run-phr.sh:/usr/lib/evictd-vm/run-phr.sh" --unit "$work/evictd-phr.service" \
	--add "$load:/usr/bin/plain-host-load" --add "$BUILD/evictd:/usr/bin/evictd" \
	--add "$work/phr.conf:/etc/phr.conf" \
	--modules virtio_pci,virtio_blk,zram >"$work/build.log" 2>&1 \
	|| die "build-systemd-root.sh failed: $(tail -n 5 "$work/build.log")"
disk=$work/disk.img
truncate -s 64M "$disk"

echo "# plain-host-race: contenders: $CONTENDERS; loads: $LOADS; window ${WINDOW_S} s + ${RECOVER_S} s; evictd defaults = evictd $EVICTD_ARGS; host load $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(date +%s)
rc=0
tools/vm/run-guest.sh --initramfs "$work/initramfs.cpio.gz" --mem "${PHR_MEM:-1024M}" --smp 2 \
	--timeout "$TIMEOUT" --disk "$disk" --log "$work/serial.raw" >"$work/qemu.log" 2>&1 || rc=$?
tr -d '\r' <"$work/serial.raw" >"$OUTDIR/serial.log"
took=$(( $(date +%s) - t0 ))
echo "# plain-host-race: guest ran $took s (qemu exit $rc)"
grep -q 'EVICTD-VM: PASS phr-done' "$OUTDIR/serial.log" \
	|| die "the guest did not finish (qemu exit $rc); see $OUTDIR/serial.log: $(tail -n 5 "$OUTDIR/serial.log" | tr '\n' '|')"
rm -rf "$OUTDIR/guest"
mkdir -p "$OUTDIR/guest"
tar -xf "$disk" -C "$OUTDIR/guest" || die "cannot read the results tar from the guest disk"
cp "$OUTDIR/guest/commands.txt" "$OUTDIR/commands.txt"
# runs.txt "key=value" lines -> runs.tsv
{
	printf 'contender\tload\tfirst\tby\tvictims\tact_s\tkernel_oom\toom_victims\tmin_memavail_mib\tmin_swapfree_mib\tpsi_full_ms\trecover_ms\tmemavail0_mib\n'
	sed -n 's/^run //p' "$OUTDIR/guest/runs.txt" | awk '{
		for (i = 1; i <= NF; i++) { k = $i; sub(/=.*/, "", k); v = $i; sub(/^[^=]*=/, "", v); r[k] = v }
		printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r["c"], r["load"], r["first"], r["by"], r["victims"], r["act_s"],
			r["kernel_oom"], r["oom_victims"], r["min_memavail_mib"], r["min_swapfree_mib"], r["psi_full_ms"], r["recover_ms"], r["memavail0_mib"] }'
} >"$OUTDIR/runs.tsv"
"$0" --table "$OUTDIR" >"$OUTDIR/summary.md"
cat "$OUTDIR/summary.md"
sed -n 's/^guest /plain-host-race guest: /p' "$OUTDIR/guest/runs.txt"
echo "plain-host-race: total $took s in the guest"
