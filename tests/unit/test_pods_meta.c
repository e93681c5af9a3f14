// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Pods and their metadata over time (doc/DESIGN.md §5, "Pods without metadata"): a pod cgroup
 * found before the metadata naming it is meta_unknown, and becomes a known candidate at the
 * next refresh once the metadata arrives, without a change in the cgroup tree; every other
 * metadata-derived field follows the metadata both ways, in place and on rediscovery alike.
 * And the PodList parser's peak memory on a large pods file (podlist.c). */
#include "testutil.h"

#include <sys/resource.h>
#include <sys/wait.h>

#include "core/rank.h"
#include "pods/pods.h"
#include "sys/log.h"

#define MI (1024ll * 1024)
#define CG "sys/fs/cgroup"
#define SLICE CG "/kubepods.slice"
#define UID_HOG "c0ffee00-1234-4abc-8def-0123456789ab"
#define UID_WEB "7d9e2f10-3a4b-4c5d-8e6f-a1b2c3d4e5f6"
#define HOG_DIR SLICE "/kubepods-besteffort.slice/kubepods-besteffort-podc0ffee00_1234_4abc_8def_0123456789ab.slice"
#define WEB_DIR SLICE "/kubepods-burstable.slice/kubepods-burstable-pod7d9e2f10_3a4b_4c5d_8e6f_a1b2c3d4e5f6.slice"
#define NEW_DIR SLICE "/kubepods-besteffort.slice/kubepods-besteffort-pod0a0a0a0a_0b0b_4c0c_8d0d_0e0e0e0e0e0e.slice"

/* A metadata source whose list the test sets: what a pods file re-read or an API list or
 * watch update hands pods_refresh(). */
struct test_source {
	struct pods_meta_source source;
	struct pod_meta items[4];
	size_t n_items;
	bool changed;
};

static int test_source_refresh(struct pods_meta_source *source, struct pod_meta_list *list)
{
	struct test_source *t = (struct test_source *)source;
	struct pod_meta *copy;

	if (!t->changed)
		return 0;
	copy = calloc(t->n_items ? t->n_items : 1, sizeof(*copy));
	assert_non_null(copy);
	memcpy(copy, t->items, t->n_items * sizeof(*copy));
	/* Sorted by cgroup_uid, as the parser hands it over. */
	for (size_t i = 1; i < t->n_items; i++)
		assert_true(strcmp(copy[i - 1].cgroup_uid, copy[i].cgroup_uid) < 0);
	pod_meta_list_free(list);
	list->items = copy;
	list->n_items = t->n_items;
	t->changed = false;
	return 1;
}

static void test_source_destroy(struct pods_meta_source *source)
{
	(void)source;
}

static struct pod_meta meta_for(const char *uid, const char *name)
{
	struct pod_meta m = { .termination_grace_period_s = -1 };

	snprintf(m.uid, sizeof(m.uid), "%s", uid);
	snprintf(m.cgroup_uid, sizeof(m.cgroup_uid), "%s", uid);
	snprintf(m.namespace_, sizeof(m.namespace_), "shop");
	snprintf(m.name, sizeof(m.name), "%s", name);
	return m;
}

static void set_list(struct test_source *t, const struct pod_meta *items, size_t n)
{
	if (n)
		memcpy(t->items, items, n * sizeof(*items));
	t->n_items = n;
	t->changed = true;
}

static void write_cgroup(const char *root, const char *rel, long long current)
{
	char file[PATH_MAX];

	snprintf(file, sizeof(file), "%s/cgroup.events", rel);
	fixture_write(root, file, "populated 1\nfrozen 0\n");
	snprintf(file, sizeof(file), "%s/memory.current", rel);
	fixture_write(root, file, "%lld\n", current);
	snprintf(file, sizeof(file), "%s/memory.stat", rel);
	fixture_write(root, file, "anon 1000\ninactive_file 0\n");
	snprintf(file, sizeof(file), "%s/pids.current", rel);
	fixture_write(root, file, "3\n");
}

static void build_tree(const char *root)
{
	fixture_write(root, CG "/cgroup.controllers", "memory pids\n");
	write_cgroup(root, HOG_DIR, 700 * MI);
	write_cgroup(root, WEB_DIR, 100 * MI);
	fixture_write(root, WEB_DIR "/memory.min", "%lld\n", 64 * MI);
}

