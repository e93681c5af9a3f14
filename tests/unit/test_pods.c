// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Pods (issue 4): PodList parsing incl. malformed input, cgroup discovery for both kubelet
 * drivers and every QoS class on fixture trees, usage, the join with a pods file, evictd's
 * own pod, standalone workloads with xattrs, and per-pod disk use (volumes, logs, crictl
 * writable layers). Static PodLists: tests/fixtures/pods; crictl output: tests/fixtures/pods-disk. */
#include "testutil.h"

#include <dirent.h>
#include <sys/resource.h>

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>

#include "sys/log.h"
#include "pods/pods.h"
#include "core/rank.h"

#define PODS_FIXTURES FIXTURES_DIR "/pods"
#define MI (1024ll * 1024)
#define GI (1024ll * MI)

#define UID_G "4b5f0c1e-8c7a-4e5b-9d2a-1f3e5a7b9c01"
#define UID_BU "7d9e2f10-3a4b-4c5d-8e6f-a1b2c3d4e5f6"
#define UID_BE "c0ffee00-1234-4abc-8def-0123456789ab"
#define UID_MIRROR_API "9a8b7c6d-5e4f-4a3b-8c1d-0e9f8a7b6c5d"
#define HASH_APISERVER "2b1c5e4f6a7d8e9f0a1b2c3d4e5f6a7b"
#define UID_DS "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
#define UID_CRIT "e5d4c3b2-a190-4876-9543-210fedcba987"
#define UID_UNKNOWN_G "11111111-2222-4333-8444-555555555555"
#define UID_UNKNOWN_BE "66666666-7777-4888-9999-aaaaaaaaaaaa"

static int setup_tmp(void **state)
{
	char *root = malloc(PATH_MAX);

	if (!root)
		return -1;
	fixture_tmpdir(root, "pods");
	*state = root;
	return 0;
}

static int teardown_tmp(void **state)
{
	fixture_rm_rf(*state);
	free(*state);
	return 0;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long size;

	if (!f)
		fail_msg("fopen %s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)size + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
	buf[size] = '\0';
	fclose(f);
	*len = (size_t)size;
	return buf;
}

static int parse_fixture(const char *file, const char *node, struct pod_meta_list *list)
{
	char path[PATH_MAX], err[512];
	size_t len;
	char *json;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", PODS_FIXTURES, file);
	json = slurp(path, &len);
	ret = pods_parse_podlist(json, len, path, node, list, err, sizeof(err));
	if (ret)
		print_message("parse %s: %s\n", path, err);
	free(json);
	return ret;
}

static const struct pod_meta *meta_by_uid(const struct pod_meta_list *list, const char *uid)
{
	for (size_t i = 0; i < list->n_items; i++) {
		if (strcmp(list->items[i].uid, uid) == 0)
			return &list->items[i];
	}
	return NULL;
}

/* ---- parser: the fixture PodLists ------------------------------------------------------ */

static void test_parse_guaranteed_single_pod(void **state)
{
	struct pod_meta_list list = { 0 };
	const struct pod_meta *m;

	/* `kubectl get pod NAME -o json` prints one Pod, not a List. */
	assert_int_equal(parse_fixture("guaranteed.json", NULL, &list), 0);
	assert_int_equal(list.n_items, 1);
	m = &list.items[0];
	assert_string_equal(m->uid, UID_G);
	assert_string_equal(m->cgroup_uid, UID_G);
	assert_string_equal(m->namespace_, "shop");
	assert_string_equal(m->name, "web-7c9f8b6d5-x2x4q");
	assert_int_equal(m->priority, 1000);
	assert_true(m->qos_known);
	assert_int_equal(m->qos, POD_QOS_GUARANTEED);
	assert_int_equal(m->termination_grace_period_s, 45);
	assert_int_equal(m->memory_request, 256 * MI);
	assert_false(m->is_static);
	assert_false(m->is_mirror);
	assert_false(m->is_daemonset);	/* owned by a ReplicaSet */
	assert_false(m->terminal);
	pod_meta_list_free(&list);
}

static void test_parse_burstable_init_containers(void **state)
{
	struct pod_meta_list list = { 0 };
	const struct pod_meta *m;

	assert_int_equal(parse_fixture("burstable-init.json", NULL, &list), 0);
	assert_int_equal(list.n_items, 1);
	m = &list.items[0];
	assert_int_equal(m->qos, POD_QOS_BURSTABLE);
	/* containers 128Mi + 100Mi, sidecar "proxy" 64Mi runs alongside: 292Mi. The init
	 * container "migrate" (512Mi, before the sidecar starts) peaks higher: 512Mi. Plus the
	 * RuntimeClass overhead 32Mi on a non-zero request: 544Mi. */
	assert_int_equal(m->memory_request, 544 * MI);
	/* ephemeral-storage: 1Gi on "api", nothing else, no overhead for it. */
	assert_int_equal(m->ephemeral_storage_request, GI);
	assert_int_equal(m->termination_grace_period_s, 30);
	assert_int_equal(m->priority, 0);
	pod_meta_list_free(&list);
}

static void test_parse_besteffort(void **state)
{
	struct pod_meta_list list = { 0 };

	assert_int_equal(parse_fixture("besteffort.json", NULL, &list), 0);
	assert_int_equal(list.n_items, 1);
	assert_int_equal(list.items[0].qos, POD_QOS_BESTEFFORT);
	assert_int_equal(list.items[0].memory_request, 0);
	assert_int_equal(list.items[0].ephemeral_storage_request, 0);
	assert_int_equal(list.items[0].termination_grace_period_s, 5);
	pod_meta_list_free(&list);
}

static void test_parse_static_and_mirror(void **state)
{
	struct pod_meta_list list = { 0 };
	const struct pod_meta *apiserver, *exporter;
	struct pod pod = { 0 };

	assert_int_equal(parse_fixture("static-mirror.json", NULL, &list), 0);
	assert_int_equal(list.n_items, 2);
	apiserver = meta_by_uid(&list, UID_MIRROR_API);
	assert_non_null(apiserver);
	assert_true(apiserver->is_static);
	assert_true(apiserver->is_mirror);
	/* The cgroup is named after the static pod's UID, the hash, not the API server's UID. */
	assert_string_equal(apiserver->cgroup_uid, HASH_APISERVER);
	assert_int_equal(apiserver->priority, 2000001000);

	/* config.source: file and config.mirror without the kubelet's ownerReference to the
	 * Node are annotations any pod author can write (doc/DESIGN.md §5, "Pod identity"): an
	 * ordinary pod under its own UID, evictable at priority 0. */
	exporter = meta_by_uid(&list, "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f");
	assert_non_null(exporter);
	assert_int_equal(exporter->priority, 0);
	assert_string_equal(exporter->cgroup_uid, exporter->uid);
	pod.is_static = exporter->is_static;
	pod.is_mirror = exporter->is_mirror;
	assert_false(pod_never_evict(&pod));
	pod_meta_list_free(&list);
}

static void test_parse_daemonset(void **state)
{
	static const char not_controller[] =
		"{\"kind\":\"List\",\"items\":[{\"metadata\":{\"uid\":\"u-1\",\"name\":\"a\","
		"\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"name\":\"ds\",\"controller\":false}]}}]}";
	struct pod_meta_list list = { 0 };

	assert_int_equal(parse_fixture("daemonset.json", NULL, &list), 0);
	assert_int_equal(list.n_items, 1);
	assert_true(list.items[0].is_daemonset);
	assert_int_equal(list.items[0].priority, 1000);
	assert_int_equal(list.items[0].termination_grace_period_s, 10);
	assert_int_equal(list.items[0].memory_request, 64 * MI);

	/* A DaemonSet that is an owner but not the controller does not make a DaemonSet pod. */
	assert_int_equal(pods_parse_podlist(not_controller, sizeof(not_controller) - 1, "x", NULL,
					    &list, NULL, 0), 0);
	assert_false(list.items[0].is_daemonset);
	pod_meta_list_free(&list);
}

static void test_parse_system_node_critical(void **state)
{
	struct pod_meta_list list = { 0 };
	struct pod pod = { 0 };

	assert_int_equal(parse_fixture("system-node-critical.json", NULL, &list), 0);
	assert_int_equal(list.n_items, 1);
	assert_int_equal(list.items[0].priority, 2000001000);
	assert_false(list.items[0].is_static);
	pod.priority = list.items[0].priority;
	assert_true(pod_never_evict(&pod));
	pod_meta_list_free(&list);
}

static void test_parse_node_filter(void **state)
{
	struct pod_meta_list list = { 0 };

	assert_int_equal(parse_fixture("node-a.json", NULL, &list), 0);
	assert_int_equal(list.n_items, 9);
	assert_non_null(meta_by_uid(&list, "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"));
	assert_int_equal(parse_fixture("node-a.json", "node-a", &list), 0);
	assert_int_equal(list.n_items, 8);
	assert_null(meta_by_uid(&list, "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"));
	/* The finished Job pod is kept but marked: it has no cgroup by design. */
	assert_true(meta_by_uid(&list, "0f1e2d3c-4b5a-4968-8776-655443322110")->terminal);
	pod_meta_list_free(&list);
}

static void test_parse_quantity_forms(void **state)
{
	static const char json[] =
		"{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"uid\":\"u-2\",\"name\":\"n\"},"
		"\"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"memory\":1048576}}},"
		"{\"name\":\"b\",\"resources\":{\"requests\":{\"memory\":\"1.5Gi\"}}},"
		"{\"name\":\"c\",\"resources\":{\"requests\":{\"memory\":\"500M\"}}},"
		"{\"name\":\"d\",\"resources\":{}},{\"name\":\"e\"}]}}]}";
	struct pod_meta_list list = { 0 };

	/* resource.Quantity unmarshals a JSON number as well as a string. */
	assert_int_equal(pods_parse_podlist(json, sizeof(json) - 1, "q", NULL, &list, NULL, 0), 0);
	assert_int_equal(list.items[0].memory_request, MI + 3 * GI / 2 + 500000000);
	/* No status: QoS unknown; no terminationGracePeriodSeconds: -1. */
	assert_false(list.items[0].qos_known);
	assert_int_equal(list.items[0].termination_grace_period_s, -1);
	pod_meta_list_free(&list);
}

static void test_parse_pod_level_requests(void **state)
{
	static const char json[] =
		"{\"kind\":\"List\",\"items\":[{\"metadata\":{\"uid\":\"u-3\",\"name\":\"n\"},"
		"\"spec\":{\"resources\":{\"requests\":{\"memory\":\"2Gi\"}},"
		"\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"memory\":\"1Gi\"}}}]}}]}";
	struct pod_meta_list list = { 0 };

	/* PodLevelResources: the pod-level request replaces the containers' sum. */
	assert_int_equal(pods_parse_podlist(json, sizeof(json) - 1, "p", NULL, &list, NULL, 0), 0);
	assert_int_equal(list.items[0].memory_request, 2 * GI);
	pod_meta_list_free(&list);
}

/* ---- parser: malformed input ------------------------------------------------------------ */

#define POD_WITH(spec_json) \
	"{\"kind\":\"List\",\"items\":[{\"metadata\":{\"uid\":\"u-1\",\"name\":\"a\"},\"spec\":" spec_json "}]}"

struct bad_case {
	const char *json;
	const char *expect;	/* substring of the error message */
};

static void test_parse_malformed(void **state)
{
	static const struct bad_case cases[] = {
		{ "{\"kind\":\"List\",\"items\":[{\"metadata\":{\"uid\":", "truncated" },
		{ "", "truncated" },
		{ "{\"kind\":\"List\",\"items\":[]} trailing", "malformed JSON at byte 27" },
		{ "{\"kind\":\"List\",\"items\":[],}", "malformed JSON" },
		{ "[1,2,3]", "expected a PodList object, got array" },
		{ "{\"kind\":\"Deployment\",\"items\":[]}", "kind: \"Deployment\"" },
		{ "{\"kind\":\"List\"}", "items: missing" },
		{ "{\"kind\":\"List\",\"items\":{}}", "items: expected array, got object" },
		{ "{\"kind\":\"List\",\"items\":[7]}", "items[0]: expected object, got int" },
		{ "{\"kind\":\"List\",\"items\":[{\"spec\":{}}]}", "items[0].metadata: missing" },
		{ "{\"kind\":\"List\",\"items\":[{\"metadata\":{\"name\":\"a\"}}]}", "items[0].metadata.uid: missing" },
		{ "{\"kind\":\"List\",\"items\":[{\"metadata\":{\"uid\":\"u\"}}]}", "items[0].metadata.name: missing" },
		{ "{\"kind\":\"List\",\"items\":[{\"metadata\":{\"uid\":42,\"name\":\"a\"}}]}",
		  "items[0].metadata.uid: expected string, got int" },
		{ "{\"kind\":\"List\",\"items\":[{\"metadata\":{\"uid\":\"../../etc\",\"name\":\"a\"}}]}",
		  "items[0].metadata.uid: \"../../etc\" is not a UID" },
		{ "{\"kind\":\"List\",\"items\":[{\"metadata\":{\"uid\":\"u\",\"name\":\"a\\u0000b\"}}]}",
		  "items[0].metadata.name: contains a NUL" },
		{ "{\"kind\":\"List\",\"items\":[{\"metadata\":{\"uid\":\"u\",\"name\":\"a\","
		  "\"annotations\":{\"kubernetes.io/config.mirror\":7}}}]}",
		  "items[0].metadata.annotations.kubernetes.io/config.mirror: expected string, got int" },
		{ "{\"kind\":\"List\",\"items\":[{\"metadata\":{\"uid\":\"u\",\"name\":\"a\","
		  "\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"controller\":\"yes\"}]}}]}",
		  "items[0].metadata.ownerReferences[0].controller: expected boolean, got string" },
		{ POD_WITH("{\"priority\":\"high\"}"), "items[0].spec.priority: expected int, got string" },
		{ POD_WITH("{\"priority\":1.5}"), "items[0].spec.priority: expected int, got double" },
		{ POD_WITH("{\"priority\":1e400}"), "items[0].spec.priority: expected int, got double" },
		{ POD_WITH("{\"priority\":3000000000}"), "items[0].spec.priority: 3000000000 out of range" },
		{ POD_WITH("{\"priority\":99999999999999999999999}"), "items[0].spec.priority:" },
		{ POD_WITH("{\"terminationGracePeriodSeconds\":99999999999999999999999}"),
		  "items[0].spec.terminationGracePeriodSeconds:" },
		{ POD_WITH("{\"terminationGracePeriodSeconds\":-1}"),
		  "items[0].spec.terminationGracePeriodSeconds: -1 out of range" },
		{ POD_WITH("{\"containers\":{}}"), "items[0].spec.containers: expected array, got object" },
		{ POD_WITH("{\"containers\":[\"web\"]}"), "items[0].spec.containers[0]: expected object, got string" },
		{ POD_WITH("{\"containers\":[{\"resources\":{\"requests\":{\"memory\":{}}}}]}"),
		  "items[0].spec.containers[0].resources.requests.memory: expected a quantity string, got object" },
		{ POD_WITH("{\"containers\":[{\"resources\":{\"requests\":{\"memory\":\"12XB\"}}}]}"),
		  "items[0].spec.containers[0].resources.requests.memory: \"12XB\" is not a valid" },
		{ POD_WITH("{\"containers\":[{\"resources\":{\"requests\":{\"memory\":\"-1Gi\"}}}]}"),
		  "items[0].spec.containers[0].resources.requests.memory: \"-1Gi\" is not a valid non-negative" },
		{ POD_WITH("{\"containers\":[{\"resources\":{\"requests\":{\"memory\":\"99999999999Ei\"}}}]}"),
		  "items[0].spec.containers[0].resources.requests.memory: quantity \"99999999999Ei\" out of range" },
		{ POD_WITH("{\"containers\":[{\"resources\":{\"requests\":{\"memory\":99999999999999999999}}}]}"),
		  "items[0].spec.containers[0].resources.requests.memory:" },
		{ POD_WITH("{\"initContainers\":[{\"restartPolicy\":true}]}"),
		  "items[0].spec.initContainers[0].restartPolicy: expected string, got boolean" },
		{ POD_WITH("{\"containers\":[{\"resources\":{\"requests\":{\"ephemeral-storage\":[]}}}]}"),
		  "items[0].spec.containers[0].resources.requests.ephemeral-storage: expected a quantity" },
		{ POD_WITH("{\"overhead\":{\"memory\":\"lots\"}}"), "items[0].spec.overhead.memory:" },
		{ "{\"kind\":\"List\",\"items\":[{\"metadata\":{\"uid\":\"u\",\"name\":\"a\"},"
		  "\"status\":{\"qosClass\":\"Gold\"}}]}", "items[0].status.qosClass: \"Gold\"" },
		{ "{\"kind\":\"List\",\"items\":[{\"metadata\":{\"uid\":\"u\",\"name\":\"a\"}},"
		  "{\"metadata\":{\"uid\":\"u\",\"name\":\"b\"}}]}", "names the cgroup of pod UID u, which 2" },
	};
	struct pod_meta_list list = { 0 };
	char err[512];

	/* A good list first: every document-level failure below must leave it untouched; a bad
	 * pod in a well-formed list is refused alone (doc/DESIGN.md §5, "Pod identity"). */
	assert_int_equal(parse_fixture("daemonset.json", NULL, &list), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pod_meta_list one = { 0 };
		int ret = pods_parse_podlist(cases[i].json, strlen(cases[i].json), "bad.json", NULL,
					     &one, err, sizeof(err));

		if (ret == 0) {
			if (one.n_refused < 1 || !strstr(one.refused[0].message, cases[i].expect) ||
			    strncmp(one.refused[0].message, "bad.json: ", 10))
				fail_msg("case %zu (%s): refused %zu, \"%s\", want \"%s\"", i, cases[i].json,
					 one.n_refused, one.n_refused ? one.refused[0].message : "",
					 cases[i].expect);
			assert_int_equal(one.n_items, 0);
			pod_meta_list_free(&one);
			continue;
		}
		ret = pods_parse_podlist(cases[i].json, strlen(cases[i].json), "bad.json", NULL,
					 &list, err, sizeof(err));
		if (ret != -EINVAL || !strstr(err, cases[i].expect) || strncmp(err, "bad.json: ", 10))
			fail_msg("case %zu (%s): ret %d, error \"%s\", want \"%s\"", i, cases[i].json,
				 ret, err, cases[i].expect);
		assert_int_equal(list.n_items, 1);
		assert_string_equal(list.items[0].uid, UID_DS);
	}
	pod_meta_list_free(&list);
}

static void test_parse_truncated_fixture_every_length(void **state)
{
	struct pod_meta_list list = { 0 };
	char path[PATH_MAX], err[512];
	size_t len;
	char *json;

	/* Every prefix of a real document: an error naming the file, never a crash. */
	snprintf(path, sizeof(path), "%s/burstable-init.json", PODS_FIXTURES);
	json = slurp(path, &len);
	for (size_t cut = 0; cut + 2 < len; cut += 7) {
		int ret = pods_parse_podlist(json, cut, path, NULL, &list, err, sizeof(err));

		assert_int_equal(ret, -EINVAL);
		assert_non_null(strstr(err, path));
		assert_int_equal(list.n_items, 0);
	}
	free(json);
}

static void test_parse_deep_nesting(void **state)
{
	char *json = malloc(4096);
	struct pod_meta_list list = { 0 };
	char err[512];
	size_t n = 0;

	assert_non_null(json);
	n += (size_t)sprintf(json, "{\"kind\":\"List\",\"items\":");
	for (int i = 0; i < 200; i++)
		json[n++] = '[';
	for (int i = 0; i < 200; i++)
		json[n++] = ']';
	json[n++] = '}';
	assert_int_equal(pods_parse_podlist(json, n, "deep.json", NULL, &list, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "deep.json"));
	free(json);
}

/* ---- cgroup fixture trees ------------------------------------------------------------ */

static void write_cgroup(const char *root, const char *rel, long long current, long long inactive,
			 long long pids)
{
	char file[PATH_MAX];

	snprintf(file, sizeof(file), "%s/cgroup.procs", rel);
	fixture_write(root, file, "%s", "");
	if (current >= 0) {
		snprintf(file, sizeof(file), "%s/memory.current", rel);
		fixture_write(root, file, "%lld\n", current);
		snprintf(file, sizeof(file), "%s/memory.stat", rel);
		fixture_write(root, file, "anon 1000\nfile 2000\nactive_file 10\ninactive_file %lld\n"
			      "active_anon 1\n", inactive);
	}
	if (pids >= 0) {
		snprintf(file, sizeof(file), "%s/pids.current", rel);
		fixture_write(root, file, "%lld\n", pids);
	}
}

#define CG "sys/fs/cgroup"
#define SLICE CG "/kubepods.slice"

static void build_systemd_tree(const char *root)
{
	fixture_write(root, CG "/cgroup.controllers", "cpuset cpu io memory pids\n");
	/* QoS slices are not pods. */
	write_cgroup(root, SLICE, 9 * GI, 0, 100);
	write_cgroup(root, SLICE "/kubepods-burstable.slice", GI, 0, 10);
	write_cgroup(root, SLICE "/kubepods-besteffort.slice", GI, 0, 10);
	write_cgroup(root, SLICE "/kubepods-pod4b5f0c1e_8c7a_4e5b_9d2a_1f3e5a7b9c01.slice",
		     300 * MI, 50 * MI, 7);
	/* A container scope inside the pod: not a pod of its own. */
	write_cgroup(root, SLICE "/kubepods-pod4b5f0c1e_8c7a_4e5b_9d2a_1f3e5a7b9c01.slice/"
		     "cri-containerd-0123abcd.scope", 250 * MI, 50 * MI, 6);
	write_cgroup(root, SLICE "/kubepods-burstable.slice/"
		     "kubepods-burstable-pod7d9e2f10_3a4b_4c5d_8e6f_a1b2c3d4e5f6.slice",
		     900 * MI, 100 * MI, 12);
	write_cgroup(root, SLICE "/kubepods-besteffort.slice/"
		     "kubepods-besteffort-podc0ffee00_1234_4abc_8def_0123456789ab.slice",
		     2 * GI, 0, 40);
	/* Noise: a file named like a pod, an unescaped name, a foreign slice. */
	fixture_write(root, SLICE "/kubepods-besteffort.slice/kubepods-besteffort-poddead_beef.slice.txt", "x");
	write_cgroup(root, SLICE "/kubepods-burstable.slice/kubepods-burstable-pod7d9e2f10-3a4b.slice", 1, 0, 1);
	write_cgroup(root, CG "/system.slice/kubepods-podffff.slice", 1, 0, 1);
}

static struct pod *find_pod(struct pods *pods, const char *uid)
{
	size_t n;
	struct pod **list = pods_list(pods, &n);

	for (size_t i = 0; i < n; i++) {
		if (strcmp(list[i]->uid, uid) == 0)
			return list[i];
	}
	return NULL;
}

static void test_discover_systemd_driver(void **state)
{
	const char *root = *state;
	struct pods_options options = { .root = root };
	struct pods *pods;
	struct pod *g, *bu, *be;
	char expect[PATH_MAX];
	size_t n;

	build_systemd_tree(root);
	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_refresh(pods), 0);
	pods_list(pods, &n);
	assert_int_equal(n, 3);

	g = find_pod(pods, UID_G);
	bu = find_pod(pods, UID_BU);
	be = find_pod(pods, UID_BE);
	assert_non_null(g);
	assert_non_null(bu);
	assert_non_null(be);
	assert_int_equal(g->qos, POD_QOS_GUARANTEED);
	assert_int_equal(bu->qos, POD_QOS_BURSTABLE);
	assert_int_equal(be->qos, POD_QOS_BESTEFFORT);
	snprintf(expect, sizeof(expect), "%s/" SLICE "/kubepods-pod4b5f0c1e_8c7a_4e5b_9d2a_1f3e5a7b9c01.slice", root);
	assert_string_equal(g->cgroup_path, expect);
	/* working set = memory.current - inactive_file */
	assert_int_equal(g->memory_working_set, 250 * MI);
	assert_int_equal(bu->memory_working_set, 800 * MI);
	assert_int_equal(be->memory_working_set, 2 * GI);
	assert_int_equal(g->processes, 7);
	assert_int_equal(be->processes, 40);
	assert_false(g->stats_missing);
	pods_close(pods);
}

