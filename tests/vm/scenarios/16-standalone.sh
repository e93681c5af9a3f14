#!/bin/sh
# 16-standalone: scenario 10 without Kubernetes: evictd --workload-root=/sys/fs/cgroup/workloads,
# whose child cgroups are the workloads, ranked by the xattrs user.evictd.priority and
# user.evictd.memory_request.  "big" (priority 1000, no request) holds 400 MiB, "web"
# (priority 500, request 96Mi) holds 48 MiB, and "hog-N" (priority 10) allocates as fast as
# it can.  When memory.available<250Mi is crossed the hog uses less memory than big, so
# only the priority xattrs make it the victim; it is killed through cgroup.kill before any
# kernel OOM kill, big and web live.  3 runs.
# vm-mem: 1024M
# vm-smp: 2
# vm-timeout: 300
# vm-bins: evictd
# vm-add: tests/vm/data:/usr/lib/evictd-vm/data
# vm-add: /usr/bin/setfattr:/usr/bin/setfattr
# vm-expect: evictd-started workloads-running xattrs-set
# vm-expect: standalone-run-1 standalone-run-2 standalone-run-3
# vm-expect: no-oom-kill big-untouched web-untouched evictd-alive
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/data/evictd-vm.sh
oom_trace_on

RUNS=3
THRESHOLD=250Mi         # see 10-memory.sh
HOUSEKEEPING=""      # empty: evictd's default (10s); BPF wake-ups must do the work
ROOT=/sys/fs/cgroup/workloads
THR_BYTES=$((250 * MiB))

mkdir -p $ROOT
echo "+memory +pids" >$ROOT/cgroup.subtree_control
# workload NAME PRIORITY [MEMORY_REQUEST]: a workload cgroup with its xattrs
workload() {
    mkdir -p $ROOT/$1 || return 1
    setfattr -n user.evictd.priority -v "$2" $ROOT/$1 || return 1
    [ -z "$3" ] || setfattr -n user.evictd.memory_request -v "$3" $ROOT/$1
}
xattr_errs=""
workload big 1000 || xattr_errs="$xattr_errs big"
workload web 500 96Mi || xattr_errs="$xattr_errs web"
cg_run $ROOT/big memhog --max 400 --quiet 2>/tmp/big.log
BIG_PID=$CG_PID
cg_run $ROOT/web memhog --max 48 --quiet 2>/tmp/web.log
WEB_PID=$CG_PID
vm_wait_for 30 grep -q reached /tmp/big.log
vm_wait_for 30 grep -q reached /tmp/web.log
if grep -q reached /tmp/big.log && grep -q reached /tmp/web.log; then
    vm_pass workloads-running
else
    vm_fail workloads-running "big: $(cat /tmp/big.log) web: $(cat /tmp/web.log)"
fi

ev_start --workload-root=$ROOT --eviction-hard="memory.available<$THRESHOLD" \
    ${HOUSEKEEPING:+--housekeeping-interval=$HOUSEKEEPING} && vm_pass evictd-started || vm_fail evictd-started "see the log above"
vm_info "memory.available at rest: $(mib "$(mem_available)") MiB; threshold $THRESHOLD; housekeeping ${HOUSEKEEPING:-default (10s)}"

for run in $(seq 1 $RUNS); do
    name=hog-$run
    settle $THR_BYTES 200
    workload $name 10 || xattr_errs="$xattr_errs $name"
    mr_begin "$THR_BYTES"
    cg_run $ROOT/$name memhog --chunk 4 --quiet 2>/tmp/$name.log
    HOG_PID=$CG_PID
    mr_wait_gone $ROOT/$name 60
    wait $HOG_PID
    hog_rc=$?
    mr_end
    mr_info "standalone-run-$run"
    lines=$(ev_since "$MR_MARK")
    dec=$(echo "$lines" | grep -m1 'decision: hard')
    # at the decision the hog must hold less than big: only the priority xattr ranks it first
    hog_mib=$(awk -v b="$(cat $ROOT/$name/memory.peak 2>/dev/null || echo 0)" 'BEGIN { printf "%d", b / 1048576 }')
    why=""
    [ "$MR_GONE" = 1 ] || why="$why; the hog still runs after 60 s"
    [ "$hog_rc" = 137 ] || why="$why; memhog exit $hog_rc (want 137)"
    [ "$MR_EVICTED_VICTIM" = $name ] || why="$why; evicted '${MR_EVICTED_VICTIM:-nothing}' (want $name)"
    [ "$MR_EVICTED_SIG" = memory.available ] || why="$why; evicted for '${MR_EVICTED_SIG:-?}', not memory.available"
    case $dec in
        *"hard memory.available="*"[$name,big,web]"*) ;;
        *) why="$why; decision does not rank [$name,big,web]: $dec" ;;
    esac
    [ "$hog_mib" -lt 400 ] || why="$why; the hog peaked at $hog_mib MiB, not below big's 400 MiB: the test proves nothing"
    oom=$(no_oom_kill) || why="$why; kernel OOM kill: $oom"
    kill -0 $BIG_PID 2>/dev/null || why="$why; big died"
    kill -0 $WEB_PID 2>/dev/null || why="$why; web died"
    if [ -z "$why" ]; then
        vm_pass standalone-run-$run
        vm_info "standalone-run-$run: hog peak $hog_mib MiB; $(echo "$dec" | sed 's/^[^ ]* info: //')"
    else
        vm_fail standalone-run-$run "${why#; }"
        ev_dump 15
    fi
    rmdir $ROOT/$name 2>/dev/null || { cg_kill $ROOT/$name; rmdir $ROOT/$name; }
done

if [ -z "$xattr_errs" ]; then vm_pass xattrs-set; else vm_fail xattrs-set "setfattr failed for:$xattr_errs"; fi
if oom=$(no_oom_kill); then vm_pass no-oom-kill; else vm_fail no-oom-kill "$oom"; fi
if kill -0 $BIG_PID 2>/dev/null; then vm_pass big-untouched; else vm_fail big-untouched "big died"; fi
if kill -0 $WEB_PID 2>/dev/null; then vm_pass web-untouched; else vm_fail web-untouched "web died"; fi
n_ev=$(grep -c ' evicted ' "$EV_LOG")
if ev_alive && [ "$n_ev" = $RUNS ]; then
    vm_pass evictd-alive
else
    vm_fail evictd-alive "evictd alive: $(ev_alive && echo yes || echo no), $n_ev evictions (want $RUNS)"
fi
ev_stop
vm_done
