#!/bin/sh
# memory-race-guest.sh - the guest side of tools/bench/memory-race.sh (runs as /scenario.sh in
# the busybox initramfs, or with GUEST=systemd as a service of the Debian systemd root once
# multi-user.target is reached; configuration in /etc/race.conf, written by the host script).
#
# In the systemd guest the tree is made of systemd units as the kubelet's systemd cgroup driver
# and containerd make it: kubepods*.slice and each pod's slice started with systemctl, each
# container a transient scope (systemd-run --scope), so systemd-oomd sees the units it manages;
# the peers that ship a unit (earlyoom, nohang, systemd-oomd) are stopped at the start and run
# only in their own block.
#
# A kubelet-like kubepods tree (systemd driver) with a Guaranteed and a Burstable bystander pod,
# then, per contender (started once, stopped after its block) and per mode, RUNS runs of: a new
# BestEffort pod whose only process is `racekit hog` (oom_score_adj 1000, as the kubelet sets for
# BestEffort) allocating and touching memory at RATE MiB/s ("max": as fast as it can; "max2": two
# hog threads as fast as they can, one per vCPU, the contender left no idle CPU; "plateau":
# 256 MiB/s up to PLATEAU_DEPTH_MI below the threshold, then it holds; before a plateau run a
# poller's contender waits a random 0..1 poll period, so its tick phase is random). `racekit sample` records
# memory.available and MemAvailable every SAMPLE_US and the pod's populated state; ftrace
# (trace_clock mono, the sampler's clock) records every SIGKILL/SIGTERM sent (signal_generate:
# who sent it to the hog, when), the kernel OOM killer's choices (oom:mark_victim) and the
# moment the pod cgroup emptied (cgroup:cgroup_notify_populated).
#
# With RESERVE_LEVELS set (tools/bench/reserve.sh) it searches instead: per contender and mode,
# the least threshold of RESERVE_LEVELS won in each of RUNS runs (RESERVE-RUN, RESERVE-LEVEL and
# RESERVE-LEAST lines on the console). Contenders for it: evictd-ahead (--act-ahead=ACT_AHEAD),
# evictd-rt (--realtime-priority=1: the loop SCHED_FIFO, as the unit and DaemonSet run it),
# evictd-nobpf-poll (--no-bpf with the OOM guard at 1 KiB: the adaptive poll on),
# earlyoom-p (earlyoom -p); EVICTD_EXTRA is added to every evictd's arguments.
#
# Output: one "run ..." line per run in /tmp/out/runs.txt (and on the console), the contenders'
# logs; at the end /tmp/out is written as a tar to /dev/vda (offset 0), the per-run series by the
# sampler itself at SLOT_BASE_MIB + slot MiB of /dev/vda.
. /etc/race.conf
. /usr/lib/evictd-vm/vm-lib.sh

OUT=/tmp/out
DISK=/dev/vda
T=/sys/kernel/tracing
CG=/sys/fs/cgroup
PODS=/run/pods.json
MiB=1048576
mkdir -p $OUT
exec 2>>$OUT/guest-stderr.txt
say() { echo "RACE: $*"; }
now_s() { read -r _u _ </proc/uptime; echo "$_u"; }
echo -1000 >/proc/self/oom_score_adj

# ---- ftrace: the kills, the OOM killer, the pod emptying, on CLOCK_MONOTONIC ------------------
echo mono >$T/trace_clock || say "no mono trace clock"
echo 0 >$T/tracing_on
echo 'sig == 9 || sig == 15' >$T/events/signal/signal_generate/filter
echo 1 >$T/events/signal/signal_generate/enable
echo 1 >$T/events/oom/mark_victim/enable
echo 1 >$T/events/cgroup/cgroup_notify_populated/enable
echo 1 >$T/tracing_on

