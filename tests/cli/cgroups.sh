# Shared by the CLI tests that build pod cgroups on this host's real cgroup v2 tree (sourced).
#   cg_v2_root        the writable cgroup v2 mount (/sys/fs/cgroup, or /sys/fs/cgroup/unified on
#                     a hybrid host); "" when there is none
#   cg_populated CG   true while CG or a cgroup below it has a process
#   cg_remove TOP     cgroup.kill every cgroup below TOP and TOP itself, then rmdir them,
#                     deepest first (a test's cleanup)

cg_v2_root() {
	local dir
	for dir in /sys/fs/cgroup /sys/fs/cgroup/unified; do
		[ -f "$dir/cgroup.controllers" ] && [ -w "$dir" ] && { echo "$dir"; return 0; }
	done
	echo ""
}

cg_populated() { grep -q '^populated 1' "$1/cgroup.events" 2>/dev/null; }

cg_remove() {
	[ -n "$1" ] && [ -d "$1" ] || return 0
	find "$1" -depth -type d -exec sh -c 'echo 1 > "$1/cgroup.kill"' sh {} \; 2>/dev/null
	sleep 0.2
	find "$1" -depth -type d -exec rmdir {} \; 2>/dev/null
	return 0
}
