// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Pod identity that fails closed (issue 12, doc/DESIGN.md §5 "pods without metadata"): a pod
 * cgroup without metadata is never the victim of a kubelet threshold; the OOM guard picks
 * among unknown pods by QoS (BestEffort, Burstable, never Guaranteed) and usage; static pods
 * are known from the node's manifests and pod log dirs with the API server unreachable. On
 * fixture cgroup trees (tmp dirs) with the real pods table. */
#include "testutil.h"

#include <sys/stat.h>

#include "core/rank.h"
#include "pods/pods.h"
#include "sys/log.h"

#define MI (1024ll * 1024)
#define GI (1024ll * MI)
#define CG "sys/fs/cgroup"
#define SLICE CG "/kubepods.slice"
#define BURSTABLE SLICE "/kubepods-burstable.slice"
#define BESTEFFORT SLICE "/kubepods-besteffort.slice"

#define UID_G "4b5f0c1e-8c7a-4e5b-9d2a-1f3e5a7b9c01"
#define UID_BU "7d9e2f10-3a4b-4c5d-8e6f-a1b2c3d4e5f6"
#define UID_BE "c0ffee00-1234-4abc-8def-0123456789ab"
#define UID_APISERVER "2b1c5e4f6a7d8e9f0a1b2c3d4e5f6a7b"	/* a static pod's hash UID */
#define UID_ETCD "9f8e7d6c5b4a39281706f5e4d3c2b1a0"
#define UID_SCHED "0123456789abcdef0123456789abcdef"	/* set in its manifest */

static int setup_tmp(void **state)
{
	char *root = malloc(PATH_MAX);

	if (!root)
		return -1;
	fixture_tmpdir(root, "static");
	*state = root;
	return 0;
}

static int teardown_tmp(void **state)
{
	fixture_rm_rf(*state);
	free(*state);
	return 0;
}

static void write_cgroup(const char *root, const char *rel, long long current, long long pids)
{
	char file[PATH_MAX];

	snprintf(file, sizeof(file), "%s/cgroup.procs", rel);
	fixture_write(root, file, "%s", "");
	snprintf(file, sizeof(file), "%s/memory.current", rel);
	fixture_write(root, file, "%lld\n", current);
	snprintf(file, sizeof(file), "%s/memory.stat", rel);
	fixture_write(root, file, "anon 1\nfile 0\ninactive_file 0\n");
	snprintf(file, sizeof(file), "%s/pids.current", rel);
	fixture_write(root, file, "%lld\n", pids);
}

/* One pod of each QoS class, none of them known to any metadata source. The Guaranteed one
 * uses the most memory, the BestEffort one the least. */
static void build_tree(const char *root)
{
	fixture_write(root, CG "/cgroup.controllers", "cpuset cpu io memory pids\n");
	write_cgroup(root, SLICE, 9 * GI, 100);
	write_cgroup(root, BURSTABLE, GI, 10);
	write_cgroup(root, BESTEFFORT, GI, 10);
	write_cgroup(root, SLICE "/kubepods-pod4b5f0c1e_8c7a_4e5b_9d2a_1f3e5a7b9c01.slice", 3 * GI, 7);
	fixture_write(root, SLICE "/kubepods-pod4b5f0c1e_8c7a_4e5b_9d2a_1f3e5a7b9c01.slice/memory.max",
		      "%lld\n", 4 * GI);
	write_cgroup(root, BURSTABLE "/kubepods-burstable-pod7d9e2f10_3a4b_4c5d_8e6f_a1b2c3d4e5f6.slice",
		     2 * GI, 12);
	write_cgroup(root, BESTEFFORT "/kubepods-besteffort-podc0ffee00_1234_4abc_8def_0123456789ab.slice",
		     100 * MI, 4);
}

static struct pod *find_pod(struct pods *pods, const char *uid)
{
	size_t n;
	struct pod **list = pods_list(pods, &n);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i]->uid, uid))
			return list[i];
	return NULL;
}

/* The daemon's decision (policy.c policy_evaluate): rank, then the first candidate. */
static const struct pod *victim_for(struct pods *pods, enum ev_signal signal)
{
	size_t n;
	struct pod **list = pods_list(pods, &n);

	rank_pods(signal, NULL, list, n);
	for (size_t i = 0; i < n; i++)
		if (pod_is_candidate_for(list[i], signal))
			return list[i];
	return NULL;
}

