/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Rendering what evictd sees and decides: JSON (json-c) and a one-screen text form. */
#ifndef EVICTD_REPORT_H
#define EVICTD_REPORT_H

#include <stdio.h>

#include "config/config.h"
#include "core/rank.h"
#include "core/thresholds.h"

struct decision {
	int threshold_index;		/* into engine->thresholds; -1: nothing to do */
	const struct pod *victim;	/* NULL: no evictable candidate */
	size_t n_candidates;
	const char *reason;		/* why there is or is no victim */
	bool dry_run;
	/* --act-ahead: the threshold is not met yet, its time to exhaustion (the evaluation's
	 * ahead_seconds) is within the duration (doc/DESIGN.md "Seeing ahead"). */
	bool ahead;
};

struct json_object;
/* The --once document: signals, thresholds, conditions, decision. Caller puts the ref. */
struct json_object *report_json(const struct evictd_config *config,
				const struct eviction_engine *engine,
				const struct observations *obs, const struct evaluation *eval,
				const struct decision *decision);
void report_text(FILE *out, const struct eviction_engine *engine, const struct observations *obs,
		 const struct evaluation *eval, const struct decision *decision);
/* The daemon's live table after each round (dry run, debug): report_text to out only when out
 * is a terminal; to a journal or a file it would write a table per round until the disk is
 * full. Returns whether it was written. */
bool report_live(FILE *out, const struct eviction_engine *engine, const struct observations *obs,
		 const struct evaluation *eval, const struct decision *decision);

#endif
