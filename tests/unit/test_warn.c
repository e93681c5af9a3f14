// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The pre-kill warning (doc/DESIGN.md §9 "Warnings", daemon/warn.c) on a fixture host with an
 * injected clock: below --warn-memory-available it is due at once and then at most once per
 * --warn-interval; above it, while swap still has room (the memory thresholds' own gate), or
 * once a threshold acts, it is not.
 */
#include "testutil.h"

#include "config/config.h"
#include "daemon/policy.h"
#include "daemon/warn.h"
#include "sys/log.h"

#define CG "sys/fs/cgroup"
#define SEC 1000000000LL

/* MemTotal 16000000 kB; the working set is the root's anon: memory.available = total - anon. */
static void memory(const char *root, long long anon_mib, long long swap_free_kb)
{
	fixture_write(root, CG "/memory.stat", "anon %lld\nfile 0\ninactive_file 0\nactive_file 0\n",
		      anon_mib << 20);
	fixture_write(root, "proc/meminfo", "MemTotal: 16000000 kB\nMemFree: 8000000 kB\n"
		      "MemAvailable: 8000000 kB\nSwapTotal: 4000000 kB\nSwapFree: %lld kB\n", swap_free_kb);
}

static struct policy *open_host(char *root)
{
	static struct evictd_config config;
	char arg_root[PATH_MAX + 16];
	struct policy *policy;

	fixture_tmpdir(root, "warn");
	fixture_write(root, CG "/cgroup.controllers", "cpuset cpu io memory pids\n");
	fixture_write(root, CG "/system.slice/cgroup.events", "populated 1\nfrozen 0\n");
	fixture_write(root, CG "/system.slice/cgroup.procs", "%s", "");
	fixture_write(root, CG "/system.slice/app.service/cgroup.events", "populated 1\nfrozen 0\n");
	fixture_write(root, CG "/system.slice/app.service/cgroup.procs", "1\n");
	fixture_write(root, CG "/system.slice/app.service/memory.current", "104857600\n");
	fixture_write(root, "proc/loadavg", "0.00 0.00 0.00 1/400 100\n");
	fixture_write(root, "proc/sys/kernel/pid_max", "4096\n");
	fixture_write(root, "proc/sys/kernel/threads-max", "4096\n");
	fixture_write(root, "proc/self/cgroup", "0::/system.slice/evictd.service\n");
	memory(root, 1024, 0);
	snprintf(arg_root, sizeof(arg_root), "--root=%s", root);
	char *argv[] = { "evictd", "--dry-run", arg_root, "--profile=server", "--warn-memory-available=2Gi",
			 "--warn-interval=60s", "--oom-guard=off", "--kube-api=off", "--metrics-address=off",
			 "--event-log=off", "--no-psi", NULL };

	config_init_defaults(&config);
	assert_int_equal(config_parse_args(&config, (int)(sizeof(argv) / sizeof(argv[0])) - 1, argv), 0);
	assert_int_equal(config_finalize(&config), 0);
	assert_int_equal(policy_new(&policy, &config, &(struct policy_deps){ .node_name = "n" }), 0);
	return policy;
}

static struct warn_verdict at(struct policy *policy, struct warn_state *state, int64_t now)
{
	assert_int_equal(policy_evaluate(policy, 0), 0);
	return warn_evaluate(policy, state, now);
}

static void test_warn_rate_limited(void **state)
{
	char root[PATH_MAX];
	struct policy *policy = open_host(root);
	struct warn_state warn;
	int64_t t0 = 100 * SEC;

	(void)state;
	warn_state_init(&warn);
	/* 15.26 GiB - 1 GiB: far above 2 GiB. */
	assert_false(at(policy, &warn, t0).below);
	/* 15.26 GiB - 14 GiB = 1.26 GiB < 2 GiB, swap short (no free swap), no threshold acts. */
	memory(root, 14 * 1024, 0);
	struct warn_verdict v = at(policy, &warn, t0 + SEC);
	assert_true(v.below);
	assert_true(v.due);
	assert_int_equal(v.level, 2LL << 30);
	assert_true(v.observed < v.level);
	assert_true(policy->decision.threshold_index < 0);
	assert_false(at(policy, &warn, t0 + 2 * SEC).due);
	assert_false(at(policy, &warn, t0 + 60 * SEC).due);
	assert_true(at(policy, &warn, t0 + 61 * SEC).due);
	/* Swap with room: the memory thresholds wait for it, so does the warning. */
	memory(root, 14 * 1024, 3000000);
	assert_false(at(policy, &warn, t0 + 200 * SEC).below);
	/* Past memory.available<100Mi: the threshold acts, the warning is over. */
	memory(root, 15 * 1024 + 200, 0);
	v = at(policy, &warn, t0 + 300 * SEC);
	assert_true(policy->decision.threshold_index >= 0);
	assert_false(v.below);
	assert_false(v.due);
	policy_unref(policy);
	fixture_rm_rf(root);
}

static void test_warn_off_by_default(void **state)
{
	struct evictd_config *config = calloc(1, sizeof(*config));

	(void)state;
	assert_non_null(config);
	config_init_defaults(config);
	assert_false(config->warn_memory_available.on);
	assert_int_equal(config->warn_interval_ns, 60 * SEC);
	assert_int_equal(config_apply_flag(config, "warn-memory-available", "15%"), 0);
	assert_true(config->warn_memory_available.on);
	assert_true(config->warn_memory_available.value.is_percentage);
	assert_int_not_equal(config_apply_flag(config, "warn-memory-available", "lots"), 0);
	/* Seeing ahead is off by default too (doc/DESIGN.md "Seeing ahead"). */
	assert_int_equal(config->warn_ahead_ns, 0);
	assert_int_equal(config->act_ahead_ns, 0);
	assert_int_equal(config_apply_flag(config, "act-ahead", "2s"), 0);
	assert_int_equal(config->act_ahead_ns, 2 * SEC);
	free(config);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_warn_rate_limited),
		cmocka_unit_test(test_warn_off_by_default),
	};

	log_set_level(LOGLEVEL_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
