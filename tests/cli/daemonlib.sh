# Helpers for CLI tests that run evictd as a daemon: source after tap.sh, with $tmp (a
# scratch directory) and the array tpids (timeout(1) wrappers, for the caller's cleanup) set.
SAN_ENV=(ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)
SAN_PATTERN='ERROR: AddressSanitizer|runtime error|LeakSanitizer|SUMMARY: UndefinedBehaviorSanitizer'

# A free TCP port on 127.0.0.1: nothing accepts on it now.
# Below the kernel's ephemeral range, so no client socket of a test (a flood leaves thousands)
# holds it; nothing listening on it; nothing bound to it (ss, when there).
free_port() {
	local candidate low
	read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || low=32768
	[ "$low" -gt 12000 ] || low=32768
	for _ in $(seq 1 50); do
		candidate=$((10000 + RANDOM % (low - 10000)))
		command -v ss >/dev/null && ss -Htan "sport = :$candidate" 2>/dev/null | grep -q . && continue
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then
			echo "$candidate"
			return 0
		fi
	done
	return 1
}

# start NAME BIN [ENV=VALUE...] -- ARGS...: BIN ARGS under timeout(1) (300 s), stdout and
# stderr to $tmp/NAME.out and $tmp/NAME.err. Sets tpid (the wrapper) and dpid (the daemon).
start() {
	local name=$1 bin=$2 envs=()
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	env "${envs[@]}" timeout -s KILL 300 "$bin" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
	tpid=$!
	tpids+=("$tpid")
	dpid=""
	for _ in $(seq 1 50); do
		dpid=$(pgrep -P "$tpid" | head -1)
		[ -n "$dpid" ] && break
		sleep 0.02
	done
	[ -n "$dpid" ] || dpid=$tpid
}
# wait_up SOCKET PORT: until the control socket exists and /healthz answers (10 s at most).
wait_up() {
	for _ in $(seq 1 100); do
		[ -S "$1" ] && curl -sf -m 1 "http://127.0.0.1:$2/healthz" >/dev/null 2>&1 && return 0
		kill -0 "$dpid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
# wait_log FILE PATTERN SECONDS: until grep -E PATTERN matches FILE.
wait_log() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
# stop TPID: SIGTERM the daemon, wait up to 10 s; sets rc to its exit status ("" when it
# hung: then it is killed). Not in a subshell: wait needs the child.
stop() {
	local tp=$1 d
	rc=""
	d=$(pgrep -P "$tp" | head -1)
	[ -n "$d" ] && kill -TERM "$d" 2>/dev/null
	for _ in $(seq 1 100); do
		if ! kill -0 "$tp" 2>/dev/null; then
			wait "$tp"
			rc=$?
			return 0
		fi
		sleep 0.1
	done
	[ -n "$d" ] && kill -KILL "$d" 2>/dev/null
	wait "$tp" 2>/dev/null
	return 0
}
# ms_since NS: milliseconds since a date +%s%N timestamp.
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
# healthz_ok PORT: /healthz answers 200 within 1 s; sets hz to the code and the body.
healthz_ok() {
	hz=$(curl -s -m 1 -w ' [%{http_code}]' "http://127.0.0.1:$1/healthz" 2>/dev/null | tr '\n' ' ')
	[ "${hz##*\[}" = "200]" ]
}
# loop_max PORT: the longest loop iteration since start from /metrics ("" when absent): the
# whole run, even one longer than evictd_loop_iteration_max_seconds' one-minute window.
loop_max() {
	curl -s -m 1 "http://127.0.0.1:$1/metrics" 2>/dev/null |
		awk '$1 == "evictd_loop_iteration_max_since_start_seconds" {print $2}'
}
# below_1s VALUE: a number below 1.
below_1s() { [ -n "$1" ] && awk -v v="$1" 'BEGIN { exit !(v < 1) }'; }
no_sanitizer_report() { ! grep -qE "$SAN_PATTERN" "$1"; }


# cleanup_daemons: kill the daemons started (their timeout wrappers too), then every workload
# cgroup below $root and $root itself, and remove $tmp.
cleanup_daemons() {
	local p c cg
	for p in "${tpids[@]}"; do
		for c in $(pgrep -P "$p"); do kill -KILL "$c" 2>/dev/null; done	# the daemon
		kill -KILL "$p" 2>/dev/null
	done
	if [ -n "${root:-}" ] && [ -d "$root" ]; then
		for cg in "$root"/*/; do [ -d "$cg" ] && echo 1 > "$cg/cgroup.kill" 2>/dev/null; done
		sleep 0.3
		for cg in "$root"/*/; do [ -d "$cg" ] && rmdir "$cg" 2>/dev/null; done
		rmdir "$root" 2>/dev/null
	fi
	rm -rf "$tmp"
}
