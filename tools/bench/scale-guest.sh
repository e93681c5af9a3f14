#!/bin/sh
# scale-guest.sh - the guest side of tools/bench/scale.sh (runs as /scenario.sh in the busybox
# initramfs): scale-bench eval and kill on a real cgroup v2 tree with the memory and pids
# controllers (which the host's hybrid v2 tree lacks). Settings in /etc/scale.conf.
. /etc/scale.conf
. /usr/lib/evictd-vm/vm-lib.sh
echo "scale-guest: kernel $(uname -r), $(nproc) CPUs, controllers $(cat /sys/fs/cgroup/cgroup.subtree_control)"
case " $GUEST_PARTS " in *" eval "*)
	scale-bench eval --pods $PODS --iterations $ITERATIONS 2>&1 | sed 's/^/guest: /' ;;
esac
case " $GUEST_PARTS " in *" kill "*)
	scale-bench kill --procs $PROCS --repeat $REPEAT 2>&1 | grep -v ' info: ' | sed 's/^/guest: /'
	scale-bench kill --procs $PROCS --repeat $REPEAT --child /usr/bin/racekit 2>&1 | grep -v ' info: ' | sed 's/^/guest: /' ;;
esac
case " $GUEST_PARTS " in *" memkill "*)
	scale-bench memkill --mib 700 --procs 1 --repeat $MEMKILL_REPEAT 2>&1 | grep -v ' info: ' | sed 's/^/guest: /'
	scale-bench memkill --mib 300 --procs $PROCS --repeat $REPEAT 2>&1 | grep -v ' info: ' | sed 's/^/guest: /' ;;
esac
vm_pass scale-done
exit 0
