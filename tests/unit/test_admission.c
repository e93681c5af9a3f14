// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* tools/deploy/admission-policy.yaml, parsed with libyaml: a ValidatingAdmissionPolicy
 * (admissionregistration.k8s.io/v1) and its Binding that confine evictd's writes to its own
 * node, keyed on the node name a bound service-account token carries
 * (authentication.kubernetes.io/node-name in the user's extra). The CEL is not evaluated here
 * (no CEL runtime in C); what is checked is its structure: every write evictd's RBAC allows is
 * matched, only evictd's service account is matched, and the node rule and the pod rule each
 * compare the claim (directly or through a variable) with the object's node. Mutated copies
 * prove the checker catches each missing piece. */
#include "deploy_yaml.h"

#define POLICY_FILE DEPLOY_DIR "admission-policy.yaml"
#define RBAC_FILE DEPLOY_DIR "rbac.yaml"
#define NODE_NAME_CLAIM "authentication.kubernetes.io/node-name"

/* The writes RBAC grants (rbac.yaml; patch is UPDATE in admission) and those evictd never
 * sends, which the policy refuses rather than leaving them to RBAC alone. */
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

static void check_policy(struct docs *docs, const char *sa_username, struct problems *p)
{
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
		/* Pods: the stored pod (oldObject: also what DELETE carries) is bound to that node. */
		pod_rule |= strstr(expr, "'pods'") && compares(doc, variables, expr, OPERAND_OLD_NODE, OPERAND_CLAIM);
	}
	if (!claim_required)
		problem(p, "no validation refuses a credential without the %s claim", NODE_NAME_CLAIM);
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
	struct docs docs;
	char user[300];

	memset(p, 0, sizeof(*p));
	sa_username(user, sizeof(user));
	load_docs(text, &docs);
	check_policy(&docs, user, p);
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
		{ "request.userInfo.extra[?'authentication.kubernetes.io/node-name'][0].orValue('')",
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shipped_policy_passes),
		cmocka_unit_test(test_checker_catches_breakage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
