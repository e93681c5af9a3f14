// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory wake-up pacing (doc/DESIGN.md "Data flow", 1. Wake-ups). The step is a quarter of
 * the margin, so wake-ups get denser as a threshold approaches; the BPF rate limit caps them.
 * Near a crossing a 1 ms limit turned the wake-ups into a 1 kHz poll that held the crossing
 * back by up to 1 ms (bench/results.md, "Detection latency (issue 24)"), so while the margin
 * keeps shrinking fast enough to cross soon the limit drops to 100 us, and it is back at 1 ms
 * as soon as it does not (compared over a window, pacing.h).
 */
#include "core/pacing.h"

void pacing_init(struct pacing *pacing)
{
	*pacing = (struct pacing){ 0 };
}

static int64_t clamp(int64_t v, int64_t low, int64_t high)
{
	return v < low ? low : v > high ? high : v;
}

/* Bytes that may be charged before the next look. The kubelet's test is `threshold >
 * available` (eviction/helpers.go thresholdsMet), so a margin of 0 is no crossing yet: the
 * next page is. Under two minimum steps a quarter would be clamped up past half the margin:
 * at most half of it then (with the per-CPU batches, BPF sees a step after at most 5/4 of it,
 * bpf/evictd.h). */
static int64_t step_bytes(int64_t margin)
{
	if (margin < 0)
		return PACING_BELOW_STEP_BYTES;
	if (margin < 2 * PACING_MIN_STEP_BYTES)
		return margin / 2;
	return clamp(margin / 4, PACING_MIN_STEP_BYTES, PACING_MAX_STEP_BYTES);
}

/* The margin shrinks at (then - margin) / dt: would it reach 0 within the horizon? In floating
 * point: bytes times ns overflow int64. */
static bool crossing_near(int64_t then, int64_t margin, int64_t dt_ns)
{
	double rate = (double)(then - margin) / (double)dt_ns;	/* bytes per ns, > 0 */

	return (double)margin <= rate * (double)PACING_FAST_HORIZON_NS;
}

/* A new observation: compare it with the older baseline, then slide the baselines once the
 * newer one is a window old. */
static void observe(struct pacing *pacing, int64_t margin, int64_t read_ns)
{
	int64_t dt;

	pacing->last_read_ns = read_ns;
	if (margin < 0 || !pacing->base[0].read_ns || read_ns < pacing->base[1].read_ns) {
		/* Below the threshold (kills under way), the first look, or a clock gone back. */
		pacing->fast = false;
		pacing->base[0].margin = pacing->base[1].margin = margin;
		pacing->base[0].read_ns = pacing->base[1].read_ns = read_ns;
		return;
	}
	dt = read_ns - pacing->base[0].read_ns;
	pacing->fast = dt > 0 && margin < pacing->base[0].margin &&
		       crossing_near(pacing->base[0].margin, margin, dt);
	if (read_ns - pacing->base[1].read_ns >= PACING_WINDOW_NS) {
		pacing->base[0] = pacing->base[1];
		pacing->base[1].margin = margin;
		pacing->base[1].read_ns = read_ns;
	}
}

struct pacing_memory pacing_memory(struct pacing *pacing, int64_t margin, int64_t read_ns,
				   int64_t page_size)
{
	struct pacing_memory out = { .min_interval_ns = PACING_SLOW_INTERVAL_NS };
	int64_t step;

	if (page_size <= 0)
		page_size = 4096;
	if (margin == INT64_MAX) {
		pacing_init(pacing);
		return out;	/* no memory threshold: no step */
	}
	step = step_bytes(margin) / page_size;
	out.step_pages = (uint64_t)(step > 0 ? step : 1);
	/* The same read time: an evaluation that did not re-read memory, the same answer. */
	if (read_ns != pacing->last_read_ns)
		observe(pacing, margin, read_ns);
	if (pacing->fast)
		out.min_interval_ns = PACING_FAST_INTERVAL_NS;
	return out;
}
