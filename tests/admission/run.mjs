// Evaluates every CEL expression of tools/deploy/admission-policy.yaml with a CEL implementation
// (@marcbachmann/cel-js, optional types on, as Kubernetes enables them) against the requests
// evictd sends (requests/*.json: method, path, content type and body as user/kube/report*.c
// write them, and the stored object; tests/unit/test_admission.c checks each body is what the
// C builders produce) and against forbidden variants, the way the API server's
// ValidatingAdmissionPolicy plugin does (k8s.io/apiserver pkg/admission/plugin/policy/validating:
// matchConstraints, then matchConditions - any false skips the policy, an error applies
// failurePolicy - then variables and every validation; a false or failing validation denies
// under validationActions Deny). Then checks tools/deploy/flowschema.yaml (flowschema.mjs).
// Prints TAP. Usage: node tests/admission/run.mjs [REPO_ROOT]
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { checkFlowSchema } from './flowschema.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(process.argv[2] || join(here, '../..'));
const depsDir = process.env.EVICTD_ADMISSION_DEPS || here;

// tools/install-deps.sh test installs the pinned packages (package-lock.json) here.
async function load(name) {
	const require = createRequire(join(depsDir, 'package.json'));
	return import(pathToFileURL(require.resolve(name)).href);
}
let cel, yaml;
try {
	cel = await load('@marcbachmann/cel-js');
	yaml = await load('js-yaml');
} catch (err) {
	console.log(`1..0 # SKIP the CEL and YAML packages are not installed in ${depsDir}/node_modules ` +
		`(tools/install-deps.sh test): ${err.message.split('\n')[0]}`);
	process.exit(0);
}

// ---- TAP --------------------------------------------------------------------------------------
let count = 0, failed = 0;
export function ok(pass, name, detail) {
	count++;
	console.log(`${pass ? 'ok' : 'not ok'} ${count} - ${name}`);
	if (!pass) {
		failed++;
		if (detail) console.log(String(detail).replace(/^/gm, '#   '));
	}
	return pass;
}

// ---- the policy -------------------------------------------------------------------------------
const docs = yaml.loadAll(readFileSync(join(root, 'tools/deploy/admission-policy.yaml'), 'utf8'));
const policy = docs.find((d) => d?.kind === 'ValidatingAdmissionPolicy');
const binding = docs.find((d) => d?.kind === 'ValidatingAdmissionPolicyBinding');
const rbac = yaml.loadAll(readFileSync(join(root, 'tools/deploy/rbac.yaml'), 'utf8'));
const sa = rbac.find((d) => d?.kind === 'ServiceAccount');
const evictdUser = `system:serviceaccount:${sa.metadata.namespace}:${sa.metadata.name}`;
const NODE = 'node-a';

// Kubernetes' CEL environment has the optional library (cel.OptionalTypes) and heterogeneous
// equality; objects are dynamic (DynType) at run time.
const env = new cel.Environment({
	unlistedVariablesAreDyn: true,
	enableOptionalTypes: true,
	homogeneousAggregateLiterals: false,
});

// Every expression is compiled up front: a parse error is a failed test, not a deny.
const spec = policy.spec;
const expressions = [
	...spec.matchConditions.map((c) => ['matchCondition ' + c.name, c.expression]),
	...spec.variables.map((v) => ['variable ' + v.name, v.expression]),
	...spec.validations.map((v, i) => [`validation ${i}`, v.expression]),
	...spec.validations.filter((v) => v.messageExpression).map((v, i) => [`messageExpression ${i}`, v.messageExpression]),
];
for (const [what, expr] of expressions) {
	let error = null;
	try { env.parse(expr); } catch (err) { error = err.message; }
	ok(!error, `${what} parses as CEL`, error);
}

// RuleWithOperations: "pods/*" is every subresource of pods, "*" every resource.
function ruleMatches(rule, req) {
	const resource = req.resource.resource + (req.subResource ? '/' + req.subResource : '');
	const has = (list, v) => list.includes('*') || list.includes(v);
	const resOk = rule.resources.some((r) => r === '*' || r === resource ||
		(r.endsWith('/*') && req.subResource && r.slice(0, -2) === req.resource.resource) ||
		(r.startsWith('*/') && r.slice(2) === req.subResource));
	return has(rule.apiGroups, req.resource.group) && has(rule.apiVersions, req.resource.version) &&
		has(rule.operations, req.operation) && resOk;
}

