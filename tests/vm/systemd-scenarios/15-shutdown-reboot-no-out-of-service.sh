#!/bin/sh
# 15-shutdown-reboot-no-out-of-service: 14-shutdown-out-of-service with 'systemctl reboot'
# instead of the harness's poweroff: logind queues reboot.target once evictd released its
# inhibitor, evictd finds that job (ListJobs) and requests no out-of-service taint; the
# graceful shutdown itself (the shutdown taint, its event) still happens. The scenario asks
# for the reboot as it ends, held 3 s by a second delay inhibitor (the harness's own poweroff
# then finds a shutdown in progress and is refused); the checks run while the reboot stops
# units, then power the guest off (systemctl poweroff --force --force: reboot(2)), since this
# harness wants a power-off.
# vm-mem: 1024M
# vm-timeout: 400
# vm-bins: evictd
# vm-packages: attr,python3,openssl
# vm-add: tests/vm/systemd-scenarios/shutdown-lib.inc:/usr/lib/evictd-vm/shutdown-lib.inc
# vm-add: tools/deploy/evictd.service:/usr/lib/evictd-vm/evictd.service
# vm-add: tools/deploy/evictd.socket:/usr/lib/evictd-vm/evictd.socket
# vm-add: tests/cli/kube-standin.py:/usr/lib/evictd-vm/kube-standin.py
# vm-expect: standin-started shutdown-check-armed evictd-started inhibitor-listed watching
# vm-expect: reboot-requested pfs-seen kind-from-job no-taint-requested shutdown-taint-requested
# vm-expect: no-record
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/shutdown-lib.inc
sw_setup
K=$W/kube
NODE=vm-node
mkdir -p $K
python3 /usr/lib/evictd-vm/kube-standin.py --make-certs $K/certs ||
    vm_fail standin-started "openssl could not make the stand-in's certificates"
echo token-vm >$K/token
echo '[]' >$K/faults.json
# The Node exists: the stand-in, as the API server, 404s an unknown one.
mkdir -p $K/fixtures
echo "{\"metadata\": {\"name\": \"$NODE\"}}" >$K/fixtures/node-$NODE.json
systemd-run --quiet --unit=kube-standin --service-type=exec python3 /usr/lib/evictd-vm/kube-standin.py \
    --cert $K/certs/server.crt --key $K/certs/server.key --port-file $K/port --log $K/requests.jsonl \
    --token-file $K/token --faults $K/faults.json --fixtures $K/fixtures --max-seconds 3000
if vm_wait_for 30 test -s $K/port; then vm_pass standin-started; else vm_fail standin-started "no port file"; fi
port=$(cat $K/port)

# Stop order at the power-off (the reverse of After=): evictd, then the checks, then the
# stand-in, so the checks see every request evictd made.
cat >/run/systemd/system/evictd-vm-oos-check.service <<UNIT
[Unit]
Description=evictd VM out-of-service checks
After=systemd-logind.service dbus.service kube-standin.service
Before=evictd.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true
ExecStop=/bin/sh $W/check.sh
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
TimeoutStopSec=60
UNIT
cat >/run/systemd/system/evictd.service <<UNIT
[Unit]
Description=evictd (out-of-service test)
Wants=dbus.service
After=dbus.service systemd-logind.service kube-standin.service evictd-vm-oos-check.service

[Service]
Type=exec
ExecStart=/usr/bin/evictd --no-bpf --eviction-hard=memory.available<1Mi --state-dir=$STATE_DIR --node-name=$NODE --kube-api-server=https://127.0.0.1:$port --kube-ca-file=$K/certs/ca.crt --kube-token-file=$K/token --shutdown-grace-period=4s --shutdown-grace-period-critical-pods=1s --taint-out-of-service-on-shutdown --metrics-address=off
UNIT
cat >$W/check.sh <<'CHECK'
. /usr/lib/evictd-vm/vm-lib.sh
. /usr/lib/evictd-vm/shutdown-lib.inc
K=$W/kube
sw_dump_journal evictd
pfs=$(sw_journal_time evictd 'PrepareForShutdown\(true\)')
kind=$(sw_journal_time evictd 'systemd has a reboot job queued')
vm_info "PrepareForShutdown at ${pfs:-?}, reboot job seen at ${kind:-?}"
vm_info "requests: $(grep -v '"GET"' $K/requests.jsonl | tr '\n' ' ' | cut -c1-1500)"
[ -n "$pfs" ] && vm_pass pfs-seen || vm_fail pfs-seen "no PrepareForShutdown(true)"
[ -n "$kind" ] && vm_pass kind-from-job || vm_fail kind-from-job "evictd did not find logind's reboot.target job"
if grep '"method": "PATCH"' $K/requests.jsonl | grep -q 'node.kubernetes.io/out-of-service'; then
    vm_fail no-taint-requested "an out-of-service taint was requested for a reboot"
else
    vm_pass no-taint-requested
fi
if grep '"method": "PATCH"' $K/requests.jsonl | grep -q 'evictd.io/shutdown'; then
    vm_pass shutdown-taint-requested
else
    vm_fail shutdown-taint-requested "no evictd.io/shutdown taint: the graceful shutdown did not report"
fi
if [ -e $STATE_DIR/out-of-service-taint ]; then
    vm_fail no-record "$STATE_DIR/out-of-service-taint exists: $(cat $STATE_DIR/out-of-service-taint)"
else
    vm_pass no-record
fi
echo "EVICTD-VM: INFO powering off instead of rebooting (the harness wants a power-off)"
systemctl poweroff --force --force
CHECK
sw_harden kube
systemctl daemon-reload
vm_check shutdown-check-armed systemctl start evictd-vm-oos-check.service
if systemctl start evictd.service; then vm_pass evictd-started; else
    vm_fail evictd-started "$(journalctl -u evictd --no-pager | tail -n 5 | tr '\n' ' ')"
fi
if vm_wait_for 20 sw_inhibitors; then vm_pass inhibitor-listed; else
    vm_fail inhibitor-listed "$(systemd-inhibit --list --no-pager 2>&1 | tr '\n' ' ')"
fi
if vm_wait_for 60 grep -q 'watch=true' $K/requests.jsonl; then vm_pass watching; else
    vm_fail watching "no pod watch: $(tail -n 3 $K/requests.jsonl | tr '\n' ' ')"
fi
# The reboot, held by a second delay inhibitor for 3 s so that this script can end first:
# the harness's own poweroff then finds the reboot in progress and is refused.
systemd-inhibit --what=shutdown --mode=delay --who=vm-test --why="let the scenario end" sleep 3 &
sleep 0.5
vm_check reboot-requested systemctl reboot
vm_done
