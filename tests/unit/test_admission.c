// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* tools/deploy/admission-policy.yaml, parsed with libyaml: a ValidatingAdmissionPolicy
 * (admissionregistration.k8s.io/v1) and its Binding that confine evictd's writes to its own
 * node, keyed on the node name a bound service-account token carries
 * (authentication.kubernetes.io/node-name in the user's extra). The CEL is not evaluated here
 * (no CEL runtime in C); what is checked is its structure: every write evictd's RBAC allows is
 * matched, only evictd's service account is matched, and the node rule and the pod rule each
 * compare the claim (directly or through a variable) with the object's node, and the writes
 * the policy allows are exactly those of the request fixtures. Mutated copies prove the checker
 * catches each missing piece.
 *
 * The request fixtures (the JSON files of tests/admission/requests, which tests/admission/run.mjs admits)
 * are checked here to be what the C builders produce (kube_pod_failed_patch,
 * kube_eviction_message, kube_node_taint_patch) for the stored objects of
 * tests/admission/objects: a fixture cannot drift from the code. EVICTD_ADMISSION_PRINT=1
 * prints every built body. */
#include "deploy_yaml.h"

#include <dirent.h>
#include <json-c/json.h>
#include <time.h>

#include "core/thresholds.h"
#include "kube/kube_report.h"

#define POLICY_FILE DEPLOY_DIR "admission-policy.yaml"
#define RBAC_FILE DEPLOY_DIR "rbac.yaml"
#define NODE_NAME_CLAIM "authentication.kubernetes.io/node-name"
#define ADMISSION_DIR EVICTD_SRCDIR "/tests/admission/"
#define MAX_WRITES 16

/* The writes RBAC grants (rbac.yaml; patch is UPDATE in admission) and those evictd never
 * sends (a pod DELETE, pods/eviction, nodes/status), which the policy refuses rather than
 * leaving them to RBAC alone. */
static const char *const confined_resources[] = { "pods", "pods/status", "pods/eviction", "nodes", "nodes/status" };
static const char *const confined_operations[] = { "CREATE", "UPDATE", "DELETE" };

/* Whether a rule's resources list matches resource: itself, the wildcard, or the parent's
 * wildcard for a subresource (k8s.io/api admissionregistration/v1 RuleWithOperations: a
 * resource "pods" then slash-star means all subresources of pods). */
static bool resources_match(yaml_document_t *doc, yaml_node_t *resources, const char *resource)
{
	const char *slash = strchr(resource, '/');
	char parent_all[128];

	if (seq_has(doc, resources, resource) || seq_has(doc, resources, "*"))
		return true;
	if (!slash)
		return false;
	snprintf(parent_all, sizeof(parent_all), "%.*s/*", (int)(slash - resource), resource);
	return seq_has(doc, resources, parent_all);
}

/* Whether expr names variables.<name> as a whole identifier (not a longer one). */
static bool mentions_var(const char *expr, const char *name)
{
	char ref[160];
	size_t len;

	len = (size_t)snprintf(ref, sizeof(ref), "variables.%s", name);
	for (const char *at = strstr(expr, ref); at; at = strstr(at + 1, ref)) {
		char next = at[len];

		if (!(next == '_' || (next >= '0' && next <= '9') || (next >= 'a' && next <= 'z') ||
		      (next >= 'A' && next <= 'Z')))
			return true;
	}
	return false;
}

/* Whether expr reads the node-name claim: directly, or through a variable that does. */
static bool reads_claim(yaml_document_t *doc, yaml_node_t *variables, const char *expr)
{
	if (!expr)
		return false;
	if (strstr(expr, "'" NODE_NAME_CLAIM "'") || strstr(expr, "\"" NODE_NAME_CLAIM "\""))
		return true;
	for (size_t i = 0; i < seq_len(variables); i++) {
		yaml_node_t *var = seq_at(doc, variables, i);
		const char *name = scalar(child(doc, var, "name"));
		const char *var_expr = scalar(child(doc, var, "expression"));

		if (!name || !var_expr)
			continue;
		if (mentions_var(expr, name) && (strstr(var_expr, "'" NODE_NAME_CLAIM "'") ||
						 strstr(var_expr, "\"" NODE_NAME_CLAIM "\"")))
			return true;
	}
	return false;
}

enum operand { OPERAND_CLAIM, OPERAND_OLD_NODE, OPERAND_REQUEST_NAME };

static bool has_claim(const char *text)
{
	return text && (strstr(text, "'" NODE_NAME_CLAIM "'") || strstr(text, "\"" NODE_NAME_CLAIM "\""));
}

/* The stored object's spec.nodeName (oldObject.spec.nodeName, plain or optional). */
static bool has_old_node(const char *text)
{
	return text && (strstr(text, "oldObject.spec.nodeName") || strstr(text, "oldObject.spec.?nodeName"));
}

static bool text_is(const char *text, enum operand what)
{
	switch (what) {
	case OPERAND_CLAIM:
		return has_claim(text);
	case OPERAND_OLD_NODE:
		return has_old_node(text);
	case OPERAND_REQUEST_NAME:
		return text && !strcmp(text, "request.name");
	}
	return false;
}

/* Whether one operand of a comparison (a CEL term without spaces) is `what`: itself, or a
 * variable whose expression is. */
static bool operand_is(yaml_document_t *doc, yaml_node_t *variables, const char *term, enum operand what)
{
	if (text_is(term, what))
		return true;
	if (strncmp(term, "variables.", strlen("variables.")))
		return false;
	for (size_t i = 0; i < seq_len(variables); i++) {
		yaml_node_t *var = seq_at(doc, variables, i);

		if (scalar_is(child(doc, var, "name"), term + strlen("variables.")))
			return text_is(scalar(child(doc, var, "expression")), what);
	}
	return false;
}

/* Whether expr holds "A == B" with one side a and the other b: the rule compares the two,
 * rather than merely mentioning them. */
static bool compares(yaml_document_t *doc, yaml_node_t *variables, const char *expr, enum operand a, enum operand b)
{
	for (const char *eq = expr ? strstr(expr, "==") : NULL; eq; eq = strstr(eq + 2, "==")) {
		char left[256], right[256];
		const char *l_end = eq, *l_start, *r_start = eq + 2, *r_end;
		size_t len;

		while (l_end > expr && l_end[-1] == ' ')
			l_end--;
		for (l_start = l_end; l_start > expr && !strchr(" \n\t", l_start[-1]); l_start--)
			;
		while (*l_start == '(' || *l_start == '!')
			l_start++;
		while (*r_start == ' ')
			r_start++;
		for (r_end = r_start; *r_end && !strchr(" \n\t", *r_end); r_end++)
			;
		while (r_end > r_start && r_end[-1] == ')' && !strstr(r_start, "("))
			r_end--;
		len = l_end > l_start ? (size_t)(l_end - l_start) : 0;
		snprintf(left, sizeof(left), "%.*s", (int)(len < sizeof(left) ? len : sizeof(left) - 1), l_start);
		len = (size_t)(r_end - r_start);
		snprintf(right, sizeof(right), "%.*s", (int)(len < sizeof(right) ? len : sizeof(right) - 1), r_start);
		if ((operand_is(doc, variables, left, a) && operand_is(doc, variables, right, b)) ||
		    (operand_is(doc, variables, left, b) && operand_is(doc, variables, right, a)))
			return true;
	}
	return false;
}

/* The writes of the request fixtures, as admission names them ("pods/status UPDATE"). */
struct writes {
	char w[MAX_WRITES][96];
	size_t n;
};

static bool writes_has(const struct writes *writes, const char *write)
{
	for (size_t i = 0; i < writes->n; i++)
		if (!strcmp(writes->w[i], write))
			return true;
	return false;
}

static void writes_add(struct writes *writes, const char *write)
{
	if (!writes_has(writes, write) && writes->n < MAX_WRITES)
		snprintf(writes->w[writes->n++], sizeof(writes->w[0]), "%s", write);
}

/* The fixture's method and path as admission's resource, subresource and operation. */
static void request_write(struct json_object *fixture, const char *file, char *buf, size_t len)
{
	struct json_object *v;
	const char *method = json_object_object_get_ex(fixture, "method", &v) ? json_object_get_string(v) : "";
	const char *path = json_object_object_get_ex(fixture, "path", &v) ? json_object_get_string(v) : "";
	const char *operation = !strcmp(method, "PATCH") || !strcmp(method, "PUT") ? "UPDATE" :
				!strcmp(method, "DELETE") ? "DELETE" : !strcmp(method, "POST") ? "CREATE" : "?";
	char resource[64] = "", sub[64] = "";

	/* /api/v1/nodes/N, /api/v1/namespaces/NS/pods/P[/status] */
	if (sscanf(path, "/api/v1/namespaces/%*[^/]/%63[^/]/%*[^/]/%63[^/]", resource, sub) < 1 &&
	    sscanf(path, "/api/v1/%63[^/]/%*[^/]/%63[^/]", resource, sub) < 1)
		fail_msg("%s: path %s is not an API object path", file, path);
	snprintf(buf, len, "%s%s%s %s", resource, sub[0] ? "/" : "", sub, operation);
}

static struct json_object *read_json(const char *path)
{
	struct json_object *obj = json_object_from_file(path);

	if (!obj)
		fail_msg("%s: not JSON: %s", path, json_util_get_last_err());
	return obj;
}

/* Calls fn for each JSON file of tests/admission/requests, in name order. */
static void each_fixture(void (*fn)(struct json_object *fixture, const char *file, void *ctx), void *ctx)
{
	struct dirent **names;
	int n = scandir(ADMISSION_DIR "requests", &names, NULL, alphasort);

	if (n < 0)
		fail_msg("%srequests: %s", ADMISSION_DIR, strerror(errno));
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		size_t len = strlen(name);

		if (len > 5 && !strcmp(name + len - 5, ".json")) {
			char path[512];
			struct json_object *fixture;

			snprintf(path, sizeof(path), "%srequests/%s", ADMISSION_DIR, name);
			fixture = read_json(path);
			fn(fixture, name, ctx);
			json_object_put(fixture);
		}
		free(names[i]);
	}
	free(names);
}

