// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Kubernetes resource quantities and Go durations.
 *
 * quantity_parse follows k8s.io/apimachinery/pkg/api/resource (quantity.go parseQuantityString
 * and ParseQuantity, suffix.go interpret, Quantity.Value), but computes the value exactly with
 * integer arithmetic instead of through inf.Dec. duration_parse and duration_format are ports
 * of Go's time.ParseDuration (src/time/format.go) and Duration.String (src/time/time.go).
 */
#include "core/quantity.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define MAG_INT64_MAX ((uint64_t)INT64_MAX)
#define MAG_INT64_MIN ((uint64_t)INT64_MAX + 1)	/* |INT64_MIN| */

/* Kubernetes' suffix tables (suffix.go newSuffixer / fastLookup). */
static const struct quantity_suffix {
	const char *name;
	int exp10;
	int exp2;
} quantity_suffixes[] = {
	{ "", 0, 0 },
	{ "n", -9, 0 }, { "u", -6, 0 }, { "m", -3, 0 },
	{ "k", 3, 0 }, { "M", 6, 0 }, { "G", 9, 0 }, { "T", 12, 0 }, { "P", 15, 0 }, { "E", 18, 0 },
	{ "Ki", 0, 10 }, { "Mi", 0, 20 }, { "Gi", 0, 30 }, { "Ti", 0, 40 }, { "Pi", 0, 50 },
	{ "Ei", 0, 60 },
};

/*
 * Interpret the text after the number: a table suffix, or a decimal exponent "e"/"E" followed
 * by what strconv.ParseInt accepts (optional sign, at least one digit). Newer apimachinery
 * rejects an exponent outside [-MaxInt32, MaxInt32] (older releases silently truncated it to
 * int32, giving a value unrelated to the text); either way it has no faithful value here.
 */
static int parse_quantity_suffix(const char *suffix, int64_t *exp10, int *exp2)
{
	const char *p;
	bool negative = false, too_big = false;
	int64_t exponent = 0;

	for (size_t i = 0; i < sizeof(quantity_suffixes) / sizeof(quantity_suffixes[0]); i++) {
		if (strcmp(suffix, quantity_suffixes[i].name) == 0) {
			*exp10 = quantity_suffixes[i].exp10;
			*exp2 = quantity_suffixes[i].exp2;
			return 0;
		}
	}

	if (suffix[0] != 'e' && suffix[0] != 'E')
		return -EINVAL;
	p = suffix + 1;
	if (*p == '+' || *p == '-')
		negative = *p++ == '-';
	if (*p == '\0')
		return -EINVAL;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		/* Keep scanning after overflow: a bad character still makes it -EINVAL. */
		if (!too_big) {
			exponent = exponent * 10 + (*p - '0');
			too_big = exponent > INT32_MAX;
		}
	}
	if (too_big)
		return -ERANGE;
	*exp10 = negative ? -exponent : exponent;
	*exp2 = 0;
	return 0;
}

/*
 * Fractional decimal digits kept while scaling by 2^exp2. Any T >= exp2 (at most 60) gives an
 * exact ceiling: with L the input truncated to T fraction digits and k an integer, k/2^exp2
 * has at most exp2 fraction digits, so L < k/2^exp2 implies L + 10^-T <= k/2^exp2, and the
 * untruncated value (below L + 10^-T) times 2^exp2 stays below k as well. Digits dropped
 * beyond T therefore only matter through the "sticky" non-zero flag.
 */
#define QUANTITY_FRAC_DIGITS 64

/*
 * Ceiling of |digits * 10^exp10 * 2^exp2| into *magnitude, or -ERANGE above limit. digits is
 * the mantissa's text with at most one '.' in it, nothing else.
 */
