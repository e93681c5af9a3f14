// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Kubernetes quantities and Go durations (user/core/quantity.c).
 *
 * Quantity rows come from k8s.io/apimachinery/pkg/api/resource/quantity_test.go
 * (TestQuantityParse table and its "invalid" list), with the expected value being
 * Quantity.Value(), plus our own edge cases. Duration rows are Go's src/time/time_test.go
 * parseDurationTests, parseDurationErrorTests and durationTests (Go >= 1.17, after
 * golang.org/issue/48629), copied verbatim and extended.
 */
#include "testutil.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>

#include "core/quantity.h"

#define KI (INT64_C(1) << 10)
#define MI (INT64_C(1) << 20)
#define GI (INT64_C(1) << 30)
#define TI (INT64_C(1) << 40)
#define PI (INT64_C(1) << 50)
#define EI (INT64_C(1) << 60)

#define NS INT64_C(1)
#define US (INT64_C(1000) * NS)
#define MS (INT64_C(1000) * US)
#define SEC (INT64_C(1000) * MS)
#define MIN (INT64_C(60) * SEC)
#define HOUR (INT64_C(60) * MIN)

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct parse_case {
	const char *in;
	int err;
	int64_t want;
};

static void check_parse_table(int (*parse)(const char *, int64_t *), const char *name,
			      const struct parse_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const int64_t sentinel = INT64_C(0x5a5a5a5a5a5a5a5a);
		int64_t got = sentinel;
		int err = parse(cases[i].in, &got);

		if (err != cases[i].err)
			fail_msg("%s(\"%s\") = %d, want %d", name, cases[i].in, err, cases[i].err);
		if (!err && got != cases[i].want)
			fail_msg("%s(\"%s\") -> %" PRId64 ", want %" PRId64, name, cases[i].in, got,
				 cases[i].want);
		if (err && got != sentinel)
			fail_msg("%s(\"%s\") failed but wrote %" PRId64, name, cases[i].in, got);
	}
}