/* An API-server source that never got a list: 403, a hang cut at its timeout, garbage. */
struct failing_source {
	struct pods_meta_source source;
	int err;
	struct pod_meta_list list;	/* returned once when n_items */
	bool give_list;
	int refreshes;
};

static int failing_refresh(struct pods_meta_source *source, struct pod_meta_list *list)
{
	struct failing_source *f = (struct failing_source *)source;

	f->refreshes++;
	if (f->give_list) {
		f->give_list = false;
		pod_meta_list_free(list);
		list->items = malloc(f->list.n_items * sizeof(*list->items));
		assert_non_null(list->items);
		memcpy(list->items, f->list.items, f->list.n_items * sizeof(*list->items));
		list->n_items = f->list.n_items;
		return 1;
	}
	return f->err;
}

static void failing_destroy(struct pods_meta_source *source)
{
	struct failing_source *f = (struct failing_source *)source;

	pod_meta_list_free(&f->list);
	free(f);
}

static struct failing_source *failing_source_new(int err)
{
	struct failing_source *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->source.name = "apiserver";
	f->source.refresh = failing_refresh;
	f->source.destroy = failing_destroy;
	f->err = err;
	return f;
}

/* ---- no metadata: never a threshold's victim; the OOM guard by QoS ------------------------ */

static void test_unknown_pods_never_threshold_victims(void **state)
{
	static const enum ev_signal thresholds[] = {
		EV_SIGNAL_MEMORY_AVAILABLE, EV_SIGNAL_NODEFS_AVAILABLE, EV_SIGNAL_NODEFS_INODES_FREE,
		EV_SIGNAL_IMAGEFS_AVAILABLE, EV_SIGNAL_CONTAINERFS_AVAILABLE, EV_SIGNAL_PID_AVAILABLE,
	};
	/* Every way the API server fails to give a list: the source keeps answering an error. */
	static const int failures[] = { -EACCES, -ETIMEDOUT, -EINVAL, -ECONNREFUSED };
	const char *root = *state;

	build_tree(root);
	for (size_t f = 0; f < sizeof(failures) / sizeof(failures[0]); f++) {
		struct failing_source *api = failing_source_new(failures[f]);
		struct pods *pods;
		size_t n;

		assert_int_equal(pods_open(&pods, &(struct pods_options){
			.root = root,
			.meta_source = pods_static_source_new(&api->source,
					&(struct pods_static_options){ .root = root, .node_name = "node-a" }),
		}), 0);
		assert_int_equal(pods_refresh(pods), 0);
		pods_list(pods, &n);
		assert_int_equal(n, 3);
		assert_true(api->refreshes > 0);
		for (size_t i = 0; i < n; i++)
			assert_true(pods_list(pods, &n)[i]->meta_unknown);
		for (size_t t = 0; t < sizeof(thresholds) / sizeof(thresholds[0]); t++) {
			assert_null(victim_for(pods, thresholds[t]));
			/* Not even the first candidate in a ranking with nothing else in it. */
			for (size_t i = 0; i < n; i++)
				assert_false(pod_is_candidate(pods_list(pods, &n)[i]));
		}
		pods_close(pods);
	}
}