static int setup_tmp(void **state)
{
	char *root = malloc(PATH_MAX);

	if (!root)
		return -1;
	fixture_tmpdir(root, "podsmeta");
	*state = root;
	return 0;
}

static int teardown_tmp(void **state)
{
	fixture_rm_rf(*state);
	free(*state);
	return 0;
}

static struct pod *find_pod(struct pods *pods, const char *uid)
{
	size_t n;
	struct pod **list = pods_list(pods, &n);

	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i]->uid, uid) == 0)
			return list[i];
	return NULL;
}

static struct pods *open_with(const char *root, struct test_source *t)
{
	struct pods_options options = { .root = root, .meta_source = &t->source };
	struct pods *pods;

	t->source.name = "test-source";
	t->source.refresh = test_source_refresh;
	t->source.destroy = test_source_destroy;
	assert_int_equal(pods_open(&pods, &options), 0);
	return pods;
}

/* The victim the memory threshold would take: the first candidate of the ranking. */
static const char *victim(struct pods *pods)
{
	size_t n;
	struct pod **list = pods_list(pods, &n);

	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, NULL, list, n);
	for (size_t i = 0; i < n; i++)
		if (pod_is_candidate_for(list[i], EV_SIGNAL_MEMORY_AVAILABLE))
			return list[i]->uid;
	return "none";
}

/* The guest failure: the hog's cgroup is there before the list naming it. Then the list
 * names it, with no change in the cgroup tree (no inotify event): the next refresh makes it
 * a known candidate, and the memory threshold's victim (it uses the most). */
static void test_metadata_arrives_after_the_cgroup(void **state)
{
	const char *root = *state;
	struct test_source t = { 0 };
	struct pod_meta both[2] = { meta_for(UID_WEB, "web"), meta_for(UID_HOG, "hog") };
	struct pods *pods;
	struct pod *hog;

	build_tree(root);
	set_list(&t, &both[0], 1);	/* only web is listed yet */
	pods = open_with(root, &t);
	assert_int_equal(pods_refresh(pods), 0);
	hog = find_pod(pods, UID_HOG);
	assert_non_null(hog);
	assert_true(hog->meta_unknown);
	assert_false(pod_is_candidate(hog));
	assert_string_equal(victim(pods), UID_WEB);
	/* Refreshes with nothing new change nothing. */
	assert_int_equal(pods_refresh(pods), 0);
	assert_true(find_pod(pods, UID_HOG)->meta_unknown);

	/* The list now names the hog too (sorted: 7d9e2f10 < c0ffee00). */
	set_list(&t, both, 2);
	assert_int_equal(pods_refresh(pods), 0);
	hog = find_pod(pods, UID_HOG);
	assert_false(hog->meta_unknown);
	assert_string_equal(hog->name, "hog");
	assert_string_equal(hog->namespace_, "shop");
	assert_true(pod_is_candidate(hog));
	assert_string_equal(victim(pods), UID_HOG);
	/* Usage and identity are the cgroup's, untouched by the join. */
	assert_int_equal(hog->memory_working_set, 700 * MI);
	assert_int_equal(hog->qos, POD_QOS_BESTEFFORT);
	assert_int_not_equal(hog->cgroup_id, 0);
	pods_close(pods);
}

/* Every metadata-derived field of the hog, for comparing two derivations. */
static void assert_same_derived(const struct pod *a, const struct pod *b)
{
	assert_string_equal(a->namespace_, b->namespace_);
	assert_string_equal(a->name, b->name);
	assert_int_equal(a->priority, b->priority);
	assert_int_equal(a->is_static, b->is_static);
	assert_int_equal(a->is_mirror, b->is_mirror);
	assert_int_equal(a->is_daemonset, b->is_daemonset);
	assert_int_equal(a->meta_unknown, b->meta_unknown);
	assert_int_equal(a->termination_grace_period_s, b->termination_grace_period_s);
	assert_int_equal(a->memory_request, b->memory_request);
	assert_int_equal(a->ephemeral_storage_request, b->ephemeral_storage_request);
	assert_int_equal(a->n_containers, b->n_containers);
	assert_memory_equal(a->containers, b->containers, sizeof(a->containers));
	assert_int_equal(a->qos, b->qos);
}

enum flip { FLIP_STATIC, FLIP_MIRROR, FLIP_DAEMONSET, FLIP_CRITICAL, FLIP_PRIORITY, FLIP_REQUESTS,
	    FLIP_GRACE, FLIP_CONTAINERS, FLIP_NAMES, FLIP_QOS_MISMATCH, FLIPS };

