// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The kubelet eviction manager's synchronize() bookkeeping, without the I/O.
 * Source of each rule: pkg/kubelet/eviction/eviction_manager.go and helpers.go. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/arith.h"
#include "core/quantity.h"
#include "core/ahead.h"
#include "core/thresholds.h"

/* Whether text has strconv.ParseFloat's syntax (Go src/strconv/atof.go readFloat,
 * special): [+-]? then "inf", "infinity" or "nan" in any case, a decimal mantissa with an
 * optional e exponent, or a 0x mantissa that must have a p exponent. No whitespace. Go
 * allows '_' between digits only after a base prefix ("0x_1p0"); that form is refused here
 * (README, kubelet compatibility). */
static bool go_float_syntax(const char *text)
{
	const char *p = text;
	bool hex = false, digits = false;

	if (*p == '+' || *p == '-')
		p++;
	if (!strcasecmp(p, "inf") || !strcasecmp(p, "infinity") || !strcasecmp(p, "nan"))
		return true;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		hex = true;
		p += 2;
	}
	for (bool point = false;; p++) {
		if (hex ? isxdigit((unsigned char)*p) : isdigit((unsigned char)*p))
			digits = true;
		else if (*p == '.' && !point)
			point = true;
		else
			break;
	}
	if (!digits)
		return false;
	if (hex ? (*p == 'p' || *p == 'P') : (*p == 'e' || *p == 'E')) {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
	} else if (hex) {
		return false;	/* "hexadecimal mantissa requires a 'p' exponent" */
	}
	return *p == '\0';
}

int percentage_parse(const char *text, float *fraction)
{
	char number[64];
	size_t len = strlen(text);
	float value;
	char *end;

	/* parsePercentage: strings.TrimRight(input, "%") drops every trailing '%'. */
	while (len && text[len - 1] == '%')
		len--;
	if (len == 0 || len >= sizeof(number))
		return -EINVAL;
	memcpy(number, text, len);
	number[len] = '\0';
	if (!go_float_syntax(number))
		return -EINVAL;
	/* strconv.ParseFloat(s, 32) rounds once, to float32, as strtof does (no double
	 * rounding through a double); it fails only on overflow, not on underflow. */
	errno = 0;
	value = strtof(number, &end);
	if (*end != '\0')
		return -EINVAL;
	if (errno == ERANGE && isinf(value))
		return -ERANGE;
	/* float32(value) / 100, in float32 like the kubelet. */
	*fraction = value / 100.0f;
	return 0;
}

int threshold_value_parse(const char *text, struct threshold_value *value, bool *disabled)
{
	size_t len = strlen(text);
	int err;

	memset(value, 0, sizeof(*value));
	*disabled = false;
	if (len == 0 || len >= sizeof(value->text))
		return -EINVAL;
	memcpy(value->text, text, len + 1);

	/* helpers.go parseThresholdStatement. */
	if (text[len - 1] == '%') {
		float fraction;

		/* "0%" and "100%", as written, mean "no threshold" ("0.0%" does not). */
		if (strcmp(text, "0%") == 0 || strcmp(text, "100%") == 0) {
			*disabled = true;
			return 0;
		}
		err = percentage_parse(text, &fraction);
		if (err)
			return err;
		/* NaN passes both of the kubelet's checks and then resolves to no number at all
		 * (int64 of NaN): refused here (README, kubelet compatibility). */
		if (isnan(fraction))
			return -EINVAL;
		if (fraction < 0 || fraction > 1)
			return -ERANGE;
		value->is_percentage = true;
		value->percentage = fraction;
		return 0;
	}

	err = quantity_parse_capped(text, &value->quantity);
	if (err)
		return err;
	if (value->quantity < 0)
		return -ERANGE;
	return 0;
}

int min_reclaim_parse(const char *text, struct threshold_value *value)
{
	size_t len = strlen(text);
	int err;

	memset(value, 0, sizeof(*value));
	if (len == 0 || len >= sizeof(value->text))
		return -EINVAL;
	memcpy(value->text, text, len + 1);

	/* helpers.go parseMinimumReclaims: a percentage must be positive ("0%" is an error,
	 * "100%" is 100%, there is no upper bound); a quantity must not be negative. */
	if (text[len - 1] == '%') {
		float fraction;

		err = percentage_parse(text, &fraction);
		if (err)
			return err;
		if (isnan(fraction))
			return -EINVAL;
		if (!(fraction > 0))
			return -ERANGE;
		value->is_percentage = true;
		value->percentage = fraction;
		return 0;
	}
	err = quantity_parse_capped(text, &value->quantity);
	if (err)
		return err;
	return value->quantity < 0 ? -ERANGE : 0;
}

