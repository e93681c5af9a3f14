// tools/deploy/admission-policy.yaml judged by a CEL implementation (@marcbachmann/cel-js,
// optional types on, as Kubernetes enables them) the way the API server's
// ValidatingAdmissionPolicy plugin does (k8s.io/apiserver pkg/admission/plugin/policy/validating:
// matchConstraints, then matchConditions - any false skips the policy, an error applies
// failurePolicy - then variables and every validation; a false or failing validation denies
// under validationActions Deny), and a request of evictd turned into what the admission chain
// gets. Used by run.mjs (the TAP of the CEL evaluation) and tests/cluster/admission-cases.mjs
// (the same verdicts beside the real kube-apiserver's).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { clone, NODE, NODE_NAME_CLAIM } from './variants.mjs';

// The pinned packages (package-lock.json) in DEPS_DIR/node_modules, installed there by
// tools/install-deps.sh test; throws when they are not.
export async function loadDeps(depsDir) {
	const require = createRequire(join(depsDir, 'package.json'));
	const load = async (name) => import(pathToFileURL(require.resolve(name)).href);
	return { cel: await load('@marcbachmann/cel-js'), yaml: await load('js-yaml') };
}

// The policy and its Binding of ROOT/tools/deploy, evictd's account (rbac.yaml), the CEL
// environment, and the two functions: toAdmission (a request against its stored object, as
// the plugin gets it) and admit (the plugin's decision).
export function makePolicy({ cel, yaml, root }) {
	const docs = yaml.loadAll(readFileSync(join(root, 'tools/deploy/admission-policy.yaml'), 'utf8'));
	const policy = docs.find((d) => d?.kind === 'ValidatingAdmissionPolicy');
	const binding = docs.find((d) => d?.kind === 'ValidatingAdmissionPolicyBinding');
	const rbac = yaml.loadAll(readFileSync(join(root, 'tools/deploy/rbac.yaml'), 'utf8'));
	const sa = rbac.find((d) => d?.kind === 'ServiceAccount');
	const evictdUser = `system:serviceaccount:${sa.metadata.namespace}:${sa.metadata.name}`;

	const spec = policy.spec;

	// Kubernetes' CEL environment has the optional library (cel.OptionalTypes) and heterogeneous
	// equality; objects are dynamic (DynType) at run time.
	const env = new cel.Environment({
		unlistedVariablesAreDyn: true,
		enableOptionalTypes: true,
		homogeneousAggregateLiterals: false,
	});

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
	function admit(req, object, oldObject) {
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

	// ---- requests as the API server sees them ----------------------------------------------------
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
	// user: { username, extra } over evictd's account with the claim of NODE.
	function toAdmission(fixture, stored, over = {}) {
		const user = { username: evictdUser, extra: { [NODE_NAME_CLAIM]: [NODE] }, ...over };
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
		// The API server hands CEL the AdmissionRequest converted to unstructured JSON
		// (k8s.io/apiserver pkg/admission/plugin/cel condition.go CreateAdmissionRequest, then
		// runtime.DefaultUnstructuredConverter): a field tagged omitempty that is empty is absent,
		// and a plain read of it is an error ("no such key"), not ''. So are name, namespace,
		// subResource and requestSubResource (a Node PATCH has no subResource), and userInfo's
		// uid, groups and extra (a legacy Secret token has no extra at all). A CREATE's name is
		// the object's (admission.Attributes GetName).
		const omitEmpty = (o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== '' && v !== undefined &&
			!(v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0)));
		const req = omitEmpty({
			uid: '705ab4f5-6393-11e8-b7cc-42010a800002',
			kind: { group: '', version, kind: resource === 'nodes' ? 'Node' : 'Pod' },
			resource: { group: '', version, resource },
			subResource,
			requestKind: { group: '', version, kind: resource === 'nodes' ? 'Node' : 'Pod' },
			requestResource: { group: '', version, resource },
			requestSubResource: subResource,
			name: name || (operation === 'CREATE' ? object?.metadata?.name : '') || '',
			namespace, operation,
			userInfo: omitEmpty({ username: user.username, uid: 'c1b5', groups: ['system:serviceaccounts',
				`system:serviceaccounts:${sa.metadata.namespace}`, 'system:authenticated'], extra: user.extra }),
			dryRun: false,
		});
		return { req, object, oldObject };
	}

	return { docs, policy, binding, rbac, sa, evictdUser, spec, env, admit, toAdmission, mergePatch, strategicPatch };
}