static void collect_write(struct json_object *fixture, const char *file, void *ctx)
{
	char write[96];

	request_write(fixture, file, write, sizeof(write));
	writes_add(ctx, write);
}

/* The writes the policy allows: the quoted items of `variables.write in [...]`. */
static bool allowed_writes(yaml_document_t *doc, yaml_node_t *validations, struct writes *allowed)
{
	for (size_t i = 0; i < seq_len(validations); i++) {
		const char *expr = scalar(child(doc, seq_at(doc, validations, i), "expression"));
		const char *at = expr ? strstr(expr, "variables.write in [") : NULL;
		const char *end = at ? strchr(at, ']') : NULL;

		if (!end)
			continue;
		for (const char *q = strchr(at, '\''); q && q < end; q = strchr(q + 1, '\'')) {
			const char *close = strchr(q + 1, '\'');
			char write[96];

			if (!close || close > end)
				break;
			snprintf(write, sizeof(write), "%.*s", (int)(close - q - 1), q + 1);
			writes_add(allowed, write);
			q = close;
		}
		return true;
	}
	return false;
}

static void check_policy(struct docs *docs, const char *sa_username, const struct writes *sent,
			 struct problems *p)
{
	struct writes allowed = { .n = 0 };
	yaml_node_t *root, *binding_root, *rules, *validations, *variables, *conditions;
	yaml_document_t *doc = find_kind(docs, "ValidatingAdmissionPolicy", &root);
	yaml_document_t *binding = find_kind(docs, "ValidatingAdmissionPolicyBinding", &binding_root);
	bool node_rule = false, pod_rule = false, claim_required = false, only_evictd = false;

