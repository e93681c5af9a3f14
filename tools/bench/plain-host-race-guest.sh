#!/bin/sh
# plain-host-race-guest.sh - the guest side of tools/bench/plain-host-race.sh: runs as a oneshot
# service (in bench.slice, outside system.slice and user.slice) of the Debian systemd guest once
# multi-user.target is up; configuration in /etc/phr.conf, written by the host script.
#
# A plain host: swap on zram (ZRAM_PCT% of RAM, the kernel's default compressor), a lingering
# user (user@1000.service) with a session scope (user-1000.slice/session-phr*.scope, a transient
# scope named as logind names sessions: the guest has no login path), two services (db: 128 MiB,
# web: 64 MiB, both ordinary system.slice units). Per contender (its packaged unit started, stopped
# after its block) and per load, one run: the load starts, the sampler records MemAvailable,
# SwapFree and /proc/pressure/memory every 100 ms, ftrace records every SIGKILL/SIGTERM sent (by
# whom, to which comm) and the kernel OOM killer's choices; the run ends when the load's cgroup
# empties or after WINDOW_S (then the driver kills it: nobody acted), plus RECOVER_S of sampling.
# Loads (each sets its comm to its name, so the trace names the victim):
#   hog    a service (system.slice/phr-hog.service): anonymous memory as fast as it can
#   leak   the session scope: anonymous memory at LEAK_RATE MiB/s
#   fill   a service writing a private tmpfs (TemporaryFileSystem=, freed when the unit stops)
#   thrash the user manager (user@1000.service/app.slice/phr-thrash.service): a working set of
#          1.3 x MemAvailable at the run's start, written page by page, pass after pass
# Output: one "run ..." line per run in /tmp/out/runs.txt; the contenders' journals; /tmp/out is
# written as a tar to /dev/vda at the end.
. /etc/phr.conf
. /usr/lib/evictd-vm/vm-lib.sh

OUT=/tmp/out
T=/sys/kernel/tracing
CG=/sys/fs/cgroup
LOAD=/usr/bin/plain-host-load
mkdir -p $OUT
exec 2>>$OUT/guest-stderr.txt
say() { echo "PHR: $*"; }
echo -1000 >/proc/self/oom_score_adj
meminfo() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }	# KiB
mono_ms() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }

# ---- zram swap --------------------------------------------------------------------------------
modprobe zram 2>/dev/null
MEMTOTAL_K=$(meminfo MemTotal)
echo $((MEMTOTAL_K * 1024 / 100 * ZRAM_PCT)) >/sys/block/zram0/disksize || say "cannot size zram0"
mkswap /dev/zram0 >/dev/null && swapon -p 100 /dev/zram0 || say "swapon /dev/zram0 failed"
say "swap: $(tr '\n' ' ' </proc/swaps); zram algorithm $(cat /sys/block/zram0/comp_algorithm 2>/dev/null)"

# ---- ftrace: kills sent (sender comm, target comm), the kernel OOM killer ---------------------
echo mono >$T/trace_clock || say "no mono trace clock"
echo 'sig == 9 || sig == 15' >$T/events/signal/signal_generate/filter
echo 1 >$T/events/signal/signal_generate/enable
echo 1 >$T/events/oom/mark_victim/enable
echo 4096 >$T/buffer_size_kb
echo 1 >$T/tracing_on