/* k8s quantity_test.go TestQuantityParse, each row's expected Quantity taken through Value(). */
static const struct parse_case k8s_quantity_cases[] = {
	{ "0", 0, 0 }, { "0n", 0, 0 }, { "0u", 0, 0 }, { "0m", 0, 0 }, { "0Ki", 0, 0 },
	{ "0k", 0, 0 }, { "0Mi", 0, 0 }, { "0M", 0, 0 }, { "0Gi", 0, 0 }, { "0G", 0, 0 },
	{ "0Ti", 0, 0 }, { "0T", 0, 0 },
	{ "1", 0, 1 },
	/* Binary suffixes */
	{ "1Ki", 0, 1024 }, { "8Ki", 0, 8 * KI }, { "7Mi", 0, 7 * MI }, { "6Gi", 0, 6 * GI },
	{ "5Ti", 0, 5 * TI }, { "4Pi", 0, 4 * PI }, { "3Ei", 0, 3 * EI },
	{ "10Ti", 0, 10 * TI }, { "100Ti", 0, 100 * TI },
	/* Decimal suffixes */
	{ "5n", 0, 1 }, { "4u", 0, 1 }, { "3m", 0, 1 }, { "9", 0, 9 }, { "8k", 0, 8000 },
	{ "50k", 0, 50000 }, { "7M", 0, 7000000 }, { "6G", 0, INT64_C(6000000000) },
	{ "5T", 0, INT64_C(5000000000000) }, { "40T", 0, INT64_C(40000000000000) },
	{ "300T", 0, INT64_C(300000000000000) }, { "2P", 0, INT64_C(2000000000000000) },
	{ "1E", 0, INT64_C(1000000000000000000) },
	/* Decimal exponents */
	{ "1E-3", 0, 1 }, { "1e3", 0, 1000 }, { "1E6", 0, 1000000 }, { "1e9", 0, 1000000000 },
	{ "1E12", 0, INT64_C(1000000000000) }, { "1e15", 0, INT64_C(1000000000000000) },
	{ "1E18", 0, INT64_C(1000000000000000000) },
	/* Nonstandard but still parsable */
	{ "1e14", 0, INT64_C(100000000000000) }, { "1e13", 0, INT64_C(10000000000000) },
	{ "100.035k", 0, 100035 },
	/* Things that look like floating point */
	{ "0.001", 0, 1 }, { "0.0005k", 0, 1 }, { "0.005", 0, 1 }, { "0.05", 0, 1 },
	{ "0.5", 0, 1 }, { "0.00050k", 0, 1 }, { "0.00500", 0, 1 }, { "0.05000", 0, 1 },
	{ "0.50000", 0, 1 }, { "0.5e0", 0, 1 }, { "0.5e-1", 0, 1 }, { "0.5e-2", 0, 1 },
	{ "10.035M", 0, 10035000 },
	{ "1.2e3", 0, 1200 }, { "1.3E+6", 0, 1300000 }, { "1.40e9", 0, 1400000000 },
	{ "1.53E12", 0, INT64_C(1530000000000) }, { "1.6e15", 0, INT64_C(1600000000000000) },
	{ "1.7E18", 0, INT64_C(1700000000000000000) },
	{ "9.01", 0, 10 }, { "8.1k", 0, 8100 }, { "7.123456M", 0, 7123456 },
	{ "6.987654321G", 0, INT64_C(6987654321) }, { "5.444T", 0, INT64_C(5444000000000) },
	{ "40.1T", 0, INT64_C(40100000000000) }, { "300.2T", 0, INT64_C(300200000000000) },
	{ "2.5P", 0, INT64_C(2500000000000000) }, { "1.01E", 0, INT64_C(1010000000000000000) },
	/* Things that saturate/round */
	{ "3.001n", 0, 1 }, { "1.1E-9", 0, 1 }, { "0.0000000001", 0, 1 },
	{ "0.0000000005", 0, 1 }, { "0.00000000050", 0, 1 }, { "0.5e-9", 0, 1 },
	{ "0.9n", 0, 1 }, { "0.00000012345", 0, 1 }, { "0.00000012354", 0, 1 },
	/* Kubernetes keeps 12E exactly (beyond int64) and caps the next two at maxAllowed
	 * (2^63-1); compared with any int64 all three act as INT64_MAX, our cap. */
	{ "12E", 0, INT64_MAX },
	{ "9Ei", 0, INT64_MAX }, { "9223372036854775807Ki", 0, INT64_MAX },
	/* We'll accept fractional binary stuff, too. */
	{ "100.035Ki", 0, 102436 },		/* 102435.84 */
	{ "0.5Mi", 0, 512 * KI },
	{ "0.05Gi", 0, 53687092 },		/* 53687091.2 */
	{ "0.025Ti", 0, INT64_C(27487790695) },	/* 27487790694.4 */
	/* Things written by trolls */
	{ "0.000000000001Ki", 0, 1 }, { ".001", 0, 1 }, { ".0001k", 0, 1 }, { "1.", 0, 1 },
	{ "1.G", 0, 1000000000 },
};

static const struct parse_case k8s_quantity_invalid[] = {
	{ "", -EINVAL, 0 }, { "1.1.M", -EINVAL, 0 }, { "1+1.0M", -EINVAL, 0 },
	{ "0.1mi", -EINVAL, 0 }, { "0.1am", -EINVAL, 0 }, { "aoeu", -EINVAL, 0 },
	{ ".5i", -EINVAL, 0 }, { "1i", -EINVAL, 0 }, { "-3.01i", -EINVAL, 0 },
	{ "-3.01e-", -EINVAL, 0 }, { " 1", -EINVAL, 0 }, { "1 ", -EINVAL, 0 },
	/* No space anywhere (parseQuantityString has no TrimSpace; only map flags trim). */
	{ " 100Mi", -EINVAL, 0 }, { "100Mi ", -EINVAL, 0 }, { "\t1Gi", -EINVAL, 0 },
	{ "1Gi\n", -EINVAL, 0 }, { "1 Mi", -EINVAL, 0 }, { "1e 3", -EINVAL, 0 },
	{ "+ 1", -EINVAL, 0 }, { "1 .5", -EINVAL, 0 }, { "\xc2\xa0" "1", -EINVAL, 0 },
	{ "1\r", -EINVAL, 0 }, { "1\v", -EINVAL, 0 }, { "1\f", -EINVAL, 0 }, { " ", -EINVAL, 0 },
	/* TestInterpretExponentInt32Bounds: exponents past int32 are refused, not truncated. */
	{ "1e4294967297", -ERANGE, 0 },
	{ "1E2147483648", -ERANGE, 0 }, { "1E-2147483648", -ERANGE, 0 },
	{ "1E8589934592", -ERANGE, 0 }, { "1E9223372036854775807", -ERANGE, 0 },
	{ "1E9223372036854775808", -ERANGE, 0 }, { "1E6024865272343", -ERANGE, 0 },
};

