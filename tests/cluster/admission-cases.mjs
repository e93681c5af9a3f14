// The cases of tests/cluster/test_admission.sh, one JSON object a line: evictd's own requests
// (tests/admission/requests) and every forbidden variant of tests/admission/run.mjs
// (tests/admission/variants.mjs, the one list both use), renamed onto the test's cluster, each
// with the verdict of the CEL evaluation (tests/admission/policy.mjs) when its packages are
// installed, so that the test can say where the real kube-apiserver judges differently.
//
// Usage: node tests/cluster/admission-cases.mjs NODE OTHER_NODE BARE_NODE NAMESPACE [POD]
//   NODE, OTHER_NODE  the fixtures' node-a and node-b
//   BARE_NODE         a Node without providerID or podCIDR, for the two cases this file adds
//                     (the API server's validation refuses a change of either once set, before
//                     admission; from unset, only the policy stands in the way)
//   NAMESPACE         the fixtures' namespace (shop)
//   POD               the pod of case I is named POD-I (default web)
// A line: { i, kind ("allowed", "variant" or "extra"), name, file, expect (the message part),
//   claim (the node the credential's node-name claim names; "" a token bound to nothing,
//   "legacy" a Secret's token), method, path,
//   contentType, body, stored (the object as it is before the request), js ({ applies,
//   allowed, denials: [{ index, message }] } or null without the packages) }.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { byFile, clone, fixtures, NODE, NODE_NAME_CLAIM, OTHER_NODE, variants } from '../admission/variants.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const [node, otherNode, bareNode, namespace, pod = 'web'] = process.argv.slice(2);
if (!namespace) {
	console.error('usage: admission-cases.mjs NODE OTHER_NODE BARE_NODE NAMESPACE');
	process.exit(2);
}

let judge = null;
try {
	const { loadDeps, makePolicy } = await import('../admission/policy.mjs');
	const deps = await loadDeps(process.env.EVICTD_ADMISSION_DEPS || join(root, 'tests/admission'));
	judge = makePolicy({ ...deps, root });
} catch (err) {
	console.error(`admission-cases: no CEL evaluation (${err.message.split('\n')[0]})`);
}

// Cases this file adds to run.mjs's, where the API server's validation refuses run.mjs's variant
// before admission (422). On a Node that never had them, providerID and podCIDR (ValidateNodeUpdate
// lets either change only from ""): the policy alone refuses them. And a pod IP replaced, podIP
// and podIPs alike (a strategic merge list replaced): run.mjs's adds an address to podIPs, which
// the real merge puts in front (two IPv4 addresses: invalid). (A second address of the other
// family is no case: v1 conversion keeps podIP authoritative when podIPs[0] differs, so the
// real server drops it and the write changes no IP.)
const bare = (f) => { delete f.stored.spec.providerID; delete f.stored.spec.podCIDR; delete f.stored.spec.podCIDRs; return f; };
const extras = [
	['spec.providerID set on a Node that has none', 'node-taint-add-memory-pressure.json',
		(f) => { bare(f).body.spec.providerID = 'aws:///x/i-evil'; return f; }, 'only taints'],
	['spec.podCIDR set on a Node that has none', 'node-taint-add-memory-pressure.json',
		(f) => { bare(f).body.spec.podCIDR = '10.244.9.0/24'; f.body.spec.podCIDRs = ['10.244.9.0/24']; return f; }, 'only taints'],
	['a pod IP replaced (podIP and podIPs)', 'pod-status-evicted-failed.json',
		(f) => { f.body.status.podIP = '10.244.9.9'; f.body.status.podIPs = [{ ip: '10.244.9.9' }, { $patch: 'replace' }]; return f; },
		'IPs, container statuses'],
	// A long-lived token of a kubernetes.io/service-account-token Secret: no user extra at all
	// (no credential id either); the policy must refuse it as it does a token without the claim.
	['a legacy Secret token (no user extra at all)', 'pod-status-evicted-failed.json', (f) => f, 'names no node', {}],
];

const cases = [
	...fixtures.map((f) => ['allowed', f.file, clone(f), null, undefined]),
	...variants.map(([name, file, change, expect, extra]) => ['variant', name, change(clone(byFile[file])), expect, extra]),
	...extras.map(([name, file, change, expect, extra]) => ['extra', name, change(clone(byFile[file])), expect, extra]),
];

const podName = byFile['pod-status-evicted-failed.json'].stored.metadata.name;
const shop = byFile['pod-status-evicted-failed.json'].stored.metadata.namespace;
cases.forEach(([kind, name, f, expect, extra], i) => {
	const names = {
		[NODE]: kind === 'extra' && f.stored.kind === 'Node' ? bareNode : node, [OTHER_NODE]: otherNode,
		[podName]: `${pod}-${i}`, [shop]: namespace,
	};
	const rename = (x) => {
		if (typeof x === 'string') return names[x] ?? x;
		if (Array.isArray(x)) return x.map(rename);
		if (x && typeof x === 'object') return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, rename(v)]));
		return x;
	};
	// The credential: a token bound to the claim's node, one bound to nothing ('') or, with no
	// extra at all, a legacy Secret token ('legacy').
	const claimed = !extra ? NODE : Object.keys(extra).length === 0 ? 'legacy' : extra[NODE_NAME_CLAIM]?.[0] ?? '';
	let js = null;
	if (judge) {
		const { req, object, oldObject } = judge.toAdmission(f, f.stored, extra && { extra });
		js = judge.admit(req, object, oldObject);
		for (const d of js.denials)
			d.message = d.message.replace(new RegExp(`\\b(${NODE}|${OTHER_NODE})\\b`, 'g'), (m) => names[m]);
	}
	console.log(JSON.stringify({
		i, kind, name, file: f.file, expect, claim: rename(claimed), method: f.method,
		path: f.path.split('/').map(rename).join('/'), contentType: f.contentType,
		body: rename(f.body), stored: rename(f.stored), js,
	}));
});
