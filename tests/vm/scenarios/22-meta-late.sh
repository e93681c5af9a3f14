#!/bin/sh
# 22-meta-late: a pod cgroup found before the pods-file entry that names it (doc/DESIGN.md §5,
# "Pods without metadata").  The order is forced, not left to timing: the BestEffort "hog"
# pod's cgroup is made (evictd rediscovers it and logs it without metadata), then its entry is
# written to the pods file (no change in the cgroup tree, so no inotify event; evictd logs the
# new list once an evaluation read it), and only then does the hog start growing.  evictd must
# evict the hog, first and only (memory.available), and leave the Guaranteed db and the
# Burstable web running, with no kernel OOM kill.  Before the fix the hog kept meta_unknown:
# evictd killed web, then db, then had no candidate left.
# vm-mem: 1024M
# vm-smp: 2
# vm-timeout: 240
# vm-bins: evictd
# vm-add: tests/vm/lib/kubepods.sh:/usr/lib/evictd-vm/kubepods.sh
# vm-add: tests/vm/data:/usr/lib/evictd-vm/data
# vm-expect: evictd-started pods-running hog-unknown-first hog-listed
# vm-expect: hog-evicted-first-and-only guaranteed-untouched burstable-untouched no-oom-kill
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/kubepods.sh
. /usr/lib/evictd-vm/data/evictd-vm.sh
oom_trace_on

THRESHOLD=250Mi	# as 10-memory: below the OOM guard's crossing in this guest
PODS=/run/pods.json

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
if kp_populated db && kp_populated web; then
    vm_pass pods-running
else
    vm_fail pods-running "db: $(cat /tmp/db.log) web: $(cat /tmp/web.log)"
fi

# Housekeeping 1s: the evaluation that reads the new pods file comes soon after it is written.
ev_start --pods-file=$PODS --node-name=evictd-vm --eviction-hard="memory.available<$THRESHOLD" \
    --housekeeping-interval=1s && vm_pass evictd-started || vm_fail evictd-started "see the log above"

# 1. The hog's cgroup, with an idle process in it, and no entry in the pods file yet.
kp_pod hog BestEffort
kp_run hog sleep 600
SLEEP_PID=$KP_PID
HOG_UID=$(kp_uid hog)
HOG_PATH=$(kp_path hog)
if vm_wait_for 20 grep -q "cgroup $HOG_PATH has no pod metadata" "$EV_LOG"; then
    vm_pass hog-unknown-first
else
    vm_fail hog-unknown-first "evictd never logged the hog without metadata"
    ev_dump 20
fi

# 2. Its entry arrives; the cgroup tree does not change.  Wait for the refresh that read it.
mark=$(ev_mark)
kp_podlist $PODS
if vm_wait_for 20 sh -c ". $EV_DATA/evictd-vm.sh; ev_since $mark | grep -q 'pods file $PODS: 3 pods'"; then
    sleep 2	# and a couple more evaluations on the new list
    vm_pass hog-listed
else
    vm_fail hog-listed "evictd never read the pods file naming the hog"
    ev_dump 20
fi

# 3. Only now does the hog grow.
kp_run hog memhog --chunk 4 --quiet 2>/tmp/hog.log
HOG_PID=$KP_PID
vm_wait_for 60 sh -c "! grep -q '^populated 1' $HOG_PATH/cgroup.events"
sleep 2	# anything evicted after the hog would be logged by now
evicted=$(grep ' evicted ' "$EV_LOG" | sed 's/.* evicted \([^ ]*\) .* for \([a-z.]*\).*/\1 (\2)/' | tr '\n' ' ')
vm_info "evictions: ${evicted:-none}"
if [ "$evicted" = "vmtest/hog (memory.available) " ] && ! kill -0 $HOG_PID 2>/dev/null; then
    vm_pass hog-evicted-first-and-only
else
    vm_fail hog-evicted-first-and-only "evicted: '${evicted:-nothing}' (want only vmtest/hog, for memory.available); hog memhog: $(tail -n 1 /tmp/hog.log)"
    ev_dump 30
fi
if kill -0 $DB_PID 2>/dev/null && kp_populated db; then
    vm_pass guaranteed-untouched
else
    vm_fail guaranteed-untouched "db pid $DB_PID gone or its cgroup emptied"
fi
if kill -0 $WEB_PID 2>/dev/null && kp_populated web; then
    vm_pass burstable-untouched
else
    vm_fail burstable-untouched "web pid $WEB_PID gone or its cgroup emptied"
fi
if oom=$(no_oom_kill); then vm_pass no-oom-kill; else vm_fail no-oom-kill "$oom"; fi
kill $SLEEP_PID 2>/dev/null
ev_stop
vm_done
