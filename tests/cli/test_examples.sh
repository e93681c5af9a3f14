#!/usr/bin/env bash
# Every example in README.md, doc/evictd.8, doc/evictctl.8 and `evictd --help` runs as written
# (issue 22): the lines marked "$ " (in ```sh blocks, .EX blocks, the help's Examples) are read
# by bash exactly as a reader's shell would read them, so an unquoted '<' fails here as it
# fails there. evictd examples run on a fixture --root: with --validate, or --once --dry-run
# when they already say --once; the daemon examples are validated, not started. evictctl
# examples run against a dry-run evictd on the same fixture.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
EVICTCTL=${EVICTCTL:-build/evictctl}
EVICTD=$(readlink -f "$EVICTD")
EVICTCTL=$(readlink -f "$EVICTCTL")
src=$(pwd)
tmp=$(mktemp -d /tmp/evictd-examples-XXXXXX)
tpids=()
. tests/cli/daemonlib.sh
trap 'for p in "${tpids[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT

# The fixture node: test_cli.sh's --once tree, the cgroups the examples name, and a process
# named kubelet run by root from a root-owned binary (for --kubelet-flags-from=auto).
fx="$tmp/root"
mkdir -p "$fx/proc/sys/kernel" "$fx/sys/fs/cgroup/batch.slice" "$fx/sys/fs/cgroup/workloads.slice" \
	"$fx/proc/4242" "$fx/usr/bin"
printf 'MemTotal:        8388608 kB\nMemFree:         1048576 kB\nMemAvailable:    4194304 kB\n' >"$fx/proc/meminfo"
echo 4194304 >"$fx/proc/sys/kernel/pid_max"
echo 126000 >"$fx/proc/sys/kernel/threads-max"
echo '0.52 0.58 0.59 3/1187 40231' >"$fx/proc/loadavg"
echo 'cpuset cpu io memory pids' >"$fx/sys/fs/cgroup/cgroup.controllers"
printf 'anon 2147483648\nfile 3221225472\nkernel 0\nactive_file 1073741824\ninactive_file 2147483648\n' \
	>"$fx/sys/fs/cgroup/memory.stat"
printf '#!/bin/sh\n' >"$fx/usr/bin/kubelet"
chmod 0755 "$fx/usr/bin/kubelet"
echo kubelet >"$fx/proc/4242/comm"
printf 'Name:\tkubelet\nUid:\t0\t0\t0\t0\n' >"$fx/proc/4242/status"
ln -s "$fx/usr/bin/kubelet" "$fx/proc/4242/exe"
printf 'kubelet\0--eviction-hard=memory.available<100Mi\0' >"$fx/proc/4242/cmdline"
# The files the examples name, in the directory they run in.
mkdir -p "$tmp/cwd"
cp tools/deploy/config.yaml.example "$tmp/cwd/evictd.yaml"

# The example's command names, as functions: the fixture arguments are added, nothing else.
fixture_args=(--root="$fx" --state-dir="$tmp/state" --no-bpf --no-psi)
evictd() {
	local arg once=no dry=no fixture_args=(--root="$fx" --state-dir="$tmp/state" --no-bpf --no-psi)
	for arg in "$@"; do
		case $arg in --once) once=yes ;; --dry-run) dry=yes ;; esac
	done
	if [ $once = yes ]; then
		[ $dry = yes ] || set -- "$@" --dry-run
		"$EVICTD" "$@" "${fixture_args[@]}"
	else
		"$EVICTD" "$@" "${fixture_args[@]}" --validate
	fi
}
evictctl() { EVICTD_SOCKET="$tmp/evictd.sock" "$EVICTCTL" "$@"; }
export -f evictd evictctl
export EVICTD EVICTCTL fx tmp

# README: ```sh blocks; the man pages: .EX blocks, "\e" continuations joined, roff escapes
# undone; --help: its Examples lines.
examples() {
	awk '/^```sh/ { on = 1; next } /^```/ { on = 0 } on && /^\$ / { print FILENAME ": " $0 }' README.md
	for page in doc/evictd.8 doc/evictctl.8; do
		awk -v f="$page" '
			/^\.EX/ { on = 1; next } /^\.EE/ { on = 0; next }
			on && (cont || /^\$ /) {
				line = cont $0
				if (line ~ /\\e$/) { cont = substr(line, 1, length(line) - 2) " "; next }
				cont = ""
				gsub(/\\-/, "-", line); gsub(/\\\(aq/, "\047", line); gsub(/\\e/, "\\", line)
				gsub(/  +/, " ", line)
				print f ": " line
			}' "$page"
	done
	"$EVICTD" --help | sed -n 's/^  \(\$ .*\)/--help: \1/p'
}
examples >"$tmp/examples"
n_readme=$(grep -c '^README.md: ' "$tmp/examples")
n_man=$(grep -c '^doc/evictd.8: ' "$tmp/examples")
n_ctlman=$(grep -c '^doc/evictctl.8: ' "$tmp/examples")
n_help=$(grep -c '^--help: ' "$tmp/examples")
if [ "$n_readme" -ge 8 ] && [ "$n_man" -ge 4 ] && [ "$n_ctlman" -ge 3 ] && [ "$n_help" -ge 3 ]; then
	pass "examples found: README $n_readme, evictd(8) $n_man, evictctl(8) $n_ctlman, --help $n_help"
else
	fail "examples found in every document" \
		"README $n_readme, evictd(8) $n_man, evictctl(8) $n_ctlman, --help $n_help"
fi

# The evictctl examples need a daemon: dry-run, on the fixture, no port.
start daemon "$EVICTD" -- --dry-run "${fixture_args[@]}" --control-socket="$tmp/evictd.sock" \
	--metrics-address=off --event-log=off
for _ in $(seq 1 100); do [ -S "$tmp/evictd.sock" ] && break; sleep 0.1; done

while IFS= read -r entry; do
	where=${entry%%: \$ *}
	cmd=${entry#*: \$ }
	case $cmd in
	"make run "*)
		# The recipe make would run, with that ARGS (make -n: nothing built or started).
		recipe=$(bash -c "make -C '$src' -s -n ${cmd#make }" 2>&1 | grep -E '(^|/)evictd --dry-run' | tail -1)
		cmd="evictd ${recipe#*evictd }"
		;;
	esac
	out=$(cd "$tmp/cwd" && bash -c "$cmd" 2>&1 </dev/null); rc=$?
	if [ $rc -eq 0 ]; then
		pass "$where: $cmd"
	else
		fail "$where: $cmd" "rc=$rc: $(head -c 800 <<<"$out")"
	fi
done <"$tmp/examples"

# The "make run" line is read as make reads it: ARGS reaches evictd as one quoted flag.
check "README's make run example passes the threshold through ARGS" \
	grep -q "^README.md: \$ make run ARGS=\"--eviction-hard='memory.available<2Gi'\"" "$tmp/examples"

# The shipped default file: valid as shipped (all commented), and with every key uncommented
# (each is a real key with a value evictd accepts).
sed 's/^#\([a-zA-Z]\)/\1/; s/^#  /  /' tools/deploy/config.yaml.example >"$tmp/uncommented.yaml"
for file in tools/deploy/config.yaml.example "$tmp/uncommented.yaml"; do
	out=$("$EVICTD" --validate --config="$file" "${fixture_args[@]}" 2>&1); rc=$?
	if [ $rc -eq 0 ] && ! grep -q 'unknown' <<<"$out"; then
		pass "config.yaml.example validates ($(basename "$file"))"
	else
		fail "config.yaml.example validates ($(basename "$file"))" "rc=$rc: $out"
	fi
done

stop "$tpid"
done_testing