static void test_oom_guard_picks_unknown_by_qos(void **state)
{
	const char *root = *state;
	const struct pod *victim;
	struct pods *pods;
	char path[PATH_MAX];

	build_tree(root);
	assert_int_equal(pods_open(&pods, &(struct pods_options){ .root = root }), 0);
	assert_int_equal(pods_refresh(pods), 0);
	/* BestEffort first, though it uses the least memory. */
	victim = victim_for(pods, EV_SIGNAL_OOM_GUARD);
	assert_non_null(victim);
	assert_string_equal(victim->uid, UID_BE);
	assert_int_equal(victim->qos, POD_QOS_BESTEFFORT);

	/* Two BestEffort pods: the larger usage first. */
	write_cgroup(root, BESTEFFORT "/kubepods-besteffort-pod11111111_2222_4333_8444_555555555555.slice",
		     700 * MI, 2);
	assert_int_equal(pods_refresh(pods), 0);
	victim = victim_for(pods, EV_SIGNAL_OOM_GUARD);
	assert_string_equal(victim->uid, "11111111-2222-4333-8444-555555555555");

	/* Without BestEffort pods: Burstable. */
	snprintf(path, sizeof(path), "%s/" BESTEFFORT, root);
	fixture_rm_rf(path);
	assert_int_equal(pods_refresh(pods), 0);
	victim = victim_for(pods, EV_SIGNAL_OOM_GUARD);
	assert_non_null(victim);
	assert_string_equal(victim->uid, UID_BU);

	/* Only a Guaranteed pod left: never, though it uses 3 GiB. */
	snprintf(path, sizeof(path), "%s/" BURSTABLE, root);
	fixture_rm_rf(path);
	assert_int_equal(pods_refresh(pods), 0);
	assert_non_null(find_pod(pods, UID_G));
	assert_null(victim_for(pods, EV_SIGNAL_OOM_GUARD));
	pods_close(pods);
}

/* A known pod goes before any unknown one, for the OOM guard too; a threshold takes only it. */
static void test_known_pods_before_unknown(void **state)
{
	const char *root = *state;
	struct failing_source *api = failing_source_new(0);
	struct pods *pods;

	build_tree(root);
	api->give_list = true;
	api->list.items = calloc(1, sizeof(*api->list.items));
	api->list.n_items = 1;
	snprintf(api->list.items[0].uid, 64, "%s", UID_G);
	snprintf(api->list.items[0].cgroup_uid, 64, "%s", UID_G);
	snprintf(api->list.items[0].namespace_, 64, "shop");
	snprintf(api->list.items[0].name, 256, "web-0");
	api->list.items[0].priority = 1000;
	api->list.items[0].memory_request = 4 * GI;
	api->list.items[0].termination_grace_period_s = -1;
	assert_int_equal(pods_open(&pods, &(struct pods_options){
		.root = root,
		.meta_source = pods_static_source_new(&api->source,
				&(struct pods_static_options){ .root = root, .node_name = "node-a" }),
	}), 0);
	assert_int_equal(pods_refresh(pods), 0);
	assert_false(find_pod(pods, UID_G)->meta_unknown);
	assert_string_equal(victim_for(pods, EV_SIGNAL_MEMORY_AVAILABLE)->uid, UID_G);
	assert_string_equal(victim_for(pods, EV_SIGNAL_OOM_GUARD)->uid, UID_G);
	pods_close(pods);
}

/* ---- static pods without the API server ------------------------------------------------- */

static void build_static(const char *root)
{
	build_tree(root);
	write_cgroup(root, BURSTABLE "/kubepods-burstable-pod" UID_APISERVER ".slice", 800 * MI, 30);
	write_cgroup(root, BESTEFFORT "/kubepods-besteffort-pod" UID_ETCD ".slice", 900 * MI, 30);
	write_cgroup(root, BESTEFFORT "/kubepods-besteffort-pod" UID_SCHED ".slice", 50 * MI, 3);
	/* kubeadm's manifests: YAML, JSON, one with metadata.uid set, and noise. */
	fixture_write(root, "etc/kubernetes/manifests/kube-apiserver.yaml",
		      "apiVersion: v1\nkind: Pod\nmetadata:\n  labels:\n    component: kube-apiserver\n"
		      "  name: kube-apiserver\n  namespace: kube-system\nspec:\n  containers:\n"
		      "  - name: kube-apiserver\n    image: registry.k8s.io/kube-apiserver:v1.30.0\n"
		      "    resources:\n      requests:\n        cpu: 250m\n");
	fixture_write(root, "etc/kubernetes/manifests/etcd.json",
		      "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"etcd\","
		      "\"namespace\":\"kube-system\",\"annotations\":{\"name\":\"not-me\"}},"
		      "\"spec\":{\"containers\":[{\"name\":\"etcd\",\"image\":\"etcd\"}]}}\n");
	fixture_write(root, "etc/kubernetes/manifests/scheduler.yaml",
		      "kind: Pod\nmetadata:\n  name: sched\n  uid: " UID_SCHED "\n");
	fixture_write(root, "etc/kubernetes/manifests/.kube-apiserver.yaml.swp", "metadata:\n  name: web\n");
	fixture_write(root, "etc/kubernetes/manifests/broken.yaml", "metadata: [: {\n");
	/* The kubelet's pod log dirs: the static pods' under their mirror names, an ordinary
	 * pod, and names that are not log dirs. */
	fixture_write(root, "var/log/pods/kube-system_kube-apiserver-node-a_" UID_APISERVER "/kube-apiserver/0.log", "x");
	fixture_write(root, "var/log/pods/kube-system_etcd-node-a_" UID_ETCD "/etcd/0.log", "x");
	fixture_write(root, "var/log/pods/shop_web-0_" UID_G "/web/0.log", "x");
	fixture_write(root, "var/log/pods/kube-system_etcd-node-a_../x", "x");
	fixture_write(root, "var/log/pods/kube-system_etcd-node-b_" UID_BU "/x", "x");
}

