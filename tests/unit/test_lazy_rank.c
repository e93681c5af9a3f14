// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Ranking 1,000 pods cheaply (doc/DESIGN.md §5, "Ranking 1,000 pods"): a refresh reads
 * memory.current (an upper bound of the working set) and the ranking reads memory.stat only
 * for the pods it reaches. These tests check that the lazy ranking names exactly the pods, in
 * exactly the order, that reading everything would: rank_resettle() against a full re-rank on
 * random tables, and the policy on fixture cgroup trees whose memory.current order is the
 * opposite of their working-set order, with vanishing cgroups, unreadable memory.stat, ties,
 * and no pids controller.
 */
#include "testutil.h"

#include <stdint.h>
#include <sys/stat.h>

#include "config/config.h"
#include "core/rank.h"
#include "daemon/policy.h"
#include "pods/pods.h"
#include "sys/log.h"

#define MI (1024ll * 1024)
#define GI (1024ll * MI)
#define CG "sys/fs/cgroup"
#define SLICE CG "/kubepods.slice"
#define BESTEFFORT SLICE "/kubepods-besteffort.slice"
#define BURSTABLE SLICE "/kubepods-burstable.slice"

/* ---- rank_resettle(): one pod's usage goes down, the table is as a full rank gives ------- */

#define RANDOM_PODS 96

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void random_pod(struct pod *pod, size_t i)
{
	memset(pod, 0, sizeof(*pod));
	snprintf(pod->uid, sizeof(pod->uid), "u%zu", i);
	/* Few distinct values: ties in every key. */
	pod->priority = (int32_t)(rng() % 3) - 1;
	pod->qos = (enum pod_qos)(rng() % 3);
	pod->memory_request = (int64_t)(rng() % 4) * 100 * MI;
	pod->memory_working_set = (int64_t)(rng() % 6) * 100 * MI;
	pod->processes = (int64_t)(rng() % 5);
	pod->disk_bytes.writable = (int64_t)(rng() % 4) * GI;
	pod->meta_unknown = rng() % 7 == 0;
	pod->is_daemonset = rng() % 9 == 0;
	pod->is_static = rng() % 11 == 0;
	pod->stats_missing = rng() % 13 == 0;
	pod->termination_grace_period_s = -1;
}

static void assert_same_order(struct pod **a, struct pod **b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			fail_msg("position %zu: %s, a full rank says %s", i, a[i]->uid, b[i]->uid);
}

static void test_resettle_matches_full_rank(void **state)
{
	static const enum ev_signal signals[] = {
		EV_SIGNAL_MEMORY_AVAILABLE, EV_SIGNAL_OOM_GUARD, EV_SIGNAL_PID_AVAILABLE,
		EV_SIGNAL_NODEFS_AVAILABLE,
	};
	static struct pod table[RANDOM_PODS];
	struct pod *lazy[RANDOM_PODS], *full[RANDOM_PODS];

	(void)state;
	for (int round = 0; round < 400; round++) {
		enum ev_signal signal = signals[round % 4];
		size_t n = 1 + rng() % RANDOM_PODS;

		for (size_t i = 0; i < n; i++) {
			random_pod(&table[i], i);
			lazy[i] = &table[i];
		}
		rank_pods(signal, NULL, lazy, n);
		for (int step = 0; step < 20; step++) {
			size_t at = rng() % n;
			struct pod *pod = lazy[at];

			/* Down, never up: what refining an upper bound does. */
			pod->memory_working_set -= (int64_t)(rng() % 3) * 100 * MI;
			if (pod->memory_working_set < 0)
				pod->memory_working_set = 0;
			if (pod->processes && rng() % 2)
				pod->processes--;
			if (pod->disk_bytes.writable && rng() % 2)
				pod->disk_bytes.writable -= GI;
			rank_resettle(signal, NULL, lazy, n, at);
			for (size_t i = 0; i < n; i++)
				full[i] = &table[i];
			rank_pods(signal, NULL, full, n);
			assert_same_order(lazy, full, n);
		}
	}
}

static void test_resettle_edges(void **state)
{
	struct pod table[2];
	struct pod *list[2] = { &table[0], &table[1] };

	(void)state;
	random_pod(&table[0], 0);
	random_pod(&table[1], 1);
	table[0].memory_working_set = table[1].memory_working_set = GI;
	table[0].stats_missing = table[1].stats_missing = false;
	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, NULL, list, 2);
	/* One past the end, an empty table: nothing moves, nothing is read out of bounds. */
	rank_resettle(EV_SIGNAL_MEMORY_AVAILABLE, NULL, list, 2, 2);
	rank_resettle(EV_SIGNAL_MEMORY_AVAILABLE, NULL, list, 0, 0);
	rank_resettle(EV_SIGNAL_MEMORY_AVAILABLE, NULL, list, 2, 1);	/* the last stays last */
	assert_true(list[0] != list[1]);
}