# ---- the kubepods tree -------------------------------------------------------------------
KP=$CG/kubepods.slice
BU=$KP/kubepods-burstable.slice
BE=$KP/kubepods-besteffort.slice
enable() { local ctl; for ctl in memory pids cpu; do grep -qw $ctl "$1/cgroup.controllers" && echo "+$ctl" >"$1/cgroup.subtree_control"; done; }
if [ "${GUEST:-busybox}" = systemd ]; then
    # The packaged peers start at boot (Debian enables their units; nohang's package enables
    # both nohang.service and nohang-desktop.service, which conflict: whichever starts last
    # runs): each runs only in its own block.
    echo "peer units running at boot (stopped before the race): $(systemctl list-units --state=running --no-legend --plain earlyoom.service nohang.service nohang-desktop.service systemd-oomd.service | cut -d' ' -f1 | tr '\n' ' ')" >>$OUT/commands.txt
    systemctl stop earlyoom.service nohang.service nohang-desktop.service systemd-oomd.service systemd-oomd.socket
    echo "guest (systemd): $(dpkg-query -W -f '${Package} ${Version}, ' systemd systemd-oomd nohang earlyoom python3 2>/dev/null | sed 's/, $//')" >>$OUT/commands.txt
    _left=$(ps -o pid,comm | grep -E 'earlyoom|nohang|oomd' | tr -s ' ' | tr '\n' ';')
    [ -z "$_left" ] || say "peers still running after systemctl stop: $_left"
    systemctl start kubepods.slice kubepods-burstable.slice kubepods-besteffort.slice || say "cannot start the kubepods slices"
else
    mkdir -p $KP && enable $KP
    mkdir -p $BU $BE && enable $BU && enable $BE
