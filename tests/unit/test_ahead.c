// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Time to exhaustion (user/core/ahead.c, doc/DESIGN.md "Seeing ahead"): a known rate gives the
 * right seconds within the stated uncertainty; too few readings, too short a window, noise,
 * flat or rising availability, and a burst that stopped give no estimate; a step starts anew.
 */
#include "testutil.h"

#include <math.h>
#include <stdint.h>

#include "core/ahead.h"

#define MS 1000000LL
#define SEC 1000000000LL
#define MI (1024LL * 1024)

/* Readings every step_ns from t0 for count steps, falling rate_per_s from start; noise adds
 * +-noise alternately (a deterministic scatter). Returns the time of the last reading. */
static int64_t feed(struct ahead_series *s, int64_t t0, int64_t step_ns, int count, int64_t start,
		    double rate_per_s, int64_t noise)
{
	int64_t t = t0;

	for (int i = 0; i < count; i++) {
		t = t0 + i * step_ns;
		ahead_observe(s, t, start - (int64_t)(rate_per_s * (double)(t - t0) / 1e9) +
					    (i % 2 ? noise : -noise));
	}
	return t;
}

static void test_known_rate_gives_the_seconds(void **state)
{
	struct ahead_series s;
	struct ahead_estimate e;
	int64_t last;

	ahead_reset(&s);
	/* 1 GiB free, falling 100 MiB/s, read every 200 ms for 3 s: at 3 s, 724 MiB free; to a
	 * 100 MiB threshold 6.24 s. */
	last = feed(&s, 5 * SEC, 200 * MS, 16, 1024 * MI, 100.0 * MI, 0);
	e = ahead_estimate(&s, 100 * MI, last);
	assert_int_equal(e.none, AHEAD_SURE);
	assert_true(fabs(e.rate_per_s - 100.0 * MI) < 0.001 * 100 * MI);
	assert_true(fabs(e.seconds - 6.24) < 0.01);
	assert_true(e.seconds_low <= e.seconds && e.seconds <= e.seconds_high);
	/* Judged 1 s after the last reading: that second has gone by. */
	e = ahead_estimate(&s, 100 * MI, last + SEC);
	assert_true(fabs(e.seconds - 5.24) < 0.01);
	/* At or below the target: 0. */
	e = ahead_estimate(&s, 800 * MI, last);
	assert_int_equal(e.none, AHEAD_SURE);
	assert_true(e.seconds == 0);
}

/* A steady rate with scatter: the truth lies within the stated interval. */
static void test_noisy_but_sure_holds_the_truth(void **state)
{
	struct ahead_series s;
	struct ahead_estimate e;
	int64_t last;

	ahead_reset(&s);
	/* 50 inodes/s from 100000, +-10 inodes of scatter (0.2 s of the rate), every 100 ms for 5 s. */
	last = feed(&s, SEC, 100 * MS, 51, 100000, 50.0, 10);
	e = ahead_estimate(&s, 1000, last);
	assert_int_equal(e.none, AHEAD_SURE);
	/* truth: (100000 - 250 - 1000) / 50 = 1975 s (the last reading is +10 off the line) */
	assert_true(e.seconds_low <= 1975.0 && 1975.0 <= e.seconds_high);
	assert_true(fabs(e.seconds - 1975.0) < 0.05 * 1975.0);
}

static void test_too_few_or_too_short_gives_none(void **state)
{
	struct ahead_series s;
	int64_t last;

	ahead_reset(&s);
	assert_int_equal(ahead_estimate(&s, 0, 0).none, AHEAD_FEW_POINTS);
	last = feed(&s, SEC, 200 * MS, AHEAD_MIN_POINTS - 1, 1024 * MI, 100.0 * MI, 0);
	assert_int_equal(ahead_estimate(&s, 0, last).none, AHEAD_FEW_POINTS);
	/* Many wake-ups within 600 ms: points every 100 ms at most, spanning under a second. */
	ahead_reset(&s);
	last = feed(&s, SEC, 1 * MS, 600, 1024 * MI, 100.0 * MI, 0);
	assert_true(s.n <= 8);
	assert_int_equal(ahead_estimate(&s, 0, last).none, AHEAD_SHORT_WINDOW);
	/* Readings older than the window are not used: stale data says nothing. */
	ahead_reset(&s);
	last = feed(&s, SEC, 200 * MS, 16, 1024 * MI, 100.0 * MI, 0);
	assert_int_equal(ahead_estimate(&s, 0, last + AHEAD_WINDOW_NS + SEC).none, AHEAD_FEW_POINTS);
}

