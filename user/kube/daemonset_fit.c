// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The DaemonSet controller's NodeShouldRunDaemonPod for one Node (daemonset_fit.h). Pure. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/daemonset_fit.h"

/* obj.key when it has that type, else NULL. */
static struct json_object *member(struct json_object *obj, const char *key, enum json_type type)
{
	struct json_object *value;

	if (!obj || !json_object_is_type(obj, json_type_object) || !json_object_object_get_ex(obj, key, &value) ||
	    !json_object_is_type(value, type))
		return NULL;
	return value;
}

static const char *member_string(struct json_object *obj, const char *key)
{
	struct json_object *value = member(obj, key, json_type_string);

	return value ? json_object_get_string(value) : NULL;
}

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

/* ---- taints and tolerations --------------------------------------------------------------- */

/* k8s.io/api/core/v1/toleration.go (*Toleration).ToleratesTaint: an empty effect matches every
 * effect, an empty key (with Exists) every key; Exists ignores the value, Equal ("" too)
 * compares it. */
static bool tolerates(const char *key, const char *operator_, const char *value, const char *effect,
		      struct json_object *taint)
{
	if (effect[0] && strcmp(effect, or_empty(member_string(taint, "effect"))))
		return false;
	if (key[0] && strcmp(key, or_empty(member_string(taint, "key"))))
		return false;
	if (!strcmp(operator_, "Exists"))
		return true;
	if (!operator_[0] || !strcmp(operator_, "Equal"))
		return !strcmp(value, or_empty(member_string(taint, "value")));
	return false;
}

/* pkg/controller/daemon/util/daemonset_util.go AddOrUpdateDaemonPodTolerations: what every
 * daemon pod tolerates (Exists); network-unavailable only with hostNetwork. */
static const struct {
	const char *key, *effect;
	bool host_network_only;
} daemon_tolerations[] = {
	{ "node.kubernetes.io/not-ready", "NoExecute", false },
	{ "node.kubernetes.io/unreachable", "NoExecute", false },
	{ "node.kubernetes.io/disk-pressure", "NoSchedule", false },
	{ "node.kubernetes.io/memory-pressure", "NoSchedule", false },
	{ "node.kubernetes.io/pid-pressure", "NoSchedule", false },
	{ "node.kubernetes.io/unschedulable", "NoSchedule", false },
	{ "node.kubernetes.io/network-unavailable", "NoSchedule", true },
};

static bool pod_tolerates(struct json_object *spec, struct json_object *taint)
{
	struct json_object *tolerations = member(spec, "tolerations", json_type_array);
	struct json_object *host_network = member(spec, "hostNetwork", json_type_boolean);

	for (size_t i = 0; i < sizeof(daemon_tolerations) / sizeof(daemon_tolerations[0]); i++) {
		if (daemon_tolerations[i].host_network_only &&
		    !(host_network && json_object_get_boolean(host_network)))
			continue;
		if (tolerates(daemon_tolerations[i].key, "Exists", "", daemon_tolerations[i].effect, taint))
			return true;
	}
	for (size_t i = 0; tolerations && i < json_object_array_length(tolerations); i++) {
		struct json_object *t = json_object_array_get_idx(tolerations, i);

		if (tolerates(or_empty(member_string(t, "key")), or_empty(member_string(t, "operator")),
			      or_empty(member_string(t, "value")), or_empty(member_string(t, "effect")), taint))
			return true;
	}
	return false;
}

static bool is_ours(struct json_object *taint, const char *const *ours, size_t n_ours)
{
	const char *key = or_empty(member_string(taint, "key"));

	if (strcmp(or_empty(member_string(taint, "effect")), "NoSchedule"))
		return false;
	for (size_t i = 0; i < n_ours; i++)
		if (!strcmp(key, ours[i]))
			return true;
	return false;
}

/* predicates' fitsTaints: no NoSchedule or NoExecute taint left untolerated (component-helpers
 * scheduling/corev1 FindMatchingUntoleratedTaint with that filter). The Node's own copies of
 * evictd's taints are left out; with_ours: as if each were there (evictd asks before its PATCH
 * has landed, or while it has lifted them). */
