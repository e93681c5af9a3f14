// Evaluates every CEL expression of tools/deploy/admission-policy.yaml with a CEL implementation
// (@marcbachmann/cel-js, optional types on, as Kubernetes enables them) against the requests
// evictd sends (requests/*.json: method, path, content type and body as user/kube/report*.c
// write them, and the stored object; tests/unit/test_admission.c checks each body is what the
// C builders produce) and against forbidden variants, the way the API server's
// ValidatingAdmissionPolicy plugin does (k8s.io/apiserver pkg/admission/plugin/policy/validating:
// matchConstraints, then matchConditions - any false skips the policy, an error applies
// failurePolicy - then variables and every validation; a false or failing validation denies
// under validationActions Deny; policy.mjs). The requests and variants are variants.mjs's, which
// tests/cluster/test_admission.sh sends to a real kube-apiserver as well. Then checks
// tools/deploy/flowschema.yaml (flowschema.mjs).
// Prints TAP. Usage: node tests/admission/run.mjs [REPO_ROOT]
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkFlowSchema } from './flowschema.mjs';
import { loadDeps, makePolicy } from './policy.mjs';
import { byFile, clone, EVICT, fixtures, podDelete, variants } from './variants.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(process.argv[2] || join(here, '../..'));
const depsDir = process.env.EVICTD_ADMISSION_DEPS || here;

// tools/install-deps.sh test installs the pinned packages (package-lock.json) here.
let deps;
try {
	deps = await loadDeps(depsDir);
} catch (err) {
	console.log(`1..0 # SKIP the CEL and YAML packages are not installed in ${depsDir}/node_modules ` +
		`(tools/install-deps.sh test): ${err.message.split('\n')[0]}`);
	process.exit(0);
}
const { yaml } = deps;

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

// ---- the policy (policy.mjs) -------------------------------------------------------------------
const { policy, binding, rbac, sa, evictdUser, spec, env, admit, toAdmission } = makePolicy({ ...deps, root });

// Every expression is compiled up front: a parse error is a failed test, not a deny.
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
const fired = new Set();
for (const [name, file, change, expect, extra] of variants) {
	const f = change(clone(byFile[file]));
	const { req, object, oldObject } = toAdmission(f, f.stored, extra && { extra });
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
