// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ranking kept near a memory threshold (user/daemon/policy.c prerank, doc/DESIGN.md
 * "Acting"): within 16 MiB of a memory threshold not met yet, a wake-up keeps a ranking at most
 * 100 ms old, and the crossing uses it instead of ranking anew; an older one is ranked anew, and
 * one that names no victim is ranked anew at once. Fixture cgroup trees, an injected clock.
 */
#include "testutil.h"

#include "config/config.h"
#include "daemon/policy.h"
#include "pods/pods.h"
#include "sys/log.h"

#define MS 1000000LL
#define MI (1024LL * 1024)
#define CG "sys/fs/cgroup"
#define BESTEFFORT CG "/kubepods.slice/kubepods-besteffort.slice"
#define MEM_TOTAL (16000000LL * 1024)
#define THRESHOLD (8LL * 1024 * MI)

static int64_t fake_now = 1000 * MS;

static int64_t fake_clock(void)
{
	return fake_now;
}

static const char *const uids[] = { "00000000-0000-4000-8000-00000000000a",
				    "00000000-0000-4000-8000-00000000000b" };

static void pod_file(const char *root, int i, const char *file, const char *fmt, long long v)
{
	char rel[PATH_MAX], uid[64];

	snprintf(uid, sizeof(uid), "%s", uids[i]);
	for (char *c = uid; *c; c++)
		if (*c == '-')
			*c = '_';
	snprintf(rel, sizeof(rel), BESTEFFORT "/kubepods-besteffort-pod%s.slice/%s", uid, file);
	fixture_write(root, rel, fmt, v);
}

/* Pod i uses `usage` bytes with `procs` tasks. */
static void set_pod(const char *root, int i, long long usage, long long procs)
{
	pod_file(root, i, "cgroup.events", "populated %lld\nfrozen 0\n", procs > 0);
	pod_file(root, i, "memory.current", "%lld\n", usage);
	pod_file(root, i, "memory.stat", "anon %lld\nfile 0\nactive_file 0\ninactive_file 0\n", usage);
	pod_file(root, i, "pids.current", "%lld\n", procs);
}

/* memory.available = MemTotal - the root's working set (anon here). */
static void set_available(const char *root, long long available)
{
	fixture_write(root, CG "/memory.stat", "anon %lld\nfile 0\ninactive_file 0\nactive_file 0\n",
		      MEM_TOTAL - available);
}

static struct policy *open_tree(char *root)
{
	static struct evictd_config config;
	char arg_root[PATH_MAX + 16], arg_pods[PATH_MAX + 32], pods_file[PATH_MAX + 16];
	struct policy *policy;

	fixture_tmpdir(root, "prerank");
	fixture_write(root, CG "/cgroup.controllers", "cpuset cpu io memory pids\n");
	fixture_write(root, "proc/meminfo", "MemTotal: 16000000 kB\nMemFree: 8000000 kB\n"
		      "MemAvailable: 8000000 kB\nBuffers: 0 kB\nCached: 100 kB\n");
	fixture_write(root, "proc/self/cgroup", "0::/system.slice/evictd.service\n");
	fixture_write(root, "proc/loadavg", "0.00 0.00 0.00 1/400 100\n");
	fixture_write(root, "proc/sys/kernel/pid_max", "4096\n");
	fixture_write(root, "proc/sys/kernel/threads-max", "4096\n");
	fixture_write(root, CG "/kubepods.slice/memory.max", "max\n");
	fixture_write(root, "var/lib/kubelet/.keep", "%s", "");
	fixture_write(root, "pods.json", "{\"kind\":\"PodList\",\"items\":["
		      "{\"metadata\":{\"uid\":\"%s\",\"name\":\"a\",\"namespace\":\"d\"},"
		      "\"spec\":{\"nodeName\":\"n\"},\"status\":{\"qosClass\":\"BestEffort\"}},"
		      "{\"metadata\":{\"uid\":\"%s\",\"name\":\"b\",\"namespace\":\"d\"},"
		      "\"spec\":{\"nodeName\":\"n\"},\"status\":{\"qosClass\":\"BestEffort\"}}]}\n",
		      uids[0], uids[1]);
	set_pod(root, 0, 300 * MI, 1);
	set_pod(root, 1, 100 * MI, 1);
	set_available(root, THRESHOLD + 512 * MI);
	snprintf(pods_file, sizeof(pods_file), "%s/pods.json", root);
	snprintf(arg_root, sizeof(arg_root), "--root=%s", root);
	snprintf(arg_pods, sizeof(arg_pods), "--pods-file=%s", pods_file);
	char *argv[] = { "evictd", "--once", "--dry-run", arg_root, arg_pods, "--node-name=n",
			 "--eviction-hard=memory.available<8Gi", "--oom-guard=off", "--kube-api=off",
			 "--metrics-address=off", "--event-log=off", "--no-psi", NULL };
	config_init_defaults(&config);
	assert_int_equal(config_parse_args(&config, (int)(sizeof(argv) / sizeof(argv[0])) - 1, argv), 0);
	assert_int_equal(config_finalize(&config), 0);
	assert_int_equal(policy_new(&policy, &config, &(struct policy_deps){ .node_name = "n" }), 0);
	assert_non_null(policy->pods);
	policy->now_ns = fake_clock;
	policy_evaluate(policy, 0);
	assert_int_equal(pods_meta_wait(policy->pods, 10ll * 1000000000), 0);
	/* Far from the threshold: no ranking is kept. */
	assert_int_equal(policy_evaluate(policy, SIGNAL_MASK_MEMORY), 0);
	assert_int_equal(policy->decision.threshold_index, -1);
	assert_null(policy->candidates);
	return policy;
}

