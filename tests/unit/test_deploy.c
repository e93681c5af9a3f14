// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The Kubernetes manifests in tools/deploy, parsed with libyaml: the DaemonSet has what
 * evictd needs on a node, and RBAC grants exactly the verbs the code uses. Each checker
 * returns its problems; mutated copies prove the checkers catch what they claim to. */
#include "testutil.h"

#include <stdbool.h>
#include <yaml.h>

#define DAEMONSET_FILE EVICTD_SRCDIR "/tools/deploy/daemonset.yaml"
#define RBAC_FILE EVICTD_SRCDIR "/tools/deploy/rbac.yaml"
#define MAX_DOCS 8

/* What the Kubernetes code paths call (tools/deploy/rbac.yaml says which uses what). */
static const char *const expected_grants[] = {
	"/pods:list", "/pods:watch", "/pods:delete",
	"/pods/status:patch",
	"/events:create", "/events:patch",
	"/nodes:get", "/nodes:patch",
};

struct docs {
	yaml_document_t doc[MAX_DOCS];
	int n;
};

struct problems {
	char text[4096];
	int n;
};

static void problem(struct problems *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct problems *p, const char *fmt, ...)
{
	size_t used = strlen(p->text);
	va_list ap;

	va_start(ap, fmt);
	if (used < sizeof(p->text) - 2) {
		vsnprintf(p->text + used, sizeof(p->text) - used - 1, fmt, ap);
		strcat(p->text, "\n");
	}
	va_end(ap);
	p->n++;
}

static void load_docs(const char *text, struct docs *docs)
{
	yaml_parser_t parser;

	memset(docs, 0, sizeof(*docs));
	assert_true(yaml_parser_initialize(&parser));
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
	for (;;) {
		yaml_document_t *doc = &docs->doc[docs->n];

		if (!yaml_parser_load(&parser, doc))
			fail_msg("YAML error: %s at line %zu", parser.problem, parser.problem_mark.line + 1);
		if (!yaml_document_get_root_node(doc)) {
			yaml_document_delete(doc);
			break;
		}
		assert_true(++docs->n < MAX_DOCS);
	}
	yaml_parser_delete(&parser);
}

static void free_docs(struct docs *docs)
{
	for (int i = 0; i < docs->n; i++)
		yaml_document_delete(&docs->doc[i]);
}

static char *read_text(const char *path)
{
	FILE *file = fopen(path, "r");
	char *text;
	long len;

	if (!file)
		fail_msg("%s: %s (tests run from the repository root)", path, strerror(errno));
	fseek(file, 0, SEEK_END);
	len = ftell(file);
	rewind(file);
	text = calloc(1, (size_t)len + 1);
	assert_int_equal(fread(text, 1, (size_t)len, file), (size_t)len);
	fclose(file);
	return text;
}

/* ---- a small DOM over libyaml's document ------------------------------------------------ */

static yaml_node_t *child(yaml_document_t *doc, yaml_node_t *node, const char *key)
{
	if (!node || node->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *pair = node->data.mapping.pairs.start; pair < node->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = yaml_document_get_node(doc, pair->key);

		if (k && k->type == YAML_SCALAR_NODE && !strcmp((const char *)k->data.scalar.value, key))
			return yaml_document_get_node(doc, pair->value);
	}
	return NULL;
}

/* "spec.template.spec.hostPID" */
static yaml_node_t *path_get(yaml_document_t *doc, yaml_node_t *node, const char *path)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *key = strtok_r(buf, ".", &save); key && node; key = strtok_r(NULL, ".", &save))
		node = child(doc, node, key);
	return node;
}

static const char *scalar(yaml_node_t *node)
{
	return node && node->type == YAML_SCALAR_NODE ? (const char *)node->data.scalar.value : NULL;
}

static const char *path_scalar(yaml_document_t *doc, yaml_node_t *node, const char *path)
{
	return scalar(path_get(doc, node, path));
}

static bool scalar_is(yaml_node_t *node, const char *value)
{
	return scalar(node) && !strcmp(scalar(node), value);
}

static size_t seq_len(yaml_node_t *node)
{
	return node && node->type == YAML_SEQUENCE_NODE ?
		       (size_t)(node->data.sequence.items.top - node->data.sequence.items.start) : 0;
}

static yaml_node_t *seq_at(yaml_document_t *doc, yaml_node_t *node, size_t i)
{
	return i < seq_len(node) ? yaml_document_get_node(doc, node->data.sequence.items.start[i]) : NULL;
}

