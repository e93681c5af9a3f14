// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Pod identity no tenant can forge, and a malformed pod refused alone (doc/DESIGN.md §5,
 * "Pod identity"): the PodList parser (pods/meta.c, pods/podlist.c) on forged annotations and
 * on a list with poisoned pods among good ones, and the pods table logging a refusal once. */
#include "testutil.h"

#include "core/rank.h"
#include "pods/pods.h"
#include "sys/log.h"

#define UID_WEB "7d9e2f10-3a4b-4c5d-8e6f-a1b2c3d4e5f6"
#define UID_HOG "c0ffee00-1234-4abc-8def-0123456789ab"
#define UID_DB "0a0a0a0a-0b0b-4c0c-8d0d-0e0e0e0e0e0e"
#define UID_TENANT "5e5e5e5e-6f6f-4a7a-8b8b-9c9c9c9c9c9c"
#define UID_MIRROR "9a8b7c6d-5e4f-4a3b-8c1d-0e9f8a7b6c5d"
#define HASH_ETCD "2b1c5e4f6a7d8e9f0a1b2c3d4e5f6a7b"
#define NODE "n1"

#define CG "sys/fs/cgroup"
#define SLICE CG "/kubepods.slice"
#define WEB_DIR SLICE "/kubepods-burstable.slice/kubepods-burstable-pod7d9e2f10_3a4b_4c5d_8e6f_a1b2c3d4e5f6.slice"
#define HOG_DIR SLICE "/kubepods-besteffort.slice/kubepods-besteffort-podc0ffee00_1234_4abc_8def_0123456789ab.slice"

/* One pod as the API server serves it: uid, name, priority, metadata extras, spec extras. */
static char *pod_json(const char *uid, const char *name, int priority, const char *meta_extra,
		      const char *node)
{
	char *text;

	assert_true(asprintf(&text,
			     "{\"metadata\":{\"uid\":\"%s\",\"name\":\"%s\",\"namespace\":\"t\"%s},"
			     "\"spec\":{\"nodeName\":\"%s\",\"priority\":%d,\"containers\":[{\"name\":\"c\"}]},"
			     "\"status\":{\"phase\":\"Running\",\"qosClass\":\"BestEffort\"}}",
			     uid, name, meta_extra, node, priority) > 0);
	return text;
}

/* kind List around the given items (each freed). */
static char *list_json(char **items, size_t n)
{
	size_t len = 64;
	char *text;

	for (size_t i = 0; i < n; i++)
		len += strlen(items[i]) + 1;
	text = calloc(1, len);
	assert_non_null(text);
	strcat(text, "{\"kind\":\"List\",\"items\":[");
	for (size_t i = 0; i < n; i++) {
		strcat(text, i ? "," : "");
		strcat(text, items[i]);
		free(items[i]);
	}
	strcat(text, "]}");
	return text;
}

static int parse(char *json, struct pod_meta_list *list)
{
	char err[512];
	int ret = pods_parse_podlist(json, strlen(json), "pods.json", NODE, list, err, sizeof(err));

	if (ret)
		print_message("parse: %s\n", err);
	free(json);
	return ret;
}

static const struct pod_meta *by_uid(const struct pod_meta_list *list, const char *uid)
{
	for (size_t i = 0; i < list->n_items; i++)
		if (!strcmp(list->items[i].uid, uid))
			return &list->items[i];
	return NULL;
}

static bool never_evicted(const struct pod_meta *m)
{
	struct pod pod = { .priority = m->priority, .is_static = m->is_static, .is_mirror = m->is_mirror };

	return pod_never_evict(&pod);
}

/* A tenant writes config.source: file (and a config.hash) on an ordinary pod: still an
 * ordinary pod, under its own UID, evictable at priority 0. */
