// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The lean wake-up (doc/DESIGN.md "Data flow", 2. Decide): a wake-up reads only the signals a
 * threshold is set on, MemTotal comes from the last meminfo read unless the OOM guard needs
 * MemAvailable anyway, and a missing kubepods cgroup is probed again at most once a second
 * (an injected clock). Fixture trees; what was read is told by what the fixtures changed.
 */
#include "testutil.h"

#include "config/config.h"
#include "daemon/policy.h"
#include "signals/signals.h"
#include "sys/log.h"

#define MS 1000000LL
#define CG "sys/fs/cgroup"

static int64_t fake_now = 1000 * MS;

static int64_t fake_clock(void)
{
	return fake_now;
}

static void node(const char *root, long long mem_total_kb, long long anon)
{
	fixture_write(root, "proc/meminfo", "MemTotal: %lld kB\nMemFree: 1000 kB\nMemAvailable: 4000000 kB\n",
		      mem_total_kb);
	fixture_write(root, CG "/memory.stat", "anon %lld\nfile 0\ninactive_file 0\nactive_file 0\n", anon);
}

/* memory.available alone takes MemTotal from the last meminfo read; with the guard, or all
 * signals, meminfo is read (and the cache refreshed). */
static void test_mem_total_cached_without_the_guard(void **state)
{
	struct observations obs = { 0 };
	char root[PATH_MAX];
	struct signal_source source = { 0 };
	const uint32_t memory = SIGNAL_MASK(EV_SIGNAL_MEMORY_AVAILABLE);

	(void)state;
	fixture_tmpdir(root, "lean");
	source.root = root;
	fixture_write(root, CG "/cgroup.controllers", "cpu memory pids\n");
	node(root, 16000000, 1000000000);
	assert_int_equal(signals_read(&source, memory | SIGNAL_MASK(EV_SIGNAL_OOM_GUARD), &obs), 0);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].capacity, 16000000LL * 1024);

	node(root, 8000000, 2000000000);	/* MemTotal as after a hot-unplug; more used */
	assert_int_equal(signals_read(&source, memory, &obs), 0);
	/* The working set is read again, MemTotal is not; the guard is left as it was. */
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].capacity, 16000000LL * 1024);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available, 16000000LL * 1024 - 2000000000);
	assert_true(obs.signal[EV_SIGNAL_OOM_GUARD].present);
	assert_int_equal(obs.signal[EV_SIGNAL_OOM_GUARD].capacity, 16000000LL * 1024);

	assert_int_equal(signals_read(&source, memory | SIGNAL_MASK(EV_SIGNAL_OOM_GUARD), &obs), 0);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].capacity, 8000000LL * 1024);
	assert_int_equal(obs.signal[EV_SIGNAL_OOM_GUARD].capacity, 8000000LL * 1024);
	fixture_rm_rf(root);
}

/* No kubepods cgroup yet: probed again at most once a second; one found is kept until a read
 * under it fails. */
static void test_missing_kubepods_probed_once_a_second(void **state)
{
	struct observations obs = { 0 };
	char root[PATH_MAX];
	struct signal_source source = { .now_ns = fake_clock };

	(void)state;
	fixture_tmpdir(root, "lean");
	source.root = root;
	fixture_write(root, CG "/cgroup.controllers", "cpu memory pids\n");
	assert_int_equal(signals_read_allocatable(&source, &obs), 0);
	assert_false(obs.signal[EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE].present);
	fixture_write(root, CG "/kubepods.slice/memory.max", "1000000\n");
	fixture_write(root, CG "/kubepods.slice/memory.current", "400000\n");
	fixture_write(root, CG "/kubepods.slice/memory.stat", "inactive_file 0\n");
	fake_now += 500 * MS;
	assert_int_equal(signals_read_allocatable(&source, &obs), 0);
	assert_false(obs.signal[EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE].present);
	fake_now += 500 * MS;
	assert_int_equal(signals_read_allocatable(&source, &obs), 0);
	assert_true(obs.signal[EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE].present);
	assert_int_equal(obs.signal[EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE].available, 600000);
	/* Gone (a kubelet restarted with another driver): the failed read forgets it. */
	fixture_rm_rf(root);
	fixture_write(root, CG "/cgroup.controllers", "cpu memory pids\n");
	assert_true(signals_read_allocatable(&source, &obs) < 0);
	fixture_write(root, CG "/kubepods/memory.max", "2000000\n");
	fixture_write(root, CG "/kubepods/memory.current", "500000\n");
	fixture_write(root, CG "/kubepods/memory.stat", "inactive_file 0\n");
	assert_int_equal(signals_read_allocatable(&source, &obs), 0);
	assert_int_equal(obs.signal[EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE].available, 1500000);
	fixture_rm_rf(root);
}