	if (!doc || !binding) {
		problem(p, "needs a ValidatingAdmissionPolicy and a ValidatingAdmissionPolicyBinding");
		return;
	}
	if (!scalar_is(child(doc, root, "apiVersion"), "admissionregistration.k8s.io/v1") ||
	    !scalar_is(child(binding, binding_root, "apiVersion"), "admissionregistration.k8s.io/v1"))
		problem(p, "apiVersion is not admissionregistration.k8s.io/v1");
	/* An error in the CEL (a token without the claim) must refuse, not allow. */
	if (!scalar_is(path_get(doc, root, "spec.failurePolicy"), "Fail"))
		problem(p, "failurePolicy is not Fail: the policy would fail open");

	/* Every confined resource and operation is matched by some rule of the core group. */
	rules = path_get(doc, root, "spec.matchConstraints.resourceRules");
	for (size_t r = 0; r < sizeof(confined_resources) / sizeof(confined_resources[0]); r++)
		for (size_t o = 0; o < sizeof(confined_operations) / sizeof(confined_operations[0]); o++) {
			bool matched = false;

			for (size_t i = 0; i < seq_len(rules); i++) {
				yaml_node_t *rule = seq_at(doc, rules, i);

				matched |= seq_has(doc, child(doc, rule, "apiGroups"), "") &&
					   resources_match(doc, child(doc, rule, "resources"), confined_resources[r]) &&
					   seq_has(doc, child(doc, rule, "operations"), confined_operations[o]);
			}
			if (!matched)
				problem(p, "%s %s is not matched: evictd could write it on any node",
					confined_operations[o], confined_resources[r]);
		}

