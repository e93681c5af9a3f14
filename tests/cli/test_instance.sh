#!/usr/bin/env bash
# Pin directories that are not what they seem, and a second instance (doc/DESIGN.md, "BPF pins"
# and "One instance"). Everything that could mount runs in a private mount namespace
# (unshare -m): a wrong mount cannot touch the host, whose mount table is compared before and
# after.
#   a. --bpf-pin-dir below a directory that is not a bpffs (/tmp/..., /proc/...): exit 2,
#      nothing mounted, /proc still procfs.
#   b. a pin directory inside a bpffs: accepted.
#   c. the default place with nothing mounted at /sys/fs/bpf: evictd mounts bpffs there.
#   d. a second evictd with the same state directory and pins: exit 1 naming the first's pid;
#      the first still answers and its pins are all there.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh

command -v unshare >/dev/null || { echo "ok 1 # SKIP unshare(1) is missing"; echo "1..1"; exit 0; }
if [ "$(id -u)" != 0 ] || ! unshare -m --propagation private true 2>/dev/null; then
	echo "ok 1 # SKIP needs root and mount namespaces"; echo "1..1"; exit 0
fi
tmp=$(mktemp -d /tmp/evictd-instance-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mounts() { awk '{print $5, $9}' /proc/self/mountinfo | sort; }
mounts > "$tmp/mounts.before"

EVICTD=$(readlink -f "$EVICTD") tmp=$tmp unshare -m --propagation private bash -s > "$tmp/results" 2>"$tmp/ns.err" <<'NS'
set -u
res() { if [ "$1" = 0 ]; then echo "PASS $2"; else echo "FAIL $2 :: $3"; fi; }
. tests/cli/daemonlib.sh 2>/dev/null
# a. not a bpffs
mkdir -p "$tmp/x"
"$EVICTD" --validate --bpf-pin-dir="$tmp/x/pins" >"$tmp/a1.out" 2>&1; rc=$?
[ $rc = 2 ] && [ "$(grep -c 'bpf-pin-dir' "$tmp/a1.out")" = 1 ]
res $? "a. --validate refuses a pin dir in $tmp/x (not a bpffs) with one line, exit 2" "rc $rc: $(head -3 "$tmp/a1.out")"
timeout 10 "$EVICTD" --dry-run --bpf-pin-dir="$tmp/x/pins" --state-dir="$tmp/state-a" \
	--control-socket="$tmp/a.sock" --metrics-address=off --event-log=off >"$tmp/a2.out" 2>&1; rc=$?
! mountpoint -q "$tmp/x" && [ $rc = 2 ]
res $? "a. the daemon refuses it too (exit 2) and mounts nothing on $tmp/x" "rc $rc; $(grep -i mount "$tmp/a2.out" | head -2)"
timeout 10 "$EVICTD" --dry-run --bpf-pin-dir=/proc/evictd --state-dir="$tmp/state-a" \
	--control-socket="$tmp/a.sock" --metrics-address=off --event-log=off >"$tmp/a3.out" 2>&1; rc=$?
[ $rc = 2 ] && [ "$(stat -f -c %T /proc)" = proc ] && [ -r /proc/self/status ]
res $? "a. /proc/evictd is refused (exit 2) and /proc stays procfs" "rc $rc; /proc is $(stat -f -c %T /proc)"
echo "DONE a"
# b. inside a bpffs
mkdir -p "$tmp/bpf"
mount -t bpf bpf "$tmp/bpf"
"$EVICTD" --validate --bpf-pin-dir="$tmp/bpf/pins" >/dev/null 2>"$tmp/b.err"; rc=$?
res $rc "b. a pin dir inside a bpffs is accepted" "$(head -3 "$tmp/b.err")"
echo "DONE b"
# c. nothing at /sys/fs/bpf: mounted there, and only there
while mountpoint -q /sys/fs/bpf; do umount /sys/fs/bpf || break; done
timeout 20 "$EVICTD" --dry-run --bpf-pin-dir=/sys/fs/bpf/evictd-test --state-dir="$tmp/state-c" \
	--control-socket="$tmp/c.sock" --metrics-address=off --event-log=off >"$tmp/c.out" 2>&1 &
pid=$!
for _ in $(seq 1 100); do grep -q 'evictd running' "$tmp/c.out" && break; sleep 0.1; done
fs=$(stat -f -c %T /sys/fs/bpf)
kill $pid; wait $pid
[ "$fs" = bpf_fs ] && grep -q 'mounted bpffs on /sys/fs/bpf' "$tmp/c.out"
res $? "c. the default pin dir with nothing at /sys/fs/bpf: bpffs mounted there" "fs $fs; $(grep -E 'bpf|BPF' "$tmp/c.out" | head -3)"
echo "DONE c"
# d. a second instance
port=$(free_port)
args=(--dry-run --bpf-pin-dir="$tmp/bpf/pins" --state-dir="$tmp/state-d" --control-socket="$tmp/d.sock"
	--metrics-address="127.0.0.1:$port" --event-log=off)
timeout 60 "$EVICTD" "${args[@]}" >"$tmp/d1.out" 2>&1 &
wrapper=$!
for _ in $(seq 1 100); do grep -q 'evictd running' "$tmp/d1.out" && break; sleep 0.1; done
first=$(pgrep -P $wrapper | head -1)
pins_before=$(ls "$tmp/bpf/pins" 2>/dev/null | sort | tr '\n' ' ')
t=$(date +%s%N)
timeout 20 "$EVICTD" "${args[@]}" >"$tmp/d2.out" 2>&1; rc=$?
took=$(( ($(date +%s%N) - t) / 1000000 ))
[ $rc = 1 ] && grep -q "another evictd (pid $first)" "$tmp/d2.out" && [ $took -lt 2000 ]
res $? "d. a second instance exits 1 at once (${took} ms) naming the first (pid $first)" "rc $rc: $(head -3 "$tmp/d2.out")"
pins_after=$(ls "$tmp/bpf/pins" 2>/dev/null | sort | tr '\n' ' ')
healthy=no
curl -sf -m 1 "http://127.0.0.1:$port/healthz" >/dev/null && healthy=yes
[ -n "$pins_before" ] && [ "$pins_before" = "$pins_after" ] && [ $healthy = yes ] && [ -S "$tmp/d.sock" ] &&
	kill -0 $first
res $? "d. the first keeps its pins, socket and port" "pins before '$pins_before' after '$pins_after'; healthz $healthy"
kill $first; wait $wrapper
umount "$tmp/bpf"
echo "DONE d"
NS
while read -r verdict name; do
	case $verdict in
	PASS) pass "$name" ;;
	FAIL) fail "${name%% :: *}" "${name#* :: }" ;;
	esac
done < "$tmp/results"
# Each part ends with "DONE x": a part that vanished (the namespace script died in it or
# before it) fails here instead of passing by having no FAIL line.
for part in a b c d; do
	if grep -qx "DONE $part" "$tmp/results"; then
		pass "part $part ran to its end"
	else
		fail "part $part ran to its end" "results: $(tr '\n' ' ' <"$tmp/results"); stderr: $(tail -5 "$tmp/ns.err")"
	fi
done
mounts > "$tmp/mounts.after"
check "the host's mount table is unchanged" cmp -s "$tmp/mounts.before" "$tmp/mounts.after"
done_testing
