// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The memory pressure criterion acting (doc/DESIGN.md §1 "Memory pressure"), standalone, on a
 * fixture host (system.slice with three services) and an injected clock: a workload whose own
 * memory.pressure stays above the limit for the duration is the victim, whatever its size
 * (systemd-oomd kills within the limited unit); the node's pressure held picks by evictd's
 * ranking (the largest); a drop to the limit restarts the clock; an omitted unit is never
 * taken; after a kill, systemd-oomd's 15 s post-action delay; Kubernetes mode never applies it.
 */
#include "testutil.h"

#include "config/config.h"
#include "daemon/policy.h"
#include "pods/pods.h"
#include "signals/pressure_watch.h"
#include "sys/log.h"

#define CG "sys/fs/cgroup"
#define SEC 1000000000LL
#define MI (1024ll * 1024)

static int64_t fake_now;
static int64_t fake_clock(void)
{
	return fake_now;
}

static void psi(const char *root, const char *rel, int full_avg10)
{
	fixture_write(root, rel, "some avg10=%d.00 avg60=0.00 avg300=0.00 total=1000\n"
		      "full avg10=%d.00 avg60=0.00 avg300=0.00 total=500\n", full_avg10, full_avg10);
}

static void unit(const char *root, const char *name, long long bytes, int pressure)
{
	char rel[256];

	snprintf(rel, sizeof(rel), CG "/system.slice/%s/memory.current", name);
	fixture_write(root, rel, "%lld\n", bytes);
	snprintf(rel, sizeof(rel), CG "/system.slice/%s/memory.stat", name);
	fixture_write(root, rel, "anon %lld\nfile 0\nactive_file 0\ninactive_file 0\n", bytes);
	snprintf(rel, sizeof(rel), CG "/system.slice/%s/pids.current", name);
	fixture_write(root, rel, "3\n");
	snprintf(rel, sizeof(rel), CG "/system.slice/%s/cgroup.procs", name);
	fixture_write(root, rel, "1\n");
	snprintf(rel, sizeof(rel), CG "/system.slice/%s/cgroup.events", name);
	fixture_write(root, rel, "populated 1\nfrozen 0\n");
	snprintf(rel, sizeof(rel), CG "/system.slice/%s/memory.pressure", name);
	psi(root, rel, pressure);
}

static struct policy *open_host(char *root, const char *profile, const char *extra)
{
	static struct evictd_config config;
	char arg_root[PATH_MAX + 16], arg_profile[64];
	struct policy *policy;

	fixture_tmpdir(root, "pressureact");
	fixture_write(root, CG "/cgroup.controllers", "cpuset cpu io memory pids\n");
	fixture_write(root, CG "/memory.stat", "anon 1073741824\nfile 0\ninactive_file 0\nactive_file 0\n");
	fixture_write(root, CG "/system.slice/cgroup.events", "populated 1\nfrozen 0\n");
	fixture_write(root, CG "/system.slice/cgroup.procs", "%s", "");
	fixture_write(root, "proc/meminfo", "MemTotal: 16000000 kB\nMemFree: 8000000 kB\n"
		      "MemAvailable: 8000000 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n");
	fixture_write(root, "proc/loadavg", "0.00 0.00 0.00 1/400 100\n");
	fixture_write(root, "proc/sys/kernel/pid_max", "4096\n");
	fixture_write(root, "proc/sys/kernel/threads-max", "4096\n");
	fixture_write(root, "proc/self/cgroup", "0::/system.slice/evictd.service\n");
	psi(root, "proc/pressure/memory", 5);
	/* db is the largest: the ranking's first; hog is small and stalls in its memory.high. */
	unit(root, "db.service", 900 * MI, 0);
	unit(root, "hog.service", 100 * MI, 0);
	unit(root, "web.service", 300 * MI, 0);
	snprintf(arg_root, sizeof(arg_root), "--root=%s", root);
	snprintf(arg_profile, sizeof(arg_profile), "--profile=%s", profile);
	char *argv[] = { "evictd", "--dry-run", arg_root, arg_profile, "--memory-pressure-limit=full avg10 60%",
			 "--memory-pressure-duration=30s", "--kube-api=off", "--metrics-address=off",
			 "--event-log=off", "--no-psi", "--node-name=n", (char *)extra, NULL };
	int argc = (int)(sizeof(argv) / sizeof(argv[0])) - (extra ? 1 : 2);

	config_init_defaults(&config);
	assert_int_equal(config_parse_args(&config, argc, argv), 0);
	assert_int_equal(config_finalize(&config), 0);
	assert_int_equal(policy_new(&policy, &config, &(struct policy_deps){ .node_name = "n" }), 0);
	policy->now_ns = fake_clock;
	fake_now = 1000 * SEC;
	return policy;
}

static const char *victim_at(struct policy *policy, int64_t at_ns)
{
	fake_now = at_ns;
	assert_int_equal(policy_evaluate(policy, 0), 0);
	if (policy->decision.threshold_index < 0)
		return "none";
	assert_int_equal(policy_threshold(policy)->signal, EV_SIGNAL_MEMORY_PRESSURE);
	return policy->decision.victim ? policy->decision.victim->name : "no victim";
}

