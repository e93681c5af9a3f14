/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Time to exhaustion (doc/DESIGN.md "Seeing ahead"): from a signal's recent readings, the rate
 * at which its availability falls and the seconds until it reaches a threshold, or no estimate
 * when the rate is not sure (too few readings, too short a window, too noisy, not falling, or
 * its newer half disagreeing with the whole). Pure logic with injected times: no I/O.
 */
#ifndef EVICTD_CORE_AHEAD_H
#define EVICTD_CORE_AHEAD_H

#include <stdbool.h>
#include <stdint.h>

#define AHEAD_SLOTS 128
/* Readings closer than this share a slot (the newest wins): a burst of BPF wake-ups is one
 * point, so the window is measured in time, not in wake-ups. */
#define AHEAD_SPACING_NS (100LL * 1000000)
/* The window the rate is fitted over, and the least span and number of points it needs. */
#define AHEAD_WINDOW_NS (10LL * 1000000000)
#define AHEAD_MIN_SPAN_NS (1LL * 1000000000)
#define AHEAD_MIN_POINTS 6
/* The slope's standard error must be at most this share of the slope (t >= 4). */
#define AHEAD_MAX_REL_STDERR 0.25
/* The readings' scatter about the line, as time at the rate (residual sd / rate), at most
 * this: bursts (a staircase) and jitter make the crossing time uncertain by about as much. */
#define AHEAD_MAX_SCATTER_S 0.25
/* The newer half's rate must lie within this factor of the whole window's. */
#define AHEAD_HALF_FACTOR 2.0

struct ahead_point {
	int64_t at_ns;
	int64_t available;
};

struct ahead_series {
	struct ahead_point point[AHEAD_SLOTS];	/* a ring, oldest at first */
	unsigned first, n;
	unsigned resets;	/* step changes seen (the fit started anew) */
};

enum ahead_none {
	AHEAD_SURE = 0,
	AHEAD_FEW_POINTS,	/* fewer than AHEAD_MIN_POINTS */
	AHEAD_SHORT_WINDOW,	/* spanning less than AHEAD_MIN_SPAN_NS */
	AHEAD_NOT_FALLING,	/* flat or rising */
	AHEAD_NOISY,		/* standard error too large for the slope */
	AHEAD_BURSTY,		/* readings scatter over more than AHEAD_MAX_SCATTER_S of the rate */
	AHEAD_UNSTEADY,		/* the newer half's rate differs from the window's */
};

struct ahead_estimate {
	enum ahead_none none;	/* AHEAD_SURE: the fields below hold */
	double rate_per_s;	/* decline, units per second (> 0) */
	double rate_stderr;	/* its standard error */
	double seconds;		/* until available reaches the target; 0 once at or below it */
	double seconds_low, seconds_high;	/* at rate +- 2 standard errors */
	unsigned points;
	int64_t span_ns;
};

void ahead_reset(struct ahead_series *series);
/* One reading at at_ns (monotonic, not before the last). A reading that jumps away from the
 * fitted line (a kill freed memory, files were deleted) starts the series anew. */
void ahead_observe(struct ahead_series *series, int64_t at_ns, int64_t available);
/* The time until the last reading's available falls to target, judged at now_ns: points
 * older than AHEAD_WINDOW_NS before now_ns are not used. */
struct ahead_estimate ahead_estimate(const struct ahead_series *series, int64_t target, int64_t now_ns);
/* "few points", "short window", ...; "sure" for AHEAD_SURE. */
const char *ahead_none_name(enum ahead_none none);

#endif