static void test_forged_config_source(void **state)
{
	struct pod_meta_list list = { 0 };
	char *items[] = {
		pod_json(UID_HOG, "hog", 0, ",\"annotations\":{\"kubernetes.io/config.source\":\"file\","
			 "\"kubernetes.io/config.hash\":\"" HASH_ETCD "\"}", NODE),
		pod_json(UID_WEB, "web", 100000, "", NODE),
	};
	const struct pod_meta *hog;

	(void)state;
	assert_int_equal(parse(list_json(items, 2), &list), 0);
	assert_int_equal(list.n_items, 2);
	hog = by_uid(&list, UID_HOG);
	assert_non_null(hog);
	assert_false(hog->is_static);
	assert_false(hog->is_mirror);
	assert_string_equal(hog->cgroup_uid, UID_HOG);
	assert_false(never_evicted(hog));
	assert_int_equal(list.n_refused, 0);
	pod_meta_list_free(&list);
}

/* A mirror pod as the kubelet creates it (mirror_client.go CreateMirrorPod): config.mirror and
 * a controller ownerReference to its Node. Without the owner, or with another node's, the
 * annotation alone is no evidence. */
static void test_mirror_needs_node_owner(void **state)
{
	static const char owner[] = ",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Node\","
				    "\"name\":\"" NODE "\",\"uid\":\"6c6c6c6c-0000-4000-8000-000000000001\","
				    "\"controller\":true}]";
	static const char other_node[] = ",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Node\","
					 "\"name\":\"n2\",\"controller\":true}]";
	static const char not_controller[] = ",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Node\","
					     "\"name\":\"" NODE "\"}]";
	char annotation[] = ",\"annotations\":{\"kubernetes.io/config.mirror\":\"" HASH_ETCD "\"}";
	struct pod_meta_list list = { 0 };
	const struct pod_meta *m;
	char extra[512];

	(void)state;
	snprintf(extra, sizeof(extra), "%s%s", annotation, owner);
	assert_int_equal(parse(list_json((char *[]){ pod_json(UID_MIRROR, "etcd-n1", 2000001000, extra,
								NODE) }, 1), &list), 0);
	m = by_uid(&list, UID_MIRROR);
	assert_non_null(m);
	assert_true(m->is_mirror);
	assert_true(m->is_static);
	assert_string_equal(m->cgroup_uid, HASH_ETCD);	/* the static pod's UID names the cgroup */

	const char *forged[] = { "", other_node, not_controller };

	for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
		snprintf(extra, sizeof(extra), "%s%s", annotation, forged[i]);
		assert_int_equal(parse(list_json((char *[]){ pod_json(UID_TENANT, "fake", 0, extra, NODE) }, 1),
				       &list), 0);
		m = by_uid(&list, UID_TENANT);
		assert_non_null(m);
		assert_false(m->is_mirror);
		assert_false(m->is_static);
		assert_string_equal(m->cgroup_uid, UID_TENANT);
		assert_false(never_evicted(m));
	}
	pod_meta_list_free(&list);
}

/* A forged mirror pod (the annotation and the Node owner: NodeRestriction binds only nodes)
 * naming another pod's UID: the forgery is refused alone, the real pod keeps its own name
 * and priority and stays evictable. */
static void test_mirror_claim_on_another_pod(void **state)
{
	char extra[512];
	struct pod_meta_list list = { 0 };
	uint64_t before = pods_refused_total();
	const struct pod_meta *hog;

	(void)state;
	snprintf(extra, sizeof(extra), ",\"annotations\":{\"kubernetes.io/config.mirror\":\"%s\"},"
		 "\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"" NODE "\","
		 "\"controller\":true}]", UID_HOG);
	char *items[] = {
		pod_json(UID_TENANT, "shield", 0, extra, NODE),
		pod_json(UID_HOG, "hog", 0, "", NODE),
		pod_json(UID_WEB, "web", 100000, "", NODE),
	};
	assert_int_equal(parse(list_json(items, 3), &list), 0);
	assert_int_equal(list.n_items, 2);
	hog = by_uid(&list, UID_HOG);
	assert_non_null(hog);
	assert_string_equal(hog->name, "hog");
	assert_false(hog->is_static);
	assert_false(never_evicted(hog));
	assert_null(by_uid(&list, UID_TENANT));
	assert_int_equal(list.n_refused, 1);
	assert_non_null(strstr(list.refused[0].message, UID_TENANT));
	assert_string_equal(list.refused[0].key, "uid " UID_TENANT);
	assert_int_equal(pods_refused_total() - before, 1);
	pod_meta_list_free(&list);
}