static void test_quantity_k8s_table(void **state)
{
	check_parse_table(quantity_parse_capped, "quantity_parse_capped", k8s_quantity_cases,
			  ARRAY_SIZE(k8s_quantity_cases));
	check_parse_table(quantity_parse_capped, "quantity_parse_capped", k8s_quantity_invalid,
			  ARRAY_SIZE(k8s_quantity_invalid));
}

/* TestQuantityParse also reparses every row with "-" and "+" in front. */
static void test_quantity_k8s_table_signed(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(k8s_quantity_cases); i++) {
		const struct parse_case *row = &k8s_quantity_cases[i];
		char text[64];
		int64_t got;

		if (row->err)
			continue;
		snprintf(text, sizeof(text), "-%s", row->in);
		assert_int_equal(quantity_parse_capped(text, &got), 0);
		/* A capped decimal goes to INT64_MIN, a capped binarySI one to -(2^63-1). */
		if (got != -row->want && !(row->want == INT64_MAX && got == INT64_MIN))
			fail_msg("\"%s\" -> %" PRId64 ", want %" PRId64, text, got, -row->want);
		snprintf(text, sizeof(text), "+%s", row->in);
		assert_int_equal(quantity_parse_capped(text, &got), 0);
		if (got != row->want)
			fail_msg("\"%s\" -> %" PRId64 ", want %" PRId64, text, got, row->want);
	}
}