static void test_discover_cgroupfs_driver(void **state)
{
	const char *root = *state;
	struct pods_options options = { .root = root };
	struct pods *pods;
	size_t n;

	fixture_write(root, CG "/cgroup.controllers", "memory pids\n");
	write_cgroup(root, CG "/kubepods/pod" UID_G, 100 * MI, 0, 1);
	write_cgroup(root, CG "/kubepods/pod" UID_G "/0123456789abcdef", 90 * MI, 0, 1);
	write_cgroup(root, CG "/kubepods/burstable/pod" UID_BU, 200 * MI, 20 * MI, 2);
	write_cgroup(root, CG "/kubepods/besteffort/pod" UID_BE, 300 * MI, 0, 3);
	/* An escaped (systemd-style) name in a cgroupfs tree is not a pod. */
	write_cgroup(root, CG "/kubepods/besteffort/pod66666666_7777", 1, 0, 1);

	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_refresh(pods), 0);
	pods_list(pods, &n);
	assert_int_equal(n, 3);
	assert_int_equal(find_pod(pods, UID_G)->qos, POD_QOS_GUARANTEED);
	assert_int_equal(find_pod(pods, UID_BU)->qos, POD_QOS_BURSTABLE);
	assert_int_equal(find_pod(pods, UID_BE)->qos, POD_QOS_BESTEFFORT);
	assert_int_equal(find_pod(pods, UID_BU)->memory_working_set, 180 * MI);
	assert_int_equal(find_pod(pods, UID_BE)->processes, 3);
	pods_close(pods);
}

static void test_discover_hybrid_mount_and_cgroup_root(void **state)
{
	const char *root = *state;
	struct pods_options options = { .root = root, .kubelet_cgroup_root = "/kube" };
	const char *roots[4];
	char expect[PATH_MAX];
	struct pods *pods;
	size_t n;

	/* Hybrid hosts: only the unified mount has cgroup.controllers. */
	fixture_write(root, CG "/memory/memory.usage_in_bytes", "1\n");
	fixture_write(root, CG "/unified/cgroup.controllers", "\n");
	write_cgroup(root, CG "/unified/kube/kubepods/burstable/pod" UID_BU, 5 * MI, 0, 1);
	write_cgroup(root, CG "/unified/kubepods/burstable/pod" UID_BE, 5 * MI, 0, 1);

	assert_int_equal(pods_open(&pods, &options), 0);
	snprintf(expect, sizeof(expect), "%s/" CG "/unified", root);
	assert_string_equal(pods_cgroup_mount(pods), expect);
	assert_int_equal(pods_refresh(pods), 0);
	pods_list(pods, &n);
	/* --cgroup-root=/kube: only the tree below it. */
	assert_int_equal(n, 1);
	assert_non_null(find_pod(pods, UID_BU));
	assert_int_equal(pods_kill_roots(pods, roots, 4), 2);
	snprintf(expect, sizeof(expect), "%s/" CG "/unified/kube/kubepods.slice", root);
	assert_string_equal(roots[0], expect);
	snprintf(expect, sizeof(expect), "%s/" CG "/unified/kube/kubepods", root);
	assert_string_equal(roots[1], expect);
	pods_close(pods);
}