/* 8 MiB above the threshold: a wake-up ranks (a is first). Then b grows past a. */
static void near_then_b_grows(struct policy *policy, const char *root)
{
	set_available(root, THRESHOLD + 8 * MI);
	assert_int_equal(policy_evaluate(policy, SIGNAL_MASK_MEMORY), 0);
	assert_int_equal(policy->decision.threshold_index, -1);
	assert_non_null(policy->candidates);
	assert_true(policy->n_candidates == 2);
	assert_string_equal(policy->candidates[0]->name, "a");
	set_pod(root, 1, 900 * MI, 1);
}

static const char *cross(struct policy *policy, const char *root)
{
	set_available(root, THRESHOLD - 1 * MI);
	assert_int_equal(policy_evaluate(policy, SIGNAL_MASK_MEMORY), 0);
	assert_true(policy->decision.threshold_index >= 0);
	assert_non_null(policy->decision.victim);
	return policy->decision.victim->name;
}

/* Crossing 50 ms later: the kept ranking decides (no pods refresh), naming a. */
static void test_fresh_prerank_is_used(void **state)
{
	char root[PATH_MAX];
	struct policy *policy = open_tree(root);

	(void)state;
	near_then_b_grows(policy, root);
	fake_now += 50 * MS;
	assert_string_equal(cross(policy, root), "a");
	assert_true(policy->preranked);
	/* Used once: the next decision ranks anew and sees b. */
	fake_now += 1 * MS;
	assert_string_equal(cross(policy, root), "b");
	assert_false(policy->preranked);
	policy_unref(policy);
	fixture_rm_rf(root);
}

/* Crossing 150 ms later: the kept ranking is too old; ranked anew, b is the victim. */
static void test_stale_prerank_is_reranked(void **state)
{
	char root[PATH_MAX];
	struct policy *policy = open_tree(root);

	(void)state;
	near_then_b_grows(policy, root);
	fake_now += POLICY_PRERANK_MAX_AGE_NS + 50 * MS;
	assert_string_equal(cross(policy, root), "b");
	assert_false(policy->preranked);
	policy_unref(policy);
	fixture_rm_rf(root);
}

/* Near wake-ups keep it fresh: one 90 ms later re-ranks it once it is 100 ms old. */
static void test_prerank_kept_fresh(void **state)
{
	char root[PATH_MAX];
	struct policy *policy = open_tree(root);

	(void)state;
	near_then_b_grows(policy, root);
	fake_now += 90 * MS;
	assert_int_equal(policy_evaluate(policy, SIGNAL_MASK_MEMORY), 0);
	assert_string_equal(policy->candidates[0]->name, "a");	/* 90 ms: kept */
	fake_now += 20 * MS;
	assert_int_equal(policy_evaluate(policy, SIGNAL_MASK_MEMORY), 0);
	assert_string_equal(policy->candidates[0]->name, "b");	/* 110 ms: ranked anew */
	fake_now += 50 * MS;
	assert_string_equal(cross(policy, root), "b");
	assert_true(policy->preranked);
	policy_unref(policy);
	fixture_rm_rf(root);
}

/* The kept ranking names no victim (both pods had no task then): ranked anew at once. */
static void test_prerank_without_victim_is_reranked(void **state)
{
	char root[PATH_MAX];
	struct policy *policy = open_tree(root);

	(void)state;
	set_pod(root, 0, 300 * MI, 0);
	set_pod(root, 1, 100 * MI, 0);
	set_available(root, THRESHOLD + 8 * MI);
	assert_int_equal(policy_evaluate(policy, SIGNAL_MASK_MEMORY), 0);
	assert_non_null(policy->candidates);
	set_pod(root, 1, 100 * MI, 2);
	fake_now += 10 * MS;
	assert_string_equal(cross(policy, root), "b");
	assert_false(policy->preranked);
	policy_unref(policy);
	fixture_rm_rf(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fresh_prerank_is_used),
		cmocka_unit_test(test_stale_prerank_is_reranked),
		cmocka_unit_test(test_prerank_kept_fresh),
		cmocka_unit_test(test_prerank_without_victim_is_reranked),
	};

	log_set_level(LOGLEVEL_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