/* hog's own pressure at 80% from t0: nothing until 30 s, then hog, not db (the largest). */
static void test_workload_held_is_its_own_victim(void **state)
{
	char root[PATH_MAX];
	struct policy *policy = open_host(root, "server", NULL);
	int64_t t0 = fake_now;

	(void)state;
	psi(root, CG "/system.slice/hog.service/memory.pressure", 80);
	assert_string_equal(victim_at(policy, t0), "none");
	assert_true(policy->obs.signal[EV_SIGNAL_MEMORY_PRESSURE].present);
	assert_int_equal(policy->pressure->n_above, 1);
	assert_string_equal(victim_at(policy, t0 + 29 * SEC), "none");
	assert_string_equal(victim_at(policy, t0 + 30 * SEC), "hog.service");
	assert_int_equal(policy->obs.signal[EV_SIGNAL_MEMORY_PRESSURE].available, 10000 - 8000);
	assert_non_null(strstr(policy->decision.reason, "own memory.pressure"));
	policy_unref(policy);
	fixture_rm_rf(root);
}

/* At the limit resets the clock (oomd_pressure_above): 30 s from the next reading above. */
static void test_drop_to_limit_restarts_the_clock(void **state)
{
	char root[PATH_MAX];
	struct policy *policy = open_host(root, "server", NULL);
	int64_t t0 = fake_now;

	(void)state;
	psi(root, CG "/system.slice/hog.service/memory.pressure", 80);
	assert_string_equal(victim_at(policy, t0), "none");
	psi(root, CG "/system.slice/hog.service/memory.pressure", 60);
	assert_string_equal(victim_at(policy, t0 + 20 * SEC), "none");
	psi(root, CG "/system.slice/hog.service/memory.pressure", 90);
	assert_string_equal(victim_at(policy, t0 + 25 * SEC), "none");
	assert_string_equal(victim_at(policy, t0 + 54 * SEC), "none");
	assert_string_equal(victim_at(policy, t0 + 55 * SEC), "hog.service");
	policy_unref(policy);
	fixture_rm_rf(root);
}

/* The node's pressure held, no workload above: evictd's ranking, the largest (db). */
static void test_node_held_picks_by_ranking(void **state)
{
	char root[PATH_MAX];
	struct policy *policy = open_host(root, "server", NULL);
	int64_t t0 = fake_now;

	(void)state;
	psi(root, "proc/pressure/memory", 75);
	assert_string_equal(victim_at(policy, t0), "none");
	assert_string_equal(victim_at(policy, t0 + 30 * SEC), "db.service");
	assert_non_null(strstr(policy->decision.reason, "victim by ranking"));
	/* The post-action delay (oomd's POST_ACTION_DELAY_USEC): nothing for 15 s after a kill. */
	pressure_watch_acted(policy->pressure, t0 + 31 * SEC);
	assert_string_equal(victim_at(policy, t0 + 32 * SEC), "none");
	assert_string_equal(victim_at(policy, t0 + 45 * SEC), "none");
	assert_string_equal(victim_at(policy, t0 + 46 * SEC), "db.service");
	policy_unref(policy);
	fixture_rm_rf(root);
}

/* A unit that must never be killed (workloadPreferences never, systemd's omit) is not its own
 * victim; with the node calm nothing is. */
static void test_never_unit_not_taken(void **state)
{
	char root[PATH_MAX];
	struct policy *policy = open_host(root, "server", "--workload-preference=hog.service=never");
	int64_t t0 = fake_now;

	(void)state;
	psi(root, CG "/system.slice/hog.service/memory.pressure", 95);
	assert_string_equal(victim_at(policy, t0), "none");
	assert_string_equal(victim_at(policy, t0 + 60 * SEC), "none");
	policy_unref(policy);
	fixture_rm_rf(root);
}

/* Kubernetes mode keeps the kubelet's rules: the criterion is parsed but never a threshold. */
static void test_kubernetes_mode_never_applies(void **state)
{
	struct evictd_config *config = calloc(1, sizeof(*config));
	struct threshold out[EV_MAX_THRESHOLDS];
	size_t n;

	(void)state;
	assert_non_null(config);
	config_init_defaults(config);
	char *argv[] = { "evictd", "--profile=kubernetes", "--memory-pressure-limit=full avg10 60%",
			 "--kube-api=off", "--node-name=n", "--root=/nonexistent", NULL };
	assert_int_equal(config_parse_args(config, 6, argv), 0);
	assert_int_equal(config_finalize(config), 0);
	assert_true(config->memory_pressure.on);
	assert_false(config_memory_pressure_applies(config));
	n = config_effective_thresholds(config, FS_LAYOUT_SINGLE, out, EV_MAX_THRESHOLDS);
	for (size_t i = 0; i < n; i++)
		assert_int_not_equal(out[i].signal, EV_SIGNAL_MEMORY_PRESSURE);
	free(config);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_workload_held_is_its_own_victim),
		cmocka_unit_test(test_drop_to_limit_restarts_the_clock),
		cmocka_unit_test(test_node_held_picks_by_ranking),
		cmocka_unit_test(test_never_unit_not_taken),
		cmocka_unit_test(test_kubernetes_mode_never_applies),
	};

	log_set_level(LOGLEVEL_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
