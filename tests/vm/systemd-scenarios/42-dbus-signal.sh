#!/bin/sh
# 42-dbus-signal: --dbus-signal (doc/DESIGN.md §9 "Hooks and notifications"): an eviction is
# announced on the system bus as org.evictd.Evictd1.Evicted (path /org/evictd/Evictd1,
# "sssssx": kind, victim, cgroup, signal, threshold, observed), with the policy of
# tools/deploy/org.evictd.Evictd1.conf installed: a monitor on the system bus sees it, and an
# unprivileged subscriber (a desktop notifier's match rule, as user nobody) receives it.
# vm-mem: 1024M
# vm-timeout: 240
# vm-bins: evictd evictctl
# vm-add: tests/vm/lib/host-units.sh:/usr/lib/evictd-vm/host-units.sh
# vm-add: tools/deploy/org.evictd.Evictd1.conf:/usr/share/dbus-1/system.d/org.evictd.Evictd1.conf
# vm-expect: bus-up signal-received signal-args unprivileged-listener
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/host-units.sh
export SYSTEMD_COLORS=0 SYSTEMD_PAGER=cat
SLICE=evictd-dbus.slice
WROOT=/sys/fs/cgroup/evictd.slice/$SLICE
MATCH="type='signal',interface='org.evictd.Evictd1'"

# dbus-daemon read its policy before the file was there: reload it.
systemctl reload dbus.service 2>/dev/null || busctl call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus ReloadConfig
if command -v dbus-monitor >/dev/null && busctl --system status org.freedesktop.DBus >/dev/null 2>&1; then
    vm_pass bus-up
else
    vm_fail bus-up "dbus-monitor: $(command -v dbus-monitor || echo missing); bus: $(busctl --system status org.freedesktop.DBus 2>&1 | head -n 2 | tr '\n' ' ')"
fi
dbus-monitor --system "$MATCH" >/run/mon-root.log 2>&1 &
mon_root=$!
runuser -u nobody -- dbus-monitor --system "$MATCH" >/run/mon-user.log 2>&1 &
mon_user=$!
sleep 1

hu_unit wl-d $SLICE -- /usr/bin/memhog --max 16 --quiet
systemctl start wl-d
vm_wait_for 20 grep -q '^populated 1' $WROOT/wl-d.service/cgroup.events
thr=$(( $(awk '/^MemTotal:/ { print $2 }' /proc/meminfo) * 1024 + 1 ))
hu_evictd --workload-root=$WROOT --oom-guard=off --eviction-hard="memory.available<$thr" --dbus-signal \
    || vm_fail signal-received "evictd did not start: $(journalctl -u evictd --no-pager | tail -n 5 | tr '\n' ' ')"

if vm_wait_for 30 grep -q 'member=Evicted' /run/mon-root.log; then
    vm_pass signal-received
else
    vm_fail signal-received "no Evicted signal seen: monitor said '$(tail -n 5 /run/mon-root.log | tr '\n' ' ')'; evictd: $(journalctl -u evictd --no-pager | grep -iE 'dbus|evicted' | tail -n 3 | tr '\n' ' ')"
fi
sig=$(sed -n '/member=Evicted/,/int64/p' /run/mon-root.log | tr '\n' ' ' | tr -s ' ')
vm_info "signal: $sig"
case $sig in
    *"path=/org/evictd/Evictd1; interface=org.evictd.Evictd1; member=Evicted"*'string "evicted" string "wl-d.service" string "'$WROOT/wl-d.service'" string "memory.available" string "'$thr'" int64 '[0-9]*)
        vm_pass signal-args ;;
    *) vm_fail signal-args "signal: '$sig'" ;;
esac
if vm_wait_for 10 grep -q 'member=Evicted' /run/mon-user.log; then
    vm_pass unprivileged-listener
else
    vm_fail unprivileged-listener "user nobody's listener: '$(tail -n 5 /run/mon-user.log | tr '\n' ' ')'"
fi
kill $mon_root $mon_user 2>/dev/null
systemctl stop evictd wl-d 2>/dev/null
vm_done
