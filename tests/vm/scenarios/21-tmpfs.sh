#!/bin/sh
# 21-tmpfs: memory a kill cannot return (doc/DESIGN.md, "Acting: one victim per need").  A
# BestEffort pod "shm" fills a file on a tmpfs until memory.available crosses the hard threshold
# memory.available<250Mi, then sleeps.  evictd kills it through cgroup.kill, but the file
# outlives its processes: its pages stay charged to the emptied cgroup and memory.available
# stays below the threshold.  evictd must say so (the "did not give back its memory" warning
# with the shmem left, an "unreturned" decision-log event, evictd_evictions_unreturned_total 1)
# and hold: three small BestEffort pods started over the next ~3 s are all alive 8 s after the
# eviction (exactly one eviction logged), the Guaranteed db and the Burstable web untouched, no
# kernel OOM kill.  Before the hold, evictd killed web, db and every new pod within
# milliseconds, for memory no kill could return.  evictd as in 10-memory (--pods-file
# --node-name --eviction-hard, BPF on) plus --event-log.
# vm-mem: 1024M
# vm-smp: 2
# vm-timeout: 240
# vm-bins: evictd
# vm-add: tests/vm/lib/kubepods.sh:/usr/lib/evictd-vm/kubepods.sh
# vm-add: tests/vm/data:/usr/lib/evictd-vm/data
# vm-expect: evictd-started pods-running shm-evicted unreturned-logged unreturned-event
# vm-expect: unreturned-metric pressure-stays new-pods-spared guaranteed-untouched
# vm-expect: burstable-untouched no-oom-kill evictd-alive tmpfs-cleaned
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/kubepods.sh
. /usr/lib/evictd-vm/data/evictd-vm.sh
oom_trace_on

THRESHOLD=250Mi	# as 10-memory: above the OOM guard's crossing (~200Mi) in this guest
# the level the file would take memory.available to: below the threshold, above the OOM guard
TARGET_MIB=215
PODS=/run/pods.json
EVENTS=/tmp/events.jsonl
SHM=/mnt/shm
THR_BYTES=$(kp_qty_bytes $THRESHOLD)

# up_ge A B: uptime A >= B (floats)
up_ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }

mkdir -p $SHM && mount -t tmpfs -o size=900m tmpfs $SHM || vm_fail tmpfs-cleaned "mount -t tmpfs $SHM failed"

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
    --event-log=$EVENTS && vm_pass evictd-started || vm_fail evictd-started "see the log above"
settle $THR_BYTES
REST=$(mem_available)
SIZE_MIB=$(( REST / MiB - TARGET_MIB ))
vm_info "memory.available at rest: $(mib "$REST") MiB; threshold $THRESHOLD; shm writes up to $SIZE_MIB MiB into $SHM"

# the pod: fill the file, then sleep (evictd kills it at the crossing, while it writes)
kp_pod shm BestEffort
kp_podlist $PODS
SHM_PATH=$(kp_path shm)
mr_begin "$THR_BYTES"
kp_run shm sh -c 'dd if=/dev/zero of="$1/fill" bs=1M count="$2" 2>/dev/null; exec sleep 3600' sh $SHM $SIZE_MIB
SHM_PID=$KP_PID
mr_wait_gone "$SHM_PATH" 60
T_EV=$(up_now)
mr_end
mr_info shm
# A system process (no pod) takes 16 MiB more: the kill landed right at the crossing, and this
# keeps memory.available below the threshold against the guest's upward drift, so the pressure
# the hold is about stays (it is not a candidate; the hold's early end needs 64 MiB).
memhog --max 16 --quiet 2>/dev/null &
SYS_PID=$!
WRITTEN_MIB=$(( $(stat -c %s $SHM/fill 2>/dev/null || echo 0) / MiB ))
vm_info "shm wrote $WRITTEN_MIB MiB of $SIZE_MIB; its emptied cgroup: memory.current $(mib "$(cat "$SHM_PATH/memory.current")") MiB," \
    "shmem $(mib "$(vm_kv "$SHM_PATH/memory.stat" shmem)") MiB; memory.available $(mib "$(mem_available)") MiB"
why=""
[ "$MR_GONE" = 1 ] || why="$why; the shm pod still runs after 60 s"
kill -0 $SHM_PID 2>/dev/null && why="$why; its process $SHM_PID is alive"
[ "$MR_EVICTED_VICTIM" = vmtest/shm ] || why="$why; evicted '${MR_EVICTED_VICTIM:-nothing}' (want vmtest/shm)"
[ "$MR_EVICTED_SIG" = memory.available ] || why="$why; evicted for '${MR_EVICTED_SIG:-?}', not memory.available"
if [ -z "$why" ]; then vm_pass shm-evicted; else vm_fail shm-evicted "${why#; }"; ev_dump 20; fi