function evaluate(expr, ctx) {
	try {
		return { value: env.evaluate(expr, ctx) };
	} catch (err) {
		return { error: err.message.split('\n')[0] };
	}
}

// The plugin's decision: { applies, allowed, denials: [{index, message}] }.
export function admit(req, object, oldObject) {
	const denyOnError = spec.failurePolicy !== 'Ignore';
	if (!spec.matchConstraints.resourceRules.some((r) => ruleMatches(r, req)))
		return { applies: false, allowed: true, denials: [] };
	const ctx = { request: req, object, oldObject };
	let conditionError = null;
	for (const c of spec.matchConditions) {
		const r = evaluate(c.expression, ctx);
		if (r.error) conditionError = `matchCondition ${c.name}: ${r.error}`;
		else if (r.value === false) return { applies: false, allowed: true, denials: [] };
	}
	if (conditionError)
		return { applies: true, allowed: !denyOnError, denials: [{ index: -1, message: conditionError }] };
	// Variables are lazy in the API server: an error matters only to an expression using it.
	const variables = {}, broken = {};
	for (const v of spec.variables) {
		const r = evaluate(v.expression, { ...ctx, variables });
		if (r.error) broken[v.name] = r.error; else variables[v.name] = r.value;
	}
	const denials = [];
	spec.validations.forEach((v, index) => {
		const uses = Object.keys(broken).find((n) => new RegExp(`variables\\.${n}\\b`).test(v.expression));
		const r = uses ? { error: `variable ${uses}: ${broken[uses]}` } : evaluate(v.expression, { ...ctx, variables });
		if (r.error) {
			if (denyOnError) denials.push({ index, message: `expression error: ${r.error}` });
			return;
		}
		if (r.value === true) return;
		let message = v.message || `failed expression: ${v.expression}`;
		if (v.messageExpression) {
			const m = evaluate(v.messageExpression, { ...ctx, variables });
			if (!m.error && typeof m.value === 'string' && m.value) message = m.value;
		}
		denials.push({ index, message });
	});
	const deny = denials.length > 0 && binding.spec.validationActions.includes('Deny');
	return { applies: true, allowed: !deny, denials };
}

// ---- requests as the API server sees them -----------------------------------------------------
const clone = (x) => (x === undefined ? x : JSON.parse(JSON.stringify(x)));

// RFC 7386 JSON merge patch.
function mergePatch(target, patch) {
	if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return clone(patch);
	const out = target && typeof target === 'object' && !Array.isArray(target) ? clone(target) : {};
	for (const [k, v] of Object.entries(patch)) {
		if (v === null) delete out[k];
		else out[k] = mergePatch(out[k], v);
	}
	return out;
}

// Strategic merge patch for the fields evictd patches: lists with a patchMergeKey in
// k8s.io/api core/v1 types.go (PodStatus.Conditions: type, ContainerStatuses: name ...) merge
// by that key; other lists are replaced.
const MERGE_KEYS = { conditions: 'type', podIPs: 'ip', hostIPs: 'ip', containerStatuses: 'name',
	initContainerStatuses: 'name', ephemeralContainerStatuses: 'name', taints: null };
function strategicPatch(target, patch) {
	if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return clone(patch);
	const out = target && typeof target === 'object' && !Array.isArray(target) ? clone(target) : {};
	for (const [k, v] of Object.entries(patch)) {
		if (v === null) delete out[k];
		else if (Array.isArray(v) && MERGE_KEYS[k] && Array.isArray(out[k])) {
			const key = MERGE_KEYS[k];
			for (const item of v) {
				const i = out[k].findIndex((e) => e[key] === item[key]);
				if (i >= 0) out[k][i] = strategicPatch(out[k][i], item); else out[k].push(clone(item));
			}
		} else out[k] = strategicPatch(out[k], v);
	}
	return out;
}