static bool fits_taints(struct json_object *spec, struct json_object *node, const char *const *ours,
			size_t n_ours, bool with_ours)
{
	struct json_object *taints = member(member(node, "spec", json_type_object), "taints", json_type_array);
	bool fits = true;

	for (size_t i = 0; fits && taints && i < json_object_array_length(taints); i++) {
		struct json_object *taint = json_object_array_get_idx(taints, i);
		const char *effect = or_empty(member_string(taint, "effect"));

		if ((strcmp(effect, "NoSchedule") && strcmp(effect, "NoExecute")) || is_ours(taint, ours, n_ours))
			continue;
		fits = pod_tolerates(spec, taint);
	}
	for (size_t i = 0; fits && with_ours && i < n_ours; i++) {
		struct json_object *taint = json_object_new_object();

		if (!taint)
			return false;
		json_object_object_add(taint, "key", json_object_new_string(ours[i]));
		json_object_object_add(taint, "effect", json_object_new_string("NoSchedule"));
		fits = pod_tolerates(spec, taint);
		json_object_put(taint);
	}
	return fits;
}

/* ---- node affinity --------------------------------------------------------------------------- */

/* strconv.ParseInt(s, 10, 64). */
static bool parse_int64(const char *s, long long *out)
{
	char *end;

	if (!s || !s[0])
		return false;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return !errno && !*end && !(s[0] == ' ' || s[0] == '\t');
}

static const char *label(struct json_object *node, const char *key)
{
	return member_string(member(member(node, "metadata", json_type_object), "labels", json_type_object), key);
}

static bool values_have(struct json_object *values, const char *value)
{
	for (size_t i = 0; values && i < json_object_array_length(values); i++) {
		struct json_object *v = json_object_array_get_idx(values, i);

		if (json_object_is_type(v, json_type_string) && !strcmp(json_object_get_string(v), value))
			return true;
	}
	return false;
}

/*
 * One matchExpressions requirement: 1 match, 0 no match, -1 invalid (the term is then skipped:
 * nodeaffinity.go newNodeSelectorTerm collects the parse error, and Match never matches an
 * erroring term). Validation and matching as apimachinery pkg/labels/selector.go NewRequirement
 * and (Requirement).Matches, by way of nodeaffinity.go nodeSelectorRequirementsAsSelector.
 */
static int match_expression(struct json_object *expr, struct json_object *node)
{
	const char *key = member_string(expr, "key"), *op = member_string(expr, "operator");
	struct json_object *values = member(expr, "values", json_type_array);
	size_t n = values ? json_object_array_length(values) : 0;
	const char *have;
	long long want_n, have_n;

	if (!key || !key[0] || !op)
		return -1;
	have = label(node, key);
	if (!strcmp(op, "In") || !strcmp(op, "NotIn")) {
		if (!n)
			return -1;	/* "values set can't be empty" */
		if (!strcmp(op, "In"))
			return have && values_have(values, have);
		return !have || !values_have(values, have);	/* NotIn matches an absent label */
	}
	if (!strcmp(op, "Exists") || !strcmp(op, "DoesNotExist")) {
		if (n)
			return -1;	/* "values set must be empty" */
		return !strcmp(op, "Exists") ? have != NULL : have == NULL;
	}
	if (!strcmp(op, "Gt") || !strcmp(op, "Lt")) {
		struct json_object *v = n == 1 ? json_object_array_get_idx(values, 0) : NULL;

		if (!v || !json_object_is_type(v, json_type_string) || !parse_int64(json_object_get_string(v), &want_n))
			return -1;	/* exactly one integer value */
		if (!have || !parse_int64(have, &have_n))
			return 0;
		return !strcmp(op, "Gt") ? have_n > want_n : have_n < want_n;
	}
	return -1;
}

/* One matchFields requirement: only metadata.name, In or NotIn with exactly one value
 * (nodeaffinity.go nodeSelectorRequirementsAsFieldSelector). */
static int match_field(struct json_object *expr, struct json_object *node)
{
	const char *key = member_string(expr, "key"), *op = member_string(expr, "operator");
	struct json_object *values = member(expr, "values", json_type_array);
	struct json_object *v = values && json_object_array_length(values) == 1 ? json_object_array_get_idx(values, 0) : NULL;
	const char *name = or_empty(member_string(member(node, "metadata", json_type_object), "name"));

	if (!key || strcmp(key, "metadata.name") || !op || !v || !json_object_is_type(v, json_type_string))
		return -1;
	if (!strcmp(op, "In"))
		return !strcmp(json_object_get_string(v), name);
	if (!strcmp(op, "NotIn"))
		return strcmp(json_object_get_string(v), name) != 0;
	return -1;
}

