#!/bin/sh
# 14-shutdown-out-of-service: --taint-out-of-service-on-shutdown against the real logind and
# systemd, with the Kubernetes API stand-in (tests/cli/kube-standin.py) in the guest recording
# every request. Debian 12's systemd (252) sends no PrepareForShutdownWithMetadata, so evictd
# releases its inhibitor first and asks systemd which job logind queued: 'systemctl poweroff'
# queues poweroff.target, so the taint node.kubernetes.io/out-of-service=nodeshutdown:NoExecute
# is requested, after the release and after every pod is gone (there are none), and its
# record is written first. 15-shutdown-reboot-no-out-of-service.sh is the same with
# 'systemctl reboot': no taint.
# vm-mem: 1024M
# vm-timeout: 400
# vm-bins: evictd
# vm-packages: attr,python3,openssl
# vm-add: tests/vm/systemd-scenarios/shutdown-lib.inc:/usr/lib/evictd-vm/shutdown-lib.inc
# vm-add: tools/deploy/evictd.service:/usr/lib/evictd-vm/evictd.service
# vm-add: tools/deploy/evictd.socket:/usr/lib/evictd-vm/evictd.socket
# vm-add: tests/cli/kube-standin.py:/usr/lib/evictd-vm/kube-standin.py
# vm-expect: standin-started shutdown-check-armed evictd-started inhibitor-listed watching
# vm-expect: pfs-seen kind-from-job taint-requested taint-after-release record-written
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
rel=$(sw_journal_time evictd 'released the shutdown inhibitor lock')
kind=$(sw_journal_time evictd 'systemd has a power-off/halt job queued')
taint=$(sw_journal_time evictd 'tainted node.kubernetes.io/out-of-service')
vm_info "PrepareForShutdown at ${pfs:-?}, released at ${rel:-?}, kind at ${kind:-?}, tainted at ${taint:-?}"
vm_info "requests: $(grep -v '"GET"' $K/requests.jsonl | tr '\n' ' ' | cut -c1-1500)"
[ -n "$pfs" ] && vm_pass pfs-seen || vm_fail pfs-seen "no PrepareForShutdown(true)"
[ -n "$kind" ] && vm_pass kind-from-job || vm_fail kind-from-job "evictd did not find logind's poweroff.target job"
if grep '"method": "PATCH"' $K/requests.jsonl | grep '"path": "/api/v1/nodes/vm-node"' | grep -q 'node.kubernetes.io/out-of-service'; then
    vm_pass taint-requested
else
    vm_fail taint-requested "no out-of-service taint in the node PATCHes"
fi
if [ -n "$rel" ] && [ -n "$taint" ] && awk -v a="$rel" -v b="$taint" 'BEGIN { exit !(a <= b) }'; then
    vm_pass taint-after-release
else
    vm_fail taint-after-release "released at '$rel', tainted at '$taint'"
fi
if grep -q '"node":"vm-node"' $STATE_DIR/out-of-service-taint 2>/dev/null; then
    vm_pass record-written
else
    vm_fail record-written "$(cat $STATE_DIR/out-of-service-taint 2>&1)"
fi
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
vm_done