static int quantity_magnitude(const char *digits, size_t ndigits, int64_t exp10, int exp2,
			      uint64_t limit, uint64_t *magnitude)
{
	uint8_t frac[QUANTITY_FRAC_DIGITS] = { 0 };
	size_t first = SIZE_MAX, last = 0, frac_digits = 0, sig_count = 0, pos = 0;
	int64_t point;		/* integer digits of the significant part, may be <= 0 */
	uint64_t int_part = 0;
	bool seen_point = false, sticky = false, frac_nonzero = false;

	/* Locate the significant digits (first and last non-zero) in digit-index space. */
	for (size_t i = 0; i < ndigits; i++) {
		if (digits[i] == '.') {
			seen_point = true;
			continue;
		}
		if (seen_point)
			frac_digits++;
		if (digits[i] != '0') {
			if (first == SIZE_MAX)
				first = pos;
			last = pos;
		}
		pos++;
	}
	if (first == SIZE_MAX) {
		*magnitude = 0;
		return 0;
	}

	/*
	 * value = S * 10^(exp10 - frac_digits + trailing zeros) * 2^exp2, S = digits first..last.
	 * point = number of digits of S left of the decimal point once the exponent is applied.
	 * exp10 is within int32 and the lengths come from a string, so int64 cannot overflow.
	 */
	sig_count = last - first + 1;
	point = (int64_t)pos - (int64_t)first - (int64_t)frac_digits + exp10;

	/* 10^19 exceeds every int64, whatever binary suffix follows. */
	if (point > 19)
		return -ERANGE;	/* quantity_parse caps it */
	/* Below 10^-19 even 2^60 times the value stays under 1: it rounds up to 1. */
	if (point < -18) {
		*magnitude = 1;
		return 0;
	}

	pos = 0;
	for (size_t i = 0; i < ndigits; i++) {
		int64_t j, q;

		if (digits[i] == '.')
			continue;
		if (pos < first || pos > last) {
			pos++;
			continue;
		}
		j = (int64_t)(pos - first);
		pos++;
		if (j < point) {
			int_part = int_part * 10 + (uint64_t)(digits[i] - '0');
			continue;
		}
		q = j - point;
		if (q < QUANTITY_FRAC_DIGITS)
			frac[q] = (uint8_t)(digits[i] - '0');
		else if (digits[i] != '0')
			sticky = true;
	}
	/* Zeros implied by a positive exponent past the last significant digit. */
	for (int64_t j = (int64_t)sig_count; j < point; j++)
		int_part *= 10;

	/* At most 19 digits above, so int_part < 10^19 < 2^64; a doubling of <= 2^63 fits too. */
	if (int_part > limit)
		return -ERANGE;
	for (int round = 0; round < exp2; round++) {
		unsigned int carry = 0;

		for (int q = QUANTITY_FRAC_DIGITS - 1; q >= 0; q--) {
			unsigned int doubled = frac[q] * 2u + carry;

			frac[q] = (uint8_t)(doubled % 10);
			carry = doubled / 10;
		}
		int_part = int_part * 2 + carry;
		if (int_part > limit)
			return -ERANGE;
	}

	for (int q = 0; q < QUANTITY_FRAC_DIGITS; q++)
		frac_nonzero |= frac[q] != 0;
	/* Value() rounds any fraction up (away from zero). */
	if (frac_nonzero || sticky) {
		if (int_part == limit)
			return -ERANGE;
		int_part++;
	}
	*magnitude = int_part;
	return 0;
}