static const struct parse_case quantity_cases[] = {
	/* Every suffix once more, with a fraction where it rounds. */
	{ "1n", 0, 1 }, { "1u", 0, 1 }, { "1m", 0, 1 }, { "1000m", 0, 1 }, { "1001m", 0, 2 },
	{ "1500m", 0, 2 }, { "500m", 0, 1 }, { "250m", 0, 1 }, { "1000000u", 0, 1 },
	{ "1000000001n", 0, 2 }, { "10k", 0, 10000 }, { "500M", 0, 500000000 },
	{ "1.5G", 0, 1500000000 }, { "1T", 0, INT64_C(1000000000000) },
	{ "1P", 0, INT64_C(1000000000000000) }, { "9E", 0, INT64_C(9000000000000000000) },
	{ "100Mi", 0, 100 * MI }, { "1Gi", 0, GI }, { "1Ti", 0, TI }, { "1Pi", 0, PI },
	{ "1Ei", 0, EI }, { "7Ei", 0, 7 * EI }, { "8191Pi", 0, 8191 * PI },
	/* Fractions are exact, not floating point. */
	{ "1.5", 0, 2 }, { "1.5Gi", 0, INT64_C(1610612736) }, { "0.1Ki", 0, 103 },
	{ "1.1Ki", 0, 1127 }, { "2.5Ki", 0, 2560 }, { ".5Gi", 0, 512 * MI },
	{ "5.Gi", 0, 5 * GI }, { "0.3Ei", 0, INT64_C(345876451382054093) },
	{ "1.234567890123456789Pi", 0, INT64_C(1389999872480895) },
	{ "0.0009765625Ki", 0, 1 },		/* exactly 1/1024 */
	/* A non-zero digit far past any fixed precision still rounds up. */
	{ "0.00097656250000000000000000000000000000000000000000000000000000000000000000001Ki", 0, 2 },
	{ "0.00097656249999999999999999999999999999999999999999999999999999999999999999999Ki", 0, 1 },
	{ "1.00000000000000000000000000000000000000000000000000000000000000000000000000001", 0, 2 },
	{ "1023.99999999999999999999999999999999999999999999999999999999999999999999999", 0, 1024 },
	{ "0.99999999999999999999999999999Ki", 0, 1024 },
	{ "99999999999999999999999999999999e-30", 0, 100 },
	{ "18446744073709551615e-19", 0, 2 },
	{ "1000000000000000000000e-3", 0, INT64_C(1000000000000000000) },
	{ "0.00000000000000000001e20", 0, 1 },
	{ "00000000000000000000000000000000000000001", 0, 1 },
	{ "0.000001e6", 0, 1 }, { "123456789e-9", 0, 1 }, { "12e-1", 0, 2 }, { "10e-1", 0, 1 },
	{ "1e-2147483647", 0, 1 }, { "1.5e-2147483647", 0, 1 }, { "1e+3", 0, 1000 },
	{ "1e-0", 0, 1 }, { "1e03", 0, 1000 }, { "1e0000000000000000000000003", 0, 1000 },
	{ "1.e3", 0, 1000 }, { "1.0Ki", 0, 1024 },
	/* Zero, however it is written, even with an absurd exponent. */
	{ "-0", 0, 0 }, { "+0", 0, 0 }, { "00", 0, 0 }, { "0.0", 0, 0 }, { "0.", 0, 0 },
	{ ".0", 0, 0 }, { "0e99", 0, 0 }, { "0.000Mi", 0, 0 }, { "0Ei", 0, 0 },
	{ "0e2147483647", 0, 0 }, { "-0.0e-5", 0, 0 },
	/* Signs round away from zero. */
	{ "-500m", 0, -1 }, { "+500m", 0, 1 }, { "-1.5", 0, -2 }, { "-0.1Ki", 0, -103 },
	{ "-1Ki", 0, -KI }, { "+1E3", 0, 1000 }, { "-1e-10", 0, -1 }, { "-1.5Gi", 0, -1610612736 },
	/* int64 limits. */
	{ "9223372036854775807", 0, INT64_MAX },
	{ "9223372036854775806.5", 0, INT64_MAX },
	{ "9.223372036854775807e18", 0, INT64_MAX },
	{ "7.999999999999999999Ei", 0, INT64_MAX },
	{ "9223372036854775807000m", 0, INT64_MAX },
	{ "-9223372036854775808", 0, INT64_MIN },
	{ "-9223372036854775807.5", 0, INT64_MIN },
	/* Beyond int64: capped (ParseQuantity caps binarySI at 2^63-1 and keeps decimal
	 * amounts exact, so every comparison with an int64 agrees with the cap). */
	{ "9223372036854775808", 0, INT64_MAX },
	{ "9223372036854775807.5", 0, INT64_MAX },
	{ "9223372036854775807.000000000000000000000000000000000000000000000000000000000000000000001",
	  0, INT64_MAX },
	{ "-9223372036854775809", 0, INT64_MIN },
	{ "9.223372036854775808e18", 0, INT64_MAX },
	{ "100000000000000000000", 0, INT64_MAX },
	{ "1e19", 0, INT64_MAX }, { "10E", 0, INT64_MAX }, { "9.3E", 0, INT64_MAX },
	{ "1e2147483647", 0, INT64_MAX }, { "-1e2147483647", 0, INT64_MIN },
	{ "8Ei", 0, INT64_MAX }, { "-8Ei", 0, -INT64_MAX }, { "8192Pi", 0, INT64_MAX },
	{ "7.9999999999999999999999Ei", 0, INT64_MAX },
	{ "1024Ei", 0, INT64_MAX },
	/* An exponent beyond int32 is refused (TestInterpretExponentInt32Bounds). */
	{ "1e99999999999999999999", -ERANGE, 0 },
	/* Malformed. */
	{ "1 Mi", -EINVAL, 0 }, { "1mi", -EINVAL, 0 },
	{ "1KiB", -EINVAL, 0 }, { "1.5.5", -EINVAL, 0 }, { "1e", -EINVAL, 0 },
	{ "1e+", -EINVAL, 0 }, { "1E+-3", -EINVAL, 0 }, { "1ee3", -EINVAL, 0 },
	{ "1Ee3", -EINVAL, 0 }, { "1e3Mi", -EINVAL, 0 }, { "1Ki5", -EINVAL, 0 },
	{ "1K", -EINVAL, 0 }, { "1k3", -EINVAL, 0 }, { "1e3.5", -EINVAL, 0 },
	{ "0x10", -EINVAL, 0 }, { "1,5", -EINVAL, 0 }, { "1_000", -EINVAL, 0 },
	{ "1\n", -EINVAL, 0 }, { "1.5 Gi", -EINVAL, 0 }, { "Inf", -EINVAL, 0 },
	{ "NaN", -EINVAL, 0 }, { "+-1", -EINVAL, 0 }, { "--1", -EINVAL, 0 },
	{ "1-5", -EINVAL, 0 }, { "1e99999999999999999999x", -EINVAL, 0 },
	{ "\xef\xbc\x91", -EINVAL, 0 },		/* fullwidth digit one */
	/* parseQuantityString reads a number with no digits as 0 (TestParseQuantityString:
	 * ".", "-."); so does quantity_parse. */
	{ "Mi", 0, 0 }, { ".", 0, 0 }, { "+", 0, 0 }, { "-", 0, 0 }, { "-.", 0, 0 },
	{ "k", 0, 0 }, { "e3", 0, 0 }, { ".Mi", 0, 0 }, { "E", 0, 0 }, { "-Gi", 0, 0 },
};