static struct pod_meta flipped(enum flip flip)
{
	struct pod_meta m = meta_for(UID_HOG, "hog");

	switch (flip) {
	case FLIP_STATIC: m.is_static = true; break;
	case FLIP_MIRROR: m.is_mirror = true; break;
	case FLIP_DAEMONSET: m.is_daemonset = true; break;
	case FLIP_CRITICAL: m.priority = 2000001000; break;	/* system-node-critical */
	case FLIP_PRIORITY: m.priority = -5; break;
	case FLIP_REQUESTS: m.memory_request = 900 * MI; m.ephemeral_storage_request = MI; break;
	case FLIP_GRACE: m.termination_grace_period_s = 7; break;
	case FLIP_CONTAINERS:
		snprintf(m.containers[0].name, sizeof(m.containers[0].name), "main");
		snprintf(m.containers[0].id, sizeof(m.containers[0].id), "abc");
		m.n_containers = 1;
		break;
	case FLIP_NAMES:
		snprintf(m.namespace_, sizeof(m.namespace_), "other");
		snprintf(m.name, sizeof(m.name), "renamed");
		break;
	case FLIP_QOS_MISMATCH: m.qos = POD_QOS_GUARANTEED; m.qos_known = true; break;
	case FLIPS: break;
	}
	return m;
}

static void assert_plain_known(const struct pod *hog)
{
	assert_false(hog->meta_unknown);
	assert_string_equal(hog->name, "hog");
	assert_string_equal(hog->namespace_, "shop");
	assert_int_equal(hog->priority, 0);
	assert_false(hog->is_static || hog->is_mirror || hog->is_daemonset);
	assert_int_equal(hog->termination_grace_period_s, -1);
	assert_int_equal(hog->memory_request, 0);
	assert_int_equal(hog->ephemeral_storage_request, 0);
	assert_int_equal(hog->n_containers, 0);
	assert_int_equal(hog->qos, POD_QOS_BESTEFFORT);	/* the path's, always */
	assert_true(pod_is_candidate(hog));
}

static void assert_unknown(const struct pod *hog)
{
	assert_true(hog->meta_unknown);
	assert_false(pod_is_candidate(hog));
	assert_int_equal(hog->priority, 0);
	assert_false(hog->is_static || hog->is_mirror || hog->is_daemonset);
	assert_int_equal(hog->n_containers, 0);
	assert_int_equal(hog->namespace_[0], '\0');
	assert_string_equal(hog->name, "kubepods-besteffort-podc0ffee00_1234_4abc_8def_0123456789ab.slice");
	assert_int_equal(hog->memory_request, 0);	/* BestEffort: nothing in the cgroup */
}

/* Each field set, then cleared, then the metadata gone, then back: in place (no change in the
 * tree), every refresh gives exactly what a fresh discovery with the same list gives. */
static void test_every_field_follows_the_metadata(void **state)
{
	const char *root = *state;
	struct test_source t = { 0 }, fresh_source = { 0 };
	struct pods *pods;

	build_tree(root);
	pods = open_with(root, &t);
	for (int f = 0; f < FLIPS; f++) {
		struct pod_meta plain = meta_for(UID_HOG, "hog"), set = flipped((enum flip)f);
		struct pods *fresh;
		struct pod *hog;

		set_list(&t, &set, 1);
		assert_int_equal(pods_refresh(pods), 0);
		hog = find_pod(pods, UID_HOG);
		assert_false(hog->meta_unknown);
		/* The same list on a table that discovers now: the same derivation. */
		set_list(&fresh_source, &set, 1);
		fresh = open_with(root, &fresh_source);
		assert_int_equal(pods_refresh(fresh), 0);
		assert_same_derived(hog, find_pod(fresh, UID_HOG));
		pods_close(fresh);
		switch ((enum flip)f) {
		case FLIP_STATIC: assert_true(hog->is_static); assert_true(pod_never_evict(hog)); break;
		case FLIP_MIRROR: assert_true(hog->is_mirror); assert_true(pod_never_evict(hog)); break;
		case FLIP_DAEMONSET: assert_true(hog->is_daemonset); break;
		case FLIP_CRITICAL: assert_true(pod_never_evict(hog)); break;
		case FLIP_PRIORITY: assert_int_equal(hog->priority, -5); break;
		case FLIP_REQUESTS: assert_int_equal(hog->memory_request, 900 * MI); break;
		case FLIP_GRACE: assert_int_equal(hog->termination_grace_period_s, 7); break;
		case FLIP_CONTAINERS: assert_int_equal(hog->n_containers, 1); break;
		case FLIP_NAMES: assert_string_equal(hog->name, "renamed"); break;
		case FLIP_QOS_MISMATCH: assert_int_equal(hog->qos, POD_QOS_BESTEFFORT); break;
		case FLIPS: break;
		}

		/* Cleared in the metadata: cleared in the pod. */
		set_list(&t, &plain, 1);
		assert_int_equal(pods_refresh(pods), 0);
		assert_plain_known(find_pod(pods, UID_HOG));

		/* Set again, then the metadata gone (deleted from the list): unknown, nothing of
		 * the last join left; then back. */
		set_list(&t, &set, 1);
		assert_int_equal(pods_refresh(pods), 0);
		set_list(&t, NULL, 0);
		assert_int_equal(pods_refresh(pods), 0);
		assert_unknown(find_pod(pods, UID_HOG));
		set_list(&t, &plain, 1);
		assert_int_equal(pods_refresh(pods), 0);
		assert_plain_known(find_pod(pods, UID_HOG));
	}
	pods_close(pods);
}

