# evictd-vm.sh - shared guest helpers of the evictd real-kernel scenarios (tests/vm/scenarios/1x-*.sh).
#   . /usr/lib/evictd-vm/data/evictd-vm.sh       (after vm-lib.sh)
#
# evictd runs in the background with its log (stderr) in $EV_LOG and its reports (stdout)
# in $EV_OUT.  Timestamps: evictd logs CLOCK_REALTIME to the ms; the guest's shell side
# uses /proc/uptime (10 ms resolution); ev_clock_offset maps one onto the other.
EV_DATA=/usr/lib/evictd-vm/data
EV_LOG=${EV_LOG:-/tmp/evictd.log}
EV_OUT=${EV_OUT:-/tmp/evictd.out}
EV_PID=""
MiB=1048576

# ev_start ARGS...: start evictd ARGS in the background; wait until it runs (20 s max).
ev_start() {
    : >"$EV_LOG"
    : >"$EV_OUT"
    vm_info "starting: evictd $*"
    evictd "$@" >>"$EV_OUT" 2>>"$EV_LOG" &
    EV_PID=$!
    # 60 s: returns at the line; a TCG guest beside other guests on a loaded host once took
    # over 20 s to get there (18-refault: the line came, after the wait had given up).
    if ! vm_wait_for 60 grep -q 'evictd running' "$EV_LOG"; then
        vm_info "evictd did not start: $(tail -n 5 "$EV_LOG" | tr '\n' '|')"
        return 1
    fi
    vm_info "evictd: $(grep -m1 'evictd running' "$EV_LOG" | sed 's/^[^ ]* //')"
}

# ev_stop: SIGTERM evictd and wait for it; ev_rc is its exit status. First the loop's longest
# iteration from /metrics (the default address) goes into an INFO "loop-max:" line.
ev_stop() {
    [ -n "$EV_PID" ] || return 0
    _lmax=$(wget -q -O - http://127.0.0.1:9808/metrics 2>/dev/null |
        awk '$1 == "evictd_loop_iteration_max_seconds" { print $2 }')
    vm_info "loop-max: evictd_loop_iteration_max_seconds=${_lmax:-unavailable}"
    kill "$EV_PID" 2>/dev/null
    wait "$EV_PID"
    ev_rc=$?
    EV_PID=""
}

# ev_alive: evictd still runs
ev_alive() { [ -n "$EV_PID" ] && kill -0 "$EV_PID" 2>/dev/null; }

# ev_mark: the current number of lines of the log (use with ev_since)
ev_mark() { wc -l <"$EV_LOG" | tr -d ' '; }
# ev_since MARK: the log lines after MARK
ev_since() { tail -n +$(($1 + 1)) "$EV_LOG"; }
# ev_dump [N]: the last N (40) lines of the log as INFO lines (for failures)
ev_dump() {
    tail -n "${1:-40}" "$EV_LOG" | while IFS= read -r _l; do echo "EVICTD-VM: INFO log: $_l"; done
}

# up_now: /proc/uptime in seconds (10 ms resolution)
up_now() { read -r _u _ </proc/uptime; echo "$_u"; }

# ev_clock_offset: prints (realtime seconds-of-day) - uptime, to turn log stamps into uptime
ev_clock_offset() {
    read -r _u1 _ </proc/uptime
    _rt=$(adjtimex | awk '/time.tv_sec/ { s = $2 } /time.tv_usec/ { u = $2 } END { printf "%.6f", s % 86400 + u / 1e6 }')
    read -r _u2 _ </proc/uptime
    awk -v r="$_rt" -v a="$_u1" -v b="$_u2" 'BEGIN { printf "%.4f", r - (a + b) / 2 - 0.005 }'
}

# fcalc EXPR: floating-point arithmetic with awk, e.g. fcalc "1.5 * 2"
fcalc() { awk "BEGIN { printf \"%.3f\", $* }"; }
# fle A B: A <= B (floats)
fle() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }

# mem_available: the kubelet's memory.available in bytes (MemTotal - working set of the root)
mem_available() {
    awk 'FILENAME == "/proc/meminfo" && $1 == "MemTotal:" { t = $2 * 1024 }
         FILENAME != "/proc/meminfo" && $1 == "anon" { a = $2 }
         FILENAME != "/proc/meminfo" && $1 == "file" { f = $2 }
         FILENAME != "/proc/meminfo" && $1 == "inactive_file" { i = $2 }
         END { w = a + f - i; if (w < 0) w = 0; printf "%d\n", t - w }' /proc/meminfo /sys/fs/cgroup/memory.stat
}
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

