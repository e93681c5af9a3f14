// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The decision line (doc/DESIGN.md "Acting"): each decision is logged once, with the
 * candidates and why the victim ranks first. Split from act.c, which logs it after a hard
 * kill's cgroup.kill write.
 */
#include <stdio.h>
#include <string.h>

#include "daemon/daemon_parts.h"
#include "sys/log.h"

const char *daemon_victim_name(const struct pod *pod, char *buf, size_t len)
{
	if (!pod)
		snprintf(buf, len, "none");
	else if (pod->namespace_[0])
		snprintf(buf, len, "%.63s/%.255s", pod->namespace_, pod->name);
	else
		snprintf(buf, len, "%.320s", pod->name[0] ? pod->name : pod->cgroup_path);
	return buf;
}

void daemon_log_decision(struct daemon *daemon)
{
	struct policy *policy = daemon->policy;
	const struct decision *decision = &policy->decision;
	const struct threshold *threshold;
	const struct observation *observed;
	char victim[sizeof(daemon->logged_victim)];
	char candidates[512] = "", rank_reason[256] = "", observed_text[32];
	size_t used = 0;

	daemon_victim_name(decision->victim, victim, sizeof(victim));
	if (decision->threshold_index == daemon->logged_threshold_index &&
	    !strcmp(victim, daemon->logged_victim))
		return;
	if (decision->threshold_index < 0 && daemon->logged_threshold_index < 0)
		return;
	daemon->logged_threshold_index = decision->threshold_index;
	snprintf(daemon->logged_victim, sizeof(daemon->logged_victim), "%s", victim);
	if (decision->threshold_index < 0) {
		log_event(LOGLEVEL_INFO, LOG_KIND_DECISION, NULL, 0,
			  "decision: no threshold is met any more");
		return;
	}
	threshold = policy_threshold(policy);
	for (size_t i = 0, shown = 0; i < policy->n_candidates && shown < 5 && used < sizeof(candidates) - 1; i++) {
		const struct pod *pod = policy->candidates[i];
		char name[330];

		if (!pod_is_candidate_for(pod, threshold->signal))
			continue;
		used += snprintf(candidates + used, sizeof(candidates) - used, "%s%s", shown++ ? "," : "",
				 daemon_victim_name(pod, name, sizeof(name)));
	}
	threshold = policy_threshold(policy);
	observed = &policy->obs.signal[threshold->signal];
	if (decision->victim)
		eventlog_rank_reason(threshold->signal, &policy->rank_options, decision->victim,
				     rank_reason, sizeof(rank_reason));
	snprintf(observed_text, sizeof(observed_text), "%lld", (long long)observed->available);
	{
		const struct log_field fields[] = {
			{ "POD", decision->victim ? decision->victim->name : NULL },
			{ "NAMESPACE", decision->victim ? decision->victim->namespace_ : NULL },
			{ "SIGNAL", signal_name(threshold->signal) },
			{ "THRESHOLD", threshold->value.text },
			{ "OBSERVED", observed_text },
			{ "RANK_REASON", decision->victim ? rank_reason : NULL },
		};

		if (threshold->signal == EV_SIGNAL_MEMORY_PRESSURE)	/* as pressure, not its complement */
			log_event(LOGLEVEL_INFO, LOG_KIND_DECISION, fields, sizeof(fields) / sizeof(fields[0]),
				  "decision: %smemory.pressure %lld.%02lld%% > %s candidates=%zu [%s%s] victim=%s "
				  "reason=\"%s\"", decision->dry_run ? "[dry-run] " : "",
				  (long long)(10000 - observed->available) / 100,
				  (long long)(10000 - observed->available) % 100, threshold->value.text,
				  decision->n_candidates, candidates, decision->n_candidates > 5 ? ",..." : "",
				  victim, decision->reason ? decision->reason : "");
		else
		log_event(LOGLEVEL_INFO, LOG_KIND_DECISION, fields, sizeof(fields) / sizeof(fields[0]),
			  "decision: %s%s%s %s=%lld < %s (%lld) candidates=%zu [%s%s] victim=%s reason=\"%s\"",
			  decision->dry_run ? "[dry-run] " : "", decision->ahead ? "[ahead] " : "",
			  threshold->hard ? "hard" : "soft",
			  signal_name(threshold->signal), (long long)observed->available,
			  threshold->value.text,
			  (long long)policy->eval.threshold_value[decision->threshold_index],
			  decision->n_candidates, candidates, decision->n_candidates > 5 ? ",..." : "",
			  victim, decision->reason ? decision->reason : "");
	}
}