static void test_no_cgroup_mount(void **state)
{
	struct pods_options options = { .root = *state };
	struct pods *pods = (struct pods *)&options;

	assert_int_equal(pods_open(&pods, &options), -ENOENT);
	assert_null(pods);
}

static void test_usage_working_set_rules(void **state)
{
	const char *root = *state;
	struct pod pod = { 0 };

	/* inactive_file larger than usage: floored at 0. */
	write_cgroup(root, "a", 100, 500, 3);
	snprintf(pod.cgroup_path, sizeof(pod.cgroup_path), "%s/a", root);
	assert_int_equal(pods_read_usage(&pod), 0);
	assert_int_equal(pod.memory_working_set, 0);

	/* No inactive_file key: nothing subtracted (cAdvisor). */
	fixture_write(root, "b/memory.current", "4096\n");
	fixture_write(root, "b/memory.stat", "anon 4096\nactive_file 0\n");
	fixture_write(root, "b/pids.current", "2\n");
	snprintf(pod.cgroup_path, sizeof(pod.cgroup_path), "%s/b", root);
	assert_int_equal(pods_read_usage(&pod), 0);
	assert_int_equal(pod.memory_working_set, 4096);
	assert_false(pod.stats_missing);

	/* No memory controller: stats missing (ranked first, as the kubelet does). */
	fixture_write(root, "c/pids.current", "2\n");
	snprintf(pod.cgroup_path, sizeof(pod.cgroup_path), "%s/c", root);
	assert_int_equal(pods_read_usage(&pod), -ENOENT);
	assert_true(pod.stats_missing);
	assert_int_equal(pod.memory_working_set, 0);
	assert_int_equal(pod.processes, 2);

	/* Garbage in memory.current is not a number. */
	fixture_write(root, "d/memory.current", "lots\n");
	snprintf(pod.cgroup_path, sizeof(pod.cgroup_path), "%s/d", root);
	assert_int_equal(pods_read_usage(&pod), -EINVAL);
	assert_true(pod.stats_missing);
}

static void test_usage_threads_without_pids_controller(void **state)
{
	const char *root = *state;
	struct pod pod = { 0 };

	/* No pids.current: count cgroup.threads through the subtree. */
	fixture_write(root, "p/memory.current", "1\n");
	fixture_write(root, "p/cgroup.threads", "%s", "");
	fixture_write(root, "p/ctr1/cgroup.threads", "101\n102\n103\n");
	fixture_write(root, "p/ctr2/cgroup.threads", "201\n");
	fixture_write(root, "p/ctr2/nested/cgroup.threads", "301\n302\n");
	snprintf(pod.cgroup_path, sizeof(pod.cgroup_path), "%s/p", root);
	pods_read_usage(&pod);
	assert_int_equal(pod.processes, 6);
}

static void test_refresh_usage_only(void **state)
{
	const char *root = *state;
	struct pods_options options = { .root = root };
	struct pods *pods;
	struct pod *be;

	build_systemd_tree(root);
	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_refresh(pods), 0);
	be = find_pod(pods, UID_BE);
	assert_int_equal(be->memory_working_set, 2 * GI);
	fixture_write(root, SLICE "/kubepods-besteffort.slice/"
		      "kubepods-besteffort-podc0ffee00_1234_4abc_8def_0123456789ab.slice/memory.current",
		      "%lld\n", 3 * GI);
	assert_int_equal(pods_refresh_usage(pods), 0);
	/* Same pointer, new value: no rediscovery happened. */
	assert_ptr_equal(find_pod(pods, UID_BE), be);
	assert_int_equal(be->memory_working_set, 3 * GI);
	pods_close(pods);
}

/* ---- cgroup identity ------------------------------------------------------------------ */

static uint64_t inode_of(const char *root, const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (stat(path, &st))
		fail_msg("stat %s: %s", path, strerror(errno));
	return (uint64_t)st.st_ino;
}

/* Remove the cgroup dir root/rel and make a new one at the same path. rmdir + mkdir first;
 * a disk filesystem may hand the freed inode straight back (the kernel never reuses a
 * cgroup id), so then the new dir is made beside the old one and renamed over its path. */
static void recreate_dir(const char *root, const char *rel, uint64_t old_ino)
{
	char path[PATH_MAX], aside[PATH_MAX + 8], cmd[3 * PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(mkdir(path, 0755), 0);
	if (inode_of(root, rel) != old_ino)
		return;
	snprintf(aside, sizeof(aside), "%s.new", path);
	assert_int_equal(mkdir(aside, 0755), 0);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(rename(aside, path), 0);
	assert_true(inode_of(root, rel) != old_ino);
}

#define BE_DIR SLICE "/kubepods-besteffort.slice/kubepods-besteffort-podc0ffee00_1234_4abc_8def_0123456789ab.slice"

static void test_cgroup_id_recorded_and_recreated(void **state)
{
	const char *root = *state;
	struct pods_options options = { .root = root };
	uint64_t old_id, new_id;
	struct pods *pods;
	struct pod *be, *g;

	build_systemd_tree(root);
	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_refresh(pods), 0);
	be = find_pod(pods, UID_BE);
	g = find_pod(pods, UID_G);
	old_id = inode_of(root, BE_DIR);
	assert_int_equal(be->cgroup_id, old_id);
	assert_int_equal(g->cgroup_id, inode_of(root, SLICE "/kubepods-pod4b5f0c1e_8c7a_4e5b_9d2a_1f3e5a7b9c01.slice"));
	assert_int_equal(be->memory_working_set, 2 * GI);

	/* Measured disk use stays with the same cgroup across a refresh. */
	be->disk_bytes.volumes = 777;
	be->disk_inodes.logs = 7;
	g->disk_bytes.writable = 555;
	assert_int_equal(pods_refresh(pods), 0);
	be = find_pod(pods, UID_BE);
	assert_int_equal(be->cgroup_id, old_id);
	assert_int_equal(be->disk_bytes.volumes, 777);
	assert_int_equal(be->disk_inodes.logs, 7);
	assert_int_equal(find_pod(pods, UID_G)->disk_bytes.writable, 555);

	/* Recreated at the same path with other numbers. */
	recreate_dir(root, BE_DIR, old_id);
	write_cgroup(root, BE_DIR, 5 * MI, 0, 2);
	new_id = inode_of(root, BE_DIR);
	assert_true(new_id != old_id);

	/* A usage-only refresh does not read the new cgroup into the old entry. */
	assert_int_equal(pods_refresh_usage(pods), 0);
	assert_int_equal(be->cgroup_id, old_id);
	assert_true(be->stats_missing);
	assert_true(be->exited);
	assert_int_equal(be->memory_working_set, 0);
	assert_int_equal(pods_read_usage(be), -ESTALE);
	assert_false(pod_is_candidate(be));

	/* The full refresh finds a new cgroup: new id, its own usage, nothing carried over. */
	assert_int_equal(pods_refresh(pods), 0);
	be = find_pod(pods, UID_BE);
	assert_non_null(be);
	assert_int_equal(be->cgroup_id, new_id);
	assert_false(be->stats_missing);
	assert_false(be->exited);
	assert_int_equal(be->memory_working_set, 5 * MI);
	assert_int_equal(be->processes, 2);
	assert_int_equal(be->disk_bytes.volumes, 0);
	assert_int_equal(be->disk_inodes.logs, 0);
	/* The other pods are untouched. */
	assert_int_equal(find_pod(pods, UID_G)->disk_bytes.writable, 555);
	pods_close(pods);
}

static void test_workload_id_changes_on_recreation(void **state)
{
	const char *root = *state;
	static const char *const roots[] = { "/workloads" };
	struct pods_options options = { .root = root, .workload_roots = roots, .n_workload_roots = 1 };
	char uid[32];
	uint64_t old_id;
	struct pods *pods;
	struct pod **list;
	size_t n;

	fixture_write(root, CG "/cgroup.controllers", "memory\n");
	write_cgroup(root, "workloads/alpha", 10 * MI, 0, 1);
	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_refresh(pods), 0);
	list = pods_list(pods, &n);
	assert_int_equal(n, 1);
	old_id = inode_of(root, "workloads/alpha");
	assert_int_equal(list[0]->cgroup_id, old_id);
	snprintf(uid, sizeof(uid), "%llu", (unsigned long long)old_id);
	assert_string_equal(list[0]->uid, uid);
	list[0]->disk_bytes.volumes = 1;

	recreate_dir(root, "workloads/alpha", old_id);
	write_cgroup(root, "workloads/alpha", 20 * MI, 0, 1);
	assert_int_equal(pods_refresh(pods), 0);
	list = pods_list(pods, &n);
	assert_int_equal(n, 1);
	assert_int_equal(list[0]->cgroup_id, inode_of(root, "workloads/alpha"));
	assert_true(list[0]->cgroup_id != old_id);
	assert_string_not_equal(list[0]->uid, uid);
	assert_int_equal(list[0]->memory_working_set, 20 * MI);
	assert_int_equal(list[0]->disk_bytes.volumes, 0);
	pods_close(pods);
}

/* ---- join with a pods file ------------------------------------------------------------ */

static void test_join_pods_file(void **state)
{
	const char *root = *state;
	struct pods_options options = { .root = root };
	struct pod *g, *bu, *be, *api, *ds, *crit, *unknown_g, *unknown_be;
	struct pods *pods;
	size_t n;

	build_systemd_tree(root);
	write_cgroup(root, SLICE "/kubepods-burstable.slice/kubepods-burstable-pod" HASH_APISERVER ".slice",
		     400 * MI, 0, 20);
	write_cgroup(root, SLICE "/kubepods-burstable.slice/"
		     "kubepods-burstable-pod1a2b3c4d_5e6f_4a7b_8c9d_0e1f2a3b4c5d.slice", 60 * MI, 0, 2);
	write_cgroup(root, SLICE "/kubepods-burstable.slice/"
		     "kubepods-burstable-pode5d4c3b2_a190_4876_9543_210fedcba987.slice", 30 * MI, 0, 2);
	/* Two cgroups the file does not know. */
	write_cgroup(root, SLICE "/kubepods-pod11111111_2222_4333_8444_555555555555.slice", 90 * MI, 0, 1);
	fixture_write(root, SLICE "/kubepods-pod11111111_2222_4333_8444_555555555555.slice/memory.max",
		      "%lld\n", 128 * MI);
	write_cgroup(root, SLICE "/kubepods-besteffort.slice/"
		     "kubepods-besteffort-pod66666666_7777_4888_9999_aaaaaaaaaaaa.slice", 10 * MI, 0, 1);
	fixture_write(root, SLICE "/kubepods-besteffort.slice/"
		      "kubepods-besteffort-pod66666666_7777_4888_9999_aaaaaaaaaaaa.slice/memory.max", "max\n");

	options.meta_source = pods_file_source_new(PODS_FIXTURES "/node-a.json", "node-a");
	assert_non_null(options.meta_source);
	assert_int_equal(pods_open(&pods, &options), 0);
	/* The file is parsed in a worker; --once waits for it like this. */
	assert_int_equal(pods_meta_wait(pods, 30ll * 1000000000), 0);
	assert_int_equal(pods_refresh(pods), 0);
	pods_list(pods, &n);
	/* 3 + apiserver + DaemonSet + critical + 2 unknown; the file's pods without a cgroup
	 * (the static exporter, the finished Job) are not candidates. */
	assert_int_equal(n, 8);

	g = find_pod(pods, UID_G);
	assert_string_equal(g->name, "web-7c9f8b6d5-x2x4q");
	assert_string_equal(g->namespace_, "shop");
	assert_int_equal(g->priority, 1000);
	assert_int_equal(g->memory_request, 256 * MI);
	assert_int_equal(g->termination_grace_period_s, 45);
	bu = find_pod(pods, UID_BU);
	assert_int_equal(bu->memory_request, 544 * MI);
	assert_int_equal(bu->ephemeral_storage_request, GI);
	be = find_pod(pods, UID_BE);
	assert_int_equal(be->memory_request, 0);
	assert_false(pod_never_evict(be));

	/* The mirror pod joins through its hash: never evicted. */
	api = find_pod(pods, HASH_APISERVER);
	assert_non_null(api);
	assert_string_equal(api->name, "kube-apiserver-node-a");
	assert_true(api->is_mirror);
	assert_true(pod_never_evict(api));
	ds = find_pod(pods, UID_DS);
	assert_true(ds->is_daemonset);
	assert_false(pod_never_evict(ds));
	crit = find_pod(pods, UID_CRIT);
	assert_true(pod_never_evict(crit));

	/* Without metadata: priority 0, evictable; a Guaranteed pod keeps its request from
	 * memory.max so it does not look like it exceeds a zero request. */
	unknown_g = find_pod(pods, UID_UNKNOWN_G);
	assert_non_null(unknown_g);
	assert_int_equal(unknown_g->priority, 0);
	assert_int_equal(unknown_g->qos, POD_QOS_GUARANTEED);
	assert_int_equal(unknown_g->memory_request, 128 * MI);
	assert_false(pod_never_evict(unknown_g));
	unknown_be = find_pod(pods, UID_UNKNOWN_BE);
	assert_int_equal(unknown_be->memory_request, 0);
	assert_int_equal(unknown_be->priority, 0);

	/* Ranked for memory: the unknown BestEffort and the known BestEffort (both over a 0
	 * request, priority 0) lead, the larger consumer first; never-evict pods last. */
	{
		struct pod **list = pods_list(pods, &n);

		rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, NULL, list, n);
		assert_string_equal(list[0]->uid, UID_BE);
		assert_true(pod_never_evict(list[n - 1]));
		assert_true(pod_never_evict(list[n - 2]));
	}
	pods_close(pods);
}

