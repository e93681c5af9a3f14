#!/bin/sh
# 13-soft: the soft threshold memory.available<600Mi with a 4 s grace period and
# --eviction-max-pod-grace-period=3.  A BestEffort pod's main process (tests/vm/data/term-trap.sh)
# holds 300 MiB with SIGTERM ignored by the memory holder and logs when SIGTERM arrives.
#  short: the memory is held below the threshold for ~2 s (< grace), then freed: nothing is
#         signalled or killed (while it is held, evictd --once reports MemoryPressure=True and
#         no decision);
#  long-3: held until evicted; the pod's terminationGracePeriodSeconds is 30: SIGTERM comes
#         4 s (the grace) after the crossing and cgroup.kill min(30, 3) = 3 s after SIGTERM;
#  long-2: the same with terminationGracePeriodSeconds=2: cgroup.kill min(2, 3) = 2 s after SIGTERM.
# Timings are checked with a tolerance for TCG: crossing->SIGTERM in [grace - 0.05, grace + 1.5] s
# (the crossing is sampled every ~10-25 ms), SIGTERM->cgroup.kill in [g - 0.05, g + 0.8] s
# (both from evictd's own log), SIGTERM->empty in the pod's clock in [g - 0.1, g + 1.0] s.
# While the pod holds its memory nothing in the guest forks or allocates (the waits and the
# pod use shell builtins only), so nothing but evictd's own clock can make it act on time.
# vm-mem: 1024M
# vm-smp: 2
# vm-timeout: 300
# vm-serial: yes: grace periods checked to 0.05-1.5 s
# vm-bins: evictd
# vm-add: tests/vm/lib/kubepods.sh:/usr/lib/evictd-vm/kubepods.sh
# vm-add: tests/vm/data:/usr/lib/evictd-vm/data
# vm-expect: pods-running evictd-started
# vm-expect: soft-short-condition soft-short-nothing
# vm-expect: soft-long-3-sigterm-after-grace soft-long-3-kill-after-pod-grace soft-long-3-evicted
# vm-expect: soft-long-2-sigterm-after-grace soft-long-2-kill-after-pod-grace soft-long-2-evicted
# vm-expect: no-oom-kill others-untouched evictd-alive
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/kubepods.sh
. /usr/lib/evictd-vm/data/evictd-vm.sh
oom_trace_on

THRESHOLD=600Mi
GRACE=4                 # --eviction-soft-grace-period, seconds
MAX_POD_GRACE=3         # --eviction-max-pod-grace-period, seconds
HOLD=300                # MiB the pod holds
SHORT=2                 # seconds the short hold stays below the threshold
# Empty: evictd's default (10s). A timer armed for the end of the soft threshold's grace
# period must bring the SIGTERM on time, not the next housekeeping tick.
HOUSEKEEPING=""
PODS=/run/pods.json
THR_BYTES=$(kp_qty_bytes $THRESHOLD)
SOFT_ARGS="--eviction-soft=memory.available<$THRESHOLD --eviction-soft-grace-period=memory.available=${GRACE}s"

kp_init systemd || vm_fail pods-running "kp_init systemd failed"
kp_pod db Guaranteed --request 160Mi --priority 1000 --grace 30
kp_pod web Burstable --request 96Mi --limit 384Mi --priority 500 --grace 30
kp_podlist $PODS
kp_run db memhog --max 100 --quiet 2>/tmp/db.log
DB_PID=$KP_PID
kp_run web memhog --max 48 --quiet 2>/tmp/web.log
WEB_PID=$KP_PID
vm_wait_for 20 grep -q reached /tmp/db.log
vm_wait_for 20 grep -q reached /tmp/web.log
if kp_populated db && kp_populated web; then vm_pass pods-running; else vm_fail pods-running "db/web not running"; fi

ev_start --pods-file=$PODS --node-name=evictd-vm $SOFT_ARGS --eviction-max-pod-grace-period=$MAX_POD_GRACE \
    ${HOUSEKEEPING:+--housekeeping-interval=$HOUSEKEEPING} && vm_pass evictd-started || vm_fail evictd-started "see the log above"
