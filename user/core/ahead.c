// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Time to exhaustion by least squares over a window of readings (ahead.h; doc/DESIGN.md
 * "Seeing ahead"). */
#include <math.h>
#include <string.h>

#include "core/ahead.h"

struct fit {
	unsigned n;
	double slope;		/* units per second (negative: falling) */
	double intercept;	/* at the newest point's time */
	double slope_stderr;
	double resid_sd;
	int64_t first_ns, last_ns;
};

static const struct ahead_point *at(const struct ahead_series *series, unsigned i)
{
	return &series->point[(series->first + i) % AHEAD_SLOTS];
}

/* Ordinary least squares of available over time for the points [from, series->n) whose time is
 * at least since_ns; times in seconds before the newest point, so doubles keep their digits. */
static struct fit fit_points(const struct ahead_series *series, unsigned from, int64_t since_ns)
{
	struct fit fit = { 0 };
	double st = 0, sy = 0, stt = 0, sty = 0, sse = 0, mt, my, sxx;
	int64_t last_ns, base;

	if (!series->n)
		return fit;
	last_ns = at(series, series->n - 1)->at_ns;
	base = at(series, series->n - 1)->available;
	for (unsigned i = from; i < series->n; i++) {
		const struct ahead_point *p = at(series, i);
		double t = (double)(p->at_ns - last_ns) / 1e9, y = (double)(p->available - base);

		if (p->at_ns < since_ns)
			continue;
		if (!fit.n)
			fit.first_ns = p->at_ns;
		fit.n++;
		st += t, sy += y, stt += t * t, sty += t * y;
	}
	fit.last_ns = last_ns;
	if (fit.n < 2)
		return fit;
	mt = st / fit.n, my = sy / fit.n;
	sxx = stt - st * mt;
	if (sxx <= 0)
		return fit;
	fit.slope = (sty - st * my) / sxx;
	fit.intercept = my - fit.slope * mt;
	for (unsigned i = from; i < series->n; i++) {
		const struct ahead_point *p = at(series, i);
		double t = (double)(p->at_ns - last_ns) / 1e9, y = (double)(p->available - base);
		double r = y - (fit.intercept + fit.slope * t);

		if (p->at_ns >= since_ns)
			sse += r * r;
	}
	fit.intercept += (double)base;
	if (fit.n > 2) {
		fit.resid_sd = sqrt(sse / (fit.n - 2));
		fit.slope_stderr = fit.resid_sd / sqrt(sxx);
	}
	return fit;
}

void ahead_reset(struct ahead_series *series)
{
	memset(series, 0, sizeof(*series));
}

static void push(struct ahead_series *series, int64_t at_ns, int64_t available)
{
	if (series->n == AHEAD_SLOTS) {
		series->first = (series->first + 1) % AHEAD_SLOTS;
		series->n--;
	}
	series->point[(series->first + series->n) % AHEAD_SLOTS] = (struct ahead_point){ at_ns, available };
	series->n++;
}

void ahead_observe(struct ahead_series *series, int64_t at_ns, int64_t available)
{
	struct ahead_point *last = series->n ? (struct ahead_point *)at(series, series->n - 1) : NULL;
	struct fit fit;
	double predicted, off, allowed;

	if (last && at_ns < last->at_ns)
		return;	/* not monotonic: ignore rather than bend the fit */
	/* A burst of wake-ups keeps one point per AHEAD_SPACING_NS, the newest reading (its time
	 * moves with it, so the last point is always the latest known). */
	if (last && series->n > 1 && at_ns - at(series, series->n - 2)->at_ns < AHEAD_SPACING_NS) {
		*last = (struct ahead_point){ at_ns, available };
		return;
	}
	/* A step: the reading lies further from the line through the points before it than their
	 * own scatter (8 residual sds) and than a second of their rate allows. A kill that freed
	 * memory, or deleted files, is a new regime: the old rate says nothing about it. */
	fit = fit_points(series, 0, at_ns - AHEAD_WINDOW_NS);
	if (fit.n >= 3) {
		predicted = fit.intercept + fit.slope * (double)(at_ns - fit.last_ns) / 1e9;
		off = fabs((double)available - predicted);
		allowed = fmax(8 * fit.resid_sd, fabs(fit.slope));
		if (off > allowed && off >= 1) {
			unsigned resets = series->resets + 1;

			ahead_reset(series);
			series->resets = resets;
		}
	}
	push(series, at_ns, available);
}

struct ahead_estimate ahead_estimate(const struct ahead_series *series, int64_t target, int64_t now_ns)
{
	struct ahead_estimate estimate = { .none = AHEAD_FEW_POINTS };
	int64_t since = now_ns - AHEAD_WINDOW_NS, last_available;
	struct fit whole, newer;
	double rate, left, age_s;
	unsigned from = 0;

	whole = fit_points(series, 0, since);
	estimate.points = whole.n;
	estimate.span_ns = whole.n ? whole.last_ns - whole.first_ns : 0;
	if (whole.n < AHEAD_MIN_POINTS)
		return estimate;
	estimate.none = AHEAD_SHORT_WINDOW;
	if (estimate.span_ns < AHEAD_MIN_SPAN_NS)
		return estimate;
	estimate.none = AHEAD_NOT_FALLING;
	if (!(whole.slope < 0))
		return estimate;
	estimate.none = AHEAD_NOISY;
	rate = -whole.slope;
	if (whole.slope_stderr > AHEAD_MAX_REL_STDERR * rate)
		return estimate;
	estimate.none = AHEAD_BURSTY;
	if (whole.resid_sd > AHEAD_MAX_SCATTER_S * rate)
		return estimate;
	/* A burst that stopped, or one that started late in the window, fits a line through the
	 * whole window well enough; its newer half does not: it must fall at a like rate. */
	estimate.none = AHEAD_UNSTEADY;
	while (from < series->n && at(series, from)->at_ns < whole.first_ns + estimate.span_ns / 2)
		from++;
	newer = fit_points(series, from, since);
	if (newer.n < 3 || !(-newer.slope >= rate / AHEAD_HALF_FACTOR && -newer.slope <= rate * AHEAD_HALF_FACTOR))
		return estimate;

	estimate.none = AHEAD_SURE;
	estimate.rate_per_s = rate;
	estimate.rate_stderr = whole.slope_stderr;
	last_available = at(series, series->n - 1)->available;
	/* The newest reading, not the fitted line, says where availability is; the time since it
	 * was read has already gone by at the rate. */
	age_s = now_ns > whole.last_ns ? (double)(now_ns - whole.last_ns) / 1e9 : 0;
	left = (double)(last_available - target);
	estimate.seconds = fmax(0, left / rate - age_s);
	estimate.seconds_low = fmax(0, left / (rate + 2 * whole.slope_stderr) - age_s);
	/* rate - 2 stderr > 0 since stderr <= rate / 4. */
	estimate.seconds_high = fmax(0, left / (rate - 2 * whole.slope_stderr) - age_s);
	return estimate;
}

const char *ahead_none_name(enum ahead_none none)
{
	static const char *const names[] = {
		[AHEAD_SURE] = "sure",
		[AHEAD_FEW_POINTS] = "few points",
		[AHEAD_SHORT_WINDOW] = "short window",
		[AHEAD_NOT_FALLING] = "not falling",
		[AHEAD_NOISY] = "noisy",
		[AHEAD_BURSTY] = "bursty",
		[AHEAD_UNSTEADY] = "unsteady",
	};

	return (unsigned)none < sizeof(names) / sizeof(names[0]) ? names[none] : "unknown";
}