/*
 * Grammar (quantity.go parseQuantityString): [+-]? digits* ('.' digits*)? suffix, where an
 * empty number ("Mi", "k", ".", "-", "+") reads as 0, as Kubernetes reads it. Nothing is
 * trimmed: ParseQuantity scans the string as given, so a space (or tab, newline) before the
 * number falls to the suffix, which then fails interpret (ErrSuffix), and one after it is a
 * non-digit in the exponent scan (ErrFormatWrong). " 100Mi" and "100Mi " are errors here
 * too; only the kubelet's map flags trim (component-base cli/flag, strings.TrimSpace).
 *
 * quantity_parse_capped caps values beyond int64 (quantity_parse refuses them with -ERANGE,
 * for callers where such a value is a mistake): ParseQuantity caps a binarySI amount at
 * 2^63-1 (maxAllowed) and keeps a larger decimal one exactly, so every comparison with an
 * int64 (available bytes, inodes, tasks) comes out as it does against the cap. A negative
 * one is capped at INT64_MIN (a decimal "-9223372036854775808" is exact).
 *
 * Differences from ParseQuantity (README, kubelet compatibility):
 *  - Exponents beyond int32 are -ERANGE (see parse_quantity_suffix); apimachinery rejects
 *    them too since it stopped truncating them.
 *  - For a negative non-integer, Value() on the int64 fast path rounds away from zero
 *    ("-500m" -> -1), but its inf.Dec path (scale_int.go scaledValue: truncate, then +1)
 *    gives "-0.1Ki" -> -101 and "-1e-10" -> 1. We always round away from zero, as Value()
 *    documents. No eviction setting accepts a negative value, so no decision depends on it.
 */
static int quantity_parse_mode(const char *text, int64_t *value, bool cap)
{
	const char *p, *number;
	size_t int_digits = 0, frac_digits = 0;
	bool negative = false, binary;
	int64_t exp10;
	uint64_t magnitude, limit;
	int exp2, err;

	if (!text || !value || !*text)
		return -EINVAL;	/* ParseQuantity: ErrFormatWrong for "" */
	p = text;
	if (*p == '+' || *p == '-')
		negative = *p++ == '-';
	number = p;
	while (*p >= '0' && *p <= '9') {
		p++;
		int_digits++;
	}
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			p++;
			frac_digits++;
		}
	}
	err = parse_quantity_suffix(p, &exp10, &exp2);
	if (err)
		return err;
	if (int_digits + frac_digits == 0) {
		*value = 0;	/* parseQuantityString: "if we stripped all numerator positions" */
		return 0;
	}

	binary = exp2 != 0;
	/* Only a decimal quantity reaches INT64_MIN; binarySI is clamped symmetrically. */
	limit = negative && !binary ? MAG_INT64_MIN : MAG_INT64_MAX;
	err = quantity_magnitude(number, (size_t)(p - number), exp10, exp2, limit, &magnitude);
	if (err == -ERANGE && cap)
		magnitude = limit;	/* capped, see above */
	else if (err)
		return err;

	if (!negative)
		*value = (int64_t)magnitude;
	else if (magnitude == MAG_INT64_MIN)
		*value = INT64_MIN;
	else
		*value = -(int64_t)magnitude;
	return 0;
}

int quantity_parse(const char *text, int64_t *value)
{
	return quantity_parse_mode(text, value, false);
}

int quantity_parse_capped(const char *text, int64_t *value)
{
	return quantity_parse_mode(text, value, true);
}