fi
SEQ=0
# new_pod QOSDIR PREFIX: sets POD_UID POD_DIR CTR_DIR (systemd: the pod slice is started, the
# container scope is made by in_ctr when its process starts)
new_pod() {
    SEQ=$((SEQ + 1))
    POD_UID=$(printf 'be7c4000-%04x-4000-8000-%012x' $((SEQ % 65536)) $SEQ)
    POD_DIR=$1/$2$(echo $POD_UID | tr - _).slice
    CTR_DIR=$POD_DIR/cri-containerd-$(printf '%064x' $SEQ).scope
    if [ "${GUEST:-busybox}" = systemd ]; then
        systemctl start ${POD_DIR##*/} && [ -d $POD_DIR ]
    else
        mkdir $POD_DIR && enable $POD_DIR && mkdir $CTR_DIR
    fi
}
# in_ctr CMD...: run CMD in the current pod's container cgroup (systemd: as a transient scope,
# which systemd-run execs into, so $! stays the command's pid)
in_ctr() {
    if [ "${GUEST:-busybox}" = systemd ]; then
        systemd-run --quiet --scope --slice=${POD_DIR##*/} --unit=${CTR_DIR##*/} -- "$@"
    else
        "$@"
    fi
}
# rm_pod POD CTR: remove a finished pod's cgroups
rm_pod() {
    if [ "${GUEST:-busybox}" = systemd ]; then
        systemctl stop ${1##*/} 2>/dev/null
        systemctl reset-failed 2>/dev/null
        return 0
    fi
    rmdir $2 $1 2>/dev/null || { sleep 0.5; rmdir $2 $1; }
}
pod_json() { # NAME UID QOS PRIORITY RESOURCES
    printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"bench","uid":"%s"},' "$1" "$2"
    printf '"spec":{"nodeName":"evictd-vm","priority":%s,"containers":[{"name":"main","image":"busybox","resources":{%s}}]},' "$4" "$5"
    printf '"status":{"phase":"Running","qosClass":"%s"}}' "$3"
}
write_pods() { # [HOG_NAME HOG_UID]
    {
        printf '{"apiVersion":"v1","kind":"PodList","metadata":{"resourceVersion":"1"},"items":[\n'
        printf '%s,\n%s' "$DB_JSON" "$WEB_JSON"
        [ -n "$1" ] && printf ',\n%s' "$(pod_json "$1" "$2" BestEffort 0 '')"
        printf '\n]}\n'
    } >$PODS.tmp && mv $PODS.tmp $PODS
}
eval "$(racekit avail)"
MEMTOTAL=$memtotal
# Bystanders, so the ranking has a real choice: a Guaranteed pod (96Mi, using 64 MiB) and a
# Burstable one (request 64Mi, using 32 MiB), with the kubelet's oom_score_adj for each.
new_pod $KP kubepods-pod
echo $((96 * MiB)) >$POD_DIR/memory.max
DB_JSON=$(pod_json db $POD_UID Guaranteed 1000 '"requests":{"memory":"96Mi","cpu":"100m"},"limits":{"memory":"96Mi","cpu":"100m"}')
in_ctr racekit hog --cgroup $CTR_DIR --max 64 --oom-score-adj -997 >/dev/null &
new_pod $BU kubepods-burstable-pod
WEB_JSON=$(pod_json web $POD_UID Burstable 500 '"requests":{"memory":"64Mi"}')
in_ctr racekit hog --cgroup $CTR_DIR --max 32 --oom-score-adj $((1000 - 1000 * 64 * MiB / MEMTOTAL)) >/dev/null &
write_pods
sleep 2

THR=$((THRESHOLD_MI * MiB))
eval "$(racekit avail)"
BASE=$avail
OFFSET=$((avail - memavail))
say "memtotal=$MEMTOTAL base_avail=$avail base_memavail=$memavail offset=$OFFSET threshold=$THR"
echo "guest memtotal=$MEMTOTAL base_avail=$avail base_memavail=$memavail offset=$OFFSET threshold=$THR kernel=$(uname -r)" >>$OUT/runs.txt

# settle: memory back near the base level, then a little quiet time for the contender
settle() {
    local n=0
    while [ $n -lt 200 ]; do
        eval "$(racekit avail)"
        [ $avail -ge $((BASE - SETTLE_MI * MiB)) ] && break
        sleep 0.1
        n=$((n + 1))
    done
    [ $n -ge 200 ] && say "settle: memory.available still $((avail / MiB)) MiB"
    sleep 0.5
}

# ---- contenders --------------------------------------------------------------------------
CPID=""
# MA_THR: the contender's own MemAvailable threshold in bytes (earlyoom, nohang: the sampler
# records when MemAvailable crossed it, their detection starts there); 0 = memory.available's
MA_THR=0
# ma_equiv: the MemAvailable that is the same memory state as memory.available<X, in KiB: X minus
# (memory.available - MemAvailable) measured at rest just before the contender starts
ma_equiv() { eval "$(racekit avail)"; echo $(( (THR - (avail - memavail)) / 1024 )); }
start_contender() { # NAME
    local _c=$1 _args _t0 _k _conf
    _args="--pods-file=$PODS --node-name=evictd-vm --eviction-hard=memory.available<${THRESHOLD_MI}Mi --metrics-address=off --control-socket=/run/evictd-$_c.sock --event-log=$OUT/$_c.events.jsonl --bpf-pin-dir=/sys/fs/bpf/evictd-$_c"
    case $_c in
        evictd) ;;
        evictd-nobpf|evictd-nobpf-poll) _args="$_args --no-bpf" ;;
        evictd-ahead) _args="$_args --act-ahead=${ACT_AHEAD:-1s}" ;;
        evictd-rt) _args="$_args --realtime-priority=1" ;;	# the loop SCHED_FIFO, as shipped
        poll-10s) _args="$_args --no-bpf --no-psi --housekeeping-interval=10s --oom-guard=off" ;;
        poll-1s) _args="$_args --no-bpf --no-psi --housekeeping-interval=1s --oom-guard=off" ;;
        earlyoom|earlyoom-p) ;;
        nohang|nohang-at-x|systemd-oomd|systemd-oomd-1s)
            [ "${GUEST:-busybox}" = systemd ] || { say "$_c needs the systemd guest (tools/bench/memory-race-systemd.sh)"; return 1; } ;;
        *) say "unknown contender $_c"; return 1 ;;
    esac
    case $_c in evictd*|poll-*) _args="$_args${EVICTD_EXTRA:+ $EVICTD_EXTRA}" ;; esac
    # evictd-nobpf-poll: --no-bpf as shipped, where the OOM guard being on keeps the adaptive
    # memory poll (100 ms near a threshold, doc/DESIGN.md "Without BPF"); the guard at its least
    # (MemAvailable < 1 KiB, earlyoom's -M 1) so that X is the threshold measured wherever X is
    # above the rest offset. After EVICTD_EXTRA: the last --oom-guard counts.
    [ $_c = evictd-nobpf-poll ] && _args="$_args --oom-guard=1Ki"
    _t0=$(now_s)
    case $_c in
    earlyoom|earlyoom-p)
        # The same memory state as memory.available<X: MemAvailable < X - (memory.available -
        # MemAvailable at rest); SIGKILL at once (hard), swap ignored (there is none).
        eval "$(racekit avail)"
        _k=$(ma_equiv)
        # below the rest offset the equivalent MemAvailable is not positive: earlyoom -M 1
        # (it cannot act before the kernel; the reserve search counts that as a loss)
        [ $_k -ge 1 ] || _k=1
        MA_THR=$((_k * 1024))
        # earlyoom-p adds -p (niceness -20: its 100 ms poll is not delayed by the hog's CPU).
        _p=""; [ $_c = earlyoom-p ] && _p=" -p"
        echo "$_c: earlyoom -M $_k,$_k -s 100,100 -r 0$_p (rest: avail=$avail memavail=$memavail)" >>$OUT/commands.txt
        racekit spawn --oom-score-adj -1000 -- earlyoom -M $_k,$_k -s 100,100 -r 0$_p >$OUT/$_c.log 2>&1 &
        CPID=$!
        vm_wait_for 20 grep -q 'SIGKILL when' $OUT/$_c.log || say "earlyoom did not start: $(tail -n 3 $OUT/$_c.log)"
        ;;
    nohang|nohang-at-x)
        # nohang: the Debian package's /etc/nohang/nohang.conf, run as its nohang.service runs it
        # (nohang --monitor --config FILE). nohang-at-x: the same file with both its SIGTERM
        # (soft) and SIGKILL (hard) MemAvailable thresholds at the memory state of
        # memory.available<X, as earlyoom's -M K,K (swap thresholds hold: there is no swap).
        _conf=/etc/nohang/nohang.conf
        eval "$(racekit avail)"
        if [ $_c = nohang-at-x ]; then
            _k=$(ma_equiv)
            _conf=/run/nohang-at-x.conf
            sed -e "s/^soft_threshold_min_mem *=.*/soft_threshold_min_mem = $((_k / 1024)) M/" \
                -e "s/^hard_threshold_min_mem *=.*/hard_threshold_min_mem = $((_k / 1024)) M/" /etc/nohang/nohang.conf >$_conf
            MA_THR=$((_k / 1024 * MiB))
        else
            # its first action: SIGTERM at soft_threshold_min_mem (percent of MemTotal)
            _k=$(sed -n 's/^soft_threshold_min_mem *= *\([0-9.]*\) *%.*/\1/p' $_conf)
            MA_THR=$(awk -v p="$_k" -v t=$MEMTOTAL 'BEGIN { printf "%d", p / 100 * t }')
        fi
        echo "$_c: nohang --monitor --config $_conf (rest: avail=$avail memavail=$memavail; its MemAvailable threshold $((MA_THR / MiB)) MiB); its threshold lines: $(grep -E '^(soft|hard)_threshold_min_(mem|swap)' $_conf | tr '\n' ';')" >>$OUT/commands.txt
        PYTHONUNBUFFERED=1 racekit spawn --oom-score-adj -1000 -- nohang --monitor --config $_conf >$OUT/$_c.log 2>&1 &
        CPID=$!
        vm_wait_for 60 grep -q 'Monitoring has started' $OUT/$_c.log || say "nohang did not start: $(tail -n 3 $OUT/$_c.log)"
        ;;
    systemd-oomd|systemd-oomd-1s)
        # As systemd-oomd.service(8) recommends without swap: ManagedOOMMemoryPressure=kill on a
        # slice below the root (kubepods.slice, like system.slice) with the default limit
        # (DefaultMemoryPressureLimit=60%) and the Debian package's duration (its drop-in
        # 10-oomd-defaults.conf: DefaultMemoryPressureDurationSec=20s); the -1s variant sets the
        # shortest duration oomd.conf(5) allows (1 s). ManagedOOMSwap=kill on -.slice (the
        # package's drop-in) is ignored without swap.
        if [ $_c = systemd-oomd-1s ]; then
            mkdir -p /etc/systemd/oomd.conf.d
            printf '[OOM]\nDefaultMemoryPressureDurationSec=1s\n' >/etc/systemd/oomd.conf.d/90-race.conf
        fi
        systemctl set-property --runtime kubepods.slice ManagedOOMMemoryPressure=kill || say "set-property kubepods.slice failed"
        systemctl start systemd-oomd.service || say "systemd-oomd did not start: $(systemctl status systemd-oomd 2>&1 | tail -n 3)"
        CPID=$(systemctl show -p MainPID --value systemd-oomd.service)
        vm_wait_for 20 sh -c 'oomctl | grep -q "Path: /kubepods.slice"' || say "systemd-oomd does not monitor kubepods.slice: $(oomctl 2>&1 | tr '\n' ' ')"
        {
            echo "$_c: systemctl set-property --runtime kubepods.slice ManagedOOMMemoryPressure=kill; systemctl start systemd-oomd.service"
            echo "  kubepods.slice: $(systemctl show kubepods.slice -p ManagedOOMMemoryPressure -p ManagedOOMMemoryPressureLimit -p MemoryAccounting | tr '\n' ' ')(a limit of 0 = DefaultMemoryPressureLimit)"
            echo "  oomd.conf in effect (systemd-analyze cat-config systemd/oomd.conf, comments dropped): $(systemd-analyze cat-config systemd/oomd.conf 2>/dev/null | grep -v '^#' | grep . | tr '\n' ' ')"
            echo "  oomctl: $(oomctl 2>&1 | grep -E 'Default Memory Pressure|Path:|Memory Pressure Limit' | sed 's/^[[:space:]]*//' | tr '\n' ';')"
        } >>$OUT/commands.txt
        ;;
    *)
        echo "$_c: evictd $_args" >>$OUT/commands.txt
        racekit spawn --oom-score-adj -1000 -- evictd $_args >$OUT/$_c.out 2>$OUT/$_c.log &
        CPID=$!
        vm_wait_for 120 grep -q 'evictd running' $OUT/$_c.log || say "evictd did not start: $(tail -n 3 $OUT/$_c.log)"
        say "$_c: $(grep -m1 'evictd running' $OUT/$_c.log | sed 's/^[^ ]* //')"
        ;;
    esac
    if [ "${TRACE_SYSCALLS:-0}" = 1 ]; then
        # debugging aid: every syscall of the contender, on the same clock (kept per run)
        echo "common_pid == $CPID" >$T/events/raw_syscalls/filter
        echo 1 >$T/events/raw_syscalls/enable
        echo 1 >$T/events/pagemap/mm_lru_insertion/enable
        echo 8192 >$T/buffer_size_kb
    fi
    say "$_c started in $(awk -v a=$_t0 -v b=$(now_s) 'BEGIN { printf "%.1f", b - a }') s; peers running: $(ps -o pid,comm 2>/dev/null | grep -E 'evictd|earlyoom|nohang|oomd' | tr -s ' ' | tr '\n' ';')"
    sleep 1
}
stop_contender() { # NAME
    case $1 in
    systemd-oomd*)
        journalctl -b -u systemd-oomd.service --no-pager -o short-monotonic >$OUT/$1.log 2>&1
        systemctl stop systemd-oomd.service systemd-oomd.socket
        systemctl set-property --runtime kubepods.slice ManagedOOMMemoryPressure=auto
        rm -f /etc/systemd/oomd.conf.d/90-race.conf
        ;;
    *)
        [ -n "$CPID" ] && kill $CPID 2>/dev/null && wait $CPID 2>/dev/null
        ;;
    esac
    CPID="" MA_THR=0
}

