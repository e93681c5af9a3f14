// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The kill ledger (core/kill_ledger.c), on an injected clock: zombies as freed, memory a kill
 * did not return holding the next kill, failures backing off. */
#include "testutil.h"

#include "core/kill_ledger.h"
#include "sys/procfs.h"

#define S (1000000000LL)
#define MIB (1LL << 20)

/* A 2,000-task kill: its tasks count as freed until the node's count has fallen by as much. */
static void test_reap_credit_decays_as_tasks_are_reaped(void **state)
{
	struct kill_ledger l;

	kill_ledger_init(&l);
	assert_int_equal(kill_ledger_reap_credit(&l, LEDGER_PIDS, 0, 3000, -1), 0);
	kill_ledger_completed(&l, LEDGER_PIDS, 1 * S, 30000, 3000, 2000, -1);
	assert_int_equal(kill_ledger_reap_credit(&l, LEDGER_PIDS, 1 * S, 3000, -1), 2000);	/* all zombies */
	assert_int_equal(kill_ledger_reap_credit(&l, LEDGER_PIDS, 2 * S, 2200, -1), 1200);	/* 800 reaped */
	/* Another workload forks meanwhile: the credit lingers but never grows. */
	assert_int_equal(kill_ledger_reap_credit(&l, LEDGER_PIDS, 2 * S, 2600, -1), 1200);
	assert_int_equal(kill_ledger_reap_credit(&l, LEDGER_PIDS, 3 * S, 1000, -1), 0);	/* all reaped */
	assert_int_equal(kill_ledger_reap_credit(&l, LEDGER_PIDS, 3 * S, 3000, -1), 0);	/* and gone */
	/* Never reaped: it ends with the window. */
	kill_ledger_completed(&l, LEDGER_PIDS, 10 * S, 30000, 3000, 500, -1);
	assert_int_equal(kill_ledger_reap_credit(&l, LEDGER_PIDS, 10 * S + LEDGER_REAP_WINDOW_NS - 1, 3000, -1), 500);
	assert_int_equal(kill_ledger_reap_credit(&l, LEDGER_PIDS, 10 * S + LEDGER_REAP_WINDOW_NS, 3000, -1), 0);
	/* A new workload replacing each reaped zombie keeps the node's use level: the zombies
	 * counted now cap the credit, and it never grows back. */
	kill_ledger_init(&l);
	for (int i = 0; i < 200; i++)
		kill_ledger_completed(&l, LEDGER_PIDS, 20 * S, 30000, 89, 1, -1);
	assert_true(kill_ledger_reap_open(&l, LEDGER_PIDS, 20 * S));
	assert_int_equal(kill_ledger_reap_credit(&l, LEDGER_PIDS, 20 * S, 89, 3), 3);
	assert_int_equal(kill_ledger_reap_credit(&l, LEDGER_PIDS, 20 * S, 89, 0), 0);
	assert_false(kill_ledger_reap_open(&l, LEDGER_PIDS, 20 * S));
	assert_int_equal(kill_ledger_reap_credit(&l, LEDGER_PIDS, 20 * S, 89, 50), 0);
	/* Memory has no credit. */
	assert_int_equal(kill_ledger_reap_credit(&l, LEDGER_MEMORY, 0, 0, -1), 0);
}

/* A kill that returned what it held: no hold. */
static void test_returned_memory_does_not_hold(void **state)
{
	struct kill_ledger l;
	struct ledger_verdict v;

	kill_ledger_init(&l);
	kill_ledger_completed(&l, LEDGER_MEMORY, 5 * S, 100 * MIB, 0, 600 * MIB, -1);
	/* An observation read before the completion judges nothing. */
	v = kill_ledger_judge(&l, LEDGER_MEMORY, 5 * S, 4 * S, 100 * MIB, true, 64 * MIB);
	assert_false(v.judged);
	v = kill_ledger_judge(&l, LEDGER_MEMORY, 5 * S, 5 * S, 650 * MIB, true, 64 * MIB);
	assert_true(v.judged);
	assert_false(v.unreturned);
	assert_int_equal(v.returned, 550 * MIB);
	assert_false(kill_ledger_held(&l, LEDGER_MEMORY, 5 * S, 650 * MIB));
	/* Judged once. */
	assert_false(kill_ledger_judge(&l, LEDGER_MEMORY, 6 * S, 6 * S, 650 * MIB, true, 64 * MIB).judged);
}