	/* Only evictd's service account: a match condition on the username RBAC binds. */
	conditions = path_get(doc, root, "spec.matchConditions");
	for (size_t i = 0; i < seq_len(conditions); i++) {
		const char *expr = scalar(child(doc, seq_at(doc, conditions, i), "expression"));
		char quoted[320];

		snprintf(quoted, sizeof(quoted), "'%s'", sa_username);
		only_evictd |= expr && strstr(expr, "request.userInfo.username") && strstr(expr, quoted);
	}
	if (!only_evictd)
		problem(p, "no matchCondition on request.userInfo.username == '%s'", sa_username);

	variables = path_get(doc, root, "spec.variables");
	validations = path_get(doc, root, "spec.validations");
	for (size_t i = 0; i < seq_len(validations); i++) {
		const char *expr = scalar(child(doc, seq_at(doc, validations, i), "expression"));

		if (!reads_claim(doc, variables, expr))
			continue;
		/* A token without the claim is refused. */
		claim_required |= strstr(expr, "!= ''") != NULL;
		/* Nodes: the request's name is the writer's node. */
		node_rule |= strstr(expr, "'nodes'") &&
			     compares(doc, variables, expr, OPERAND_REQUEST_NAME, OPERAND_CLAIM);
		/* Pods: the stored pod (oldObject, what a status patch starts from) is bound to that node. */
		pod_rule |= strstr(expr, "'pods'") && compares(doc, variables, expr, OPERAND_OLD_NODE, OPERAND_CLAIM);
	}
	if (!claim_required)
		problem(p, "no validation refuses a credential without the %s claim", NODE_NAME_CLAIM);

	/* Exactly the writes evictd sends: a pod DELETE allowed would be a write no code path
	 * needs (least privilege), one of its writes refused would break it. */
	if (!allowed_writes(doc, validations, &allowed))
		problem(p, "no validation limits variables.write to the writes evictd sends");
	for (size_t i = 0; i < allowed.n; i++)
		if (!writes_has(sent, allowed.w[i]))
			problem(p, "the policy allows %s, which evictd never sends (no request fixture)", allowed.w[i]);
	for (size_t i = 0; i < sent->n; i++)
		if (!writes_has(&allowed, sent->w[i]))
			problem(p, "the policy refuses %s, which evictd sends", sent->w[i]);
	if (!node_rule)
		problem(p, "no validation compares a Node's name with the %s claim", NODE_NAME_CLAIM);
	if (!pod_rule)
		problem(p, "no validation compares a pod's oldObject.spec.nodeName with the %s claim", NODE_NAME_CLAIM);

	if (!scalar_is(path_get(binding, binding_root, "spec.policyName"), path_scalar(doc, root, "metadata.name") ?: "?"))
		problem(p, "the Binding does not name the policy");
	if (!seq_has(binding, path_get(binding, binding_root, "spec.validationActions"), "Deny"))
		problem(p, "the Binding's validationActions lack Deny: nothing would be refused");
}

/* The username of the ServiceAccount rbac.yaml binds. */
static void sa_username(char *buf, size_t len)
{
	char *text = read_text(RBAC_FILE);
	struct docs docs;
	yaml_node_t *root;
	yaml_document_t *doc;

	load_docs(text, &docs);
	doc = find_kind(&docs, "ServiceAccount", &root);
	assert_non_null(doc);
	snprintf(buf, len, "system:serviceaccount:%s:%s", path_scalar(doc, root, "metadata.namespace") ?: "",
		 path_scalar(doc, root, "metadata.name") ?: "");
	free_docs(&docs);
	free(text);
}

static int check_text(const char *text, struct problems *p)
{
	struct writes sent = { .n = 0 };
	struct docs docs;
	char user[300];

	memset(p, 0, sizeof(*p));
	sa_username(user, sizeof(user));
	each_fixture(collect_write, &sent);
	load_docs(text, &docs);
	check_policy(&docs, user, &sent, p);
	free_docs(&docs);
	return p->n;
}

