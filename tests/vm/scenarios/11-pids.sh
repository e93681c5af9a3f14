#!/bin/sh
# 11-pids: a fork bomb in a BestEffort pod crosses the hard threshold pid.available<500; evictd
# kills that pod through cgroup.kill and the others live.  pid.available is
# min(kernel.pid_max, kernel.threads-max) - tasks: phase 1 limits the node with pid_max=2000
# (threads-max stays ~7600), phase 2 with threads-max=2000 (pid_max back at 32768); each phase
# first checks evictd's capacity with --once, then starts evictd and runs a bomb.  The bomb pod
# has pids.max=1700 (a podPidsLimit): enough to cross the threshold, and if evictd failed the
# guest would keep free pids (an exhausted guest cannot fork its checks; init dies, panic).
# Pods (cgroupfs driver):
# db (Guaranteed, priority 1000), web (Burstable, priority 0, 3 processes), idle (BestEffort,
# priority 0, 1 process) and bomb-N (BestEffort, priority 0): for pid.available the ranking is
# priority, then consumption, so the bomb must win over idle and web on its process count.
# vm-mem: 1024M
# vm-smp: 2
# vm-timeout: 300
# vm-bins: evictd
# vm-add: tests/vm/lib/kubepods.sh:/usr/lib/evictd-vm/kubepods.sh
# vm-add: tests/vm/data:/usr/lib/evictd-vm/data
# vm-expect: pods-running evictd-started
# vm-expect: pid-capacity-pid-max pid-bomb-1 pid-capacity-threads-max pid-bomb-2
# vm-expect: others-alive only-bombs-evicted evictd-alive
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/kubepods.sh
. /usr/lib/evictd-vm/data/evictd-vm.sh

THRESHOLD=500
HOUSEKEEPING=""      # empty: evictd's default (10s); BPF wake-ups must do the work
LIMIT=2000
POD_PIDS_MAX=1700
PODS=/run/pods.json
DEFAULT_PID_MAX=$(cat /proc/sys/kernel/pid_max)
DEFAULT_THREADS_MAX=$(cat /proc/sys/kernel/threads-max)
vm_info "kernel.pid_max=$DEFAULT_PID_MAX kernel.threads-max=$DEFAULT_THREADS_MAX tasks=$(cut -d' ' -f4 /proc/loadavg)"

kp_init cgroupfs || vm_fail pods-running "kp_init cgroupfs failed"
kp_pod db Guaranteed --request 64Mi --priority 1000
kp_pod web Burstable --request 32Mi --priority 0
kp_pod idle BestEffort --priority 0
kp_podlist $PODS
kp_run db sleep 100000
DB_PID=$KP_PID
kp_run web sh -c 'sleep 100000 & sleep 100000 & exec sleep 100000'
WEB_PID=$KP_PID
kp_run idle sleep 100000
IDLE_PID=$KP_PID
vm_wait_for 10 sh -c "[ \$(cat $(kp_path web)/pids.current) = 3 ]"
if kp_populated db && [ "$(kp_procs web)" = 3 ] && kp_populated idle; then
    vm_pass pods-running
else
    vm_fail pods-running "db $(kp_procs db) web $(kp_procs web) idle $(kp_procs idle) processes"
fi

# capacity CHECK: evictd --once reports pid.available of capacity $LIMIT
capacity() {
    c_out=$(evictd --once --dry-run --oom-guard=off --eviction-hard="pid.available<$THRESHOLD" 2>&1)
    c_line=$(echo "$c_out" | grep 'pid.available')
    c_tasks=$(cut -d' ' -f4 /proc/loadavg | cut -d/ -f2)
    vm_info "$1: pid_max=$(cat /proc/sys/kernel/pid_max) threads-max=$(cat /proc/sys/kernel/threads-max) tasks=$c_tasks; evictd --once: $(echo "$c_line" | tr -s ' ')"
    # "pid.available   1850 of 2000   hard<500 ..."
    c_cap=$(echo "$c_line" | awk '{ for (i = 1; i < NF; i++) if ($i == "of") print $(i + 1) }')
    if [ "$c_cap" = $LIMIT ]; then
        vm_pass "$1"
    else
        vm_fail "$1" "capacity '$c_cap', want min(pid_max, threads-max) = $LIMIT: $(echo "$c_out" | tr '\n' '|')"
    fi
}