static void test_static_pods_known_with_api_unreachable(void **state)
{
	const char *root = *state;
	struct failing_source *api = failing_source_new(-ECONNREFUSED);
	struct pod *apiserver, *etcd, *sched;
	struct pods *pods;

	build_static(root);
	assert_int_equal(pods_open(&pods, &(struct pods_options){
		.root = root,
		.meta_source = pods_static_source_new(&api->source,
				&(struct pods_static_options){ .root = root, .node_name = "Node-A" }),
	}), 0);
	assert_int_equal(pods_refresh(pods), 0);
	apiserver = find_pod(pods, UID_APISERVER);
	etcd = find_pod(pods, UID_ETCD);
	sched = find_pod(pods, UID_SCHED);
	assert_non_null(apiserver);
	assert_non_null(etcd);
	assert_non_null(sched);
	assert_true(apiserver->is_static);
	assert_false(apiserver->meta_unknown);
	assert_string_equal(apiserver->namespace_, "kube-system");
	assert_string_equal(apiserver->name, "kube-apiserver-node-a");
	assert_true(etcd->is_static);
	assert_string_equal(etcd->name, "etcd-node-a");
	assert_true(sched->is_static);	/* metadata.uid in the manifest */
	assert_true(pod_never_evict(etcd));
	/* The OOM guard takes the BestEffort pod without metadata, never etcd (BestEffort,
	 * larger) or the apiserver. */
	assert_string_equal(victim_for(pods, EV_SIGNAL_OOM_GUARD)->uid, UID_BE);
	/* Another node's log dir (etcd-node-b) marks nothing. */
	assert_false(find_pod(pods, UID_BU)->is_static);
	assert_true(find_pod(pods, UID_BU)->meta_unknown);
	pods_close(pods);
}

/* staticPodPath given as one manifest file, which the kubelet accepts (pkg/kubelet/config/
 * file.go sourceFile.extractFromPath: a regular file is one manifest): its pod is static, the
 * others in the same directory are not read. */
static void test_static_pod_path_single_file(void **state)
{
	const char *root = *state;
	struct failing_source *api = failing_source_new(-ECONNREFUSED);
	struct pods *pods;

	build_static(root);
	assert_int_equal(pods_open(&pods, &(struct pods_options){
		.root = root,
		.meta_source = pods_static_source_new(&api->source, &(struct pods_static_options){
			.root = root, .node_name = "Node-A",
			.manifest_dir = "/etc/kubernetes/manifests/kube-apiserver.yaml" }),
	}), 0);
	assert_int_equal(pods_refresh(pods), 0);
	assert_true(find_pod(pods, UID_APISERVER)->is_static);
	assert_string_equal(find_pod(pods, UID_APISERVER)->name, "kube-apiserver-node-a");
	assert_false(find_pod(pods, UID_ETCD)->is_static);	/* etcd.json: not the path given */
	assert_false(find_pod(pods, UID_SCHED)->is_static);
	pods_close(pods);
}

/* A listed pod the manifests name is static even when the list says otherwise, and a
 * manifest added later is picked up on the next refresh (the directory changed). */