# ---- the peers' packaged units: recorded, stopped; each runs only in its own block ------------
{
    echo "guest: $(dpkg-query -W -f '${Package} ${Version}, ' systemd systemd-oomd nohang earlyoom 2>/dev/null | sed 's/, $//'); kernel $(uname -r); MemTotal $((MEMTOTAL_K / 1024)) MiB; zram $ZRAM_PCT% of RAM"
    echo "peer units enabled by their packages: $(systemctl is-enabled earlyoom.service nohang.service nohang-desktop.service systemd-oomd.service 2>&1 | tr '\n' ' ')"
    echo "peer units running at boot: $(systemctl list-units --state=running --no-legend --plain earlyoom.service nohang.service nohang-desktop.service systemd-oomd.service | cut -d' ' -f1 | tr '\n' ' ')"
    echo "systemd-oomd's packaged unit settings:"
    for f in /usr/lib/systemd/system/-.slice.d/*oomd* /usr/lib/systemd/system/user@.service.d/*oomd* /usr/lib/systemd/oomd.conf.d/*; do
        [ -f "$f" ] && echo "  $f: $(grep -v '^#' "$f" | grep . | tr '\n' ' ')"
    done
    echo "earlyoom: /etc/default/earlyoom: $(grep -v '^#' /etc/default/earlyoom | grep .)"
    echo "nohang.conf thresholds: $(grep -E '^(soft|hard)_threshold|^(psi|zram)_checking' /etc/nohang/nohang.conf | tr -s ' ' | tr '\n' ';')"
} >>$OUT/commands.txt
# masked (at runtime), not only stopped: systemd-oomd comes back by socket or D-Bus activation
# (seen in a first run: it killed in earlyoom's and nohang's blocks)
PEERS="earlyoom.service nohang.service nohang-desktop.service systemd-oomd.service systemd-oomd.socket"
# shellcheck disable=SC2086
systemctl stop $PEERS
# shellcheck disable=SC2086
systemctl mask --runtime --quiet $PEERS

# ---- the host: a lingering user, two services ------------------------------------------------
if ! grep -q '^bench:' /etc/passwd; then
    echo 'bench:x:1000:1000:bench:/home/bench:/bin/sh' >>/etc/passwd
    echo 'bench:x:1000:' >>/etc/group
    echo 'bench:!:19000:0:99999:7:::' >>/etc/shadow
    mkdir -p /home/bench && chown 1000:1000 /home/bench
fi
loginctl enable-linger bench || say "enable-linger failed"
user_up() {
    systemctl start user@1000.service 2>/dev/null
    vm_wait_for 30 test -S /run/user/1000/systemd/private || say "user@1000.service has no private socket"
}
user_up
# bystanders (re)started before every run: a contender that killed one must not leave the next
# runs more memory (a first run: earlyoom's kill of db gave every later run ~190 MiB more)
bystanders() {
    local u n
    for u in db:128 web:64; do
        n=${u%%:*}
        systemctl is-active -q $n.service && continue
        systemctl reset-failed $n.service 2>/dev/null
        systemd-run --quiet --unit=$n $LOAD anon $n 0 ${u#*:}
    done
}
bystanders
sleep 3
BASE_MA_K=$(meminfo MemAvailable)
say "MemTotal $((MEMTOTAL_K / 1024)) MiB, MemAvailable at rest $((BASE_MA_K / 1024)) MiB"
echo "guest memtotal_mib=$((MEMTOTAL_K / 1024)) base_memavail_mib=$((BASE_MA_K / 1024)) swap_mib=$(($(meminfo SwapTotal) / 1024)) kernel=$(uname -r)" >>$OUT/runs.txt

# ---- contenders ------------------------------------------------------------------------------
# matched: every memory-based contender SIGKILLs at MemAvailable <= MATCH_PCT% of MemTotal on
# memory alone (swap ignored, as earlyoom -s 100 and nohang's 100% swap thresholds: evictd's
# swap and zram guards off); evictd's memory.available threshold is that MemAvailable plus
# (memory.available - MemAvailable) at rest.
match_k() { echo $((MEMTOTAL_K * MATCH_PCT / 100)); }
avail_k() {	# the kubelet's memory.available, KiB (DESIGN.md §1)
    awk -v t=$MEMTOTAL_K '$1 == "anon" || $1 == "file" { u += $2 } $1 == "inactive_file" { u -= $2 } END { printf "%d", t - u / 1024 }' $CG/memory.stat
}
UNIT=""
start_contender() {
    local c=$1 k
    UNIT=""
    case $c in
    earlyoom*) systemctl unmask --runtime --quiet earlyoom.service ;;
    nohang*) systemctl unmask --runtime --quiet nohang.service ;;
    systemd-oomd*) systemctl unmask --runtime --quiet systemd-oomd.service systemd-oomd.socket ;;
    esac
    case $c in
    none) echo "$c: nothing started (the kernel alone)" >>$OUT/commands.txt ;;
    evictd|evictd-matched)
        args=$EVICTD_ARGS
        if [ $c = evictd-matched ]; then
            k=$(( $(match_k) + $(avail_k) - $(meminfo MemAvailable) ))
            args="$args --eviction-hard=memory.available<${k}Ki --oom-guard=off --swap-guard=off --zram-guard=off"
        fi
        echo "$c: systemd-run --unit=evictd -p OOMScoreAdjust=-1000 evictd $args" >>$OUT/commands.txt
        # shellcheck disable=SC2086
        systemd-run --quiet --unit=evictd -p OOMScoreAdjust=-1000 /usr/bin/evictd $args
        UNIT=evictd.service
        vm_wait_for 120 sh -c 'journalctl -u evictd.service -o cat | grep -q "evictd running"' || say "evictd did not start: $(journalctl -u evictd.service -o cat | tail -n 3)"
        ;;
    earlyoom|earlyoom-matched)
        cp /etc/default/earlyoom /run/earlyoom.default
        [ $c = earlyoom ] || echo "EARLYOOM_ARGS=\"-m $MATCH_PCT,$MATCH_PCT -s 100,100 -r 3600\"" >/etc/default/earlyoom
        echo "$c: systemctl start earlyoom.service ($(grep '^EARLYOOM_ARGS' /etc/default/earlyoom))" >>$OUT/commands.txt
        systemctl start earlyoom.service; UNIT=earlyoom.service
        vm_wait_for 20 sh -c 'journalctl -u earlyoom.service -o cat | grep -q "SIGKILL when"' || say "earlyoom did not start"
        ;;
    nohang|nohang-matched)
        cp /etc/nohang/nohang.conf /run/nohang.conf.orig
        if [ $c = nohang-matched ]; then
            sed -i -e "s/^soft_threshold_min_mem *=.*/soft_threshold_min_mem = $MATCH_PCT %/" \
                -e "s/^hard_threshold_min_mem *=.*/hard_threshold_min_mem = $MATCH_PCT %/" \
                -e "s/^soft_threshold_min_swap *=.*/soft_threshold_min_swap = 100 %/" \
                -e "s/^hard_threshold_min_swap *=.*/hard_threshold_min_swap = 100 %/" /etc/nohang/nohang.conf
        fi
        echo "$c: systemctl start nohang.service; $(grep -E '^(soft|hard)_threshold_min' /etc/nohang/nohang.conf | tr -s ' ' | tr '\n' ';')" >>$OUT/commands.txt
        systemctl start nohang.service; UNIT=nohang.service
        vm_wait_for 60 sh -c 'journalctl -u nohang.service -o cat | grep -q "Monitoring has started"' || say "nohang did not start"
        ;;
    systemd-oomd|systemd-oomd-matched)
        if [ $c = systemd-oomd-matched ]; then
            mkdir -p /etc/systemd/oomd.conf.d
            printf '[OOM]\nDefaultMemoryPressureDurationSec=1s\n' >/etc/systemd/oomd.conf.d/90-phr.conf
            systemctl set-property --runtime system.slice ManagedOOMMemoryPressure=kill
            systemctl set-property --runtime user.slice ManagedOOMMemoryPressure=kill
        fi
        systemctl start systemd-oomd.service; UNIT=systemd-oomd.service
        vm_wait_for 20 sh -c 'oomctl >/dev/null 2>&1' || say "systemd-oomd did not start"
        echo "$c: systemctl start systemd-oomd.service; oomctl: $(oomctl 2>&1 | grep -E 'Swap Used Limit|Default Memory Pressure|Path:|Limit' | sed 's/^[[:space:]]*//' | tr '\n' ';')" >>$OUT/commands.txt
        ;;
    *) say "unknown contender $c"; return 1 ;;
    esac
    sleep 2
}
stop_contender() {
    local c=$1
    [ -n "$UNIT" ] && journalctl -b -u $UNIT --no-pager -o short-monotonic >$OUT/$c.log 2>&1
    case $c in
    evictd*) systemctl stop evictd.service; systemctl reset-failed evictd.service 2>/dev/null ;;
    earlyoom*) systemctl stop earlyoom.service; cp /run/earlyoom.default /etc/default/earlyoom ;;
    nohang*) systemctl stop nohang.service; cp /run/nohang.conf.orig /etc/nohang/nohang.conf ;;
    systemd-oomd*)
        systemctl stop systemd-oomd.service systemd-oomd.socket
        rm -f /etc/systemd/oomd.conf.d/90-phr.conf
        systemctl set-property --runtime system.slice ManagedOOMMemoryPressure=auto
        systemctl set-property --runtime user.slice ManagedOOMMemoryPressure=auto
        ;;
    esac
    # shellcheck disable=SC2086
    systemctl mask --runtime --quiet $PEERS
    systemctl reset-failed 2>/dev/null
}