/* A nodeSelectorTerm: every requirement (all valid) holds; an empty term matches nothing. */
static bool match_term(struct json_object *term, struct json_object *node)
{
	struct json_object *exprs = member(term, "matchExpressions", json_type_array);
	struct json_object *fields = member(term, "matchFields", json_type_array);
	size_t n_exprs = exprs ? json_object_array_length(exprs) : 0;
	size_t n_fields = fields ? json_object_array_length(fields) : 0;
	bool all = true;

	if (!n_exprs && !n_fields)
		return false;
	for (size_t i = 0; i < n_exprs; i++) {
		int m = match_expression(json_object_array_get_idx(exprs, i), node);

		if (m < 0)
			return false;
		all &= m == 1;
	}
	for (size_t i = 0; i < n_fields; i++) {
		int m = match_field(json_object_array_get_idx(fields, i), node);

		if (m < 0)
			return false;
		all &= m == 1;
	}
	return all;
}

/* nodeaffinity.go GetRequiredNodeAffinity(pod).Match(node). */
static bool fits_affinity(struct json_object *spec, struct json_object *node)
{
	struct json_object *selector = member(spec, "nodeSelector", json_type_object);
	struct json_object *required = member(member(member(spec, "affinity", json_type_object), "nodeAffinity",
						     json_type_object),
					      "requiredDuringSchedulingIgnoredDuringExecution", json_type_object);
	struct json_object *terms;

	if (selector) {
		json_object_object_foreach(selector, key, value) {
			const char *have = label(node, key);

			if (!json_object_is_type(value, json_type_string) || !have ||
			    strcmp(have, json_object_get_string(value)))
				return false;
		}
	}
	if (!required)
		return true;
	terms = member(required, "nodeSelectorTerms", json_type_array);
	for (size_t i = 0; terms && i < json_object_array_length(terms); i++)
		if (match_term(json_object_array_get_idx(terms, i), node))
			return true;
	return false;	/* no term (or none that matches): nothing is selected */
}

/* ---- NodeShouldRunDaemonPod ----------------------------------------------------------------- */

enum daemonset_fit daemonset_fit(struct json_object *ds, struct json_object *node, const char *const *ours,
				 size_t n_ours)
{
	struct json_object *template = member(member(ds, "spec", json_type_object), "template", json_type_object);
	struct json_object *spec = member(template, "spec", json_type_object);
	const char *node_name = member_string(member(node, "metadata", json_type_object), "name");
	const char *pinned;

	if (!spec || !node_name)
		return DAEMONSET_EXCLUDED;
	/* NodeShouldRunDaemonPod: a template naming another node. */
	pinned = member_string(spec, "nodeName");
	if (pinned && pinned[0] && strcmp(pinned, node_name))
		return DAEMONSET_EXCLUDED;
	if (!fits_affinity(spec, node))
		return DAEMONSET_EXCLUDED;
	if (fits_taints(spec, node, ours, n_ours, true))
		return DAEMONSET_RUNS;
	return fits_taints(spec, node, ours, n_ours, false) ? DAEMONSET_BLOCKED : DAEMONSET_EXCLUDED;
}

int daemonset_blocked_list(const char *list_json, const char *node_json, const char *const *ours, size_t n_ours,
			   struct daemonset_blocked *out, size_t max, size_t *n)
{
	struct json_object *list = list_json ? json_tokener_parse(list_json) : NULL;
	struct json_object *node = node_json ? json_tokener_parse(node_json) : NULL;
	struct json_object *items = member(list, "items", json_type_array);
	int err = 0;

	*n = 0;
	if (!items || !member(node, "metadata", json_type_object)) {
		err = -EINVAL;
		goto out;
	}
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		struct json_object *ds = json_object_array_get_idx(items, i);
		struct json_object *metadata = member(ds, "metadata", json_type_object);
		const char *uid = member_string(metadata, "uid");

		if (!uid || !uid[0] || daemonset_fit(ds, node, ours, n_ours) != DAEMONSET_BLOCKED)
			continue;
		if (*n < max) {
			snprintf(out[*n].uid, sizeof(out[*n].uid), "%s", uid);
			snprintf(out[*n].name, sizeof(out[*n].name), "%.63s/%.253s",
				 or_empty(member_string(metadata, "namespace")), or_empty(member_string(metadata, "name")));
		}
		(*n)++;
	}
out:
	json_object_put(list);
	json_object_put(node);
	return err;
}