static void test_static_marks_listed_and_follows_changes(void **state)
{
	const char *root = *state;
	struct failing_source *api = failing_source_new(0);
	struct pods *pods;

	build_static(root);
	api->give_list = true;
	api->list.items = calloc(1, sizeof(*api->list.items));
	api->list.n_items = 1;
	snprintf(api->list.items[0].uid, 64, "%s", UID_APISERVER);
	snprintf(api->list.items[0].cgroup_uid, 64, "%s", UID_APISERVER);
	snprintf(api->list.items[0].namespace_, 64, "kube-system");
	snprintf(api->list.items[0].name, 256, "kube-apiserver-node-a");
	assert_int_equal(pods_open(&pods, &(struct pods_options){
		.root = root,
		.meta_source = pods_static_source_new(&api->source,
				&(struct pods_static_options){ .root = root, .node_name = "node-a" }),
	}), 0);
	assert_int_equal(pods_refresh(pods), 0);
	assert_true(find_pod(pods, UID_APISERVER)->is_static);
	assert_false(find_pod(pods, UID_BE)->is_static);

	/* A new static pod: manifest and log dir; both dirs change. */
	fixture_write(root, "etc/kubernetes/manifests/besteffort-static.yaml",
		      "kind: Pod\nmetadata:\n  name: agent\n  namespace: default\n");
	fixture_write(root, "var/log/pods/default_agent-node-a_" UID_BE "/a/0.log", "x");
	assert_int_equal(pods_refresh(pods), 0);
	assert_true(find_pod(pods, UID_BE)->is_static);
	/* The OOM guard passes over it now: the unknown Burstable pod is next. */
	assert_string_equal(victim_for(pods, EV_SIGNAL_OOM_GUARD)->uid, UID_BU);
	pods_close(pods);
}

/* Hostile manifest dirs: a FIFO (never opened blocking), a file over 1 MiB, deep nesting, a
 * PodList. Nothing hangs; what can be read is read. */
static void test_static_hostile_manifests(void **state)
{
	const char *root = *state;
	char path[PATH_MAX], *big;
	struct pods *pods;
	size_t len = (1u << 20) + 10, n = 0;

	build_static(root);
	snprintf(path, sizeof(path), "%s/etc/kubernetes/manifests/fifo.yaml", root);
	assert_int_equal(mkfifo(path, 0644), 0);
	big = malloc(len + 1);
	assert_non_null(big);
	memset(big, '#', len);
	big[len] = '\0';
	fixture_write(root, "etc/kubernetes/manifests/big.yaml", "%s", big);
	free(big);
	big = malloc(8192);
	assert_non_null(big);
	for (int i = 0; i < 2000; i++)
		n += (size_t)sprintf(big + n, "[");
	fixture_write(root, "etc/kubernetes/manifests/deep.yaml", "metadata: %s\n", big);
	free(big);
	fixture_write(root, "etc/kubernetes/manifests/list.yaml",
		      "kind: PodList\nitems:\n- metadata:\n    name: a\n- metadata:\n    name: bu\n"
		      "    namespace: kube-system\n");
	fixture_write(root, "var/log/pods/kube-system_bu-node-a_" UID_BU "/x/0.log", "x");
	assert_int_equal(pods_open(&pods, &(struct pods_options){
		.root = root,
		.meta_source = pods_static_source_new(NULL,
				&(struct pods_static_options){ .root = root, .node_name = "node-a" }),
	}), 0);
	assert_int_equal(pods_refresh(pods), 0);
	assert_true(find_pod(pods, UID_ETCD)->is_static);
	assert_true(find_pod(pods, UID_BU)->is_static);	/* from the PodList */
	pods_close(pods);
}

#define TT(fn) cmocka_unit_test_setup_teardown(fn, setup_tmp, teardown_tmp)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TT(test_unknown_pods_never_threshold_victims),
		TT(test_oom_guard_picks_unknown_by_qos),
		TT(test_known_pods_before_unknown),
		TT(test_static_pods_known_with_api_unreachable),
		TT(test_static_pod_path_single_file),
		TT(test_static_marks_listed_and_follows_changes),
		TT(test_static_hostile_manifests),
	};

	log_set_level(LOGLEVEL_ERR - 1);
	return cmocka_run_group_tests_name("static_pods", tests, NULL, NULL);
}
