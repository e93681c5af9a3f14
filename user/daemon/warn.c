// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The pre-kill warning's verdict (warn.h); daemon_warn (act.c's caller) says it. */
#include <stdio.h>
#include <string.h>

#include "core/ahead.h"
#include "core/quantity.h"
#include "daemon/daemon_parts.h"
#include "daemon/warn.h"
#include "ops/notify_hook.h"
#include "sys/clock.h"
#include "sys/log.h"

void warn_state_init(struct warn_state *state)
{
	state->warned_at_ns = -1;
}

struct warn_verdict warn_evaluate(const struct policy *policy, struct warn_state *state, int64_t now_ns)
{
	const struct evictd_config *config = &policy->config;
	const struct observation *observed = &policy->obs.signal[EV_SIGNAL_MEMORY_AVAILABLE];
	struct warn_verdict verdict = { .observed = observed->available, .level = -1 };

	if (!config->warn_memory_available.on || !observed->present)
		return verdict;
	verdict.level = threshold_value_resolve(&config->warn_memory_available.value, observed->capacity);
	/* A warning is for before a kill: not while one acts, and not while swap still has room
	 * (the memory thresholds wait for it too: engine_swap_gate_open). */
	verdict.below = observed->available < verdict.level && policy->decision.threshold_index < 0 &&
			policy->eval.swap_short;
	if (!verdict.below)
		return verdict;
	verdict.due = state->warned_at_ns < 0 || now_ns - state->warned_at_ns >= config->warn_interval_ns;
	if (verdict.due)
		state->warned_at_ns = now_ns;
	return verdict;
}

struct warn_ahead_verdict warn_ahead_evaluate(const struct policy *policy, struct warn_state *state,
					      int64_t now_ns)
{
	const struct eviction_engine *engine = &policy->engine;
	const struct evaluation *eval = &policy->eval;
	struct warn_ahead_verdict verdict = { .index = -1 };

	if (!policy->config.warn_ahead_ns || policy->decision.threshold_index >= 0)
		return verdict;
	for (size_t i = 0; i < engine->n_thresholds; i++) {
		if (!engine->thresholds[i].hard || eval->met[i] || eval->ahead_none[i] != AHEAD_SURE ||
		    eval->ahead_seconds[i] * 1e9 >= (double)policy->config.warn_ahead_ns)
			continue;
		if (signal_meta(engine->thresholds[i].signal)->swap_gated && !eval->swap_short)
			continue;
		if (verdict.index < 0 || eval->ahead_seconds[i] < eval->ahead_seconds[verdict.index])
			verdict.index = (int)i;
	}
	if (verdict.index < 0)
		return verdict;
	verdict.due = state->warned_at_ns < 0 || now_ns - state->warned_at_ns >= policy->config.warn_interval_ns;
	if (verdict.due)
		state->warned_at_ns = now_ns;
	return verdict;
}

/* Say a warning: the decision log entry, the hook and the D-Bus signal, naming who is first
 * in line for signal. */
static void say_warning(struct daemon *daemon, const char *kind, enum ev_signal signal, bool hard, int64_t observed,
			int64_t level, const char *level_text, const char *reason, const struct pod *first,
			const char *why)
{
	const struct evictd_config *config = &daemon->policy->config;
	struct policy *policy = daemon->policy;

	daemon->warnings++;
	if (daemon->ops) {
		struct eventlog_decision entry = {
			.signal = signal,
			.hard = hard,
			.value = observed,
			.threshold = level,
			.threshold_text = level_text,
			.candidates = policy->candidates,
			.n_candidates = policy->n_candidates,
			.rank_options = &policy->rank_options,
			.victim = first,
			.action = EVENTLOG_WARNED,
			.latency_ns = -1,
			.reason = reason,
			.dry_run = config->dry_run,
		};

		daemon_ops_record(daemon, &entry);
	}
	/* --once exits at once and would kill the hook. */
	if (!config->once && (config->on_evict[0] || config->dbus_signal))
		notify_hook_fire(daemon->notify, config->on_evict, config->on_evict_timeout_ns, config->dbus_signal,
				 &(struct notify_event){
					 .kind = kind,
					 .victim = first ? (first->name[0] ? first->name : first->cgroup_path) : "",
					 .cgroup = first ? first->cgroup_path : "",
					 .signal = signal_name(signal),
					 .threshold = level_text,
					 .observed = observed,
					 .reason = why,
				 });
}

void daemon_warn_ahead(struct daemon *daemon)
{
	struct policy *policy = daemon->policy;
	struct warn_ahead_verdict verdict = warn_ahead_evaluate(policy, &daemon->warn_ahead, clock_monotonic_ns());
	const struct evaluation *eval = &policy->eval;
	const struct threshold *threshold;
	char why[256] = "", reason[384], limit[32];
	const struct pod *first;

	if (!verdict.due)
		return;
	threshold = &policy->engine.thresholds[verdict.index];
	first = policy->pods ? policy_first_in_line(policy, threshold->signal) : NULL;
	if (first)
		eventlog_rank_reason(threshold->signal, &policy->rank_options, first, why, sizeof(why));
	duration_format(policy->config.warn_ahead_ns, limit, sizeof(limit));
	snprintf(reason, sizeof(reason),
		 "warning ahead (--warn-ahead %s): %s reaches %s in %.2fs (%.2f-%.2fs) at %.4g %s/s",
		 limit, signal_name(threshold->signal), threshold->value.text, eval->ahead_seconds[verdict.index],
		 eval->ahead_seconds_low[verdict.index], eval->ahead_seconds_high[verdict.index],
		 eval->ahead_rate[verdict.index], signal_unit_name(threshold->signal));
	log_warn("%s; first in line: %s%s%s%s", reason,
		 first ? (first->name[0] ? first->name : first->cgroup_path) : "nothing evictable",
		 first ? " (" : "", why, first ? ")" : "");
	say_warning(daemon, "warn-ahead", threshold->signal, true, policy->obs.signal[threshold->signal].available,
		    eval->threshold_value[verdict.index], threshold->value.text, reason, first, reason);
}

void daemon_warn(struct daemon *daemon)
{
	struct policy *policy = daemon->policy;
	const struct evictd_config *config = &policy->config;
	struct warn_verdict verdict = warn_evaluate(policy, &daemon->warn, clock_monotonic_ns());
	char level[32], observed[32], why[256] = "";
	const struct pod *first;

	if (!verdict.due)
		return;
	first = policy->pods ? policy_first_in_line(policy, EV_SIGNAL_MEMORY_AVAILABLE) : NULL;
	if (first)
		eventlog_rank_reason(EV_SIGNAL_MEMORY_AVAILABLE, &policy->rank_options, first, why, sizeof(why));
	eventlog_format_amount(EV_SIGNAL_MEMORY_AVAILABLE, verdict.observed, observed, sizeof(observed));
	eventlog_format_amount(EV_SIGNAL_MEMORY_AVAILABLE, verdict.level, level, sizeof(level));
	log_warn("warning: memory.available %s < %s (--warn-memory-available %s): no threshold acts yet; "
		 "first in line: %s%s%s%s", observed, level, config->warn_memory_available.value.text,
		 first ? (first->name[0] ? first->name : first->cgroup_path) : "nothing evictable",
		 first ? " (" : "", why, first ? ")" : "");
	say_warning(daemon, "warn", EV_SIGNAL_MEMORY_AVAILABLE, false, verdict.observed, verdict.level,
		    config->warn_memory_available.value.text,
		    "pre-kill warning: memory.available is below the warning level", first, why);
}