static yaml_document_t *find_kind(struct docs *docs, const char *kind, yaml_node_t **root)
{
	for (int i = 0; i < docs->n; i++) {
		yaml_node_t *r = yaml_document_get_root_node(&docs->doc[i]);

		if (scalar_is(child(&docs->doc[i], r, "kind"), kind)) {
			*root = r;
			return &docs->doc[i];
		}
	}
	*root = NULL;
	return NULL;
}

/* ---- DaemonSet -------------------------------------------------------------------------- */

struct mount_rule {
	const char *host_path;
	const char *mount_path;
	bool read_only;		/* must be mounted read-only */
	const char *propagation;	/* required mountPropagation, or NULL */
	const char *host_type;	/* required hostPath.type, or NULL */
};

static const struct mount_rule mount_rules[] = {
	{ "/sys/fs/bpf", "/sys/fs/bpf", false, "Bidirectional", NULL },
	{ "/sys/fs/cgroup", "/sys/fs/cgroup", false, NULL, NULL },
	{ "/sys/kernel/btf", "/sys/kernel/btf", true, NULL, NULL },
	{ "/run/dbus", "/run/dbus", false, NULL, NULL },
	{ "/var/lib/kubelet", "/var/lib/kubelet", true, NULL, NULL },
	{ "/var/lib/evictd", "/var/lib/evictd", false, NULL, "DirectoryOrCreate" },
	{ "/run/evictd", "/run/evictd", false, NULL, NULL },
};

static void check_daemonset(struct docs *docs, const char *service_account, const char *sa_namespace,
			    struct problems *p)
{
	yaml_node_t *root, *pod, *container, *volumes, *mounts, *tolerations, *env, *ports;
	yaml_document_t *doc = find_kind(docs, "DaemonSet", &root);
	bool tolerates_all = false, node_name = false;
	const char *probe_port;
	int metrics_port = 0;

	if (!doc) {
		problem(p, "no DaemonSet document");
		return;
	}
	if (!scalar_is(child(doc, root, "apiVersion"), "apps/v1"))
		problem(p, "DaemonSet apiVersion is not apps/v1");
	pod = path_get(doc, root, "spec.template.spec");
	if (!pod) {
		problem(p, "no spec.template.spec");
		return;
	}
	if (!scalar_is(child(doc, pod, "hostPID"), "true"))
		problem(p, "hostPID is not true");
	if (!scalar_is(child(doc, pod, "priorityClassName"), "system-node-critical"))
		problem(p, "priorityClassName is not system-node-critical");
	if (!scalar_is(child(doc, pod, "serviceAccountName"), service_account))
		problem(p, "serviceAccountName is not the RBAC ServiceAccount %s", service_account);
	if (!scalar_is(path_get(doc, root, "metadata.namespace"), sa_namespace))
		problem(p, "DaemonSet namespace differs from the ServiceAccount's (%s)", sa_namespace);
	if (!scalar_is(child(doc, path_get(doc, root, "spec.selector.matchLabels"), "app.kubernetes.io/name"), "evictd"))
		problem(p, "selector does not match app.kubernetes.io/name=evictd");

	/* Tolerate every taint: an entry with operator Exists, no key and no effect. */
	tolerations = child(doc, pod, "tolerations");
	for (size_t i = 0; i < seq_len(tolerations); i++) {
		yaml_node_t *t = seq_at(doc, tolerations, i);

		if (scalar_is(child(doc, t, "operator"), "Exists") && !child(doc, t, "key") && !child(doc, t, "effect"))
			tolerates_all = true;
	}
	if (!tolerates_all)
		problem(p, "no toleration {operator: Exists} without key and effect: some taints are not tolerated");

	if (seq_len(child(doc, pod, "containers")) != 1) {
		problem(p, "expected exactly one container");
		return;
	}
	container = seq_at(doc, child(doc, pod, "containers"), 0);
	if (!scalar_is(path_get(doc, container, "securityContext.privileged"), "true"))
		problem(p, "container is not privileged");

	env = child(doc, container, "env");
	for (size_t i = 0; i < seq_len(env); i++) {
		yaml_node_t *e = seq_at(doc, env, i);

		if (scalar_is(child(doc, e, "name"), "NODE_NAME") &&
		    scalar_is(path_get(doc, e, "valueFrom.fieldRef.fieldPath"), "spec.nodeName"))
			node_name = true;
	}
	if (!node_name)
		problem(p, "no NODE_NAME from fieldRef spec.nodeName");