static void test_flat_or_rising_gives_none(void **state)
{
	struct ahead_series s;
	int64_t last;

	ahead_reset(&s);
	last = feed(&s, SEC, 200 * MS, 20, 1024 * MI, 0, 0);
	assert_int_equal(ahead_estimate(&s, 0, last).none, AHEAD_NOT_FALLING);
	ahead_reset(&s);
	last = feed(&s, SEC, 200 * MS, 20, 512 * MI, -10.0 * MI, 0);
	assert_int_equal(ahead_estimate(&s, 0, last).none, AHEAD_NOT_FALLING);
}

/* Scatter as large as several seconds of the rate: the slope is not sure. */
static void test_noisy_gives_none(void **state)
{
	struct ahead_series s;
	int64_t last;

	ahead_reset(&s);
	/* 1 MiB/s with +-8 MiB of scatter over 2 s */
	last = feed(&s, SEC, 200 * MS, 11, 1024 * MI, 1.0 * MI, 8 * MI);
	assert_int_equal(ahead_estimate(&s, 0, last).none, AHEAD_NOISY);
}

/* A burst that stopped: 3 s falling, then 3 s flat. The line through the window still
 * falls; the newer half does not, and that says no. */
static void test_burst_that_stopped_gives_none(void **state)
{
	struct ahead_series s;
	int64_t t;

	ahead_reset(&s);
	t = feed(&s, SEC, 200 * MS, 16, 100000, 100.0, 0);
	for (int i = 1; i <= 15; i++)
		ahead_observe(&s, t + i * 200 * MS, 100000 - 300);
	assert_int_not_equal(ahead_estimate(&s, 0, t + 15 * 200 * MS).none, AHEAD_SURE);
}

/* Bursts: 200 inodes at once every 2 s, flat between: at no reading is there an estimate. */
static void test_bursty_gives_none(void **state)
{
	struct ahead_series s;
	int64_t t = SEC, avail = 100000;

	ahead_reset(&s);
	for (int i = 0; i < 100; i++, t += 200 * MS) {
		if (i % 10 == 0)
			avail -= 200;
		ahead_observe(&s, t, avail);
		assert_int_not_equal(ahead_estimate(&s, 0, t).none, AHEAD_SURE);
	}
	/* A steady rate with scatter of 0.4 s of its rate (+-40 at 100/s): the slope is sure,
	 * the crossing time is not. */
	ahead_reset(&s);
	t = feed(&s, SEC, 200 * MS, 50, 100000, 100.0, 40);
	assert_int_equal(ahead_estimate(&s, 0, t).none, AHEAD_BURSTY);
	/* the same rate, steady, is sure */
	ahead_reset(&s);
	t = feed(&s, SEC, 200 * MS, 50, 100000, 100.0, 0);
	assert_int_equal(ahead_estimate(&s, 0, t).none, AHEAD_SURE);
}

/* A step (a kill freed 500 MiB): the old rate is forgotten, a new one is measured. */
static void test_step_starts_anew(void **state)
{
	struct ahead_series s;
	struct ahead_estimate e;
	int64_t last;

	ahead_reset(&s);
	last = feed(&s, SEC, 200 * MS, 16, 1024 * MI, 100.0 * MI, 0);
	assert_int_equal(ahead_estimate(&s, 0, last).none, AHEAD_SURE);
	ahead_observe(&s, last + 200 * MS, 1200 * MI);
	assert_int_equal(s.resets, 1);
	assert_int_equal(ahead_estimate(&s, 0, last + 200 * MS).none, AHEAD_FEW_POINTS);
	/* a slower fall from there: 20 MiB/s; 1200 MiB to 200 MiB is 50 s */
	last = feed(&s, last + 400 * MS, 200 * MS, 15, 1200 * MI - 4 * MI, 20.0 * MI, 0);
	e = ahead_estimate(&s, 200 * MI, last);
	assert_int_equal(e.none, AHEAD_SURE);
	assert_true(fabs(e.rate_per_s - 20.0 * MI) < 0.01 * 20 * MI);
	assert_true(fabs(e.seconds - (1196.0 - 20 * 2.8 - 200) / 20) < 0.1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_rate_gives_the_seconds),
		cmocka_unit_test(test_noisy_but_sure_holds_the_truth),
		cmocka_unit_test(test_too_few_or_too_short_gives_none),
		cmocka_unit_test(test_flat_or_rising_gives_none),
		cmocka_unit_test(test_noisy_gives_none),
		cmocka_unit_test(test_burst_that_stopped_gives_none),
		cmocka_unit_test(test_bursty_gives_none),
		cmocka_unit_test(test_step_starts_anew),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