/* ---- the policy on a cgroup tree ---------------------------------------------------------- */

struct tree {
	char root[PATH_MAX];
	char pods_file[PATH_MAX + 16];
};

static void pod_uid(char *buf, size_t len, size_t i)
{
	snprintf(buf, len, "00000000-0000-4000-8000-%012zu", i);
}

static void pod_dir(char *buf, size_t len, size_t i)
{
	char uid[64];

	pod_uid(uid, sizeof(uid), i);
	for (char *c = uid; *c; c++)
		if (*c == '-')
			*c = '_';
	snprintf(buf, len, BESTEFFORT "/kubepods-besteffort-pod%s.slice", uid);
}

static void write_usage(const char *root, size_t i, long long current, long long inactive, bool pids)
{
	char dir[PATH_MAX], file[PATH_MAX + 32];

	pod_dir(dir, sizeof(dir), i);
	snprintf(file, sizeof(file), "%s/cgroup.events", dir);
	fixture_write(root, file, "populated 1\nfrozen 0\n");
	snprintf(file, sizeof(file), "%s/memory.current", dir);
	fixture_write(root, file, "%lld\n", current);
	snprintf(file, sizeof(file), "%s/memory.stat", dir);
	fixture_write(root, file, "anon 1\nfile 2\nactive_file 3\ninactive_file %lld\nactive_anon 4\n",
		      inactive);
	if (pids) {
		snprintf(file, sizeof(file), "%s/pids.current", dir);
		fixture_write(root, file, "%zu\n", 1 + i % 4);
	} else {
		snprintf(file, sizeof(file), "%s/cgroup.threads", dir);
		fixture_write(root, file, "%s", i % 2 ? "1\n2\n3\n" : "1\n");
	}
}

/* n BestEffort pods in one priority class each of two; pod i's memory.current, n + i MiB,
 * grows with i while its working set, n - i MiB, shrinks (inactive_file eats it), so the
 * cheap order is the exact one reversed. */
static void build_tree(struct tree *t, size_t n, bool pids)
{
	FILE *f;

	fixture_tmpdir(t->root, "lazyrank");
	fixture_write(t->root, CG "/cgroup.controllers", pids ? "cpuset cpu io memory pids\n" :
			      "cpuset cpu io memory\n");
	fixture_write(t->root, CG "/memory.stat", "anon 0\nfile 0\ninactive_file 0\nactive_file 0\n");
	fixture_write(t->root, "proc/meminfo", "MemTotal: 16000000 kB\nMemFree: 1000000 kB\n"
		      "MemAvailable: 2000000 kB\nBuffers: 0 kB\nCached: 100 kB\n");
	fixture_write(t->root, "proc/self/cgroup", "0::/system.slice/evictd.service\n");
	fixture_write(t->root, "var/lib/kubelet/.keep", "%s", "");
	for (size_t i = 0; i < n; i++)
		write_usage(t->root, i, (long long)(n + i) * MI, 2ll * i * MI, pids);
	snprintf(t->pods_file, sizeof(t->pods_file), "%s/pods.json", t->root);
	f = fopen(t->pods_file, "w");
	assert_non_null(f);
	fputs("{\"kind\":\"PodList\",\"items\":[", f);
	for (size_t i = 0; i < n; i++) {
		char uid[64];

		pod_uid(uid, sizeof(uid), i);
		fprintf(f, "%s{\"metadata\":{\"uid\":\"%s\",\"name\":\"p%zu\",\"namespace\":\"d\"},"
			"\"spec\":{\"nodeName\":\"n\",\"priority\":%d},\"status\":{\"qosClass\":\"BestEffort\"}}",
			i ? "," : "", uid, i, (int)(i % 2));
	}
	fputs("]}\n", f);
	fclose(f);
}

static struct policy *open_policy(struct tree *t, const char *threshold)
{
	static struct evictd_config config;
	char arg_root[PATH_MAX + 16], arg_pods[PATH_MAX + 32], arg_hard[128];
	struct policy *policy;

	snprintf(arg_root, sizeof(arg_root), "--root=%s", t->root);
	snprintf(arg_pods, sizeof(arg_pods), "--pods-file=%s", t->pods_file);
	snprintf(arg_hard, sizeof(arg_hard), "--eviction-hard=%s", threshold);
	char *argv[] = { "evictd", "--once", "--dry-run", arg_root, arg_pods, "--node-name=n", arg_hard,
			 "--kube-api=off", "--metrics-address=off", "--event-log=off", "--no-psi", NULL };
	config_init_defaults(&config);
	assert_int_equal(config_parse_args(&config, (int)(sizeof(argv) / sizeof(argv[0])) - 1, argv), 0);
	assert_int_equal(config_finalize(&config), 0);
	assert_int_equal(policy_new(&policy, &config, &(struct policy_deps){ .node_name = "n" }), 0);
	assert_non_null(policy->pods);
	policy_evaluate(policy, 0);
	assert_int_equal(pods_meta_wait(policy->pods, 10ll * 1000000000), 0);
	return policy;
}