static void test_shipped_policy_passes(void **state)
{
	char *text = read_text(POLICY_FILE);
	struct problems p;

	if (check_text(text, &p))
		fail_msg("admission-policy.yaml problems:\n%s", p.text);
	free(text);
}

struct mutation {
	const char *from, *to, *expect;
};

static void test_checker_catches_breakage(void **state)
{
	static const struct mutation mutations[] = {
		/* The claim misspelt: nothing would compare the real one. */
		{ "'authentication.kubernetes.io/node-name']", "'authentication.kubernetes.io/nodename']", "" },
		{ "request.userInfo.?extra[?'authentication.kubernetes.io/node-name'][0].orValue('')",
		  "request.userInfo.username", "" },
		{ "failurePolicy: Fail", "failurePolicy: Ignore", "fail open" },
		{ "operations: [\"CREATE\", \"UPDATE\", \"DELETE\", \"CONNECT\"]", "operations: [\"UPDATE\", \"DELETE\"]",
		  "CREATE pods/eviction" },
		{ "operations: [\"CREATE\", \"UPDATE\", \"DELETE\", \"CONNECT\"]", "operations: [\"CREATE\", \"UPDATE\"]",
		  "DELETE pods" },
		{ "resources: [\"pods\", \"pods/*\", \"nodes\", \"nodes/*\"]", "resources: [\"pods\", \"nodes\", \"nodes/*\"]",
		  "UPDATE pods/status" },
		{ "resources: [\"pods\", \"pods/*\", \"nodes\", \"nodes/*\"]", "resources: [\"pods\", \"pods/*\", \"nodes\"]",
		  "nodes/status" },
		{ "resources: [\"pods\", \"pods/*\", \"nodes\", \"nodes/*\"]",
		  "resources: [\"pods\", \"pods/status\", \"nodes\", \"nodes/*\"]", "CREATE pods/eviction" },
		{ "apiGroups: [\"\"]", "apiGroups: [\"apps\"]", "is not matched" },
		{ "system:serviceaccount:evictd-system:evictd", "system:serviceaccount:kube-system:evictd", "matchCondition" },
		{ "request.resource.resource != 'nodes' || request.name == variables.nodeName",
		  "request.resource.resource != 'nodes' || request.name != ''", "Node's name" },
		{ "(variables.podNodeName == variables.nodeName &&", "(variables.podNodeName != '' &&",
		  "oldObject.spec.nodeName" },
		{ "oldObject != null ? oldObject.spec.?nodeName.orValue('') : ''", "object.spec.?nodeName.orValue('')",
		  "oldObject.spec.nodeName" },
		{ "expression: variables.nodeName != ''", "expression: \"true\"", "without the" },
		{ "- name: nodeName", "- name: node", "" },
		/* evictd deletes no pod (doc/DESIGN.md §8): allowing it again is caught. */
		{ "variables.write in ['nodes UPDATE', 'pods/status UPDATE']",
		  "variables.write in ['nodes UPDATE', 'pods DELETE', 'pods/status UPDATE']", "allows pods DELETE" },
		{ "variables.write in ['nodes UPDATE', 'pods/status UPDATE']", "variables.write in ['nodes UPDATE']",
		  "refuses pods/status UPDATE" },
		{ "variables.write in ['nodes UPDATE', 'pods/status UPDATE']",
		  "variables.write != ''", "limits variables.write" },
		{ "validationActions: [\"Deny\"]", "validationActions: [\"Warn\", \"Audit\"]", "Deny" },
		{ "policyName: evictd-node-scoped-writes", "policyName: other", "does not name" },
		{ "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding",
		  "apiVersion: admissionregistration.k8s.io/v1beta1\nkind: ValidatingAdmissionPolicyBinding", "apiVersion" },
	};
	char *text = read_text(POLICY_FILE);

	for (size_t i = 0; i < sizeof(mutations) / sizeof(mutations[0]); i++) {
		const struct mutation *m = &mutations[i];
		char *changed = mutate(text, m->from, m->to);
		struct problems p;

		check_text(changed, &p);
		if (!p.n || !strstr(p.text, m->expect))
			fail_msg("mutation %zu (%s -> %s) not caught as \"%s\"; problems:\n%s", i, m->from, m->to,
				 m->expect, p.text);
		/* The claim gone from every rule: all three claim rules fail at once. */
		if (!m->expect[0] && (!strstr(p.text, "Node's name") || !strstr(p.text, "oldObject") ||
				      !strstr(p.text, "without the")))
			fail_msg("mutation %zu (%s -> %s): the claim rules still pass:\n%s", i, m->from, m->to, p.text);
		free(changed);
	}
	free(text);
}