# oom_trace_on: record the oom:mark_victim tracepoint (the kernel chose an OOM victim) in the
# ftrace buffer, which no_oom_kill then checks too
oom_trace_on() {
    _tr=/sys/kernel/tracing
    [ -w $_tr/events/oom/mark_victim/enable ] || { vm_info "no oom:mark_victim tracepoint"; return 1; }
    echo 1 >$_tr/events/oom/mark_victim/enable && echo 1 >$_tr/tracing_on
}

# no_oom_kill: true when no OOM kill happened anywhere (vmstat, every memory.events, dmesg,
# the oom:mark_victim trace when oom_trace_on ran, evictd's own warning about it)
no_oom_kill() {
    _v=$(awk '$1 == "oom_kill" { print $2 }' /proc/vmstat)
    [ "${_v:-0}" = 0 ] || { echo "/proc/vmstat oom_kill $_v"; return 1; }
    for _e in $(find /sys/fs/cgroup -name memory.events); do
        _k=$(awk '$1 == "oom_kill" { print $2 }' "$_e")
        [ "${_k:-0}" = 0 ] || { echo "$_e: oom_kill $_k"; return 1; }
    done
    if dmesg | grep -qE 'invoked oom-killer|Out of memory|oom-kill:'; then
        echo "dmesg: $(dmesg | grep -m1 -E 'invoked oom-killer|Out of memory|oom-kill:')"
        return 1
    fi
    if grep -q mark_victim /sys/kernel/tracing/trace 2>/dev/null; then
        echo "trace: $(grep -m1 mark_victim /sys/kernel/tracing/trace)"
        return 1
    fi
    if [ -f "$EV_LOG" ] && grep -q 'the kernel OOM killer chose' "$EV_LOG"; then
        echo "evictd: $(grep -m1 'the kernel OOM killer chose' "$EV_LOG")"
        return 1
    fi
    return 0
}

# ---- one memory run (scenarios 10, 15, 16) ------------------------------------------------
# mr_begin THRESHOLD [SAMPLER]: start the sampler (memsampler.sh; THRESHOLD in bytes, or
# pidsampler.sh; THRESHOLD in tasks), remember where the log is
mr_begin() {
    MR_THR=$1
    MR_STOP=/tmp/mr.stop.$$ MR_SAMPLES=/tmp/mr.samples.$$
    rm -f "$MR_STOP" "$MR_SAMPLES"
    sh "$EV_DATA/${2:-memsampler.sh}" "$MR_SAMPLES" "$MR_THR" "$MR_STOP" 0.01 &
    MR_SAMPLER=$!
    MR_MARK=$(ev_mark)
    MR_T0=$(up_now)
    MR_OFF=$(ev_clock_offset)
}

