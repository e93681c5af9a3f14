#!/usr/bin/env python3
"""A validating admission webhook that answers every review after DELAY seconds, allowed.

The real kube-apiserver calls it (a ValidatingWebhookConfiguration in the test), so a write it
matches is slowed by the real admission chain, the way a slow webhook or a loaded API server
slows it on a cluster: the one fault here is the delay, which no real component makes on
demand. Each review is logged to LOG as a JSON line (time, user, resource, subresource, name).

usage: slow-webhook.py --cert CRT --key KEY --delay SECONDS --port-file FILE --log FILE
"""
import argparse
import json
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--delay", type=float, required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    args = ap.parse_args()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            req = body.get("request", {})
            arrived = time.time()
            time.sleep(args.delay)
            with lock, open(args.log, "a") as f:
                f.write(json.dumps({"arrived": arrived, "answered": time.time(),
                                    "user": req.get("userInfo", {}).get("username"),
                                    "resource": req.get("resource", {}).get("resource"),
                                    "subresource": req.get("subResource"),
                                    "name": req.get("name")}) + "\n")
            out = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                              "response": {"uid": req.get("uid"), "allowed": True}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
