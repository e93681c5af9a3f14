#!/bin/sh
# 41-on-evict-hook: an --on-evict command that hangs never holds evictd's loop (doc/DESIGN.md
# §9 "Hooks and notifications", "The loop never waits"). Under systemd, evictd evicts a unit
# and starts the hook, which records its EVICTD_* environment and then sleeps far past the
# evaluation interval; while it sleeps, evictctl status answers at once and the second unit is
# evicted too; at --on-evict-timeout the hook's process group is killed. A loop that waited
# for its hook would answer nothing and evict nothing for the hook's 45 s.
# vm-mem: 1024M
# vm-timeout: 300
# vm-bins: evictd evictctl
# vm-add: tests/vm/lib/host-units.sh:/usr/lib/evictd-vm/host-units.sh
# vm-expect: hook-env status-while-hook-hangs second-eviction-while-hook-hangs hook-killed-at-timeout
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/host-units.sh
export SYSTEMD_COLORS=0 SYSTEMD_PAGER=cat
SLICE=evictd-hook.slice
WROOT=/sys/fs/cgroup/evictd.slice/$SLICE
LOG=/run/hook.log PIDS=/run/hook.pids

hu_unit wl-a $SLICE -- /usr/bin/memhog --max 16 --quiet
hu_unit wl-b $SLICE -- /usr/bin/memhog --max 16 --quiet
systemctl start wl-a wl-b
vm_wait_for 20 sh -c "hu_populated() { grep -q '^populated 1' \$1/cgroup.events; }; hu_populated $WROOT/wl-a.service && hu_populated $WROOT/wl-b.service"
cat >/run/hook.sh <<HOOK
#!/bin/sh
echo "\$EVICTD_KIND|\$EVICTD_VICTIM|\$EVICTD_CGROUP|\$EVICTD_SIGNAL|\$EVICTD_THRESHOLD|\$EVICTD_OBSERVED" >>$LOG
echo \$\$ >>$PIDS
exec sleep 600
HOOK
chmod 755 /run/hook.sh
# memory.available below MemTotal + 1 byte: always met; each eviction is followed by the next.
thr=$(( $(awk '/^MemTotal:/ { print $2 }' /proc/meminfo) * 1024 + 1 ))
hu_evictd --workload-root=$WROOT --oom-guard=off --eviction-hard="memory.available<$thr" \
    --on-evict=/run/hook.sh --on-evict-timeout=45s \
    || vm_fail hook-env "evictd did not start: $(journalctl -u evictd --no-pager | tail -n 5 | tr '\n' ' ')"

if vm_wait_for 30 test -s $LOG; then
    line=$(head -n1 $LOG)
    case $line in
        "evicted|wl-"[ab]".service|$WROOT/wl-"[ab]".service|memory.available|$thr|"[0-9]*) vm_pass hook-env ;;
        *) vm_fail hook-env "hook environment: '$line'" ;;
    esac
else
    vm_fail hook-env "the hook never ran: $(journalctl -u evictd --no-pager | tail -n 5 | tr '\n' ' ')"
fi
hook=$(head -n1 $PIDS 2>/dev/null)
t_hook=$(hu_ms)

slow=0 worst=0
for _ in 1 2 3 4 5; do
    t0=$(hu_ms)
    timeout 10 evictctl --socket $HU_SOCK status >/dev/null 2>&1 || slow=$((slow + 1))
    dt=$(( $(hu_ms) - t0 ))
    [ $dt -gt $worst ] && worst=$dt
    [ $dt -lt 3000 ] || slow=$((slow + 1))
    sleep 0.3
done
if [ $slow = 0 ] && kill -0 "${hook:-0}" 2>/dev/null; then
    vm_pass status-while-hook-hangs
else
    vm_fail status-while-hook-hangs "$slow of 5 slow or failed (worst ${worst} ms); hook ${hook:-none} alive: $(kill -0 "${hook:-0}" 2>/dev/null && echo yes || echo no)"
fi
vm_info "evictctl status: worst ${worst} ms while the hook slept"

if vm_wait_for 35 sh -c "! grep -q '^populated 1' $WROOT/wl-a.service/cgroup.events 2>/dev/null &&
        ! grep -q '^populated 1' $WROOT/wl-b.service/cgroup.events 2>/dev/null" &&
   kill -0 "${hook:-0}" 2>/dev/null; then
    vm_pass second-eviction-while-hook-hangs
    vm_info "both evicted $(( $(hu_ms) - t_hook )) ms after the first hook started; hooks: $(cat $PIDS | tr '\n' ' ')"
else
    vm_fail second-eviction-while-hook-hangs "wl-a populated: $(grep populated $WROOT/wl-a.service/cgroup.events 2>&1), wl-b: $(grep populated $WROOT/wl-b.service/cgroup.events 2>&1); first hook alive: $(kill -0 "${hook:-0}" 2>/dev/null && echo yes || echo no); $(journalctl -u evictd --no-pager | grep -E 'evicted|on-evict' | tail -n 4 | tr '\n' ' ')"
fi

if vm_wait_for 70 sh -c "journalctl -u evictd --no-pager | grep -q 'on-evict for evicted wl-.*: timed out'" &&
   vm_wait_for 5 sh -c "[ ! -e /proc/${hook:-0} ] || grep -q ') Z' /proc/${hook:-0}/stat"; then
    vm_pass hook-killed-at-timeout
else
    vm_fail hook-killed-at-timeout "$(journalctl -u evictd --no-pager | grep on-evict | tail -n 3 | tr '\n' ' '); hook ${hook:-none}: $(cat /proc/${hook:-0}/stat 2>&1)"
fi
systemctl stop evictd wl-a wl-b 2>/dev/null
vm_done
