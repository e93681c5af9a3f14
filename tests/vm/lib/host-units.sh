# host-units.sh - systemd guest helpers for evictd on a plain host's units (issue 23):
#
#   . /usr/lib/evictd-vm/host-units.sh   (scenarios: # vm-add: tests/vm/lib/host-units.sh:/usr/lib/evictd-vm/host-units.sh)
#
#   hu_unit NAME SLICE [KEY=VALUE...] -- CMD...
#                           write /run/systemd/system/NAME.service (Type=exec, Slice=SLICE, each
#                           KEY=VALUE a [Service] line) running CMD; daemon-reload; not started
#   hu_evictd ARGS...       run evictd as evictd.service (--no-bpf, its own state dir, control
#                           socket $HU_SOCK, metrics off) with ARGS; 0 when it is active
#   hu_memory_available     evictd's memory.available now, in bytes (from --once --output json)
#   hu_current CGROUP       memory.current of a cgroup dir, in MiB (0 when gone)
#   hu_populated CGROUP     true while the cgroup has a process
#   hu_ms                   monotonic milliseconds (for "answered within" checks)
HU_SOCK=/run/evictd-hu.sock
mkdir -p /run/systemd/system /var/lib/evictd

hu_unit() {
    _name=$1 _slice=$2; shift 2
    {
        echo "[Service]"
        echo "Type=exec"
        echo "Slice=$_slice"
        while [ $# -gt 0 ] && [ "$1" != -- ]; do echo "$1"; shift; done
        shift
        echo "ExecStart=$*"
    } >/run/systemd/system/$_name.service
    systemctl daemon-reload
}

hu_evictd() {
    cat >/run/systemd/system/evictd.service <<UNIT
[Unit]
Description=evictd (host units scenario)
[Service]
Type=exec
OOMScoreAdjust=-1000
ExecStart=/usr/bin/evictd --no-bpf --state-dir=/var/lib/evictd --metrics-address=off --control-socket=$HU_SOCK $*
UNIT
    systemctl daemon-reload
    systemctl start evictd.service && vm_wait_for 20 test -S $HU_SOCK
}

hu_memory_available() {
    /usr/bin/evictd --no-bpf --once --dry-run --output json --metrics-address=off --event-log=off \
        --state-dir=/run/evictd-hu-once --oom-guard=off --workload-root=/sys/fs/cgroup/system.slice 2>/dev/null |
        tr -d '\n ' | grep -o '"memory.available":{[^}]*}' | grep -o '"available":[0-9]*' | head -n1 | cut -d: -f2
}

hu_current() { if [ -r "$1/memory.current" ]; then echo $(( $(cat "$1/memory.current") >> 20 )); else echo 0; fi; }
hu_populated() { grep -q '^populated 1' "$1/cgroup.events" 2>/dev/null; }
hu_ms() { echo $(( $(cut -d' ' -f1 /proc/uptime | tr -d .) * 10 )); }
