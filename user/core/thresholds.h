/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Eviction thresholds and the kubelet's eviction-manager state machine (DESIGN.md §2, §3):
 * hard/soft, grace periods, minimum reclaim, node conditions and the pressure transition
 * period. Pure logic with an injected clock: no I/O. */
#ifndef EVICTD_THRESHOLDS_H
#define EVICTD_THRESHOLDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/observations.h"

#define EV_MAX_THRESHOLDS 32

/* A quantity or a fraction of capacity. The kubelet keeps percentages as float32; so do we,
 * so that "10%" of a capacity resolves to the same byte count as the kubelet's. */
struct threshold_value {
	bool is_percentage;
	float percentage;	/* 0..1 */
	int64_t quantity;
	int64_t max_quantity;	/* >0: resolve to at most this (the OOM guard's cap) */
	char text[32];		/* as configured, for messages and --validate */
};

struct threshold {
	enum ev_signal signal;
	bool hard;
	struct threshold_value value;
	int64_t grace_period_ns;		/* soft only */
	struct threshold_value min_reclaim;	/* zero when not configured */
	bool derived;				/* containerfs copy of nodefs/imagefs */
};

/* A threshold value as helpers.go parseThresholdStatement reads it: "10%", "100Mi", "1.5Gi".
 * Returns 0, -EINVAL (malformed, NaN), -ERANGE (negative, or a percentage above 100%). Sets
 * *disabled for "0%" and "100%" as written, which the kubelet ignores. A quantity of 0 is
 * returned as such: the caller refuses it ("must be positive"). */
int threshold_value_parse(const char *text, struct threshold_value *value, bool *disabled);

/* A minimum reclaim as helpers.go parseMinimumReclaims reads it: a positive percentage (no
 * upper bound) or a quantity >= 0. Returns 0, -EINVAL (malformed) or -ERANGE. */
int min_reclaim_parse(const char *text, struct threshold_value *value);

/* helpers.go parsePercentage: every trailing '%' trimmed, strconv.ParseFloat(s, 32), / 100
 * in float32. Returns 0, -EINVAL (not Go float syntax) or -ERANGE (beyond float32). */
int percentage_parse(const char *text, float *fraction);

/* The value in the signal's unit against a capacity: quantity, or capacity x percentage
 * truncated as the kubelet's GetThresholdQuantity does. */
int64_t threshold_value_resolve(const struct threshold_value *value, int64_t capacity);

/* "hard memory.available<100Mi", "soft memory.available<1.5Gi grace=1m30s". */
int threshold_format(const struct threshold *threshold, char *buf, size_t len);

/* The eviction manager's memory between evaluations (the kubelet's m.thresholdsMet,
 * m.thresholdsFirstObservedAt, m.nodeConditionsLastObservedAt). */
struct eviction_state {
	bool met_last_round[EV_MAX_THRESHOLDS];
	int64_t first_observed_ns[EV_MAX_THRESHOLDS];	/* -1: not currently met */
	int64_t condition_last_observed_ns[EV_CONDITION_COUNT]; /* -1: never */
};

struct eviction_engine {
	struct threshold thresholds[EV_MAX_THRESHOLDS];	/* memory first, then config order */
	size_t n_thresholds;
	int64_t pressure_transition_period_ns;
	struct eviction_state state;
};

struct evaluation {
	bool met[EV_MAX_THRESHOLDS];		/* crossed now, or not yet back above min reclaim */
	bool actionable[EV_MAX_THRESHOLDS];	/* met and its grace period has elapsed */
	int64_t threshold_value[EV_MAX_THRESHOLDS];	/* resolved against the observed capacity */
	bool conditions[EV_CONDITION_COUNT];
	int act_on;	/* index of the threshold to reclaim for (kubelet getReclaimableThreshold), or -1 */
	bool swap_short;	/* the swap gate is open (engine_swap_gate_open) */
	/* Time to exhaustion (core/ahead.h; doc/DESIGN.md "Seeing ahead"), filled by the caller
	 * after engine_evaluate: seconds until the threshold is reached at the measured rate and
	 * its bounds, or ahead_none[i] != AHEAD_SURE (0) when there is no sure estimate. */
	double ahead_seconds[EV_MAX_THRESHOLDS];
	double ahead_seconds_low[EV_MAX_THRESHOLDS], ahead_seconds_high[EV_MAX_THRESHOLDS];
	double ahead_rate[EV_MAX_THRESHOLDS];		/* units per second, falling */
	unsigned char ahead_none[EV_MAX_THRESHOLDS];	/* enum ahead_none */
};

/* Whether swap is short enough for the swap-gated memory thresholds to count: no swap or
 * zram threshold configured, no swap on the node, or one of them met (DESIGN.md §1). */
bool engine_swap_gate_open(const struct eviction_engine *engine, const struct observations *obs);

/* Load a threshold set. Memory thresholds are ordered first (kubelet byEvictionPriority),
 * the rest keep their order. Clears the state. Returns 0 or -E2BIG. */
int engine_init(struct eviction_engine *engine, const struct threshold *thresholds, size_t n,
		int64_t pressure_transition_period_ns);

/* A reload keeps what the running engine has observed: a threshold that is the same in both
 * (signal, hard or soft, value, grace period, minimum reclaim) keeps when it was first seen
 * met, so a SIGHUP (logrotate's postrotate) never restarts a soft threshold's grace period, as
 * the kubelet's thresholdsFirstObservedAt lives as long as its eviction manager; the node
 * conditions' last observations are the node's and carry over whole. */
/* The SIGNAL_MASK bits of the signals a threshold is set on (what a wake-up must read). */
uint32_t engine_signal_mask(const struct eviction_engine *engine);
void engine_carry_state(struct eviction_engine *to, const struct eviction_engine *from);

/* One synchronize() step at time now_ns (monotonic). Signals not present in obs are
 * treated as not met. Updates the engine's state and fills *out. */
void engine_evaluate(struct eviction_engine *engine, const struct observations *obs,
		     int64_t now_ns, struct evaluation *out);

/* Target for "keep reclaiming": the resolved threshold plus its minimum reclaim. */
int64_t engine_reclaim_target(const struct eviction_engine *engine, size_t index,
			      const struct observations *obs);

/* The SIGTERM grace of an eviction (DESIGN.md §6): hard: floor_ns; soft: soft_grace_ns
 * (min(terminationGracePeriodSeconds, evictionMaxPodGracePeriod)) but at least floor_ns.
 * floor_ns is --hard-eviction-grace-period: 0 in evictd, 1 s in the kubelet. */
int64_t eviction_grace_ns(bool hard, int64_t soft_grace_ns, int64_t floor_ns);

#endif