/* The same through a rediscovery: a new pod cgroup (an inotify event where the watches work)
 * makes the next refresh scan again; the metadata that came meanwhile is taken either way. */
static void test_metadata_with_rediscovery(void **state)
{
	const char *root = *state;
	struct test_source t = { 0 };
	struct pod_meta hog = meta_for(UID_HOG, "hog");
	struct pods *pods;

	build_tree(root);
	pods = open_with(root, &t);
	assert_int_equal(pods_refresh(pods), 0);
	assert_unknown(find_pod(pods, UID_HOG));
	set_list(&t, &hog, 1);
	write_cgroup(root, NEW_DIR, MI);
	assert_int_equal(pods_refresh(pods), 0);
	assert_non_null(find_pod(pods, "0a0a0a0a-0b0b-4c0c-8d0d-0e0e0e0e0e0e"));
	assert_plain_known(find_pod(pods, UID_HOG));
	pods_close(pods);
}

/* ---- the parser's peak memory ----------------------------------------------------------- */

#if defined(__SANITIZE_ADDRESS__)
/* ASan keeps freed blocks in a quarantine (256 MB by default), so every freed pod DOM would
 * stay resident and the peak would measure the quarantine, not the parser. A small one still
 * catches a use after free of the last pods. Options from the environment come after these. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "quarantine_size_mb=4";
}
#endif

/* One pod as `kubectl get pods -o json` prints it (managedFields, labels, env, statuses):
 * about 6 KiB, mostly small objects, the shape that made json-c's DOM cost ~40x the text. */
static void write_pod(FILE *f, size_t i, const char *node)
{
	fprintf(f, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"uid\":\"%08zx-0000-4000-8000-000000000000\","
		"\"name\":\"app-%zu\",\"namespace\":\"ns-%zu\",\"labels\":{\"app\":\"app\",\"tier\":\"web\","
		"\"pod-template-hash\":\"6d4cf56db6\"},\"annotations\":{\"kubernetes.io/config.source\":\"api\"},"
		"\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"app-6d4cf56db6\","
		"\"uid\":\"e0d7c1f2-0000-4000-8000-000000000000\",\"controller\":true,\"blockOwnerDeletion\":true}],"
		"\"managedFields\":[", i, i, i % 50);
	for (int m = 0; m < 4; m++)
		fprintf(f, "%s{\"manager\":\"kube-controller-manager\",\"operation\":\"Update\",\"apiVersion\":\"v1\","
			"\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:app\":{},"
			"\"f:tier\":{},\"f:pod-template-hash\":{}},\"f:ownerReferences\":{\".\":{},\"k:{\\\"uid\\\":\\\"e0\\\"}\":{}}},"
			"\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"main\\\"}\":{\".\":{},\"f:env\":{\".\":{},"
			"\"k:{\\\"name\\\":\\\"A\\\"}\":{\".\":{},\"f:name\":{},\"f:value\":{}},\"k:{\\\"name\\\":\\\"B\\\"}\":"
			"{\".\":{},\"f:name\":{},\"f:value\":{}}},\"f:image\":{},\"f:imagePullPolicy\":{},\"f:name\":{},"
			"\"f:resources\":{\".\":{},\"f:requests\":{\".\":{},\"f:memory\":{}}}}},\"f:dnsPolicy\":{},"
			"\"f:restartPolicy\":{},\"f:schedulerName\":{}},\"f:status\":{\"f:conditions\":{\"k:{\\\"type\\\":"
			"\\\"Ready\\\"}\":{\".\":{},\"f:status\":{},\"f:type\":{}}}}}}", m ? "," : "");
	fprintf(f, "]},\"spec\":{\"nodeName\":\"%s\",\"priority\":%zu,\"terminationGracePeriodSeconds\":30,"
		"\"containers\":[{\"name\":\"main\",\"image\":\"registry.example/app:1.2.3\",\"env\":["
		"{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"2\"}],\"resources\":{\"requests\":"
		"{\"memory\":\"128Mi\",\"cpu\":\"100m\"},\"limits\":{\"memory\":\"256Mi\"}}}]},"
		"\"status\":{\"phase\":\"Running\",\"qosClass\":\"Burstable\",\"conditions\":[{\"type\":\"Ready\","
		"\"status\":\"True\"}],\"containerStatuses\":[{\"name\":\"main\",\"containerID\":"
		"\"containerd://%064zx\",\"ready\":true,\"restartCount\":0}]}}", node, i % 1000, i);
}