static void test_quantity_parse(void **state)
{
	check_parse_table(quantity_parse_capped, "quantity_parse_capped", quantity_cases,
			  ARRAY_SIZE(quantity_cases));
}

/* quantity_parse is quantity_parse_capped except that a value beyond int64 is -ERANGE. */
static void test_quantity_parse_strict(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(quantity_cases); i++) {
		const struct parse_case *row = &quantity_cases[i];
		int64_t strict = 42, capped;
		int err = quantity_parse(row->in, &strict);
		int capped_err = quantity_parse_capped(row->in, &capped);
		bool at_cap = !capped_err && (capped == INT64_MAX || capped == -INT64_MAX ||
					      capped == INT64_MIN);

		if (!capped_err && !err && strict == capped)
			continue;
		if (capped_err && err == capped_err)
			continue;
		/* Only a value at the cap may differ, and then strict says -ERANGE. */
		if (!(at_cap && err == -ERANGE && strict == 42))
			fail_msg("\"%s\": strict %d %" PRId64 ", capped %d %" PRId64, row->in, err,
				 strict, capped_err, capped);
	}
	{
		int64_t value;

		assert_int_equal(quantity_parse("1e19", &value), -ERANGE);
		assert_int_equal(quantity_parse("9Ei", &value), -ERANGE);
		assert_int_equal(quantity_parse("9223372036854775807", &value), 0);
		assert_int_equal(value, INT64_MAX);
	}
}

static void test_quantity_parse_null(void **state)
{
	int64_t value;

	assert_int_equal(quantity_parse(NULL, &value), -EINVAL);
	assert_int_equal(quantity_parse("1", NULL), -EINVAL);
	assert_int_equal(duration_parse(NULL, &value), -EINVAL);
	assert_int_equal(duration_parse("1s", NULL), -EINVAL);
}

struct format_case {
	int64_t in;
	const char *want;
};

static const struct format_case quantity_format_cases[] = {
	{ 0, "0" }, { 1, "1" }, { 1000, "1000" }, { 1023, "1023" }, { 1024, "1Ki" },
	{ 1536, "1536" }, { 2048, "2Ki" }, { 1000000, "1000000" }, { 1024000, "1000Ki" },
	{ MI, "1Mi" }, { 100 * MI, "100Mi" }, { INT64_C(1610612736), "1536Mi" }, { GI, "1Gi" },
	{ TI, "1Ti" }, { PI, "1Pi" }, { EI, "1Ei" }, { 7 * EI, "7Ei" }, { 1024 * PI, "1Ei" },
	{ 8191 * PI, "8191Pi" }, { INT64_MAX, "9223372036854775807" },
	{ -1, "-1" }, { -1024, "-1Ki" }, { -1536, "-1536" }, { -7 * EI, "-7Ei" },
	/* "-8Ei" would be clamped by Kubernetes, so plain digits. */
	{ INT64_MIN, "-9223372036854775808" },
};

static void test_quantity_format(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(quantity_format_cases); i++) {
		const struct format_case *row = &quantity_format_cases[i];
		char buf[32];
		int64_t back;
		int n = quantity_format(row->in, buf, sizeof(buf));

		if (n < 0 || strcmp(buf, row->want) != 0)
			fail_msg("quantity_format(%" PRId64 ") = %d \"%s\", want \"%s\"", row->in, n, buf,
				 row->want);
		assert_int_equal(n, strlen(row->want));
		assert_int_equal(quantity_parse(buf, &back), 0);
		assert_true(back == row->in);
	}
}

static void test_quantity_format_nospace(void **state)
{
	char buf[8];

	memset(buf, 'x', sizeof(buf));
	assert_int_equal(quantity_format(MI, buf, 3), -ENOSPC);	/* "1Mi" needs 4 */
	assert_string_equal(buf, "");
	assert_int_equal(quantity_format(MI, buf, 4), 3);
	assert_string_equal(buf, "1Mi");
	assert_int_equal(quantity_format(0, buf, 0), -ENOSPC);
	assert_int_equal(quantity_format(0, buf, 1), -ENOSPC);
	assert_int_equal(quantity_format(0, buf, 2), 1);
	assert_string_equal(buf, "0");
}