/* A policy with a pid threshold only: a memory wake-up reads nothing (the memory observation
 * stands); a housekeeping tick (mask 0) reads everything. */
static void test_unthresholded_signals_not_read(void **state)
{
	static struct evictd_config config;
	char root[PATH_MAX], arg_root[PATH_MAX + 16];
	struct policy *policy;
	int64_t read_at;

	(void)state;
	fixture_tmpdir(root, "lean");
	fixture_write(root, CG "/cgroup.controllers", "cpu memory pids\n");
	node(root, 16000000, 1000000000);
	fixture_write(root, "proc/loadavg", "0.00 0.00 0.00 1/400 100\n");
	fixture_write(root, "proc/sys/kernel/pid_max", "4096\n");
	fixture_write(root, "proc/sys/kernel/threads-max", "4096\n");
	fixture_write(root, "proc/self/cgroup", "0::/system.slice/evictd.service\n");
	fixture_write(root, "var/lib/kubelet/.keep", "%s", "");
	snprintf(arg_root, sizeof(arg_root), "--root=%s", root);
	char *argv[] = { "evictd", "--once", "--dry-run", arg_root, "--eviction-hard=pid.available<10",
			 "--oom-guard=off", "--kube-api=off", "--metrics-address=off", "--event-log=off",
			 "--no-psi", "--workload-root=/sys/fs/cgroup/w", NULL };
	fixture_write(root, CG "/w/cgroup.procs", "%s", "");
	fixture_write(root, CG "/w/cgroup.events", "populated 0\nfrozen 0\n");
	config_init_defaults(&config);
	assert_int_equal(config_parse_args(&config, (int)(sizeof(argv) / sizeof(argv[0])) - 1, argv), 0);
	assert_int_equal(config_finalize(&config), 0);
	assert_int_equal(policy_new(&policy, &config, &(struct policy_deps){ .node_name = "n" }), 0);
	assert_int_equal(policy_evaluate(policy, 0), 0);
	read_at = policy->obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].read_at_ns;
	assert_true(read_at > 0);

	node(root, 16000000, 3000000000);
	assert_int_equal(policy_evaluate(policy, SIGNAL_MASK_MEMORY), 0);
	assert_int_equal(policy->obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].read_at_ns, read_at);
	assert_int_equal(policy->obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available,
			 16000000LL * 1024 - 1000000000);
	/* The pid wake-up reads pids. */
	fixture_write(root, "proc/loadavg", "0.00 0.00 0.00 1/4090 100\n");
	assert_int_equal(policy_evaluate(policy, SIGNAL_MASK_PID), 0);
	assert_int_equal(policy->obs.signal[EV_SIGNAL_PID_AVAILABLE].available, 6);
	assert_true(policy->decision.threshold_index >= 0);
	/* The housekeeping tick reads memory too. */
	assert_int_equal(policy_evaluate(policy, 0), 0);
	assert_int_equal(policy->obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available,
			 16000000LL * 1024 - 3000000000LL);
	policy_unref(policy);
	fixture_rm_rf(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mem_total_cached_without_the_guard),
		cmocka_unit_test(test_missing_kubepods_probed_once_a_second),
		cmocka_unit_test(test_unthresholded_signals_not_read),
	};

	log_set_level(LOGLEVEL_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
