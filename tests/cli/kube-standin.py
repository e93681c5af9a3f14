#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""A local HTTPS stand-in for the few Kubernetes API calls evictd makes (tests only).

It is not an API server: it serves fixture Pods and Nodes from memory, applies the patches
evictd sends with the semantics evictd relies on (JSON merge patch with a resourceVersion
precondition -> 409 Conflict; a pods/status patch with a metadata.uid precondition -> 409;
pagination with limit/continue; events create/patch), records every request as one JSON line
(method, path, query, headers, body) and can inject faults.

Why it stays beside the real control plane (tests/cluster: the real kube-apiserver, etcd and
controllers, where every behaviour a real server shows is tested): a real server cannot be
made to misbehave on demand at one chosen request. Kept only for that: a black-holed
connection that stays open and answers nothing (not even bookmarks), a chosen request
answered late, 409/422/429/5xx or garbage, a 410 or a cut on exactly the Nth watch, a node
changed under the client's feet between its GET and its PATCH, and 500 simulated nodes in one
process for the unit tests' timing (tests/unit/test_kube*.c, tests/cli/test_kube.sh,
tests/cli/test_kube_evict_order.sh). Where it models a controller (--node-lifecycle-controller,
daemonsets.json) the real controller is tested in tests/cluster/test_controllers.sh.

Usage:
  kube-standin.py --make-certs DIR            throwaway CA + server cert (openssl) into DIR
  kube-standin.py --cert C --key K --port-file F --log L [--fixtures DIR] [--faults FILE]
                  [--token-file T] [--state-dump FILE] [--max-seconds N]
                  [--log-time] [--listen-backlog N]

