// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The memory pressure criterion (DESIGN.md §1 "Memory pressure"): PSI text as the kernel prints
 * it, and a limit held for a duration on an injected clock, as systemd-oomd's
 * oomd_pressure_above (src/oom/oomd-util.c). */
#include "testutil.h"

#include <errno.h>

#include "core/pressure.h"

#define S(x) ((int64_t)(x) * 1000000000LL)

static void test_parse_kernel_text(void **state)
{
	struct psi_reading r;

	assert_int_equal(pressure_parse("some avg10=72.31 avg60=40.05 avg300=9.00 total=123456789\n"
					"full avg10=61.20 avg60=30.00 avg300=5.50 total=98765432\n", &r), 0);
	assert_int_equal(r.some.avg10, 7231);
	assert_int_equal(r.some.avg60, 4005);
	assert_int_equal(r.full.avg10, 6120);
	assert_int_equal(r.full.avg300, 550);
	assert_int_equal(r.full.total_us, 98765432ULL);
	assert_true(r.has_full);
	/* The node-v2 fixture's memory.pressure. */
	assert_int_equal(pressure_parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=1532871\n"
					"full avg10=0.00 avg60=0.00 avg300=0.00 total=1107302\n", &r), 0);
	assert_int_equal(r.some.total_us, 1532871ULL);
	assert_int_equal(pressure_parse("", &r), -EINVAL);
	assert_int_equal(pressure_parse("some avg10=abc avg60=0.00 avg300=0.00 total=1\n", &r), -EINVAL);
	assert_int_equal(pressure_parse("some avg10=0.00 avg60=0.00 avg300=0.00\n", &r), -EINVAL);
}

static struct psi_reading full_avg10(int32_t centi)
{
	struct psi_reading r = { .has_full = true };

	r.full.avg10 = centi;
	r.some.avg10 = centi;
	return r;
}

/* oomd's defaults: full avg10 > 60% for 30 s. 29 s above is not enough; a dip resets. */
static void test_limit_held_for_the_duration(void **state)
{
	struct pressure_criterion c = { 0 };
	struct pressure_state st;
	struct psi_reading high = full_avg10(7000), low = full_avg10(6000);

	assert_int_equal(pressure_criterion_parse("60%", &c), 0);
	c.duration_ns = S(30);
	assert_true(c.on && c.kind == PRESSURE_FULL && c.window == PRESSURE_AVG10 && c.limit == 6000);
	pressure_state_init(&st);
	assert_false(pressure_update(&c, &st, &high, S(100)));
	assert_false(pressure_update(&c, &st, &high, S(129)));
	assert_true(pressure_update(&c, &st, &high, S(130)));
	/* Exactly at the limit is not above it (oomd: "> limit"): the clock restarts. */
	assert_false(pressure_update(&c, &st, &low, S(131)));
	assert_false(pressure_update(&c, &st, &high, S(140)));
	assert_false(pressure_update(&c, &st, &high, S(169)));
	assert_true(pressure_update(&c, &st, &high, S(170)));
	/* "full" wanted, a file without a full line: never. */
	high.has_full = false;
	pressure_state_init(&st);
	assert_false(pressure_update(&c, &st, &high, S(0)));
	assert_false(pressure_update(&c, &st, &high, S(60)));
}

/* The total window: the stall share between readings, no 10 s average lag. */
static void test_total_window(void **state)
{
	struct pressure_criterion c = { 0 };
	struct pressure_state st;
	struct psi_reading r = { .has_full = true };

	assert_int_equal(pressure_criterion_parse("some total 20%", &c), 0);
	c.duration_ns = S(2);
	pressure_state_init(&st);
	r.some.total_us = 1000000;
	assert_false(pressure_update(&c, &st, &r, S(10)));	/* baseline */
	r.some.total_us += 500000;				/* 0.5 s stalled in 1 s: 50% */
	assert_false(pressure_update(&c, &st, &r, S(11)));
	assert_int_equal(st.last_value, 5000);
	r.some.total_us += 500000;
	assert_false(pressure_update(&c, &st, &r, S(12)));
	r.some.total_us += 500000;
	assert_true(pressure_update(&c, &st, &r, S(13)));	/* above since 11 s */
	r.some.total_us += 100000;				/* 10%: below */
	assert_false(pressure_update(&c, &st, &r, S(14)));
	assert_int_equal(st.last_value, 1000);
}

static void test_criterion_text(void **state)
{
	struct pressure_criterion c = { 0 };
	char buf[64];

	assert_int_equal(pressure_criterion_parse("some avg60 12.5%", &c), 0);
	c.duration_ns = S(30);
	assert_int_equal(pressure_criterion_format(&c, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "some avg60>12.50% for 30s");
	assert_int_equal(pressure_criterion_parse("off", &c), 0);
	assert_false(c.on);
	assert_int_equal(pressure_criterion_parse("full avg10", &c), -EINVAL);
	assert_int_equal(pressure_criterion_parse("100%", &c), -EINVAL);
	assert_int_equal(pressure_criterion_parse("0%", &c), -EINVAL);
	assert_int_equal(pressure_criterion_parse("-5%", &c), -EINVAL);
	assert_int_equal(pressure_criterion_parse("half 50%", &c), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_kernel_text),
		cmocka_unit_test(test_limit_held_for_the_duration),
		cmocka_unit_test(test_total_window),
		cmocka_unit_test(test_criterion_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
