// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The refault-aware memory signal (--memory-refault-aware, user/signals/memory.c; kubernetes
 * issue 43916): active file cache counts as reclaimable unless the file cache is refaulting
 * (more than 1% of it read back in per second, workingset_refault_file), exported beside the
 * kubelet's value. Under MGLRU the kubelet's value unless refaulting, then all of the file
 * cache. The verdict's boundaries, signals_read() on a fixture root whose memory.stat changes
 * between two reads a window apart, and on roots captured from a 6.12 guest with MGLRU on.
 * Numbers worked out in the comments.
 */
#include "testutil.h"

#include <stdint.h>

#include "signals/signals.h"
#include "sys/log.h"

#define MI (1024LL * 1024)
#define SEC 1000000000LL

static void test_refault_verdict_boundaries(void **state)
{
	/* 800 MiB of file cache: 1% = 8 MiB per second = 2048 pages of 4 KiB. */
	struct refault_state_view view = { .then_ns = 0, .now_ns = SEC, .refault_pages_then = 1000,
					   .refault_pages_now = 1000 + 2048, .page_size = 4096,
					   .file_cache_bytes = 800 * MI };

	/* Exactly 1% a second: not more than 1%. */
	assert_false(signals_file_cache_refaulting(&view));
	/* One page more: refaulting. */
	view.refault_pages_now++;
	assert_true(signals_file_cache_refaulting(&view));
	/* The same pages over two seconds: half the rate. */
	view.now_ns = 2 * SEC;
	assert_false(signals_file_cache_refaulting(&view));
	/* No time passed, no cache, or the counter going back: no verdict of refaulting. */
	view.now_ns = 0;
	assert_false(signals_file_cache_refaulting(&view));
	view.now_ns = SEC;
	view.file_cache_bytes = 0;
	assert_false(signals_file_cache_refaulting(&view));
	view.file_cache_bytes = 800 * MI;
	view.refault_pages_now = 10;
	assert_false(signals_file_cache_refaulting(&view));
	/* Huge counters do not overflow the comparison. */
	view.refault_pages_then = 0;
	view.refault_pages_now = INT64_MAX / 4096;
	view.file_cache_bytes = INT64_MAX;
	assert_true(signals_file_cache_refaulting(&view));
}

static int setup_tmp(void **state)
{
	char *root = malloc(PATH_MAX);

	if (!root)
		return -1;
	fixture_tmpdir(root, "refault");
	*state = root;
	return 0;
}

static int teardown_tmp(void **state)
{
	fixture_rm_rf(*state);
	free(*state);
	return 0;
}

/* 1 GiB node: anon 100 MiB, file 800 MiB (inactive 300, active 500). */
static void write_node(const char *root, long long refaulted_pages)
{
	fixture_write(root, "proc/meminfo",
		      "MemTotal:       1048576 kB\nMemFree:         123456 kB\n"
		      "MemAvailable:   600000 kB\n");
	fixture_write(root, "sys/fs/cgroup/cgroup.controllers", "memory pids\n");
	fixture_write(root, "sys/fs/cgroup/memory.stat",
		      "anon %lld\nfile %lld\nkernel 0\ninactive_anon 0\nactive_anon %lld\n"
		      "inactive_file %lld\nactive_file %lld\nworkingset_refault_anon 0\n"
		      "workingset_refault_file %lld\nworkingset_activate_file 0\n",
		      100 * MI, 800 * MI, 100 * MI, 300 * MI, 500 * MI, refaulted_pages);
}

/* The injected monotonic clock (struct signal_source.now_ns): windows to the nanosecond, not
 * real sleeps whose length a busy machine stretches. */
static int64_t fake_now = 1000 * SEC;

static int64_t fake_now_ns(void)
{
	return fake_now;
}

static void sleep_ns(long long ns)
{
	fake_now += ns;
}

