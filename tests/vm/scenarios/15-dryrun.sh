#!/bin/sh
# 15-dryrun: scenario 10 with --dry-run.  The BestEffort hog crosses memory.available<250Mi
# and stops by itself (memhog --max, 32 MiB below the threshold, well above the OOM point);
# evictd logs the decision (once) and what it would have killed, and kills nothing.  2 runs.
# vm-mem: 1024M
# vm-smp: 2
# vm-timeout: 240
# vm-bins: evictd
# vm-add: tests/vm/lib/kubepods.sh:/usr/lib/evictd-vm/kubepods.sh
# vm-add: tests/vm/data:/usr/lib/evictd-vm/data
# vm-expect: evictd-started pods-running
# vm-expect: dry-run-1 dry-run-2 no-oom-kill nothing-killed evictd-alive
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/kubepods.sh
. /usr/lib/evictd-vm/data/evictd-vm.sh
oom_trace_on

RUNS=2
THRESHOLD=250Mi         # see 10-memory.sh
BELOW=32                # MiB the hog takes memory.available below the threshold
HOLD=3                  # seconds it holds there while evictd re-evaluates
HOUSEKEEPING=""      # empty: evictd's default (10s); BPF wake-ups must do the work
PODS=/run/pods.json
THR_BYTES=$(kp_qty_bytes $THRESHOLD)

kp_init systemd || vm_fail pods-running "kp_init systemd failed"
kp_pod db Guaranteed --request 160Mi --priority 1000
kp_pod web Burstable --request 96Mi --limit 384Mi --priority 500
kp_podlist $PODS
kp_run db memhog --max 100 --quiet 2>/tmp/db.log
DB_PID=$KP_PID
kp_run web memhog --max 48 --quiet 2>/tmp/web.log
WEB_PID=$KP_PID
vm_wait_for 20 grep -q reached /tmp/db.log
vm_wait_for 20 grep -q reached /tmp/web.log
if kp_populated db && kp_populated web; then
    vm_pass pods-running
else
    vm_fail pods-running "db: $(cat /tmp/db.log) web: $(cat /tmp/web.log)"
fi

ev_start --dry-run --pods-file=$PODS --node-name=evictd-vm --eviction-hard="memory.available<$THRESHOLD" \
    ${HOUSEKEEPING:+--housekeeping-interval=$HOUSEKEEPING} && vm_pass evictd-started || vm_fail evictd-started "see the log above"

for run in $(seq 1 $RUNS); do
    name=hog-$run
    settle $THR_BYTES
    avail=$(mem_available)
    max=$(( (avail - THR_BYTES) / MiB + BELOW ))
    kp_pod $name BestEffort
    kp_podlist $PODS
    mr_begin "$THR_BYTES"
    kp_run $name memhog --max $max --chunk 4 --quiet 2>/tmp/$name.log
    HOG_PID=$KP_PID
    path=$(kp_path $name)
    vm_wait_for 60 grep -q reached /tmp/$name.log
    sleep $HOLD
    alive=0
    kill -0 $HOG_PID 2>/dev/null && kp_populated $name && alive=1
    mr_end
    mr_info "dry-run-$run (hog --max $max MiB from $(mib "$avail") MiB available)"
    lines=$(ev_since "$MR_MARK")
    n_dec=$(echo "$lines" | grep -c "decision: \[dry-run\] hard memory.available=.* victim=vmtest/$name ")
    n_would=$(echo "$lines" | grep -c "kill: dry-run: would write 1 to $path/cgroup.kill")
    why=""
    [ $alive = 1 ] || why="$why; the hog was killed (memhog: $(tail -n 1 /tmp/$name.log))"
    grep -q reached /tmp/$name.log || why="$why; memhog never reached --max $max"
    [ "$MR_FIRST_BELOW" != none ] || why="$why; memory.available never went below $THRESHOLD (sampled min $(mib "$MR_MIN") MiB)"
    [ "$n_dec" = 1 ] || why="$why; $n_dec dry-run decisions for memory.available naming vmtest/$name (want exactly 1)"
    [ "$n_would" -ge 1 ] || why="$why; no 'kill: dry-run: would write 1 to $path/cgroup.kill'"
    echo "$lines" | grep -q ' evicted ' && why="$why; an 'evicted' line in dry-run"
    oom=$(no_oom_kill) || why="$why; kernel OOM kill: $oom"
    if [ -z "$why" ]; then
        vm_pass dry-run-$run
        vm_info "dry-run-$run: $(echo "$lines" | grep -m1 'decision: \[dry-run\]' | sed 's/^[^ ]* //')"
        vm_info "dry-run-$run: $(echo "$lines" | grep -m1 'kill: dry-run' | sed 's/^[^ ]* //')"
        vm_info "dry-run-$run: other decisions while held: $(echo "$lines" | grep 'decision:' | grep -v "hard memory.available=" | sed 's/^[^ ]* info: //; s/ candidates=.*victim=/ victim=/' | tr '\n' '|')"
    else
        vm_fail dry-run-$run "${why#; }"
        ev_dump 20
    fi
    kp_delete $name
    kp_podlist $PODS
done

if oom=$(no_oom_kill); then vm_pass no-oom-kill; else vm_fail no-oom-kill "$oom"; fi
if kill -0 $DB_PID 2>/dev/null && kill -0 $WEB_PID 2>/dev/null && ! grep -q ' evicted ' "$EV_LOG" \
    && ! grep -q 'cgroup.kill, empty' "$EV_LOG"; then
    vm_pass nothing-killed
else
    vm_fail nothing-killed "db/web alive: $(kill -0 $DB_PID && echo y)/$(kill -0 $WEB_PID && echo y); $(grep -c ' evicted ' "$EV_LOG") evicted lines"
fi
if ev_alive; then vm_pass evictd-alive; else vm_fail evictd-alive "evictd exited"; ev_dump 20; fi
ev_stop
vm_done
