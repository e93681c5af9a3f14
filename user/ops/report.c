// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/ahead.h"
#include "core/quantity.h"
#include "ops/report.h"

/* A threshold's time to exhaustion (doc/DESIGN.md "Seeing ahead"): seconds with their bounds
 * and the rate, or why there is none. */
static struct json_object *ahead_json(const struct evaluation *eval, size_t i)
{
	struct json_object *object = json_object_new_object();

	json_object_object_add(object, "sure", json_object_new_boolean(eval->ahead_none[i] == AHEAD_SURE));
	if (eval->ahead_none[i] != AHEAD_SURE) {
		json_object_object_add(object, "why_not",
				       json_object_new_string(ahead_none_name(eval->ahead_none[i])));
		return object;
	}
	json_object_object_add(object, "seconds", json_object_new_double(eval->ahead_seconds[i]));
	json_object_object_add(object, "seconds_low", json_object_new_double(eval->ahead_seconds_low[i]));
	json_object_object_add(object, "seconds_high", json_object_new_double(eval->ahead_seconds_high[i]));
	json_object_object_add(object, "rate_per_second", json_object_new_double(eval->ahead_rate[i]));
	return object;
}

static struct json_object *decision_json(const struct eviction_engine *engine,
					 const struct observations *obs,
					 const struct evaluation *eval, const struct decision *decision)
{
	const struct threshold *threshold;
	const struct observation *observed;
	struct json_object *object;

	if (!decision || decision->threshold_index < 0)
		return NULL;
	threshold = &engine->thresholds[decision->threshold_index];
	observed = &obs->signal[threshold->signal];
	object = json_object_new_object();
	json_object_object_add(object, "signal", json_object_new_string(signal_name(threshold->signal)));
	json_object_object_add(object, "kind", json_object_new_string(threshold->hard ? "hard" : "soft"));
	json_object_object_add(object, "oom_guard", json_object_new_boolean(threshold->signal == EV_SIGNAL_OOM_GUARD));
	json_object_object_add(object, "observed", json_object_new_int64(observed->available));
	json_object_object_add(object, "threshold",
			       json_object_new_int64(eval->threshold_value[decision->threshold_index]));
	json_object_object_add(object, "candidates", json_object_new_int64((int64_t)decision->n_candidates));
	json_object_object_add(object, "dry_run", json_object_new_boolean(decision->dry_run));
	json_object_object_add(object, "ahead", json_object_new_boolean(decision->ahead));
	json_object_object_add(object, "reason", json_object_new_string(decision->reason ? decision->reason : ""));
	if (decision->victim) {
		const struct pod *pod = decision->victim;
		struct json_object *victim = json_object_new_object();

		json_object_object_add(victim, "namespace", json_object_new_string(pod->namespace_));
		json_object_object_add(victim, "name", json_object_new_string(pod->name));
		json_object_object_add(victim, "uid", json_object_new_string(pod->uid));
		json_object_object_add(victim, "cgroup", json_object_new_string(pod->cgroup_path));
		json_object_object_add(victim, "qos", json_object_new_string(pod_qos_name(pod->qos)));
		json_object_object_add(victim, "priority", json_object_new_int(pod->priority));
		json_object_object_add(object, "victim", victim);
	} else {
		json_object_object_add(object, "victim", NULL);
	}
	return object;
}

struct json_object *report_json(const struct evictd_config *config,
				const struct eviction_engine *engine,
				const struct observations *obs, const struct evaluation *eval,
				const struct decision *decision)
{
	struct json_object *root = json_object_new_object();
	struct json_object *signals = json_object_new_object();
	struct json_object *thresholds = json_object_new_array();
	struct json_object *conditions = json_object_new_object();
	struct json_object *guard = json_object_new_object();

	for (int s = 0; s < EV_SIGNAL_COUNT; s++) {
		const struct observation *observed = &obs->signal[s];
		struct json_object *entry;

		if (s == EV_SIGNAL_OOM_GUARD || !observed->present)
			continue;
		entry = json_object_new_object();
		json_object_object_add(entry, "available", json_object_new_int64(observed->available));
		json_object_object_add(entry, "capacity", json_object_new_int64(observed->capacity));
		json_object_object_add(signals, signal_name(s), entry);
	}

	for (size_t i = 0; i < engine->n_thresholds; i++) {
		const struct threshold *threshold = &engine->thresholds[i];
		struct json_object *entry = json_object_new_object();
		char buf[48];

		json_object_object_add(entry, "signal", json_object_new_string(signal_name(threshold->signal)));
		json_object_object_add(entry, "kind", json_object_new_string(threshold->hard ? "hard" : "soft"));
		json_object_object_add(entry, "value", json_object_new_string(threshold->value.text));
		json_object_object_add(entry, "resolved", json_object_new_int64(eval->threshold_value[i]));
		if (!threshold->hard) {
			duration_format(threshold->grace_period_ns, buf, sizeof(buf));
			json_object_object_add(entry, "grace_period", json_object_new_string(buf));
		}
		if (threshold->min_reclaim.text[0])
			json_object_object_add(entry, "min_reclaim",
					       json_object_new_string(threshold->min_reclaim.text));
		json_object_object_add(entry, "derived", json_object_new_boolean(threshold->derived));
		json_object_object_add(entry, "met", json_object_new_boolean(eval->met[i]));
		json_object_object_add(entry, "actionable", json_object_new_boolean(eval->actionable[i]));
		json_object_object_add(entry, "ahead", ahead_json(eval, i));
		json_object_array_add(thresholds, entry);
	}

	for (int c = 0; c < EV_CONDITION_COUNT; c++)
		json_object_object_add(conditions, condition_name(c), json_object_new_boolean(eval->conditions[c]));

	json_object_object_add(guard, "enabled", json_object_new_boolean(config->oom_guard));
	json_object_object_add(guard, "mem_available", json_object_new_int64(obs->mem_available_kernel_bytes));
	json_object_object_add(guard, "mem_total", json_object_new_int64(obs->mem_total_bytes));

	json_object_object_add(root, "signals", signals);
	json_object_object_add(root, "thresholds", thresholds);
	json_object_object_add(root, "conditions", conditions);
	json_object_object_add(root, "decision", decision_json(engine, obs, eval, decision));
	json_object_object_add(root, "oom_guard", guard);
	json_object_object_add(root, "memory_working_set", json_object_new_int64(obs->memory_working_set_bytes));
	json_object_object_add(root, "fs_layout", json_object_new_string(fs_layout_name(obs->fs_layout)));
	json_object_object_add(root, "cgroup_layout", json_object_new_string(cgroup_layout_name(obs->cgroup_layout)));
	json_object_object_add(root, "swap_short", json_object_new_boolean(eval->swap_short));
	json_object_object_add(root, "dry_run", json_object_new_boolean(config->dry_run));
	return root;
}