vm_info "memory.available at rest: $(mib "$(mem_available)") MiB; soft threshold $THRESHOLD, grace ${GRACE}s, max pod grace ${MAX_POD_GRACE}s"

below() { [ "$(mem_available)" -lt "$THR_BYTES" ]; }

# ---- short: below the threshold for less than the grace period
settle "$THR_BYTES" 100
kp_pod short BestEffort --grace 30
kp_podlist $PODS
rm -f /tmp/short.log*
mr_begin "$THR_BYTES"
kp_run short sh "$EV_DATA/term-trap.sh" /tmp/short.log $HOLD
vm_wait_for 30 below
t_below=$(up_now)
once=$(evictd --once --dry-run --pods-file=$PODS --node-name=evictd-vm $SOFT_ARGS 2>&1)
case $once in
    *"MemoryPressure=True"*"decision: none"*) vm_pass soft-short-condition ;;
    *) vm_fail soft-short-condition "evictd --once below the soft threshold: $(echo "$once" | tr '\n' '|')" ;;
esac
# hold until SHORT s after the crossing, then the pod ends (as if it finished)
while fle "$(up_now)" "$(fcalc "$t_below + $SHORT")"; do sleep 0.05; done
cg_kill "$(kp_path short)"
t_freed=$(up_now)
sleep $((GRACE + 1))
mr_end
lines=$(ev_since $MR_MARK)
held=$( [ "$MR_FIRST_BELOW" != none ] && fcalc "$t_freed - $MR_FIRST_BELOW" || echo "?")
vm_info "short: below $THRESHOLD for ${held} s (sampled), min $(mib "$MR_MIN") MiB; log: $(echo "$lines" | sed 's/^[^ ]* //' | tr '\n' '|')"
if [ "$MR_FIRST_BELOW" != none ] && fle "$held" "$(fcalc "$GRACE - 0.5")" && fle 1 "$held" \
    && ! echo "$lines" | grep -qE 'decision: (soft|hard)|kill:|evicted' && ! grep -q TERM /tmp/short.log; then
    vm_pass soft-short-nothing
else
    vm_fail soft-short-nothing "held ${held} s; TERM: $(grep TERM /tmp/short.log); log: $(echo "$lines" | grep -E 'decision|kill|evicted' | tr '\n' '|')"
fi
kp_delete short
kp_podlist $PODS

