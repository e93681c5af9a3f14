/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Memory wake-up pacing (doc/DESIGN.md "Data flow", 1. Wake-ups): how much may be charged
 * before the BPF programs wake the daemon again (the step) and how often they may at most
 * (the rate limit). Pure logic with an injected clock: no I/O.
 */
#ifndef EVICTD_PACING_H
#define EVICTD_PACING_H

#include <stdbool.h>
#include <stdint.h>

/* The rate limit far from a threshold or when the margin does not keep shrinking, and the one
 * while it does and a crossing is near. */
#define PACING_SLOW_INTERVAL_NS (1000 * 1000LL)
#define PACING_FAST_INTERVAL_NS (100 * 1000LL)
/* Fast while the margin shrinks, against what it was one to two windows ago, at a rate that
 * would reach the threshold within the horizon. A window, not the last read: memory.available
 * moves by up to ~0.5 MiB from read to read on its own (per-CPU vmstat deltas not yet folded,
 * mm/vmstat.c), as much as 1 GiB/s charges between two wake-ups 100 us apart. */
#define PACING_WINDOW_NS (1000 * 1000LL)
#define PACING_FAST_HORIZON_NS (8 * 1000 * 1000LL)
/* The smallest step far from a threshold, and the step below it (kills under way). */
#define PACING_MIN_STEP_BYTES (256 * 1024LL)
#define PACING_BELOW_STEP_BYTES (4 * 1024 * 1024LL)
#define PACING_MAX_STEP_BYTES (1024 * 1024 * 1024LL)

struct pacing {
	int64_t last_read_ns;	/* the last observation's read time; 0: none yet */
	bool fast;		/* its verdict */
	/* Baselines: base[1] the newest (at most a window old before it slides into base[0]),
	 * base[0] what the margin is compared with. read_ns 0: none. */
	struct {
		int64_t margin, read_ns;
	} base[2];
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
