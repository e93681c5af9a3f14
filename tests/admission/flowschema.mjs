// tools/deploy/flowschema.yaml: each request evictd's ClusterRole allows (rbac.yaml) is
// classified as the API server's Priority and Fairness filter does - FlowSchemas in increasing
// matchingPrecedence, then name (kubernetes/apiserver pkg/util/flowcontrol/apf_controller.go
// digestConfigObjects), the first whose rule matches (pkg/util/flowcontrol/rule.go
// matchesFlowSchema) - against evictd's schemas and the bootstrap ones it competes with
// (pkg/apis/flowcontrol/bootstrap/default.go), and must land where the kubelet's land.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// The bootstrap FlowSchemas a service account can meet (default.go), as [name, precedence,
// level, subjects, rules]. The rules are all-resources unless said.
const everything = [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] }];
const group = (name) => ({ kind: 'Group', group: { name } });
const bootstrap = [
	['exempt', 1, 'exempt', [group('system:masters')], everything],
	['system-node-high', 400, 'node-high', [group('system:nodes')],
		[{ verbs: ['*'], apiGroups: [''], resources: ['nodes', 'nodes/status'], clusterScope: true, namespaces: ['*'] }]],
	['system-nodes', 500, 'system', [group('system:nodes')], everything],
	['kube-system-service-accounts', 900, 'workload-high',
		[{ kind: 'ServiceAccount', serviceAccount: { namespace: 'kube-system', name: '*' } }], everything],
	['service-accounts', 9000, 'workload-low', [group('system:serviceaccounts')], everything],
	['global-default', 9900, 'global-default', [group('system:unauthenticated'), group('system:authenticated')], everything],
	['catch-all', 10000, 'catch-all', [group('*')], everything],
].map(([name, matchingPrecedence, level, subjects, resourceRules]) => ({
	metadata: { name }, spec: { matchingPrecedence, priorityLevelConfiguration: { name: level }, rules: [{ subjects, resourceRules }] },
}));

// rule.go: "*" in a list is the only member and matches all (containsString).
const contains = (x, list, all) => Array.isArray(list) && (list.length === 1 && list[0] === all || list.includes(x));
function subjectMatches(user, s) {
	if (s.kind === 'User') return s.user?.name === '*' || s.user?.name === user.name;
	if (s.kind === 'Group') return s.group?.name === '*' || user.groups.includes(s.group?.name);
	if (s.kind === 'ServiceAccount') {
		const prefix = `system:serviceaccount:${s.serviceAccount.namespace}:`;
		return s.serviceAccount.name === '*' ? user.name.startsWith(prefix) : user.name === prefix + s.serviceAccount.name;
	}
	return false;
}
function resourceRuleMatches(req, r) {
	if (!contains(req.verb, r.verbs, '*') || !contains(req.resource, r.resources, '*') ||
	    !contains(req.apiGroup, r.apiGroups, '*'))
		return false;
	return req.namespace === '' ? r.clusterScope === true : contains(req.namespace, r.namespaces, '*');
}
const matches = (req, fs) => (fs.spec.rules || []).some((rule) =>
	(rule.subjects || []).some((s) => subjectMatches(req.user, s)) &&
	(rule.resourceRules || []).some((r) => resourceRuleMatches(req, r)));
