/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Private to ops/metrics.c (state, HTTP) and ops/exposition.c (the text format). */
#ifndef EVICTD_OPS_METRICS_INTERNAL_H
#define EVICTD_OPS_METRICS_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "ops/metrics.h"

struct metrics_counters {
	uint64_t evictions[EV_SIGNAL_COUNT][METRICS_RESULT_COUNT];
	uint64_t latency_bucket[METRICS_N_LATENCY_BUCKETS];	/* non-cumulative */
	uint64_t latency_count;
	double latency_sum_s;
	int64_t shutdown_start_unix_s;
	int64_t shutdown_end_unix_s;
	struct metrics_kube kube;
	struct metrics_can_evict can_evict;
};

/* The exposition text of one snapshot and the counters, in the Prometheus text format 0.0.4. */
void metrics_exposition_write(FILE *out, const struct metrics_snapshot *snap,
			      const struct metrics_counters *counters, const char *version,
			      const char *commit, int64_t start_unix_s);

#endif
