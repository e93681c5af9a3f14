#!/bin/sh
# 25-benign-ahead: no false kills from seeing ahead (doc/DESIGN.md "Seeing ahead"). evictd runs
# with --act-ahead=500ms and a hard memory.available threshold 350 MiB below the memory free at
# rest; three benign loads come near it without crossing, in a BestEffort pod beside a victim
# that would go first:
#  stream:   one read of a 900 MiB file (more than the guest's free memory): page cache that the
#            kernel reclaims as it goes (inactive_file, not counted by the kubelet's formula);
#  sawtooth: three times, 250 MiB allocated at 100 MiB/s then freed at once (a JVM-style heap):
#            the peak is 100 MiB above the threshold, about 1 s away at the rate, outside 500 ms;
#  build:    4 x 60 short-lived processes, each allocating 16 MiB and exiting (a compiler's).
# Each must end with zero kills and no OOM; the closest estimate each reached and the phase's
# kills are printed (an INFO "closest:" line, from evictd_time_to_threshold_seconds polled every
# 200 ms; tools/bench/benign-ahead.sh boots it BENIGN_RUNS times and collects them).
# evictd_vm.act_ahead=DURATION on the kernel command line (EVICTD_VM_APPEND of tests/vm/run.sh)
# replaces the 500ms: with 3s the sawtooth, 1 s from the threshold at its rate, must be killed
# (the bench's proof that the scenario can fail).
# vm-mem: 1024M
# vm-smp: 2
# vm-timeout: 420
# vm-disk: 1024M ext4 -m 0
# vm-bins: evictd
# vm-add: tests/vm/lib/kubepods.sh:/usr/lib/evictd-vm/kubepods.sh
# vm-add: tests/vm/data:/usr/lib/evictd-vm/data
# vm-expect: disk-mounted pods-running evictd-started
# vm-expect: stream-no-kill sawtooth-no-kill build-no-kill
# vm-expect: sawtooth-estimated no-oom-kill victim-alive evictd-alive
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/kubepods.sh
. /usr/lib/evictd-vm/data/evictd-vm.sh
oom_trace_on

DATA=/mnt/data
PODS=/run/pods.json
SAMPLES=/tmp/ahead.samples
mkdir -p $DATA
if vm_wait_for 10 test -b /dev/vda && mount -t ext4 /dev/vda $DATA; then
    vm_pass disk-mounted
else
    vm_fail disk-mounted "cannot mount /dev/vda on $DATA"
fi
dd if=/dev/zero of=$DATA/big bs=1M count=900 2>/dev/null
sync
echo 1 >/proc/sys/vm/drop_caches

kp_init systemd || vm_fail pods-running "kp_init systemd failed"
kp_pod victim BestEffort --priority 0 --grace 0
kp_pod load Burstable --request 64Mi --priority 1000 --grace 0
kp_podlist $PODS
kp_run victim memhog --max 64 --quiet 2>/tmp/victim.log
vm_wait_for 20 grep -q reached /tmp/victim.log
if kp_populated victim; then vm_pass pods-running; else vm_fail pods-running "victim not running"; fi

ACT=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^evictd_vm\.act_ahead=//p' | tail -n1)
ACT=${ACT:-500ms}
REST=$(mem_available)
THR_MIB=$(( REST / MiB - 350 ))
ev_start --pods-file=$PODS --node-name=evictd-vm --eviction-hard="memory.available<${THR_MIB}Mi" \
    --oom-guard=off --act-ahead=$ACT --housekeeping-interval=100ms &&
    vm_pass evictd-started || vm_fail evictd-started "see the log above"
vm_info "memory.available at rest: $(mib "$REST") MiB; threshold ${THR_MIB}Mi; --act-ahead=$ACT"

# The estimate every 200 ms, tagged with the phase running (/tmp/phase).
echo idle >/tmp/phase
: >$SAMPLES
(
    while :; do
        v=$(wget -q -O - http://127.0.0.1:9808/metrics 2>/dev/null |
            awk '$1 == "evictd_time_to_threshold_seconds{signal=\"memory.available\",kind=\"hard\"}" { print $2 }')
        echo "$(cat /tmp/phase) ${v:--} $(mem_available)" >>$SAMPLES
        sleep 0.2
    done
) &
POLLER=$!

# phase NAME: check and report after a load: no eviction, no acting ahead, the closest
# estimate and the least memory.available it reached.
phase_done() {
    p_n=$1 p_mark=$2
    p_lines=$(ev_since "$p_mark")
    p_closest=$(awk -v p="$p_n" -v thr="$THR_MIB" '$1 != p { next }
        { s++; if (low == "" || $3 < low) low = $3 }
        $2 != "-" { if (min == "" || $2 < min) min = $2; n++ }
        END { if (n) printf "%.2fs (%d of %d samples sure)", min, n, s; else printf "none (%d samples, none sure)", s
              if (s) printf "; least memory.available %.0f MiB, %.0f MiB above the threshold", low / 1048576, low / 1048576 - thr }' $SAMPLES)
    p_kills=$(echo "$p_lines" | grep -c ' evicted ')
    p_ahead=$(echo "$p_lines" | grep -c 'decision: \[ahead\]')
    vm_info "closest: $p_n $p_closest; kills $p_kills, decisions ahead $p_ahead"
    if echo "$p_lines" | grep -qE ' evicted |\[ahead\]'; then
        vm_fail $p_n-no-kill "$(echo "$p_lines" | grep -m1 -E ' evicted |\[ahead\]')"
        ev_dump 20
    else
        vm_pass $p_n-no-kill
    fi
}

mark=$(ev_mark)
echo stream >/tmp/phase
kp_run load sh -c "cat $DATA/big >/dev/null"
wait $KP_PID
vm_info "stream: read 900 MiB; memory.available now $(mib "$(mem_available)") MiB"
phase_done stream "$mark"

mark=$(ev_mark)
echo sawtooth >/tmp/phase
for i in 1 2 3; do
    kp_run load memhog --rate 100 --max 250 --exit --quiet
    wait $KP_PID
    sleep 1
done
phase_done sawtooth "$mark"
# The sawtooth's ramps are steady: seeing ahead must have seen them (else the no-kill says
# nothing about --act-ahead).
if awk '$1 == "sawtooth" && $2 != "-" { n++ } END { exit !(n > 0) }' $SAMPLES; then
    vm_pass sawtooth-estimated
else
    vm_fail sawtooth-estimated "no sure estimate during the sawtooth"
fi

mark=$(ev_mark)
echo build >/tmp/phase
kp_run load sh -c 'for j in 1 2 3 4; do
    ( k=0; while [ $k -lt 60 ]; do memhog --max 16 --exit --quiet; k=$((k + 1)); done ) &
done; wait' 2>/dev/null
wait $KP_PID
phase_done build "$mark"

kill $POLLER 2>/dev/null
if oom=$(no_oom_kill); then vm_pass no-oom-kill; else vm_fail no-oom-kill "$oom"; fi
if kp_populated victim; then vm_pass victim-alive; else vm_fail victim-alive "the victim was killed"; fi
if ev_alive; then vm_pass evictd-alive; else vm_fail evictd-alive "evictd exited"; ev_dump 20; fi
ev_stop
vm_info "samples: $(wc -l <$SAMPLES)"
