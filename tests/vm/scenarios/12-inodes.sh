#!/bin/sh
# 12-inodes: nodefs is a small ext4 file system (2048 inodes) mounted at /var/lib/kubelet;
# the hard threshold is nodefs.inodesFree<5%.
#  A: a priority-0 BestEffort pod ("filler") creates files in its emptyDir until the threshold
#     is crossed; a priority-1000 Burstable pod ("logger") holds a few files.  The reclaim
#     command is tests/vm/data/gc-dead-pods.sh (the kubelet's clean-up of evicted pods'
#     volumes): it frees nothing at first, so evictd evicts the filler; on the next round it
#     removes the dead filler's files and the threshold is resolved: the logger is not evicted.
#     (Without that clean-up evictd would evict the logger next, in the same wake-up: killing a
#     pod frees no inodes, and evictd does not wait for the victim's clean-up as the kubelet's
#     waitForPodsCleanup does.)  The filler must be evicted before it hits ENOSPC.
#  B: evictd restarted with --reclaim-command='rm -rf /var/lib/kubelet/junk'; the junk holds
#     800 inodes; a new filler creates files until inodesFree is below 5% (and stops there);
#     the reclaim command brings it back above: nothing is evicted.
# vm-mem: 1024M
# vm-smp: 2
# vm-timeout: 300
# vm-serial: yes: a filler at a fixed rate races the reclaim step and the kill to ENOSPC
# vm-disk: 32M ext4 -N 2048 -m 0
# vm-bins: evictd
# vm-add: tests/vm/lib/kubepods.sh:/usr/lib/evictd-vm/kubepods.sh
# vm-add: tests/vm/data:/usr/lib/evictd-vm/data
# vm-expect: nodefs-mounted pods-running evictd-started
# vm-expect: inodes-filler-evicted inodes-before-enospc inodes-logger-spared inodes-resolved-after-gc
# vm-expect: inodes-reclaim-first inodes-reclaim-resolves inodes-nothing-evicted evictd-alive
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/kubepods.sh
. /usr/lib/evictd-vm/data/evictd-vm.sh

KUBELET=/var/lib/kubelet
HOUSEKEEPING=""      # empty: evictd's default (10s); BPF wake-ups must do the work
# files per second the filler creates: 102 inodes last ~0.85 s, which must cover the reclaim
# step that runs first (a shell script: 0.1-0.3 s under TCG), the per-pod disk measurement and
# the kill (at 200/s a 0.3 s reclaim step lost the race to ENOSPC once in a fresh-clone run)
RATE=120
PODS=/run/pods.json

mkdir -p $KUBELET
if vm_wait_for 10 test -b /dev/vda && mount -t ext4 /dev/vda $KUBELET; then
    vm_pass nodefs-mounted
else
    vm_fail nodefs-mounted "cannot mount /dev/vda on $KUBELET"
fi
FILES=$(stat -f -c %c $KUBELET)
ffree() { stat -f -c %d $KUBELET; }
THR=$((FILES * 5 / 100))        # 5% of f_files, in inodes
vm_info "nodefs: $FILES inodes, $(ffree) free; 5% = $THR"

# emptydir NAME: the pod's emptyDir volume, as the kubelet lays it out
emptydir() { echo "$KUBELET/pods/$(kp_uid "$1")/volumes/kubernetes.io~empty-dir/scratch"; }

kp_init systemd || vm_fail pods-running "kp_init systemd failed"
kp_pod logger Burstable --request 32Mi --priority 1000
kp_pod filler BestEffort --priority 0
kp_podlist $PODS
for p in logger filler; do mkdir -p "$(emptydir $p)"; done
kp_run logger sh -c "mkfiles '$(emptydir logger)' --max 50 --prefix log && exec sleep 100000"
LOGGER_PID=$KP_PID
vm_wait_for 10 sh -c "[ \$(ls '$(emptydir logger)' | wc -l) = 50 ]"
if kp_populated logger; then vm_pass pods-running; else vm_fail pods-running "logger is not running"; fi

# ---- A: the filler is evicted, the logger is not
ev_start --pods-file=$PODS --node-name=evictd-vm --root-dir=$KUBELET \
    --eviction-hard="nodefs.inodesFree<5%" --reclaim-command="sh $EV_DATA/gc-dead-pods.sh $KUBELET" \
    ${HOUSEKEEPING:+--housekeeping-interval=$HOUSEKEEPING} && vm_pass evictd-started || vm_fail evictd-started "see the log above"
mark=$(ev_mark)
t0=$(up_now)
kp_run filler sh -c "mkfiles '$(emptydir filler)' --rate $RATE >/tmp/filler.out 2>&1; exec sleep 100000"
FILLER_PID=$KP_PID
mr_wait_gone "$(kp_path filler)" 60
wait $FILLER_PID
rc=$?
sleep 1
lines=$(ev_since $mark)
ev=$(echo "$lines" | grep ' evicted ')
vm_info "A: filler gone after $(fcalc "$MR_T_GONE - $t0") s (exit $rc; mkfiles: $(cat /tmp/filler.out 2>/dev/null | tr '\n' ' '));" \
    "inodes free now $(ffree) of $FILES"