/* Go src/time/time_test.go parseDurationTests (all rows valid). */
static const struct parse_case go_parse_duration_tests[] = {
	/* simple */
	{ "0", 0, 0 }, { "5s", 0, 5 * SEC }, { "30s", 0, 30 * SEC }, { "1478s", 0, 1478 * SEC },
	/* sign */
	{ "-5s", 0, -5 * SEC }, { "+5s", 0, 5 * SEC }, { "-0", 0, 0 }, { "+0", 0, 0 },
	/* decimal */
	{ "5.0s", 0, 5 * SEC }, { "5.6s", 0, 5 * SEC + 600 * MS }, { "5.s", 0, 5 * SEC },
	{ ".5s", 0, 500 * MS }, { "1.0s", 0, 1 * SEC }, { "1.00s", 0, 1 * SEC },
	{ "1.004s", 0, 1 * SEC + 4 * MS }, { "1.0040s", 0, 1 * SEC + 4 * MS },
	{ "100.00100s", 0, 100 * SEC + 1 * MS },
	/* different units */
	{ "10ns", 0, 10 * NS }, { "11us", 0, 11 * US },
	{ "12\xc2\xb5s", 0, 12 * US },	/* U+00B5 */
	{ "12\xce\xbcs", 0, 12 * US },	/* U+03BC */
	{ "13ms", 0, 13 * MS }, { "14s", 0, 14 * SEC }, { "15m", 0, 15 * MIN },
	{ "16h", 0, 16 * HOUR },
	/* composite durations */
	{ "3h30m", 0, 3 * HOUR + 30 * MIN },
	{ "10.5s4m", 0, 4 * MIN + 10 * SEC + 500 * MS },
	{ "-2m3.4s", 0, -(2 * MIN + 3 * SEC + 400 * MS) },
	{ "1h2m3s4ms5us6ns", 0, 1 * HOUR + 2 * MIN + 3 * SEC + 4 * MS + 5 * US + 6 * NS },
	{ "39h9m14.425s", 0, 39 * HOUR + 9 * MIN + 14 * SEC + 425 * MS },
	/* large value */
	{ "52763797000ns", 0, INT64_C(52763797000) * NS },
	/* more than 9 digits after decimal point, see https://golang.org/issue/6617 */
	{ "0.3333333333333333333h", 0, 20 * MIN },
	/* 9007199254740993 = 1<<53+1 cannot be stored precisely in a float64 */
	{ "9007199254740993ns", 0, ((INT64_C(1) << 53) + 1) * NS },
	/* largest duration that can be represented by int64 in nanoseconds */
	{ "9223372036854775807ns", 0, INT64_MAX },
	{ "9223372036854775.807us", 0, INT64_MAX },
	{ "9223372036s854ms775us807ns", 0, INT64_MAX },
	{ "-9223372036854775808ns", 0, INT64_MIN },
	{ "-9223372036854775.808us", 0, INT64_MIN },
	{ "-9223372036s854ms775us808ns", 0, INT64_MIN },
	/* largest negative round trip value, see https://golang.org/issue/48629 */
	{ "-2562047h47m16.854775808s", 0, INT64_MIN },
	/* huge string; issue 15011. */
	{ "0.100000000000000000000h", 0, 6 * MIN },
	/* This value tests the first overflow check in leadingFraction. */
	{ "0.830103483285477580700h", 0, 49 * MIN + 48 * SEC + 372539827 * NS },
};

/* Go src/time/time_test.go parseDurationErrorTests; Go's overflow errors are -ERANGE here. */
static const struct parse_case go_parse_duration_error_tests[] = {
	/* invalid */
	{ "", -EINVAL, 0 }, { "3", -EINVAL, 0 }, { "-", -EINVAL, 0 }, { "s", -EINVAL, 0 },
	{ ".", -EINVAL, 0 }, { "-.", -EINVAL, 0 }, { ".s", -EINVAL, 0 }, { "+.s", -EINVAL, 0 },
	{ "1d", -EINVAL, 0 }, { "\x85\x85", -EINVAL, 0 }, { "\xff" "ff", -EINVAL, 0 },
	{ "hello \xff" "ff world", -EINVAL, 0 },
	{ "\xef\xbf\xbd", -EINVAL, 0 },				/* utf8.RuneError */
	{ "\xef\xbf\xbd hello \xef\xbf\xbd world", -EINVAL, 0 },
	/* overflow */
	{ "9223372036854775810ns", -ERANGE, 0 }, { "9223372036854775808ns", -ERANGE, 0 },
	{ "-9223372036854775809ns", -ERANGE, 0 }, { "9223372036854776us", -ERANGE, 0 },
	{ "3000000h", -ERANGE, 0 }, { "9223372036854775.808us", -ERANGE, 0 },
	{ "9223372036854ms775us808ns", -ERANGE, 0 },
};

