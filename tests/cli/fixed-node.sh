# fixed-node.sh: fixed_node ROOT writes a fixture node whose memory and PIDs never move
# (16 GiB, 12 GiB available; pid_max 4194304), for the CLI tests that watch another signal
# move (test_ahead.sh: inodes) or read memory.available from files (test_nobpf_poll.sh).
fixed_node() {
	mkdir -p "$1/proc/sys/kernel" "$1/sys/fs/cgroup"
	printf 'MemTotal:       16777216 kB\nMemFree:         1048576 kB\nMemAvailable:   12582912 kB\n' >"$1/proc/meminfo"
	echo 4194304 >"$1/proc/sys/kernel/pid_max"
	echo 126000 >"$1/proc/sys/kernel/threads-max"
	echo '0.52 0.58 0.59 3/1187 40231' >"$1/proc/loadavg"
	echo 'cpuset cpu io memory pids' >"$1/sys/fs/cgroup/cgroup.controllers"
	printf 'anon 2147483648\nfile 3221225472\nkernel 0\nactive_file 1073741824\ninactive_file 2147483648\n' \
		>"$1/sys/fs/cgroup/memory.stat"
}
