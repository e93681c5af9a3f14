#!/bin/sh
# 10-memory: a BestEffort pod allocating memory as fast as it can crosses the hard threshold
# memory.available<250Mi; evictd kills that pod through cgroup.kill before the kernel's OOM
# killer acts (no oom_kill anywhere, no OOM in dmesg), and the Guaranteed and Burstable pods
# are untouched.  10 runs in one boot (a new hog pod each time), 10/10 required.  Per run it
# prints the detection-to-kill time and the overshoot below the threshold as INFO lines, and a
# summary of the 10 at the end.  evictd: --pods-file --node-name --eviction-hard, defaults
# otherwise (housekeeping 10s, BPF on, OOM guard 10%).
# vm-mem: 1024M
# vm-smp: 2
# vm-timeout: 480
# vm-bins: evictd
# vm-add: tests/vm/lib/kubepods.sh:/usr/lib/evictd-vm/kubepods.sh
# vm-add: tests/vm/data:/usr/lib/evictd-vm/data
# vm-expect: evictd-started pods-running
# vm-expect: mem-run-1 mem-run-2 mem-run-3 mem-run-4 mem-run-5
# vm-expect: mem-run-6 mem-run-7 mem-run-8 mem-run-9 mem-run-10
# vm-expect: mem-10-of-10 no-oom-kill guaranteed-untouched burstable-untouched evictd-alive
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/kubepods.sh
. /usr/lib/evictd-vm/data/evictd-vm.sh
oom_trace_on

RUNS=10
# 26% of the guest's 958 MiB MemTotal.  Not 200Mi: the default OOM guard (MemAvailable < 10%,
# 95.8 MiB here) crosses at about the same moment as memory.available<200Mi in this guest
# (MemAvailable reads ~105 MiB below memory.available), and this scenario tests the threshold.
THRESHOLD=250Mi
# evictd's default housekeeping (10s): the BPF wake-ups must do the work.  (With --no-bpf and
# the default, the kernel OOM killer won 3 of 3 runs: the PSI trigger woke evictd too late.)
HOUSEKEEPING=""
PODS=/run/pods.json
THR_BYTES=$(kp_qty_bytes $THRESHOLD)

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
if kp_populated db && kp_populated web && grep -q reached /tmp/db.log && grep -q reached /tmp/web.log; then
    vm_pass pods-running
else
    vm_fail pods-running "db: $(cat /tmp/db.log) web: $(cat /tmp/web.log)"
fi

ev_start --pods-file=$PODS --node-name=evictd-vm --eviction-hard="memory.available<$THRESHOLD" \
    ${HOUSEKEEPING:+--housekeeping-interval=$HOUSEKEEPING} && vm_pass evictd-started || vm_fail evictd-started "see the log above"
vm_info "memory.available at rest: $(mib "$(mem_available)") MiB; threshold $THRESHOLD; housekeeping ${HOUSEKEEPING:-default (10s)}"

ok=0
summary_d2k="" summary_d2e="" summary_ov="" summary_ovd="" summary_c2d=""
for run in $(seq 1 $RUNS); do
    name=hog-$run
    # settle: memory back well above the threshold, evictd idle again
    settle $THR_BYTES
    kp_pod $name BestEffort
    kp_podlist $PODS
    mr_begin "$THR_BYTES"
    kp_run $name memhog --chunk 4 --quiet 2>/tmp/$name.log
    HOG_PID=$KP_PID
    path=$(kp_path $name)
    mr_wait_gone "$path" 60
    wait $HOG_PID
    hog_rc=$?
    mr_end
    mr_info "mem-run-$run"
    summary_d2k="$summary_d2k $MR_DEC_TO_KILL_MS"
    summary_d2e="$summary_d2e $MR_DEC_TO_EMPTY_MS"
    summary_c2d="$summary_c2d $MR_CROSS_TO_DEC_MS"
    summary_ov="$summary_ov $MR_OVERSHOOT"
    summary_ovd="$summary_ovd $MR_OVERSHOOT_DEC"
    why=""
    [ "$MR_GONE" = 1 ] || why="$why; the hog pod still runs after 60 s"
    [ "$hog_rc" = 137 ] || why="$why; memhog exit $hog_rc (want 137, SIGKILL)"
    case $MR_EVICTED_VICTIM in
        vmtest/$name) ;;
        *) why="$why; evicted '${MR_EVICTED_VICTIM:-nothing}' (want vmtest/$name)" ;;
    esac
    # the configured threshold must be what fired (the OOM guard comes ~50 MiB later)
    [ "$MR_EVICTED_SIG" = memory.available ] || why="$why; evicted for '${MR_EVICTED_SIG:-?}', not memory.available"
    oom=$(no_oom_kill) || why="$why; kernel OOM kill: $oom"
    kill -0 $DB_PID 2>/dev/null || why="$why; the Guaranteed pod's process died"
    kill -0 $WEB_PID 2>/dev/null || why="$why; the Burstable pod's process died"
    if [ -z "$why" ]; then
        vm_pass mem-run-$run
        ok=$((ok + 1))
    else
        vm_fail mem-run-$run "${why#; } (memhog: $(tail -n 1 /tmp/$name.log))"
        ev_dump 15
    fi
    kp_delete $name
    kp_podlist $PODS
done

vm_info "mem summary: decision->cgroup.kill ms:$summary_d2k"
vm_info "mem summary: decision->empty ms:$summary_d2e"
vm_info "mem summary: crossing->decision ms (sampler, 10 ms clock; unseen = decided before the sampler saw it):$summary_c2d"
vm_info "mem summary: overshoot below $THRESHOLD, sampled MiB (unseen = never sampled below):$summary_ov"
vm_info "mem summary: overshoot below $THRESHOLD, observed by evictd at decision MiB:$summary_ovd"
vm_info "mem summary: evictions by signal: $(grep -o ' evicted .* for [a-z.]*' "$EV_LOG" | awk '{ print $NF }' | sort | uniq -c | tr -s ' ' | tr '\n' ',')"
if [ $ok = $RUNS ]; then vm_pass mem-10-of-10; else vm_fail mem-10-of-10 "$ok of $RUNS runs passed"; fi
if oom=$(no_oom_kill); then vm_pass no-oom-kill; else vm_fail no-oom-kill "$oom"; fi
if kill -0 $DB_PID 2>/dev/null && kp_populated db && [ "$(vm_kv "$(kp_path db)/memory.events" oom_kill)" = 0 ]; then
    vm_pass guaranteed-untouched
else
    vm_fail guaranteed-untouched "db pid $DB_PID gone or its cgroup emptied: $(cat "$(kp_path db)/cgroup.events" | tr '\n' ' ')"
fi
if kill -0 $WEB_PID 2>/dev/null && kp_populated web; then
    vm_pass burstable-untouched
else
    vm_fail burstable-untouched "web pid $WEB_PID gone or its cgroup emptied"
fi
n_ev=$(grep -c ' evicted ' "$EV_LOG")
if ev_alive && [ "$n_ev" = $RUNS ]; then
    vm_pass evictd-alive
else
    vm_fail evictd-alive "evictd alive: $(ev_alive && echo yes || echo no), $n_ev evictions logged (want $RUNS)"
    ev_dump 30
fi
ev_stop
vm_done