static const struct parse_case duration_cases[] = {
	{ "1m30s", 0, 90 * SEC }, { "500ms", 0, 500 * MS }, { "2h", 0, 2 * HOUR },
	{ "1.5h", 0, 90 * MIN }, { "-3s", 0, -3 * SEC }, { "5m", 0, 5 * MIN },
	{ "1h30m", 0, 90 * MIN }, { "-1m30s", 0, -90 * SEC }, { "1.s", 0, SEC },
	{ "0s", 0, 0 }, { "-0s", 0, 0 }, { "0.0s", 0, 0 }, { "0h0m0s", 0, 0 },
	{ "1.5\xc2\xb5s", 0, 1500 * NS }, { "1.5us", 0, 1500 * NS },
	{ "1s1s", 0, 2 * SEC }, { "1m1h", 0, HOUR + MIN },
	{ "0.000000001s", 0, 1 }, { "0.0000000001s", 0, 0 }, { "0.9ns", 0, 0 },
	{ "1.0000000000000000000000000000001s", 0, SEC },
	{ "00000000000000000000000000001s", 0, SEC },
	{ "2562047h47m16.854775807s", 0, INT64_MAX },
	{ "2562047h47m16.854775808s", -ERANGE, 0 },
	{ "-2562047h47m16.854775809s", -ERANGE, 0 },
	{ "2562048h", -ERANGE, 0 },
	/* Go wraps its sum to 0 here; we refuse. */
	{ "9223372036854775808ns9223372036854775808ns", -ERANGE, 0 },
	{ "-9223372036854775808ns9223372036854775808ns", -ERANGE, 0 },
	{ "-9223372036854775808ns1ns", -ERANGE, 0 },
	{ "99999999999999999999s", -ERANGE, 0 },
	/* Malformed. */
	{ "1", -EINVAL, 0 }, { "00", -EINVAL, 0 }, { "0.0", -EINVAL, 0 }, { "1x", -EINVAL, 0 },
	{ "1m-30s", -EINVAL, 0 }, { "1S", -EINVAL, 0 }, { "1sec", -EINVAL, 0 },
	{ "1 s", -EINVAL, 0 }, { "1s ", -EINVAL, 0 }, { " 1s", -EINVAL, 0 },
	{ "1\xc2\xb5", -EINVAL, 0 }, { "1e3s", -EINVAL, 0 }, { "+-1s", -EINVAL, 0 },
	{ "--1s", -EINVAL, 0 }, { "1h.", -EINVAL, 0 }, { "1..5s", -EINVAL, 0 },
	{ "1s.5", -EINVAL, 0 }, { "0 ", -EINVAL, 0 }, { "+", -EINVAL, 0 }, { "1Mi", -EINVAL, 0 },
};

static void test_duration_parse_go(void **state)
{
	check_parse_table(duration_parse, "duration_parse", go_parse_duration_tests,
			  ARRAY_SIZE(go_parse_duration_tests));
	check_parse_table(duration_parse, "duration_parse", go_parse_duration_error_tests,
			  ARRAY_SIZE(go_parse_duration_error_tests));
}

static void test_duration_parse(void **state)
{
	check_parse_table(duration_parse, "duration_parse", duration_cases, ARRAY_SIZE(duration_cases));
}

/* Go src/time/time_test.go durationTests, plus our own rows. */
static const struct format_case duration_format_cases[] = {
	{ 0, "0s" }, { 1 * NS, "1ns" }, { 1100 * NS, "1.1\xc2\xb5s" }, { 2200 * US, "2.2ms" },
	{ 3300 * MS, "3.3s" }, { 4 * MIN + 5 * SEC, "4m5s" }, { 4 * MIN + 5001 * MS, "4m5.001s" },
	{ 5 * HOUR + 6 * MIN + 7001 * MS, "5h6m7.001s" }, { 8 * MIN + 1 * NS, "8m0.000000001s" },
	{ INT64_MAX, "2562047h47m16.854775807s" }, { INT64_MIN, "-2562047h47m16.854775808s" },
	/* ours */
	{ 1500 * NS, "1.5\xc2\xb5s" }, { 500 * MS, "500ms" }, { 90 * SEC, "1m30s" },
	{ 2 * HOUR, "2h0m0s" }, { -90 * SEC, "-1m30s" }, { 1500 * MS, "1.5s" },
	{ MIN + 500 * MS, "1m0.5s" }, { 999 * NS, "999ns" }, { US, "1\xc2\xb5s" }, { MS, "1ms" },
	{ SEC, "1s" }, { 59 * SEC, "59s" }, { MIN, "1m0s" }, { HOUR, "1h0m0s" },
	{ 10 * SEC, "10s" }, { 5 * MIN, "5m0s" }, { 999999999 * NS, "999.999999ms" },
	{ -1, "-1ns" }, { -1500 * NS, "-1.5\xc2\xb5s" }, { HOUR + 1, "1h0m0.000000001s" },
};

