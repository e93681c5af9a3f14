/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Kubernetes resource quantities and Go durations, the two value syntaxes of kubelet config. */
#ifndef EVICTD_QUANTITY_H
#define EVICTD_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

/* Parse a Kubernetes quantity ("100Mi", "1.5Gi", "1e9", "500M", "10k", "250m", "+1E3",
 * ".5Gi") as resource.ParseQuantity accepts it, and store its integer value rounded up
 * (away from zero) like Quantity.Value(): "1.5" -> 2, "500m" -> 1, "-500m" -> -1. The value
 * is exact (no floating point): "0.1Ki" -> 103. Whitespace is not accepted; a number without
 * digits ("Mi", ".", "-") is 0, as in Kubernetes. Returns 0, -EINVAL for a malformed text,
 * -ERANGE when the value does not fit in int64 or for an exponent beyond int32. *value is
 * written only on success. */
int quantity_parse(const char *text, int64_t *value);

/* The same, but a value beyond int64 is capped at INT64_MAX (INT64_MIN for a negative
 * decimal, -INT64_MAX for a negative binarySI one) instead of -ERANGE, as ParseQuantity caps
 * binarySI amounts at 2^63-1 and keeps larger decimal ones exactly (every comparison with an
 * int64 then agrees with the cap). The kubelet's eviction settings are read with this. */
int quantity_parse_capped(const char *text, int64_t *value);

/* Parse a Go duration (time.ParseDuration: "1m30s", "500ms", "2h", "1.5h", "-3s", "0",
 * units ns us µs μs ms s m h) into nanoseconds, with Go's own float64 rounding of fractions.
 * Returns 0, -EINVAL for a malformed text or -ERANGE on overflow. */
int duration_parse(const char *text, int64_t *nanoseconds);

/* Format nanoseconds as Go's Duration.String() does: "1m30s", "500ms", "2h0m0s", "0s",
 * "1.5µs" (U+00B5). The longest, "-2562047h47m16.854775808s", needs 26 bytes with the NUL.
 * Returns the length written, or -ENOSPC (buf then holds "" if len > 0) when buf is too small. */
int duration_format(int64_t nanoseconds, char *buf, size_t len);

/* Format a byte or count value exactly in the shortest binary-suffix form if it is a whole
 * multiple (1048576 -> "1Mi"), else as a plain integer (1536 -> "1536"). INT64_MIN stays plain
 * so the text parses back. Returns length or -ENOSPC (buf then holds "" if len > 0). */
int quantity_format(int64_t value, char *buf, size_t len);

#endif