# bomb N: a fork bomb in pod bomb-N; evictd must kill exactly that pod.  The pod has
# pids.max=$POD_PIDS_MAX (the kubelet's podPidsLimit): above the threshold, but it keeps a
# few hundred pids free for this script if evictd does not act (no fork failure, no panic).
bomb() {
    b_n=bomb-$1
    kp_pod $b_n BestEffort --priority 0
    echo $POD_PIDS_MAX >"$(kp_path $b_n)/pids.max"
    kp_podlist $PODS
    mr_begin $THRESHOLD pidsampler.sh
    kp_run $b_n forkbomb --quiet 2>/tmp/$b_n.log
    b_pid=$KP_PID
    mr_wait_gone "$(kp_path $b_n)" 60
    wait $b_pid
    b_rc=$?
    mr_end
    b_peak=$(cat "$(kp_path $b_n)/pids.peak" 2>/dev/null || echo "?")
    b_lines=$(ev_since $MR_MARK)
    b_dec=$(echo "$b_lines" | grep -m1 'decision: hard pid.available')
    b_ev=$(echo "$b_lines" | grep -m1 ' evicted ')
    b_why=""
    [ "$MR_GONE" = 1 ] || b_why="$b_why; the bomb pod still runs after 60 s ($(kp_procs $b_n) processes)"
    [ "$b_rc" = 137 ] || b_why="$b_why; forkbomb exit $b_rc (want 137)"
    case $b_ev in
        *" evicted vmtest/$b_n "*" for pid.available<"*"; cgroup.kill, "*) ;;
        *) b_why="$b_why; evicted line: '$b_ev'" ;;
    esac
    case $b_dec in
        *"victim=vmtest/$b_n "*) ;;
        *) b_why="$b_why; decision: '$b_dec'" ;;
    esac
    kill -0 $DB_PID && kill -0 $WEB_PID && kill -0 $IDLE_PID || b_why="$b_why; another pod's process died"
    if [ -z "$b_why" ]; then
        vm_pass pid-$b_n
    else
        vm_fail pid-$b_n "${b_why#; }"
        ev_dump 15
    fi
    vm_info "pid-$b_n: crossing->decision $MR_CROSS_TO_DEC_MS ms (sampler), decision->empty $MR_DEC_TO_EMPTY_MS ms;" \
        "pid.available at decision ${MR_DEC_OBS:-n/a}, sampled min $MR_MIN ($MR_SAMPLE_N samples); bomb peak $b_peak processes" \
        "($(grep -m1 'fork failed' /tmp/$b_n.log || echo 'fork never failed'))"
    vm_info "pid-$b_n: $(echo "$b_dec" | sed 's/^[^ ]* info: //')"
    vm_info "pid-$b_n: $(echo "$b_ev" | sed 's/^[^ ]* info: //')"
    VICTIMS="$VICTIMS$(echo "$b_lines" | grep -o ' evicted [^ ]*' | awk '{ printf "%s ", $2 }')"
    kp_delete $b_n
    kp_podlist $PODS
    vm_wait_for 20 sh -c "[ \$(( $LIMIT - \$(cut -d' ' -f4 /proc/loadavg | cut -d/ -f2) )) -gt $((THRESHOLD + 200)) ]"
}

# The limits are set before evictd starts (a node's sysctls are): a sysctl write is no event,
# so a running evictd would only see the new capacity at its next housekeeping read.
VICTIMS=""
# phase 1: pid_max is the limit
echo $LIMIT >/proc/sys/kernel/pid_max
capacity pid-capacity-pid-max
ev_start --pods-file=$PODS --node-name=evictd-vm --eviction-hard="pid.available<$THRESHOLD" \
    ${HOUSEKEEPING:+--housekeeping-interval=$HOUSEKEEPING} && vm_pass evictd-started || vm_fail evictd-started "see the log above"
bomb 1
ev_alive || vm_fail evictd-alive "evictd exited in phase 1"
ev_stop

# phase 2: threads-max is the limit
echo "$DEFAULT_PID_MAX" >/proc/sys/kernel/pid_max
echo $LIMIT >/proc/sys/kernel/threads-max
capacity pid-capacity-threads-max
ev_start --pods-file=$PODS --node-name=evictd-vm --eviction-hard="pid.available<$THRESHOLD" \
    ${HOUSEKEEPING:+--housekeeping-interval=$HOUSEKEEPING} || vm_fail evictd-started "phase 2: evictd did not start"
bomb 2

if kill -0 $DB_PID && kill -0 $WEB_PID && kill -0 $IDLE_PID && [ "$(kp_procs web)" = 3 ]; then
    vm_pass others-alive
else
    vm_fail others-alive "db $(kp_procs db) web $(kp_procs web) idle $(kp_procs idle) processes"
fi
if [ "$VICTIMS" = "vmtest/bomb-1 vmtest/bomb-2 " ]; then
    vm_pass only-bombs-evicted
else
    vm_fail only-bombs-evicted "evicted: '$VICTIMS'"
fi
if ev_alive; then vm_pass evictd-alive; else vm_fail evictd-alive "evictd exited"; ev_dump 20; fi
ev_stop
echo "$DEFAULT_THREADS_MAX" >/proc/sys/kernel/threads-max
vm_done
