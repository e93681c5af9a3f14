#!/usr/bin/env bash
# evictctl reads a reply as untrusted (doc/DESIGN.md, "Hostile input"): at most 16 MiB, all
# within --timeout. A fake control socket (python3) answers with an endless reply, a reply
# trickled a byte at a time, and a large but bounded valid one.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
EVICTCTL=${EVICTCTL:-$BUILD_DIR/evictctl}

command -v python3 >/dev/null || { echo "ok 1 - evictctl reply # SKIP python3 is needed"; echo "1..1"; exit 0; }
tmp=$(mktemp -d /tmp/evictd-ctlreply-XXXXXX)
server=""
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

cat >"$tmp/server.py" <<'EOF'
import os, socket, sys, time
path, mode = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(4)
s.settimeout(60)
while True:
    try:
        c, _ = s.accept()
    except socket.timeout:
        break
    c.settimeout(60)
    try:
        c.recv(4096)
        if mode == "endless":
            # A reply that never ends: a JSON string that never closes.
            c.sendall(b'{"ok":true,"command":"status","x":"')
            chunk = b"a" * 65536
            while True:
                c.sendall(chunk)
        elif mode == "trickle":
            c.sendall(b'{"ok":true,')
            while True:
                time.sleep(0.3)
                c.sendall(b" ")
        elif mode == "large":
            # 15 MiB of valid JSON, under the bound.
            pad = b"a" * (15 << 20)
            c.sendall(b'{"ok":true,"command":"status","pad":"' + pad + b'"}\n')
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        pass
    c.close()
EOF

# serve MODE: start the fake socket at $tmp/MODE.sock.
serve() {
	[ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
	python3 "$tmp/server.py" "$tmp/$1.sock" "$1" &
	server=$!
	for _ in $(seq 100); do [ -S "$tmp/$1.sock" ] && return 0; sleep 0.05; done
	return 1
}

# 1. An endless reply: cut at 16 MiB with one line, not read until memory runs out.
serve endless
timeout 30 "$EVICTCTL" --socket "$tmp/endless.sock" --timeout 20 --json status >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 1 ] && grep -q 'reply from .* is larger than 16 MiB' "$tmp/err"; then
	pass "an endless reply is refused past 16 MiB"
else
	fail "an endless reply is refused past 16 MiB" "rc=$rc $(head -c 400 "$tmp/err")"
fi

# 2. A reply trickled a byte every 0.3 s: --timeout bounds the whole reply, not each read.
serve trickle
timeout 15 "$EVICTCTL" --socket "$tmp/trickle.sock" --timeout 2 --json status >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 1 ] && grep -q 'no reply from .* within 2s' "$tmp/err"; then
	pass "a trickled reply ends at --timeout"
else
	fail "a trickled reply ends at --timeout" "rc=$rc $(head -c 400 "$tmp/err")"
fi

# 3. A large reply under the bound is read whole.
serve large
timeout 30 "$EVICTCTL" --socket "$tmp/large.sock" --timeout 20 --json status >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ] && [ "$(wc -c <"$tmp/out")" -gt $((15 << 20)) ]; then
	pass "a 15 MiB reply is read whole"
else
	fail "a 15 MiB reply is read whole" "rc=$rc $(head -c 400 "$tmp/err")"
fi

done_testing