# the first observation after the kill judges it: the file's pages stayed charged
vm_wait_for 3 grep -q 'did not give back its memory' "$EV_LOG"
line=$(grep -m1 'did not give back its memory' "$EV_LOG")
shmem_mib=$(echo "$line" | sed -n 's/.*(shmem \([0-9]*\) MiB.*/\1/p')
vm_info "log: ${line:-none}"
if echo "$line" | grep -q 'the last eviction for memory.available did not give back its memory: [0-9]* MiB stayed charged to its emptied cgroup' &&
    [ -n "$shmem_mib" ] && [ "$WRITTEN_MIB" -gt 0 ] && [ $((shmem_mib * 2)) -ge "$WRITTEN_MIB" ]; then
    vm_pass unreturned-logged
else
    vm_fail unreturned-logged "want the warning with shmem >= half of the $WRITTEN_MIB MiB written, got shmem '${shmem_mib:-none}'"
    ev_dump 20
fi
ev=$(grep -m1 '"action":"unreturned"' $EVENTS 2>/dev/null)
if [ -n "$ev" ]; then
    vm_pass unreturned-event
else
    vm_fail unreturned-event "no \"action\":\"unreturned\" line in $EVENTS ($(wc -l <$EVENTS 2>/dev/null || echo 0) lines: $(grep -o '"action":"[a-z_]*"' $EVENTS 2>/dev/null | sort | uniq -c | tr -s ' ' | tr '\n' ','))"
fi
metric=$(wget -q -O - http://127.0.0.1:9808/metrics 2>/dev/null | awk '$1 == "evictd_evictions_unreturned_total" { print $2 }')
if [ "$metric" = 1 ]; then
    vm_pass unreturned-metric
else
    vm_fail unreturned-metric "evictd_evictions_unreturned_total '${metric:-not on /metrics}' (want 1)"
fi

# new work arrives while the memory stays low: the hold keeps it alive
for i in 1 2 3; do
    kp_pod new-$i BestEffort
    kp_podlist $PODS
    kp_run new-$i sleep 3600
    eval NEW_PID_$i=\$KP_PID
    sleep 1
done
while ! up_ge "$(up_now)" "$(fcalc "$T_EV + 8")"; do sleep 0.1; done
AVAIL=$(mem_available)
vm_info "8 s after the eviction: memory.available $(mib "$AVAIL") MiB (threshold $THRESHOLD)"
if [ "$AVAIL" -lt "$THR_BYTES" ]; then
    vm_pass pressure-stays
else
    vm_fail pressure-stays "memory.available $(mib "$AVAIL") MiB is above $THRESHOLD: nothing was there to hold"
fi
why=""
for i in 1 2 3; do
    kp_populated new-$i || why="$why; new-$i emptied"
    eval "kill -0 \$NEW_PID_$i" 2>/dev/null || why="$why; new-$i's process died"
done
n_ev=$(grep -c ' evicted ' "$EV_LOG")
[ "$n_ev" = 1 ] || why="$why; $n_ev evictions logged (want 1): $(grep ' evicted ' "$EV_LOG" | sed 's/.* evicted \([^ ]*\) .* for \([a-z.]*\).*/\1 (\2)/' | tr '\n' ' ')"
if [ -z "$why" ]; then vm_pass new-pods-spared; else vm_fail new-pods-spared "${why#; }"; ev_dump 30; fi

# end the pressure before the hold runs out (10 s): remove the file
kill $SYS_PID 2>/dev/null
rm -f $SHM/fill
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
if ev_alive; then vm_pass evictd-alive; else vm_fail evictd-alive "evictd exited"; ev_dump 30; fi
vm_info "decision-log actions: $(grep -o '"action":"[a-z_]*"' $EVENTS 2>/dev/null | sort | uniq -c | tr -s ' ' | tr '\n' ',')"
ev_stop
for p in new-1 new-2 new-3 shm; do kp_delete $p; done
kp_podlist $PODS
was=$(awk -v m=$SHM '$2 == m { print $3 }' /proc/mounts)
gone=yes
[ -e $SHM/fill ] && gone="no: $SHM/fill is still there"
umount $SHM || gone="no: umount $SHM failed"
if [ "$was" = tmpfs ] && [ "$gone" = yes ] && ! awk -v m=$SHM '$2 == m { f = 1 } END { exit !f }' /proc/mounts; then
    vm_pass tmpfs-cleaned
else
    vm_fail tmpfs-cleaned "mounted: '${was:-nothing}' at $SHM; cleaned: $gone"
fi
vm_done
