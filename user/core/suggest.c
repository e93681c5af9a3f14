// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The closest known name to a mistyped one (core/suggest.h). */
#include <ctype.h>
#include <string.h>

#include "core/suggest.h"

#define SUGGEST_NAME_MAX 64

static unsigned min3(unsigned a, unsigned b, unsigned c)
{
	unsigned m = a < b ? a : b;

	return m < c ? m : c;
}

unsigned suggest_distance(const char *a, const char *b)
{
	/* Three rows of the dynamic programme: two back for a transposition. */
	unsigned rows[3][SUGGEST_NAME_MAX + 1];
	size_t la = strlen(a), lb = strlen(b);

	if (la >= SUGGEST_NAME_MAX || lb >= SUGGEST_NAME_MAX)
		return ~0u;
	for (size_t j = 0; j <= lb; j++)
		rows[0][j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned *cur = rows[i % 3], *prev = rows[(i - 1) % 3], *prev2 = rows[(i + 1) % 3];
		int ca = tolower((unsigned char)a[i - 1]);

		cur[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			int cb = tolower((unsigned char)b[j - 1]);
			unsigned cost = ca != cb;

			cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
			if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == cb && prev2[j - 2] + 1 < cur[j])
				cur[j] = prev2[j - 2] + 1;
		}
	}
	return rows[la % 3][lb];
}

void suggest_begin(struct suggest *s, const char *typed)
{
	s->typed = typed ? typed : "";
	s->best = NULL;
	s->best_distance = ~0u;
}

void suggest_offer(struct suggest *s, const char *candidate)
{
	size_t len = strlen(s->typed);
	unsigned bound = (unsigned)(len / 5 > 2 ? len / 5 : 2);
	unsigned d;

	if (!candidate || !len)
		return;
	/* A prefix of a known name ("--eviction") is as good a guess as a typo. */
	d = strncmp(candidate, s->typed, len) == 0 ? 1 : suggest_distance(s->typed, candidate);
	if (d <= bound && d < s->best_distance) {
		s->best = candidate;
		s->best_distance = d;
	}
}