# psi_full_us: kubepods' memory "full" stall so far (PSI, microseconds; what systemd-oomd
# watches on kubepods.slice): the difference over a run is how long all its tasks stalled
psi_full_us() { sed -n 's/^full .*total=\([0-9]*\).*/\1/p' $KP/memory.pressure 2>/dev/null | grep . || echo 0; }

# ---- one run -----------------------------------------------------------------------------
SLOT=0
run_one() { # CONTENDER MODE I
    local _c=$1 _m=$2 _i=$3 _comm _psi0 _psi1 _pod _ctr _rel _rate _threads _max _maxs _t0 _sp _hp _timeout _hogpid _tr _line _delay
    RUN_MARK=$(cat $OUT/$_c.log 2>/dev/null | wc -l)
    new_pod $BE kubepods-besteffort-pod
    _pod=$POD_DIR _ctr=$CTR_DIR _rel=${POD_DIR#$CG}
    write_pods hog-$SEQ $POD_UID
    settle
    SLOT=$((SLOT + 1))
    _rate=$_m _max="" _threads=1
    case $_m in
        max) _rate=0 ;;
        max2) _rate=0 _threads=2 ;;	# a hog thread on each of the guest's two CPUs
        plateau) _rate=256; eval "$(racekit avail)"; _max=$(( (avail - THR) / MiB + PLATEAU_DEPTH_MI )) ;;
    esac
    _maxs=$RACE_MAX_S
    _delay=0
    if [ $_m = plateau ]; then
        _maxs=$PLATEAU_MAX_S
        # A plateau run ends at the poller's tick (its kill), and everything until the next
        # crossing takes about the same time: without this the crossing would fall at the
        # same phase of the tick every run. A random wait of up to one poll period makes the
        # phase uniform, as on a real node.
        case $_c in
            evictd-nobpf|poll-10s) _delay=$(racekit sleep-random 10000) ;;
            poll-1s|earlyoom|nohang*|systemd-oomd*) _delay=$(racekit sleep-random 1000) ;;
        esac
    fi
    echo >$T/trace
    _psi0=$(psi_full_us)
    _t0=$(now_s)
    racekit sample --cgroup $_pod --interval-us $SAMPLE_US --max-s $_maxs --tail-ms 300 \
        --thr $THR --thr-memavail $((MA_THR > 0 ? MA_THR : THR - OFFSET)) \
        --disk $DISK --offset $(( (SLOT_BASE_MIB + SLOT) * MiB )) --size $MiB >/tmp/sample.out &
    _sp=$!
    sleep 0.2
    in_ctr racekit hog --cgroup $_ctr --rate $_rate --threads $_threads ${_max:+--max $_max} --oom-score-adj 1000 >/tmp/hog.out 2>&1 &
    _hp=$!
    wait $_sp
    _psi1=$(psi_full_us)
    _timeout=0
    if grep -q 'populated 1' $_pod/cgroup.events; then
        _timeout=1
        echo 1 >$_pod/cgroup.kill
    fi
    wait $_hp 2>/dev/null
    _hogpid=$(sed -n 's/^hog pid=\([0-9]*\).*/\1/p' /tmp/hog.out)
    # The trace: first SIGKILL/SIGTERM to the hog (when, sent by whom), the first sent by the
    # contender, the kernel's OOM victims, the pod cgroup emptying.
    # the contender's kills: those sent by its own process name (ftrace's comm)
    case $_c in
        evictd*|poll-*) _comm=evictd ;;
        nohang*) _comm=nohang ;;
        systemd-oomd*) _comm=systemd-oomd ;;
        earlyoom*) _comm=earlyoom ;;
        *) _comm=$_c ;;
    esac
    _tr=$(awk -v hog="$_hogpid" -v rel="$_rel" -v comm="$_comm" '
        /^#/ { next }
        {
            ts = ""; ev = ""
            for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { ts = $i; ev = $(i + 1); break }
            if (ts == "") next
            sub(/:$/, "", ts); split(ts, p, "."); t = sprintf("%d%06d000", p[1], p[2])
            task = $1; sub(/-[0-9]+$/, "", task)
            if (ev == "signal_generate:") {
                pid = ""; sig = ""
                for (j = 1; j <= NF; j++) {
                    if ($j ~ /^pid=/) pid = substr($j, 5)
                    if ($j ~ /^sig=/) sig = substr($j, 5)
                }
                if (pid != hog) next
                if (kt == "") { kt = t; kby = task; ksig = sig }
                if (ct == "" && index(task, comm) == 1) { ct = t; cby = task; csig = sig }
            } else if (ev == "mark_victim:") {
                on++; if (ot == "") { ot = t; s = $0; sub(/.*pid=/, "", s); sub(/[^0-9].*/, "", s); opid = s }
            } else if (ev == "cgroup_notify_populated:") {
                if (index($0, "path=" rel " ") && $NF == "val=0" && et == "") et = t
            }
        }
        END {
            printf "k_t=%s k_by=%s k_sig=%s c_t=%s c_by=%s c_sig=%s oom_t=%s oom_pid=%s oom_n=%d e_t=%s",
                kt == "" ? -1 : kt, kby == "" ? "-" : kby, ksig == "" ? "-" : ksig,
                ct == "" ? -1 : ct, cby == "" ? "-" : cby, csig == "" ? "-" : csig,
                ot == "" ? -1 : ot, opid == "" ? "-" : opid, on, et == "" ? -1 : et
        }' $T/trace)
    [ "${TRACE_SYSCALLS:-0}" = 1 ] && cp $T/trace $OUT/trace-$SLOT.txt
    _line="run c=$_c mode=$_m i=$_i slot=$SLOT thr_mi=$THRESHOLD_MI hog=$_hogpid timeout=$_timeout plateau_mib=${_max:-0} delay_ms=$_delay psi_full_ms=$(( (_psi1 - _psi0) / 1000 )) $(cat /tmp/sample.out) $_tr"
    echo "$_line" >>$OUT/runs.txt
    if [ -n "${RESERVE_LEVELS:-}" ]; then
        # the search reads each run from the console (a guest that times out keeps its runs);
        # evictd's own account of the kill: "kill: detection path" (BPF wake record -> the
        # cgroup.kill write, CLOCK_MONOTONIC ns) and "evicted ... empty X ms"
        _own=$(tail -n +$((RUN_MARK + 1)) $OUT/$_c.log 2>/dev/null | awk '
            /kill: detection path/ && !d { for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "first_record") fr = kv[2]; if (kv[1] == "write") w = kv[2] } d = 1 }
            / evicted / && !e { if (match($0, /empty [0-9.]+ ms/)) em = substr($0, RSTART + 6, RLENGTH - 9); e = 1 }
            END { printf "own_first_record=%s own_write=%s own_empty_ms=%s", fr == "" ? -1 : fr, w == "" ? -1 : w, em == "" ? -1 : em }')
        echo "RESERVE-RUN: $_line $_own"
    fi
    say "$_c $_m #$_i: $(echo "$_tr" | cut -c1-150) ($(awk -v a=$_t0 -v b=$(now_s) 'BEGIN { printf "%.1f", b - a }') s)"
    rm_pod $_pod $_ctr
    write_pods
}