The pods are versioned as the real API server versions them: one resourceVersion counter
(etcd's revision, cluster-wide), every change recorded in a history ("etcd"); a list says its
resourceVersion; a watch (?watch=true&resourceVersion=RV) streams the changes after RV as
chunked JSON lines ({"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": ...}), bookmarks
every --bookmark-seconds when allowWatchBookmarks=true, and ends at timeoutSeconds. Lists and
watches are served as kube-apiserver serves them
(staging/src/k8s.io/apiserver/pkg/storage/cacher/delegator.go shouldDelegateList,
cacher.go Watch, watch_cache.go):
  - an exact read from "etcd" AT the revision (etcd3 store.go GetList): resourceVersionMatch=Exact,
    the "legacy exact match" (limit>0, resourceVersion not ""/"0", no match), a continue token
    (it carries its list's revision); 410 Expired when that revision is older than the
    compaction point;
  - resourceVersion "0" or resourceVersionMatch=NotOlderThan: the watch cache, at its newest
    revision (watch_cache.go waitUntilFreshAndBlock: never older than asked);
  - resourceVersion "": a consistent read (paged, continue tokens at the current revision);
  - resourceVersionMatch without resourceVersion, or Exact with "0": 400 (ValidateListOptions);
  - a watch from a resourceVersion older than the watch cache's oldest gets an ERROR event with
    410 at once (watch_cache.go getAllEventsSinceLocked, "too old resource version"); the
    cache's oldest is where it started (a restart) or the compaction point.
The fieldSelector spec.nodeName applies to all. DELETE of a pod checks preconditions.uid (409)
and honours gracePeriodSeconds (> 0: deletionTimestamp set, MODIFIED; 0: gone, DELETED).
Test hooks (not recorded in the log): POST /standin/pods (create or replace a pod), POST
/standin/delete-pod/NS/NAME, POST /standin/compact (forget history up to now), POST
/standin/drop-watches (cut every open watch without the final chunk), POST /standin/restart
(an API server restart: every watch cut, a new empty watch cache at the current revision, after
other objects moved etcd's revision on), POST /standin/blackhole and /standin/unblackhole (open
watches, and watches opened meanwhile, get nothing at all, not even bookmarks, on an open
socket: a black-holed connection).

--node-lifecycle-controller: after every write to a Node, do what kube-controller-manager's node
lifecycle controller does on that Node update event (pkg/controller/nodelifecycle/
node_lifecycle_controller.go doNoScheduleTaintingPass, nodeConditionToTaintKeyStatusMap): derive
the NoSchedule taints node.kubernetes.io/{not-ready,unreachable,memory-pressure,disk-pressure,
pid-pressure,network-unavailable,unschedulable} from status.conditions and spec.unschedulable,
add the missing ones and REMOVE those whose condition does not hold, whoever set them (matched by
key and effect, taintutils.TaintSetDiff), leaving every other taint alone; each such write is a
new resourceVersion and is counted in the state dump ("controller_writes"). POST
/standin/node-status/NAME with {"conditions": [...]} replaces the Node's status.conditions as
the kubelet's status update would (pkg/kubelet/nodestatus/setters.go) and runs that pass.

DaemonSets: with DIR/daemonsets.json (a DaemonSetList) GET /apis/apps/v1/daemonsets serves it
(any query: the watch cache at resourceVersion=0), and a model of the DaemonSet controller runs
after every write to a Node and every second: for each DaemonSet that NodeShouldRunDaemonPod on a
Node the stand-in has loaded (pkg/controller/daemon/daemon_controller.go: the template's nodeName,
nodeSelector, required node affinity with In/NotIn/Exists/DoesNotExist/Gt/Lt on labels and
matchFields metadata.name, NoSchedule/NoExecute taints against the template's tolerations plus
daemonset_util.go AddOrUpdateDaemonPodTolerations) and has no pod there (a non-terminal pod whose
controller ownerReference is its uid), it creates the pod on that node (an ADDED watch event),
counted in the state dump ("daemon_pods_created"). Not modelled: slow start, rolling updates,
deleting pods that no longer fit.

--fixtures DIR: pods.json (a PodList) and node-<name>.json files; a node without a file does
not exist (GET and PATCH 404, as the API server: nothing is created on read).
Content types as evictd must send them, else 415: pods/status and event PATCH strategic merge
patch, event POST application/json, node PATCH merge patch. A pods/status patch whose
metadata.uid is not the pod's is 422 Invalid (uid immutable); a DELETE's preconditions.uid 409.
DELETE: a terminal (Failed/Succeeded) pod goes at once whatever the grace, a pod with
finalizers only gets its deletionTimestamp. POST /standin/kubelet-status/NS/NAME {"phase": ...}:
the kubelet's status manager writes that status over the API's, keeping a terminal API phase and
its reason only when its pod worker took it: when the write that made the pod terminal also
changed its metadata (evictd's evictd.io/failed-at annotation), which the kubelet's pod config
sees as an UPDATE, not a status-only reconcile (a real kubelet 1.34 in tests/cluster/test_node.sh
wrote a status-only Failed back to Running and restarted the pod in place). --faults FILE: a JSON list of rules,
re-read on every request (a changed file starts its counts again), each {"method": M, "path": P (prefix), "query": Q (substring), "status": S, "times": N,
"retry_after": SECONDS, "delay": SECONDS, "body": TEXT, "mutate_node": {"taints": [...]}}: the
first N matching requests get status S (with body TEXT as is, when given: garbage or a Status
of its own, with Retry-After when given; "watch_error": STATUS instead serves a watch, 200, that
ends with one ERROR event of that Status) (or, with mutate_node, the node is changed under the client's feet first, so its
resourceVersion precondition fails for real; with "cut_after": SECONDS and no status, a matching
watch is served and ended cleanly that soon, before its timeoutSeconds). --log-time: each logged request also says "time", time.monotonic() (CLOCK_MONOTONIC, the clock
evictd's code reads) when it arrived (tools/bench/fleet.c counts requests per second from it).
--http2: HTTP/2 offered by ALPN beside HTTP/1.1 (python3-h2), as kube-apiserver offers it; each
request then runs the same code in a thread of its own (H2Stream), every request is logged with
"http": "2" or "1.1", a cut watch is a reset stream (RST_STREAM) and a restart closes the
connection (GOAWAY).
--listen-backlog N: the listen queue (default 5, socketserver's): hundreds of clients that
connect at once (the fleet benchmark) would otherwise wait out SYN retransmits.
--token-file: the only bearer token accepted
(re-read per request); others get 401. --client-ca CA: client certificates are asked for and
verified against CA; one authenticates its request as its subject (CN the user, O the groups;
--make-certs makes kubelet-node-1.pem, kubelet-node-1-rotated.pem and kubelet-node-2.pem,
certificate and key in one file, CN=system:node:<node>, O=system:nodes), logged as "user" and
"cert" (its serial), with no token needed, and a node identity may list and watch only the pods
of its node (fieldSelector spec.nodeName=<node>), else 403 as the Node authorizer says it.
POST /standin/reject-cert with a PEM file's path: that certificate gets 401 from then on (an
expired one). --rbac-no-pod-read: the token may not list or watch pods (403, RBAC). --state-dump FILE: the nodes, pods and events are
written there (atomically) on SIGUSR1 and on exit.
"""
import argparse
import copy
import http.client
import io
import json
import os
import select
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

try:    # Debian's python3-h2 (tools/install-deps.sh test): --http2 only
    import h2.config
    import h2.connection
    import h2.errors
    import h2.events
    import h2.exceptions
except ImportError:
    h2 = None


def make_certs(directory):
    os.makedirs(directory, exist_ok=True)

    def run(*args):
        subprocess.run(["openssl", *args], check=True, cwd=directory,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
        "-subj", "/CN=evictd-test-ca")
    run("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
    with open(os.path.join(directory, "san.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "san.ext")
    # Kubelet client certificates as the kubelet's certificate manager keeps them
    # (<cert-dir>/kubelet-client-current.pem: certificate and key in one file), signed by the
    # cluster CA: subject CN=system:node:<name>, O=system:nodes (the Node authorizer's node
    # identity). node-1 twice (a rotation), node-2 once.
    with open(os.path.join(directory, "client.ext"), "w") as f:
        f.write("extendedKeyUsage=clientAuth\n")
    for name, node in (("kubelet-node-1", "node-1"), ("kubelet-node-1-rotated", "node-1"),
                       ("kubelet-node-2", "node-2")):
        run("req", *ec, "-keyout", name + ".key", "-out", name + ".csr",
            "-subj", "/O=system:nodes/CN=system:node:" + node)
        run("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", name + ".crt", "-days", "2", "-extfile", "client.ext")
        with open(os.path.join(directory, name + ".pem"), "w") as out:
            for part in (".crt", ".key"):
                with open(os.path.join(directory, name + part)) as f:
                    out.write(f.read())


def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    result = dict(target)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_status_patch(pod, patch):
    """The part of a strategic merge patch evictd uses: status fields, conditions by type, and
    metadata.annotations (pods/status keeps annotation changes: pkg/registry/core/pod/strategy.go
    podStatusStrategy.PrepareForUpdate resets only the spec, deletionTimestamp and
    ownerReferences; a null value removes the key)."""
    annotations = patch.get("metadata", {}).get("annotations")
    if annotations:
        have = pod.setdefault("metadata", {}).setdefault("annotations", {})
        for key, value in annotations.items():
            if value is None:
                have.pop(key, None)
            else:
                have[key] = value
    status = pod.setdefault("status", {})
    for key, value in patch.get("status", {}).items():
        if key == "conditions":
            conditions = status.setdefault("conditions", [])
            for cond in value:
                for i, old in enumerate(conditions):
                    if old.get("type") == cond.get("type"):
                        conditions[i] = merge_patch(old, cond)
                        break
                else:
                    conditions.append(cond)
        else:
            status[key] = value


class State:
    def __init__(self, fixtures):
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.revision = 1000
        self.compacted = 0          # exact reads from an older revision get 410
        self.cache_oldest = 0       # watches from an older resourceVersion get 410
        self.blackhole = False      # watches send nothing
        self.rejected_certs = set()  # client certificate serials answered 401
        self.history = []           # (revision, type, pod) of every pod change
        self.base = []              # the pods at self.base_revision, before self.history
        self.drop_generation = 0    # /standin/drop-watches cuts watches of older generations
        self.drop_restart = False   # the last cut was a restart (HTTP/2: the connection closes)
        self.pods = []
        self.nodes = {}
        self.events = {}
        self.fault_hits = {}
        self.node_controller = False
        self.controller_writes = 0
        self.fixtures = fixtures
        if fixtures and os.path.exists(os.path.join(fixtures, "pods.json")):
            with open(os.path.join(fixtures, "pods.json")) as f:
                self.pods = json.load(f).get("items", [])
        for pod in self.pods:
            if "resourceVersion" not in pod.setdefault("metadata", {}):
                pod["metadata"]["resourceVersion"] = self.bump()
        self.daemonsets = None
        self.daemon_pods_created = 0
        if fixtures and os.path.exists(os.path.join(fixtures, "daemonsets.json")):
            with open(os.path.join(fixtures, "daemonsets.json")) as f:
                self.daemonsets = json.load(f).get("items", [])
        self.base = copy.deepcopy(self.pods)
        self.base_revision = self.revision
        self.cache_oldest = self.revision

    def pods_at(self, revision):
        """The pods as etcd held them at revision (under lock); None when compacted."""
        if revision < max(self.compacted, self.base_revision) and revision < self.revision:
            return None
        pods = {p["metadata"]["uid"]: p for p in self.base}
        for rev, kind, pod in self.history:
            if rev > revision:
                break
            if kind == "DELETED":
                pods.pop(pod["metadata"]["uid"], None)
            else:
                pods[pod["metadata"]["uid"]] = pod
        return list(pods.values())

    def bump(self):
        self.revision += 1
        return str(self.revision)

    def record_pod(self, kind, pod):
        """A pod changed (under lock): new resourceVersion, history, wake the watches."""
        pod["metadata"]["resourceVersion"] = self.bump()
        self.history.append((self.revision, kind, copy.deepcopy(pod)))
        self.changed.notify_all()

    def node(self, name):
        """The node, from its fixture file on first use; None when there is none (a GET or
        PATCH of it is 404: the API server never creates a Node on read)."""
        if name not in self.nodes:
            path = os.path.join(self.fixtures or "", "node-%s.json" % name)
            if not (self.fixtures and os.path.exists(path)):
                return None
            with open(path) as f:
                node = json.load(f)
            node.setdefault("kind", "Node")
            node.setdefault("apiVersion", "v1")
            node.setdefault("metadata", {}).setdefault("name", name)
            node["metadata"].setdefault("uid", "uid-" + name)
            node["metadata"]["resourceVersion"] = self.bump()
            self.nodes[name] = node
        return self.nodes[name]

    def kubelet_status(self, pod, status):
        """What the kubelet's status manager writes for a pod (under lock). Its pod worker keeps
        a terminal API phase (pkg/kubelet/kubelet_pods.go generateAPIPodStatus, "API phase was
        terminal"), and with it the API's reason and message when the kubelet has none of its
        own, only when a sync of the pod ran after the API turned terminal: a status-only change
        reaches the kubelet as a reconcile (pkg/kubelet/config/config.go checkAndUpdatePod),
        which starts no sync, and the status manager's next write (every 10 s) puts its cached
        status back. The stand-in takes a metadata change in the same write (evictd's
        evictd.io/failed-at annotation: an UPDATE) as the sync that makes it stick."""
        old = pod.setdefault("status", {})
        new = dict(old)
        new.update(status)
        took = "evictd.io/failed-at" in (pod.get("metadata", {}).get("annotations") or {})
        if old.get("phase") in ("Failed", "Succeeded") and took:
            new["phase"] = old["phase"]
            if not status.get("reason"):
                new["reason"] = old.get("reason")
            if not status.get("message"):
                new["message"] = old.get("message")
            new = {k: v for k, v in new.items() if v is not None}
        pod["status"] = new
        self.record_pod("MODIFIED", pod)

    # node_lifecycle_controller.go nodeConditionToTaintKeyStatusMap
    CONDITION_TAINTS = {
        "Ready": {"False": "node.kubernetes.io/not-ready", "Unknown": "node.kubernetes.io/unreachable"},
        "MemoryPressure": {"True": "node.kubernetes.io/memory-pressure"},
        "DiskPressure": {"True": "node.kubernetes.io/disk-pressure"},
        "NetworkUnavailable": {"True": "node.kubernetes.io/network-unavailable"},
        "PIDPressure": {"True": "node.kubernetes.io/pid-pressure"},
    }

    def node_updated(self, name):
        """The node lifecycle controller's doNoScheduleTaintingPass on a Node update (under lock)."""
        if not self.node_controller:
            return
        node = self.nodes[name]
        want = []
        for condition in node.get("status", {}).get("conditions", []):
            key = self.CONDITION_TAINTS.get(condition.get("type"), {}).get(condition.get("status"))
            if key:
                want.append(key)
        if node.get("spec", {}).get("unschedulable"):
            want.append("node.kubernetes.io/unschedulable")
        managed = {k for m in self.CONDITION_TAINTS.values() for k in m.values()}
        managed.add("node.kubernetes.io/unschedulable")
        taints = node.get("spec", {}).get("taints", [])
        have = [t["key"] for t in taints if t.get("effect") == "NoSchedule" and t.get("key") in managed]
        if sorted(set(want)) == sorted(set(have)):
            return
        kept = [t for t in taints if not (t.get("effect") == "NoSchedule" and t.get("key") in managed
                                          and t["key"] not in want)]
        kept += [{"key": k, "effect": "NoSchedule"} for k in want if k not in have]
        node.setdefault("spec", {})["taints"] = kept
        if not kept:
            del node["spec"]["taints"]
        node["metadata"]["resourceVersion"] = self.bump()
        self.controller_writes += 1

    # pkg/controller/daemon/util/daemonset_util.go AddOrUpdateDaemonPodTolerations
    DAEMON_TOLERATIONS = [("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
                          ("node.kubernetes.io/disk-pressure", "NoSchedule"),
                          ("node.kubernetes.io/memory-pressure", "NoSchedule"),
                          ("node.kubernetes.io/pid-pressure", "NoSchedule"),
                          ("node.kubernetes.io/unschedulable", "NoSchedule")]

    @staticmethod
    def tolerates(tol, taint):
        """k8s.io/api/core/v1/toleration.go ToleratesTaint."""
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            return False
        if tol.get("key") and tol["key"] != taint.get("key"):
            return False
        if tol.get("operator") == "Exists":
            return True
        return tol.get("operator", "Equal") in ("", "Equal") and tol.get("value", "") == taint.get("value", "")

    @staticmethod
    def requirement(expr, labels):
        """One matchExpressions requirement: True, False, or None (invalid: the term never matches)."""
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        have = labels.get(key)
        if op in ("In", "NotIn"):
            if not values:
                return None
            return (have in values) if op == "In" else (have is None or have not in values)
        if op in ("Exists", "DoesNotExist"):
            if values:
                return None
            return (have is not None) == (op == "Exists")
        if op in ("Gt", "Lt"):
            try:
                want = int(values[0]) if len(values) == 1 else None
            except ValueError:
                want = None
            if want is None:
                return None
            try:
                have_n = int(have)
            except (TypeError, ValueError):
                return False
            return have_n > want if op == "Gt" else have_n < want
        return None

    def should_run(self, ds, node):
        """daemon_controller.go NodeShouldRunDaemonPod's shouldRun."""
        spec = ds.get("spec", {}).get("template", {}).get("spec", {})
        name = node["metadata"]["name"]
        labels = node["metadata"].get("labels", {})
        if spec.get("nodeName") and spec["nodeName"] != name:
            return False
        if any(labels.get(k) != v for k, v in spec.get("nodeSelector", {}).items()):
            return False
        required = spec.get("affinity", {}).get("nodeAffinity", {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution")
        if required is not None:
            def term_matches(term):
                reqs = [self.requirement(e, labels) for e in term.get("matchExpressions", [])]
                for f in term.get("matchFields", []):
                    vals = f.get("values") or []
                    if f.get("key") != "metadata.name" or len(vals) != 1 or f.get("operator") not in ("In", "NotIn"):
                        reqs.append(None)
                    else:
                        reqs.append((vals[0] == name) == (f["operator"] == "In"))
                return bool(reqs) and all(r is True for r in reqs)
            if not any(term_matches(t) for t in required.get("nodeSelectorTerms", [])):
                return False
        tolerations = list(spec.get("tolerations", []))
        tolerations += [{"key": k, "operator": "Exists", "effect": e} for k, e in self.DAEMON_TOLERATIONS]
        if spec.get("hostNetwork"):
            tolerations.append({"key": "node.kubernetes.io/network-unavailable", "operator": "Exists",
                                "effect": "NoSchedule"})
        for taint in node.get("spec", {}).get("taints", []):
            if taint.get("effect") in ("NoSchedule", "NoExecute") and \
                    not any(self.tolerates(t, taint) for t in tolerations):
                return False
        return True

    def daemonset_pass(self):
        """The DaemonSet controller's manage() for the loaded Nodes (under lock): create the
        missing daemon pods."""
        if self.daemonsets is None:
            return
        for node in list(self.nodes.values()):
            if node is None:
                continue
            name = node["metadata"]["name"]
            for ds in self.daemonsets:
                uid = ds["metadata"]["uid"]
                if not self.should_run(ds, node):
                    continue
                if any(p.get("spec", {}).get("nodeName") == name
                       and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
                       and any(o.get("uid") == uid and o.get("controller")
                               for o in p["metadata"].get("ownerReferences", []))
                       for p in self.pods):
                    continue
                self.daemon_pods_created += 1
                template = ds.get("spec", {}).get("template", {})
                pod = {"kind": "Pod", "apiVersion": "v1",
                       "metadata": {"name": "%s-%d" % (ds["metadata"]["name"], self.daemon_pods_created),
                                    "namespace": ds["metadata"].get("namespace", "default"),
                                    "uid": "daemon-pod-%d" % self.daemon_pods_created,
                                    "labels": template.get("metadata", {}).get("labels", {}),
                                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                                         "name": ds["metadata"]["name"], "uid": uid,
                                                         "controller": True, "blockOwnerDeletion": True}]},
                       "spec": dict(template.get("spec", {}), nodeName=name),
                       "status": {"phase": "Pending", "qosClass": "BestEffort"}}
                self.pods.append(pod)
                self.record_pod("ADDED", pod)


def status_body(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kube-standin"

    def log_message(self, fmt, *args):
        pass

    def identity(self):
        """(user, groups, serial) of the TLS client certificate, or (None, [], None)."""
        try:
            cert = self.connection.getpeercert()
        except (AttributeError, ValueError):
            cert = None
        if not cert:
            return None, [], None
        user, groups = None, []
        for rdn in cert.get("subject", ()):
            for key, value in rdn:
                if key == "commonName":
                    user = value
                elif key == "organizationName":
                    groups.append(value)
        return user, groups, cert.get("serialNumber")

    def record(self, body_text):
        url = urllib.parse.urlsplit(self.path)
        try:
            body = json.loads(body_text) if body_text else None
        except ValueError:
            body = body_text
        entry = {
            "method": self.command,
            "path": url.path,
            "query": url.query,
            "headers": {k.lower(): v for k, v in self.headers.items()
                        if k.lower() in ("authorization", "content-type", "accept", "user-agent")},
            "body": body,
        }
        user, _, serial = self.identity()
        if user is not None:
            entry["user"] = user            # authenticated by its client certificate
            entry["cert"] = serial
        entry["http"] = getattr(self, "http_version", "1.1")
        if self.server.log_time:
            entry["time"] = self.arrived
        with self.server.log_lock:
            self.server.log.write(json.dumps(entry, sort_keys=True) + "\n")
            self.server.log.flush()

    def reply(self, code, doc, headers=None):
        data = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def fault(self, state, path):
        faults_file = self.server.faults
        if not faults_file or not os.path.exists(faults_file):
            return None
        with open(faults_file) as f:
            text = f.read()
        rules = json.loads(text)
        if text != getattr(state, "faults_text", None):
            state.faults_text = text    # a new set of rules: their counts start again
            state.fault_hits = {}
        for index, rule in enumerate(rules):
            if rule.get("method", self.command) != self.command or not path.startswith(rule.get("path", "")):
                continue
            if rule.get("query", "") not in urllib.parse.urlsplit(self.path).query:
                continue
            used = state.fault_hits.get(index, 0)
            if used >= rule.get("times", 1):
                continue
            state.fault_hits[index] = used + 1
            return rule
        return None

    def handle_any(self):
        self.arrived = time.monotonic()
        length = int(self.headers.get("Content-Length") or 0)
        body_text = self.rfile.read(length).decode() if length else ""
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        parts = [p for p in url.path.split("/") if p]
        state = self.server.state
        if parts[:1] == ["standin"]:
            return self.hook(state, parts, body_text)
        self.record(body_text)

        # Authentication (a union, x509 first, as kube-apiserver's): a client certificate the
        # CA signed, unless rejected (expired: /standin/reject-cert), else the bearer token.
        user, groups, serial = self.identity()
        if user is not None and serial in state.rejected_certs:
            return self.reply(401, status_body(401, "Unauthorized", "Unauthorized"))
        if user is None and self.server.token_file:
            with open(self.server.token_file) as f:
                valid = f.read().strip()
            if self.headers.get("Authorization") != "Bearer " + valid:
                return self.reply(401, status_body(401, "Unauthorized", "Unauthorized"))
        # Authorization of pod lists and watches: the Node authorizer for a node identity
        # (plugin/pkg/auth/authorizer/node/node_authorizer.go authorizePod: list/watch only with
        # the fieldSelector spec.nodeName=<its node>), RBAC for the token (--rbac-no-pod-read:
        # the ClusterRole without list and watch of pods, tools/deploy/rbac.yaml).
        if self.command == "GET" and parts == ["api", "v1", "pods"]:
            verb = "watch" if query.get("watch", ["false"])[0] in ("true", "1") else "list"
            node = user[len("system:node:"):] if user and user.startswith("system:node:") and \
                "system:nodes" in groups else None
            who = user or "system:serviceaccount:evictd-system:evictd"
            denied = None
            if node is not None:
                if ("spec.nodeName=" + node) not in query.get("fieldSelector", []):
                    denied = "can only list/watch pods with spec.nodeName field selector"
            elif user is None and self.server.rbac_no_pod_read:
                denied = ""
            if denied is not None:
                return self.reply(403, status_body(403, "Forbidden", 'pods is forbidden: User "%s" cannot %s '
                                                   'resource "pods" in API group "" at the cluster scope%s'
                                                   % (who, verb, ": " + denied if denied else "")))

        with state.lock:
            rule = self.fault(state, url.path)
        if rule:
            if rule.get("delay"):
                time.sleep(rule["delay"])
            if rule.get("mutate_node"):
                with state.lock:
                    node = state.node(parts[3])
                    if node is None:
                        return self.reply(404, status_body(404, "NotFound", 'nodes "%s" not found' % parts[3]))
                    spec = node.setdefault("spec", {})
                    spec["taints"] = spec.get("taints", []) + rule["mutate_node"].get("taints", [])
                    node["metadata"]["resourceVersion"] = state.bump()
            elif rule.get("watch_error") is not None:
                # A watch served (200) that ends with one ERROR event carrying this Status, as
                # cacher.go Watch answers through newErrWatcher.
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.chunk({"type": "ERROR", "object": rule["watch_error"]})
                self.end_chunks()
                return
            elif rule.get("body") is not None:
                data = rule["body"].encode()
                self.send_response(rule.get("status", 200))
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if rule.get("retry_after"):
                    self.send_header("Retry-After", str(rule["retry_after"]))
                self.end_headers()
                self.wfile.write(data)
                return
            elif rule.get("status"):
                headers = {}
                if rule.get("retry_after"):
                    headers["Retry-After"] = str(rule["retry_after"])
                return self.reply(rule["status"], status_body(rule["status"], "Injected", "injected fault"), headers)

        try:
            patch = json.loads(body_text) if body_text else {}
        except ValueError:
            return self.reply(400, status_body(400, "BadRequest", "body is not JSON"))

        if self.command == "GET" and parts == ["api", "v1", "pods"] and \
                query.get("watch", ["false"])[0] in ("true", "1"):
            return self.watch(state, query, rule.get("cut_after") if rule else None)
        with state.lock:
            # GET /api/v1/pods?fieldSelector=spec.nodeName=N&limit=L&continue=T&resourceVersion=RV
            if self.command == "GET" and parts == ["api", "v1", "pods"]:
                matches = self.selector(query)
                if matches is None:
                    return self.reply(400, status_body(400, "BadRequest", "unsupported selector"))
                rv = query.get("resourceVersion", [""])[0]
                match = query.get("resourceVersionMatch", [""])[0]
                limit = int(query.get("limit", ["0"])[0])
                if "continue" in query and rv:
                    return self.reply(400, status_body(400, "BadRequest",
                                      "specifying resource version is not allowed when using continue"))
                # apimachinery/pkg/apis/meta/internalversion/validation ValidateListOptions.
                if match and not rv:
                    return self.reply(400, status_body(400, "BadRequest",
                                      "resourceVersionMatch is forbidden unless resourceVersion is provided"))
                if match == "Exact" and rv == "0":
                    return self.reply(400, status_body(400, "BadRequest",
                                      "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""))
                if match not in ("", "Exact", "NotOlderThan"):
                    return self.reply(400, status_body(400, "BadRequest", "unknown resourceVersionMatch"))
                start = 0
                at = state.revision     # the watch cache, a consistent read: the newest
                if "continue" in query:
                    # A continue token carries its list's revision: an exact read at it.
                    token = query["continue"][0].split("-")
                    if len(token) != 3 or token[0] != "page":
                        return self.reply(410, status_body(410, "Expired", "continue token expired"))
                    start, at = int(token[1]), int(token[2])
                elif match == "Exact" or (not match and limit > 0 and rv not in ("", "0")):
                    # Exact, or the legacy exact match (delegator.go shouldDelegateList):
                    # etcd at that revision, not the watch cache.
                    at = min(int(rv), state.revision)
                snapshot = state.pods_at(at)
                if snapshot is None:
                    # etcd3 store.go: "The resourceVersion for the provided list is too old."
                    return self.reply(410, status_body(
                        410, "Expired", "The resourceVersion for the provided list is too old."))
                selected = [p for p in snapshot if matches(p)]
                limit = limit or len(selected) or 1
                page = selected[start:start + limit]
                metadata = {"resourceVersion": str(at)}
                if start + limit < len(selected):
                    metadata["continue"] = "page-%d-%d" % (start + limit, at)
                return self.reply(200, {"kind": "PodList", "apiVersion": "v1", "metadata": metadata,
                                        "items": page})
            # GET /apis/apps/v1/daemonsets (the watch cache: every query gets the newest)
            if self.command == "GET" and parts == ["apis", "apps", "v1", "daemonsets"]:
                if state.daemonsets is None:
                    return self.reply(404, status_body(404, "NotFound", "no daemonsets fixture"))
                return self.reply(200, {"kind": "DaemonSetList", "apiVersion": "apps/v1",
                                        "metadata": {"resourceVersion": str(state.revision)},
                                        "items": state.daemonsets})
            # /api/v1/nodes/N
            if parts[:3] == ["api", "v1", "nodes"] and len(parts) == 4:
                node = state.node(parts[3])
                if node is None:
                    return self.reply(404, status_body(404, "NotFound", 'nodes "%s" not found' % parts[3]))
                if self.command == "GET":
                    return self.reply(200, node)
                if self.command == "PATCH":
                    if self.headers.get("Content-Type") != "application/merge-patch+json":
                        return self.reply(415, status_body(415, "UnsupportedMediaType", "merge patch only"))
                    wanted = patch.get("metadata", {}).get("resourceVersion")
                    if wanted is not None and wanted != node["metadata"]["resourceVersion"]:
                        return self.reply(409, status_body(
                            409, "Conflict", 'Operation cannot be fulfilled on nodes "%s": the object '
                            'has been modified; please apply your changes to the latest version and '
                            'try again' % parts[3]))
                    patch.get("metadata", {}).pop("resourceVersion", None)
                    merged = merge_patch(node, patch)
                    merged["metadata"]["resourceVersion"] = state.bump()
                    if merged.get("spec", {}).get("taints") == []:
                        del merged["spec"]["taints"]
                    state.nodes[parts[3]] = merged
                    reply = copy.deepcopy(merged)
                    state.node_updated(parts[3])    # the controller reacts after our write
                    state.daemonset_pass()
                    return self.reply(200, reply)
            # /api/v1/namespaces/NS/pods/NAME/status
            if (len(parts) == 7 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "pods"
                    and parts[6] == "status" and self.command == "PATCH"):
                pod = next((p for p in state.pods if p["metadata"].get("namespace") == parts[3]
                            and p["metadata"]["name"] == parts[5]), None)
                if pod is None:
                    return self.reply(404, status_body(404, "NotFound", 'pods "%s" not found' % parts[5]))
                # The conditions merge by type only in a strategic merge patch; a merge patch
                # would replace the kubelet's conditions, a JSON patch is another format.
                if self.headers.get("Content-Type") != "application/strategic-merge-patch+json":
                    return self.reply(415, status_body(415, "UnsupportedMediaType",
                                                       "pods/status: strategic merge patch only"))
                # metadata.uid in the body that is not the pod's: the patched object fails
                # ValidateObjectMetaUpdate (uid immutable) -> 422 Invalid, not 409
                # (apiserver pkg/registry/rest/update.go BeforeUpdate).
                uid = patch.get("metadata", {}).get("uid")
                if uid is not None and uid != pod["metadata"]["uid"]:
                    doc = status_body(422, "Invalid", 'Pod "%s" is invalid: metadata.uid: Invalid '
                                      'value: "%s": field is immutable' % (parts[5], uid))
                    doc["details"] = {"name": parts[5], "kind": "Pod", "causes": [
                        {"reason": "FieldValueInvalid", "field": "metadata.uid"}]}
                    return self.reply(422, doc)
                strategic_status_patch(pod, patch)
                state.record_pod("MODIFIED", pod)
                return self.reply(200, pod)
            # DELETE /api/v1/namespaces/NS/pods/NAME with DeleteOptions
            if (len(parts) == 6 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "pods"
                    and self.command == "DELETE"):
                pod = next((p for p in state.pods if p["metadata"].get("namespace") == parts[3]
                            and p["metadata"]["name"] == parts[5]), None)
                if pod is None:
                    return self.reply(404, status_body(404, "NotFound", 'pods "%s" not found' % parts[5]))
                uid = (patch.get("preconditions") or {}).get("uid")
                if uid is not None and uid != pod["metadata"]["uid"]:
                    return self.reply(409, status_body(
                        409, "Conflict", "Precondition failed: UID in precondition: %s, UID in object "
                        "meta: %s" % (uid, pod["metadata"]["uid"])))
                grace = patch.get("gracePeriodSeconds")
                if grace is None:
                    grace = pod.get("spec", {}).get("terminationGracePeriodSeconds", 30)
                # pkg/registry/core/pod/strategy.go CheckGracefulDelete: an unscheduled or
                # terminal pod goes at once; finalizers keep any pod until they are removed.
                if pod.get("status", {}).get("phase") in ("Failed", "Succeeded"):
                    grace = 0
                if pod["metadata"].get("finalizers") or (grace > 0 and pod.get("spec", {}).get("nodeName")):
                    pod["metadata"]["deletionTimestamp"] = "2023-11-14T22:13:50Z"
                    pod["metadata"]["deletionGracePeriodSeconds"] = grace
                    state.record_pod("MODIFIED", pod)
                else:
                    state.pods.remove(pod)
                    state.record_pod("DELETED", pod)
                return self.reply(200, pod)
            # /api/v1/namespaces/NS/events[/NAME]
            if len(parts) >= 5 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "events":
                wanted = {"POST": "application/json", "PATCH": "application/strategic-merge-patch+json"}
                if self.command in wanted and self.headers.get("Content-Type") != wanted[self.command]:
                    return self.reply(415, status_body(415, "UnsupportedMediaType", "events: %s only"
                                                       % wanted[self.command]))
                if self.command == "POST" and len(parts) == 5:
                    key = (parts[3], patch.get("metadata", {}).get("name"))
                    if key in state.events:
                        return self.reply(409, status_body(409, "AlreadyExists", "event exists"))
                    state.events[key] = patch
                    return self.reply(201, patch)
                if self.command == "PATCH" and len(parts) == 6:
                    key = (parts[3], parts[5])
                    if key not in state.events:
                        return self.reply(404, status_body(404, "NotFound", "event not found"))
                    state.events[key] = merge_patch(state.events[key], patch)
                    return self.reply(200, state.events[key])
        return self.reply(404, status_body(404, "NotFound", "the stand-in does not serve %s %s"
                                           % (self.command, url.path)))

    def selector(self, query):
        """The fieldSelector as a predicate; None when it is not spec.nodeName=N."""
        wanted = []
        for selector in query.get("fieldSelector", []):
            key, _, value = selector.partition("=")
            if key != "spec.nodeName":
                return None
            wanted.append(value)
        return lambda pod: all(pod.get("spec", {}).get("nodeName") == v for v in wanted)

    def chunk(self, doc):
        data = (json.dumps(doc) + "\n").encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_chunks(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def cut(self, restart):
        """End the response without its end: the connection goes (HTTP/1.1)."""
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def handle(self):
        # ALPN picked h2 (--http2, as kube-apiserver offers it: Go's net/http): HTTP/2 frames.
        if self.server.http2 and self.connection.selected_alpn_protocol() == "h2":
            return H2Session(self).serve()
        return super().handle()

    def watch(self, state, query, cut_after=None):
        try:
            return self.stream_watch(state, query, cut_after)
        except (OSError, ssl.SSLError):
            self.close_connection = True    # the client went away: nothing to tell it

    def stream_watch(self, state, query, cut_after=None):
        matches = self.selector(query)
        if matches is None:
            return self.reply(400, status_body(400, "BadRequest", "unsupported selector"))
        rv_text = query.get("resourceVersion", [""])[0]
        timeout = float(query.get("timeoutSeconds", ["1800"])[0])
        if cut_after is not None:
            timeout = min(timeout, cut_after)   # ended early by the server, cleanly
        bookmarks = query.get("allowWatchBookmarks", ["false"])[0] == "true"
        deadline = time.monotonic() + timeout
        with state.lock:
            since = int(rv_text) if rv_text not in ("", "0") else state.revision
            generation = state.drop_generation
            oldest = max(state.cache_oldest, state.compacted)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        if since < oldest:
            # watch_cache.go getAllEventsSinceLocked: older than the cache's oldest event.
            self.chunk({"type": "ERROR", "object": status_body(
                410, "Expired", "too old resource version: %d (%d)" % (since, oldest))})
            self.end_chunks()
            return
        next_bookmark = time.monotonic() + self.server.bookmark_seconds
        while True:
            with state.lock:
                events = [(rev, kind, pod) for rev, kind, pod in state.history if rev > since]
                if state.blackhole:
                    if state.drop_generation == generation:
                        state.changed.wait(0.2)
                elif not events:
                    wait = min(deadline, next_bookmark) - time.monotonic()
                    if wait > 0 and state.drop_generation == generation:
                        state.changed.wait(wait)
                    events = [(rev, kind, pod) for rev, kind, pod in state.history if rev > since]
                dropped = state.drop_generation != generation
                revision = state.revision
                blackhole = state.blackhole
            if blackhole and not dropped:
                # Nothing at all reaches the client, not even the end at timeoutSeconds.
                continue
            if dropped:
                # Cut without the final chunk: the client sees a broken transfer.
                self.cut(state.drop_restart)
                return
            for rev, kind, pod in events:
                since = rev
                if matches(pod):
                    self.chunk({"type": kind, "object": dict(pod, kind="Pod", apiVersion="v1")})
            now = time.monotonic()
            if now >= deadline:
                self.end_chunks()
                return
            if bookmarks and now >= next_bookmark:
                since = max(since, revision)
                self.chunk({"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1",
                            "metadata": {"resourceVersion": str(since)}}})
                next_bookmark = now + self.server.bookmark_seconds

    def hook(self, state, parts, body_text):
        with state.lock:
            if parts == ["standin", "pods"]:
                pod = json.loads(body_text)
                old = next((p for p in state.pods if p["metadata"]["uid"] == pod["metadata"]["uid"]), None)
                if old is not None:
                    state.pods[state.pods.index(old)] = pod
                else:
                    state.pods.append(pod)
                state.record_pod("MODIFIED" if old is not None else "ADDED", pod)
            elif parts[:2] == ["standin", "delete-pod"] and len(parts) == 4:
                pod = next((p for p in state.pods if p["metadata"].get("namespace") == parts[2]
                            and p["metadata"]["name"] == parts[3]), None)
                if pod is not None:
                    state.pods.remove(pod)
                    state.record_pod("DELETED", pod)
            elif parts[:2] == ["standin", "kubelet-status"] and len(parts) == 4:
                # The kubelet's status manager writes {"phase": ..., ...} for this pod.
                pod = next((p for p in state.pods if p["metadata"].get("namespace") == parts[2]
                            and p["metadata"]["name"] == parts[3]), None)
                if pod is not None:
                    state.kubelet_status(pod, json.loads(body_text))
            elif parts == ["standin", "compact"]:
                # etcd compaction at a new revision: every older resourceVersion is gone.
                state.bump()
                state.compacted = state.revision
                state.base = copy.deepcopy(state.pods)
                state.base_revision = state.revision
                state.history = []
            elif parts == ["standin", "restart"]:
                # kube-apiserver restarted: its watch cache starts again, empty, from a list at
                # etcd's current revision (cacher.go, watch_cache.go Replace); other objects
                # (leases, events) moved the cluster-wide revision on meanwhile.
                state.bump()
                state.cache_oldest = state.revision
                state.drop_generation += 1
                state.drop_restart = True   # HTTP/2: the connection goes, not one stream
                state.changed.notify_all()
            elif parts == ["standin", "blackhole"]:
                state.blackhole = True
                state.changed.notify_all()
            elif parts == ["standin", "unblackhole"]:
                state.blackhole = False
                state.changed.notify_all()
            elif parts[:2] == ["standin", "node-status"] and len(parts) == 3:
                node = state.node(parts[2])
                node.setdefault("status", {})["conditions"] = json.loads(body_text)["conditions"]
                node["metadata"]["resourceVersion"] = state.bump()
                state.node_updated(parts[2])
                state.daemonset_pass()
            elif parts == ["standin", "reject-cert"]:
                # The client certificate in this PEM file is no longer accepted (expired):
                # requests on connections made with it get 401.
                state.rejected_certs.add(ssl._ssl._test_decode_cert(body_text.strip())["serialNumber"])
            elif parts == ["standin", "drop-watches"]:
                state.drop_generation += 1
                state.drop_restart = False  # HTTP/2: each watch's stream reset (RST_STREAM)
                state.changed.notify_all()
            else:
                return self.reply(404, status_body(404, "NotFound", "no such hook"))
            return self.reply(200, {"revision": state.revision})

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = handle_any


class H2Session:
    """One HTTP/2 connection (python3-h2, sans-IO): this thread alone reads and writes the TLS
    socket; each request runs in a thread of its own as an H2Stream (the handler's code,
    unchanged), which hands its frames to the connection under the lock and wakes this one."""

    def __init__(self, handler):
        self.handler = handler
        self.sock = handler.connection
        self.conn = h2.connection.H2Connection(config=h2.config.H2Configuration(
            client_side=False, header_encoding="utf-8"))
        self.lock = threading.Condition()
        self.requests = {}          # stream id -> (headers, body)
        self.closed = set()         # streams reset or ended by the client
        self.dead = False
        self.goaway = False         # close the connection once the frames are out
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_w.setblocking(False)

    def wake(self):
        try:
            self.wake_w.send(b"x")
        except (BlockingIOError, OSError):
            pass

    def serve(self):
        with self.lock:
            self.conn.initiate_connection()
        try:
            self.pump()
            while True:
                readable = [self.sock] if self.sock.pending() else \
                    select.select([self.sock, self.wake_r], [], [], 1.0)[0]
                if self.wake_r in readable:
                    self.wake_r.recv(4096)
                if self.sock in readable:
                    data = self.sock.recv(65536)
                    if not data:
                        break
                    with self.lock:
                        events = self.conn.receive_data(data)
                        self.lock.notify_all()
                    for event in events:
                        self.event(event)
                if not self.pump():
                    break
        except (OSError, ssl.SSLError, h2.exceptions.H2Error):
            pass
        finally:
            with self.lock:
                self.dead = True
                self.lock.notify_all()
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.wake_r.close()
            self.wake_w.close()
            self.handler.close_connection = True

    def pump(self):
        """Send what the connection has queued; False once it is to close."""
        with self.lock:
            data = self.conn.data_to_send()
            goaway = self.goaway
        if data:
            self.sock.sendall(data)
        return not goaway

    def event(self, event):
        if isinstance(event, h2.events.RequestReceived):
            self.requests[event.stream_id] = (event.headers, bytearray())
        elif isinstance(event, h2.events.DataReceived):
            self.requests[event.stream_id][1].extend(event.data)
            with self.lock:
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            headers, body = self.requests.pop(event.stream_id)
            threading.Thread(target=self.run, args=(event.stream_id, headers, bytes(body)), daemon=True).start()
        elif isinstance(event, h2.events.StreamReset):
            with self.lock:
                self.closed.add(event.stream_id)
                self.lock.notify_all()
        elif isinstance(event, h2.events.ConnectionTerminated):
            with self.lock:
                self.goaway = True

    def run(self, stream_id, headers, body):
        stream = H2Stream(self, stream_id, headers, body)
        try:
            stream.handle_any()
        except (OSError, ssl.SSLError, h2.exceptions.H2Error):
            return
        stream.finish_stream()

    def call(self, method, stream_id, *args, **kwargs):
        """A frame for stream_id; BrokenPipeError when the stream or connection is gone."""
        with self.lock:
            if self.dead or stream_id in self.closed:
                raise BrokenPipeError()
            try:
                method(stream_id, *args, **kwargs)
            except h2.exceptions.StreamClosedError:
                raise BrokenPipeError()
        self.wake()

    def send_data(self, stream_id, data):
        with self.lock:
            while data:
                if self.dead or stream_id in self.closed:
                    raise BrokenPipeError()
                try:
                    window = min(self.conn.local_flow_control_window(stream_id),
                                 self.conn.max_outbound_frame_size)
                except h2.exceptions.StreamClosedError:
                    raise BrokenPipeError()
                if window <= 0:
                    self.lock.wait(1.0)
                    continue
                self.conn.send_data(stream_id, data[:window])
                data = data[window:]
                self.wake()

    def close(self):
        """The server goes away: GOAWAY, then the connection closes."""
        with self.lock:
            if not self.dead:
                self.conn.close_connection()
                self.goaway = True
        self.wake()


class H2Writer:
    def __init__(self, stream):
        self.stream = stream

    def write(self, data):
        self.stream.session.send_data(self.stream.stream_id, bytes(data))

    def flush(self):
        pass


class H2Stream(Handler):
    """One HTTP/2 request through Handler's code: its status line and headers become a HEADERS
    frame, its body DATA frames, a watch's chunks one DATA frame each."""
    http_version = "2"

    def __init__(self, session, stream_id, headers, body):  # pylint: disable=super-init-not-called
        parent = session.handler
        self.session, self.stream_id = session, stream_id
        self.server, self.connection, self.client_address = parent.server, parent.connection, parent.client_address
        pseudo = {k: v for k, v in headers if k.startswith(":")}
        self.command, self.path = pseudo.get(":method", "GET"), pseudo.get(":path", "/")
        self.request_version = "HTTP/2"
        self.headers = http.client.HTTPMessage()
        for key, value in headers:
            if not key.startswith(":"):
                self.headers[key] = value
        if self.headers.get("Content-Length") is None:
            self.headers["Content-Length"] = str(len(body))
        self.rfile = io.BytesIO(body)
        self.wfile = H2Writer(self)
        self.close_connection = False
        self.status, self.out_headers, self.ended = 200, [], False

    def send_response(self, code, message=None):
        self.status, self.out_headers = code, []

    def send_header(self, keyword, value):
        # Connection-specific headers do not exist in HTTP/2 (RFC 9113 8.2.2).
        if keyword.lower() not in ("connection", "keep-alive", "transfer-encoding"):
            self.out_headers.append((keyword.lower(), str(value)))

    def end_headers(self):
        self.session.call(self.session.conn.send_headers, self.stream_id,
                          [(":status", str(self.status)), ("server", self.server_version)] + self.out_headers)

    def chunk(self, doc):
        self.session.send_data(self.stream_id, (json.dumps(doc) + "\n").encode())

    def end_chunks(self):
        self.finish_stream()

    def cut(self, restart):
        # A restart: the server's connection goes; else a proxy resets this stream.
        if restart:
            self.session.close()
        else:
            self.session.call(self.session.conn.reset_stream, self.stream_id, h2.errors.ErrorCodes.INTERNAL_ERROR)
        self.ended = True

    def finish_stream(self):
        if not self.ended:
            self.ended = True
            self.session.call(self.session.conn.end_stream, self.stream_id)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--make-certs")
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--port-file")
    parser.add_argument("--log")
    parser.add_argument("--fixtures")
    parser.add_argument("--faults")
    parser.add_argument("--token-file")
    parser.add_argument("--client-ca", help="verify client certificates against this CA (optional ones)")
    parser.add_argument("--rbac-no-pod-read", action="store_true",
                        help="the token may not list or watch pods (403), a node's certificate may its own")
    parser.add_argument("--state-dump", help="write the nodes, pods and events here on exit")
    parser.add_argument("--max-seconds", type=float, default=300)
    parser.add_argument("--bookmark-seconds", type=float, default=60)
    parser.add_argument("--log-time", action="store_true")
    parser.add_argument("--listen-backlog", type=int, default=5)
    parser.add_argument("--node-lifecycle-controller", action="store_true")
    parser.add_argument("--http2", action="store_true",
                        help="offer h2 by ALPN beside http/1.1, as kube-apiserver does (python3-h2)")
    args = parser.parse_args()

    if args.make_certs:
        make_certs(args.make_certs)
        return 0

    ThreadingHTTPServer.request_queue_size = args.listen_backlog
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    if args.http2 and h2 is None:
        print("kube-standin: --http2 needs python3-h2 (tools/install-deps.sh test)", file=sys.stderr)
        return 2
    context.set_alpn_protocols(["h2", "http/1.1"] if args.http2 else ["http/1.1"])
    if args.client_ca:
        context.verify_mode = ssl.CERT_OPTIONAL
        context.load_verify_locations(args.client_ca)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.state = State(args.fixtures)
    server.state.node_controller = args.node_lifecycle_controller
    server.log = open(args.log, "a")
    server.log_lock = threading.Lock()
    server.faults = args.faults
    server.token_file = args.token_file
    server.rbac_no_pod_read = args.rbac_no_pod_read
    server.http2 = args.http2
    server.bookmark_seconds = args.bookmark_seconds
    server.log_time = args.log_time

    def dump_state():
        if args.state_dump:
            with server.state.lock:
                doc = {"nodes": server.state.nodes, "pods": server.state.pods,
                       "events": [e for e in server.state.events.values()],
                       "controller_writes": server.state.controller_writes,
                       "daemon_pods_created": server.state.daemon_pods_created}
            with open(args.state_dump + ".tmp", "w") as f:
                json.dump(doc, f, sort_keys=True)
            os.rename(args.state_dump + ".tmp", args.state_dump)

    def stop(*_):
        dump_state()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGUSR1, lambda *_: dump_state())
    def daemonset_controller():
        while True:
            time.sleep(1)
            with server.state.lock:
                server.state.daemonset_pass()

    if server.state.daemonsets is not None:
        threading.Thread(target=daemonset_controller, daemon=True).start()
    # Never outlive a test that forgot us.
    threading.Timer(args.max_seconds, stop).start()
    with open(args.port_file + ".tmp", "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.rename(args.port_file + ".tmp", args.port_file)
    try:
        server.serve_forever()
    finally:
        dump_state()
    return 0


if __name__ == "__main__":
    sys.exit(main())