static void test_duration_format(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(duration_format_cases); i++) {
		const struct format_case *row = &duration_format_cases[i];
		char buf[32], neg[40];
		int64_t back;
		int n = duration_format(row->in, buf, sizeof(buf));

		if (n < 0 || strcmp(buf, row->want) != 0)
			fail_msg("duration_format(%" PRId64 ") = %d \"%s\", want \"%s\"", row->in, n, buf,
				 row->want);
		assert_int_equal(n, strlen(row->want));
		assert_int_equal(duration_parse(buf, &back), 0);
		assert_true(back == row->in);

		/* TestDurationString: a positive row negated prints with a leading '-'. */
		if (row->in > 0) {
			snprintf(neg, sizeof(neg), "-%s", row->want);
			assert_int_equal(duration_format(-row->in, buf, sizeof(buf)), strlen(neg));
			assert_string_equal(buf, neg);
		}
	}
}

static void test_duration_format_nospace(void **state)
{
	char buf[32];

	memset(buf, 'x', sizeof(buf));
	assert_int_equal(duration_format(90 * SEC, buf, 5), -ENOSPC);	/* "1m30s" needs 6 */
	assert_string_equal(buf, "");
	assert_int_equal(duration_format(90 * SEC, buf, 6), 5);
	assert_string_equal(buf, "1m30s");
	assert_int_equal(duration_format(0, buf, 0), -ENOSPC);
	/* The longest output fits the 26 bytes callers are told to expect. */
	assert_int_equal(duration_format(INT64_MIN, buf, 26), 25);
}

/* TestParseDurationRoundTrip: String() parses back, here over a deterministic spread. */
static void test_duration_round_trip(void **state)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	for (int i = 0; i < 200000; i++) {
		char buf[32];
		int64_t d, back;

		/* xorshift64*, then reach every magnitude by shifting. */
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		d = (int64_t)((x * 0x2545f4914f6cdd1dULL) >> (i % 64));
		assert_true(duration_format(d, buf, sizeof(buf)) > 0);
		assert_int_equal(duration_parse(buf, &back), 0);
		if (back != d)
			fail_msg("%" PRId64 " -> \"%s\" -> %" PRId64, d, buf, back);
	}
}

static void test_quantity_round_trip(void **state)
{
	uint64_t x = 0x2545f4914f6cdd1dULL;

	for (int i = 0; i < 200000; i++) {
		char buf[32];
		int64_t v, back;

		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		v = (int64_t)((x * 0x9e3779b97f4a7c15ULL) >> (i % 64));
		/* Every other value a power-of-1024 multiple, so suffixes get exercised. */
		if (i & 1)
			v = (int64_t)((uint64_t)(v >> 40) << (10 * (i % 7)));
		assert_true(quantity_format(v, buf, sizeof(buf)) > 0);
		assert_int_equal(quantity_parse(buf, &back), 0);
		if (back != v)
			fail_msg("%" PRId64 " -> \"%s\" -> %" PRId64, v, buf, back);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quantity_k8s_table),
		cmocka_unit_test(test_quantity_k8s_table_signed),
		cmocka_unit_test(test_quantity_parse),
		cmocka_unit_test(test_quantity_parse_strict),
		cmocka_unit_test(test_quantity_parse_null),
		cmocka_unit_test(test_quantity_format),
		cmocka_unit_test(test_quantity_format_nospace),
		cmocka_unit_test(test_quantity_round_trip),
		cmocka_unit_test(test_duration_parse_go),
		cmocka_unit_test(test_duration_parse),
		cmocka_unit_test(test_duration_format),
		cmocka_unit_test(test_duration_format_nospace),
		cmocka_unit_test(test_duration_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