# quiet_wait_empty CGROUP TIMEOUT: wait until CGROUP has no process, polling every 20 ms with
# shell builtins only: no fork, no memory charged, nothing that would wake evictd's BPF side
# (the waits must not be what makes evictd look).  Sets QW_AT (uptime when seen empty).
quiet_wait_empty() {
    [ -n "$QW_FD_OPEN" ] || { mkfifo /tmp/qw.$$.fifo && exec 4<>/tmp/qw.$$.fifo && rm -f /tmp/qw.$$.fifo; QW_FD_OPEN=1; }
    read -r _qu _ </proc/uptime
    _qend=$(( ${_qu%.*}${_qu#*.} + $2 * 100 ))
    while :; do
        _qp=1
        while read -r _qk _qv; do [ "$_qk" = populated ] && _qp=$_qv; done <"$1/cgroup.events"
        read -r _qu _ </proc/uptime
        [ "$_qp" = 0 ] && { QW_AT=$_qu; return 0; }
        [ $(( ${_qu%.*}${_qu#*.} )) -ge $_qend ] && { QW_AT=$_qu; return 1; }
        read -r -t 0.02 _ <&4
    done
}

# mr_wait_gone CGROUP TIMEOUT: wait until CGROUP has no process (MR_GONE=1) or TIMEOUT s
mr_wait_gone() {
    MR_GONE=0
    if quiet_wait_empty "$1" "$2"; then MR_GONE=1; fi
    MR_T_GONE=$QW_AT
}

# mr_end: stop the sampler and parse it and the log since mr_begin into MR_* variables:
#   MR_SAMPLE_N MR_FIRST_BELOW MR_MIN MR_MIN_AT MR_MIN_MEMAVAIL   (sampler; uptime seconds, bytes)
#   MR_DEC MR_DEC_SIG MR_DEC_OBS MR_DEC_VICTIM MR_DEC_DRY   (first decision: uptime, signal, bytes, victim)
#   MR_EVICTED MR_EVICTED_VICTIM MR_EVICTED_SIG MR_EVICTED_MS   (the evicted line: uptime, victim, signal, "empty N ms")
#   MR_KILL_MS                                                  (kill: "... (N ms in all)")
#   MR_KILLING (the "kill: killing pod" line: uptime)
#   MR_DEC_TO_KILL_MS (decision -> "kill: killing pod", i.e. just before cgroup.kill is written),
#   MR_DEC_TO_EMPTY_MS (decision -> evicted line, i.e. the cgroup is empty),
#   MR_CROSS_TO_DEC_MS (sampler crossing -> decision; "unseen" when evictd acted before the
#   sampler, which samples every ~20 ms, saw the value below the threshold)
#   MR_OVERSHOOT (threshold - sampled minimum of memory.available, MiB; "unseen" when the
#   sampler never saw it below the threshold),
#   MR_OVERSHOOT_DEC (threshold - memory.available observed by evictd at the decision, MiB; n/a when
#   the decision was on another signal, e.g. the OOM guard)
mr_end() {
    sleep 0.3
    touch "$MR_STOP"
    wait "$MR_SAMPLER" 2>/dev/null
    MR_SAMPLE_N=0 MR_FIRST_BELOW=none MR_MIN=-1 MR_MIN_AT=0 MR_MIN_MEMAVAIL=-1
    if [ -f "$MR_SAMPLES" ]; then
        eval "$(sed -e 's/samples=/MR_SAMPLE_N=/' -e 's/first_below=/MR_FIRST_BELOW=/' \
            -e 's/min_avail=/MR_MIN=/' -e 's/min_at=/MR_MIN_AT=/' -e 's/min_memavailable=/MR_MIN_MEMAVAIL=/' \
            -e 's/start=/MR_S_START=/' -e 's/end=/MR_S_END=/' "$MR_SAMPLES")"
    fi
    MR_DEC="" MR_DEC_SIG="" MR_DEC_OBS="" MR_DEC_VICTIM="" MR_DEC_DRY=0
    MR_EVICTED="" MR_EVICTED_VICTIM="" MR_EVICTED_SIG="" MR_EVICTED_MS="" MR_KILL_MS="" MR_KILLING=""
    eval "$(ev_since "$MR_MARK" | awk -v off="$MR_OFF" '
        function up(s,   t) { split(substr(s, 12, 12), t, ":"); v = t[1] * 3600 + t[2] * 60 + t[3] - off;
                              if (v < -40000) v += 86400; return v }
        function after(line, key,   r) { if (!match(line, key "[^ ]*")) return ""; return substr(line, RSTART + length(key), RLENGTH - length(key)) }
        / decision: / && !dec && !/no threshold is met/ {
            dec = 1
            printf "MR_DEC=%.3f\n", up($1)
            printf "MR_DEC_DRY=%d\n", (index($0, "[dry-run]") > 0)
            if (match($0, /(hard|soft) [a-zA-Z.]+=-?[0-9]+/)) {
                s = substr($0, RSTART, RLENGTH); sub(/^(hard|soft) /, "", s); split(s, kv, "=")
                printf "MR_DEC_SIG=%s\nMR_DEC_OBS=%s\n", kv[1], kv[2]
            }
            printf "MR_DEC_VICTIM=%s\n", after($0, "victim=")
        }
        / kill: (killing|soft-killing) pod / && !kp { kp = 1; printf "MR_KILLING=%.3f\n", up($1) }
        / kill: .* empty .* ms after the kill \(/ && !kill {
            kill = 1; s = $0; sub(/.*\(/, "", s); sub(/ ms in all.*/, "", s); printf "MR_KILL_MS=%s\n", s
        }
        / evicted / && !ev {
            ev = 1
            printf "MR_EVICTED=%.3f\n", up($1)
            s = $0; sub(/.* evicted /, "", s); split(s, w, " "); printf "MR_EVICTED_VICTIM=%s\n", w[1]
            # "for memory.available<250Mi: usage ..." (the threshold follows the signal since
            # the rank reason joined the line): the name alone, nothing the eval reads as a redirect
            s = $0; sub(/.*\) for /, "", s); sub(/[<>: ].*/, "", s); printf "MR_EVICTED_SIG=%s\n", s
            s = $0; sub(/.*, empty /, "", s); sub(/ ms.*/, "", s); printf "MR_EVICTED_MS=%s\n", s
        }')"
    MR_DEC_TO_EMPTY_MS=n/a MR_CROSS_TO_DEC_MS=n/a MR_OVERSHOOT=n/a MR_OVERSHOOT_DEC=n/a MR_DEC_TO_KILL_MS=n/a
    [ -n "$MR_DEC" ] && [ -n "$MR_KILLING" ] && MR_DEC_TO_KILL_MS=$(fcalc "($MR_KILLING - $MR_DEC) * 1000" | sed 's/\..*//')
    [ -n "$MR_DEC" ] && [ -n "$MR_EVICTED" ] && MR_DEC_TO_EMPTY_MS=$(fcalc "($MR_EVICTED - $MR_DEC) * 1000" | sed 's/\..*//')
    if [ -n "$MR_DEC" ] && [ "$MR_FIRST_BELOW" != none ]; then
        MR_CROSS_TO_DEC_MS=$(fcalc "($MR_DEC - $MR_FIRST_BELOW) * 1000" | sed 's/\..*//')
    elif [ -n "$MR_DEC" ]; then
        MR_CROSS_TO_DEC_MS="unseen"        # evictd acted before the sampler saw the crossing
    fi
    [ "$MR_MIN" -ge 0 ] 2>/dev/null && MR_OVERSHOOT=$(fcalc "($MR_THR - $MR_MIN) / 1048576")
    [ "$MR_MIN" -ge "$MR_THR" ] 2>/dev/null && MR_OVERSHOOT=unseen
    [ -n "$MR_DEC_OBS" ] && [ "$MR_DEC_SIG" = memory.available ] && MR_OVERSHOOT_DEC=$(fcalc "($MR_THR - $MR_DEC_OBS) / 1048576")
    rm -f "$MR_STOP" "$MR_SAMPLES"
}

# mr_info NAME: one INFO line with the run's numbers
mr_info() {
    vm_info "$1: decision->cgroup.kill ${MR_DEC_TO_KILL_MS} ms, decision->empty ${MR_DEC_TO_EMPTY_MS} ms (kill->empty ${MR_KILL_MS:-n/a} ms)," \
        "crossing->decision ${MR_CROSS_TO_DEC_MS} ms (10 ms clock), signal ${MR_DEC_SIG:-none}," \
        "${MR_DEC_SIG:-value} observed at decision $( [ -n "$MR_DEC_OBS" ] && mib "$MR_DEC_OBS" || echo n/a) MiB (overshoot ${MR_OVERSHOOT_DEC} MiB)," \
        "sampled min $( [ "$MR_MIN" -ge 0 ] 2>/dev/null && mib "$MR_MIN" || echo n/a) MiB (overshoot ${MR_OVERSHOOT} MiB," \
        "MemAvailable min $( [ "$MR_MIN_MEMAVAIL" -ge 0 ] 2>/dev/null && mib "$MR_MIN_MEMAVAIL" || echo n/a) MiB, $MR_SAMPLE_N samples)," \
        "victim ${MR_EVICTED_VICTIM:-${MR_DEC_VICTIM:-none}}"
}

# cg_run DIR CMD [ARG...]: start CMD inside cgroup DIR in the background; CG_PID is its pid
cg_run() {
    _d=$1
    shift
    sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$_d" "$@" &
    CG_PID=$!
    _i=0
    while [ $_i -lt 100 ] && ! grep -qx "$CG_PID" "$_d/cgroup.procs" 2>/dev/null; do
        sleep 0.02
        _i=$((_i + 1))
    done
}

# cg_kill DIR: cgroup.kill DIR and wait (5 s) until it is empty
cg_kill() {
    echo 1 >"$1/cgroup.kill" 2>/dev/null
    vm_wait_for 5 sh -c "grep -q '^populated 0' '$1/cgroup.events'"
}

# settle THRESHOLD_BYTES [MARGIN_MIB]: wait (30 s) until memory.available is MARGIN_MIB (300)
# above THRESHOLD_BYTES, then 1 s more (evictd sees the threshold unmet and forgets it)
settle() {
    vm_wait_for 30 sh -c ". $EV_DATA/evictd-vm.sh; [ \$(mem_available) -gt $(($1 + ${2:-300} * MiB)) ]" \
        || vm_info "settle: memory.available still $(mib "$(mem_available)") MiB after 30 s"
    sleep 1
}
