#!/bin/sh
# 12-shutdown-cancel: logind cancels a shutdown (PrepareForShutdown(false)) while evictd is
# in its first group: the groups not yet started are left alone, the end time is recorded,
# and evictd takes the inhibitor lock again; a later poweroff still works.
#
# How a real cancel is made: logind sends PrepareForShutdown(false) when the delayed
# StartUnit(poweroff.target) fails. So logind's InhibitDelayMaxSec is cut to 4 s after evictd
# raised it (a later drop-in + SIGHUP), 'systemctl poweroff' is requested, poweroff.target is
# masked while logind waits, and at 4 s logind's StartUnit fails -> PrepareForShutdown(false).
# vm-mem: 1024M
# vm-timeout: 300
# vm-serial: yes: the cancel races logind's 4 s inhibitor delay
# vm-bins: evictd
# vm-packages: attr
# vm-add: tests/vm/systemd-scenarios/shutdown-lib.inc:/usr/lib/evictd-vm/shutdown-lib.inc
# vm-add: tools/deploy/evictd.service:/usr/lib/evictd-vm/evictd.service
# vm-add: tools/deploy/evictd.socket:/usr/lib/evictd-vm/evictd.socket
# vm-expect: evictd-started inhibitor-listed delay-cut pfs-seen logind-cancelled cancel-seen
# vm-expect: first-group-terminated later-group-spared relocked cancel-end-recorded
# vm-expect: shutdown-check-armed second-shutdown
#
# Groups: 0=20s, 2000000000=10s (total 30 s). Workloads: stub (0, ignores SIGTERM: group 1
# would last 20 s), crit (2000000000, exits).
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/shutdown-lib.inc
sw_setup
CUT=/etc/systemd/logind.conf.d/99-zz-evictd-vm-cancel.conf

sw_start stub 0 ignore
sw_start crit 2000000000 exit
sw_evictd --shutdown-grace-period-by-pod-priority=0=20,2000000000=10
if vm_wait_for 20 sw_inhibitors && vm_wait_for 10 sw_delay_is 30; then
    vm_pass inhibitor-listed
else
    vm_fail inhibitor-listed "inhibitors: $(systemd-inhibit --list --no-legend --no-pager | tr '\n' ';'), delay $(sw_delay_max_s) s"
fi

printf '[Login]\nInhibitDelayMaxSec=4\n' >$CUT
systemctl kill -s HUP systemd-logind.service
vm_wait_for 10 sw_delay_is 4 && vm_pass delay-cut || vm_fail delay-cut "InhibitDelayMaxUSec is $(sw_delay_max_s) s after the 4 s drop-in"

t_req=$(vm_uptime)
systemctl poweroff || vm_fail pfs-seen "systemctl poweroff failed"
if vm_wait_for 10 sh -c "journalctl -u evictd --no-pager | grep -q 'PrepareForShutdown(true)'"; then
    vm_pass pfs-seen
else
    vm_fail pfs-seen "evictd saw no PrepareForShutdown(true)"
fi
systemctl mask --runtime poweroff.target >/dev/null 2>&1 || vm_fail logind-cancelled "systemctl mask poweroff.target failed"
if vm_wait_for 15 sh -c "journalctl -u evictd --no-pager | grep -q 'PrepareForShutdown(false)'"; then
    vm_pass logind-cancelled
else
    vm_fail logind-cancelled "no PrepareForShutdown(false) within 15 s; logind: $(journalctl -u systemd-logind --no-pager | tail -n 5 | tr '\n' ' ')"
fi
vm_info "logind: $(journalctl -u systemd-logind --no-pager | grep -E 'timeout is reached|inhibitor-delayed' | tr '\n' ' ')"

if vm_wait_for 5 sh -c "journalctl -u evictd --no-pager | grep -q 'shutdown cancelled'"; then
    vm_pass cancel-seen
else
    vm_fail cancel-seen "evictd did not log the cancel"
fi
[ -n "$(sw_term_time stub)" ] && vm_pass first-group-terminated || vm_fail first-group-terminated "stub got no SIGTERM"
# Give a wrongly started next group time to show.
sleep 2
if [ -z "$(sw_term_time crit)" ] && systemctl -q is-active wl-crit.service; then
    vm_pass later-group-spared
else
    vm_fail later-group-spared "crit: TERM at '$(sw_term_time crit)', unit $(systemctl is-active wl-crit.service)"
fi
if vm_wait_for 10 sw_inhibitors; then
    vm_pass relocked
else
    vm_fail relocked "no evictd inhibitor after the cancel: $(systemd-inhibit --list --no-legend --no-pager | tr '\n' ';')"
fi
if st=$(sw_state_times); then
    set -- $st
    if awk -v s="$1" -v e="$2" 'BEGIN { exit !(s > 1700000000 && e >= s + 3 && e - s < 10) }'; then
        vm_pass cancel-end-recorded
    else
        vm_fail cancel-end-recorded "$STATE_FILE: $(cat $STATE_FILE)"
    fi
else
    vm_fail cancel-end-recorded "$STATE_FILE: $(cat $STATE_FILE 2>&1)"
fi
vm_info "poweroff requested at $t_req; term.log: $(tr '\n' ';' <$TERM_LOG)"
sw_dump_journal evictd

# Back to normal; stub's worker from the cancelled sequence would cgroup.kill it at 20 s:
# end it now so that the poweroff after this script does not wait for group 1.
systemctl unmask --runtime poweroff.target >/dev/null 2>&1
rm -f $CUT
systemctl kill -s HUP systemd-logind.service
systemctl kill -s KILL wl-stub.service
vm_wait_for 10 sw_delay_is 30 || vm_info "InhibitDelayMaxUSec is $(sw_delay_max_s) s after removing the 4 s drop-in"

cat >$W/check.sh <<'EOF'
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/shutdown-lib.inc
# The second shutdown ran on the lock taken after the cancel: crit got SIGTERM, then release.
pfs2=$(sw_journal_time evictd 'PrepareForShutdown\(true\)' 2)
rel=$(sw_journal_time evictd 'released the shutdown inhibitor lock')
c=$(sw_term_time crit)
if [ -n "$pfs2" ] && [ -n "$rel" ] && awk -v p="$pfs2" -v c="$c" -v r="$rel" 'BEGIN { exit !(c != "" && p <= c && c <= r) }'; then
    vm_pass second-shutdown
else
    vm_fail second-shutdown "second PrepareForShutdown at '$pfs2', crit TERM at '$c', release at '$rel'"
fi
EOF
sw_on_shutdown $W/check.sh
vm_done
