// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Seeing ahead (policy.h; doc/DESIGN.md "Seeing ahead"): the policy's readings go into each
 * signal's series (core/ahead.c), and every threshold gets its time to exhaustion; with
 * --act-ahead a hard threshold that is sure to be reached soon is acted on as if met. */
#include <math.h>
#include <stdio.h>

#include "core/quantity.h"
#include "daemon/policy.h"

bool policy_ahead_applies(enum ev_signal signal)
{
	const struct signal_meta *meta = signal_meta(signal);

	/* memory.pressure is a verdict over a duration, not an amount used up; swap and zram
	 * only gate the memory thresholds. */
	return signal < EV_SIGNAL_COUNT && meta->unit != SIGNAL_UNIT_PERMYRIAD && !meta->swap_gate;
}

void policy_ahead_update(struct policy *policy)
{
	struct evaluation *eval = &policy->eval;
	int64_t now = policy->now_ns();

	for (int s = 0; s < EV_SIGNAL_COUNT; s++) {
		const struct observation *observed = &policy->obs.signal[s];
		struct ahead_series *series = &policy->ahead[s];

		if (!policy_ahead_applies(s) || !observed->present)
			continue;
		/* A wake-up that did not read this signal leaves its last reading: not a new point. */
		if (series->n && series->point[(series->first + series->n - 1) % AHEAD_SLOTS].at_ns ==
					 observed->read_at_ns)
			continue;
		ahead_observe(series, observed->read_at_ns, observed->available);
	}
	for (size_t i = 0; i < policy->engine.n_thresholds; i++) {
		enum ev_signal signal = policy->engine.thresholds[i].signal;
		struct ahead_estimate estimate;

		if (!policy_ahead_applies(signal) || !policy->obs.signal[signal].present)
			continue;
		estimate = ahead_estimate(&policy->ahead[signal], eval->threshold_value[i], now);
		eval->ahead_none[i] = (unsigned char)estimate.none;
		if (estimate.none != AHEAD_SURE)
			continue;
		eval->ahead_seconds[i] = estimate.seconds;
		eval->ahead_seconds_low[i] = estimate.seconds_low;
		eval->ahead_seconds_high[i] = estimate.seconds_high;
		eval->ahead_rate[i] = estimate.rate_per_s;
	}
}

int policy_ahead_pick(const struct policy *policy)
{
	const struct evaluation *eval = &policy->eval;
	double limit_s = (double)policy->config.act_ahead_ns / 1e9;
	int chosen = -1;

	if (!policy->config.act_ahead_ns)
		return -1;
	for (size_t i = 0; i < policy->engine.n_thresholds; i++) {
		const struct threshold *threshold = &policy->engine.thresholds[i];

		if (!threshold->hard || eval->met[i] || eval->ahead_none[i] != AHEAD_SURE)
			continue;
		/* The memory thresholds wait for swap to be short; so does acting ahead on them. */
		if (signal_meta(threshold->signal)->swap_gated && !eval->swap_short)
			continue;
		/* Sure: even at the slowest rate the estimate allows, it is reached in time. */
		if (eval->ahead_seconds_high[i] >= limit_s)
			continue;
		if (chosen < 0 || eval->ahead_seconds[i] < eval->ahead_seconds[chosen])
			chosen = (int)i;
	}
	return chosen;
}

const char *policy_ahead_reason(struct policy *policy)
{
	int index = policy->decision.threshold_index;
	const struct evaluation *eval = &policy->eval;
	const struct threshold *threshold;
	char limit[32];

	if (index < 0 || !policy->decision.ahead)
		return "";
	threshold = &policy->engine.thresholds[index];
	duration_format(policy->config.act_ahead_ns, limit, sizeof(limit));
	snprintf(policy->ahead_reason, sizeof(policy->ahead_reason),
		 "acting ahead (--act-ahead %s): %s reaches %s in %.2fs (%.2f-%.2fs) at %.4g %s/s",
		 limit, signal_name(threshold->signal), threshold->value.text, eval->ahead_seconds[index],
		 eval->ahead_seconds_low[index], eval->ahead_seconds_high[index], eval->ahead_rate[index],
		 signal_unit_name(threshold->signal));
	return policy->ahead_reason;
}
