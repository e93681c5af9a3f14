// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The pre-kill warning's verdict (warn.h); daemon_warn (act.c's caller) says it. */
#include <stdio.h>
#include <string.h>

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

void daemon_warn(struct daemon *daemon)
{
	struct policy *policy = daemon->policy;
	const struct evictd_config *config = &policy->config;
	struct warn_verdict verdict = warn_evaluate(policy, &daemon->warn, clock_monotonic_ns());
	char level[32], observed[32], why[256] = "";
	const struct pod *first;

	if (!verdict.due)
		return;
	daemon->warnings++;
	first = policy->pods ? policy_first_in_line(policy, EV_SIGNAL_MEMORY_AVAILABLE) : NULL;
	if (first)
		eventlog_rank_reason(EV_SIGNAL_MEMORY_AVAILABLE, &policy->rank_options, first, why, sizeof(why));
	eventlog_format_amount(EV_SIGNAL_MEMORY_AVAILABLE, verdict.observed, observed, sizeof(observed));
	eventlog_format_amount(EV_SIGNAL_MEMORY_AVAILABLE, verdict.level, level, sizeof(level));
	log_warn("warning: memory.available %s < %s (--warn-memory-available %s): no threshold acts yet; "
		 "first in line: %s%s%s%s", observed, level, config->warn_memory_available.value.text,
		 first ? (first->name[0] ? first->name : first->cgroup_path) : "nothing evictable",
		 first ? " (" : "", why, first ? ")" : "");
	if (daemon->ops) {
		struct eventlog_decision entry = {
			.signal = EV_SIGNAL_MEMORY_AVAILABLE,
			.value = verdict.observed,
			.threshold = verdict.level,
			.threshold_text = config->warn_memory_available.value.text,
			.candidates = policy->candidates,
			.n_candidates = policy->n_candidates,
			.rank_options = &policy->rank_options,
			.victim = first,
			.action = EVENTLOG_WARNED,
			.latency_ns = -1,
			.reason = "pre-kill warning: memory.available is below the warning level",
			.dry_run = config->dry_run,
		};

		daemon_ops_record(daemon, &entry);
	}
	/* --once exits at once and would kill the hook. */
	if (!config->once && (config->on_evict[0] || config->dbus_signal))
		notify_hook_fire(daemon->notify, config->on_evict, config->on_evict_timeout_ns, config->dbus_signal,
				 &(struct notify_event){
					 .kind = "warn",
					 .victim = first ? (first->name[0] ? first->name : first->cgroup_path) : "",
					 .cgroup = first ? first->cgroup_path : "",
					 .signal = "memory.available",
					 .threshold = config->warn_memory_available.value.text,
					 .observed = verdict.observed,
					 .reason = why,
				 });
}