static void test_no_metadata_source(void **state)
{
	const char *root = *state;
	struct pods_options options = { .root = root };
	struct pods *pods;
	struct pod **list;
	size_t n;

	build_systemd_tree(root);
	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_refresh(pods), 0);
	list = pods_list(pods, &n);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(list[i]->priority, 0);
		assert_false(pod_never_evict(list[i]));
	}
	pods_close(pods);
}

static void set_mtime(const char *path, time_t sec)
{
	struct timespec times[2] = { { sec, 0 }, { sec, 0 } };

	assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
}

/* refresh(), and when a read was started, wait for the worker and refresh() again. */
static int refresh_settled(struct pods_meta_source *source, struct pod_meta_list *list)
{
	int ret = source->refresh(source, list);

	if (ret == 1)
		return ret;
	assert_int_equal(source->wait(source, 30ll * 1000000000), 0);
	return source->refresh(source, list);
}

static void test_pods_file_reload_only_on_change(void **state)
{
	const char *root = *state;
	struct pod_meta_list list = { 0 };
	struct pods_meta_source *source;
	char path[PATH_MAX];

	fixture_write(root, "pods.json", POD_WITH("{\"priority\":5}"));
	snprintf(path, sizeof(path), "%s/pods.json", root);
	set_mtime(path, 1000);
	source = pods_file_source_new(path, NULL);
	assert_non_null(source);

	assert_int_equal(refresh_settled(source, &list), 1);
	assert_int_equal(list.items[0].priority, 5);
	/* Unchanged: not re-read. */
	assert_int_equal(source->refresh(source, &list), 0);
	assert_int_equal(source->refresh(source, &list), 0);

	/* Changed: re-parsed. */
	fixture_write(root, "pods.json", POD_WITH("{\"priority\":7}"));
	set_mtime(path, 2000);
	assert_int_equal(refresh_settled(source, &list), 1);
	assert_int_equal(list.items[0].priority, 7);

	/* A broken version: error, the last good list stays, and it is not retried (nor
	 * re-logged) until the file changes again. */
	fixture_write(root, "pods.json", "{\"kind\":\"List\",\"items\":[{");
	set_mtime(path, 3000);
	assert_int_equal(refresh_settled(source, &list), -EINVAL);
	assert_int_equal(list.items[0].priority, 7);
	assert_int_equal(source->refresh(source, &list), -EINVAL);
	assert_int_equal(list.items[0].priority, 7);

	/* Gone: error, last list kept; back: re-read. */
	unlink(path);
	assert_int_equal(source->refresh(source, &list), -ENOENT);
	assert_int_equal(list.items[0].priority, 7);
	fixture_write(root, "pods.json", POD_WITH("{\"priority\":9}"));
	assert_int_equal(refresh_settled(source, &list), 1);
	assert_int_equal(list.items[0].priority, 9);

	source->destroy(source);
	pod_meta_list_free(&list);
}

/* ---- hostile pods files and log volume --------------------------------------------------- */

/* stderr (fd 2) into a temp file while capturing; the captured text back, malloc'd. */
struct capture {
	int saved;
	char path[PATH_MAX];
};

static void capture_start(struct capture *c)
{
	int fd;

	snprintf(c->path, sizeof(c->path), "/tmp/evictd-test-stderr-XXXXXX");
	fd = mkstemp(c->path);
	assert_true(fd >= 0);
	fflush(stderr);
	c->saved = dup(2);
	assert_true(c->saved >= 0);
	assert_int_equal(dup2(fd, 2), 2);
	close(fd);
}

static char *capture_end(struct capture *c, size_t *lines)
{
	size_t len;
	char *text;

	fflush(stderr);
	assert_int_equal(dup2(c->saved, 2), 2);
	close(c->saved);
	text = slurp(c->path, &len);
	unlink(c->path);
	*lines = 0;
	for (size_t i = 0; i < len; i++)
		*lines += text[i] == '\n';
	return text;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A PodList of n tiny pods (UIDs u-<i>, no cgroups), names padded to pad bytes, then the
 * Guaranteed fixture pod UID_G with the given priority; written beside path and renamed over
 * it (a new version, as kubectl > tmp && mv would). Returns the size. */
static size_t write_big_podlist(const char *path, size_t n, size_t pad, int priority)
{
	char tmp[PATH_MAX + 8], name[512];
	size_t size;
	FILE *f;

	assert_true(pad < sizeof(name));
	memset(name, 'x', pad);
	name[pad] = '\0';
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	assert_non_null(f);
	fputs("{\"kind\":\"List\",\"items\":[", f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "{\"metadata\":{\"uid\":\"u-%zu\",\"name\":\"%s%zu\"}},", i, name, i);
	fprintf(f, "{\"metadata\":{\"uid\":\"%s\",\"name\":\"g\"},\"spec\":{\"priority\":%d}}]}\n",
		UID_G, priority);
	size = (size_t)ftell(f);
	fclose(f);
	assert_int_equal(rename(tmp, path), 0);
	return size;
}

#define SECOND (1000000000ll)

static void test_pods_file_parsed_off_the_loop(void **state)
{
	const char *root = *state;
	struct pods_options options = { .root = root };
	struct pod_meta_list list = { 0 };
	struct pods_meta_source *over;
	struct capture cap;
	struct pods *pods;
	char path[PATH_MAX], big[PATH_MAX], *text;
	size_t size, lines;
	int64_t start, took;
	FILE *f;

	build_systemd_tree(root);
	snprintf(path, sizeof(path), "%s/pods.json", root);
	write_big_podlist(path, 0, 0, 5);
	options.meta_source = pods_file_source_new(path, NULL);
	assert_non_null(options.meta_source);
	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_meta_wait(pods, 30 * SECOND), 0);
	assert_int_equal(pods_refresh(pods), 0);
	assert_int_equal(find_pod(pods, UID_G)->priority, 5);

	/* 100,000 pods, just under the cap: seconds of json-c. The refresh only starts the
	 * worker and returns; the old list stays in force meanwhile. */
	size = write_big_podlist(path, 100000, 110, 9);
	assert_true(size > PODS_FILE_MAX_BYTES - PODS_FILE_MAX_BYTES / 8 && size <= PODS_FILE_MAX_BYTES);
	start = now_ns();
	assert_int_equal(pods_refresh(pods), 0);
	took = now_ns() - start;
	print_message("pods_refresh with a %zu-byte pods file being parsed: %lld us\n", size,
		      (long long)(took / 1000));
	/* Returned without waiting for the parse: the old metadata is still in force (a refresh
	 * that waited would have priority 9 here). No bound on how fast: that is tools/bench's. */
	assert_int_equal(find_pod(pods, UID_G)->priority, 5);
	assert_int_equal(pods_refresh(pods), 0);

	/* Done: the next refresh has the new metadata. */
	assert_int_equal(pods_meta_wait(pods, 60 * SECOND), 0);
	assert_int_equal(pods_refresh(pods), 0);
	assert_int_equal(find_pod(pods, UID_G)->priority, 9);
	pods_close(pods);

	/* Over the cap: refused at once, one line naming the file and the cap. */
	snprintf(big, sizeof(big), "%s/huge.json", root);
	f = fopen(big, "w");
	assert_non_null(f);
	assert_int_equal(ftruncate(fileno(f), (off_t)PODS_FILE_MAX_BYTES + 1), 0);
	fclose(f);
	log_set_level(LOGLEVEL_ERR);
	capture_start(&cap);
	start = now_ns();
	over = pods_file_source_new(big, NULL);
	assert_non_null(over);
	assert_int_equal(over->refresh(over, &list), -EFBIG);
	assert_int_equal(over->refresh(over, &list), -EFBIG);
	took = now_ns() - start;
	text = capture_end(&cap, &lines);
	log_set_level(LOGLEVEL_ERR - 1);
	assert_int_equal(lines, 1);
	assert_non_null(strstr(text, big));
	assert_non_null(strstr(text, "16 MiB"));
	assert_true(took < 100 * 1000000ll);
	assert_int_equal(list.n_items, 0);
	free(text);
	over->destroy(over);
}

/* Runs fn in a child; fails unless it exits 0 within timeout_ms (a hang is killed). */
static void in_child_within(void (*fn)(const char *), const char *arg, int timeout_ms)
{
	int status = 0;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		fn(arg);
		_exit(0);
	}
	for (int waited = 0; waited <= timeout_ms; waited += 10) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			assert_true(WIFEXITED(status));
			assert_int_equal(WEXITSTATUS(status), 0);
			return;
		}
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	fail_msg("hung for %d ms", timeout_ms);
}

static void fifo_body(const char *root)
{
	struct pods_options options = { .root = root };
	struct pod_meta_list list = { 0 };
	struct pods_meta_source *source;
	struct pods *pods;
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/pods.fifo", root);
	source = pods_file_source_new(path, NULL);
	if (!source || source->refresh(source, &list) != -EINVAL)
		_exit(1);
	if (source->refresh(source, &list) != -EINVAL || list.n_items)
		_exit(2);
	source->destroy(source);
	/* Through the table: no hold, the pods are there without metadata. */
	options.meta_source = pods_file_source_new(path, NULL);
	if (pods_open(&pods, &options) || pods_refresh(pods) || pods_refresh(pods))
		_exit(3);
	pods_close(pods);
}

static void test_pods_file_fifo_does_not_hang(void **state)
{
	const char *root = *state;
	char path[PATH_MAX];

	build_systemd_tree(root);
	snprintf(path, sizeof(path), "%s/pods.fifo", root);
	assert_int_equal(mkfifo(path, 0600), 0);
	in_child_within(fifo_body, root, 3000);
}

static void test_log_lines_bounded_with_many_pods(void **state)
{
	const char *root = *state;
	struct pods_options options = { .root = root };
	struct capture cap;
	struct pods *pods;
	char path[PATH_MAX], *text;
	size_t lines;

	/* 100,000 pods in the file without a cgroup: one distinct "no-cgroup" key each. */
	build_systemd_tree(root);
	snprintf(path, sizeof(path), "%s/pods.json", root);
	write_big_podlist(path, 100000, 0, 1);
	options.meta_source = pods_file_source_new(path, NULL);
	assert_non_null(options.meta_source);
	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_meta_wait(pods, 60 * SECOND), 0);

	log_set_level(LOGLEVEL_DEBUG);
	capture_start(&cap);
	for (int i = 0; i < 10; i++)
		assert_int_equal(pods_refresh(pods), 0);
	text = capture_end(&cap, &lines);
	log_set_level(LOGLEVEL_ERR - 1);
	print_message("%zu lines over 10 refreshes of 100,000 pods\n", lines);
	assert_true(lines < 200);
	free(text);
	pods_close(pods);
}

static void test_self_pod(void **state)
{
	const char *root = *state;
	struct pods_options options = { .root = root };
	struct pods *pods;
	char self[PATH_MAX], expect[PATH_MAX];

	build_systemd_tree(root);
	/* Hybrid-style file: v1 lines first, the v2 line last. */
	fixture_write(root, "proc/self/cgroup",
		      "4:memory:/kubepods.slice\n0::/kubepods.slice/kubepods-burstable.slice/"
		      "kubepods-burstable-pod7d9e2f10_3a4b_4c5d_8e6f_a1b2c3d4e5f6.slice/cri-containerd-1.scope\n");
	snprintf(expect, sizeof(expect), "%s/" SLICE "/kubepods-burstable.slice/"
		 "kubepods-burstable-pod7d9e2f10_3a4b_4c5d_8e6f_a1b2c3d4e5f6.slice/cri-containerd-1.scope",
		 root);
	snprintf(self, sizeof(self), "%s/" CG, root);
	assert_int_equal(pods_read_self_cgroup(root, self, self, sizeof(self)), 0);
	assert_string_equal(self, expect);

	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_refresh(pods), 0);
	assert_true(find_pod(pods, UID_BU)->is_self);
	assert_true(pod_never_evict(find_pod(pods, UID_BU)));
	assert_false(find_pod(pods, UID_G)->is_self);
	assert_false(find_pod(pods, UID_BE)->is_self);
	pods_close(pods);

	/* "0::/" (evictd at the root): no pod is evictd's. */
	fixture_write(root, "proc/self/cgroup", "0::/\n");
	snprintf(self, sizeof(self), "%s/" CG, root);
	assert_int_equal(pods_read_self_cgroup(root, self, self, sizeof(self)), 0);
	snprintf(expect, sizeof(expect), "%s/" CG, root);
	assert_string_equal(self, expect);
	/* No v2 line at all. */
	fixture_write(root, "proc/self/cgroup", "4:memory:/\n");
	assert_int_equal(pods_read_self_cgroup(root, expect, self, sizeof(self)), -ENOENT);
}

static void test_path_is_ancestor(void **state)
{
	assert_true(pods_path_is_ancestor("/a/b", "/a/b"));
	assert_true(pods_path_is_ancestor("/a/b", "/a/b/c"));
	assert_true(pods_path_is_ancestor("/a/b/", "/a/b/c"));
	assert_true(pods_path_is_ancestor("/", "/a"));
	assert_false(pods_path_is_ancestor("/a/b", "/a/bc"));
	assert_false(pods_path_is_ancestor("/a/b/c", "/a/b"));
	assert_false(pods_path_is_ancestor(NULL, "/a"));
}

