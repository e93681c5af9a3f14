// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target for quantity_parse / quantity_format. Beyond "no crash, no UB", it checks
 * properties a wrong parser would break: the only errors are -EINVAL and -ERANGE, accepted text
 * uses only the quantity alphabet, an explicit sign behaves like Kubernetes' (± symmetric, since
 * Value() rounds away from zero), and quantity_format's output parses back to the same value.
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
			fprintf(stderr, "fuzz_quantity: %s: ", #cond);              \
			fprintf(stderr, __VA_ARGS__);                               \
			fputc('\n', stderr);                                        \
			abort();                                                    \
		}                                                                   \
	} while (0)

/* quantity_format's output must come back unchanged. */
static void check_format_round_trip(int64_t value)
{
	char buf[32];
	int64_t back = 0;
	int n, err;

	n = quantity_format(value, buf, sizeof(buf));
	CHECK(n > 0 && (size_t)n == strlen(buf), "%" PRId64 " -> %d", value, n);
	err = quantity_parse(buf, &back);
	CHECK(err == 0 && back == value, "%" PRId64 " -> \"%s\" -> %d %" PRId64, value, buf, err, back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text, *signed_text;
	int64_t raw, value = 0, other = 0;
	int err, err2;

	/* The raw bytes as a number: every int64 must format and parse back. */
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

	err = quantity_parse(text, &value);
	CHECK(err == 0 || err == -EINVAL || err == -ERANGE, "\"%s\" -> %d", text, err);
	if (err == 0) {
		CHECK(strspn(text, "+-0123456789.eEinumkKMGTP") == strlen(text),
		      "accepted junk \"%s\"", text);
		CHECK(text[0] == '-' ? value <= 0 : value >= 0, "\"%s\" -> %" PRId64, text, value);
		check_format_round_trip(value);
	}

	/* Without a sign of its own, "+x" means x and "-x" means -x (or fails the same way).
	 * Not for "": ParseQuantity refuses it, but reads "+" and "-" as 0. */
	if (text[0] && text[0] != '+' && text[0] != '-' && strlen(text) == size) {
		signed_text[0] = '+';
		err2 = quantity_parse(signed_text, &other);
		CHECK(err2 == err && (err || other == value), "\"%s\": %d %" PRId64 " vs %d %" PRId64,
		      signed_text, err2, other, err, value);

		signed_text[0] = '-';
		err2 = quantity_parse(signed_text, &other);
		/* A decimal may reach -2^63 where +2^63 failed; nothing else may differ. */
		if (!(err == -ERANGE && err2 == 0 && other == INT64_MIN))
			CHECK(err2 == err && (err || other == (int64_t)(0 - (uint64_t)value)),
			      "\"%s\": %d %" PRId64 " vs %d %" PRId64, signed_text, err2, other, err,
			      value);
	}

	free(signed_text);
	return 0;
}
