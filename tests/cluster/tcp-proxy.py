#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""A TCP proxy that misbehaves on demand, for the tests against the real control plane.

The real kube-apiserver and etcd behave; what goes wrong between them and their clients is the
network: a load balancer that moves a client to another apiserver, cuts long streams (an idle
or stream-age limit), or a link to etcd that stalls. A real proxy cannot be told to do that at
a chosen moment, so this one can. It relays bytes only (TLS passes through untouched).

  tcp-proxy.py --port-file F --backend-file B [--max-conn-seconds N]

B holds the backend HOST:PORT, read again for every new connection (a load balancer moved).
Signals: SIGUSR1 freezes every connection (nothing relayed, sockets kept open: a stalled link),
SIGUSR2 thaws them, SIGHUP cuts every open connection (both sides closed: a proxy's restart).
--max-conn-seconds N cuts each connection N seconds after it opened (a stream limit).
"""
import argparse
import os
import selectors
import signal
import socket
import time

ap = argparse.ArgumentParser()
ap.add_argument("--port-file", required=True)
ap.add_argument("--backend-file", required=True)
ap.add_argument("--max-conn-seconds", type=float, default=0)
args = ap.parse_args()

sel = selectors.DefaultSelector()
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(256)
listener.setblocking(False)
sel.register(listener, selectors.EVENT_READ)
tmp = args.port_file + ".tmp"
with open(tmp, "w") as f:
    f.write("%d\n" % listener.getsockname()[1])
os.rename(tmp, args.port_file)

frozen = False
cut_all = False
pairs = {}      # socket -> (peer socket, opened at)


def on_signal(signum, frame):
    global frozen, cut_all
    if signum == signal.SIGUSR1:
        frozen = True
    elif signum == signal.SIGUSR2:
        frozen = False
    elif signum == signal.SIGHUP:
        cut_all = True


for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP):
    signal.signal(s, on_signal)


def close_pair(sock):
    peer = pairs.pop(sock, (None, 0))[0]
    for s in (sock, peer):
        if s is None:
            continue
        pairs.pop(s, None)
        try:
            sel.unregister(s)
        except (KeyError, ValueError):
            pass
        s.close()


def accept():
    client, _ = listener.accept()
    try:
        with open(args.backend_file) as f:
            host, port = f.read().strip().rsplit(":", 1)
        backend = socket.create_connection((host, int(port)), timeout=5)
    except OSError:
        client.close()
        return
    now = time.monotonic()
    # Blocking sockets: recv only after select said readable; a send may wait for a slow
    # reader, which holds this proxy's other streams meanwhile (a test's few streams).
    for s in (client, backend):
        s.settimeout(None)
    pairs[client] = (backend, now)
    pairs[backend] = (client, now)
    if not frozen:
        sel.register(client, selectors.EVENT_READ)
        sel.register(backend, selectors.EVENT_READ)


was_frozen = False
while True:
    if cut_all:
        cut_all = False
        for s in list(pairs):
            if s in pairs:
                close_pair(s)
    if frozen != was_frozen:
        for s in pairs:
            if frozen:
                try:
                    sel.unregister(s)
                except (KeyError, ValueError):
                    pass
            else:
                sel.register(s, selectors.EVENT_READ)
        was_frozen = frozen
    if args.max_conn_seconds > 0:
        now = time.monotonic()
        for s in [s for s, (_, t) in pairs.items() if now - t > args.max_conn_seconds]:
            if s in pairs:
                close_pair(s)
    try:
        events = sel.select(timeout=0.1)
    except InterruptedError:
        continue
    for key, _ in events:
        sock = key.fileobj
        if sock is listener:
            accept()
            continue
        if sock not in pairs:
            continue
        try:
            data = sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            close_pair(sock)
            continue
        try:
            pairs[sock][0].sendall(data)
        except OSError:
            close_pair(sock)
