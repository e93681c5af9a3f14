#!/bin/sh
# 05-bpf-dataplane: the BPF data-plane tests (tests/bpf/test_bpf_dataplane.c, as
# tests/bpf/run-in-guest.sh runs them) on the guest kernel: an ext4 disk for the page-cache and
# inode tests, xfs loaded (module BTF). Twice: as booted, then with MGLRU flipped
# (/sys/kernel/mm/lru_gen/enabled; Debian's 6.1 boots with it off, 6.12 on), so every kernel
# covers both LRUs (test_page_cache_pages_counted asserts activation on classic LRU only).
# A skipped test is reported (INFO) and is not a failure; a 'not ok' is.
# vm-mem: 1024M
# vm-timeout: 600
# vm-disk: 1024M ext4
# vm-modules: xfs
# vm-bins: tests-bpf/test_bpf_dataplane
# vm-add: /usr/sbin/bpftool:/usr/sbin/bpftool
# vm-expect: disk-mounted bpf-dataplane bpf-dataplane-lru-flipped
. /usr/lib/evictd-vm/vm-lib.sh

LRU=/sys/kernel/mm/lru_gen/enabled
mkdir -p /mnt/disk
if vm_wait_for 10 test -b /dev/vda && mount -t ext4 /dev/vda /mnt/disk; then
    vm_pass disk-mounted
else
    vm_fail disk-mounted "cannot mount /dev/vda"
fi

# run MARKER: the test binary once; PASS when it exits 0 with no 'not ok' line.
run() {
    _log=/tmp/$1.tap
    EVICTD_TEST_DIR=/mnt/disk CMOCKA_MESSAGE_OUTPUT=TAP /usr/bin/tests-bpf/test_bpf_dataplane >"$_log" 2>&1
    _rc=$?
    sed "s/^/[$1] /" "$_log"
    _bad=$(grep '^not ok' "$_log" | grep -v '# SKIP' | tr '\n' ' ')
    _skip=$(grep -c '# SKIP' "$_log")
    _ok=$(grep -c '^ok ' "$_log")
    vm_info "$1: lru_gen/enabled $(cat $LRU 2>/dev/null || echo absent), $_ok ok, $_skip skipped, exit $_rc"
    if [ "$_rc" = 0 ] && [ -z "$_bad" ]; then vm_pass "$1"; else vm_fail "$1" "exit $_rc: $_bad"; fi
}

run bpf-dataplane
if [ -w $LRU ]; then
    if [ "$(cat $LRU)" = 0x0000 ]; then echo y >$LRU; else echo n >$LRU; fi
    run bpf-dataplane-lru-flipped
else
    vm_fail bpf-dataplane-lru-flipped "no $LRU (a kernel without CONFIG_LRU_GEN): one LRU only"
fi
exit 0