int quantity_format(int64_t value, char *buf, size_t len)
{
	static const char *const binary_suffixes[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
	uint64_t magnitude = value < 0 ? -(uint64_t)value : (uint64_t)value;
	int shift = 0, written;

	/*
	 * 0 has no suffix. INT64_MIN (-8Ei) stays plain digits: Kubernetes clamps a binarySI
	 * magnitude to 2^63-1, so "-8Ei" would not parse back to the same value.
	 */
	if (value != 0 && value != INT64_MIN) {
		while (shift < 6 && (magnitude & 1023) == 0) {
			magnitude >>= 10;
			shift++;
		}
	}
	written = snprintf(buf, len, "%s%" PRIu64 "%s", value < 0 ? "-" : "", magnitude,
			   binary_suffixes[shift]);
	if (written < 0 || (size_t)written >= len) {
		/* Callers that ignore the error still print a terminated (empty) string. */
		if (len)
			buf[0] = '\0';
		return -ENOSPC;
	}
	return written;
}

#define NSEC_PER_USEC 1000ULL
#define NSEC_PER_MSEC 1000000ULL
#define NSEC_PER_SEC 1000000000ULL
#define DURATION_MAG_MAX (1ULL << 63)	/* |INT64_MIN| */

/* unitMap in format.go; µ is U+00B5 (micro sign) and μ U+03BC (Greek mu), both in UTF-8. */
static const struct duration_unit {
	const char *name;
	uint64_t nanoseconds;
} duration_units[] = {
	{ "ns", 1 },
	{ "us", NSEC_PER_USEC },
	{ "\xc2\xb5s", NSEC_PER_USEC },
	{ "\xce\xbcs", NSEC_PER_USEC },
	{ "ms", NSEC_PER_MSEC },
	{ "s", NSEC_PER_SEC },
	{ "m", 60 * NSEC_PER_SEC },
	{ "h", 3600 * NSEC_PER_SEC },
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* leadingInt: [0-9]*, failing once the value passes 2^63. */
static int duration_leading_int(const char **s, uint64_t *x)
{
	const char *p = *s;
	uint64_t value = 0;

	for (; is_digit(*p); p++) {
		if (value > DURATION_MAG_MAX / 10)
			return -ERANGE;
		value = value * 10 + (uint64_t)(*p - '0');
		if (value > DURATION_MAG_MAX)
			return -ERANGE;
	}
	*x = value;
	*s = p;
	return 0;
}

/* leadingFraction: [0-9]*, silently dropping precision once the value would pass 2^63. */
static void duration_leading_fraction(const char **s, uint64_t *x, double *scale)
{
	const char *p = *s;
	uint64_t value = 0;
	bool overflow = false;

	*scale = 1;
	for (; is_digit(*p); p++) {
		uint64_t next;

		if (overflow)
			continue;
		if (value > (DURATION_MAG_MAX - 1) / 10) {
			overflow = true;
			continue;
		}
		next = value * 10 + (uint64_t)(*p - '0');
		if (next > DURATION_MAG_MAX) {
			overflow = true;
			continue;
		}
		value = next;
		*scale *= 10;
	}
	*x = value;
	*s = p;
}

/*
 * time.ParseDuration, statement for statement, including its float64 arithmetic for
 * fractions: "0.3333333333333333333h" is exactly 20m in Go only because of that rounding.
 * One deliberate difference: Go's running sum wraps when two terms of exactly 2^63 meet
 * ("9223372036854775808ns9223372036854775808ns" parses as 0); that is -ERANGE here.
 */
int duration_parse(const char *text, int64_t *nanoseconds)
{
	const char *s;
	uint64_t total = 0;
	bool negative = false;

	if (!text || !nanoseconds)
		return -EINVAL;
	s = text;
	if (*s == '-' || *s == '+')
		negative = *s++ == '-';
	/* Special case: a lone "0" (after the sign) needs no unit. */
	if (strcmp(s, "0") == 0) {
		*nanoseconds = 0;
		return 0;
	}
	if (*s == '\0')
		return -EINVAL;

	while (*s) {
		const struct duration_unit *unit = NULL;
		const char *start;
		uint64_t v, f = 0;
		double scale = 1;
		bool pre, post = false;
		size_t unit_len;
		int err;

		if (!(*s == '.' || is_digit(*s)))
			return -EINVAL;
		start = s;
		err = duration_leading_int(&s, &v);
		if (err)
			return err;
		pre = s != start;
		if (*s == '.') {
			s++;
			start = s;
			duration_leading_fraction(&s, &f, &scale);
			post = s != start;
		}
		/* No digits at all, e.g. ".s" or "-.s". */
		if (!pre && !post)
			return -EINVAL;

		/* The unit is everything up to the next number, so "1s " has unit "s ". */
		for (unit_len = 0; s[unit_len] && s[unit_len] != '.' && !is_digit(s[unit_len]); unit_len++)
			;
		if (unit_len == 0)
			return -EINVAL;
		for (size_t i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]); i++) {
			if (strlen(duration_units[i].name) == unit_len &&
			    memcmp(duration_units[i].name, s, unit_len) == 0) {
				unit = &duration_units[i];
				break;
			}
		}
		if (!unit)
			return -EINVAL;
		s += unit_len;

		if (v > DURATION_MAG_MAX / unit->nanoseconds)
			return -ERANGE;
		v *= unit->nanoseconds;
		if (f > 0) {
			/* Go: v += uint64(float64(f) * (float64(unit) / scale)); at most 3.6e12. */
			v += (uint64_t)((double)f * ((double)unit->nanoseconds / scale));
			if (v > DURATION_MAG_MAX)
				return -ERANGE;
		}
		if (v > DURATION_MAG_MAX - total)
			return -ERANGE;
		total += v;
	}

	if (negative) {
		*nanoseconds = total == DURATION_MAG_MAX ? INT64_MIN : -(int64_t)total;
		return 0;
	}
	if (total > (uint64_t)INT64_MAX)
		return -ERANGE;
	*nanoseconds = (int64_t)total;
	return 0;
}