function classify(req, schemas) {
	const sorted = [...schemas].sort((a, b) => a.spec.matchingPrecedence - b.spec.matchingPrecedence ||
		(a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
	return sorted.find((fs) => matches(req, fs));
}

export function checkFlowSchema({ root, yaml, ok, evictdUser, saNamespace }) {
	const path = join(root, 'tools/deploy/flowschema.yaml');
	const ours = yaml.loadAll(readFileSync(path, 'utf8')).filter(Boolean);
	ok(ours.length > 0 && ours.every((d) => d.apiVersion === 'flowcontrol.apiserver.k8s.io/v1' && d.kind === 'FlowSchema'),
		'flowschema.yaml holds flowcontrol.apiserver.k8s.io/v1 FlowSchemas');
	// The API server's validation (pkg/apis/flowcontrol/validation): precedence 1..10000, a
	// namespaced rule names namespaces, a resource list with "*" has nothing else.
	ok(ours.every((fs) => fs.spec.matchingPrecedence >= 1 && fs.spec.matchingPrecedence <= 10000 &&
		fs.spec.rules.every((r) => r.subjects.length && r.resourceRules.every((rr) =>
			rr.verbs.length && rr.apiGroups.length && rr.resources.length && (rr.clusterScope || rr.namespaces?.length)))),
		'every FlowSchema is valid: precedence 1..10000, rules with subjects, verbs, groups, resources and a scope');
	ok(ours.every((fs) => ['system', 'node-high'].includes(fs.spec.priorityLevelConfiguration.name)),
		"evictd's FlowSchemas use the kubelet's priority levels (system, node-high), which the API server bootstraps");

	// Every request the ClusterRole allows, with the attributes APF sees (RequestInfo).
	const rbac = yaml.loadAll(readFileSync(join(root, 'tools/deploy/rbac.yaml'), 'utf8'));
	const role = rbac.find((d) => d?.kind === 'ClusterRole');
	const user = { name: evictdUser, groups: ['system:serviceaccounts', `system:serviceaccounts:${saNamespace}`, 'system:authenticated'] };
	const requests = [];
	// The base reads pods as the kubelet (system:nodes: the bootstrap system-nodes schema);
	// tools/overlays/cluster-wide-pod-read adds list and watch of pods for the token.
	const podReads = { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch'] };
	ok(!role.rules.some((r) => r.resources.includes('pods') && r.verbs.some((v) => v === 'list' || v === 'watch')),
		"rbac.yaml's ClusterRole grants no pod list or watch (the overlay does)");
	for (const rule of [...role.rules, podReads])
		for (const apiGroup of rule.apiGroups)
			for (const resource of rule.resources)
				for (const verb of rule.verbs) {
					const base = resource.split('/')[0];
					// The pod source's list and watch are /api/v1/pods, the DaemonSet list
					// /apis/apps/v1/daemonsets: no namespace.
					const namespace = base === 'nodes' || base === 'daemonsets' ||
						(base === 'pods' && (verb === 'list' || verb === 'watch')) ? '' : 'shop';
					requests.push({ user, verb, apiGroup, resource, namespace });
				}
	ok(requests.length >= 7, `rbac.yaml's ClusterRole and the overlay give ${requests.length} requests to classify`);
	// The kubelet's identity's pod reads: the kubelet's own schema, one flow per node.
	const node = { name: 'system:node:node-1', groups: ['system:nodes', 'system:authenticated'] };
	for (const verb of ['list', 'watch'])
		ok(classify({ user: node, verb, apiGroup: '', resource: 'pods', namespace: '' }, [...bootstrap, ...ours])
			?.metadata.name === 'system-nodes', `${verb} pods as the kubelet's certificate: system-nodes (system)`);
	for (const req of requests) {
		const want = req.resource === 'nodes' ? 'node-high' : 'system';
		const fs = classify(req, [...bootstrap, ...ours]);
		const without = classify(req, bootstrap);
		ok(fs?.spec.priorityLevelConfiguration.name === want && ours.includes(fs),
			`${req.verb} ${req.resource}${req.namespace ? ' in a namespace' : ' (cluster scope)'}: ${want} through ${fs?.metadata.name} ` +
			`(without flowschema.yaml: ${without?.spec.priorityLevelConfiguration.name} through ${without?.metadata.name})`,
			`classified as ${fs?.metadata.name} -> ${fs?.spec.priorityLevelConfiguration.name}`);
	}
	// Nobody else is moved: another service account stays in workload-low.
	const other = { user: { name: 'system:serviceaccount:shop:default', groups: ['system:serviceaccounts', 'system:authenticated'] },
		verb: 'list', apiGroup: '', resource: 'pods', namespace: '' };
	ok(classify(other, [...bootstrap, ...ours]).metadata.name === 'service-accounts',
		"another service account's requests stay in service-accounts (workload-low)");

	const readme = readFileSync(join(root, 'README.md'), 'utf8');
	ok(/kubectl apply -f tools\/deploy\/flowschema\.yaml/.test(readme), 'README "Deploying" applies tools/deploy/flowschema.yaml');
}