/* ---- the request fixtures are what the builders produce ---------------------------------- */

enum builder { BUILD_EVICTED, BUILD_SHUTDOWN, BUILD_TAINTS };

/* Every fixture, with the builder and the inputs that make its body. */
static const struct built_fixture {
	const char *file;
	enum builder builder;
	const char *time;		/* the request's clock */
	uint32_t want, managed;		/* BUILD_TAINTS: the reconciler's sets */
} built_fixtures[] = {
	{ "node-taint-add-disk-pid-shutdown.json", BUILD_TAINTS, "2026-10-20T10:05:00Z",
	  KUBE_TAINT_BIT(KUBE_TAINT_DISK_PRESSURE) | KUBE_TAINT_BIT(KUBE_TAINT_PID_PRESSURE) |
	  KUBE_TAINT_BIT(KUBE_TAINT_SHUTDOWN), KUBE_TAINTS_EVICTD_OWNED },
	{ "node-taint-add-memory-pressure.json", BUILD_TAINTS, "2026-10-20T10:01:00Z",
	  KUBE_TAINT_BIT(KUBE_TAINT_MEMORY_PRESSURE), KUBE_TAINTS_EVICTD_OWNED },
	/* kube_report_shutdown_end: the shutdown taint still wanted, out-of-service added and
	 * managed from then on. */
	{ "node-taint-out-of-service.json", BUILD_TAINTS, "2026-10-20T10:05:00Z",
	  KUBE_TAINT_BIT(KUBE_TAINT_SHUTDOWN) | KUBE_TAINT_BIT(KUBE_TAINT_OUT_OF_SERVICE),
	  KUBE_TAINTS_EVICTD_OWNED | KUBE_TAINT_BIT(KUBE_TAINT_OUT_OF_SERVICE) },
	/* kube_report_new with the state dir's record: nothing wanted, out-of-service managed. */
	{ "node-taint-remove-all.json", BUILD_TAINTS, "2026-10-20T10:10:00Z", 0,
	  KUBE_TAINTS_EVICTD_OWNED | KUBE_TAINT_BIT(KUBE_TAINT_OUT_OF_SERVICE) },
	{ "node-taint-remove-memory-pressure.json", BUILD_TAINTS, "2026-10-20T10:03:00Z", 0,
	  KUBE_TAINTS_EVICTD_OWNED },
	{ "pod-status-evicted-failed.json", BUILD_EVICTED, "2026-10-20T10:01:00Z", 0, 0 },
	{ "pod-status-shutdown-failed.json", BUILD_SHUTDOWN, "2026-10-20T10:05:00Z", 0, 0 },
};

static int64_t parse_time(const char *text)
{
	struct tm tm = { 0 };

	assert_non_null(strptime(text, "%Y-%m-%dT%H:%M:%SZ", &tm));
	return (int64_t)timegm(&tm) * 1000000000;
}

static const char *member(struct json_object *obj, const char *path)
{
	char key[64];
	const char *dot;

	while ((dot = strchr(path, '.'))) {
		snprintf(key, sizeof(key), "%.*s", (int)(dot - path), path);
		if (!json_object_object_get_ex(obj, key, &obj))
			return NULL;
		path = dot + 1;
	}
	return json_object_object_get_ex(obj, path, &obj) ? json_object_get_string(obj) : NULL;
}

/* The eviction report_evict.c sends for the fixture pod: memory.available<100Mi crossed at
 * 50Mi, its container web (request 128Mi, objects/pod-a.json) using 200Mi. */
static char *build_eviction(struct json_object *pod, int64_t now)
{
	struct threshold_value value;
	struct kube_container_usage containers[] = { { "web", 200ll << 20, 128ll << 20 } };
	struct kube_eviction eviction = {
		.signal = EV_SIGNAL_MEMORY_AVAILABLE,
		.threshold = &value,
		.threshold_quantity = 100ll << 20,
		.available = 50ll << 20,
		.containers = containers,
		.n_containers = 1,
	};
	char message[1024];
	bool disabled;

	assert_int_equal(threshold_value_parse("100Mi", &value, &disabled), 0);
	assert_true(kube_eviction_message(&eviction, message, sizeof(message)) > 0);
	return kube_pod_failed_patch(member(pod, "metadata.uid"), KUBE_REASON_EVICTED, message, now);
}