/* One list, good pods and poisoned ones: fields only compared (a 70-byte config.source, a
 * config.hash equal to another pod's UID, a 100-byte ownerReference kind) are no reason to
 * refuse anything; a field over its buffer or of the wrong type refuses that pod alone. */
static void test_poisoned_pods_refused_alone(void **state)
{
	char long_source[160], long_kind[256], long_name[400], hash_of_web[160];
	struct pod_meta_list list = { 0 };
	uint64_t before = pods_refused_total();
	const struct pod_meta *m;

	(void)state;
	snprintf(long_source, sizeof(long_source), ",\"annotations\":{\"kubernetes.io/config.source\":\"%070d\"}", 7);
	snprintf(long_kind, sizeof(long_kind), ",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"%0100d\","
		 "\"name\":\"x\",\"controller\":true}]", 7);
	snprintf(hash_of_web, sizeof(hash_of_web), ",\"annotations\":{\"kubernetes.io/config.source\":\"file\","
		 "\"kubernetes.io/config.hash\":\"%s\"}", UID_WEB);
	memset(long_name, 'a', 300);
	long_name[300] = '\0';
	char *items[] = {
		pod_json(UID_WEB, "web", 100000, "", NODE),
		pod_json(UID_HOG, "hog", 0, long_source, NODE),
		pod_json(UID_DB, "db", 10, long_kind, NODE),
		pod_json(UID_TENANT, "copycat", 0, hash_of_web, NODE),
		pod_json("11111111-2222-4333-8444-555555555555", long_name, 0, "", NODE),
		strdup("{\"metadata\":{\"uid\":\"66666666-7777-4888-9999-aaaaaaaaaaaa\",\"name\":\"p\"},"
		       "\"spec\":{\"nodeName\":\"" NODE "\",\"priority\":\"high\"}}"),
		strdup("{\"metadata\":{\"name\":\"nouid\"},\"spec\":{\"nodeName\":\"" NODE "\"}}"),
	};

	assert_int_equal(parse(list_json(items, 7), &list), 0);
	assert_int_equal(list.n_items, 4);
	assert_int_equal(list.n_refused, 3);
	assert_int_equal(pods_refused_total() - before, 3);
	assert_non_null(strstr(list.refused[0].message, "items[4].metadata.name: too long"));
	assert_string_equal(list.refused[0].key, "uid 11111111-2222-4333-8444-555555555555");
	assert_non_null(strstr(list.refused[1].message, "items[5].spec.priority: expected int"));
	assert_non_null(strstr(list.refused[2].message, "items[6].metadata.uid: missing"));
	assert_string_equal(list.refused[2].key, "items[6]");

	m = by_uid(&list, UID_WEB);
	assert_non_null(m);
	assert_int_equal(m->priority, 100000);
	assert_string_equal(m->cgroup_uid, UID_WEB);
	m = by_uid(&list, UID_HOG);
	assert_non_null(m);
	assert_false(m->is_static);
	m = by_uid(&list, UID_DB);
	assert_non_null(m);
	assert_false(m->is_daemonset);
	m = by_uid(&list, UID_TENANT);
	assert_non_null(m);
	assert_false(m->is_static);
	assert_string_equal(m->cgroup_uid, UID_TENANT);	/* not web's cgroup */
	pod_meta_list_free(&list);

	/* A single Pod that is bad is still refused whole (a watch event keeps the last good). */
	{
		static const char one[] = "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\"}}";

		assert_int_equal(pods_parse_podlist(one, sizeof(one) - 1, "w", NULL, &list, NULL, 0), -EINVAL);
		assert_int_equal(list.n_items, 0);
	}
}

