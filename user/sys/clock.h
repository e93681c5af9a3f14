/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The two clocks evictd uses: CLOCK_MONOTONIC for every deadline and latency (the same clock
 * as bpf_ktime_get_ns()), CLOCK_REALTIME only for timestamps shown to people and the API. */
#ifndef EVICTD_SYS_CLOCK_H
#define EVICTD_SYS_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t clock_monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static inline int64_t clock_realtime_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

#endif