/* A ~13 MB list, every 8th pod on node-a. Returns the size. */
static size_t write_large_podlist(const char *path)
{
	size_t size;
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs("{\"apiVersion\":\"v1\",\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"\"},\"items\":[", f);
	for (size_t i = 0; ftell(f) < 13 * 1000 * 1000; i++) {
		if (i)
			fputc(',', f);
		write_pod(f, i, i % 8 ? "node-b" : "node-a");
	}
	fputs("]}\n", f);
	size = (size_t)ftell(f);
	fclose(f);
	return size;
}

static long max_rss_kib(void)
{
	struct rusage ru;

	assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
	return ru.ru_maxrss;
}

/* In a child (a fresh peak): read the file through the pods-file source, as the daemon does
 * (worker thread, the whole text in memory, then parsed), and report the growth of the peak
 * RSS over the start, in KiB, through the pipe. */
static void measure_child(const char *path, const char *node, int fd)
{
	struct pod_meta_list list = { 0 };
	struct pods_meta_source *source;
	long before, after, n;

	log_set_level(LOGLEVEL_ERR);
	before = max_rss_kib();
	source = pods_file_source_new(path, node);
	if (!source || source->wait(source, 120ll * 1000000000) ||
	    source->refresh(source, &list) != 1)
		_exit(2);
	after = max_rss_kib();
	n = (long)list.n_items;
	if (write(fd, &after, sizeof(after)) != sizeof(after) || write(fd, &before, sizeof(before)) != sizeof(before) ||
	    write(fd, &n, sizeof(n)) != sizeof(n))
		_exit(3);
	source->destroy(source);
	pod_meta_list_free(&list);
	_exit(0);
}

static void test_large_pods_file_peak_memory(void **state)
{
	const char *root = *state;
	char path[PATH_MAX];
	long after, before, n;
	int fds[2], status;
	size_t size;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/pods.json", root);
	size = write_large_podlist(path);
	for (int filtered = 1; filtered >= 0; filtered--) {
		assert_int_equal(pipe(fds), 0);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			measure_child(path, filtered ? "node-a" : NULL, fds[1]);
		}
		close(fds[1]);
		assert_int_equal(read(fds[0], &after, sizeof(after)), sizeof(after));
		assert_int_equal(read(fds[0], &before, sizeof(before)), sizeof(before));
		assert_int_equal(read(fds[0], &n, sizeof(n)), sizeof(n));
		close(fds[0]);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		print_message("pods file %zu bytes, %s: %ld pods, peak RSS +%ld KiB (%.1fx the file)\n",
			      size, filtered ? "node-a only" : "every node", n, after - before,
			      (double)(after - before) * 1024 / (double)size);
		assert_true(n > 100);
		/* The text itself is 1x; the parse adds one pod's DOM and the pod_metas kept. */
		assert_true((size_t)(after - before) * 1024 < 4 * size);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_metadata_arrives_after_the_cgroup, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_every_field_follows_the_metadata, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_metadata_with_rediscovery, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_large_pods_file_peak_memory, setup_tmp, teardown_tmp),
	};

	log_set_level(LOGLEVEL_ERR - 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