	/* Guaranteed QoS: cpu and memory requests equal to limits. */
	for (size_t r = 0; r < 2; r++) {
		const char *resource = r ? "memory" : "cpu";
		char req_path[64], lim_path[64];
		const char *request, *limit;

		snprintf(req_path, sizeof(req_path), "resources.requests.%s", resource);
		snprintf(lim_path, sizeof(lim_path), "resources.limits.%s", resource);
		request = path_scalar(doc, container, req_path);
		limit = path_scalar(doc, container, lim_path);
		if (!request || !limit || strcmp(request, limit))
			problem(p, "%s request (%s) != limit (%s): not Guaranteed", resource, request ? request : "none",
				limit ? limit : "none");
	}

	/* Liveness on /healthz of the metrics port, which evictd binds on the pod IP. */
	ports = child(doc, container, "ports");
	probe_port = path_scalar(doc, container, "livenessProbe.httpGet.port");
	if (!scalar_is(path_get(doc, container, "livenessProbe.httpGet.path"), "/healthz") || !probe_port)
		problem(p, "no livenessProbe httpGet /healthz");
	for (size_t i = 0; probe_port && i < seq_len(ports); i++) {
		yaml_node_t *port = seq_at(doc, ports, i);

		if (scalar_is(child(doc, port, "name"), probe_port) ||
		    scalar_is(child(doc, port, "containerPort"), probe_port))
			metrics_port = atoi(path_scalar(doc, port, "containerPort") ?: "0");
	}
	if (!metrics_port) {
		problem(p, "the liveness probe's port is not a declared container port");
	} else {
		char wanted[64];
		bool bound = false;
		yaml_node_t *args = child(doc, container, "args");

		snprintf(wanted, sizeof(wanted), "--metrics-address=0.0.0.0:%d", metrics_port);
		for (size_t i = 0; i < seq_len(args); i++)
			bound |= scalar_is(seq_at(doc, args, i), wanted);
		if (!bound)
			problem(p, "args lack %s: the probe could not reach a loopback-only server", wanted);
	}

	/* Every needed host path, mounted where evictd looks, with the right flags. */
	volumes = child(doc, pod, "volumes");
	mounts = child(doc, container, "volumeMounts");
	for (size_t r = 0; r < sizeof(mount_rules) / sizeof(mount_rules[0]); r++) {
		const struct mount_rule *rule = &mount_rules[r];
		const char *volume_name = NULL;
		yaml_node_t *mount = NULL;

		for (size_t i = 0; i < seq_len(volumes); i++) {
			yaml_node_t *v = seq_at(doc, volumes, i);

			if (scalar_is(path_get(doc, v, "hostPath.path"), rule->host_path)) {
				volume_name = scalar(child(doc, v, "name"));
				if (rule->host_type && !scalar_is(path_get(doc, v, "hostPath.type"), rule->host_type))
					problem(p, "hostPath %s is not type %s", rule->host_path, rule->host_type);
			}
		}
		if (!volume_name) {
			problem(p, "no hostPath volume for %s", rule->host_path);
			continue;
		}
		for (size_t i = 0; i < seq_len(mounts); i++)
			if (scalar_is(child(doc, seq_at(doc, mounts, i), "name"), volume_name))
				mount = seq_at(doc, mounts, i);
		if (!mount) {
			problem(p, "volume %s (%s) is not mounted", volume_name, rule->host_path);
			continue;
		}
		if (!scalar_is(child(doc, mount, "mountPath"), rule->mount_path))
			problem(p, "%s is mounted at %s, not %s", rule->host_path,
				scalar(child(doc, mount, "mountPath")) ?: "?", rule->mount_path);
		if (rule->read_only && !scalar_is(child(doc, mount, "readOnly"), "true"))
			problem(p, "%s is not mounted read-only", rule->host_path);
		if (!rule->read_only && scalar_is(child(doc, mount, "readOnly"), "true"))
			problem(p, "%s must be writable", rule->host_path);
		if (rule->propagation && !scalar_is(child(doc, mount, "mountPropagation"), rule->propagation))
			problem(p, "%s mountPropagation is not %s", rule->host_path, rule->propagation);
	}
	/* No dangling mount. */
	for (size_t i = 0; i < seq_len(mounts); i++) {
		const char *name = scalar(child(doc, seq_at(doc, mounts, i), "name"));
		bool declared = false;

		for (size_t v = 0; v < seq_len(volumes); v++)
			declared |= name && scalar_is(child(doc, seq_at(doc, volumes, v), "name"), name);
		if (!declared)
			problem(p, "volumeMount %s has no volume", name ? name : "?");
	}
}

