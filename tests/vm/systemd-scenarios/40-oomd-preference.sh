#!/bin/sh
# 40-oomd-preference: systemd's ManagedOOMPreference= honoured (doc/DESIGN.md §5 "Workload
# preferences"). systemd writes user.oomd_avoid / user.oomd_omit on the units' cgroups; evictd
# ranks the avoid unit after every other evictable unit and never kills the omit unit, though
# both hold more memory than anything else; a growing hog crosses memory.available's threshold
# and is the one killed. With the preferences ignored the omit unit (350 MiB) goes first.
# vm-mem: 1536M
# vm-timeout: 300
# vm-bins: evictd evictctl
# vm-add: tests/vm/lib/host-units.sh:/usr/lib/evictd-vm/host-units.sh
# vm-expect: units-holding avoid-ranks-last omit-never-evict hog-killed-first omit-avoid-live
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/host-units.sh
export SYSTEMD_COLORS=0 SYSTEMD_PAGER=cat
SLICE=evictd-pref.slice
WROOT=/sys/fs/cgroup/evictd.slice/$SLICE	# systemd nests "a-b.slice" under "a.slice"

hu_unit pref-omit $SLICE ManagedOOMPreference=omit -- /usr/bin/memhog --max 350 --quiet
hu_unit pref-avoid $SLICE ManagedOOMPreference=avoid -- /usr/bin/memhog --max 300 --quiet
hu_unit pref-plain $SLICE -- /usr/bin/memhog --max 30 --quiet
hu_unit pref-hog $SLICE -- /usr/bin/memhog --rate 16 --quiet
systemctl start pref-omit pref-avoid pref-plain
if vm_wait_for 60 sh -c "[ \$(( \$(cat $WROOT/pref-omit.service/memory.current) >> 20 )) -ge 345 ] &&
        [ \$(( \$(cat $WROOT/pref-avoid.service/memory.current) >> 20 )) -ge 295 ] &&
        [ \$(( \$(cat $WROOT/pref-plain.service/memory.current) >> 20 )) -ge 28 ]"; then
    vm_pass units-holding
else
    vm_fail units-holding "omit $(hu_current $WROOT/pref-omit.service) avoid $(hu_current $WROOT/pref-avoid.service) plain $(hu_current $WROOT/pref-plain.service) MiB"
fi
vm_info "$(systemctl show -p ManagedOOMPreference pref-omit) $(systemctl show -p ManagedOOMPreference pref-avoid)"

avail=$(hu_memory_available)
thr=$(( ${avail:-0} - 64 * 1024 * 1024 ))
vm_info "memory.available $(( ${avail:-0} >> 20 )) MiB; threshold memory.available<$(( thr >> 20 ))Mi"
hu_evictd --workload-root=$WROOT --oom-guard=off --eviction-hard="memory.available<$thr" \
    || vm_fail hog-killed-first "evictd did not start: $(journalctl -u evictd --no-pager | tail -n 5 | tr '\n' ' ')"

# The ranking evictd would use for memory, before any threshold is met.
rank=$(evictctl --socket $HU_SOCK --json pods --signal memory.available 2>&1)
order=$(printf '%s' "$rank" | grep -o '"name": *"[^"]*"' | sed 's/.*"\([^"]*\)"$/\1/' | tr '\n' ' ')
vm_info "memory ranking: $order"
case $order in
    "pref-plain.service pref-avoid.service pref-omit.service ") vm_pass avoid-ranks-last ;;
    *) vm_fail avoid-ranks-last "ranking '$order' (want plain, avoid, omit): $(evictctl --socket $HU_SOCK pods --signal memory.available 2>&1 | tr '\n' ' ')" ;;
esac
omit_entry=$(printf '%s' "$rank" | tr -d '\n' | sed 's/},/}\n/g' | grep '"pref-omit.service"')
case $omit_entry in
    *'"never_evict": *true'*|*'"never_evict":true'*) vm_pass omit-never-evict ;;
    *) vm_fail omit-never-evict "pref-omit entry: $omit_entry" ;;
esac

systemctl start pref-hog
if vm_wait_for 60 sh -c "journalctl -u evictd --no-pager | grep -q 'kill: killing pod'"; then
    first=$(journalctl -u evictd --no-pager | grep -o 'kill: killing pod [^ ]*' | head -n1)
    case $first in
        *pref-hog.service) vm_pass hog-killed-first ;;
        *) vm_fail hog-killed-first "first kill: '$first'" ;;
    esac
else
    vm_fail hog-killed-first "no kill within 60 s; hog at $(hu_current $WROOT/pref-hog.service) MiB; $(journalctl -u evictd --no-pager | tail -n 5 | tr '\n' ' ')"
fi
sleep 3
if hu_populated $WROOT/pref-omit.service && hu_populated $WROOT/pref-avoid.service; then
    vm_pass omit-avoid-live
else
    vm_fail omit-avoid-live "omit populated: $(hu_populated $WROOT/pref-omit.service && echo yes || echo no), avoid: $(hu_populated $WROOT/pref-avoid.service && echo yes || echo no); kills: $(journalctl -u evictd --no-pager | grep -o 'kill: killing pod [^ ]*' | tr '\n' ' ')"
fi
vm_info "evictd: $(journalctl -u evictd --no-pager | grep -E 'evicted|killing' | tail -n 4 | tr '\n' ' ')"
systemctl stop evictd pref-hog pref-plain pref-avoid pref-omit 2>/dev/null
vm_done
