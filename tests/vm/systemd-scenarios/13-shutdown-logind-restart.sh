#!/bin/sh
# 13-shutdown-logind-restart: systemd-logind is restarted while evictd runs. evictd sees
# org.freedesktop.login1 change owners, takes the lock again within a few seconds (one lock,
# not two), and the poweroff that follows still goes through evictd's sequence.
# vm-mem: 1024M
# vm-timeout: 300
# vm-serial: yes: the poweroff must follow the release within 1 s
# vm-bins: evictd
# vm-packages: attr
# vm-add: tests/vm/systemd-scenarios/shutdown-lib.inc:/usr/lib/evictd-vm/shutdown-lib.inc
# vm-add: tools/deploy/evictd.service:/usr/lib/evictd-vm/evictd.service
# vm-add: tools/deploy/evictd.socket:/usr/lib/evictd-vm/evictd.socket
# vm-expect: evictd-started inhibitor-listed logind-restarted relocked single-lock
# vm-expect: shutdown-check-armed pfs-seen group-order lock-released poweroff-after-release
#
# Groups: 0=3s, 2000000000=2s. Workloads: low (0, exits), crit (2000000000, exits).
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/shutdown-lib.inc
sw_setup

sw_start low 0 exit
sw_start crit 2000000000 exit
sw_evictd --shutdown-grace-period-by-pod-priority=0=3,2000000000=2
if vm_wait_for 20 sw_inhibitors; then
    vm_pass inhibitor-listed
else
    vm_fail inhibitor-listed "no delay inhibitor by evictd: $(systemd-inhibit --list --no-pager 2>&1 | tr '\n' ' ')"
fi

pid_before=$(systemctl show -P MainPID systemd-logind.service)
locks_before=$(journalctl -u evictd --no-pager | grep -c 'holding a delay inhibitor lock')
systemctl restart systemd-logind.service
pid_after=$(systemctl show -P MainPID systemd-logind.service)
if [ "$pid_after" != "$pid_before" ] && [ "$pid_after" != 0 ]; then
    vm_pass logind-restarted
else
    vm_fail logind-restarted "logind pid $pid_before -> $pid_after"
fi
relocked() {
    [ "$(journalctl -u evictd --no-pager | grep -c 'holding a delay inhibitor lock')" -gt "$locks_before" ] && sw_inhibitors
}
if vm_wait_for 10 relocked; then
    vm_pass relocked
else
    vm_fail relocked "evictd did not take the lock again: $(journalctl -u evictd --no-pager | tail -n 5 | tr '\n' ' ')"
fi
sleep 1
n=$(sw_inhibitors | grep -c .)
[ "$n" = 1 ] && vm_pass single-lock || vm_fail single-lock "$n evictd inhibitors: $(systemd-inhibit --list --no-legend --no-pager | tr '\n' ';')"
vm_info "inhibitors: $(systemd-inhibit --list --no-legend --no-pager | tr -s ' ' | tr '\n' ';')"

cat >$W/check.sh <<'EOF'
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/shutdown-lib.inc
pfs=$(sw_journal_time evictd 'PrepareForShutdown\(true\)')
rel=$(sw_journal_time evictd 'released the shutdown inhibitor lock')
exec_at=$(sw_journal_time systemd-logind 'System is powering down')
vm_info "PrepareForShutdown at ${pfs:-?}, lock released at ${rel:-?}, logind went on at ${exec_at:-?}"
vm_info "term.log: $(tr '\n' ';' <$TERM_LOG)"
sw_dump_journal evictd
[ -n "$pfs" ] && vm_pass pfs-seen || vm_fail pfs-seen "no PrepareForShutdown(true) after the logind restart"
l=$(sw_term_time low); c=$(sw_term_time crit)
if awk -v p="${pfs:-x}" -v l="$l" -v c="$c" 'BEGIN { exit !(p != "x" && l != "" && c != "" && p <= l && l <= c) }'; then
    vm_pass group-order
else
    vm_fail group-order "PrepareForShutdown at '$pfs', low TERM at '$l', crit TERM at '$c'"
fi
d=$(awk -v a="$pfs" -v b="$rel" 'BEGIN { printf "%.2f", b - a }')
[ -n "$rel" ] && sw_between "$d" 0 6 && vm_pass lock-released || vm_fail lock-released "released at '$rel' ($d s after PrepareForShutdown; total 5 s)"
d=$(awk -v a="$rel" -v b="$exec_at" 'BEGIN { printf "%.2f", b - a }')
if [ -n "$exec_at" ] && [ -n "$rel" ] && sw_between "$d" -0.05 1.0 &&
   ! journalctl -b -u systemd-logind --no-pager | grep -q 'inhibitor timeout is reached'; then
    vm_pass poweroff-after-release
else
    vm_fail poweroff-after-release "logind went on at '${exec_at}', $d s after the release"
fi
EOF
sw_on_shutdown $W/check.sh
vm_done
