#!/bin/sh
# 00-logind-smoke: a systemd guest with logind on the system bus, a working
# delay inhibitor, and an orderly 'systemctl poweroff' that honours it.
# vm-mem: 1024M
# vm-timeout: 240
# vm-expect: systemd-pid1 multi-user-reached logind-active login1-busctl
# vm-expect: controllers-enabled bpffs-mounted inhibit-list
# vm-expect: prepare-for-shutdown poweroff-stops-units
#
# Run by evictd-vm-scenario.service (after multi-user.target, logind and dbus)
# with stdout on /dev/ttyS0; tests/vm/run.sh's wrapper runs 'systemctl poweroff'
# when this script returns.  The last two markers are printed during that
# shutdown, by the ExecStop= of a probe unit this script starts.
. /usr/lib/evictd-vm/vm-lib.sh
export SYSTEMD_COLORS=0 SYSTEMD_PAGER=cat
W=/run/evictd-vm
mkdir -p $W

if [ "$(cat /proc/1/comm)" = systemd ]; then
    vm_pass systemd-pid1
else
    vm_fail systemd-pid1 "pid 1 is $(cat /proc/1/comm)"
fi
st=$(systemctl is-active multi-user.target 2>&1)
if [ "$st" = active ]; then
    vm_pass multi-user-reached
else
    vm_fail multi-user-reached "multi-user.target is '$st'; failed units: $(systemctl --failed --no-legend --plain | tr '\n' ' ')"
fi
vm_info "systemd $(systemctl --version | head -n1 | cut -d' ' -f2), system state '$(systemctl is-system-running 2>&1)', failed units: '$(systemctl --failed --no-legend --plain | tr '\n' ' ')'"
vm_check logind-active systemctl is-active systemd-logind.service

# org.freedesktop.login1 answers on the system bus
delay=$(busctl --system get-property org.freedesktop.login1 /org/freedesktop/login1 \
            org.freedesktop.login1.Manager InhibitDelayMaxUSec 2>&1)
case $delay in
    "t "[0-9]*) vm_pass login1-busctl; vm_info "login1 InhibitDelayMaxUSec: ${delay#t }" ;;
    *) vm_fail login1-busctl "busctl get-property login1 InhibitDelayMaxUSec said: $delay" ;;
esac

sc=$(cat /sys/fs/cgroup/cgroup.subtree_control)
missing=""
for c in memory pids; do
    case " $sc " in *" $c "*) ;; *) missing="$missing $c" ;; esac
done
if [ -z "$missing" ]; then
    vm_pass controllers-enabled
    vm_info "systemd enabled in the root cgroup.subtree_control: '$sc'"
else
    vm_fail controllers-enabled "root cgroup.subtree_control='$sc' lacks:$missing"
fi
if grep -q ' /sys/fs/bpf bpf ' /proc/mounts; then
    vm_pass bpffs-mounted
else
    vm_fail bpffs-mounted "systemd did not mount bpffs on /sys/fs/bpf"
fi

# A delay inhibitor held by a process that records PrepareForShutdown signals.
# (a transient unit, so it outlives this oneshot service)
systemd-run --quiet --unit=evictd-vm-inhibitor --service-type=exec \
    -p StandardOutput=file:$W/pfs.log -p StandardError=file:$W/pfs.err \
    systemd-inhibit --what=shutdown --mode=delay --who=evictd-vm-smoke --why="VM smoke test" \
    busctl --system monitor --match \
    "type='signal',interface='org.freedesktop.login1.Manager',member='PrepareForShutdown'" \
    || vm_fail inhibit-list "systemd-run of the inhibitor failed"
if vm_wait_for 20 sh -c "systemd-inhibit --list --no-legend | grep evictd-vm-smoke | grep -q delay"; then
    vm_pass inhibit-list
    vm_info "inhibitors: $(systemd-inhibit --list --no-legend | tr -s ' ' | tr '\n' ';')"
else
    vm_fail inhibit-list "no delay inhibitor by evictd-vm-smoke: $(systemd-inhibit --list 2>&1 | tr '\n' ' ') $(cat $W/pfs.err 2>/dev/null)"
fi

# A probe whose ExecStop runs during the shutdown that follows this script:
# it reports whether logind announced PrepareForShutdown first.
cat >$W/probe-stop.sh <<'EOF'
#!/bin/sh
W=/run/evictd-vm
now=$(cut -d' ' -f1 /proc/uptime)
req=$(cat $W/poweroff-requested 2>/dev/null || echo 0)
if grep -q 'PrepareForShutdown' $W/pfs.log 2>/dev/null; then
    echo "EVICTD-VM: PASS prepare-for-shutdown"
else
    echo "EVICTD-VM: FAIL prepare-for-shutdown: no PrepareForShutdown signal recorded: $(tail -c 300 $W/pfs.log $W/pfs.err 2>&1 | tr '\n' ' ')"
fi
echo "EVICTD-VM: INFO shutdown reached the probe $(awk -v a="$req" -v b="$now" 'BEGIN { printf "%.2f", b - a }') s after the poweroff request (delay inhibitor held)"
echo "EVICTD-VM: PASS poweroff-stops-units"
EOF
mkdir -p /run/systemd/system
cat >/run/systemd/system/evictd-vm-shutdown-probe.service <<EOF
[Unit]
Description=evictd VM shutdown probe
After=systemd-logind.service dbus.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true
ExecStop=/bin/sh $W/probe-stop.sh
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
EOF
systemctl daemon-reload
vm_check shutdown-probe-started systemctl start evictd-vm-shutdown-probe.service

vm_uptime >$W/poweroff-requested
vm_done