static void format_amount(enum ev_signal signal, int64_t value, char *buf, size_t len)
{
	if (signal_meta(signal)->unit == SIGNAL_UNIT_BYTES)
		snprintf(buf, len, "%.1fMi", (double)value / (1 << 20));
	else
		snprintf(buf, len, "%lld", (long long)value);
}

void report_text(FILE *out, const struct eviction_engine *engine, const struct observations *obs,
		 const struct evaluation *eval, const struct decision *decision)
{
	for (size_t i = 0; i < engine->n_thresholds; i++) {
		const struct threshold *threshold = &engine->thresholds[i];
		const struct observation *observed = &obs->signal[threshold->signal];
		char available[32], limit[32], capacity[32];

		if (!observed->present) {
			/* No swap or no zram device is a fact of the host, not a failed read. */
			fprintf(out, "  %-24s %s\n", signal_name(threshold->signal),
				threshold->signal == EV_SIGNAL_SWAP_AVAILABLE ? "none (no swap)" :
				threshold->signal == EV_SIGNAL_ZRAM_AVAILABLE ? "none (no zram device)" :
				"unreadable");
			continue;
		}
		if (threshold->signal == EV_SIGNAL_MEMORY_PRESSURE) {	/* as PSI, not its complement */
			fprintf(out, "  %-24s %9lld.%02lld%% stalled  hard %s%s\n", signal_name(threshold->signal),
				(long long)(10000 - observed->available) / 100,
				(long long)(10000 - observed->available) % 100, threshold->value.text,
				eval->actionable[i] ? " ACT" : eval->met[i] ? " met" : "");
			continue;
		}
		format_amount(threshold->signal, observed->available, available, sizeof(available));
		format_amount(threshold->signal, observed->capacity, capacity, sizeof(capacity));
		format_amount(threshold->signal, eval->threshold_value[i], limit, sizeof(limit));
		fprintf(out, "  %-24s %12s of %-12s %s<%-8s (%s)%s\n", signal_name(threshold->signal),
			available, capacity, threshold->hard ? "hard" : "soft", threshold->value.text,
			limit, eval->actionable[i] ? " ACT" : eval->met[i] ? " met" : "");
	}
	for (size_t i = 0; i < engine->n_thresholds; i++)
		if (signal_meta(engine->thresholds[i].signal)->swap_gate) {
			/* DESIGN.md §1 "Swap and zram": why a low memory.available did not act. */
			fprintf(out, "  swap: %s\n", eval->swap_short ?
				"short or none (memory thresholds count)" :
				"has room (memory thresholds held back until swap or zram runs short)");
			break;
		}
	fprintf(out, "  conditions:");
	for (int c = 0; c < EV_CONDITION_COUNT; c++)
		fprintf(out, " %s=%s", condition_name(c), eval->conditions[c] ? "True" : "False");
	fputc('\n', out);
	if (decision && decision->threshold_index >= 0) {
		const struct threshold *threshold = &engine->thresholds[decision->threshold_index];

		fprintf(out, "  decision: %s %s -> %s%s%s (%s)\n", threshold->hard ? "hard" : "soft",
			signal_name(threshold->signal),
			decision->victim ? decision->victim->namespace_ : "no victim",
			decision->victim ? "/" : "", decision->victim ? decision->victim->name : "",
			decision->reason ? decision->reason : "");
	} else {
		fprintf(out, "  decision: none\n");
	}
}

bool report_live(FILE *out, const struct eviction_engine *engine, const struct observations *obs,
		 const struct evaluation *eval, const struct decision *decision)
{
	int fd = out ? fileno(out) : -1;

	if (fd < 0 || !isatty(fd))
		return false;
	report_text(out, engine, obs, eval, decision);
	fflush(out);
	return true;
}
