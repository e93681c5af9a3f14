#!/bin/sh
# 14-preempt: a hard eviction is not held up by a soft eviction in its grace period.
# Pod A (Burstable, request 512Mi, terminationGracePeriodSeconds 60) runs
# tests/vm/data/term-trap.sh holding 480 MiB: its processes ignore SIGTERM, so only
# cgroup.kill ends it.  The soft threshold, set 200 MiB above memory.available with A running
# (met at once, grace period 1 s), with --eviction-max-pod-grace-period=60 soft-evicts A:
# SIGTERM, then cgroup.kill 60 s later.  What A will free covers the soft threshold, so no
# second soft victim is due (doc/DESIGN.md, "Acting").  A few seconds into A's grace, a
# memory hog in BestEffort pod B crosses the hard threshold memory.available<250Mi of
# scenario 10 long before the soft threshold would need another victim: the hard threshold
# does not count on A (in its grace), and B ranks before A (A is within its request), so B
# is killed by cgroup.kill.  Expected:
#   b-evicted        B is killed by evictd (cgroup empty, memhog exit 137, the evicted line
#                    names vmtest/b for memory.available), decided long before A's grace
#                    ends, with decision->empty in the range of scenario 10 (<= 500 ms; the
#                    numbers are printed as INFO "preempt-b:" and "preempt-latency:" lines);
#   no-oom-kill      no kernel OOM kill (vmstat, memory.events, dmesg, oom:mark_victim);
#   a-alive-after-b  A is still running right after B is gone;
#   a-killed-at-grace A is gone 60 s (+-10 s) after its SIGTERM (the pod's own clock).
# At the end the metric evictd_loop_iteration_max_seconds (wget /metrics) is printed as an
# INFO "preempt-metric:" line.  With a synchronous act path the soft kill blocks the loop for
# the whole 60 s: B is then left to the kernel OOM killer.
# vm-mem: 1024M
# vm-smp: 2
# vm-timeout: 360
# vm-bins: evictd evictctl
# vm-add: tests/vm/lib/kubepods.sh:/usr/lib/evictd-vm/kubepods.sh
# vm-add: tests/vm/data:/usr/lib/evictd-vm/data
# vm-expect: pods-running evictd-started a-soft-sigterm
# vm-expect: b-evicted no-oom-kill a-alive-after-b a-killed-at-grace evictd-alive
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/kubepods.sh
. /usr/lib/evictd-vm/data/evictd-vm.sh
oom_trace_on

HARD=250Mi              # scenario 10's threshold
A_MIB=480               # what A holds; its request (512Mi) keeps it behind B in the ranking
POD_GRACE=60            # terminationGracePeriodSeconds of A and --eviction-max-pod-grace-period
SLACK=10                # +- seconds around A's end of grace
# Scenario 10 on the same TCG guest: decision->cgroup.kill 0-12 ms, decision->empty 74-136 ms,
# crossing->decision <= 45 ms (10 runs).  The bound leaves room for TCG noise, not for a wait.
MAX_D2E_MS=500
PODS=/run/pods.json
THR_BYTES=$(kp_qty_bytes $HARD)
METRICS=http://127.0.0.1:9808/metrics     # evictd's default --metrics-address

kp_init systemd || vm_fail pods-running "kp_init systemd failed"
kp_pod a Burstable --request 512Mi --limit 640Mi --priority 0 --grace $POD_GRACE
kp_podlist $PODS
rm -f /tmp/a.log*
kp_run a sh "$EV_DATA/term-trap.sh" /tmp/a.log $A_MIB
A_PID=$KP_PID
A_PATH=$(kp_path a)
vm_wait_for 20 grep -q READY /tmp/a.log
if kp_populated a && grep -q READY /tmp/a.log; then
    vm_pass pods-running
else
    vm_fail pods-running "a: $(cat /tmp/a.log /tmp/a.log.memhog 2>/dev/null | tr '\n' '|')"
fi