int64_t threshold_value_resolve(const struct threshold_value *value, int64_t capacity)
{
	int64_t resolved = value->quantity;

	/* api GetThresholdQuantity: int64(float64(capacity.Value()) * float64(value.Percentage)).
	 * 100% of a capacity near INT64_MAX rounds to 2^63 as a double, which has no int64:
	 * clamp rather than convert out of range (undefined in C). */
	if (value->is_percentage) {
		double product = (double)capacity * (double)value->percentage;

		if (product >= 9223372036854775808.0)
			resolved = INT64_MAX;
		else if (product < -9223372036854775808.0)
			resolved = INT64_MIN;
		else
			resolved = (int64_t)product;
	}
	if (value->max_quantity > 0 && resolved > value->max_quantity)
		resolved = value->max_quantity;
	return resolved;
}

int threshold_format(const struct threshold *threshold, char *buf, size_t len)
{
	int written;

	written = snprintf(buf, len, "%s %s<%s", threshold->hard ? "hard" : "soft",
			   signal_name(threshold->signal), threshold->value.text);
	if (written >= 0 && !threshold->hard && (size_t)written < len) {
		char grace[32];

		duration_format(threshold->grace_period_ns, grace, sizeof(grace));
		written += snprintf(buf + written, len - written, " grace=%s", grace);
	}
	if (written < 0 || (size_t)written >= len)
		return -ENOSPC;
	return written;
}

static bool is_memory_signal(enum ev_signal signal)
{
	return signal_meta(signal)->group == SIGNAL_GROUP_MEMORY;
}

static void state_reset(struct eviction_state *state)
{
	memset(state->met_last_round, 0, sizeof(state->met_last_round));
	for (size_t i = 0; i < EV_MAX_THRESHOLDS; i++)
		state->first_observed_ns[i] = -1;
	for (size_t i = 0; i < EV_CONDITION_COUNT; i++)
		state->condition_last_observed_ns[i] = -1;
}

