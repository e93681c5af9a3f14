// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* act/grace_store.c: soft graces across restarts, on a temporary state dir with injected
 * boottime clocks and boot ids. */
#include "testutil.h"

#include "act/grace_store.h"
#include "sys/log.h"

#define S 1000000000ll
#define BOOT_A "11111111-1111-4111-8111-111111111111"
#define BOOT_B "22222222-2222-4222-8222-222222222222"

static void test_remaining_after_restart(void **state)
{
	char dir[PATH_MAX];
	struct grace_store *store, *again;
	int64_t left = -1;

	(void)state;
	fixture_tmpdir(dir, "grace");
	assert_int_equal(grace_store_open(&store, dir, BOOT_A), 0);
	assert_false(grace_store_remaining(store, 42, 100 * S, 8 * S, &left));
	assert_int_equal(grace_store_record(store, 42, "/sys/fs/cgroup/kubepods.slice/pod", 100 * S, 8 * S), 0);
	grace_store_close(store);

	/* A restart 3 s into the grace: 5 s left, not a fresh 8. */
	assert_int_equal(grace_store_open(&again, dir, BOOT_A), 0);
	assert_true(grace_store_remaining(again, 42, 103 * S, 8 * S, &left));
	assert_int_equal(left, 5 * S);
	/* Never lengthened: a shorter grace now wins; past the end, 0 (kill now). */
	assert_true(grace_store_remaining(again, 42, 103 * S, 2 * S, &left));
	assert_int_equal(left, 2 * S);
	assert_true(grace_store_remaining(again, 42, 111 * S, 8 * S, &left));
	assert_int_equal(left, 0);
	/* Another cgroup id is not it. */
	assert_false(grace_store_remaining(again, 43, 103 * S, 8 * S, &left));
	/* Forgotten when the action ends. */
	assert_int_equal(grace_store_forget(again, 42), 0);
	assert_false(grace_store_remaining(again, 42, 103 * S, 8 * S, &left));
	assert_int_equal(grace_store_forget(again, 42), -ENOENT);
	grace_store_close(again);
	fixture_rm_rf(dir);
}

static void test_previous_boot_and_garbage_are_void(void **state)
{
	char dir[PATH_MAX];
	struct grace_store *store, *after_reboot;
	int64_t left = -1;

	(void)state;
	fixture_tmpdir(dir, "grace");
	assert_int_equal(grace_store_open(&store, dir, BOOT_A), 0);
	assert_int_equal(grace_store_record(store, 7, "/p", 100 * S, 8 * S), 0);
	grace_store_close(store);
	/* After a reboot CLOCK_BOOTTIME starts again: 1 s would look like "not begun". */
	assert_int_equal(grace_store_open(&after_reboot, dir, BOOT_B), 0);
	assert_false(grace_store_remaining(after_reboot, 7, 1 * S, 8 * S, &left));
	assert_int_equal(left, -1);
	/* Garbage and a truncated file are void too. */
	fixture_write(dir, "grace/9", "boot_id " BOOT_B "\ncgroup_id 9\n");
	assert_false(grace_store_remaining(after_reboot, 9, 1 * S, 8 * S, &left));
	fixture_write(dir, "grace/10", "boot_id " BOOT_B "\ncgroup_id 11\nsigterm_boottime_ns 1\ngrace_ns 5\n");
	assert_false(grace_store_remaining(after_reboot, 10, 1 * S, 8 * S, &left));
	/* A path with a newline cannot be written (it would forge fields). */
	assert_int_equal(grace_store_record(after_reboot, 12, "/a\nboot_id x", 1, 1), -EINVAL);
	grace_store_close(after_reboot);
	fixture_rm_rf(dir);
}

/* The eviction path: the first start records, a restart's start is capped; dry runs and
 * hard kills (grace 0) record nothing; no store changes nothing. */
static void test_begin(void **state)
{
	char dir[PATH_MAX], boot_id[BOOT_ID_LEN];
	struct grace_store *store;
	int64_t first, left;

	(void)state;
	fixture_tmpdir(dir, "grace");
	assert_int_equal(boot_id_read(boot_id, sizeof(boot_id)), 0);
	assert_int_equal(grace_store_open(&store, dir, NULL), 0);
	assert_int_equal(grace_store_begin(NULL, 5, "/p", 8 * S, false), 8 * S);
	assert_int_equal(grace_store_begin(store, 5, "/p", 0, false), 0);
	assert_false(grace_store_remaining(store, 5, clock_boottime_ns(), 8 * S, &left));
	assert_int_equal(grace_store_begin(store, 5, "/p", 8 * S, true), 8 * S);
	assert_false(grace_store_remaining(store, 5, clock_boottime_ns(), 8 * S, &left));
	first = grace_store_begin(store, 5, "/p", 8 * S, false);
	assert_int_equal(first, 8 * S);
	/* Recorded with this boot's id and the boottime clock: a second begin gets less. */
	left = grace_store_begin(store, 5, "/p", 8 * S, false);
	assert_true(left < 8 * S && left > 0);
	grace_store_close(store);
	assert_int_equal(grace_store_open(&store, dir, boot_id), 0);
	assert_true(grace_store_remaining(store, 5, clock_boottime_ns(), 8 * S, &left));
	grace_store_close(store);
	fixture_rm_rf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_remaining_after_restart),
		cmocka_unit_test(test_previous_boot_and_garbage_are_void),
		cmocka_unit_test(test_begin),
	};

	log_set_level(LOGLEVEL_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