// A request of evictd (method, path, content type, body) against the stored object, as the
// admission chain gets it: PATCH is UPDATE with the patched object after the strategy's
// PrepareForUpdate (kubernetes/kubernetes pkg/registry/core/node/strategy.go: a Node's status
// is kept; pkg/registry/core/pod/strategy.go podStatusStrategy: spec and ownerReferences kept);
// DELETE (which evictd never sends: a forbidden variant) has object null and the stored object
// as oldObject.
export function toAdmission(fixture, stored, user = { username: evictdUser, extra: { 'authentication.kubernetes.io/node-name': [NODE] } }) {
	const m = fixture.path.match(/^\/api\/(v1)\/(?:namespaces\/([^/]+)\/)?([^/]+)(?:\/([^/]+))?(?:\/([^/]+))?$/);
	if (!m) throw new Error(`unparsed path ${fixture.path}`);
	const [, version, namespace = '', resource, name = '', subResource = ''] = m;
	const operation = { PATCH: 'UPDATE', PUT: 'UPDATE', DELETE: 'DELETE', POST: 'CREATE' }[fixture.method];
	let object = null;
	const oldObject = operation === 'CREATE' ? null : clone(stored);
	if (operation === 'UPDATE') {
		const apply = fixture.contentType === 'application/merge-patch+json' ? mergePatch :
			fixture.contentType === 'application/strategic-merge-patch+json' ? strategicPatch : null;
		object = apply ? apply(stored, fixture.body) : clone(fixture.body);
		if (resource === 'nodes' && !subResource) object.status = clone(stored.status);
		if (resource === 'pods' && subResource === 'status') {
			object.spec = clone(stored.spec);
			object.metadata.ownerReferences = clone(stored.metadata.ownerReferences);
		}
	} else if (operation === 'CREATE') object = clone(fixture.body);
	const req = {
		uid: '705ab4f5-6393-11e8-b7cc-42010a800002',
		kind: { group: '', version, kind: resource === 'nodes' ? 'Node' : 'Pod' },
		resource: { group: '', version, resource },
		subResource,
		requestKind: { group: '', version, kind: resource === 'nodes' ? 'Node' : 'Pod' },
		requestResource: { group: '', version, resource },
		requestSubResource: subResource,
		name, namespace, operation,
		userInfo: { username: user.username, uid: 'c1b5', groups: ['system:serviceaccounts',
			`system:serviceaccounts:${sa.metadata.namespace}`, 'system:authenticated'], extra: user.extra },
		dryRun: false,
	};
	return { req, object, oldObject };
}

const objects = {};
for (const f of readdirSync(join(here, 'objects')))
	objects[f] = JSON.parse(readFileSync(join(here, 'objects', f), 'utf8'));
const fixtures = readdirSync(join(here, 'requests')).filter((f) => f.endsWith('.json')).sort().map((f) => {
	const fx = JSON.parse(readFileSync(join(here, 'requests', f), 'utf8'));
	fx.file = f;
	fx.stored = clone(objects[fx.oldObject]);
	if (fx.oldTaints) fx.stored.spec.taints = fx.oldTaints;
	return fx;
});

// ---- the fixtures are evictd's requests: its strings, from the C headers -----------------------
const header = readFileSync(join(root, 'user/kube/kube_report.h'), 'utf8');
const define = (name) => header.match(new RegExp(`#define ${name} "([^"]*)"`))?.[1];
const taintKeys = ['MEMORY_PRESSURE', 'DISK_PRESSURE', 'PID_PRESSURE', 'SHUTDOWN', 'OUT_OF_SERVICE']
	.map((t) => define('KUBE_TAINT_KEY_' + t));
const policyText = JSON.stringify(spec);
ok(taintKeys.every((k) => k && policyText.includes(`'${k}'`)),
	`the policy names every taint key of user/kube/kube_report.h (${taintKeys.join(', ')})`);
for (const [name, variable] of [['KUBE_REASON_EVICTED', 'podReasons'], ['KUBE_REASON_SHUTDOWN_TERMINATED', 'podReasons'],
	['KUBE_MESSAGE_SHUTDOWN', 'podReasons'], ['KUBE_REASON_TERMINATION_BY_KUBELET', 'disruptionReasons']]) {
	const v = spec.variables.find((x) => x.name === variable);
	ok(define(name) && v?.expression.includes(`'${define(name)}'`), `variables.${variable} has ${name} "${define(name)}"`);
}
// Every fixture is a write evictd sends: a PATCH (no DELETE: an evicted pod stays Failed).
ok(fixtures.every((f) => f.method === 'PATCH'), 'every request fixture is a PATCH: evictd deletes and creates no pod or Node',
	fixtures.filter((f) => f.method !== 'PATCH').map((f) => `${f.file}: ${f.method}`).join('\n'));
