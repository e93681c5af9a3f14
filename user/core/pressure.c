// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The memory pressure criterion (pressure.h): parsing PSI text (the kernel's
 * kernel/sched/psi.c psi_show prints "%s avg10=%lu.%02lu avg60=... avg300=... total=%llu")
 * and holding a limit for a duration as systemd-oomd does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/pressure.h"

/* "12.34" -> 1234; the kernel prints two decimals. */
static int parse_centi(const char *text, const char **end, int32_t *out)
{
	char *stop;
	unsigned long whole, frac = 0;

	whole = strtoul(text, &stop, 10);
	if (stop == text || whole > 100 || text[0] == '-' || text[0] == '+' || text[0] == ' ')
		return -EINVAL;
	if (*stop == '.') {
		const char *digits = stop + 1;

		frac = strtoul(digits, &stop, 10);
		if (stop - digits == 1)
			frac *= 10;	/* "12.5" as typed; the kernel prints two digits */
		else if (stop - digits != 2)
			return -EINVAL;
	}
	*out = (int32_t)(whole * 100 + frac);
	*end = stop;
	return 0;
}

static int parse_line(const char *line, struct psi_line *out)
{
	const char *p = line;
	char *stop;

	if (strncmp(p, "avg10=", 6) || parse_centi(p + 6, &p, &out->avg10))
		return -EINVAL;
	if (strncmp(p, " avg60=", 7) || parse_centi(p + 7, &p, &out->avg60))
		return -EINVAL;
	if (strncmp(p, " avg300=", 8) || parse_centi(p + 8, &p, &out->avg300))
		return -EINVAL;
	if (strncmp(p, " total=", 7))
		return -EINVAL;
	out->total_us = strtoull(p + 7, &stop, 10);
	if (stop == p + 7 || (*stop && *stop != '\n'))
		return -EINVAL;
	return 0;
}

int pressure_parse(const char *text, struct psi_reading *out)
{
	const char *full;

	memset(out, 0, sizeof(*out));
	if (!text || strncmp(text, "some ", 5) || parse_line(text + 5, &out->some))
		return -EINVAL;
	full = strstr(text, "\nfull ");
	if (full) {
		if (parse_line(full + 6, &out->full))
			return -EINVAL;
		out->has_full = true;
	}
	return 0;
}

void pressure_state_init(struct pressure_state *state)
{
	state->above_since_ns = -1;
	state->last_ns = -1;
	state->last_total_us = 0;
	state->last_value = 0;
}

bool pressure_update(const struct pressure_criterion *criterion, struct pressure_state *state,
		     const struct psi_reading *reading, int64_t now_ns)
{
	const struct psi_line *line = criterion->kind == PRESSURE_FULL ? &reading->full : &reading->some;
	int32_t value;

	if (!criterion->on || (criterion->kind == PRESSURE_FULL && !reading->has_full))
		return false;
	switch (criterion->window) {
	case PRESSURE_AVG10:
		value = line->avg10;
		break;
	case PRESSURE_AVG60:
		value = line->avg60;
		break;
	case PRESSURE_TOTAL:
	default: {
		/* The stall share since the previous reading: microseconds stalled over the
		 * microseconds elapsed. The first reading only sets the baseline. */
		int64_t elapsed_us = (now_ns - state->last_ns) / 1000;
		uint64_t stalled;

		if (state->last_ns < 0 || elapsed_us <= 0) {
			if (state->last_ns < 0) {
				state->last_ns = now_ns;
				state->last_total_us = line->total_us;
			}
			return false;
		}
		stalled = line->total_us >= state->last_total_us ? line->total_us - state->last_total_us : 0;
		value = stalled >= (uint64_t)elapsed_us ? 10000 : (int32_t)(stalled * 10000 / (uint64_t)elapsed_us);
		state->last_ns = now_ns;
		state->last_total_us = line->total_us;
		break;
	}
	}
	state->last_value = value;
	/* oomd_pressure_above: above the limit starts (or keeps) the clock; at or below it
	 * resets it; the duration met is the verdict. */
	if (value <= criterion->limit) {
		state->above_since_ns = -1;
		return false;
	}
	if (state->above_since_ns < 0)
		state->above_since_ns = now_ns;
	return now_ns - state->above_since_ns >= criterion->duration_ns;
}

static const char *const window_names[] = { "avg10", "avg60", "total" };

int pressure_criterion_format(const struct pressure_criterion *criterion, char *buf, unsigned long len)
{
	int n;

	if (!criterion->on)
		n = snprintf(buf, len, "off");
	else
		n = snprintf(buf, len, "%s %s>%d.%02d%% for %llds",
			     criterion->kind == PRESSURE_FULL ? "full" : "some",
			     window_names[criterion->window], criterion->limit / 100, criterion->limit % 100,
			     (long long)(criterion->duration_ns / 1000000000));
	return n < 0 || (unsigned long)n >= len ? -ENOSPC : 0;
}

int pressure_criterion_parse(const char *text, struct pressure_criterion *criterion)
{
	char copy[64], *save = NULL, *word;
	struct pressure_criterion parsed = *criterion;
	bool have_limit = false;

	if (!text || strlen(text) >= sizeof(copy))
		return -EINVAL;
	if (!strcasecmp(text, "off")) {
		criterion->on = false;
		return 0;
	}
	/* Defaults of systemd-oomd (src/oom/oomd-manager.h): full avg10. */
	parsed.kind = PRESSURE_FULL;
	parsed.window = PRESSURE_AVG10;
	strcpy(copy, text);
	for (word = strtok_r(copy, " ,", &save); word; word = strtok_r(NULL, " ,", &save)) {
		size_t len = strlen(word);
		const char *end;
		int32_t limit;

		if (!strcmp(word, "some") || !strcmp(word, "full")) {
			parsed.kind = word[0] == 's' ? PRESSURE_SOME : PRESSURE_FULL;
		} else if (!strcmp(word, "avg10") || !strcmp(word, "avg60") || !strcmp(word, "total")) {
			parsed.window = word[3] == '1' ? PRESSURE_AVG10 : word[3] == '6' ? PRESSURE_AVG60 :
				       PRESSURE_TOTAL;
		} else if (!have_limit && len > 1 && word[len - 1] == '%') {
			word[len - 1] = '\0';
			if (parse_centi(word, &end, &limit) || *end || limit <= 0 || limit >= 10000)
				return -EINVAL;
			parsed.limit = limit;
			have_limit = true;
		} else {
			return -EINVAL;
		}
	}
	if (!have_limit)
		return -EINVAL;
	parsed.on = true;
	*criterion = parsed;
	return 0;
}