# ---- loads -----------------------------------------------------------------------------------
SEQ=0
# start_load NAME: starts it; sets LCG (its cgroup directory)
start_load() {
    SEQ=$((SEQ + 1))
    case $1 in
    hog)
        systemd-run --quiet --unit=phr-hog $LOAD anon hog 0 4096
        LCG=$CG/system.slice/phr-hog.service ;;
    leak)
        systemd-run --quiet --scope --unit=session-phr$SEQ.scope --slice=user-1000.slice -- $LOAD anon leak $LEAK_RATE 4096 >/dev/null &
        LCG=$CG/user.slice/user-1000.slice/session-phr$SEQ.scope ;;
    fill)
        systemd-run --quiet --unit=phr-fill -p TemporaryFileSystem=/fill:size=4096M $LOAD tmpfs fill $FILL_RATE 4096 /fill
        LCG=$CG/system.slice/phr-fill.service ;;
    thrash)
        runuser -u bench -- env XDG_RUNTIME_DIR=/run/user/1000 systemctl --user reset-failed phr-thrash.service 2>/dev/null
        if runuser -u bench -- env XDG_RUNTIME_DIR=/run/user/1000 systemd-run --user --quiet --unit=phr-thrash $LOAD thrash thrash $THRASH_MIB; then
            LCG=$CG/user.slice/user-1000.slice/user@1000.service/app.slice/phr-thrash.service
        else
            say "systemd-run --user failed: the thrash load runs in a system scope in user-1000.slice"
            systemd-run --quiet --scope --unit=phr-thrash.scope --slice=user-1000.slice -- $LOAD thrash thrash $THRASH_MIB >/dev/null &
            LCG=$CG/user.slice/user-1000.slice/phr-thrash.scope
        fi ;;
    esac
    vm_wait_for 10 test -d $LCG || say "no cgroup $LCG"
}
stop_load() {
    case $1 in
    hog|fill) systemctl stop phr-$1.service 2>/dev/null ;;
    thrash) runuser -u bench -- env XDG_RUNTIME_DIR=/run/user/1000 systemctl --user stop phr-thrash.service 2>/dev/null ;;
    esac
    [ -f $LCG/cgroup.kill ] && echo 1 >$LCG/cgroup.kill 2>/dev/null
    systemctl reset-failed 2>/dev/null
}
populated() { grep -q 'populated 1' $1/cgroup.events 2>/dev/null; }
# settle: swap emptied (every run starts from the same state: the bystanders' pages come back
# from zram), MemAvailable back within 32 MiB of the level at rest (at most 30 s)
settle() {
    local n=0
    swapoff /dev/zram0 && swapon -p 100 /dev/zram0 || say "cannot empty the swap"
    while [ $n -lt 60 ] && [ $(meminfo MemAvailable) -lt $((BASE_MA_K - 32 * 1024)) ]; do sleep 0.5; n=$((n + 1)); done
    sleep 1
}