const fixtureTaintKeys = new Set(fixtures.flatMap((f) => f.body?.spec?.taints || []).map((t) => t.key));
ok([...fixtureTaintKeys].filter((k) => k !== 'dedicated').every((k) => taintKeys.includes(k)) &&
	taintKeys.every((k) => fixtureTaintKeys.has(k)), 'the node fixtures add every taint evictd owns and no other');

// ---- evictd's requests are allowed ------------------------------------------------------------
for (const fx of fixtures) {
	const { req, object, oldObject } = toAdmission(fx, fx.stored);
	const d = admit(req, object, oldObject);
	ok(d.applies && d.allowed, `allowed: ${fx.method} ${fx.path} (${fx.file}: ${fx.sentBy})`,
		d.applies ? d.denials.map((x) => `validation ${x.index}: ${x.message}`).join('\n') : 'the policy did not apply');
}

// ---- forbidden variants -----------------------------------------------------------------------
const byFile = Object.fromEntries(fixtures.map((f) => [f.file, f]));
const fired = new Set();
const otherNode = (o) => { o.metadata.name = 'node-b'; };
// The DELETE of the fixture pod as kube_pod_delete_options sent it before issue 20.
const podDelete = (f) => {
	f.method = 'DELETE'; f.path = f.path.replace(/\/status$/, ''); f.contentType = 'application/json';
	f.body = { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 30, preconditions: { uid: f.stored.metadata.uid } };
	return f;
};
const EVICT = 'pod-status-evicted-failed.json';
// [name, fixture, change(fixture copy) -> fixture, expected message part, user override]
const variants = [
	['a Node other than its own', 'node-taint-add-memory-pressure.json',
		(f) => { f.path = '/api/v1/nodes/node-b'; otherNode(f.stored); return f; }, 'only its own Node'],
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
	['a credential without the node-name claim', EVICT, (f) => f, 'names no node',
		{ username: evictdUser, extra: {} }],
	['a claim naming another node', 'node-taint-add-memory-pressure.json', (f) => f, 'only its own Node',
		{ username: evictdUser, extra: { 'authentication.kubernetes.io/node-name': ['node-b'] } }],
];
for (const [name, file, change, expect, user] of variants) {
	const f = change(clone(byFile[file]));
	const { req, object, oldObject } = toAdmission(f, f.stored, user);
	const d = admit(req, object, oldObject);
	d.denials.forEach((x) => fired.add(x.index));
	ok(d.applies && !d.allowed && d.denials.some((x) => x.message.includes(expect)),
		`denied: ${name} (${f.method} ${f.path}) with "${expect}"`,
		`applies=${d.applies} allowed=${d.allowed}\n` + d.denials.map((x) => `validation ${x.index}: ${x.message}`).join('\n'));
}
// Every validation has teeth: some forbidden variant is refused by it.
spec.validations.forEach((v, i) => ok(fired.has(i), `validation ${i} denies at least one forbidden variant: ${v.message || v.messageExpression}`.replace(/\s+/g, ' ')));

// Another service account is not this policy's business (its own RBAC decides); evictd's
// ClusterRoleBinding binds only the account the policy matches.
{
	const f = podDelete(clone(byFile[EVICT]));
	f.stored.spec.nodeName = 'node-b';
	const { req, object, oldObject } = toAdmission(f, f.stored,
		{ username: 'system:serviceaccount:kube-system:generic-garbage-collector', extra: {} });
	ok(!admit(req, object, oldObject).applies, 'the policy leaves other service accounts alone (matchConditions)');
	const crb = rbac.find((d) => d?.kind === 'ClusterRoleBinding');
	ok(crb.subjects.length === 1 && `system:serviceaccount:${crb.subjects[0].namespace}:${crb.subjects[0].name}` === evictdUser &&
		spec.matchConditions.some((c) => c.expression.includes(`'${evictdUser}'`)),
		`evictd's ClusterRole is bound only to ${evictdUser}, the account the policy confines`);
}

// A policy that fails open would make every denial above meaningless.
ok(spec.failurePolicy === 'Fail' && binding.spec.policyName === policy.metadata.name &&
	binding.spec.validationActions.includes('Deny'), 'failurePolicy Fail, and the Binding denies with this policy');

// ---- the FlowSchema ---------------------------------------------------------------------------
checkFlowSchema({ root, yaml, ok, evictdUser, saNamespace: sa.metadata.namespace });

console.log(`1..${count}`);
process.exit(failed ? 1 : 0);