# ---- long: held until evicted
long() { # long NAME POD_GRACE: expect SIGTERM GRACE s after the crossing, cgroup.kill min(POD_GRACE, MAX) s later
    l_n=$1
    l_g=$2
    [ "$l_g" -lt $MAX_POD_GRACE ] || l_g=$MAX_POD_GRACE
    settle "$THR_BYTES" 100
    kp_pod $l_n BestEffort --grace "$2"
    kp_podlist $PODS
    rm -f /tmp/$l_n.log*
    mr_begin "$THR_BYTES"
    kp_run $l_n sh "$EV_DATA/term-trap.sh" /tmp/$l_n.log $HOLD
    mr_wait_gone "$(kp_path $l_n)" $((GRACE + l_g + 20))
    mr_end
    l_lines=$(ev_since $MR_MARK)
    # evictd's clock: SIGTERM sent -> cgroup.kill written
    l_term_line=$(echo "$l_lines" | grep -m1 'kill: sent SIGTERM')
    l_kill_line=$(echo "$l_lines" | grep -m1 'still populated at the end of its')
    l_t_term=$(echo "$l_term_line" | awk -v off="$MR_OFF" '{ split(substr($1, 12, 12), t, ":"); printf "%.3f", t[1] * 3600 + t[2] * 60 + t[3] - off }')
    l_t_kill=$(echo "$l_kill_line" | awk -v off="$MR_OFF" '{ split(substr($1, 12, 12), t, ":"); printf "%.3f", t[1] * 3600 + t[2] * 60 + t[3] - off }')
    # the pod's clock: SIGTERM trapped -> gone
    l_pod_term=$(awk '$1 == "TERM" { print $2; exit }' /tmp/$l_n.log 2>/dev/null)
    l_cross_term=n/a l_term_kill=n/a l_pod_term_gone=n/a
    [ "$MR_FIRST_BELOW" != none ] && [ -n "$l_pod_term" ] && l_cross_term=$(fcalc "$l_pod_term - $MR_FIRST_BELOW")
    [ -n "$l_term_line" ] && [ -n "$l_kill_line" ] && l_term_kill=$(fcalc "$l_t_kill - $l_t_term")
    [ -n "$l_pod_term" ] && l_pod_term_gone=$(fcalc "$MR_T_GONE - $l_pod_term")
    vm_info "$l_n: crossing->SIGTERM $l_cross_term s (want $GRACE), SIGTERM->cgroup.kill $l_term_kill s in evictd's log" \
        "(want $l_g), pod-trapped SIGTERM->empty $l_pod_term_gone s; crossing at $MR_FIRST_BELOW, evictd decision at ${MR_DEC:-n/a}," \
        "SIGTERM trapped at ${l_pod_term:-never}, SIGTERM sent at ${l_t_term:-never}, empty seen at $MR_T_GONE"
    echo "$l_lines" | grep -E 'decision:|kill:|evicted' | sed 's/^[^ ]* //' | while IFS= read -r l_l; do vm_info "$l_n log: $l_l"; done
    if [ "$l_cross_term" != n/a ] && fle "$(fcalc "$GRACE - 0.05")" "$l_cross_term" && fle "$l_cross_term" "$(fcalc "$GRACE + 1.5")"; then
        vm_pass soft-$l_n-sigterm-after-grace
    else
        vm_fail soft-$l_n-sigterm-after-grace "crossing->SIGTERM $l_cross_term s, want $GRACE s (-0.05/+1.5)"
    fi
    if [ "$l_term_kill" != n/a ] && fle "$(fcalc "$l_g - 0.05")" "$l_term_kill" && fle "$l_term_kill" "$(fcalc "$l_g + 0.8")" \
        && [ "$l_pod_term_gone" != n/a ] && fle "$(fcalc "$l_g - 0.1")" "$l_pod_term_gone" && fle "$l_pod_term_gone" "$(fcalc "$l_g + 1.0")"; then
        vm_pass soft-$l_n-kill-after-pod-grace
    else
        vm_fail soft-$l_n-kill-after-pod-grace "SIGTERM->cgroup.kill $l_term_kill s (log), SIGTERM->empty $l_pod_term_gone s (pod), want $l_g s"
    fi
    l_ev=$(echo "$l_lines" | grep ' evicted ')
    case $l_ev in
        *" evicted vmtest/$l_n "*" for memory.available<"*"; SIGTERM then cgroup.kill, "*)
            if [ "$MR_GONE" = 1 ] && echo "$l_lines" | grep -q "decision: soft memory.available=.*victim=vmtest/$l_n "; then
                vm_pass soft-$l_n-evicted
            else
                vm_fail soft-$l_n-evicted "gone=$MR_GONE; decision: $(echo "$l_lines" | grep -m1 decision:)"
            fi ;;
        *) vm_fail soft-$l_n-evicted "evicted: '$l_ev'"; ev_dump 15 ;;
    esac
    kp_delete $l_n
    kp_podlist $PODS
}
long long-3 30
long long-2 2

if oom=$(no_oom_kill); then vm_pass no-oom-kill; else vm_fail no-oom-kill "$oom"; fi
if kill -0 $DB_PID && kill -0 $WEB_PID; then vm_pass others-untouched; else vm_fail others-untouched "db or web died"; fi
if ev_alive; then vm_pass evictd-alive; else vm_fail evictd-alive "evictd exited"; ev_dump 20; fi
ev_stop
vm_done
