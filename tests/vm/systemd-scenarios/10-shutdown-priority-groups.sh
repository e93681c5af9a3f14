#!/bin/sh
# 10-shutdown-priority-groups: graceful node shutdown by pod priority against the real
# systemd-logind. evictd (a systemd service, standalone workloads with user.evictd.priority)
# holds a delay inhibitor, raises InhibitDelayMaxSec to the total grace, and on
# 'systemctl poweroff' terminates the groups lowest priority first: a group lasts its period
# when a pod ignores SIGTERM (then cgroup.kill), ends early when its pods exit, an empty group
# is skipped, critical pods go last; the lock is released and the poweroff goes on at once;
# start and end times are persisted.
# vm-mem: 1024M
# vm-timeout: 300
# vm-serial: yes: shutdown group periods checked to +-1 s
# vm-bins: evictd
# vm-packages: attr
# vm-add: tests/vm/systemd-scenarios/shutdown-lib.inc:/usr/lib/evictd-vm/shutdown-lib.inc
# vm-add: tools/deploy/evictd.service:/usr/lib/evictd-vm/evictd.service
# vm-add: tools/deploy/evictd.socket:/usr/lib/evictd-vm/evictd.socket
# vm-expect: evictd-started inhibitor-listed delay-raised dropin-written
# vm-expect: pfs-seen first-group-at-once group-order first-group-period stub-killed
# vm-expect: empty-group-skipped critical-last lock-released poweroff-after-release
# vm-expect: within-total-grace state-persisted
#
# Groups: 0=4s, 1000=3s, 100000=3s (empty), 2000000000=2s; total 12 s (> logind's default 5 s).
# Workloads (priority, on SIGTERM): neg (-100, exits: below the lowest group -> first group),
# low (0, exits), stub (500, ignores), mid (1000, exits 1 s later), high (99999, exits),
# crit (2000000000, exits), crit2 (2100000000, exits: above the highest -> last group).
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/shutdown-lib.inc
sw_setup

sw_start neg -100 exit
sw_start low 0 exit
sw_start stub 500 ignore
sw_start mid 1000 slow
sw_start high 99999 exit
sw_start crit 2000000000 exit
sw_start crit2 2100000000 exit
# When stub's cgroup empties (only cgroup.kill can do it), outside the workload root.
systemd-run --quiet --unit=wl-watch --service-type=exec /bin/sh -c \
    "while grep -qs 'populated 1' $WROOT/wl-stub.service/cgroup.events; do sleep 0.05; done;
     echo \"\$(cut -d' ' -f1 /proc/uptime) stub GONE\" >>$TERM_LOG"

sw_evictd --shutdown-grace-period-by-pod-priority=0=4,1000=3,100000=3,2000000000=2

if vm_wait_for 20 sw_inhibitors; then
    vm_pass inhibitor-listed
    vm_info "inhibitors: $(systemd-inhibit --list --no-legend --no-pager | tr -s ' ' | tr '\n' ';')"
else
    vm_fail inhibitor-listed "no delay inhibitor by evictd: $(systemd-inhibit --list --no-pager 2>&1 | tr '\n' ' ')"
fi
if vm_wait_for 10 sw_delay_is 12; then
    vm_pass delay-raised
else
    vm_fail delay-raised "InhibitDelayMaxUSec is $(sw_delay_max_s) s, not 12 s; evictd said: $(journalctl -u evictd --no-pager | grep -i inhibitdelay | tr '\n' ' ')"
fi
if grep -qx 'InhibitDelayMaxSec=12' $DROPIN 2>/dev/null; then
    vm_pass dropin-written
else
    vm_fail dropin-written "$DROPIN: $(cat $DROPIN 2>&1 | tr '\n' ' ')"
fi

cat >$W/check.sh <<'EOF'
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/shutdown-lib.inc
now=$(vm_uptime)
pfs=$(sw_journal_time evictd 'PrepareForShutdown\(true\)')
rel=$(sw_journal_time evictd 'released the shutdown inhibitor lock')
exec_at=$(sw_journal_time systemd-logind 'System is powering down')
vm_info "PrepareForShutdown at ${pfs:-?}, lock released at ${rel:-?}, logind went on at ${exec_at:-?}, checks at $now"
vm_info "term.log: $(tr '\n' ';' <$TERM_LOG)"
sw_dump_journal evictd
[ -n "$pfs" ] && vm_pass pfs-seen || vm_fail pfs-seen "no PrepareForShutdown(true) in evictd's journal: $(journalctl -u evictd --no-pager | tail -n 5 | tr '\n' ' ')"
pfs=${pfs:-0}

ok=1
for n in neg low stub; do
    t=$(sw_term_time $n)
    sw_between "$t" "$pfs" "$(awk -v p=$pfs 'BEGIN { print p + 2.0 }')" || { ok=0; vm_info "$n: TERM at '${t}'"; }
done
# 2 s: pods_refresh and the shells' traps under TCG take a few hundred ms.
[ $ok = 1 ] && vm_pass first-group-at-once || vm_fail first-group-at-once "the first group's pods were not all signalled within 2 s of PrepareForShutdown"