echo "$lines" | grep -E 'decision:|reclaim|evicted|gc-dead-pods' | sed 's/^[^ ]* //' | while IFS= read -r l; do vm_info "A log: $l"; done
case $ev in
    *" evicted vmtest/filler "*" for nodefs.inodesFree<"*"; cgroup.kill, "*)
        if [ "$MR_GONE" = 1 ] && [ "$rc" = 137 ]; then
            vm_pass inodes-filler-evicted
        else
            vm_fail inodes-filler-evicted "gone=$MR_GONE exit=$rc"
        fi ;;
    *) vm_fail inodes-filler-evicted "evicted lines: '$ev'"; ev_dump 20 ;;
esac
# evictd acted while 5% were still free-ish: the filler never got ENOSPC (at $RATE files/s,
# 102 inodes last ~0.85 s, including the reclaim step that runs first)
if grep -q enospc /tmp/filler.out 2>/dev/null; then
    vm_fail inodes-before-enospc "the filler ran the file system out of inodes before it was evicted: $(cat /tmp/filler.out)"
else
    vm_pass inodes-before-enospc
fi
if kp_populated logger && kill -0 $LOGGER_PID && [ "$(echo "$ev" | grep -c ' evicted ')" = 1 ]; then
    vm_pass inodes-logger-spared
else
    vm_fail inodes-logger-spared "logger populated: $(kp_populated logger && echo yes || echo no); evicted: $(echo "$ev" | grep -o 'evicted [^ ]*' | tr '\n' ' ')"
fi
free=$(ffree)
if [ "$free" -gt $THR ] && [ ! -d "$KUBELET/pods/$(kp_uid filler)" ] \
    && echo "$lines" | grep -q 'resolved by node-level reclaim; no pod evicted'; then
    vm_pass inodes-resolved-after-gc
else
    vm_fail inodes-resolved-after-gc "free $free (5% = $THR), filler dir $(ls -d "$KUBELET/pods/$(kp_uid filler)" 2>&1)"
fi
ev_stop
kp_delete filler
kp_podlist $PODS

# ---- B: the reclaim command frees enough: nothing is evicted
mkdir -p $KUBELET/junk
mkfiles $KUBELET/junk --max 800 --prefix junk >/dev/null
kp_pod filler2 BestEffort --priority 0
kp_podlist $PODS
mkdir -p "$(emptydir filler2)"
free=$(ffree)
max=$((free - THR / 2))         # ends at half the threshold: below it until the junk goes
vm_info "B: $free inodes free with 800 of junk; filler2 creates $max files"
ev_start --pods-file=$PODS --node-name=evictd-vm --root-dir=$KUBELET \
    --eviction-hard="nodefs.inodesFree<5%" --reclaim-command="rm -rf $KUBELET/junk" \
    ${HOUSEKEEPING:+--housekeeping-interval=$HOUSEKEEPING} || vm_fail evictd-started "B: evictd did not start"
mark=$(ev_mark)
kp_run filler2 sh -c "mkfiles '$(emptydir filler2)' --rate $RATE --max $max >/tmp/filler2.out 2>&1; exec sleep 100000"
FILLER2_PID=$KP_PID
vm_wait_for 60 grep -q created= /tmp/filler2.out
vm_wait_for 10 sh -c "! test -d $KUBELET/junk"
sleep 1
lines=$(ev_since $mark)
echo "$lines" | grep -E 'decision:|reclaim|evicted' | sed 's/^[^ ]* //' | while IFS= read -r l; do vm_info "B log: $l"; done
if echo "$lines" | grep -q "reclaim.*rm -rf $KUBELET/junk" || echo "$lines" | grep -q 'node-level reclaim for nodefs.inodesFree'; then
    vm_pass inodes-reclaim-first
else
    vm_fail inodes-reclaim-first "no reclaim step logged"
fi
free=$(ffree)
if [ ! -d $KUBELET/junk ] && [ "$free" -gt $THR ] && echo "$lines" | grep -q 'resolved by node-level reclaim; no pod evicted'; then
    vm_pass inodes-reclaim-resolves
else
    vm_fail inodes-reclaim-resolves "junk $(ls -d $KUBELET/junk 2>&1), free $free (5% = $THR), mkfiles: $(cat /tmp/filler2.out)"
fi
if ! echo "$lines" | grep -q ' evicted ' && kp_populated filler2 && kp_populated logger \
    && grep -q "created=$max" /tmp/filler2.out; then
    vm_pass inodes-nothing-evicted
else
    vm_fail inodes-nothing-evicted "evicted: $(echo "$lines" | grep -o 'evicted [^ ]*' | tr '\n' ' '); filler2 $(kp_procs filler2) logger $(kp_procs logger) processes; mkfiles: $(cat /tmp/filler2.out)"
fi
if ev_alive; then vm_pass evictd-alive; else vm_fail evictd-alive "evictd exited"; ev_dump 20; fi
ev_stop
kp_delete filler2
kp_delete logger
umount $KUBELET
vm_done
