/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Memory wake-up pacing (doc/DESIGN.md "Data flow", 1. Wake-ups): how much may be charged
 * before the BPF programs wake the daemon again (the step) and how often they may at most
 * (the rate limit). Pure logic with an injected clock: no I/O.
 */
#ifndef EVICTD_PACING_H
#define EVICTD_PACING_H

#include <stdint.h>

/* The rate limit far from a threshold or when the margin does not keep shrinking, and the one
 * while it does and a crossing is near. */
#define PACING_SLOW_INTERVAL_NS (1000 * 1000LL)
#define PACING_FAST_INTERVAL_NS (100 * 1000LL)
/* Fast only when the margin shrank at this many evaluations in a row ... */
#define PACING_FAST_AFTER 2
/* ... and the rate it shrinks at would reach the threshold within this. */
#define PACING_FAST_HORIZON_NS (8 * 1000 * 1000LL)
/* The smallest step far from a threshold, and the step below it (kills under way). */
#define PACING_MIN_STEP_BYTES (256 * 1024LL)
#define PACING_BELOW_STEP_BYTES (4 * 1024 * 1024LL)
#define PACING_MAX_STEP_BYTES (1024 * 1024 * 1024LL)

struct pacing {
	int64_t last_margin;	/* bytes at the last observation */
	int64_t last_read_ns;	/* when it was read; 0: none yet */
	unsigned shrinking;	/* observations in a row at which the margin shrank */
};

struct pacing_memory {
	uint64_t step_pages;	/* 0: no step wake-ups (no memory threshold) */
	uint64_t min_interval_ns;
};

void pacing_init(struct pacing *pacing);
/* The step and rate limit for a margin (bytes to the nearest memory threshold; INT64_MAX:
 * none) read at read_ns (CLOCK_MONOTONIC). A read_ns seen before is the same observation
 * (an evaluation that did not re-read memory): the answer is the same. */
struct pacing_memory pacing_memory(struct pacing *pacing, int64_t margin, int64_t read_ns,
				   int64_t page_size);

#endif