static void test_refault_aware_signal(void **state)
{
	const char *root = *state;
	struct signal_source kubelet = { .root = root, .now_ns = fake_now_ns },
			     aware = { .root = root, .memory_refault_aware = true, .now_ns = fake_now_ns };
	struct observations obs = { 0 };
	long page = sysconf(_SC_PAGESIZE);
	/* 1% of 800 MiB a second, in pages, over a 1.2 s window: the rate threshold. */
	long long threshold_pages = 8 * MI * 12 / 10 / page;

	/* Kubelet: 1 GiB - (900 MiB - 300 MiB inactive) = 424 MiB. Refault-aware, cache not
	 * refaulting: the 500 MiB active file is free too: 924 MiB. */
	write_node(root, 1000);
	assert_int_equal(signals_read(&kubelet, SIGNAL_MASK_MEMORY, &obs), 0);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available, 424 * MI);
	assert_int_equal(obs.memory_available_kubelet_bytes, 424 * MI);
	assert_int_equal(obs.memory_available_refault_aware_bytes, 924 * MI);
	assert_false(obs.file_cache_refaulting);
	assert_int_equal(signals_read(&aware, SIGNAL_MASK_MEMORY, &obs), 0);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available, 924 * MI);
	assert_int_equal(obs.memory_available_kubelet_bytes, 424 * MI);

	/* Clean cache nobody reads again: a few refaults in a window stay under 1%/s. */
	sleep_ns(12 * SEC / 10);
	write_node(root, 1000 + threshold_pages / 4);
	assert_int_equal(signals_read(&aware, SIGNAL_MASK_MEMORY, &obs), 0);
	assert_false(obs.file_cache_refaulting);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available, 924 * MI);

	/* Thrashing: twice the threshold's pages back in the next window: the active cache is
	 * the working set, as the kubelet counts it. */
	sleep_ns(12 * SEC / 10);
	write_node(root, 1000 + threshold_pages / 4 + 2 * threshold_pages);
	assert_int_equal(signals_read(&aware, SIGNAL_MASK_MEMORY, &obs), 0);
	assert_true(obs.file_cache_refaulting);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available, 424 * MI);
	assert_int_equal(obs.memory_available_refault_aware_bytes, 424 * MI);

	/* Within a window the last verdict stands; a quiet window ends it. */
	write_node(root, 1000 + threshold_pages / 4 + 2 * threshold_pages);
	assert_int_equal(signals_read(&aware, SIGNAL_MASK_MEMORY, &obs), 0);
	assert_true(obs.file_cache_refaulting);
	sleep_ns(12 * SEC / 10);
	assert_int_equal(signals_read(&aware, SIGNAL_MASK_MEMORY, &obs), 0);
	assert_false(obs.file_cache_refaulting);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available, 924 * MI);
}

/* A kernel without the refault counters (< 5.9): the kubelet's value in both modes. */
static void test_refault_counters_missing(void **state)
{
	const char *root = *state;
	struct signal_source aware = { .root = root, .memory_refault_aware = true, .now_ns = fake_now_ns };
	struct observations obs = { 0 };

	fixture_write(root, "proc/meminfo", "MemTotal:       1048576 kB\nMemAvailable:   600000 kB\n");
	fixture_write(root, "sys/fs/cgroup/cgroup.controllers", "memory\n");
	fixture_write(root, "sys/fs/cgroup/memory.stat", "anon %lld\nfile %lld\ninactive_file %lld\n",
		      100 * MI, 800 * MI, 300 * MI);
	assert_int_equal(signals_read(&aware, SIGNAL_MASK_MEMORY, &obs), 0);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available, 424 * MI);
	assert_int_equal(obs.memory_available_refault_aware_bytes, -1);
}

/*
 * The rule follows the LRU (DESIGN.md §1, "Refault-aware memory.available under MGLRU").
 * MGLRU on (Debian 6.12's default 0x0007, or the core bit alone): active_file is the two
 * youngest generations (used recently), so while the cache does not refault the refault-aware
 * value is the kubelet's. On a kernel before 6.5 MGLRU's refault counter misses refaults:
 * refused (the kubelet's value, none exported). Off (0x0000), walks without the core bit, or
 * absent (no CONFIG_LRU_GEN): classic LRU, active file cache counted as free. Each case has its
 * own root: detection is once per root (one boot).
 */
static void check_lru_case(const char *root, const char *enabled, const char *release,
			   int64_t want_available, int64_t want_aware)
{
	struct signal_source aware = { .root = root, .memory_refault_aware = true, .now_ns = fake_now_ns };
	struct observations obs = { 0 };

	write_node(root, 1000);
	if (enabled)
		fixture_write(root, "sys/kernel/mm/lru_gen/enabled", "%s", enabled);
	if (release)
		fixture_write(root, "proc/sys/kernel/osrelease", "%s\n", release);
	assert_int_equal(signals_read(&aware, SIGNAL_MASK_MEMORY, &obs), 0);
	assert_int_equal(obs.memory_available_kubelet_bytes, 424 * MI);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available, want_available);
	assert_int_equal(obs.memory_available_refault_aware_bytes, want_aware);
	assert_false(obs.file_cache_refaulting);
}

