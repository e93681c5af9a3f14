/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Saturating int64 arithmetic: thresholds, deadlines and quantities near INT64_MAX (which the
 * configuration accepts) must clamp, never wrap. */
#ifndef EVICTD_CORE_ARITH_H
#define EVICTD_CORE_ARITH_H

#include <stdint.h>

static inline int64_t sat_add_i64(int64_t a, int64_t b)
{
	int64_t sum;

	if (!__builtin_add_overflow(a, b, &sum))
		return sum;
	return b > 0 ? INT64_MAX : INT64_MIN;
}

static inline int64_t sat_sub_i64(int64_t a, int64_t b)
{
	int64_t diff;

	if (!__builtin_sub_overflow(a, b, &diff))
		return diff;
	return b < 0 ? INT64_MAX : INT64_MIN;
}

static inline int64_t sat_mul_i64(int64_t a, int64_t b)
{
	int64_t product;

	if (!__builtin_mul_overflow(a, b, &product))
		return product;
	return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
}

#endif