/* ---- standalone workloads --------------------------------------------------------------- */

/* A directory under which user.* xattrs work, or NULL with the reason printed. */
static bool xattrs_work(const char *dir)
{
	if (setxattr(dir, "user.evictd.probe", "1", 1, 0) == 0) {
		removexattr(dir, "user.evictd.probe");
		return true;
	}
	print_message("user xattrs on %s: %s\n", dir, strerror(errno));
	return false;
}

static void set_attr(const char *dir, const char *name, const char *value)
{
	if (setxattr(dir, name, value, strlen(value), 0))
		fail_msg("setxattr %s %s: %s", dir, name, strerror(errno));
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* The body, on a root where user xattrs work. */
static void standalone_on(const char *root)
{
	const char *workload_roots[] = { "/workloads", "/more" };
	struct pods_options options = {
		.root = root, .workload_roots = workload_roots, .n_workload_roots = 2,
	};
	char dir[PATH_MAX], expect[PATH_MAX];
	const char *kill_roots[4];
	struct pod *alpha = NULL, *beta = NULL, *gamma = NULL, *delta = NULL, *omega = NULL;
	struct pod **list;
	struct pods *pods;
	struct stat st;
	size_t n;

	fixture_write(root, CG "/cgroup.controllers", "memory\n");
	write_cgroup(root, "workloads/alpha", 700 * MI, 100 * MI, 4);
	write_cgroup(root, "workloads/beta", 50 * MI, 0, 1);
	write_cgroup(root, "workloads/gamma", 10 * MI, 0, 1);
	write_cgroup(root, "workloads/delta", 10 * MI, 0, 1);
	write_cgroup(root, "more/omega", 10 * MI, 0, 1);
	fixture_write(root, "workloads/not-a-cgroup.txt", "x");
	snprintf(dir, sizeof(dir), "%s/workloads/alpha", root);
	set_attr(dir, PODS_XATTR_PRIORITY, "100");
	set_attr(dir, PODS_XATTR_MEMORY_REQUEST, "512Mi");
	snprintf(dir, sizeof(dir), "%s/workloads/beta", root);
	set_attr(dir, PODS_XATTR_PRIORITY, "-5\n");	/* `echo` adds a newline: accepted */
	snprintf(dir, sizeof(dir), "%s/workloads/delta", root);
	set_attr(dir, PODS_XATTR_PRIORITY, "high");	/* malformed: warned, 0 */
	set_attr(dir, PODS_XATTR_MEMORY_REQUEST, "1 Gi");
	snprintf(dir, sizeof(dir), "%s/more/omega", root);
	set_attr(dir, PODS_XATTR_PRIORITY, "2000000000");

	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_refresh(pods), 0);
	list = pods_list(pods, &n);
	assert_int_equal(n, 5);
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(list[i]->name, "alpha")) alpha = list[i];
		if (!strcmp(list[i]->name, "beta")) beta = list[i];
		if (!strcmp(list[i]->name, "gamma")) gamma = list[i];
		if (!strcmp(list[i]->name, "delta")) delta = list[i];
		if (!strcmp(list[i]->name, "omega")) omega = list[i];
	}
	assert_non_null(alpha);
	assert_non_null(beta);
	assert_non_null(gamma);
	assert_non_null(delta);
	assert_non_null(omega);
	assert_int_equal(alpha->priority, 100);
	assert_int_equal(alpha->memory_request, 512 * MI);
	assert_int_equal(alpha->memory_working_set, 600 * MI);
	assert_int_equal(alpha->qos, POD_QOS_BURSTABLE);
	snprintf(expect, sizeof(expect), "%s/workloads/alpha", root);
	assert_string_equal(alpha->cgroup_path, expect);
	/* The UID is the cgroup id (inode). */
	assert_int_equal(stat(expect, &st), 0);
	snprintf(dir, sizeof(dir), "%llu", (unsigned long long)st.st_ino);
	assert_string_equal(alpha->uid, dir);
	assert_int_equal(beta->priority, -5);
	assert_int_equal(gamma->priority, 0);
	assert_int_equal(gamma->memory_request, 0);
	assert_int_equal(gamma->qos, POD_QOS_BESTEFFORT);
	assert_int_equal(delta->priority, 0);
	assert_int_equal(delta->memory_request, 0);
	assert_true(pod_never_evict(omega));

	/* Ranked as the kubelet would: over request first (beta, gamma, delta: request 0;
	 * alpha: 600Mi > 512Mi too), then priority: beta (-5) leads. */
	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, NULL, list, n);
	assert_ptr_equal(list[0], beta);
	assert_ptr_equal(list[n - 1], omega);

	assert_int_equal(pods_kill_roots(pods, kill_roots, 4), 2);
	snprintf(expect, sizeof(expect), "%s/workloads", root);
	assert_string_equal(kill_roots[0], expect);
	pods_close(pods);
}

static void test_standalone_workloads(void **state)
{
	char shm[PATH_MAX] = "/dev/shm/evictd-test-pods-XXXXXX";

	/* Where user.* xattrs work: the temp dir (a disk filesystem on this host), else
	 * /dev/shm (tmpfs has user xattrs since Linux 6.6). */
	if (xattrs_work(*state)) {
		standalone_on(*state);
		return;
	}
	if (!mkdtemp(shm)) {
		print_message("mkdtemp %s: %s; no filesystem with user xattrs found\n", shm, strerror(errno));
		skip();
	}
	if (!xattrs_work(shm)) {
		rmdir(shm);
		print_message("neither %s nor /dev/shm takes user xattrs here; skipped\n", (char *)*state);
		skip();
	}
	standalone_on(shm);
	nftw(shm, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Delegated cgroups (not owned by root) cannot rank themselves with user.* xattrs; trusted.*
 * counts everywhere; a value holding a NUL is no value. */
static void delegated_on(const char *root)
{
	const char *workload_roots[] = { "/workloads" };
	struct pods_options options = { .root = root, .workload_roots = workload_roots, .n_workload_roots = 1 };
	struct pod *owned = NULL, *delegated = NULL, *trusted = NULL, *nul = NULL;
	char dir[PATH_MAX];
	struct pod **list;
	struct pods *pods;
	bool have_trusted;
	size_t n;

	fixture_write(root, CG "/cgroup.controllers", "memory\n");
	write_cgroup(root, "workloads/owned", 10 * MI, 0, 1);
	write_cgroup(root, "workloads/delegated", 10 * MI, 0, 1);
	write_cgroup(root, "workloads/trusted", 10 * MI, 0, 1);
	write_cgroup(root, "workloads/nul", 10 * MI, 0, 1);
	snprintf(dir, sizeof(dir), "%s/workloads/owned", root);
	set_attr(dir, PODS_XATTR_PRIORITY, "100");
	snprintf(dir, sizeof(dir), "%s/workloads/delegated", root);
	set_attr(dir, PODS_XATTR_PRIORITY, "2147483647");
	set_attr(dir, PODS_XATTR_MEMORY_REQUEST, "64Gi");
	assert_int_equal(chown(dir, 65534, 65534), 0);
	snprintf(dir, sizeof(dir), "%s/workloads/trusted", root);
	have_trusted = setxattr(dir, PODS_XATTR_TRUSTED_PRIORITY, "7", 1, 0) == 0;
	set_attr(dir, PODS_XATTR_PRIORITY, "9");
	assert_int_equal(chown(dir, 65534, 65534), 0);
	snprintf(dir, sizeof(dir), "%s/workloads/nul", root);
	assert_int_equal(setxattr(dir, PODS_XATTR_PRIORITY, "5\0junk", 6, 0), 0);
	assert_int_equal(setxattr(dir, PODS_XATTR_MEMORY_REQUEST, "1Gi\0", 4, 0), 0);

	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_refresh(pods), 0);
	list = pods_list(pods, &n);
	assert_int_equal(n, 4);
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(list[i]->name, "owned")) owned = list[i];
		if (!strcmp(list[i]->name, "delegated")) delegated = list[i];
		if (!strcmp(list[i]->name, "trusted")) trusted = list[i];
		if (!strcmp(list[i]->name, "nul")) nul = list[i];
	}
	assert_non_null(owned);
	assert_non_null(delegated);
	assert_non_null(trusted);
	assert_non_null(nul);
	assert_int_equal(owned->priority, 100);
	assert_int_equal(delegated->priority, 0);
	assert_int_equal(delegated->memory_request, 0);
	assert_false(pod_never_evict(delegated));
	if (have_trusted)
		assert_int_equal(trusted->priority, 7);
	else
		print_message("trusted.* xattrs not settable here: that case is not checked\n");
	assert_int_equal(nul->priority, 0);
	assert_int_equal(nul->memory_request, 0);
	pods_close(pods);
}

static void test_workload_xattrs_delegated_and_nul(void **state)
{
	char shm[PATH_MAX] = "/dev/shm/evictd-test-pods-XXXXXX";

	if (geteuid() != 0) {
		print_message("not root: cannot chown a workload to another user\n");
		skip();
	}
	if (xattrs_work(*state)) {
		delegated_on(*state);
		return;
	}
	if (!mkdtemp(shm) || !xattrs_work(shm)) {
		rmdir(shm);
		skip();
	}
	delegated_on(shm);
	nftw(shm, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_usage_threads_at_any_depth(void **state)
{
	const char *root = *state;
	char rel[PATH_MAX] = "deep", file[PATH_MAX + 32];
	struct pod pod = { 0 };

	/* No pids.current: every level's cgroup.threads counts, 40 levels down too. */
	fixture_write(root, "deep/memory.current", "1\n");
	fixture_write(root, "deep/cgroup.threads", "1\n");
	for (int level = 1; level <= 40; level++) {
		strcat(rel, "/c");
		snprintf(file, sizeof(file), "%s/cgroup.threads", rel);
		fixture_write(root, file, "%d\n", 100 + level);
	}
	snprintf(pod.cgroup_path, sizeof(pod.cgroup_path), "%s/deep", root);
	pods_read_usage(&pod);
	assert_int_equal(pod.processes, 41);
}

static void test_open_rejects_bad_workload_roots(void **state)
{
	static const char *const bad[] = { "/", "relative", "/a/../b", "/a//b", "/a/", "/a/./b" };
	const char *root = *state;
	struct pods *pods;

	fixture_write(root, CG "/cgroup.controllers", "memory\n");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct pods_options options = { .root = root, .workload_roots = &bad[i], .n_workload_roots = 1 };

		assert_int_equal(pods_open(&pods, &options), -EINVAL);
		assert_null(pods);
	}
	assert_int_equal(pods_open(NULL, NULL), -EINVAL);
	assert_int_equal(pods_refresh(NULL), -EINVAL);
	assert_null(pods_list(NULL, NULL));
}

/* ---- disk usage (DESIGN.md §5) -------------------------------------------------------------- */

#define DISK_FIXTURES FIXTURES_DIR "/pods-disk"
#define KUBELET_PODS "var/lib/kubelet/pods"
#define POD_LOGS "var/log/pods"
#define VOL_G KUBELET_PODS "/" UID_G "/volumes"
#define CACHE_G VOL_G "/kubernetes.io~empty-dir/cache"
#define CFG_G VOL_G "/kubernetes.io~configmap/cfg"
#define CFG_TS "..2024_06_10_12_00_00.1234567"
#define LOGS_G POD_LOGS "/shop_web-7c9f8b6d5-x2x4q_" UID_G
#define LOGS_BU POD_LOGS "/default_api-5d8f7c9b4-qq8lz_" UID_BU
#define KI 1024ll

/* size bytes of real data (no holes) at root/rel, synced so st_blocks is settled. */
static void write_data(const char *root, const char *rel, size_t size)
{
	char path[PATH_MAX], buf[4096], *slash;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	slash = strrchr(path, '/');
	*slash = '\0';
	fixture_mkdirs(path);
	*slash = '/';
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		fail_msg("open %s: %s", path, strerror(errno));
	memset(buf, 'x', sizeof(buf));
	while (size) {
		size_t n = size < sizeof(buf) ? size : sizeof(buf);

		assert_int_equal(write(fd, buf, n), (ssize_t)n);
		size -= n;
	}
	assert_int_equal(fsync(fd), 0);
	close(fd);
}

static void make_dir(const char *root, const char *rel)
{
	char path[PATH_MAX];

	assert_true(snprintf(path, sizeof(path), "%s/%s", root, rel) < (int)sizeof(path));
	fixture_mkdirs(path);
}

/* root/rel -> target; target is taken as is (absolute or relative to the link). */
static void make_symlink(const char *root, const char *rel, const char *target)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (symlink(target, path))
		fail_msg("symlink %s: %s", path, strerror(errno));
}

static void make_hardlink(const char *root, const char *existing, const char *rel)
{
	char from[PATH_MAX], to[PATH_MAX];

	snprintf(from, sizeof(from), "%s/%s", root, existing);
	snprintf(to, sizeof(to), "%s/%s", root, rel);
	if (link(from, to))
		fail_msg("link %s: %s", to, strerror(errno));
}

/* What du counts for root/rel: st_blocks * 512, the entry itself (no symlink followed). */
static int64_t du(const char *root, const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (lstat(path, &st))
		fail_msg("lstat %s: %s", path, strerror(errno));
	return (int64_t)st.st_blocks * 512;
}

/* An executable script at root/rel (a fake crictl). */
static void write_script(const char *root, const char *rel, const char *body)
{
	char path[PATH_MAX];

	fixture_write(root, rel, "#!/bin/sh\n%s\n", body);
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(chmod(path, 0755), 0);
}

