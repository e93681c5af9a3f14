// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory wake-up pacing (user/core/pacing.c, doc/DESIGN.md "Data flow", 1. Wake-ups): the step
 * the BPF programs count to and their rate limit, with an injected clock (the read times).
 */
#include "testutil.h"

#include <stdint.h>

#include "core/pacing.h"

#define US 1000LL
#define MS 1000000LL
#define KI 1024LL
#define MI (1024LL * 1024)
#define PAGE 4096LL

static struct pacing_memory at(struct pacing *p, int64_t margin, int64_t read_ns)
{
	return pacing_memory(p, margin, read_ns, PAGE);
}

/* The kubelet evicts when threshold > available (eviction/helpers.go thresholdsMet): at a
 * margin of exactly 0 nothing is met yet, and the very next page crosses. The old step treated
 * it as "below" and let 4 MiB go by first (once a 5.1 ms detection on the bench host). */
static void test_margin_zero_is_not_a_crossing(void **state)
{
	struct pacing p;

	pacing_init(&p);
	assert_int_equal(at(&p, 0, 1 * MS).step_pages, 1);
	/* Below the threshold (kills under way): every 4 MiB. */
	assert_int_equal(at(&p, -1, 2 * MS).step_pages, 4 * MI / PAGE);
	assert_int_equal(at(&p, -100 * MI, 3 * MS).step_pages, 4 * MI / PAGE);
}

/* A quarter of the margin, at least 256 KiB; under two minimum steps (512 KiB) the minimum would
 * be more than half the margin: half of it then, at least a page. */
static void test_step_at_most_half_a_small_margin(void **state)
{
	struct pacing p;

	pacing_init(&p);
	assert_int_equal(at(&p, 100 * MI, 1 * MS).step_pages, 25 * MI / PAGE);
	assert_int_equal(at(&p, 1 * MI, 2 * MS).step_pages, 256 * KI / PAGE);
	assert_int_equal(at(&p, 512 * KI, 3 * MS).step_pages, 128 * KI / PAGE * 2);
	assert_int_equal(at(&p, 511 * KI, 4 * MS).step_pages, 511 * KI / 2 / PAGE);
	assert_int_equal(at(&p, 300 * KI, 5 * MS).step_pages, 150 * KI / PAGE);
	assert_int_equal(at(&p, 8 * KI, 6 * MS).step_pages, 1);
	assert_int_equal(at(&p, 100, 7 * MS).step_pages, 1);
	for (int64_t m = 1; m < 2 * PACING_MIN_STEP_BYTES; m += 4 * KI - 1) {
		uint64_t step = at(&p, m, 8 * MS + m).step_pages;

		assert_true(step == 1 || (int64_t)step * PAGE <= m / 2);
	}
	/* The ceiling: 1 GiB. */
	assert_int_equal(at(&p, 64LL << 30, 9 * MS).step_pages, (1LL << 30) / PAGE);
	/* No memory threshold: no step wake-ups. */
	assert_int_equal(at(&p, INT64_MAX, 10 * MS).step_pages, 0);
}

/* 1 GiB/s towards a threshold: 1 MiB per ms, a read every 500 us. The limit drops to 100 us as
 * soon as the margin, against what it was a window before, shrinks at a rate that crosses within
 * the horizon, and is back at 1 ms once it does not. */
