/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* "Did you mean ...?" for a mistyped name: the closest of a list of known names. One helper
 * for flags (config/options_help.c) and signal names (core/signal_meta.c). */
#ifndef EVICTD_CORE_SUGGEST_H
#define EVICTD_CORE_SUGGEST_H

#include <stddef.h>

/* Optimal string alignment distance (Levenshtein plus one adjacent transposition, so
 * "availble" is one edit from "available"), ASCII case-insensitive; names longer than 63
 * bytes count as far from everything. */
unsigned suggest_distance(const char *a, const char *b);

struct suggest {
	const char *typed;
	const char *best;	/* NULL until a candidate is close enough */
	unsigned best_distance;
};

void suggest_begin(struct suggest *s, const char *typed);
/* Offer one known name; the closest one within max(2, typed length / 5) edits is kept (a
 * looser bound turns "disk.available" into "pid.available"); a tie keeps the first. A known
 * name the typed one is a prefix of counts as one edit. */
void suggest_offer(struct suggest *s, const char *candidate);

#endif
