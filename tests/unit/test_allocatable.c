// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* allocatableMemory.available (signals/allocatable.c) on fixture cgroup trees: the kubepods
 * cgroup's limit minus its working set, as the kubelet's "pods" container stats give it. */
#include "testutil.h"

#include <errno.h>

#include "signals/signals.h"

static int setup_tmp(void **state)
{
	char *root = malloc(PATH_MAX);

	if (!root)
		return -1;
	fixture_tmpdir(root, "allocatable");
	*state = root;
	return 0;
}

static int teardown_tmp(void **state)
{
	fixture_rm_rf(*state);
	free(*state);
	return 0;
}

static const struct observation *read_it(const char *root, const char *cgroup_root, int want_err)
{
	static struct observations obs;
	struct signal_source source = { .root = root, .kubelet_cgroup_root = cgroup_root };

	memset(&obs, 0, sizeof(obs));
	obs.signal[EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE].present = true;	/* must be cleared */
	assert_int_equal(signals_read_allocatable(&source, &obs), want_err);
	return &obs.signal[EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE];
}

static void test_v2_systemd_driver(void **state)
{
	const char *root = *state;
	const struct observation *got;

	fixture_write(root, "sys/fs/cgroup/cgroup.controllers", "cpu memory pids\n");
	fixture_write(root, "sys/fs/cgroup/kubepods.slice/memory.max", "1073741824\n");
	fixture_write(root, "sys/fs/cgroup/kubepods.slice/memory.current", "900000000\n");
	fixture_write(root, "sys/fs/cgroup/kubepods.slice/memory.stat",
		      "anon 800000000\nfile 100000000\ninactive_anon 0\nactive_file 40000000\n"
		      "inactive_file 60000000\n");
	got = read_it(root, NULL, 0);
	assert_true(got->present);
	/* working set 900000000 - 60000000; available = limit - working set. */
	assert_int_equal(got->capacity, 1073741824);
	assert_int_equal(got->available, 1073741824 - 840000000);
	assert_true(got->read_at_ns > 0);
}

static void test_v2_cgroupfs_driver_under_cgroup_root(void **state)
{
	const char *root = *state;
	const struct observation *got;

	fixture_write(root, "sys/fs/cgroup/cgroup.controllers", "memory\n");
	fixture_write(root, "sys/fs/cgroup/k8s/kubepods/memory.max", "2000\n");
	fixture_write(root, "sys/fs/cgroup/k8s/kubepods/memory.current", "2500\n");
	fixture_write(root, "sys/fs/cgroup/k8s/kubepods/memory.stat", "inactive_file 100\n");
	got = read_it(root, "/k8s", 0);
	assert_true(got->present);
	/* Over its limit: negative, as limit - working set is (the engine compares signed). */
	assert_int_equal(got->available, 2000 - 2400);
	/* Not found under the wrong cgroup root: no observation, no error. */
	got = read_it(root, "/elsewhere", 0);
	assert_false(got->present);
}

/* The kubelet has no observation without a limit (isMemoryUnlimited) or without the pods
 * container; neither is an error. */
static void test_no_limit_or_no_kubepods(void **state)
{
	const char *root = *state;

	fixture_write(root, "sys/fs/cgroup/cgroup.controllers", "memory\n");
	assert_false(read_it(root, NULL, 0)->present);
	fixture_write(root, "sys/fs/cgroup/kubepods.slice/memory.max", "max\n");
	fixture_write(root, "sys/fs/cgroup/kubepods.slice/memory.current", "5\n");
	fixture_write(root, "sys/fs/cgroup/kubepods.slice/memory.stat", "inactive_file 1\n");
	assert_false(read_it(root, NULL, 0)->present);
}

static void test_v1_memory_hierarchy(void **state)
{
	const char *root = *state;
	const struct observation *got;

	fixture_write(root, "sys/fs/cgroup/memory/memory.usage_in_bytes", "99999\n");
	fixture_write(root, "sys/fs/cgroup/memory/kubepods/memory.limit_in_bytes", "10000\n");
	fixture_write(root, "sys/fs/cgroup/memory/kubepods/memory.usage_in_bytes", "7000\n");
	fixture_write(root, "sys/fs/cgroup/memory/kubepods/memory.stat",
		      "inactive_file 1\ntotal_inactive_file 3000\n");
	got = read_it(root, NULL, 0);
	assert_true(got->present);
	assert_int_equal(got->available, 10000 - 4000);
	/* v1's "no limit" is a page-rounded 2^63-1. */
	fixture_write(root, "sys/fs/cgroup/memory/kubepods/memory.limit_in_bytes", "9223372036854771712\n");
	assert_false(read_it(root, NULL, 0)->present);
}

/* A working set below inactive_file is floored at 0 (cadvisor); broken files are errors
 * that leave the signal absent. */
static void test_floor_and_broken_files(void **state)
{
	const char *root = *state;
	const struct observation *got;

	fixture_write(root, "sys/fs/cgroup/cgroup.controllers", "memory\n");
	fixture_write(root, "sys/fs/cgroup/kubepods.slice/memory.max", "4096\n");
	fixture_write(root, "sys/fs/cgroup/kubepods.slice/memory.current", "10\n");
	fixture_write(root, "sys/fs/cgroup/kubepods.slice/memory.stat", "inactive_file 50\n");
	got = read_it(root, NULL, 0);
	assert_int_equal(got->available, 4096);
	fixture_write(root, "sys/fs/cgroup/kubepods.slice/memory.max", "lots\n");
	assert_false(read_it(root, NULL, -EINVAL)->present);
}

/* signals_read fills it with the memory group, and leaves it out when not asked. */
static void test_read_with_the_memory_group(void **state)
{
	const char *root = *state;
	struct signal_source source = { .root = root };
	struct observations obs = { 0 };

	fixture_write(root, "proc/meminfo", "MemTotal: 1000 kB\nMemAvailable: 500 kB\n");
	fixture_write(root, "sys/fs/cgroup/cgroup.controllers", "memory\n");
	fixture_write(root, "sys/fs/cgroup/memory.stat", "anon 1000\nfile 0\ninactive_file 0\n");
	fixture_write(root, "sys/fs/cgroup/kubepods.slice/memory.max", "4096\n");
	fixture_write(root, "sys/fs/cgroup/kubepods.slice/memory.current", "1096\n");
	fixture_write(root, "sys/fs/cgroup/kubepods.slice/memory.stat", "inactive_file 0\n");
	assert_int_equal(signals_read(&source, SIGNAL_MASK_MEMORY, &obs), 0);
	assert_true(obs.signal[EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE].present);
	assert_int_equal(obs.signal[EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE].available, 3000);
	memset(&obs, 0, sizeof(obs));
	assert_int_equal(signals_read(&source, SIGNAL_MASK(EV_SIGNAL_MEMORY_AVAILABLE), &obs), 0);
	assert_false(obs.signal[EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE].present);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_v2_systemd_driver, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_v2_cgroupfs_driver_under_cgroup_root, setup_tmp,
						teardown_tmp),
		cmocka_unit_test_setup_teardown(test_no_limit_or_no_kubepods, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_v1_memory_hierarchy, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_floor_and_broken_files, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_read_with_the_memory_group, setup_tmp, teardown_tmp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