T_START=$(now_s)
if [ -n "${RESERVE_LEVELS:-}" ]; then
    # tools/bench/reserve.sh: per contender and mode, the least threshold (MiB, RESERVE_LEVELS
    # ascending) at which the contender stops the hog before the kernel OOM killer in each of
    # RUNS runs; a level ends at its first loss (the next level is tried), the first level
    # won RUNS of RUNS ends the search. The contenders take turns, one run each (restarted per
    # run: the threshold is a start option), so that whatever changes over a boot (the host's
    # load, the guest's kernel memory) falls on all of them alike: the memory.available at
    # which the kernel OOM-kills spreads by ~40 MiB from run to run (MemFree there does not:
    # the min watermark), and a contender searched last would draw from a later stretch of it.
    # The kernel's min watermark: the sum of "min" over /proc/zoneinfo.
    say "zoneinfo min pages $(awk '$1 == "min" { s += $2 } END { print s }' /proc/zoneinfo) kernel $(uname -r)"
    echo "RESERVE-GUEST: min_pages=$(awk '$1 == "min" { s += $2 } END { print s }' /proc/zoneinfo) pagesize=$(getconf PAGESIZE 2>/dev/null || echo 4096) memtotal=$MEMTOTAL base_avail=$BASE offset=$OFFSET kernel=$(uname -r)"
    NLEVELS=$(echo $RESERVE_LEVELS | wc -w)
    for m in $MODES; do
        # per contender (its name with - as _): level index L_, wins at it W_, searching S_
        for c in $CONTENDERS; do v=$(echo $c | tr - _); eval "L_$v=1 W_$v=0 S_$v=1"; done
        searching=1
        while [ $searching = 1 ]; do
            searching=0
            for c in $CONTENDERS; do
                v=$(echo $c | tr - _)
                eval "l=\$L_$v w=\$W_$v on=\$S_$v"
                [ $on = 1 ] || continue
                searching=1
                lv=$(echo $RESERVE_LEVELS | cut -d' ' -f$l)
                THRESHOLD_MI=$lv THR=$((lv * MiB))
                if ! start_contender $c; then
                    echo "RESERVE-LEAST: c=$c mode=$m least_mi=none runs=$RUNS"
                    eval "S_$v=0"
                    continue
                fi
                run_one $c $m $((w + 1))
                stop_contender $c
                # won: the contender's SIGKILL before any oom:mark_victim
                if tail -n1 $OUT/runs.txt | awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } }
                    END { exit !(f["c_t"] + 0 > 0 && (f["oom_t"] + 0 < 0 || f["c_t"] + 0 < f["oom_t"] + 0)) }'; then
                    w=$((w + 1))
                    eval "W_$v=$w"
                    [ $w -ge $RUNS ] || continue
                    # lost_at: the run that lost (RUNS + 1: none)
                    echo "RESERVE-LEVEL: c=$c mode=$m thr_mi=$lv won=$w lost_at=$((w + 1)) of=$RUNS"
                    echo "RESERVE-LEAST: c=$c mode=$m least_mi=$lv runs=$RUNS"
                    eval "S_$v=0"
                else
                    echo "RESERVE-LEVEL: c=$c mode=$m thr_mi=$lv won=$w lost_at=$((w + 1)) of=$RUNS"
                    eval "L_$v=$((l + 1)) W_$v=0"
                    if [ $l -ge $NLEVELS ]; then
                        echo "RESERVE-LEAST: c=$c mode=$m least_mi=none runs=$RUNS"
                        eval "S_$v=0"
                    fi
                fi
            done
        done
    done
    say "all runs done in $(awk -v a=$T_START -v b=$(now_s) 'BEGIN { printf "%.0f", b - a }') s"
    vm_pass race-done
    exit 0
fi
for c in $CONTENDERS; do
    start_contender $c || continue
    for m in $MODES; do
        n=$RUNS
        for cell in ${CELL_RUNS:-}; do case $cell in "$c:$m:"*) n=${cell##*:} ;; esac; done
        i=1
        while [ $i -le $n ]; do
            run_one $c $m $i
            i=$((i + 1))
        done
    done
    stop_contender $c
done
say "all runs done in $(awk -v a=$T_START -v b=$(now_s) 'BEGIN { printf "%.0f", b - a }') s"
dmesg >$OUT/dmesg.txt
cat /proc/vmstat >$OUT/vmstat.txt
(cd $OUT && tar -cf $DISK .) && sync
say "results written"
vm_pass race-done
exit 0
