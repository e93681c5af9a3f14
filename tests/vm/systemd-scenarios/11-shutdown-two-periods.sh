#!/bin/sh
# 11-shutdown-two-periods: the kubelet's original form, shutdownGracePeriod=6s and
# shutdownGracePeriodCriticalPods=2s: regular pods get 6 - 2 = 4 s, then critical pods
# (priority >= 2000000000, as the kubelet's migrateConfig groups them) get the last 2 s.
# Also: the start/end times of an earlier shutdown (a kubelet-format state file, as after a
# reboot) are loaded and reported at start, and replaced by this shutdown's.
# vm-mem: 1024M
# vm-timeout: 300
# vm-serial: yes: shutdown periods checked to +-1 s
# vm-bins: evictd
# vm-packages: attr
# vm-add: tests/vm/systemd-scenarios/shutdown-lib.inc:/usr/lib/evictd-vm/shutdown-lib.inc
# vm-add: tools/deploy/evictd.service:/usr/lib/evictd-vm/evictd.service
# vm-add: tools/deploy/evictd.socket:/usr/lib/evictd-vm/evictd.socket
# vm-expect: evictd-started state-loaded inhibitor-listed delay-raised
# vm-expect: pfs-seen regular-first regular-period critical-last lock-released
# vm-expect: poweroff-after-release state-persisted
#
# Workloads (priority, on SIGTERM): low (0, exits), neg (-5, exits), usermax (1000000000, the
# highest user-definable priority: still a regular pod; ignores, so the regular group lasts its
# 4 s), crit (2000000000, exits).
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/shutdown-lib.inc
sw_setup

# The last shutdown, as the kubelet writes it (RFC 3339 with an offset and a fraction).
mkdir -p $STATE_DIR
printf '{"startTime":"2026-01-02T03:04:05.5+01:00","endTime":"2026-01-02T02:04:35Z"}' >$STATE_FILE

sw_start low 0 exit
sw_start neg -5 exit
sw_start usermax 1000000000 ignore
sw_start crit 2000000000 exit

sw_evictd --shutdown-grace-period=6s --shutdown-grace-period-critical-pods=2s

# 2026-01-02T03:04:05.5+01:00 = 02:04:05.5Z
if vm_wait_for 10 sh -c "journalctl -u evictd --no-pager | grep -q 'started 2026-01-02T02:04:05.5Z, ended 2026-01-02T02:04:35Z'"; then
    vm_pass state-loaded
else
    vm_fail state-loaded "evictd did not report the persisted times: $(journalctl -u evictd --no-pager | grep -i 'last graceful' | tr '\n' ' ')"
fi
if vm_wait_for 20 sw_inhibitors; then
    vm_pass inhibitor-listed
else
    vm_fail inhibitor-listed "no delay inhibitor by evictd: $(systemd-inhibit --list --no-pager 2>&1 | tr '\n' ' ')"
fi
vm_wait_for 10 sw_delay_is 6 && vm_pass delay-raised || vm_fail delay-raised "InhibitDelayMaxUSec is $(sw_delay_max_s) s, not 6 s"

cat >$W/check.sh <<'EOF'
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/shutdown-lib.inc
pfs=$(sw_journal_time evictd 'PrepareForShutdown\(true\)')
rel=$(sw_journal_time evictd 'released the shutdown inhibitor lock')
exec_at=$(sw_journal_time systemd-logind 'System is powering down')
vm_info "PrepareForShutdown at ${pfs:-?}, lock released at ${rel:-?}, logind went on at ${exec_at:-?}"
vm_info "term.log: $(tr '\n' ';' <$TERM_LOG)"
sw_dump_journal evictd
[ -n "$pfs" ] && vm_pass pfs-seen || vm_fail pfs-seen "no PrepareForShutdown(true) in evictd's journal"
pfs=${pfs:-0}

ok=1
for n in low neg usermax; do
    sw_between "$(sw_term_time $n)" "$pfs" "$(awk -v p=$pfs 'BEGIN { print p + 2.0 }')" || ok=0
done
[ $ok = 1 ] && vm_pass regular-first || vm_fail regular-first "regular pods not signalled within 2 s of PrepareForShutdown"
c=$(sw_term_time crit)
d=$(awk -v a="$pfs" -v b="$c" 'BEGIN { printf "%.2f", b - a }')
sw_between "$d" 3.8 5.0 && vm_pass regular-period || vm_fail regular-period "crit got SIGTERM $d s after PrepareForShutdown, not ~4 s (6s - 2s)"
ok=1
for n in low neg usermax; do
    awk -v a="$(sw_term_time $n)" -v b="$c" 'BEGIN { exit !(a != "" && b != "" && a <= b) }' || ok=0
done
[ $ok = 1 ] && vm_pass critical-last || vm_fail critical-last "$(tr '\n' ';' <$TERM_LOG)"
d=$(awk -v a="$pfs" -v b="$rel" 'BEGIN { printf "%.2f", b - a }')
if [ -n "$rel" ] && sw_between "$d" 3.8 6.5; then
    vm_pass lock-released
else
    vm_fail lock-released "lock released at '${rel}' ($d s after PrepareForShutdown; total 6 s)"
fi
d=$(awk -v a="$rel" -v b="$exec_at" 'BEGIN { printf "%.2f", b - a }')
if [ -n "$exec_at" ] && [ -n "$rel" ] && sw_between "$d" -0.05 1.0 &&
   ! journalctl -b -u systemd-logind --no-pager | grep -q 'inhibitor timeout is reached'; then
    vm_pass poweroff-after-release
else
    vm_fail poweroff-after-release "logind went on at '${exec_at}', $d s after the release"
fi
if st=$(sw_state_times); then
    set -- $st
    # This shutdown's times replaced the ones of January.
    if awk -v s="$1" -v e="$2" 'BEGIN { exit !(s > 1767319475 && e >= s && e - s < 8) }'; then
        vm_pass state-persisted
    else
        vm_fail state-persisted "$STATE_FILE: $(cat $STATE_FILE)"
    fi
else
    vm_fail state-persisted "$STATE_FILE: $(cat $STATE_FILE 2>&1)"
fi
EOF
sw_on_shutdown $W/check.sh
vm_done
