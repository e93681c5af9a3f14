// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kube/daemonset_fit.c: the DaemonSet controller's NodeShouldRunDaemonPod for one Node, and
 * which DaemonSets only evictd's pressure taints keep off it (doc/DESIGN.md §8 "Pressure
 * taints"). Fixtures in tests/fixtures/daemonsets are API objects as `kubectl get -o json`
 * prints them (a DaemonSetList, a Node under memory pressure).
 */
#include <json-c/json.h>

#include "testutil.h"

#include "kube/daemonset_fit.h"

#define FIX FIXTURES_DIR "/daemonsets/"

static const char *const ours[] = { "evictd.io/memory-pressure" };

static struct json_object *load(const char *path)
{
	struct json_object *doc = json_object_from_file(path);

	assert_non_null(doc);
	return doc;
}

static struct json_object *find_ds(struct json_object *list, const char *name)
{
	struct json_object *items, *metadata, *n;

	assert_true(json_object_object_get_ex(list, "items", &items));
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		struct json_object *ds = json_object_array_get_idx(items, i);

		if (json_object_object_get_ex(ds, "metadata", &metadata) &&
		    json_object_object_get_ex(metadata, "name", &n) && !strcmp(json_object_get_string(n), name))
			return ds;
	}
	fail_msg("no DaemonSet %s in the fixture", name);
	return NULL;
}

static enum daemonset_fit fit_of(struct json_object *list, struct json_object *node, const char *name)
{
	return daemonset_fit(find_ds(list, name), node, ours, 1);
}

/* The fixture Node carries evictd's taint and the kubelet's memory-pressure one. */
static void test_fixture_each(void **state)
{
	struct json_object *list = load(FIX "daemonsets.json"), *node = load(FIX "node.json");

	/* No toleration for evictd.io: only evictd's taint keeps it off (memory-pressure is
	 * tolerated by every daemon pod). */
	assert_int_equal(fit_of(list, node, "node-exporter"), DAEMONSET_BLOCKED);
	/* {key: evictd.io/memory-pressure, operator: Exists, effect: NoSchedule}. */
	assert_int_equal(fit_of(list, node, "tolerant"), DAEMONSET_RUNS);
	/* {operator: Exists}: every taint. */
	assert_int_equal(fit_of(list, node, "kube-proxy"), DAEMONSET_RUNS);
	/* nodeSelector example.com/gpu=true: not this node, whatever evictd does. */
	assert_int_equal(fit_of(list, node, "gpu-plugin"), DAEMONSET_EXCLUDED);
	/* The second nodeSelectorTerm matches (Gt 2 on "4", DoesNotExist, metadata.name In). */
	assert_int_equal(fit_of(list, node, "affine"), DAEMONSET_BLOCKED);
	/* NotIn its own zone. */
	assert_int_equal(fit_of(list, node, "other-zone"), DAEMONSET_EXCLUDED);
	/* A toleration without effect matches every effect. */
	assert_int_equal(fit_of(list, node, "maint-blocked"), DAEMONSET_RUNS);
	json_object_put(list);
	json_object_put(node);
}

static char *slurp(const char *path)
{
	struct json_object *doc = load(path);
	char *text = strdup(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));

	json_object_put(doc);
	assert_non_null(text);
	return text;
}