/* ---- RBAC ------------------------------------------------------------------------------- */

static void check_rbac(struct docs *docs, const char **sa_name, const char **sa_namespace, struct problems *p)
{
	yaml_node_t *sa_root, *role_root, *binding_root, *rules, *subjects;
	yaml_document_t *sa = find_kind(docs, "ServiceAccount", &sa_root);
	yaml_document_t *role = find_kind(docs, "ClusterRole", &role_root);
	yaml_document_t *binding = find_kind(docs, "ClusterRoleBinding", &binding_root);
	char granted[64][64];
	size_t n_granted = 0;
	bool bound = false;

	*sa_name = *sa_namespace = "";
	if (!sa || !role || !binding) {
		problem(p, "rbac.yaml needs a ServiceAccount, a ClusterRole and a ClusterRoleBinding");
		return;
	}
	*sa_name = path_scalar(sa, sa_root, "metadata.name") ?: "";
	*sa_namespace = path_scalar(sa, sa_root, "metadata.namespace") ?: "";

	rules = child(role, role_root, "rules");
	for (size_t r = 0; r < seq_len(rules); r++) {
		yaml_node_t *rule = seq_at(role, rules, r);
		yaml_node_t *groups = child(role, rule, "apiGroups"), *resources = child(role, rule, "resources");
		yaml_node_t *verbs = child(role, rule, "verbs");

		if (child(role, rule, "nonResourceURLs"))
			problem(p, "rule %zu grants nonResourceURLs", r);
		for (size_t g = 0; g < seq_len(groups); g++)
			for (size_t res = 0; res < seq_len(resources); res++)
				for (size_t v = 0; v < seq_len(verbs); v++) {
					const char *group = scalar(seq_at(role, groups, g));
					const char *resource = scalar(seq_at(role, resources, res));
					const char *verb = scalar(seq_at(role, verbs, v));

					if (!group || !resource || !verb || strchr(group, '*') || strchr(resource, '*') ||
					    strchr(verb, '*')) {
						problem(p, "rule %zu: wildcard or malformed entry", r);
						continue;
					}
					if (n_granted < 64)
						snprintf(granted[n_granted++], 64, "%s/%s:%s", group, resource, verb);
				}
	}
	for (size_t i = 0; i < n_granted; i++) {
		bool expected = false;

		for (size_t e = 0; e < sizeof(expected_grants) / sizeof(expected_grants[0]); e++)
			expected |= !strcmp(granted[i], expected_grants[e]);
		if (!expected)
			problem(p, "grants %s, which no evictd code path uses", granted[i]);
	}
	for (size_t e = 0; e < sizeof(expected_grants) / sizeof(expected_grants[0]); e++) {
		bool present = false;

		for (size_t i = 0; i < n_granted; i++)
			present |= !strcmp(granted[i], expected_grants[e]);
		if (!present)
			problem(p, "does not grant %s, which evictd needs", expected_grants[e]);
	}

	if (!scalar_is(path_get(binding, binding_root, "roleRef.kind"), "ClusterRole") ||
	    !scalar_is(path_get(binding, binding_root, "roleRef.name"), path_scalar(role, role_root, "metadata.name") ?: "?"))
		problem(p, "the ClusterRoleBinding does not refer to the ClusterRole");
	subjects = child(binding, binding_root, "subjects");
	for (size_t i = 0; i < seq_len(subjects); i++) {
		yaml_node_t *s = seq_at(binding, subjects, i);

		bound |= scalar_is(child(binding, s, "kind"), "ServiceAccount") &&
			 scalar_is(child(binding, s, "name"), *sa_name) &&
			 scalar_is(child(binding, s, "namespace"), *sa_namespace);
	}
	if (!bound)
		problem(p, "the ClusterRoleBinding does not bind the ServiceAccount %s/%s", *sa_namespace, *sa_name);
}