int engine_init(struct eviction_engine *engine, const struct threshold *thresholds, size_t n,
		int64_t pressure_transition_period_ns)
{
	size_t out = 0;

	if (n > EV_MAX_THRESHOLDS)
		return -E2BIG;
	/* byEvictionPriority: memory before all other resources; the rest keep their order. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++)
			if (is_memory_signal(thresholds[i].signal) == (pass == 0))
				engine->thresholds[out++] = thresholds[i];
	engine->n_thresholds = out;
	engine->pressure_transition_period_ns = pressure_transition_period_ns;
	state_reset(&engine->state);
	return 0;
}

/* helpers.go thresholdsMet: met when threshold (+ min reclaim) > available. */
static bool threshold_met(const struct threshold *threshold, const struct observation *observed,
			  bool enforce_min_reclaim, int64_t *resolved)
{
	int64_t quantity;

	if (!observed->present)
		return false;
	quantity = threshold_value_resolve(&threshold->value, observed->capacity);
	*resolved = quantity;
	if (enforce_min_reclaim)
		quantity = sat_add_i64(quantity, threshold_value_resolve(&threshold->min_reclaim,
									  observed->capacity));
	return quantity > observed->available;
}

/*
 * The swap gate (DESIGN.md §1 "Swap and zram"): with swap or zram thresholds configured, the
 * memory thresholds count only while swap is short too, as earlyoom kills only when both
 * MemAvailable and SwapFree are below their minimums (earlyoom main.c, main loop:
 * `m.MemAvailable <= mem_min && m.SwapFree <= swap_min`). Swap is short when free swap is
 * below its threshold, or zram, its backing store, is out of room whatever SwapFree says
 * (zram_drv.c __zram_bvec_write, zram_write_page in later kernels: -ENOMEM once the pool passes
 * limit_pages). Free swap on zram is room only while RAM can hold its compressed copy: the
 * observation already counts it so (swap.c signals_swap_effective_free). No swap at all
 * (swap.available not present: SwapTotal 0) leaves nothing to wait for: open.
 */
bool engine_swap_gate_open(const struct eviction_engine *engine, const struct observations *obs)
{
	bool any_gate = false;

	for (size_t i = 0; i < engine->n_thresholds; i++) {
		const struct threshold *threshold = &engine->thresholds[i];
		int64_t resolved;

		if (!signal_meta(threshold->signal)->swap_gate)
			continue;
		any_gate = true;
		if (threshold_met(threshold, &obs->signal[threshold->signal], false, &resolved))
			return true;
	}
	return !any_gate || !obs->signal[EV_SIGNAL_SWAP_AVAILABLE].present;
}

void engine_evaluate(struct eviction_engine *engine, const struct observations *obs,
		     int64_t now_ns, struct evaluation *out)
{
	struct eviction_state *state = &engine->state;
	bool condition_now[EV_CONDITION_COUNT] = { false };
	bool swap_short = engine_swap_gate_open(engine, obs);

	memset(out, 0, sizeof(*out));
	out->act_on = -1;
	out->swap_short = swap_short;
	for (size_t i = 0; i < EV_MAX_THRESHOLDS; i++)
		out->ahead_none[i] = AHEAD_FEW_POINTS;	/* until the caller estimates */

	for (size_t i = 0; i < engine->n_thresholds; i++) {
		const struct threshold *threshold = &engine->thresholds[i];
		const struct observation *observed = &obs->signal[threshold->signal];
		int64_t resolved = 0;
		bool met;

		/* thresholdsMet(thresholds, observations, false), merged with the thresholds
		 * acted on last round that are not yet resolved (enforceMinReclaim=true). */
		met = threshold_met(threshold, observed, false, &resolved);
		if (!met && state->met_last_round[i])
			met = threshold_met(threshold, observed, true, &resolved);
		out->threshold_value[i] = resolved;
		if (met && signal_meta(threshold->signal)->swap_gated && !swap_short)
			met = false;	/* memory is low but swap still has room */
		out->met[i] = met;

		/* thresholdsFirstObservedAt: keep the first time, forget when no longer met. */
		if (!met)
			state->first_observed_ns[i] = -1;
		else if (state->first_observed_ns[i] < 0)
			state->first_observed_ns[i] = now_ns;

		/* nodeConditions: a met threshold reports its condition whatever its grace. */
		if (met) {
			enum node_condition condition = signal_condition(threshold->signal);

			if (condition != EV_CONDITION_NONE)
				condition_now[condition] = true;
		}

		/* thresholdsMetGracePeriod: now - firstObservedAt >= gracePeriod. */
		out->actionable[i] = met && !signal_meta(threshold->signal)->swap_gate &&
				     sat_sub_i64(now_ns, state->first_observed_ns[i]) >=
						    (threshold->hard ? 0 : threshold->grace_period_ns);
	}

	/* nodeConditionsLastObservedAt + nodeConditionsObservedSince(transition period). A
	 * condition met right now is reported even with a zero period (DESIGN.md §3). */
	for (size_t c = 0; c < EV_CONDITION_COUNT; c++) {
		int64_t last;

		if (condition_now[c])
			state->condition_last_observed_ns[c] = now_ns;
		last = state->condition_last_observed_ns[c];
		out->conditions[c] = condition_now[c] ||
				     (last >= 0 &&
				      sat_sub_i64(now_ns, last) < engine->pressure_transition_period_ns);
	}

	/* m.thresholdsMet = thresholds (after the grace filter); getReclaimableThreshold picks
	 * the first in byEvictionPriority order. */
	for (size_t i = 0; i < engine->n_thresholds; i++) {
		state->met_last_round[i] = out->actionable[i];
		if (out->actionable[i] && out->act_on < 0)
			out->act_on = (int)i;
	}
}

int64_t engine_reclaim_target(const struct eviction_engine *engine, size_t index,
			      const struct observations *obs)
{
	const struct threshold *threshold = &engine->thresholds[index];
	int64_t capacity = obs->signal[threshold->signal].capacity;

	/* Both may be near INT64_MAX (evictionMinimumReclaim=7Ei is accepted): saturate. */
	return sat_add_i64(threshold_value_resolve(&threshold->value, capacity),
			   threshold_value_resolve(&threshold->min_reclaim, capacity));
}

int64_t eviction_grace_ns(bool hard, int64_t soft_grace_ns, int64_t floor_ns)
{
	/* eviction_manager.go evictPod: a hard threshold uses immediateEvictionGracePeriodSeconds
	 * (evictd: floor_ns, 0 by default); pod_workers.go: "no matter what, we always supply a
	 * grace period of 1" -- the floor again for a soft one. */
	if (hard)
		return floor_ns;
	return soft_grace_ns > floor_ns ? soft_grace_ns : floor_ns;
}

static bool same_value(const struct threshold_value *a, const struct threshold_value *b)
{
	return a->is_percentage == b->is_percentage && a->percentage == b->percentage &&
	       a->quantity == b->quantity && a->max_quantity == b->max_quantity;
}

static bool same_threshold(const struct threshold *a, const struct threshold *b)
{
	return a->signal == b->signal && a->hard == b->hard && a->derived == b->derived &&
	       a->grace_period_ns == b->grace_period_ns && same_value(&a->value, &b->value) &&
	       same_value(&a->min_reclaim, &b->min_reclaim);
}

uint32_t engine_signal_mask(const struct eviction_engine *engine)
{
	uint32_t mask = 0;

	for (size_t i = 0; i < engine->n_thresholds; i++)
		mask |= SIGNAL_MASK(engine->thresholds[i].signal);
	return mask;
}

void engine_carry_state(struct eviction_engine *to, const struct eviction_engine *from)
{
	for (size_t i = 0; i < to->n_thresholds; i++)
		for (size_t j = 0; j < from->n_thresholds; j++)
			if (same_threshold(&to->thresholds[i], &from->thresholds[j])) {
				to->state.met_last_round[i] = from->state.met_last_round[j];
				to->state.first_observed_ns[i] = from->state.first_observed_ns[j];
				break;
			}
	memcpy(to->state.condition_last_observed_ns, from->state.condition_last_observed_ns,
	       sizeof(to->state.condition_last_observed_ns));
}