# Log stamps (realtime) -> uptime, as mr_end does.
OFF=$(ev_clock_offset)
log_up() { awk -v off="$OFF" 'NF { split(substr($1, 12, 12), t, ":"); v = t[1] * 3600 + t[2] * 60 + t[3] - off;
    if (v < -40000) v += 86400; printf "%.3f\n", v; exit }'; }

# Met at once; available + what A frees stays above it until B has taken ~280 MiB, while the
# hard threshold is crossed after ~(available - 250) MiB.
SOFT=$(( $(mem_available) / 1048576 + 200 ))Mi
ev_start --pods-file=$PODS --node-name=evictd-vm --eviction-hard="memory.available<$HARD" \
    --eviction-soft="memory.available<$SOFT" --eviction-soft-grace-period=memory.available=1s \
    --eviction-max-pod-grace-period=$POD_GRACE \
    && vm_pass evictd-started || vm_fail evictd-started "see the log above"
vm_info "memory.available at rest: $(mib "$(mem_available)") MiB; hard $HARD, soft $SOFT (grace 1s), pod grace ${POD_GRACE}s"

# ---- A: soft eviction, SIGTERM ignored
if vm_wait_for 20 grep -q "kill: sent SIGTERM to [0-9]* processes in $A_PATH" "$EV_LOG" \
    && vm_wait_for 5 grep -q '^TERM ' /tmp/a.log; then
    A_TERM=$(awk '$1 == "TERM" { print $2; exit }' /tmp/a.log)
    vm_pass a-soft-sigterm
    vm_info "a: SIGTERM trapped at uptime $A_TERM; log: $(grep -E 'decision:|kill:' "$EV_LOG" | head -n 3 | sed 's/^[^ ]* //' | tr '\n' '|')"
else
    A_TERM=""
    vm_fail a-soft-sigterm "no SIGTERM to A within 20 s: $(grep -E 'decision|kill' "$EV_LOG" | tail -n 3 | tr '\n' '|')"
fi

# ---- B: a memory hog crossing the hard threshold during A's grace
sleep 3
kp_pod b BestEffort
kp_podlist $PODS
B_PATH=$(kp_path b)
mr_begin "$THR_BYTES"
kp_run b memhog --chunk 4 --quiet 2>/tmp/b.log
B_PID=$KP_PID
mr_wait_gone "$B_PATH" 60
B_GONE=$MR_GONE
wait $B_PID
b_rc=$?
# A right after B's kill
a_alive_after_b=no
kill -0 $A_PID 2>/dev/null && kp_populated a && a_alive_after_b=yes
mr_end
mr_info "preempt-b"
lines=$(ev_since $MR_MARK)
# B's own numbers: its hard decision -> "kill: killing pod vmtest/b" -> evicted (cgroup empty)
dec_line=$(echo "$lines" | grep -m1 -E "decision: hard memory.available=.* victim=vmtest/b ")
b_kind=$(echo "$dec_line" | grep -oE 'decision: (hard|soft)' | sed 's/decision: //')
t_dec=$(echo "$dec_line" | log_up)
t_kill=$(echo "$lines" | grep -m1 -E "kill: (soft-)?killing pod vmtest/b " | log_up)
t_ev=$(echo "$lines" | grep -m1 " evicted vmtest/b " | log_up)
d2k=n/a d2e=n/a
[ -n "$t_dec" ] && [ -n "$t_kill" ] && d2k=$(fcalc "($t_kill - $t_dec) * 1000" | sed 's/\..*//')
[ -n "$t_dec" ] && [ -n "$t_ev" ] && d2e=$(fcalc "($t_ev - $t_dec) * 1000" | sed 's/\..*//')
a_into=n/a
[ -n "$A_TERM" ] && [ -n "$t_dec" ] && a_into=$(fcalc "$t_dec - $A_TERM")
vm_info "preempt-latency: B decision (kind=${b_kind:-none})->cgroup.kill ${d2k} ms, decision->empty ${d2e} ms, crossing->decision ${MR_CROSS_TO_DEC_MS} ms; B decided ${a_into} s into A's grace (scenario 10 reports the same decision->cgroup.kill / decision->empty)"
echo "$lines" | grep -E 'decision:|kill:|evicted' | sed 's/^[^ ]* //' | head -n 12 | while IFS= read -r l; do vm_info "preempt log: $l"; done