/* A fake crictl answering exactly `args` with the fixture file, anything else exit 2. */
static void write_fake_crictl(const char *root, const char *rel, const char *args, const char *fixture)
{
	char abs[PATH_MAX], body[3 * PATH_MAX];

	if (!realpath(fixture, abs))
		fail_msg("realpath %s: %s", fixture, strerror(errno));
	snprintf(body, sizeof(body),
		 "[ \"$*\" = '%s' ] || { echo \"fake crictl: unexpected arguments: $*\" >&2; exit 2; }\n"
		 "echo 'WARN[0000] image connect using default endpoints' >&2\n"
		 "exec cat '%s'", args, abs);
	write_script(root, rel, body);
}

/* Put root/bin first in PATH; returns the old PATH for path_restore. */
static char *path_push(const char *root, const char *bin)
{
	const char *old = getenv("PATH");
	char *saved = strdup(old ? old : "");
	char path[2 * PATH_MAX];

	assert_non_null(saved);
	snprintf(path, sizeof(path), "%s/%s%s%s", root, bin, saved[0] ? ":" : "", saved);
	assert_int_equal(setenv("PATH", path, 1), 0);
	return saved;
}

static void path_restore(char *saved)
{
	setenv("PATH", saved, 1);
	free(saved);
}

/*
 * Pod G: an emptyDir with data, a hard link, a file symlink and a dir symlink to 1 MiB
 * outside; a configMap volume (the atomic-writer layout of symlinks); a secret volume, a
 * volume-level symlink, etc-hosts, plugin and termination-log files, none of which count.
 * Logs for G (two containers, a rotated file, a nested dir that does not count) and BU; a
 * log dir of a pod that is not ours. BE has nothing on disk.
 */
static void build_disk_fixture(const char *root)
{
	char target[PATH_MAX];

	build_systemd_tree(root);
	write_data(root, "outside/big", 1024 * 1024);

	write_data(root, CACHE_G "/a", 64 * 1024);
	write_data(root, CACHE_G "/d/b", 10 * 1024);
	make_hardlink(root, CACHE_G "/a", CACHE_G "/d/a-again");
	snprintf(target, sizeof(target), "%s/outside/big", root);
	make_symlink(root, CACHE_G "/s", target);
	snprintf(target, sizeof(target), "%s/outside", root);
	make_symlink(root, CACHE_G "/dirlink", target);

	write_data(root, CFG_G "/" CFG_TS "/key", 100);
	make_symlink(root, CFG_G "/..data", CFG_TS);
	make_symlink(root, CFG_G "/key", "..data/key");

	write_data(root, VOL_G "/kubernetes.io~secret/tok/token", 50 * 1024);
	make_symlink(root, VOL_G "/kubernetes.io~empty-dir/linked", target);
	write_data(root, KUBELET_PODS "/" UID_G "/etc-hosts", 4 * 1024);
	write_data(root, KUBELET_PODS "/" UID_G "/plugins/kubernetes.io~empty-dir/cache/ready", 10);
	write_data(root, KUBELET_PODS "/" UID_G "/containers/app/0a1b2c3d", 2 * 1024);

	write_data(root, LOGS_G "/app/0.log", 20 * 1024);
	write_data(root, LOGS_G "/app/0.log.20240610-120000.gz", 5 * 1024);
	write_data(root, LOGS_G "/sidecar/0.log", 3 * 1024);
	write_data(root, LOGS_G "/app/nested/deep.log", 8 * 1024);
	write_data(root, LOGS_BU "/api/0.log", 7 * 1024);
	write_data(root, POD_LOGS "/default_deleted-pod_deadbeef-0000-4000-8000-000000000000/gone/0.log",
		   9 * 1024);
	write_data(root, POD_LOGS "/README", 100);
}

static int64_t expected_volume_bytes_g(const char *root)
{
	return du(root, CACHE_G) + du(root, CACHE_G "/a") + du(root, CACHE_G "/d") +
	       du(root, CACHE_G "/d/b") + du(root, CACHE_G "/s") + du(root, CACHE_G "/dirlink") +
	       du(root, CFG_G) + du(root, CFG_G "/" CFG_TS) + du(root, CFG_G "/" CFG_TS "/key") +
	       du(root, CFG_G "/..data") + du(root, CFG_G "/key");
}

static struct pods *open_kube_pods(const char *root)
{
	struct pods_options options = { .root = root };
	struct pods *pods;

	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_refresh(pods), 0);
	return pods;
}

static void test_disk_usage_volumes_logs_writable(void **state)
{
	const char *root = *state;
	struct pods_disk_report report;
	struct pods_disk_options options = {
		.runtime_endpoint = "unix:///run/containerd/containerd.sock",
		.report = &report,
	};
	struct rank_options split = { .fs_layout = FS_LAYOUT_SPLIT_DISK };
	struct pod *g, *bu, *be, first_g;
	int64_t vol_bytes, log_bytes;
	struct pods *pods;
	char *saved;

	build_disk_fixture(root);
	write_fake_crictl(root, "bin/crictl",
			  "--runtime-endpoint unix:///run/containerd/containerd.sock stats -o json",
			  DISK_FIXTURES "/crictl-stats.json");
	pods = open_kube_pods(root);
	g = find_pod(pods, UID_G);
	bu = find_pod(pods, UID_BU);
	be = find_pod(pods, UID_BE);

	saved = path_push(root, "bin");
	assert_int_equal(pods_read_disk_usage(pods, &options), 0);
	path_restore(saved);

	/* Volumes: emptyDir + configMap trees with their top dirs; the hard link once; the
	 * symlinks as themselves (not the 1 MiB behind them); no secret, etc-hosts, plugin
	 * or termination-log bytes, no volume-level symlink. */
	vol_bytes = expected_volume_bytes_g(root);
	assert_true(vol_bytes >= (64 + 10) * KI);
	assert_true(vol_bytes < 1024 * KI);
	assert_int_equal(g->disk_bytes.volumes, vol_bytes);
	assert_int_equal(g->disk_inodes.volumes, 11);
	/* Logs: the files of each container dir, not the dirs, not a nested dir's files. */
	log_bytes = du(root, LOGS_G "/app/0.log") + du(root, LOGS_G "/app/0.log.20240610-120000.gz") +
		    du(root, LOGS_G "/sidecar/0.log");
	assert_true(log_bytes >= 28 * KI);
	assert_int_equal(g->disk_bytes.logs, log_bytes);
	assert_int_equal(g->disk_inodes.logs, 3);
	assert_int_equal(bu->disk_bytes.logs, du(root, LOGS_BU "/api/0.log"));
	assert_int_equal(bu->disk_inodes.logs, 1);
	assert_int_equal(bu->disk_bytes.volumes, 0);
	/* Writable layers from crictl stats: two containers summed for G; BU's container has
	 * no writableLayer; the unknown pod and the unlabelled container are ignored. */
	assert_int_equal(g->disk_bytes.writable, 1048576 + 4096);
	assert_int_equal(g->disk_inodes.writable, 42);
	assert_int_equal(bu->disk_bytes.writable, 0);
	assert_int_equal(be->disk_bytes.writable, 123456789);
	assert_int_equal(be->disk_inodes.writable, 1000);
	assert_int_equal(be->disk_bytes.volumes + be->disk_bytes.logs, 0);
	/* The kubelet attributes no image storage to pods. */
	assert_int_equal(g->disk_bytes.images + be->disk_bytes.images + g->disk_inodes.images, 0);

	assert_int_equal(report.pods, 3);
	assert_int_equal(report.walks, 4);	/* cache, cfg, G's logs, BU's logs */
	assert_int_equal(report.capped_walks, 0);
	assert_int_equal(report.memory_volumes_skipped, 0);
	assert_int_equal(report.crictl_status, 0);
	assert_int_equal(report.crictl_containers, 4);

	/* What the ranking sees: one filesystem = all three; split disk: nodefs volumes +
	 * logs, imagefs writable layers. */
	assert_int_equal(rank_usage(EV_SIGNAL_NODEFS_AVAILABLE, NULL, g), vol_bytes + log_bytes + 1052672);
	assert_int_equal(rank_usage(EV_SIGNAL_NODEFS_INODES_FREE, NULL, g), 11 + 3 + 42);
	assert_int_equal(rank_usage(EV_SIGNAL_NODEFS_AVAILABLE, &split, g), vol_bytes + log_bytes);
	assert_int_equal(rank_usage(EV_SIGNAL_IMAGEFS_AVAILABLE, &split, g), 1052672);

	/* Again: the same numbers, nothing accumulates. */
	first_g = *g;
	saved = path_push(root, "bin");
	assert_int_equal(pods_read_disk_usage(pods, &options), 0);
	path_restore(saved);
	assert_memory_equal(&g->disk_bytes, &first_g.disk_bytes, sizeof(first_g.disk_bytes));
	assert_memory_equal(&g->disk_inodes, &first_g.disk_inodes, sizeof(first_g.disk_inodes));

	/* Only the logs: the other parts are reset, crictl is not run. */
	options.parts = PODS_DISK_LOGS;
	assert_int_equal(pods_read_disk_usage(pods, &options), 0);
	assert_int_equal(g->disk_bytes.logs, log_bytes);
	assert_int_equal(g->disk_bytes.volumes, 0);
	assert_int_equal(g->disk_bytes.writable, 0);
	assert_int_equal(be->disk_inodes.writable, 0);
	assert_int_equal(report.crictl_status, 1);
	assert_int_equal(report.walks, 2);
	pods_close(pods);
}

static void umount_quietly(const char *root, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	umount2(path, MNT_DETACH);
}

static int mount_tmpfs(const char *root, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fixture_mkdirs(path);
	return mount("tmpfs", path, "tmpfs", 0, "size=4m");
}

static void test_disk_memory_volume_and_other_mounts(void **state)
{
	const char *root = *state;
	struct pods_disk_report report;
	struct pods_disk_options options = { .crictl = "", .report = &report };
	int64_t expect_bytes;
	struct pods *pods;
	struct pod *g;
	int ret;

	/* A private mount namespace keeps the test's mounts from leaking if it fails. */
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		print_message("cannot make a private mount namespace (%s): tmpfs emptyDir test "
			      "needs root (CAP_SYS_ADMIN); skipped\n", strerror(errno));
		skip();
	}
	build_systemd_tree(root);
	write_data(root, CACHE_G "/f", 16 * 1024);
	/* medium: Memory: the whole volume is a tmpfs. */
	if (mount_tmpfs(root, VOL_G "/kubernetes.io~empty-dir/mem")) {
		print_message("mount tmpfs: %s; skipped\n", strerror(errno));
		skip();
	}
	write_data(root, VOL_G "/kubernetes.io~empty-dir/mem/big", 1024 * 1024);
	/* A filesystem mounted inside a disk emptyDir: not counted, not entered. */
	assert_int_equal(mount_tmpfs(root, CACHE_G "/mnt"), 0);
	write_data(root, CACHE_G "/mnt/inside", 512 * 1024);

	pods = open_kube_pods(root);
	g = find_pod(pods, UID_G);
	ret = pods_read_disk_usage(pods, &options);
	umount_quietly(root, CACHE_G "/mnt");
	umount_quietly(root, VOL_G "/kubernetes.io~empty-dir/mem");
	/* Only now, with the mounts gone: the mountpoint dir itself is on the disk fs. */
	expect_bytes = du(root, CACHE_G) + du(root, CACHE_G "/f");

	assert_int_equal(ret, 0);
	assert_int_equal(report.memory_volumes_skipped, 1);
	assert_int_equal(report.walks, 1);
	assert_int_equal(g->disk_bytes.volumes, expect_bytes);
	assert_int_equal(g->disk_inodes.volumes, 2);	/* cache and f */
	assert_int_equal(report.crictl_status, -ENOENT);	/* crictl "": not asked */
	pods_close(pods);
}

static void test_disk_walk_limits(void **state)
{
	const char *root = *state;
	struct pods_disk_report report;
	struct pods_disk_options options = { .crictl = "", .max_entries = 10, .report = &report };
	char rel[PATH_MAX];
	struct pods *pods;
	struct pod *g, *bu;
	size_t len;

	build_systemd_tree(root);
	for (int i = 0; i < 50; i++) {
		snprintf(rel, sizeof(rel), VOL_G "/kubernetes.io~empty-dir/many/f%02d", i);
		fixture_write(root, rel, "%s", "");
	}
	/* 140 dirs deep: deeper than the walker follows. */
	len = (size_t)snprintf(rel, sizeof(rel), KUBELET_PODS "/" UID_BU "/volumes/kubernetes.io~empty-dir/deep");
	for (int i = 0; i < 140; i++)
		len += (size_t)snprintf(rel + len, sizeof(rel) - len, "/d");
	make_dir(root, rel);

	pods = open_kube_pods(root);
	g = find_pod(pods, UID_G);
	bu = find_pod(pods, UID_BU);

	/* max_entries 10: each walk stops after 10 entries, the top dir counted as well. */
	assert_int_equal(pods_read_disk_usage(pods, &options), 0);
	assert_int_equal(g->disk_inodes.volumes, 11);
	assert_int_equal(bu->disk_inodes.volumes, 11);
	assert_int_equal(report.capped_walks, 2);

	/* The default cap: all 50 files; the chain is followed 128 dirs down, then left. */
	options.max_entries = 0;
	assert_int_equal(pods_read_disk_usage(pods, &options), 0);
	assert_int_equal(g->disk_inodes.volumes, 51);
	assert_int_equal(bu->disk_inodes.volumes, 129);
	assert_int_equal(report.capped_walks, 1);
	pods_close(pods);
}

