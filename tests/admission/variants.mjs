// The requests evictd sends (requests/*.json: method, path, content type and body as
// user/kube/report*.c write them, each with its stored object from objects/ and, for a Node,
// the taints it had) and the forbidden variants of them. Shared by tests/admission/run.mjs,
// where a CEL implementation judges them (policy.mjs), and tests/cluster/test_admission.sh,
// where the real kube-apiserver does (tests/cluster/admission-cases.mjs). No npm package needed.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const clone = (x) => (x === undefined ? x : JSON.parse(JSON.stringify(x)));
// The node the fixtures' evictd runs on, and another one.
export const NODE = 'node-a';
export const OTHER_NODE = 'node-b';
// k8s.io/apiserver pkg/authentication/serviceaccount NodeNameKey: the node of a bound token.
export const NODE_NAME_CLAIM = 'authentication.kubernetes.io/node-name';

const objects = {};
for (const f of readdirSync(join(here, 'objects')))
	objects[f] = JSON.parse(readFileSync(join(here, 'objects', f), 'utf8'));
export const fixtures = readdirSync(join(here, 'requests')).filter((f) => f.endsWith('.json')).sort().map((f) => {
	const fx = JSON.parse(readFileSync(join(here, 'requests', f), 'utf8'));
	fx.file = f;
	fx.stored = clone(objects[fx.oldObject]);
	if (fx.oldTaints) fx.stored.spec.taints = fx.oldTaints;
	return fx;
});

