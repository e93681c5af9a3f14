// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A maximum over the last minute, for evictd_loop_iteration_max_seconds. A since-start
 * maximum never comes down, so an alert on it never resolves; a windowed one falls back once
 * the stall is a minute old. Buckets of a fixed length keep it O(1) in memory; the window is
 * between (buckets - 1) and buckets lengths long.
 */
#include "ops/metrics.h"

void metrics_window_max_observe(struct metrics_window_max *window, int64_t now_ns, int64_t value)
{
	int64_t epoch = now_ns / METRICS_LOOP_BUCKET_NS + 1;
	size_t slot = (size_t)(epoch % METRICS_LOOP_WINDOW_BUCKETS);

	if (!window || now_ns < 0)
		return;
	if (window->bucket_epoch[slot] != epoch) {
		window->bucket_epoch[slot] = epoch;
		window->bucket_max[slot] = value;
	} else if (value > window->bucket_max[slot]) {
		window->bucket_max[slot] = value;
	}
}

int64_t metrics_window_max_get(const struct metrics_window_max *window, int64_t now_ns)
{
	int64_t epoch = now_ns / METRICS_LOOP_BUCKET_NS + 1, max = 0;

	if (!window)
		return 0;
	for (size_t i = 0; i < METRICS_LOOP_WINDOW_BUCKETS; i++) {
		int64_t age = epoch - window->bucket_epoch[i];

		if (window->bucket_epoch[i] && age >= 0 && age < METRICS_LOOP_WINDOW_BUCKETS &&
		    window->bucket_max[i] > max)
			max = window->bucket_max[i];
	}
	return max;
}