static void test_refault_aware_rule_per_lru(void **state)
{
	const char *base = *state;
	char root[PATH_MAX];

	snprintf(root, sizeof(root), "%s/mglru-on", base);
	check_lru_case(root, "0x0007\n", "6.12.57+deb13-amd64", 424 * MI, 424 * MI);
	snprintf(root, sizeof(root), "%s/mglru-core-only", base);
	check_lru_case(root, "0x0001\n", "6.5.0", 424 * MI, 424 * MI);
	/* MGLRU before 6.5, or no release to say: refused, the kubelet's value. */
	snprintf(root, sizeof(root), "%s/mglru-6.1", base);
	check_lru_case(root, "0x0007\n", "6.1.0-41-amd64", 424 * MI, -1);
	snprintf(root, sizeof(root), "%s/mglru-6.4", base);
	check_lru_case(root, "0x0007\n", "6.4.16", 424 * MI, -1);
	snprintf(root, sizeof(root), "%s/mglru-no-release", base);
	check_lru_case(root, "0x0007\n", NULL, 424 * MI, -1);
	/* MGLRU off on 6.1: classic, whatever the release. */
	snprintf(root, sizeof(root), "%s/mglru-off", base);
	check_lru_case(root, "0x0000\n", "6.1.0-41-amd64", 924 * MI, 924 * MI);
	/* Walks on, core off (the core bit is the switch, mm/vmscan.c enabled_store()). */
	snprintf(root, sizeof(root), "%s/mglru-walk-only", base);
	check_lru_case(root, "0x0006\n", "6.12.0", 924 * MI, 924 * MI);
	snprintf(root, sizeof(root), "%s/no-lru-gen", base);
	check_lru_case(root, NULL, NULL, 924 * MI, 924 * MI);
}

/* The release gate on its own: 6.5 and later count every refault. */
static void test_mglru_counts_refaults(void **state)
{
	const char *root = *state;
	bool counts = true;

	assert_int_equal(signals_mglru_counts_refaults(root, &counts), -ENOENT);
	assert_false(counts);
	fixture_write(root, "proc/sys/kernel/osrelease", "6.5.0-rc1\n");
	assert_int_equal(signals_mglru_counts_refaults(root, &counts), 0);
	assert_true(counts);
	fixture_write(root, "proc/sys/kernel/osrelease", "7.0.0\n");
	assert_int_equal(signals_mglru_counts_refaults(root, &counts), 0);
	assert_true(counts);
	fixture_write(root, "proc/sys/kernel/osrelease", "6.4.99\n");
	assert_int_equal(signals_mglru_counts_refaults(root, &counts), 0);
	assert_false(counts);
	fixture_write(root, "proc/sys/kernel/osrelease", "5.19.17\n");
	assert_int_equal(signals_mglru_counts_refaults(root, &counts), 0);
	assert_false(counts);
	fixture_write(root, "proc/sys/kernel/osrelease", "linux\n");
	assert_int_equal(signals_mglru_counts_refaults(root, &counts), -EINVAL);
	assert_false(counts);
}

/* The pure rule on its four corners: 100 MiB anon, 800 MiB file, 300 inactive, 500 active. */
static void test_refault_aware_working_set(void **state)
{
	struct refault_aware_view view = { .usage = 900 * MI, .working_set = 600 * MI,
					   .active_file = 500 * MI };

	assert_int_equal(signals_refault_aware_working_set(&view), 100 * MI);
	view.refaulting = true;
	assert_int_equal(signals_refault_aware_working_set(&view), 600 * MI);
	view.mglru = true;
	assert_int_equal(signals_refault_aware_working_set(&view), 900 * MI);
	view.refaulting = false;
	assert_int_equal(signals_refault_aware_working_set(&view), 600 * MI);
	/* Classic, active_file above the working set (a racy read): floored at 0. */
	view = (struct refault_aware_view){ .usage = 10 * MI, .working_set = 10 * MI,
					    .active_file = 20 * MI };
	assert_int_equal(signals_refault_aware_working_set(&view), 0);
}