// ---- forbidden variants -----------------------------------------------------------------------
export const byFile = Object.fromEntries(fixtures.map((f) => [f.file, f]));
const otherNode = (o) => { o.metadata.name = OTHER_NODE; };
// The DELETE of the fixture pod as kube_pod_delete_options sent it before issue 20.
export const podDelete = (f) => {
	f.method = 'DELETE'; f.path = f.path.replace(/\/status$/, ''); f.contentType = 'application/json';
	f.body = { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 30, preconditions: { uid: f.stored.metadata.uid } };
	return f;
};
export const EVICT = 'pod-status-evicted-failed.json';
// [name, fixture, change(fixture copy) -> fixture, expected message part, the user's extra when
// it is not the own node's claim]
export const variants = [
	['a Node other than its own', 'node-taint-add-memory-pressure.json',
		(f) => { f.path = `/api/v1/nodes/${OTHER_NODE}`; otherNode(f.stored); return f; }, 'only its own Node'],
	['a label on its Node', 'node-taint-add-memory-pressure.json',
		(f) => { f.body.metadata.labels = { 'node-role.kubernetes.io/control-plane': '' }; return f; }, "labels, annotations"],
	['a label removed from its Node', 'node-taint-add-memory-pressure.json',
		(f) => { f.body.metadata.labels = { dedicated: null }; return f; }, "labels, annotations"],
	['an annotation on its Node', 'node-taint-add-memory-pressure.json',
		(f) => { f.body.metadata.annotations = { 'evil': 'x' }; return f; }, "labels, annotations"],
	['spec.unschedulable (a cordon)', 'node-taint-add-memory-pressure.json',
		(f) => { f.body.spec.unschedulable = true; return f; }, 'only taints'],
	['spec.providerID', 'node-taint-add-memory-pressure.json',
		(f) => { f.body.spec.providerID = 'aws:///x/i-evil'; return f; }, 'only taints'],
	["someone else's taint removed", 'node-taint-add-memory-pressure.json',
		(f) => { f.body.spec.taints = f.body.spec.taints.filter((t) => t.key !== 'dedicated'); return f; }, 'only its own taints'],
	["someone else's taint changed", 'node-taint-add-memory-pressure.json',
		(f) => { f.body.spec.taints[0].value = 'cpu'; return f; }, 'only its own taints'],
	['a taint that is not evictd\'s added', 'node-taint-add-memory-pressure.json',
		(f) => { f.body.spec.taints.push({ key: 'example.com/evil', effect: 'NoExecute' }); return f; }, 'only its own taints'],
	["the kubelet's node.kubernetes.io/memory-pressure added", 'node-taint-add-memory-pressure.json',
		(f) => { f.body.spec.taints.push({ key: 'node.kubernetes.io/memory-pressure', effect: 'NoSchedule' }); return f; }, 'only its own taints'],
	['an evictd.io key with another effect (NoExecute)', 'node-taint-add-memory-pressure.json',
		(f) => { f.body.spec.taints[1].effect = 'NoExecute'; return f; }, 'only its own taints'],
	['an evictd.io taint with a value', 'node-taint-add-memory-pressure.json',
		(f) => { f.body.spec.taints[1].value = 'x'; return f; }, 'with no value'],
	["an operator's out-of-service taint (another value) removed", 'node-taint-remove-all.json',
		(f) => { f.stored.spec.taints[1].value = 'manual'; return f; }, 'only its own taints'],
	['Node status (nodes/status)', 'node-taint-add-memory-pressure.json',
		(f) => { f.path += '/status'; f.body = { status: { conditions: [{ type: 'Ready', status: 'False' }] } }; return f; }, 'sends no nodes/status UPDATE'],
	['a Node deleted', 'node-taint-add-memory-pressure.json',
		(f) => { f.method = 'DELETE'; return f; }, 'sends no nodes DELETE'],
	['a Node created', 'node-taint-add-memory-pressure.json',
		(f) => { f.method = 'POST'; f.path = '/api/v1/nodes'; f.body = clone(f.stored); return f; }, 'sends no nodes CREATE'],
	// evictd deletes no pod (doc/DESIGN.md §8): not its own node's, not with a uid precondition.
	['a pod DELETE with a uid precondition', EVICT, podDelete, 'sends no pods DELETE'],
	['a pod on another node deleted', EVICT,
		(f) => { podDelete(f); f.stored.spec.nodeName = 'node-b'; return f; }, 'only pods bound to that node'],
	['an unscheduled pod deleted', EVICT,
		(f) => { podDelete(f); delete f.stored.spec.nodeName; return f; }, 'only pods bound to that node'],
	['the status of an unscheduled pod', EVICT,
		(f) => { delete f.stored.spec.nodeName; return f; }, 'only pods bound to that node'],
	['the status of a pod on another node', EVICT,
		(f) => { f.stored.spec.nodeName = 'node-b'; return f; }, 'only pods bound to that node'],
	['a pod label through pods/status', EVICT,
		(f) => { f.body.metadata.labels = { app: 'db' }; return f; }, "labels, annotations or finalizers"],
	['a forged config.source annotation through pods/status', EVICT,
		(f) => { f.body.metadata.annotations = { 'kubernetes.io/config.source': 'file' }; return f; }, "labels, annotations or finalizers"],
	['another annotation beside evictd.io/failed-at through pods/status', EVICT,
		(f) => { f.body.metadata.annotations['kubernetes.io/config.source'] = 'file'; return f; }, "labels, annotations or finalizers"],
	['a pod phase Succeeded', 'pod-status-shutdown-failed.json',
		(f) => { f.body.status.phase = 'Succeeded'; return f; }, 'only to phase Failed'],
	['a pod Failed with a reason evictd does not write', 'pod-status-shutdown-failed.json',
		(f) => { f.body.status.reason = 'NodeLost'; return f; }, 'only to phase Failed'],
	['a pod Failed, reason Evicted, with a message that is not the kubelet\'s', EVICT,
		(f) => { f.body.status.message = f.body.status.conditions[0].message = 'all fine'; return f; }, 'only to phase Failed'],
	['a shutdown message with reason Evicted', 'pod-status-shutdown-failed.json',
		(f) => { f.body.status.reason = 'Evicted'; return f; }, 'only to phase Failed'],
	['the pre-issue-20 shape: DisruptionTarget without the phase', EVICT,
		(f) => { delete f.body.status.phase; delete f.body.status.reason; delete f.body.status.message; return f; }, 'only to phase Failed'],
	['Failed without the DisruptionTarget condition', EVICT,
		(f) => { delete f.body.status.conditions; return f; }, 'only the DisruptionTarget'],
	['DisruptionTarget with a message other than the status message', EVICT,
		(f) => { f.body.status.conditions[0].message = 'The node was low on resource: cpu. '; return f; }, 'only the DisruptionTarget'],
	['a pod Ready condition turned False', EVICT,
		(f) => { f.body.status.conditions.push({ type: 'Ready', status: 'False' }); return f; }, 'only the DisruptionTarget'],
	['DisruptionTarget with another reason', EVICT,
		(f) => { f.body.status.conditions[0].reason = 'PreemptionByScheduler'; return f; }, 'only the DisruptionTarget'],
	['DisruptionTarget False', EVICT,
		(f) => { f.body.status.conditions[0].status = 'False'; return f; }, 'only the DisruptionTarget'],
	['a pod IP', EVICT,
		(f) => { f.body.status.podIP = '10.244.9.9'; f.body.status.podIPs = [{ ip: '10.244.9.9' }]; return f; }, 'IPs, container statuses'],
	['a container status (ready)', EVICT,
		(f) => { f.body.status.containerStatuses = [{ name: 'web', ready: false }]; return f; }, 'IPs, container statuses'],
	['a pod spec patch (pods UPDATE)', EVICT,
		(f) => { f.path = f.path.replace(/\/status$/, ''); f.body = { metadata: { labels: { app: 'x' } } }; return f; }, 'sends no pods UPDATE'],
	['an eviction (pods/eviction CREATE)', EVICT,
		(f) => { f.method = 'POST'; f.path = f.path.replace(/\/status$/, '/eviction'); f.body = { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'web-7d4b9c6f5-x2x9k', namespace: 'shop' } }; return f; }, 'sends no pods/eviction CREATE'],
	['a pod created', EVICT,
		(f) => { f.method = 'POST'; f.path = '/api/v1/namespaces/shop/pods'; f.body = clone(f.stored); return f; }, 'sends no pods CREATE'],
	// A token of the account bound to nothing (kubectl create token): its extra has the
	// credential id only, no node.
	['a credential without the node-name claim', EVICT, (f) => f, 'names no node',
		{ 'authentication.kubernetes.io/credential-id': ['JTI=f560d1ac-803a-4314-86bf-002882e613bb'] }],
	['a claim naming another node', 'node-taint-add-memory-pressure.json', (f) => f, 'only its own Node',
		{ [NODE_NAME_CLAIM]: [OTHER_NODE] }],
];