static void test_fixture_blocked_list(void **state)
{
	char *list = slurp(FIX "daemonsets.json"), *node = slurp(FIX "node.json");
	struct daemonset_blocked blocked[4];
	size_t n = 0;

	assert_int_equal(daemonset_blocked_list(list, node, ours, 1, blocked, 4, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(blocked[0].uid, "11111111-aaaa-4aaa-8aaa-000000000001");
	assert_string_equal(blocked[0].name, "kube-system/node-exporter");
	assert_string_equal(blocked[1].name, "kube-system/affine");
	/* More than fit: counted, not written. */
	assert_int_equal(daemonset_blocked_list(list, node, ours, 1, blocked, 1, &n), 0);
	assert_int_equal(n, 2);
	/* Not a list, not a node. */
	assert_int_equal(daemonset_blocked_list("{\"kind\":\"Status\"}", node, ours, 1, blocked, 4, &n), -EINVAL);
	assert_int_equal(daemonset_blocked_list(list, "[]", ours, 1, blocked, 4, &n), -EINVAL);
	assert_int_equal(daemonset_blocked_list("{", node, ours, 1, blocked, 4, &n), -EINVAL);
	free(list);
	free(node);
}

/* Another taint the DaemonSet does not tolerate: excluded (lifting evictd's would not help). */
static void test_other_taint_excludes(void **state)
{
	struct json_object *list = load(FIX "daemonsets.json"), *node = load(FIX "node.json"), *spec, *taints;

	assert_true(json_object_object_get_ex(node, "spec", &spec));
	assert_true(json_object_object_get_ex(spec, "taints", &taints));
	json_object_array_add(taints, json_tokener_parse(
		"{\"key\":\"example.com/maintenance\",\"value\":\"true\",\"effect\":\"NoExecute\"}"));
	assert_int_equal(fit_of(list, node, "node-exporter"), DAEMONSET_EXCLUDED);
	assert_int_equal(fit_of(list, node, "maint-blocked"), DAEMONSET_EXCLUDED);
	assert_int_equal(fit_of(list, node, "kube-proxy"), DAEMONSET_RUNS);
	json_object_put(list);
	json_object_put(node);
}

/* evictd asks before its PATCH lands: blocked all the same (as if the taint were there). */
static void test_taint_not_yet_on_node(void **state)
{
	struct json_object *list = load(FIX "daemonsets.json"), *node = load(FIX "node.json"), *spec;

	assert_true(json_object_object_get_ex(node, "spec", &spec));
	json_object_object_del(spec, "taints");
	assert_int_equal(fit_of(list, node, "node-exporter"), DAEMONSET_BLOCKED);
	assert_int_equal(fit_of(list, node, "tolerant"), DAEMONSET_RUNS);
	json_object_put(list);
	json_object_put(node);
}

/* One DaemonSet with this template spec against a Node with these labels and taints, name
 * node-1; evictd holds no taint (n_ours 0) unless the taints name it. */
static enum daemonset_fit fit_inline(const char *template_spec, const char *labels, const char *taints)
{
	char ds_text[4096], node_text[2048];
	struct json_object *ds, *node;
	enum daemonset_fit fit;

	snprintf(ds_text, sizeof(ds_text), "{\"metadata\":{\"name\":\"x\",\"uid\":\"u\"},\"spec\":{\"template\":{\"spec\":%s}}}",
		 template_spec);
	snprintf(node_text, sizeof(node_text), "{\"metadata\":{\"name\":\"node-1\",\"labels\":%s},\"spec\":{\"taints\":%s}}",
		 labels, taints);
	ds = json_tokener_parse(ds_text);
	node = json_tokener_parse(node_text);
	assert_non_null(ds);
	assert_non_null(node);
	fit = daemonset_fit(ds, node, ours, strstr(taints, ours[0]) ? 1 : 0);
	json_object_put(ds);
	json_object_put(node);
	return fit;
}

#define AFF(terms) "{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":" \
		   "{\"nodeSelectorTerms\":" terms "}}}}"
#define EXPR(k, op, vals) "{\"matchExpressions\":[{\"key\":\"" k "\",\"operator\":\"" op "\"" vals "}]}"

/* nodeaffinity.go: the operators, invalid requirements, empty terms (no taint: RUNS or
 * EXCLUDED). */
static void test_affinity_operators(void **state)
{
	const char *labels = "{\"cores\":\"4\",\"pool\":\"a\",\"name\":\"x\"}";

	assert_int_equal(fit_inline(AFF("[" EXPR("cores", "Lt", ",\"values\":[\"8\"]") "]"), labels, "[]"), DAEMONSET_RUNS);
	assert_int_equal(fit_inline(AFF("[" EXPR("cores", "Lt", ",\"values\":[\"4\"]") "]"), labels, "[]"),
			 DAEMONSET_EXCLUDED);
	/* Gt on a label that is not an integer: no match. */
	assert_int_equal(fit_inline(AFF("[" EXPR("pool", "Gt", ",\"values\":[\"1\"]") "]"), labels, "[]"),
			 DAEMONSET_EXCLUDED);
	/* Gt with two values: invalid, the term never matches. */
	assert_int_equal(fit_inline(AFF("[" EXPR("cores", "Gt", ",\"values\":[\"1\",\"2\"]") "]"), labels, "[]"),
			 DAEMONSET_EXCLUDED);
	assert_int_equal(fit_inline(AFF("[" EXPR("pool", "Exists", "") "]"), labels, "[]"), DAEMONSET_RUNS);
	/* Exists with values: invalid. */
	assert_int_equal(fit_inline(AFF("[" EXPR("pool", "Exists", ",\"values\":[\"a\"]") "]"), labels, "[]"),
			 DAEMONSET_EXCLUDED);
	/* In with no values: invalid; NotIn of an absent label matches. */
	assert_int_equal(fit_inline(AFF("[" EXPR("pool", "In", ",\"values\":[]") "]"), labels, "[]"),
			 DAEMONSET_EXCLUDED);
	assert_int_equal(fit_inline(AFF("[" EXPR("zone", "NotIn", ",\"values\":[\"b\"]") "]"), labels, "[]"),
			 DAEMONSET_RUNS);
	/* An empty term matches nothing; no terms at all neither. */
	assert_int_equal(fit_inline(AFF("[{}]"), labels, "[]"), DAEMONSET_EXCLUDED);
	assert_int_equal(fit_inline(AFF("[]"), labels, "[]"), DAEMONSET_EXCLUDED);
	/* An invalid term does not spoil a valid one (ORed). */
	assert_int_equal(fit_inline(AFF("[" EXPR("pool", "Bogus", "") "," EXPR("pool", "In", ",\"values\":[\"a\"]") "]"),
				    labels, "[]"), DAEMONSET_RUNS);
	/* matchFields: metadata.name only, one value. */
	assert_int_equal(fit_inline(AFF("[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"NotIn\","
					"\"values\":[\"node-1\"]}]}]"), labels, "[]"), DAEMONSET_EXCLUDED);
	assert_int_equal(fit_inline(AFF("[{\"matchFields\":[{\"key\":\"metadata.labels\",\"operator\":\"In\","
					"\"values\":[\"node-1\"]}]}]"), labels, "[]"), DAEMONSET_EXCLUDED);
	/* The matchFields "name" is the Node's, not a label of that name. */
	assert_int_equal(fit_inline(AFF("[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
					"\"values\":[\"node-1\"]}]}]"), labels, "[]"), DAEMONSET_RUNS);
	/* nodeSelector AND affinity. */
	assert_int_equal(fit_inline("{\"nodeSelector\":{\"pool\":\"b\"}," "\"affinity\":{}}", labels, "[]"),
			 DAEMONSET_EXCLUDED);
	/* The template's nodeName: another node. */
	assert_int_equal(fit_inline("{\"nodeName\":\"node-2\"}", labels, "[]"), DAEMONSET_EXCLUDED);
	assert_int_equal(fit_inline("{\"nodeName\":\"node-1\"}", labels, "[]"), DAEMONSET_RUNS);
}

/* toleration.go ToleratesTaint and the controller's own tolerations. */
static void test_tolerations(void **state)
{
	const char *ours_taint = "[{\"key\":\"evictd.io/memory-pressure\",\"effect\":\"NoSchedule\"}]";
	const char *net = "[{\"key\":\"node.kubernetes.io/network-unavailable\",\"effect\":\"NoSchedule\"}]";
	const char *value = "[{\"key\":\"dedicated\",\"value\":\"infra\",\"effect\":\"NoSchedule\"}]";

	/* Equal with another value: not tolerated; the same value: tolerated. */
	assert_int_equal(fit_inline("{\"tolerations\":[{\"key\":\"dedicated\",\"value\":\"db\"}]}", "{}", value),
			 DAEMONSET_EXCLUDED);
	assert_int_equal(fit_inline("{\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":\"infra\","
				    "\"effect\":\"NoSchedule\"}]}", "{}", value), DAEMONSET_RUNS);
	/* A toleration for NoExecute does not tolerate evictd's NoSchedule. */
	assert_int_equal(fit_inline("{\"tolerations\":[{\"key\":\"evictd.io/memory-pressure\",\"operator\":\"Exists\","
				    "\"effect\":\"NoExecute\"}]}", "{}", ours_taint), DAEMONSET_BLOCKED);
	/* network-unavailable: tolerated by the controller only for hostNetwork pods. */
	assert_int_equal(fit_inline("{}", "{}", net), DAEMONSET_EXCLUDED);
	assert_int_equal(fit_inline("{\"hostNetwork\":true}", "{}", net), DAEMONSET_RUNS);
	/* PreferNoSchedule gates nothing. */
	assert_int_equal(fit_inline("{}", "{}", "[{\"key\":\"k\",\"effect\":\"PreferNoSchedule\"}]"), DAEMONSET_RUNS);
	/* A malformed DaemonSet is never a reason to lift anything. */
	assert_int_equal(fit_inline("[]", "{}", "[]"), DAEMONSET_EXCLUDED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixture_each),
		cmocka_unit_test(test_fixture_blocked_list),
		cmocka_unit_test(test_other_taint_excludes),
		cmocka_unit_test(test_taint_not_yet_on_node),
		cmocka_unit_test(test_affinity_operators),
		cmocka_unit_test(test_tolerations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