/* true when pid is gone or a zombie (killed, not yet reaped by its new parent). */
static bool process_dead(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* Run with the crictl script body given; writable must be 0 everywhere, the rest measured. */
static int run_with_crictl(const char *root, struct pods *pods, const char *body, int64_t timeout_ns,
			   struct pods_disk_report *report)
{
	struct pods_disk_options options = { .crictl_timeout_ns = timeout_ns, .report = report };
	size_t n;
	struct pod **list;
	char *saved;
	int ret;

	write_script(root, "bin/crictl", body);
	saved = path_push(root, "bin");
	ret = pods_read_disk_usage(pods, &options);
	path_restore(saved);
	assert_int_equal(ret, 0);
	list = pods_list(pods, &n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(list[i]->disk_bytes.writable, 0);
		assert_int_equal(list[i]->disk_inodes.writable, 0);
	}
	assert_int_equal(find_pod(pods, UID_G)->disk_bytes.volumes, du(root, CACHE_G) + du(root, CACHE_G "/f"));
	return report->crictl_status;
}

static void test_disk_crictl_failures(void **state)
{
	const char *root = *state;
	struct pods_disk_report report;
	struct pods_disk_options options = { .report = &report };
	char body[2 * PATH_MAX], pidfile[PATH_MAX], abs[PATH_MAX], *saved;
	struct pods *pods;
	FILE *f;
	int pid = 0;

	build_systemd_tree(root);
	write_data(root, CACHE_G "/f", 8 * 1024);
	pods = open_kube_pods(root);

	/* Fails (runtime down): its exit status, stderr logged. */
	assert_int_equal(run_with_crictl(root, pods, "echo 'connect: connection refused' >&2; exit 1",
					 0, &report), 1);
	/* Killed by a signal: 128 + N. */
	assert_int_equal(run_with_crictl(root, pods, "kill -TERM $$", 0, &report), 128 + SIGTERM);
	/* Not JSON, and JSON of the wrong shape. */
	assert_int_equal(run_with_crictl(root, pods, "echo 'this is not json'", 0, &report), -EINVAL);
	assert_int_equal(run_with_crictl(root, pods, "echo '{\"stats\": {}}'", 0, &report), -EINVAL);
	assert_int_equal(run_with_crictl(root, pods, "echo '{\"stats\": []} trailing'", 0, &report), -EINVAL);
	/* One good entry, then a negative size: nothing of it is kept. */
	if (!realpath(DISK_FIXTURES "/crictl-stats-bad-value.json", abs))
		fail_msg("realpath: %s", strerror(errno));
	snprintf(body, sizeof(body), "cat '%s'", abs);
	assert_int_equal(run_with_crictl(root, pods, body, 0, &report), -EINVAL);
	/* Hangs: killed at the timeout with what it started (its process group). */
	snprintf(pidfile, sizeof(pidfile), "%s/sleep.pid", root);
	snprintf(body, sizeof(body), "sleep 30 & echo $! > '%s'; wait", pidfile);
	assert_int_equal(run_with_crictl(root, pods, body, 300 * 1000000ll, &report), -ETIMEDOUT);
	assert_true(report.elapsed_ns < 5000000000ll);
	f = fopen(pidfile, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d", &pid), 1);
	fclose(f);
	for (int i = 0; i < 200 && !process_dead(pid); i++)
		usleep(10000);
	assert_true(process_dead(pid));
	/* An empty list is a success with nothing attributed. */
	assert_int_equal(run_with_crictl(root, pods, "echo '{\"stats\": []}'", 0, &report), 0);
	assert_int_equal(report.crictl_containers, 0);

	/* Not in PATH (only an empty dir there), or switched off: nothing run. */
	make_dir(root, "empty-bin");
	saved = strdup(getenv("PATH") ? getenv("PATH") : "");
	assert_non_null(saved);
	snprintf(body, sizeof(body), "%s/empty-bin", root);
	setenv("PATH", body, 1);
	assert_int_equal(pods_read_disk_usage(pods, &options), 0);
	path_restore(saved);
	assert_int_equal(report.crictl_status, -ENOENT);
	assert_int_equal(find_pod(pods, UID_G)->disk_bytes.writable, 0);
	options.crictl = "";
	assert_int_equal(pods_read_disk_usage(pods, &options), 0);
	assert_int_equal(report.crictl_status, -ENOENT);

	/* A path (with '/') is run as is, without PATH. */
	write_fake_crictl(root, "other/crictl", "stats -o json", DISK_FIXTURES "/crictl-stats.json");
	snprintf(body, sizeof(body), "%s/other/crictl", root);
	options.crictl = body;
	assert_int_equal(pods_read_disk_usage(pods, &options), 0);
	assert_int_equal(report.crictl_status, 0);
	assert_int_equal(find_pod(pods, UID_BE)->disk_bytes.writable, 123456789);
	pods_close(pods);
}

static void test_disk_standalone_and_arguments(void **state)
{
	const char *root = *state;
	static const char *const roots[] = { "/workloads" };
	struct pods_options options = { .root = root, .workload_roots = roots, .n_workload_roots = 1 };
	struct pods_disk_report report;
	struct pods_disk_options disk = { .report = &report };
	struct pods *pods;
	struct pod **list;
	size_t n;

	assert_int_equal(pods_read_disk_usage(NULL, NULL), -EINVAL);
	fixture_write(root, CG "/cgroup.controllers", "memory\n");
	write_cgroup(root, "workloads/alpha", 10 * MI, 0, 1);
	/* A kubelet dir that would match if standalone workloads were measured. */
	write_data(root, KUBELET_PODS "/alpha/volumes/kubernetes.io~empty-dir/v/f", 4096);
	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_refresh(pods), 0);
	list = pods_list(pods, &n);
	assert_int_equal(n, 1);
	list[0]->disk_bytes.volumes = 12345;	/* stale: reset */
	assert_int_equal(pods_read_disk_usage(pods, &disk), 0);
	assert_int_equal(list[0]->disk_bytes.volumes, 0);
	assert_int_equal(report.pods, 0);
	assert_int_equal(report.walks, 0);
	assert_int_equal(pods_read_disk_usage(pods, NULL), 0);
	pods_close(pods);
}

/* ---- disk usage off the caller's thread ------------------------------------------------ */

/* Wait (in the test, not the library) for the job's eventfd. */
static void wait_job(struct pods_disk_job *job)
{
	struct pollfd pfd = { .fd = pods_disk_job_fd(job), .events = POLLIN };

	assert_true(pfd.fd >= 0);
	assert_int_equal(poll(&pfd, 1, 20000), 1);
	assert_true(pfd.revents & POLLIN);
	assert_true(pods_disk_job_done(job));
}

static void wait_no_jobs(void)
{
	for (int i = 0; i < 1000 && pods_disk_jobs_running(); i++)
		usleep(10000);
	assert_int_equal(pods_disk_jobs_running(), 0);
}

static void clear_disk(struct pods *pods)
{
	size_t n;
	struct pod **list = pods_list(pods, &n);

	for (size_t i = 0; i < n; i++) {
		memset(&list[i]->disk_bytes, 0, sizeof(list[i]->disk_bytes));
		memset(&list[i]->disk_inodes, 0, sizeof(list[i]->disk_inodes));
	}
}

static void test_disk_async_same_numbers_as_sync(void **state)
{
	const char *root = *state;
	static const char *const uids[] = { UID_G, UID_BU, UID_BE };
	struct pods_disk_report sync_report, async_report;
	struct pods_disk_options options = {
		.runtime_endpoint = "unix:///run/containerd/containerd.sock",
		.report = &sync_report,
	};
	struct pod sync_pods[3];
	struct pods_disk_job *job;
	struct pods *pods;
	char *saved;

	build_disk_fixture(root);
	write_fake_crictl(root, "bin/crictl",
			  "--runtime-endpoint unix:///run/containerd/containerd.sock stats -o json",
			  DISK_FIXTURES "/crictl-stats.json");
	pods = open_kube_pods(root);
	saved = path_push(root, "bin");
	assert_int_equal(pods_read_disk_usage(pods, &options), 0);
	path_restore(saved);
	for (size_t i = 0; i < 3; i++)
		sync_pods[i] = *find_pod(pods, uids[i]);
	assert_true(sync_pods[0].disk_bytes.volumes > 0);
	assert_int_equal(sync_pods[2].disk_bytes.writable, 123456789);

	clear_disk(pods);
	options.report = &async_report;
	memset(&async_report, 0xff, sizeof(async_report));
	saved = path_push(root, "bin");
	assert_int_equal(pods_disk_usage_start(pods, &options, &job), 0);
	/* crictl was looked up at the start: PATH may change while the worker runs. */
	path_restore(saved);
	wait_job(job);
	assert_int_equal(pods_disk_usage_finish(pods, job), 0);

	for (size_t i = 0; i < 3; i++) {
		struct pod *pod = find_pod(pods, uids[i]);

		assert_memory_equal(&pod->disk_bytes, &sync_pods[i].disk_bytes, sizeof(pod->disk_bytes));
		assert_memory_equal(&pod->disk_inodes, &sync_pods[i].disk_inodes, sizeof(pod->disk_inodes));
	}
	async_report.elapsed_ns = sync_report.elapsed_ns = 0;
	assert_memory_equal(&async_report, &sync_report, sizeof(sync_report));
	assert_int_equal(async_report.crictl_status, 0);
	assert_int_equal(async_report.crictl_containers, 4);
	assert_int_equal(async_report.walks, 4);
	wait_no_jobs();
	pods_close(pods);
}

/* The table is refreshed while the worker runs; a pod whose cgroup was recreated meanwhile
 * gets nothing of what was measured for the old one. */
static void test_disk_async_applies_by_identity(void **state)
{
	const char *root = *state;
	struct pods_disk_options options = { .crictl = "" };
	struct pods_disk_job *job;
	struct pods *pods;
	struct pod *g, *bu;
	int64_t g_volumes;

	build_disk_fixture(root);
	pods = open_kube_pods(root);
	assert_int_equal(pods_read_disk_usage(pods, &options), 0);
	g_volumes = find_pod(pods, UID_G)->disk_bytes.volumes;
	assert_true(g_volumes > 0);
	assert_true(find_pod(pods, UID_BU)->disk_bytes.logs > 0);
	clear_disk(pods);

	assert_int_equal(pods_disk_usage_start(pods, &options, &job), 0);
	recreate_dir(root, SLICE "/kubepods-burstable.slice/"
		     "kubepods-burstable-pod7d9e2f10_3a4b_4c5d_8e6f_a1b2c3d4e5f6.slice",
		     find_pod(pods, UID_BU)->cgroup_id);
	assert_int_equal(pods_refresh(pods), 0);
	wait_job(job);
	assert_int_equal(pods_disk_usage_finish(pods, job), 0);
	g = find_pod(pods, UID_G);
	bu = find_pod(pods, UID_BU);
	assert_int_equal(g->disk_bytes.volumes, g_volumes);
	assert_int_equal(bu->disk_bytes.logs, 0);
	assert_int_equal(bu->disk_inodes.logs, 0);
	pods_close(pods);
}

static void test_disk_async_cancel_and_busy(void **state)
{
	const char *root = *state;
	struct pods_disk_options options = { .crictl_timeout_ns = 20000000000ll };
	struct pods_disk_report report;
	char pidfile[PATH_MAX], body[4 * PATH_MAX], *saved;
	struct pods_disk_job *job;
	struct pods *pods;
	FILE *f;
	int pid = 0;

	build_disk_fixture(root);
	snprintf(pidfile, sizeof(pidfile), "%s/crictl.pid", root);
	snprintf(body, sizeof(body), "echo $$ > '%s.tmp' && mv '%s.tmp' '%s'; exec sleep 30",
		 pidfile, pidfile, pidfile);
	write_script(root, "bin/crictl", body);
	pods = open_kube_pods(root);

	/* Not done yet: finish refuses without waiting, the job stays usable. */
	saved = path_push(root, "bin");
	assert_int_equal(pods_disk_usage_start(pods, &options, &job), 0);
	path_restore(saved);
	for (int i = 0; i < 1000 && access(pidfile, F_OK); i++)
		usleep(10000);
	assert_int_equal(pods_disk_usage_finish(pods, job), -EBUSY);
	assert_false(pods_disk_job_done(job));

	/* Cancelled while crictl runs, and the table closed at once: the worker owns its
	 * copy, kills crictl and frees itself (ASan watches). */
	pods_disk_job_cancel(job);
	pods_close(pods);
	wait_no_jobs();
	f = fopen(pidfile, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d", &pid), 1);
	fclose(f);
	for (int i = 0; i < 200 && !process_dead(pid); i++)
		usleep(10000);
	assert_true(process_dead(pid));

	/* Cancelled right after the start, before the worker has done anything. */
	pods = open_kube_pods(root);
	options.crictl = "";
	for (int i = 0; i < 20; i++) {
		assert_int_equal(pods_disk_usage_start(pods, &options, &job), 0);
		pods_disk_job_cancel(job);
	}
	wait_no_jobs();

	/* Cancelled when done: freed there; the report is never written. */
	memset(&report, 0x5a, sizeof(report));
	options.report = &report;
	assert_int_equal(pods_disk_usage_start(pods, &options, &job), 0);
	wait_job(job);
	pods_disk_job_cancel(job);
	assert_int_equal(report.walks, (size_t)0x5a5a5a5a5a5a5a5aull);
	pods_disk_job_cancel(NULL);
	assert_int_equal(pods_disk_usage_start(NULL, &options, &job), -EINVAL);
	assert_int_equal(pods_disk_usage_finish(pods, NULL), -EINVAL);
	assert_int_equal(pods_disk_job_fd(NULL), -EINVAL);
	wait_no_jobs();
	pods_close(pods);
}

/* ---- rediscovery only when the tree changes (user/pods/cgroup_watch.c) ------------------ */

#define BU_SLICE SLICE "/kubepods-burstable.slice"

/* Nothing changed: the refresh keeps the table (same entries) and reads new usage through
 * the kept fds; a pod made in a watched directory, one in a QoS slice made after the first
 * refresh, and a whole kubepods tree that appears later are all found. */
static void test_rediscovery_only_on_change(void **state)
{
	const char *root = *state;
	struct pods_options options = { .root = root };
	struct pods *pods;
	struct pod *be;
	size_t n;
	char path[PATH_MAX];

	fixture_write(root, CG "/cgroup.controllers", "memory pids\n");
	write_cgroup(root, SLICE "/kubepods-besteffort.slice/"
		     "kubepods-besteffort-podc0ffee00_1234_4abc_8def_0123456789ab.slice", 2 * GI, 0, 4);
	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_refresh(pods), 0);
	be = find_pod(pods, UID_BE);
	assert_non_null(be);
	write_cgroup(root, BE_DIR, 3 * GI, 0, 5);
	assert_int_equal(pods_refresh(pods), 0);
	/* The same entry (a rediscovery builds a new table), with the new numbers. */
	assert_ptr_equal(find_pod(pods, UID_BE), be);
	assert_int_equal(be->memory_working_set, 3 * GI);
	assert_int_equal(be->processes, 5);

	/* The burstable slice did not exist at the first refresh. */
	write_cgroup(root, BU_SLICE "/kubepods-burstable-pod7d9e2f10_3a4b_4c5d_8e6f_a1b2c3d4e5f6.slice",
		     MI, 0, 1);
	assert_int_equal(pods_refresh(pods), 0);
	pods_list(pods, &n);
	assert_int_equal(n, 2);
	assert_non_null(find_pod(pods, UID_BU));

	/* A Guaranteed pod straight in kubepods.slice. */
	write_cgroup(root, SLICE "/kubepods-pod4b5f0c1e_8c7a_4e5b_9d2a_1f3e5a7b9c01.slice", MI, 0, 1);
	assert_int_equal(pods_refresh(pods), 0);
	pods_list(pods, &n);
	assert_int_equal(n, 3);
	pods_close(pods);

	/* No tree at the first refresh: the cgroupfs driver's tree made afterwards is found. */
	fixture_rm_rf(root);
	snprintf(path, sizeof(path), "%s", root);
	assert_int_equal(mkdir(path, 0700), 0);
	fixture_write(root, CG "/cgroup.controllers", "memory pids\n");
	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_refresh(pods), 0);
	pods_list(pods, &n);
	assert_int_equal(n, 0);
	write_cgroup(root, CG "/kubepods/besteffort/podc0ffee00-1234-4abc-8def-0123456789ab", MI, 0, 1);
	assert_int_equal(pods_refresh(pods), 0);
	pods_list(pods, &n);
	assert_int_equal(n, 1);
	assert_non_null(find_pod(pods, UID_BE));
	pods_close(pods);
}