# Every TERM of a group before every TERM of the next.
g1=$(for n in neg low stub; do sw_term_time $n; done | sort -n)
g2=$(for n in mid high; do sw_term_time $n; done | sort -n)
g4=$(for n in crit crit2; do sw_term_time $n; done | sort -n)
g1_last=$(echo "$g1" | tail -n1); g2_first=$(echo "$g2" | head -n1); g2_last=$(echo "$g2" | tail -n1)
g4_first=$(echo "$g4" | head -n1)
if [ "$(echo "$g1" | grep -c .)" = 3 ] && [ "$(echo "$g2" | grep -c .)" = 2 ] && [ "$(echo "$g4" | grep -c .)" = 2 ] &&
   awk -v a="$g1_last" -v b="$g2_first" -v c="$g2_last" -v d="$g4_first" 'BEGIN { exit !(a <= b && c <= d) }'; then
    vm_pass group-order
else
    vm_fail group-order "group 1 TERMs: $(echo $g1), group 2: $(echo $g2), critical: $(echo $g4)"
fi

# stub ignores SIGTERM: group 1 lasts its 4 s, then stub's cgroup.kill.
d=$(awk -v a="$pfs" -v b="$g2_first" 'BEGIN { printf "%.2f", b - a }')
sw_between "$d" 3.8 5.0 && vm_pass first-group-period || vm_fail first-group-period "group 2 got SIGTERM $d s after PrepareForShutdown, not ~4 s"
gone=$(sw_term_time stub GONE)
dg=$(awk -v a="$pfs" -v b="$gone" 'BEGIN { printf "%.2f", b - a }')
if [ -n "$gone" ] && sw_between "$dg" 3.8 5.5 && [ -z "$(sw_term_time stub EXIT)" ]; then
    vm_pass stub-killed
else
    vm_fail stub-killed "stub (ignores SIGTERM) emptied at '${gone}' ($dg s after PrepareForShutdown), not ~4 s"
fi

# mid exits 1 s after SIGTERM and high at once: group 2 ends after ~1 s, the empty
# 100000 group adds nothing, so the critical group starts ~1 s after group 2 (not 3 s + 3 s).
d=$(awk -v a="$g2_first" -v b="$g4_first" 'BEGIN { printf "%.2f", b - a }')
sw_between "$d" 0.9 2.5 && vm_pass empty-group-skipped || vm_fail empty-group-skipped "critical pods got SIGTERM $d s after group 2, not ~1 s"

ok=1
for n in neg low stub mid high; do
    awk -v a="$(sw_term_time $n)" -v b="$g4_first" 'BEGIN { exit !(a != "" && a <= b) }' || ok=0
done
[ $ok = 1 ] && vm_pass critical-last || vm_fail critical-last "a critical pod got SIGTERM before a regular one: $(tr '\n' ';' <$TERM_LOG)"

d=$(awk -v a="$pfs" -v b="$rel" 'BEGIN { printf "%.2f", b - a }')
if [ -n "$rel" ] && sw_between "$d" 0 13 && awk -v a="$g4_first" -v b="$rel" 'BEGIN { exit !(a <= b) }'; then
    vm_pass lock-released
else
    vm_fail lock-released "lock released at '${rel}' ($d s after PrepareForShutdown)"
fi
timeout_line=$(journalctl -b -u systemd-logind --no-pager | grep 'inhibitor timeout is reached')
d=$(awk -v a="$rel" -v b="$exec_at" 'BEGIN { printf "%.2f", b - a }')
if [ -n "$exec_at" ] && [ -n "$rel" ] && sw_between "$d" -0.05 1.0 && [ -z "$timeout_line" ]; then
    vm_pass poweroff-after-release
else
    vm_fail poweroff-after-release "logind went on at '${exec_at}', $d s after the release; ${timeout_line}"
fi
d=$(awk -v a="$pfs" -v b="$now" 'BEGIN { printf "%.2f", b - a }')
sw_between "$d" 0 15 && vm_pass within-total-grace || vm_fail within-total-grace "units stopped $d s after PrepareForShutdown (total grace 12 s)"

if st=$(sw_state_times); then
    set -- $st
    span=$(awk -v s="$1" -v e="$2" 'BEGIN { printf "%.2f", e - s }')
    want=$(awk -v a="$pfs" -v b="$rel" 'BEGIN { printf "%.2f", b - a }')
    if awk -v s="$1" -v e="$2" 'BEGIN { exit !(s > 1e9 && e >= s) }' && sw_between "$span" "$(awk -v w=$want 'BEGIN { print w - 1 }')" "$(awk -v w=$want 'BEGIN { print w + 1 }')"; then
        vm_pass state-persisted
    else
        vm_fail state-persisted "$STATE_FILE: $(cat $STATE_FILE) (span $span s, sequence took $want s)"
    fi
    vm_info "$STATE_FILE: $(cat $STATE_FILE)"
else
    vm_fail state-persisted "$STATE_FILE: $(cat $STATE_FILE 2>&1)"
fi
EOF
sw_on_shutdown $W/check.sh
vm_done