/* tmpfs: the emptied cgroup still holds the memory. The next kill waits for new pressure or the
 * end of the hold; holds double while kills keep returning nothing, up to 5 min. */
static void test_unreturned_memory_holds_and_doubles(void **state)
{
	struct kill_ledger l;
	struct ledger_verdict v;
	int64_t now = 100 * S, expect = LEDGER_HOLD_MIN_NS;

	kill_ledger_init(&l);
	for (int round = 0; round < 8; round++) {
		kill_ledger_completed(&l, LEDGER_MEMORY, now, 100 * MIB, 0, 600 * MIB, 590 * MIB);
		v = kill_ledger_judge(&l, LEDGER_MEMORY, now, now, 101 * MIB, true, 64 * MIB);
		assert_true(v.unreturned);
		assert_int_equal(v.left, 590 * MIB);
		assert_int_equal(v.hold_level, 101 * MIB - 64 * MIB);
		assert_int_equal(v.hold_until_ns, now + expect);
		/* New workloads start: the signal moves a little, the hold stands. */
		assert_true(kill_ledger_held(&l, LEDGER_MEMORY, now + expect - 1, 60 * MIB));
		now += expect;
		assert_false(kill_ledger_held(&l, LEDGER_MEMORY, now, 60 * MIB));
		expect = expect * 2 > LEDGER_HOLD_MAX_NS ? LEDGER_HOLD_MAX_NS : expect * 2;
	}
	/* New pressure ends a hold early. */
	kill_ledger_completed(&l, LEDGER_MEMORY, now, 100 * MIB, 0, 600 * MIB, 590 * MIB);
	v = kill_ledger_judge(&l, LEDGER_MEMORY, now, now, 100 * MIB, true, 64 * MIB);
	assert_true(v.unreturned);
	assert_true(kill_ledger_held(&l, LEDGER_MEMORY, now + 1, 37 * MIB));
	assert_false(kill_ledger_held(&l, LEDGER_MEMORY, now + 1, 35 * MIB));
	/* A kill that returns its memory starts the doubling afresh. */
	kill_ledger_completed(&l, LEDGER_MEMORY, now + 2, 100 * MIB, 0, 600 * MIB, -1);
	assert_false(kill_ledger_judge(&l, LEDGER_MEMORY, now + 2, now + 2, 700 * MIB, true, 64 * MIB).unreturned);
	kill_ledger_completed(&l, LEDGER_MEMORY, now + 3, 100 * MIB, 0, 600 * MIB, 590 * MIB);
	v = kill_ledger_judge(&l, LEDGER_MEMORY, now + 3, now + 3, 100 * MIB, true, 64 * MIB);
	assert_int_equal(v.hold_until_ns, now + 3 + LEDGER_HOLD_MIN_NS);
}

/* Without a measurement: the rise of the signal judges; a victim too small to see must have
 * raised it by 32 MiB; a threshold no longer met needs no hold. */
static void test_judged_by_the_signal(void **state)
{
	struct kill_ledger l;

	kill_ledger_init(&l);
	kill_ledger_completed(&l, LEDGER_MEMORY, S, 100 * MIB, 0, 600 * MIB, -1);
	assert_true(kill_ledger_judge(&l, LEDGER_MEMORY, S, S, 350 * MIB, true, 64 * MIB).unreturned);
	kill_ledger_init(&l);
	kill_ledger_completed(&l, LEDGER_MEMORY, S, 100 * MIB, 0, 1 * MIB, -1);
	assert_true(kill_ledger_judge(&l, LEDGER_MEMORY, S, S, 101 * MIB, true, 64 * MIB).unreturned);
	kill_ledger_init(&l);
	kill_ledger_completed(&l, LEDGER_MEMORY, S, 100 * MIB, 0, 1 * MIB, -1);
	assert_false(kill_ledger_judge(&l, LEDGER_MEMORY, S, S, 101 * MIB, false, 64 * MIB).unreturned);
	assert_false(kill_ledger_held(&l, LEDGER_MEMORY, S, 0));
	/* Unknown usage (-1), too: judged by the 32 MiB floor. */
	kill_ledger_init(&l);
	kill_ledger_completed(&l, LEDGER_MEMORY, S, 100 * MIB, 0, -1, -1);
	assert_false(kill_ledger_judge(&l, LEDGER_MEMORY, S, S, 200 * MIB, true, 64 * MIB).unreturned);
}

