// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Without BPF the memory signals are re-read after daemon_adaptive_poll_interval_ns()
 * (user/daemon/daemon_bpf.c): earlyoom's pacing (sleep_time_ms() in its main.c: headroom over
 * an assumed fill rate of 6000 KiB per ms, clamped to 100 .. 1000 ms). tests/cli/
 * test_nobpf_poll.sh checks the daemon really polls at these rates.
 */
#include "testutil.h"

#include <stdint.h>

#include "daemon/daemon_parts.h"

#define MS 1000000LL
#define KI 1024LL
#define MI (1024LL * 1024)

static void test_interval_follows_the_margin(void **state)
{
	/* Below or at the threshold: as fast as it goes. */
	assert_int_equal(daemon_adaptive_poll_interval_ns(-1), 100 * MS);
	assert_int_equal(daemon_adaptive_poll_interval_ns(0), 100 * MS);
	/* 150 MiB (a 1 GiB node's race window) fills in 25 ms at 6000 KiB/ms: the floor. */
	assert_int_equal(daemon_adaptive_poll_interval_ns(150 * MI), 100 * MS);
	/* One past the floor: 101 ms of fill. */
	assert_int_equal(daemon_adaptive_poll_interval_ns(101 * 6000 * KI), 101 * MS);
	assert_int_equal(daemon_adaptive_poll_interval_ns(1024 * MI), 174 * MS);
	/* The ceiling, and one past it. */
	assert_int_equal(daemon_adaptive_poll_interval_ns(1000 * 6000 * KI), 1000 * MS);
	assert_int_equal(daemon_adaptive_poll_interval_ns(1001 * 6000 * KI), 1000 * MS);
	assert_int_equal(daemon_adaptive_poll_interval_ns(INT64_MAX - 1), 1000 * MS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interval_follows_the_margin),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