/* Run both checkers on the texts. */
static int check_texts(const char *daemonset, const char *rbac, struct problems *p)
{
	struct docs ds_docs, rbac_docs;
	const char *sa_name, *sa_namespace;
	char name[128], ns[128];

	memset(p, 0, sizeof(*p));
	load_docs(rbac, &rbac_docs);
	check_rbac(&rbac_docs, &sa_name, &sa_namespace, p);
	snprintf(name, sizeof(name), "%s", sa_name);
	snprintf(ns, sizeof(ns), "%s", sa_namespace);
	free_docs(&rbac_docs);
	load_docs(daemonset, &ds_docs);
	check_daemonset(&ds_docs, name, ns, p);
	free_docs(&ds_docs);
	return p->n;
}

/* The file with the first occurrence of `from` replaced by `to`. */
static char *mutate(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	char *out;

	if (!at)
		fail_msg("mutation anchor not found: %s", from);
	out = malloc(strlen(text) + strlen(to) + 1);
	sprintf(out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
	return out;
}

static void test_shipped_manifests_pass(void **state)
{
	char *daemonset = read_text(DAEMONSET_FILE), *rbac = read_text(RBAC_FILE);
	struct problems p;

	if (check_texts(daemonset, rbac, &p))
		fail_msg("tools/deploy problems:\n%s", p.text);
	free(daemonset);
	free(rbac);
}

struct mutation {
	bool in_rbac;
	const char *from;
	const char *to;
	const char *expect;	/* a substring of the problem it must cause */
};

static void test_checkers_catch_breakage(void **state)
{
	static const struct mutation mutations[] = {
		{ false, "hostPID: true", "hostPID: false", "hostPID" },
		{ false, "priorityClassName: system-node-critical", "priorityClassName: high", "priorityClassName" },
		{ false, "privileged: true", "privileged: false", "privileged" },
		{ false, "- operator: Exists", "- operator: Exists\n          key: foo", "taints" },
		{ false, "mountPropagation: Bidirectional", "mountPropagation: HostToContainer", "Bidirectional" },
		{ false, "path: /run/dbus", "path: /run/dbus-elsewhere", "/run/dbus" },
		{ false, "path: /var/lib/evictd\n            type: DirectoryOrCreate", "path: /var/lib/evictd\n            type: Directory",
		  "DirectoryOrCreate" },
		{ false, "              mountPath: /var/lib/kubelet\n              readOnly: true",
		  "              mountPath: /var/lib/kubelet", "read-only" },
		{ false, "fieldPath: spec.nodeName", "fieldPath: metadata.name", "NODE_NAME" },
		{ false, "              cpu: 250m\n              memory: 128Mi\n          securityContext",
		  "              cpu: 500m\n              memory: 128Mi\n          securityContext", "Guaranteed" },
		{ false, "path: /healthz", "path: /metricz", "healthz" },
		{ false, "--metrics-address=0.0.0.0:9808", "--metrics-address=127.0.0.1:9808", "metrics-address" },
		{ false, "serviceAccountName: evictd", "serviceAccountName: default", "serviceAccountName" },
		{ true, "verbs: [\"list\", \"watch\", \"delete\"]", "verbs: [\"list\", \"watch\", \"delete\", \"get\"]", "/pods:get" },
		{ true, "verbs: [\"list\", \"watch\", \"delete\"]", "verbs: [\"list\", \"delete\"]", "/pods:watch" },
		{ true, "verbs: [\"patch\"]", "verbs: [\"patch\", \"update\"]", "/pods/status:update" },
		{ true, "verbs: [\"create\", \"patch\"]", "verbs: [\"create\"]", "/events:patch" },
		{ true, "resources: [\"nodes\"]", "resources: [\"*\"]", "wildcard" },
		{ true, "    name: evictd\n    namespace: kube-system\n", "    name: other\n    namespace: kube-system\n",
		  "does not bind" },
	};
	char *daemonset = read_text(DAEMONSET_FILE), *rbac = read_text(RBAC_FILE);

	for (size_t i = 0; i < sizeof(mutations) / sizeof(mutations[0]); i++) {
		const struct mutation *m = &mutations[i];
		char *changed = mutate(m->in_rbac ? rbac : daemonset, m->from, m->to);
		struct problems p;

		check_texts(m->in_rbac ? daemonset : changed, m->in_rbac ? changed : rbac, &p);
		if (!p.n || !strstr(p.text, m->expect))
			fail_msg("mutation %zu (%s -> %s) not caught as \"%s\"; problems:\n%s", i, m->from, m->to,
				 m->expect, p.text);
		free(changed);
	}
	free(daemonset);
	free(rbac);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shipped_manifests_pass),
		cmocka_unit_test(test_checkers_catch_breakage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