/* A kept directory fd whose cgroup vanished is no pod: nothing left to kill, no old numbers;
 * the next refresh drops it. Removed and made again under the same name between two
 * evaluations: the new directory is read, never the old fd. */
static void test_kept_fd_of_vanished_and_recreated_cgroup(void **state)
{
	const char *root = *state;
	struct pods_options options = { .root = root };
	char cmd[2 * PATH_MAX];
	struct pods *pods;
	struct pod *be;
	uint64_t old_id;
	size_t n;

	build_systemd_tree(root);
	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_refresh(pods), 0);
	be = find_pod(pods, UID_BE);
	assert_int_equal(be->memory_working_set, 2 * GI);
	old_id = be->cgroup_id;

	snprintf(cmd, sizeof(cmd), "rm -rf '%s/%s'", root, BE_DIR);
	assert_int_equal(system(cmd), 0);
	/* Usage through the kept fd only: gone, not 2 GiB. */
	assert_int_equal(pods_refresh_usage(pods), 0);
	assert_true(be->stats_missing);
	assert_true(be->exited);
	assert_int_equal(be->memory_working_set, 0);
	assert_false(pod_is_candidate(be));
	assert_int_equal(pods_refresh(pods), 0);
	pods_list(pods, &n);
	assert_int_equal(n, 2);
	assert_null(find_pod(pods, UID_BE));

	/* Made again under the same name (another inode), other numbers. */
	write_cgroup(root, BE_DIR, 7 * MI, 0, 3);
	assert_int_equal(pods_refresh(pods), 0);
	be = find_pod(pods, UID_BE);
	assert_non_null(be);
	assert_int_equal(be->memory_working_set, 7 * MI);
	assert_int_equal(be->cgroup_id, inode_of(root, BE_DIR));

	/* Removed and made again between two refreshes, nothing in between. */
	old_id = be->cgroup_id;
	recreate_dir(root, BE_DIR, old_id);
	write_cgroup(root, BE_DIR, 11 * MI, 0, 1);
	assert_int_equal(pods_refresh(pods), 0);
	be = find_pod(pods, UID_BE);
	assert_non_null(be);
	assert_true(be->cgroup_id != old_id);
	assert_int_equal(be->cgroup_id, inode_of(root, BE_DIR));
	assert_int_equal(be->memory_working_set, 11 * MI);
	assert_false(be->exited);
	pods_close(pods);
}

static size_t open_fds(void)
{
	size_t n = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* A rediscovery (something changed beside the pods) takes over the kept fds of every cgroup it
 * finds again, same path and same id, instead of opening five files per pod again: none leak,
 * none are reopened (a kept fd still reads the file it opened, told apart here by replacing a
 * fixture file), a pod removed meanwhile gives its fds back, a new one opens its own. */
static void test_rediscovery_reuses_kept_fds(void **state)
{
	const char *root = *state;
	struct pods_options options = { .root = root };
	char rel[PATH_MAX], uid[64], tmp[2 * PATH_MAX], dst[2 * PATH_MAX], cmd[2 * PATH_MAX + 16];
	size_t base, with_pods, per_pod, n;
	struct pods *pods;

	fixture_write(root, CG "/cgroup.controllers", "memory pids\n");
	fixture_write(root, SLICE "/kubepods-besteffort.slice/cgroup.procs", "%s", "");
	base = open_fds();
	for (int i = 0; i < 10; i++) {
		snprintf(uid, sizeof(uid), "c0ffee00_1234_4abc_8def_%012d", i);
		snprintf(rel, sizeof(rel), SLICE "/kubepods-besteffort.slice/kubepods-besteffort-pod%s.slice", uid);
		write_cgroup(root, rel, (i + 1) * MI, 0, 1);
	}
	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_refresh(pods), 0);
	with_pods = open_fds();
	per_pod = (with_pods - base - 1) / 10;	/* one inotify instance */
	assert_true(per_pod >= 2);

	/* Pod 3's memory.current replaced by another file: only a reopened fd would see 99 MiB. */
	snprintf(rel, sizeof(rel), SLICE "/kubepods-besteffort.slice/kubepods-besteffort-pod"
		 "c0ffee00_1234_4abc_8def_%012d.slice", 3);
	snprintf(tmp, sizeof(tmp), "%s/%s/memory.current.new", root, rel);
	snprintf(dst, sizeof(dst), "%s/%s/memory.current", root, rel);
	fixture_write(root, tmp + strlen(root) + 1, "%lld\n", 99 * MI);
	assert_int_equal(rename(tmp, dst), 0);
	snprintf(tmp, sizeof(tmp), "%s/" SLICE "/kubepods-besteffort.slice/not-a-pod", root);
	assert_int_equal(mkdir(tmp, 0755), 0);
	assert_int_equal(pods_refresh(pods), 0);	/* a rediscovery: the directory changed */
	assert_int_equal(open_fds(), with_pods);
	pods_list(pods, &n);
	assert_int_equal(n, 10);
	assert_int_equal(find_pod(pods, "c0ffee00-1234-4abc-8def-000000000003")->memory_working_set, 4 * MI);

	/* A new pod opens its own; a removed one gives its fds back. */
	snprintf(rel, sizeof(rel), SLICE "/kubepods-besteffort.slice/kubepods-besteffort-pod"
		 "c0ffee00_1234_4abc_8def_%012d.slice", 10);
	write_cgroup(root, rel, 11 * MI, 0, 1);
	assert_int_equal(pods_refresh(pods), 0);
	assert_int_equal(open_fds(), with_pods + per_pod);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/%s'", root, rel);
	assert_int_equal(system(cmd), 0);
	snprintf(rel, sizeof(rel), SLICE "/kubepods-besteffort.slice/kubepods-besteffort-pod"
		 "c0ffee00_1234_4abc_8def_%012d.slice", 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/%s'", root, rel);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(pods_refresh(pods), 0);
	assert_int_equal(open_fds(), with_pods - per_pod);
	pods_list(pods, &n);
	assert_int_equal(n, 9);
	assert_null(find_pod(pods, "c0ffee00-1234-4abc-8def-000000000000"));
	pods_close(pods);
	assert_int_equal(open_fds(), base);
}

/* One past the fd budget (half of RLIMIT_NOFILE): pods beyond it are read by path, with the
 * same numbers, and nothing runs out of fds. */
static void test_kept_fds_within_budget(void **state)
{
	const char *root = *state;
	struct pods_options options = { .root = root };
	struct rlimit saved, low;
	struct pods *pods;
	char rel[PATH_MAX], uid[64];
	size_t n;

	fixture_write(root, CG "/cgroup.controllers", "memory pids\n");
	for (int i = 0; i < 40; i++) {
		snprintf(uid, sizeof(uid), "c0ffee00_1234_4abc_8def_%012d", i);
		snprintf(rel, sizeof(rel), SLICE "/kubepods-besteffort.slice/kubepods-besteffort-pod%s.slice", uid);
		write_cgroup(root, rel, (i + 1) * MI, 0, i + 1);
	}
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
	low = saved;
	low.rlim_cur = 64;	/* budget 32: five pods of 1 + 4 fds, the rest by path */
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_refresh(pods), 0);
	for (int round = 0; round < 2; round++) {
		struct pod **list = pods_list(pods, &n);

		assert_int_equal(n, 40);
		for (size_t i = 0; i < n; i++) {
			int k = atoi(strrchr(list[i]->uid, '-') + 1);

			assert_int_equal(list[i]->memory_working_set, (k + 1) * MI);
			assert_int_equal(list[i]->processes, k + 1 + round);
		}
		/* Every pod's tasks change: read through kept fds and by path alike. */
		for (int i = 0; i < 40; i++) {
			snprintf(uid, sizeof(uid), "c0ffee00_1234_4abc_8def_%012d", i);
			snprintf(rel, sizeof(rel), SLICE "/kubepods-besteffort.slice/"
				 "kubepods-besteffort-pod%s.slice/pids.current", uid);
			fixture_write(root, rel, "%d\n", i + 2 + round);
		}
		assert_int_equal(pods_refresh(pods), 0);
	}
	pods_close(pods);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
}

#define T(fn) cmocka_unit_test(fn)
#define TT(fn) cmocka_unit_test_setup_teardown(fn, setup_tmp, teardown_tmp)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_parse_guaranteed_single_pod),
		T(test_parse_burstable_init_containers),
		T(test_parse_besteffort),
		T(test_parse_static_and_mirror),
		T(test_parse_daemonset),
		T(test_parse_system_node_critical),
		T(test_parse_node_filter),
		T(test_parse_quantity_forms),
		T(test_parse_pod_level_requests),
		T(test_parse_malformed),
		T(test_parse_truncated_fixture_every_length),
		T(test_parse_deep_nesting),
		TT(test_discover_systemd_driver),
		TT(test_discover_cgroupfs_driver),
		TT(test_discover_hybrid_mount_and_cgroup_root),
		TT(test_no_cgroup_mount),
		TT(test_usage_working_set_rules),
		TT(test_usage_threads_without_pids_controller),
		TT(test_refresh_usage_only),
		TT(test_cgroup_id_recorded_and_recreated),
		TT(test_workload_id_changes_on_recreation),
		TT(test_join_pods_file),
		TT(test_no_metadata_source),
		TT(test_pods_file_reload_only_on_change),
		TT(test_pods_file_parsed_off_the_loop),
		TT(test_pods_file_fifo_does_not_hang),
		TT(test_log_lines_bounded_with_many_pods),
		TT(test_self_pod),
		T(test_path_is_ancestor),
		TT(test_standalone_workloads),
		TT(test_workload_xattrs_delegated_and_nul),
		TT(test_usage_threads_at_any_depth),
		TT(test_open_rejects_bad_workload_roots),
		TT(test_disk_usage_volumes_logs_writable),
		TT(test_disk_memory_volume_and_other_mounts),
		TT(test_disk_walk_limits),
		TT(test_disk_crictl_failures),
		TT(test_disk_standalone_and_arguments),
		TT(test_disk_async_same_numbers_as_sync),
		TT(test_disk_async_applies_by_identity),
		TT(test_disk_async_cancel_and_busy),
		TT(test_rediscovery_only_on_change),
		TT(test_kept_fd_of_vanished_and_recreated_cgroup),
		TT(test_kept_fds_within_budget),
		TT(test_rediscovery_reuses_kept_fds),
	};

	/* Refusals and parse errors are expected here; keep the TAP stream readable. */
	log_set_level(LOGLEVEL_ERR - 1);
	return cmocka_run_group_tests_name("pods", tests, NULL, NULL);
}