/*
 * Captured on the 6.12 guest, MGLRU on (tests/fixtures/node-mglru-6.12/README), one root per
 * moment. Every number below is read from those files.
 *   clean:   MemTotal 990504 kB; anon 327680, file 451485696, inactive_file 419516416,
 *            active_file 0, workingset_refault_file 18.
 *   thrash1: workingset_refault_file 107122.
 *   thrash2: MemTotal 990504 kB; anon 450560, file 876400640, inactive_file 844337152,
 *            workingset_refault_file 216842 (2 s after thrash1).
 */
#define MGLRU_FIX FIXTURES_DIR "/node-mglru-6.12/"
#define CAPTURED_TOTAL (990504LL * 1024)

static void test_refault_aware_mglru_captured(void **state)
{
	struct signal_source clean = { .root = MGLRU_FIX "clean", .memory_refault_aware = true,
				       .now_ns = fake_now_ns },
			     thrash1 = clean, thrash2 = clean;
	struct observations obs = { 0 };

	thrash1.root = MGLRU_FIX "thrash1";
	thrash2.root = MGLRU_FIX "thrash2";
	/* Clean cache read twice, not refaulting (18 refaults since boot, a lower counter than
	 * the tests before: a new baseline): the refault-aware value is the kubelet's, the
	 * 400 MiB of inactive cache free in both. */
	sleep_ns(10 * SEC);
	assert_int_equal(signals_read(&clean, SIGNAL_MASK_MEMORY, &obs), 0);
	assert_false(obs.file_cache_refaulting);
	assert_int_equal(obs.memory_available_kubelet_bytes,
			 CAPTURED_TOTAL - (327680 + 451485696 - 419516416));
	assert_int_equal(obs.memory_available_refault_aware_bytes,
			 obs.memory_available_kubelet_bytes);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available,
			 obs.memory_available_kubelet_bytes);

	/* Thrashing, 2 s between the captures: 109720 pages back in, about 210 MiB/s against
	 * 1% of 836 MiB = 8.4 MiB/s. The kubelet's formula still counts the cache as free
	 * (inactive_file 805 MiB): only anon and the rest are used. Refault-aware: all of it. */
	sleep_ns(2 * SEC);
	assert_int_equal(signals_read(&thrash1, SIGNAL_MASK_MEMORY, &obs), 0);
	sleep_ns(2 * SEC);
	assert_int_equal(signals_read(&thrash2, SIGNAL_MASK_MEMORY, &obs), 0);
	assert_true(obs.file_cache_refaulting);
	assert_int_equal(obs.memory_available_kubelet_bytes,
			 CAPTURED_TOTAL - (450560 + 876400640 - 844337152));
	assert_int_equal(obs.memory_available_refault_aware_bytes,
			 CAPTURED_TOTAL - (450560 + 876400640));
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available,
			 CAPTURED_TOTAL - (450560 + 876400640));

	/* The thrash stops (the same counter a window later): the kubelet's value again. */
	sleep_ns(2 * SEC);
	assert_int_equal(signals_read(&thrash2, SIGNAL_MASK_MEMORY, &obs), 0);
	assert_false(obs.file_cache_refaulting);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available,
			 obs.memory_available_kubelet_bytes);
}

static void test_read_mglru(void **state)
{
	const char *root = *state;
	bool on = true;

	assert_int_equal(signals_read_mglru(root, &on), -ENOENT);
	assert_false(on);
	fixture_write(root, "sys/kernel/mm/lru_gen/enabled", "0x0007\n");
	assert_int_equal(signals_read_mglru(root, &on), 0);
	assert_true(on);
	fixture_write(root, "sys/kernel/mm/lru_gen/enabled", "0x0000\n");
	assert_int_equal(signals_read_mglru(root, &on), 0);
	assert_false(on);
	fixture_write(root, "sys/kernel/mm/lru_gen/enabled", "y\n");
	assert_int_equal(signals_read_mglru(root, &on), -EINVAL);
	assert_false(on);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refault_verdict_boundaries),
		cmocka_unit_test_setup_teardown(test_refault_aware_signal, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_refault_counters_missing, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_refault_aware_rule_per_lru, setup_tmp,
						teardown_tmp),
		cmocka_unit_test(test_refault_aware_working_set),
		cmocka_unit_test(test_refault_aware_mglru_captured),
		cmocka_unit_test_setup_teardown(test_read_mglru, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_mglru_counts_refaults, setup_tmp, teardown_tmp),
	};

	log_set_level(LOGLEVEL_ERR - 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