run_one() {	# CONTENDER LOAD
    local c=$1 l=$2 t0 tend s0 first by victims t_act line
    systemctl is-active -q user@1000.service || user_up
    bystanders
    settle
    # the thrashing working set: 1.3 x MemAvailable now
    THRASH_MIB=$(($(meminfo MemAvailable) / 1024 * 13 / 10))
    local ma0=$(meminfo MemAvailable) sw0=$(meminfo SwapFree)
    echo >$T/trace
    dmesg -C
    echo "PHR run $c $l" >/dev/kmsg
    $LOAD sample /tmp/series.txt $((WINDOW_S + RECOVER_S + 2)) 100 &
    s0=$!
    sleep 0.3
    t0=$(mono_ms)
    start_load $l
    tend=$((t0 + WINDOW_S * 1000))
    while [ $(mono_ms) -lt $tend ]; do
        populated $LCG || break
        sleep 0.25
    done
    local nobody=0
    populated $LCG && nobody=1
    local tstop=$(mono_ms)
    stop_load $l
    # recovery: RECOVER_S more, then the sampler stops
    sleep $RECOVER_S
    kill $s0 2>/dev/null; wait $s0 2>/dev/null
    cp /tmp/series.txt $OUT/series-$c-$l.txt
    dmesg >$OUT/dmesg-$c-$l.txt
    # the first kill by a contender (its comm sent a SIGKILL/SIGTERM), and the kernel OOM killer's
    # first choice; victims = the comms the first actor signalled (kernel: the OOM victims)
    awk -v t0=$t0 -v tstop=$tstop '
        /^#/ { next }
        {
            ts = ""; ev = ""
            for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { ts = $i; ev = $(i + 1); break }
            if (ts == "") next
            sub(/:$/, "", ts); t = ts * 1000
            if (t > tstop) next
            task = $1; sub(/-[0-9]+$/, "", task)
            if (ev == "signal_generate:" && task ~ /^(evictd|earlyoom|nohang|systemd-oomd)$/) {
                tc = ""; for (j = 1; j <= NF; j++) if ($j ~ /^comm=/) tc = substr($j, 6)
                if (ct == "") { ct = t; cby = task }
                if (t - ct < 2000 && !(tc in cv)) { cv[tc] = 1; cvs = cvs (cvs == "" ? "" : "+") tc }
            } else if (ev == "mark_victim:" && ot == "") ot = t
        }
        END {
            printf "ct=%s cby=\047%s\047 cvictims=\047%s\047 ot=%s\n", ct == "" ? -1 : int(ct), cby == "" ? "-" : cby, cvs == "" ? "-" : cvs, ot == "" ? -1 : int(ot)
        }' $T/trace >/tmp/tr.txt
    eval "$(cat /tmp/tr.txt)"
    local ovictims=$(sed -n 's/.*Killed process [0-9]* (\([^)]*\)).*/\1/p' $OUT/dmesg-$c-$l.txt | awk '!s[$0]++' | paste -sd+ -)
    if [ $ct -ge 0 ] && { [ $ot -lt 0 ] || [ $ct -le $ot ]; }; then
        first=contender; by=$cby; victims=$cvictims; t_act=$ct
    elif [ $ot -ge 0 ]; then
        first=kernel; by=kernel; victims=${ovictims:-?}; t_act=$ot
    else
        first=nobody; by=-; victims=-; t_act=$tstop
    fi
    # from the series: min MemAvailable, min SwapFree, PSI full stall over the run, recovery
    # (the first sample after the action with MemAvailable >= 80% of its level before the load)
    eval "$(awk -v t0=$t0 -v ta=$t_act -v ma0=$ma0 '
        NR == 1 { f0 = $4 } { f1 = $4 }
        $1 >= t0 && (mn == "" || $2 < mn) { mn = $2 }
        $1 >= t0 && (ms == "" || $3 < ms) { ms = $3 }
        $1 >= ta && rec == "" && $2 >= ma0 * 0.8 { rec = $1 - ta }
        END { printf "min_ma=%d min_swap=%d psi_full_ms=%d rec_ms=%s\n", mn / 1024, ms / 1024, (f1 - f0) / 1000, rec == "" ? -1 : rec }' /tmp/series.txt)"
    line="run c=$c load=$l first=$first by=$by victims=$victims act_s=$(awk -v a=$t_act -v b=$t0 'BEGIN { printf "%.1f", (a - b) / 1000 }') nobody=$nobody kernel_oom=$([ $ot -ge 0 ] && echo 1 || echo 0) oom_victims=${ovictims:--} min_memavail_mib=$min_ma min_swapfree_mib=$min_swap psi_full_ms=$psi_full_ms recover_ms=$rec_ms memavail0_mib=$((ma0 / 1024)) swapfree0_mib=$((sw0 / 1024))"
    echo "$line" >>$OUT/runs.txt
    say "$line"
}

T_START=$(mono_ms)
for c in $CONTENDERS; do
    start_contender $c || continue
    for l in $LOADS; do
        run_one $c $l
    done
    stop_contender $c
done
say "all runs done in $(( ($(mono_ms) - T_START) / 1000 )) s"
dmesg >$OUT/dmesg.txt
(cd $OUT && tar -cf /dev/vda .) && sync
say "results written"
vm_pass phr-done
exit 0