/* ---- the pods table: a refusal logged once per pod, the rest joined -------------------- */

static void write_cgroup(const char *root, const char *rel)
{
	char file[PATH_MAX];

	snprintf(file, sizeof(file), "%s/cgroup.events", rel);
	fixture_write(root, file, "populated 1\nfrozen 0\n");
	snprintf(file, sizeof(file), "%s/memory.current", rel);
	fixture_write(root, file, "1000\n");
	snprintf(file, sizeof(file), "%s/memory.stat", rel);
	fixture_write(root, file, "anon 1000\ninactive_file 0\n");
	snprintf(file, sizeof(file), "%s/pids.current", rel);
	fixture_write(root, file, "1\n");
}

static int setup_tmp(void **state)
{
	char *root = malloc(PATH_MAX);

	if (!root)
		return -1;
	fixture_tmpdir(root, "identity");
	*state = root;
	return 0;
}

static int teardown_tmp(void **state)
{
	fixture_rm_rf(*state);
	free(*state);
	return 0;
}

static size_t count_in(const char *path, const char *needle)
{
	size_t n = 0, len;
	char *text, *p;
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	text = calloc(1, 1 << 20);
	assert_non_null(text);
	len = fread(text, 1, (1 << 20) - 1, f);
	text[len] = '\0';
	fclose(f);
	for (p = text; (p = strstr(p, needle)); p++)
		n++;
	free(text);
	return n;
}

static void test_refusal_logged_once_rest_joined(void **state)
{
	const char *root = *state;
	char pods_file[PATH_MAX], log_path[PATH_MAX], long_name[400];
	struct pods *pods;
	struct pod **list;
	size_t n;
	int saved, fd;
	char *items[2];

	fixture_write(root, CG "/cgroup.controllers", "memory pids\n");
	write_cgroup(root, WEB_DIR);
	write_cgroup(root, HOG_DIR);
	memset(long_name, 'a', 300);
	long_name[300] = '\0';
	items[0] = pod_json(UID_WEB, "web", 100000, "", NODE);
	items[1] = pod_json(UID_HOG, long_name, 0, "", NODE);
	{
		char *text = list_json(items, 2);

		fixture_write(root, "pods.json", "%s", text);
		free(text);
	}
	snprintf(pods_file, sizeof(pods_file), "%s/pods.json", root);
	snprintf(log_path, sizeof(log_path), "%s/log", root);
	assert_int_equal(pods_open(&pods, &(struct pods_options){
		.root = root,
		.meta_source = pods_file_source_new(pods_file, NODE),
	}), 0);
	assert_int_equal(pods_meta_wait(pods, 30ll * 1000000000), 0);

	fflush(stderr);
	saved = dup(2);
	fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(saved >= 0 && fd >= 0);
	dup2(fd, 2);
	close(fd);
	for (int i = 0; i < 5; i++)
		assert_int_equal(pods_refresh(pods), 0);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);

	assert_int_equal(count_in(log_path, "items[1].metadata.name: too long"), 1);
	list = pods_list(pods, &n);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(list[i]->uid, UID_WEB)) {
			assert_false(list[i]->meta_unknown);
			assert_int_equal(list[i]->priority, 100000);
		} else {
			assert_true(list[i]->meta_unknown);	/* refused: fails closed */
		}
	}
	pods_close(pods);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forged_config_source),
		cmocka_unit_test(test_mirror_needs_node_owner),
		cmocka_unit_test(test_mirror_claim_on_another_pod),
		cmocka_unit_test(test_poisoned_pods_refused_alone),
		cmocka_unit_test_setup_teardown(test_refusal_logged_once_rest_joined, setup_tmp, teardown_tmp),
	};

	log_set_level(LOGLEVEL_INFO);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
