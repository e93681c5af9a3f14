#!/bin/sh
# 21-journal-fields: under systemd, evictd's stderr is journald's stream (JOURNAL_STREAM), so
# its lines are native journal entries (doc/DESIGN.md §9): an eviction is found with
# `journalctl MESSAGE_ID=<eviction id>` and carries POD, SIGNAL, THRESHOLD, OBSERVED and
# RANK_REASON; its text says why this victim; the decision has its own MESSAGE_ID.
# vm-mem: 1024M
# vm-timeout: 240
# vm-bins: evictd
# vm-expect: evictd-started eviction-in-journal eviction-fields eviction-text-reason
# vm-expect: decision-in-journal code-location
. /usr/lib/evictd-vm/vm-lib.sh
export SYSTEMD_COLORS=0 SYSTEMD_PAGER=cat
EVICTION_ID=823644b284b8464ca1d522d0379e6c3c
DECISION_ID=28c4b7bb6289457ba4bf3e558768d298
SLICE=evictd-jt.slice
WROOT=/sys/fs/cgroup/evictd.slice/$SLICE	# systemd nests "a-b.slice" under "a.slice"
mkdir -p /run/systemd/system /var/lib/evictd

# One workload, and a threshold always met (memory.available below MemTotal + 1 byte).
systemd-run --quiet --unit=wl-victim --slice=$SLICE --service-type=exec sleep 600 \
    || vm_fail evictd-started "systemd-run of the workload failed"
vm_wait_for 10 test -d $WROOT/wl-victim.service || vm_fail evictd-started "no $WROOT/wl-victim.service"
threshold=$(( $(awk '/^MemTotal:/ { print $2 }' /proc/meminfo) * 1024 + 1 ))
cat >/run/systemd/system/evictd.service <<UNIT
[Unit]
Description=evictd (journal fields test)
[Service]
Type=exec
ExecStart=/usr/bin/evictd --no-bpf --eviction-hard=memory.available<$threshold --workload-root=$WROOT --state-dir=/var/lib/evictd --metrics-address=off --control-socket=/run/evictd-jt.sock
UNIT
systemctl daemon-reload
if systemctl start evictd.service; then
    vm_pass evictd-started
else
    vm_fail evictd-started "systemctl start evictd failed: $(journalctl -u evictd --no-pager | tail -n 5 | tr '\n' ' ')"
fi

json() { journalctl --no-pager -o json MESSAGE_ID="$1" 2>/dev/null; }
# field JSON NAME: the value of one string field of a journalctl -o json line
field() { printf '%s\n' "$1" | grep -o "\"$2\":\"[^\"]*\"" | head -n1 | sed "s/^\"$2\":\"//; s/\"\$//"; }

if vm_wait_for 30 sh -c "journalctl --no-pager -o json MESSAGE_ID=$EVICTION_ID | grep -q ."; then
    vm_pass eviction-in-journal
else
    vm_fail eviction-in-journal "no entry with MESSAGE_ID=$EVICTION_ID; evictd said: $(journalctl -u evictd --no-pager | tail -n 8 | tr '\n' ' ')"
fi
ev=$(json $EVICTION_ID | head -n1)
vm_info "eviction entry: $ev"
pod=$(field "$ev" POD) sig=$(field "$ev" SIGNAL) thr=$(field "$ev" THRESHOLD)
obs=$(field "$ev" OBSERVED) why=$(field "$ev" RANK_REASON) prio=$(field "$ev" PRIORITY)
unit=$(field "$ev" _SYSTEMD_UNIT)
case $pod in *wl-victim.service*) pod_ok=yes ;; *) pod_ok=no ;; esac
case $obs in ''|*[!0-9]*) obs_ok=no ;; *) obs_ok=yes ;; esac
if [ $pod_ok = yes ] && [ "$sig" = memory.available ] && [ "$thr" = "$threshold" ] &&
   [ $obs_ok = yes ] && [ -n "$why" ] && [ "$prio" = 6 ] && [ "$unit" = evictd.service ]; then
    vm_pass eviction-fields
else
    vm_fail eviction-fields "POD='$pod' SIGNAL='$sig' THRESHOLD='$thr' (want $threshold) OBSERVED='$obs' RANK_REASON='$why' PRIORITY='$prio' unit='$unit'"
fi
msg=$(field "$ev" MESSAGE)
case $msg in
    "evicted "*"for memory.available<$threshold: $why;"*) vm_pass eviction-text-reason ;;
    *) vm_fail eviction-text-reason "MESSAGE='$msg' does not give the rank reason '$why'" ;;
esac
dec=$(json $DECISION_ID | grep '"POD"' | head -n1)
if [ -n "$dec" ] && [ "$(field "$dec" SIGNAL)" = memory.available ] && [ -n "$(field "$dec" RANK_REASON)" ]; then
    vm_pass decision-in-journal
else
    vm_fail decision-in-journal "no decision entry with POD and RANK_REASON: $(json $DECISION_ID | head -n2)"
fi
file=$(field "$ev" CODE_FILE) line=$(field "$ev" CODE_LINE)
case "$file:$line" in
    *act.c:[0-9]*) vm_pass code-location ;;
    *) vm_fail code-location "CODE_FILE='$file' CODE_LINE='$line'" ;;
esac
systemctl stop evictd.service