/* fmtFrac: v/10^prec's fraction as ".ddd" without trailing zeros, written backwards from *w. */
static uint64_t duration_fmt_frac(char *buf, int *w, uint64_t v, int prec)
{
	bool print = false;

	for (int i = 0; i < prec; i++) {
		char digit = (char)(v % 10);

		print = print || digit != 0;
		if (print)
			buf[--*w] = (char)('0' + digit);
		v /= 10;
	}
	if (print)
		buf[--*w] = '.';
	return v;
}

/* fmtInt: v in decimal, written backwards from *w. */
static void duration_fmt_int(char *buf, int *w, uint64_t v)
{
	if (v == 0) {
		buf[--*w] = '0';
		return;
	}
	for (; v > 0; v /= 10)
		buf[--*w] = (char)('0' + v % 10);
}

/* Duration.String (time.go), built from the right like Go's [32]byte buffer. */
int duration_format(int64_t nanoseconds, char *buf, size_t len)
{
	/* Largest is "-2562047h47m16.854775808s", 25 bytes. */
	char out[32];
	int w = sizeof(out);
	uint64_t u = nanoseconds < 0 ? -(uint64_t)nanoseconds : (uint64_t)nanoseconds;
	size_t n;

	if (u < NSEC_PER_SEC) {
		/* Under a second, use a smaller unit so the leading digit is non-zero: "1.2ms". */
		int prec;

		out[--w] = 's';
		if (u == 0) {
			out[--w] = '0';
		} else {
			if (u < NSEC_PER_USEC) {
				prec = 0;
				out[--w] = 'n';
			} else if (u < NSEC_PER_MSEC) {
				/* U+00B5 micro sign, as Go prints it. */
				prec = 3;
				out[--w] = '\xb5';
				out[--w] = '\xc2';
			} else {
				prec = 6;
				out[--w] = 'm';
			}
			u = duration_fmt_frac(out, &w, u, prec);
			duration_fmt_int(out, &w, u);
		}
	} else {
		out[--w] = 's';
		u = duration_fmt_frac(out, &w, u, 9);
		/* u is now whole seconds. */
		duration_fmt_int(out, &w, u % 60);
		u /= 60;
		if (u > 0) {
			out[--w] = 'm';
			duration_fmt_int(out, &w, u % 60);
			u /= 60;
			/* Stop at hours: days can be different lengths. */
			if (u > 0) {
				out[--w] = 'h';
				duration_fmt_int(out, &w, u);
			}
		}
	}
	if (nanoseconds < 0)
		out[--w] = '-';

	n = sizeof(out) - (size_t)w;
	if (n >= len) {
		if (len)
			buf[0] = '\0';
		return -ENOSPC;
	}
	memcpy(buf, out + w, n);
	buf[n] = '\0';
	return (int)n;
}
