// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target for duration_parse / duration_format. Beyond "no crash, no UB", it checks
 * that the only errors are -EINVAL and -ERANGE, that an explicit sign behaves like Go's
 * ("+x" is x, "-x" is -x), and that Duration.String-style output parses back to the same
 * value (Go's TestParseDurationRoundTrip), both for parsed input and for raw int64s.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/quantity.h"

#define CHECK(cond, ...)                                                            \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "fuzz_duration: %s: ", #cond);              \
			fprintf(stderr, __VA_ARGS__);                               \
			fputc('\n', stderr);                                        \
			abort();                                                    \
		}                                                                   \
	} while (0)

static void check_format_round_trip(int64_t ns)
{
	char buf[32];
	int64_t back = 0;
	int n, err;

	n = duration_format(ns, buf, sizeof(buf));
	/* The longest Go duration string is "-2562047h47m16.854775808s". */
	CHECK(n > 0 && n <= 25 && (size_t)n == strlen(buf), "%" PRId64 " -> %d", ns, n);
	err = duration_parse(buf, &back);
	CHECK(err == 0 && back == ns, "%" PRId64 " -> \"%s\" -> %d %" PRId64, ns, buf, err, back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text, *signed_text;
	int64_t raw, ns = 0, other = 0;
	int err, err2;

	if (size >= sizeof(raw)) {
		memcpy(&raw, data, sizeof(raw));
		check_format_round_trip(raw);
	}

	text = malloc(size + 2);
	if (!text)
		return 0;
	memcpy(text + 1, data, size);
	text[size + 1] = '\0';
	signed_text = text;
	text++;

	err = duration_parse(text, &ns);
	CHECK(err == 0 || err == -EINVAL || err == -ERANGE, "\"%s\" -> %d", text, err);
	if (err == 0) {
		CHECK(text[0] == '-' ? ns <= 0 : ns >= 0, "\"%s\" -> %" PRId64, text, ns);
		check_format_round_trip(ns);
	}

	if (text[0] != '+' && text[0] != '-' && strlen(text) == size) {
		signed_text[0] = '+';
		err2 = duration_parse(signed_text, &other);
		CHECK(err2 == err && (err || other == ns), "\"%s\": %d %" PRId64 " vs %d %" PRId64,
		      signed_text, err2, other, err, ns);

		signed_text[0] = '-';
		err2 = duration_parse(signed_text, &other);
		/* Only a sum of exactly 2^63 ns is valid negated and out of range positive. */
		if (!(err == -ERANGE && err2 == 0 && other == INT64_MIN))
			CHECK(err2 == err && (err || other == (int64_t)(0 - (uint64_t)ns)),
			      "\"%s\": %d %" PRId64 " vs %d %" PRId64, signed_text, err2, other, err,
			      ns);
	}

	free(signed_text);
	return 0;
}