/* The taint patch of report_taints.c for the fixture node carrying the fixture's oldTaints. */
static char *build_taints(struct json_object *fixture, const struct built_fixture *b, int64_t now)
{
	struct json_object *node = read_json(ADMISSION_DIR "objects/node-a.json"), *spec, *old;
	uint32_t present;
	char *patch = NULL;

	if (json_object_object_get_ex(fixture, "oldTaints", &old) && json_object_object_get_ex(node, "spec", &spec))
		json_object_object_add(spec, "taints", json_object_get(old));
	assert_int_equal(kube_node_taint_patch(json_object_to_json_string(node), b->want, b->managed, now, &patch,
					       &present), 0);
	json_object_put(node);
	if (!patch)
		fail_msg("%s: the reconciler sends nothing for this node and these sets", b->file);
	return patch;
}

struct built_check {
	struct json_object *pod;
	bool seen[sizeof(built_fixtures) / sizeof(built_fixtures[0])];
};

static void check_built(struct json_object *fixture, const char *file, void *ctx)
{
	struct built_check *c = ctx;
	const struct built_fixture *b = NULL;
	struct json_object *body, *want;
	char expected_path[512], write[96];
	const char *content_type = "";
	char *text = NULL;
	int64_t now;

	for (size_t i = 0; i < sizeof(built_fixtures) / sizeof(built_fixtures[0]); i++)
		if (!strcmp(built_fixtures[i].file, file)) {
			b = &built_fixtures[i];
			c->seen[i] = true;
		}
	if (!b)
		fail_msg("requests/%s: no C builder makes it (built_fixtures in %s): every admitted request "
			 "must be one evictd sends", file, __FILE__);
	now = parse_time(b->time);
	request_write(fixture, file, write, sizeof(write));
	switch (b->builder) {
	case BUILD_EVICTED:
	case BUILD_SHUTDOWN:
		text = b->builder == BUILD_EVICTED ?
			       build_eviction(c->pod, now) :
			       kube_pod_failed_patch(member(c->pod, "metadata.uid"), KUBE_REASON_SHUTDOWN_TERMINATED,
						     KUBE_MESSAGE_SHUTDOWN, now);
		content_type = KUBE_CONTENT_STRATEGIC_PATCH;
		/* report_evict.c kube_report_evict_pod and report.c fail_pod */
		snprintf(expected_path, sizeof(expected_path), "/api/v1/namespaces/%s/pods/%s/status",
			 member(c->pod, "metadata.namespace"), member(c->pod, "metadata.name"));
		break;
	case BUILD_TAINTS:
		text = build_taints(fixture, b, now);
		content_type = KUBE_CONTENT_MERGE_PATCH;
		/* report_taints.c */
		snprintf(expected_path, sizeof(expected_path), "/api/v1/nodes/node-a");
		break;
	}
	assert_non_null(text);
	if (getenv("EVICTD_ADMISSION_PRINT"))
		printf("# %s body: %s\n", file, text);
	if (strcmp(member(fixture, "method") ?: "", "PATCH") || strcmp(member(fixture, "path") ?: "", expected_path) ||
	    strcmp(member(fixture, "contentType") ?: "", content_type))
		fail_msg("requests/%s: %s %s %s, but evictd sends PATCH %s %s", file, member(fixture, "method"),
			 member(fixture, "path"), member(fixture, "contentType"), expected_path, content_type);
	want = json_tokener_parse(text);
	assert_non_null(want);
	if (!json_object_object_get_ex(fixture, "body", &body) || !json_object_equal(body, want))
		fail_msg("requests/%s: its body is not what the builder sends; the builder's body:\n%s", file, text);
	json_object_put(want);
	free(text);
}

static void test_fixtures_are_what_the_builders_send(void **state)
{
	struct built_check c = { .pod = read_json(ADMISSION_DIR "objects/pod-a.json") };

	each_fixture(check_built, &c);
	for (size_t i = 0; i < sizeof(built_fixtures) / sizeof(built_fixtures[0]); i++)
		if (!c.seen[i])
			fail_msg("requests/%s is missing", built_fixtures[i].file);
	json_object_put(c.pod);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shipped_policy_passes),
		cmocka_unit_test(test_checker_catches_breakage),
		cmocka_unit_test(test_fixtures_are_what_the_builders_send),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
