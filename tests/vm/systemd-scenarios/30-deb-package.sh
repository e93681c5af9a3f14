#!/bin/sh
# 30-deb-package: the Debian package (debian/, `make deb`) on a Debian 12 systemd guest, as an
# operator installs it: dpkg -i brings the service up enabled and active with the packaged
# unit, evictctl status answers on its socket, the state directory and the conffile are
# there; apt-get purge stops it and leaves nothing: no file of the package, no
# /var/lib/evictd or /var/log/evictd, no enablement symlink, no pinned maps, no process.
# The root has the package's run-time Depends (and apt) as extra packages; build the .deb
# first (make deb; tests/cli/test_deb.sh does in make test).
# vm-mem: 1024M
# vm-timeout: 300
# vm-packages: apt,libbpf1,libyaml-0-2,libjson-c5,libmicrohttpd12,libcurl4
# vm-add: build/evictd.deb:/root/evictd.deb
# vm-expect: deb-installed unit-enabled service-active evictctl-status version-matches
# vm-expect: state-dir conffile purged no-files-left state-gone nothing-running
. /usr/lib/evictd-vm/vm-lib.sh
export SYSTEMD_COLORS=0 SYSTEMD_PAGER=cat
W=/run/evictd-vm
mkdir -p $W

# ---- install ------------------------------------------------------------------------------
if out=$(dpkg -i /root/evictd.deb 2>&1); then
    vm_pass deb-installed
else
    vm_fail deb-installed "dpkg -i: $(echo "$out" | tail -n 5 | tr '\n' ' ')"
fi
st=$(systemctl is-enabled evictd.service 2>&1)
[ "$st" = enabled ] && vm_pass unit-enabled || vm_fail unit-enabled "systemctl is-enabled evictd: $st"
if vm_wait_for 30 systemctl is-active --quiet evictd.service; then
    vm_pass service-active
    vm_info "evictd.service: $(systemctl show -p MainPID -p ExecMainStartTimestampMonotonic -p FragmentPath evictd.service | tr '\n' ' ')"
else
    vm_fail service-active "evictd.service is $(systemctl is-active evictd.service): $(journalctl -u evictd --no-pager -n 8 | tr '\n' ' ')"
fi
if out=$(evictctl status 2>&1) && echo "$out" | grep -q '^evictd '; then
    vm_pass evictctl-status
    vm_info "evictctl status: $(echo "$out" | head -n 3 | tr '\n' ' ')"
else
    vm_fail evictctl-status "evictctl status said: $(echo "$out" | head -n 5 | tr '\n' ' ')"
fi
upstream=$(dpkg-query -W -f '${Version}' evictd | sed 's/-[^-]*$//')
v=$(evictd --version 2>&1)
[ "$v" = "evictd $upstream" ] && vm_pass version-matches || vm_fail version-matches "evictd --version '$v', package $upstream"
m=$(stat -c '%a %U' /var/lib/evictd 2>&1)
[ "$m" = "700 root" ] && vm_pass state-dir || vm_fail state-dir "/var/lib/evictd: $m"
if [ -f /etc/evictd/config.yaml ] && dpkg-query -W -f '${Conffiles}' evictd | grep -q ' /etc/evictd/config.yaml '; then
    vm_pass conffile
else
    vm_fail conffile "conffiles: $(dpkg-query -W -f '${Conffiles}' evictd | tr '\n' ' ')"
fi

# ---- purge --------------------------------------------------------------------------------
# The package's own files (not the directories it shares with others).
dpkg -L evictd | while read -r f; do [ -d "$f" ] || echo "$f"; done >$W/files
vm_info "package files: $(tr '\n' ' ' <$W/files)"
if out=$(apt-get purge -y evictd 2>&1); then
    vm_pass purged
else
    vm_fail purged "apt-get purge: $(echo "$out" | tail -n 5 | tr '\n' ' ')"
fi
left=""
while read -r f; do [ -e "$f" ] && left="$left $f"; done <$W/files
# Anything named evictd but the harness's own files (all named evictd-vm: its units, drop-ins,
# /usr/lib/evictd-vm, /run/evictd-vm): enablement symlinks, deb-systemd-helper state, ...
found=$(find /etc /lib /usr /var /run /sys/fs/bpf -xdev -name '*evictd*' 2>/dev/null |
    grep -v evictd-vm | tr '\n' ' ')
if [ -z "$left" ] && [ -z "$found" ]; then
    vm_pass no-files-left
else
    vm_fail no-files-left "left:$left; named evictd: $found"
fi
if [ ! -e /var/lib/evictd ] && [ ! -e /var/log/evictd ] && [ ! -e /etc/evictd ] && ! dpkg -s evictd >/dev/null 2>&1; then
    vm_pass state-gone
else
    vm_fail state-gone "$(ls -ld /var/lib/evictd /var/log/evictd /etc/evictd 2>&1 | tr '\n' ' ') dpkg -s: $(dpkg -s evictd 2>&1 | grep Status)"
fi
st=$(systemctl is-active evictd.service 2>&1)
if [ "$st" != active ] && ! pidof evictd >/dev/null && [ ! -e /sys/fs/bpf/evictd ]; then
    vm_pass nothing-running
else
    vm_fail nothing-running "evictd.service $st, pids '$(pidof evictd)', $(ls /sys/fs/bpf/evictd 2>&1 | tr '\n' ' ')"
fi
vm_done