static void test_rate_limit_adapts_and_backs_off(void **state)
{
	struct pacing p;
	int64_t t = 1000 * MS;

	pacing_init(&p);
	assert_int_equal(at(&p, 8 * MI, t).min_interval_ns, PACING_SLOW_INTERVAL_NS);
	assert_int_equal(at(&p, 8 * MI - 512 * KI, t + 500 * US).min_interval_ns, PACING_FAST_INTERVAL_NS);
	assert_int_equal(at(&p, 7 * MI, t + 1000 * US).min_interval_ns, PACING_FAST_INTERVAL_NS);
	assert_int_equal(at(&p, 7 * MI - 512 * KI, t + 1500 * US).min_interval_ns, PACING_FAST_INTERVAL_NS);
	/* An evaluation that did not re-read memory (same read time) changes nothing. */
	assert_int_equal(at(&p, 7 * MI - 512 * KI, t + 1500 * US).min_interval_ns, PACING_FAST_INTERVAL_NS);
	/* Steady: back at 1 ms within two windows, and it stays there. */
	at(&p, 7 * MI - 512 * KI, t + 2000 * US);
	at(&p, 7 * MI - 512 * KI, t + 3000 * US);
	assert_int_equal(at(&p, 7 * MI - 512 * KI, t + 4000 * US).min_interval_ns, PACING_SLOW_INTERVAL_NS);
	assert_int_equal(at(&p, 7 * MI - 512 * KI, t + 5000 * US).min_interval_ns, PACING_SLOW_INTERVAL_NS);
	/* Shrinking again: fast again. */
	assert_int_equal(at(&p, 5 * MI, t + 6000 * US).min_interval_ns, PACING_FAST_INTERVAL_NS);
	/* Growing past what it was (a kill gave memory back, or churn freed it): at once. */
	assert_int_equal(at(&p, 8 * MI, t + 6500 * US).min_interval_ns, PACING_SLOW_INTERVAL_NS);
	/* Below the threshold: kills are under way, the 1 ms limit. */
	at(&p, 2 * MI, t + 7000 * US);
	at(&p, 1 * MI, t + 7500 * US);
	assert_int_equal(at(&p, -1 * MI, t + 8000 * US).min_interval_ns, PACING_SLOW_INTERVAL_NS);
	assert_int_equal(at(&p, -2 * MI, t + 8500 * US).min_interval_ns, PACING_SLOW_INTERVAL_NS);
}

/* memory.available moves by hundreds of KiB from read to read on its own (per-CPU vmstat
 * deltas): 1 GiB/s with +-256 KiB of noise, a read every 100 us, grows at every other read.
 * Once a window has passed, every read is fast: comparing read to read never was (and the
 * bench host's crossings waited out the 1 ms limit in 8 of 40 runs). */
static void test_noisy_margin_stays_fast(void **state)
{
	struct pacing p;
	int64_t t = 1000 * MS;
	int fast = 0;

	pacing_init(&p);
	for (int i = 0; i < 40; i++) {
		int64_t m = 4 * MI - i * 100 * KI + (i % 2 ? 256 * KI : -256 * KI);
		uint64_t interval = at(&p, m, t + i * 100 * US).min_interval_ns;

		if (i >= 10 && interval != PACING_FAST_INTERVAL_NS)
			fail_msg("read %d (margin %lld KiB, %d us in): 1 ms", i, (long long)(m / KI), i * 100);
		fast += interval == PACING_FAST_INTERVAL_NS;
	}
	assert_true(fast >= 30);
}

/* Shrinking, but so slowly that the crossing is far beyond the horizon: the 1 ms limit never
 * binds there (the step is much longer than a millisecond of charges), so it stays. */
static void test_slow_drift_stays_slow(void **state)
{
	struct pacing p;
	int64_t t = 5 * MS;

	pacing_init(&p);
	/* 1 MiB per 100 ms down to 1 MiB left: 100 ms away at the end. */
	for (int i = 0; i < 100; i++, t += 100 * MS)
		assert_int_equal(at(&p, (100 - i) * MI, t).min_interval_ns, PACING_SLOW_INTERVAL_NS);
	/* No threshold any more: the state is forgotten; the first look is never fast. */
	at(&p, INT64_MAX, t + 1 * MS);
	assert_int_equal(at(&p, 4 * MI, t + 2 * MS).min_interval_ns, PACING_SLOW_INTERVAL_NS);
	assert_int_equal(at(&p, 3 * MI, t + 3 * MS).min_interval_ns, PACING_FAST_INTERVAL_NS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_margin_zero_is_not_a_crossing),
		cmocka_unit_test(test_step_at_most_half_a_small_margin),
		cmocka_unit_test(test_rate_limit_adapts_and_backs_off),
		cmocka_unit_test(test_noisy_margin_stays_fast),
		cmocka_unit_test(test_slow_drift_stays_slow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