/* The order and numbers reading everything gives, by UID, from a separate pods table. */
static size_t exact_ranking(struct tree *t, enum ev_signal signal, char (*uids)[64], int64_t *usage,
			    size_t max)
{
	struct pods_options options = { .root = t->root };
	struct pods *pods;
	struct pod **list;
	size_t n;

	options.meta_source = pods_file_source_new(t->pods_file, "n");
	assert_non_null(options.meta_source);
	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_meta_wait(pods, 10ll * 1000000000), 0);
	assert_int_equal(pods_refresh(pods), 0);
	list = pods_list(pods, &n);
	rank_pods(signal, NULL, list, n);
	for (size_t i = 0; i < n && i < max; i++) {
		assert_false(list[i]->working_set_unrefined);
		snprintf(uids[i], 64, "%s", list[i]->uid);
		usage[i] = rank_usage(signal, NULL, list[i]);
	}
	pods_close(pods);
	return n;
}

static size_t count_unrefined(struct policy *policy)
{
	size_t n, unrefined = 0;
	struct pod **list = pods_list(policy->pods, &n);

	for (size_t i = 0; i < n; i++)
		unrefined += list[i]->working_set_unrefined;
	return unrefined;
}

#define TREE_PODS 200

static void assert_prefix_exact(struct policy *policy, enum ev_signal signal, char (*uids)[64],
				const int64_t *usage, size_t n)
{
	assert_true(policy->n_settled >= n);
	for (size_t i = 0; i < n; i++) {
		const struct pod *pod = policy->candidates[i];

		if (strcmp(pod->uid, uids[i]) || rank_usage(signal, NULL, pod) != usage[i])
			fail_msg("rank %zu: %s with %lld, reading everything gives %s with %lld", i,
				 pod->uid, (long long)rank_usage(signal, NULL, pod), uids[i],
				 (long long)usage[i]);
	}
}

static void test_policy_lazy_ranking_is_exact(void **state)
{
	static char uids[TREE_PODS][64];
	static int64_t usage[TREE_PODS];
	struct tree t;
	struct policy *policy;
	size_t n;

	(void)state;
	build_tree(&t, TREE_PODS, true);
	n = exact_ranking(&t, EV_SIGNAL_MEMORY_AVAILABLE, uids, usage, TREE_PODS);
	assert_int_equal(n, TREE_PODS);
	policy = open_policy(&t, "memory.available<1Pi");
	assert_int_equal(policy_evaluate(policy, 0), 0);
	assert_non_null(policy->decision.victim);
	assert_string_equal(policy->decision.victim->uid, uids[0]);
	assert_false(policy->decision.victim->working_set_unrefined);
	assert_int_equal(policy->decision.n_candidates, TREE_PODS);
	/* What the log and the event log show is exact... */
	assert_prefix_exact(policy, EV_SIGNAL_MEMORY_AVAILABLE, uids, usage, POLICY_RANK_SETTLED);
	/* ...and most of memory.stat was never read: the point of it. Here the cheap order is
	 * the exact one reversed, so the victim sits behind every pod of its priority class:
	 * about half the pods are read, the others stay upper bounds. */
	assert_true(count_unrefined(policy) >= TREE_PODS / 2 - POLICY_RANK_SETTLED);
	/* Settling further, one at a time (the act path), then everything (evictctl). */
	policy_rank_settle(policy, 40);
	assert_prefix_exact(policy, EV_SIGNAL_MEMORY_AVAILABLE, uids, usage, 41);
	policy_rank_settle(policy, SIZE_MAX);
	assert_int_equal(count_unrefined(policy), 0);
	assert_prefix_exact(policy, EV_SIGNAL_MEMORY_AVAILABLE, uids, usage, TREE_PODS);
	policy_unref(policy);
	fixture_rm_rf(t.root);
}

/* The cheap order already right (working set = memory.current): the victim costs one
 * memory.stat read per settled position, not one per pod. */
static void test_policy_reads_only_what_it_ranks(void **state)
{
	struct tree t;
	struct policy *policy;

	(void)state;
	build_tree(&t, TREE_PODS, true);
	for (size_t i = 0; i < TREE_PODS; i++)
		write_usage(t.root, i, (long long)(i + 1) * MI, 0, true);
	policy = open_policy(&t, "memory.available<1Pi");
	assert_int_equal(policy_evaluate(policy, 0), 0);
	assert_non_null(policy->decision.victim);
	assert_int_equal(count_unrefined(policy), TREE_PODS - POLICY_RANK_SETTLED);
	policy_unref(policy);
	fixture_rm_rf(t.root);
}