why=""
[ "$B_GONE" = 1 ] || why="$why; B still runs after 60 s"
[ "$b_rc" = 137 ] || why="$why; memhog exit $b_rc (want 137: cgroup.kill, not a SIGTERM)"
case $MR_EVICTED_VICTIM in
    vmtest/b) ;;
    *) why="$why; first eviction after B started: '${MR_EVICTED_VICTIM:-none}' (want vmtest/b)" ;;
esac
[ "$MR_EVICTED_SIG" = memory.available ] || why="$why; evicted for '${MR_EVICTED_SIG:-?}', not memory.available"
[ -n "$t_dec" ] || why="$why; no 'decision: hard memory.available=... victim=vmtest/b' line"
[ -z "$A_TERM" ] || [ -z "$t_dec" ] || fle "$t_dec" "$(fcalc "$A_TERM + $POD_GRACE - $SLACK")" \
    || why="$why; B decided only ${a_into} s into A's ${POD_GRACE} s grace"
if [ "$d2e" = n/a ] || [ "$d2e" -gt $MAX_D2E_MS ] 2>/dev/null; then why="$why; decision->empty ${d2e} ms (want <= $MAX_D2E_MS)"; fi
case $MR_CROSS_TO_DEC_MS in
    *[!0-9]*|"") ;;     # n/a, unseen (decided before the sampler saw the crossing)
    *) [ "$MR_CROSS_TO_DEC_MS" -le $MAX_D2E_MS ] || why="$why; crossing->decision $MR_CROSS_TO_DEC_MS ms (want <= $MAX_D2E_MS)" ;;
esac
if [ -z "$why" ]; then vm_pass b-evicted; else vm_fail b-evicted "${why#; } (memhog: $(tail -n 1 /tmp/b.log))"; ev_dump 15; fi
if oom=$(no_oom_kill); then vm_pass no-oom-kill; else vm_fail no-oom-kill "$oom"; fi
if [ $a_alive_after_b = yes ]; then
    vm_pass a-alive-after-b
else
    vm_fail a-alive-after-b "A (pid $A_PID) gone by the time B was: $(grep -E "kill:.*$A_PATH|evicted vmtest/a" "$EV_LOG" | tail -n 2 | tr '\n' '|')"
fi
kp_delete b
kp_podlist $PODS

# ---- A: killed at the end of its grace
quiet_wait_empty "$A_PATH" $((POD_GRACE + SLACK + 15))
A_GONE=$QW_AT
a_took=n/a
[ -n "$A_TERM" ] && a_took=$(fcalc "$A_GONE - $A_TERM")
vm_info "a: SIGTERM at $A_TERM, gone at $A_GONE (uptime): ${a_took} s (want $POD_GRACE +- $SLACK); log: $(grep -E "kill: .*$A_PATH|evicted vmtest/a" "$EV_LOG" | sed 's/^[^ ]* //' | tr '\n' '|')"
if ! kp_populated a && [ "$a_took" != n/a ] && fle "$((POD_GRACE - SLACK))" "$a_took" && fle "$a_took" "$((POD_GRACE + SLACK))"; then
    vm_pass a-killed-at-grace
else
    vm_fail a-killed-at-grace "A gone ${a_took} s after its SIGTERM (populated now: $(kp_populated a && echo yes || echo no))"
fi
if ev_alive; then vm_pass evictd-alive; else vm_fail evictd-alive "evictd exited"; ev_dump 20; fi

# ---- the loop's longest iteration
lmax=$(wget -q -O - "$METRICS" 2>/dev/null | awk '$1 == "evictd_loop_iteration_max_seconds" { print $2 }')
if [ -z "$lmax" ]; then
    lmax="absent ($(evictctl --json status 2>/dev/null | tr -d ' \n' | grep -o '"loop[^,}]*' | head -n 3 | tr '\n' ' '))"
fi
vm_info "preempt-metric: evictd_loop_iteration_max_seconds=$lmax"
kp_delete a
ev_stop
vm_done