/* tmpfs, with the signal back just over the threshold at the first observation: the victim's own
 * pages lifted it (guest 21-tmpfs: 250.0 -> 262 MiB beside 529 MiB left charged). The measured
 * leftover is still reported and held, or the next drift down kills a fresh workload for it. */
static void test_measured_leftover_held_when_back_over(void **state)
{
	struct kill_ledger l;
	struct ledger_verdict v;

	kill_ledger_init(&l);
	kill_ledger_completed(&l, LEDGER_MEMORY, S, 250 * MIB, 0, 530 * MIB, 529 * MIB);
	v = kill_ledger_judge(&l, LEDGER_MEMORY, S, S, 262 * MIB, false, 64 * MIB);
	assert_true(v.judged);
	assert_true(v.unreturned);
	assert_int_equal(v.left, 529 * MIB);
	assert_int_equal(v.hold_level, 262 * MIB - 64 * MIB);
	/* A 16 MiB drift crosses the threshold again: held. */
	assert_true(kill_ledger_held(&l, LEDGER_MEMORY, 2 * S, 246 * MIB));
	/* A kill that returned its memory is not reported, met or not. */
	kill_ledger_init(&l);
	kill_ledger_completed(&l, LEDGER_MEMORY, S, 250 * MIB, 0, 530 * MIB, 1 * MIB);
	assert_false(kill_ledger_judge(&l, LEDGER_MEMORY, S, S, 780 * MIB, false, 64 * MIB).unreturned);
}

static void test_failures_back_off(void **state)
{
	struct kill_ledger l;
	int64_t until, now = 0, expect = LEDGER_FAIL_MIN_NS;

	kill_ledger_init(&l);
	assert_false(kill_ledger_backing_off(&l, LEDGER_MEMORY, 0, &until));
	for (int i = 0; i < 12; i++) {
		kill_ledger_failed(&l, LEDGER_MEMORY, now);
		assert_true(kill_ledger_backing_off(&l, LEDGER_MEMORY, now + expect - 1, &until));
		assert_int_equal(until, now + expect);
		assert_false(kill_ledger_backing_off(&l, LEDGER_PIDS, now, NULL));	/* per resource */
		now += expect;
		assert_false(kill_ledger_backing_off(&l, LEDGER_MEMORY, now, NULL));
		expect = expect * 2 > LEDGER_FAIL_MAX_NS ? LEDGER_FAIL_MAX_NS : expect * 2;
	}
	assert_int_equal(expect, LEDGER_FAIL_MAX_NS);
	kill_ledger_succeeded(&l, LEDGER_MEMORY);
	kill_ledger_failed(&l, LEDGER_MEMORY, now);
	kill_ledger_backing_off(&l, LEDGER_MEMORY, now, &until);
	assert_int_equal(until, now + LEDGER_FAIL_MIN_NS);
}

/* The zombies the credit is capped by, counted from a fixture /proc: the state follows the last
 * ')' of a comm that may hold both. */
static void test_zombies_counted(void **state)
{
	char root[PATH_MAX];

	fixture_tmpdir(root, "zombies");
	fixture_write(root, "proc/1/stat", "1 (init) S 0 1 1 0\n");
	fixture_write(root, "proc/200/stat", "200 (a) Z (b) S 1 200\n");	/* comm "a) Z (b" */
	fixture_write(root, "proc/201/stat", "201 (sleep) Z 1 201\n");
	fixture_write(root, "proc/202/stat", "202 (x y) Z 1 202\n");
	fixture_write(root, "proc/self/stat", "1 (init) Z 0 1\n");		/* not a pid */
	fixture_write(root, "proc/loadavg", "0 0 0 1/4 202\n");
	assert_int_equal(procfs_count_zombies(root), 2);
	fixture_rm_rf(root);
	assert_true(procfs_count_zombies(root) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reap_credit_decays_as_tasks_are_reaped),
		cmocka_unit_test(test_returned_memory_does_not_hold),
		cmocka_unit_test(test_unreturned_memory_holds_and_doubles),
		cmocka_unit_test(test_judged_by_the_signal),
		cmocka_unit_test(test_measured_leftover_held_when_back_over),
		cmocka_unit_test(test_failures_back_off),
		cmocka_unit_test(test_zombies_counted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
