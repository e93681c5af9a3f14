// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A met threshold on a node without a single pod (user/daemon/policy.c): the pods table is
 * empty (its pointer array NULL), and ranking it must not hand NULL to qsort (UB even with a
 * count of 0; the -san build aborts on it). Every signal is ranked: pid.available and the
 * disk signals take the settled path (rank_settled), memory the lazy one.
 */
#include "testutil.h"

#include "config/config.h"
#include "daemon/policy.h"
#include "pods/pods.h"
#include "sys/log.h"

#define CG "sys/fs/cgroup"

static struct policy *open_empty(char *root, const char *threshold)
{
	static struct evictd_config config;
	char arg_root[PATH_MAX + 16], arg_pods[PATH_MAX + 32], arg_hard[128], pods_file[PATH_MAX + 16];
	struct policy *policy;

	fixture_tmpdir(root, "policyempty");
	fixture_write(root, CG "/cgroup.controllers", "cpuset cpu io memory pids\n");
	fixture_write(root, CG "/kubepods.slice/cgroup.events", "populated 0\nfrozen 0\n");
	fixture_write(root, CG "/kubepods.slice/memory.max", "max\n");
	fixture_write(root, CG "/memory.stat", "anon 0\nfile 0\ninactive_file 0\nactive_file 0\n");
	fixture_write(root, "proc/meminfo", "MemTotal: 16000000 kB\nMemFree: 8000000 kB\n"
		      "MemAvailable: 8000000 kB\nBuffers: 0 kB\nCached: 100 kB\n");
	fixture_write(root, "proc/loadavg", "0.00 0.00 0.00 1/4000 100\n");
	fixture_write(root, "proc/sys/kernel/pid_max", "4096\n");
	fixture_write(root, "proc/sys/kernel/threads-max", "4096\n");
	fixture_write(root, "proc/self/cgroup", "0::/system.slice/evictd.service\n");
	fixture_write(root, "var/lib/kubelet/.keep", "%s", "");
	fixture_write(root, "pods.json", "{\"kind\":\"PodList\",\"items\":[]}\n");
	snprintf(pods_file, sizeof(pods_file), "%s/pods.json", root);
	snprintf(arg_root, sizeof(arg_root), "--root=%s", root);
	snprintf(arg_pods, sizeof(arg_pods), "--pods-file=%s", pods_file);
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

/* pid.available met (3,999 tasks of 4,096 leave 97 < 1,000): the decision has no victim. */
static void test_pid_threshold_met_without_pods(void **state)
{
	char root[PATH_MAX];
	struct policy *policy;

	(void)state;
	policy = open_empty(root, "pid.available<1000");
	assert_int_equal(policy_evaluate(policy, 0), 0);
	assert_true(policy->decision.threshold_index >= 0);
	assert_true(policy->eval.met[policy->decision.threshold_index]);
	assert_int_equal(policy_threshold(policy)->signal, EV_SIGNAL_PID_AVAILABLE);
	assert_null(policy->decision.victim);
	assert_int_equal(policy->decision.n_candidates, 0);
	assert_int_equal(policy->n_candidates, 0);
	policy_unref(policy);
	fixture_rm_rf(root);
}

/* Every signal's ranking, directly, on the empty table; settling everything too. */
static void test_rank_every_signal_without_pods(void **state)
{
	char root[PATH_MAX];
	struct policy *policy;

	(void)state;
	policy = open_empty(root, "memory.available<1Pi");
	for (int s = 0; s < EV_SIGNAL_COUNT; s++) {
		policy_rank(policy, (enum ev_signal)s);
		assert_int_equal(policy->n_candidates, 0);
		policy_rank_settle(policy, SIZE_MAX);
		policy_rank_settle(policy, 0);
	}
	policy_unref(policy);
	fixture_rm_rf(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pid_threshold_met_without_pods),
		cmocka_unit_test(test_rank_every_signal_without_pods),
	};

	log_set_level(LOGLEVEL_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