/* Adversarial: some pods' memory.stat garbage, negative or beyond memory.current (a working
 * set above memory.current would break the upper bound the lazy ranking rests on), one
 * memory.stat gone between the cheap read and the refinement, a pod's cgroup
 * removed between the refresh and the refinement; equal working sets everywhere. No loop
 * forever, the same victim as reading everything. */
static void test_policy_refine_failures_and_ties(void **state)
{
	static char uids[TREE_PODS][64];
	static int64_t usage[TREE_PODS];
	char dir[PATH_MAX], file[2 * PATH_MAX + 32];
	struct tree t;
	struct policy *policy;

	(void)state;
	build_tree(&t, TREE_PODS, true);
	for (size_t i = 0; i < TREE_PODS; i++)
		write_usage(t.root, i, 500 * MI, 100 * MI, true);	/* all tied */
	for (size_t i = TREE_PODS - 3; i < TREE_PODS; i++) {
		pod_dir(dir, sizeof(dir), i);
		snprintf(file, sizeof(file), "%s/memory.stat", dir);
		fixture_write(t.root, file, "%s", i % 3 == 0 ? "garbage\n" : i % 3 == 1 ?
			      "inactive_file -1073741824\n" : "inactive_file 9223372036854775807\n");
		if (i % 3 == 1) {	/* below every other working set, unless -1 GiB counted */
			snprintf(file, sizeof(file), "%s/memory.current", dir);
			fixture_write(t.root, file, "%lld\n", 100 * MI);
		}
	}
	policy = open_policy(&t, "memory.available<1Pi");
	/* Gone after the cheap read: the kept fds still read the old files. */
	pod_dir(dir, sizeof(dir), 0);
	snprintf(file, sizeof(file), "%s/%s/memory.stat", t.root, dir);
	assert_int_equal(unlink(file), 0);
	assert_int_equal(policy_evaluate(policy, 0), 0);
	exact_ranking(&t, EV_SIGNAL_MEMORY_AVAILABLE, uids, usage, TREE_PODS);
	assert_prefix_exact(policy, EV_SIGNAL_MEMORY_AVAILABLE, uids, usage, POLICY_RANK_SETTLED);
	policy_rank_settle(policy, 120);
	assert_prefix_exact(policy, EV_SIGNAL_MEMORY_AVAILABLE, uids, usage, 121);
	policy_rank_settle(policy, SIZE_MAX);
	assert_int_equal(count_unrefined(policy), 0);
	assert_prefix_exact(policy, EV_SIGNAL_MEMORY_AVAILABLE, uids, usage, TREE_PODS);
	policy_unref(policy);
	fixture_rm_rf(t.root);
}

/* No pids controller: the cheap read stands populated in for "at least one task"; ranking by
 * pid.available counts every pod's threads (as reading everything does). */
static void test_policy_without_pids_controller(void **state)
{
	static char uids[TREE_PODS][64];
	static int64_t usage[TREE_PODS];
	struct tree t;
	struct policy *policy;
	struct pod **list;
	size_t n;

	(void)state;
	build_tree(&t, TREE_PODS, false);
	policy = open_policy(&t, "memory.available<1Pi");
	assert_int_equal(policy_evaluate(policy, 0), 0);
	list = pods_list(policy->pods, &n);
	for (size_t i = 0, unrefined = 0; i < n; i++) {
		/* Refined together; whatever the ranking did not reach is still the stand-in. */
		assert_int_equal(list[i]->processes_unrefined, list[i]->working_set_unrefined);
		if (list[i]->processes_unrefined) {
			assert_int_equal(list[i]->processes, 1);
			unrefined++;
		}
		if (i == n - 1)
			assert_true(unrefined > 0);
	}
	policy_rank(policy, EV_SIGNAL_PID_AVAILABLE);
	exact_ranking(&t, EV_SIGNAL_PID_AVAILABLE, uids, usage, TREE_PODS);
	assert_prefix_exact(policy, EV_SIGNAL_PID_AVAILABLE, uids, usage, TREE_PODS);
	policy_unref(policy);
	fixture_rm_rf(t.root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resettle_matches_full_rank),
		cmocka_unit_test(test_resettle_edges),
		cmocka_unit_test(test_policy_lazy_ranking_is_exact),
		cmocka_unit_test(test_policy_reads_only_what_it_ranks),
		cmocka_unit_test(test_policy_refine_failures_and_ties),
		cmocka_unit_test(test_policy_without_pids_controller),
	};

	log_set_level(LOGLEVEL_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
