// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The Prometheus text format of evictd's metrics. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ops/metrics_internal.h"
#include "sys/clock.h"

static const double latency_buckets[METRICS_N_LATENCY_BUCKETS] = METRICS_LATENCY_BUCKETS;

/* ---- exposition ------------------------------------------------------------------------ */

size_t metrics_escape_label_value(const char *value, char *buf, size_t len)
{
	size_t used = 0;

	for (const char *p = value; *p; p++) {
		const char *piece;
		char plain[2] = { *p, '\0' };

		switch (*p) {
		case '\\': piece = "\\\\"; break;
		case '"': piece = "\\\""; break;
		case '\n': piece = "\\n"; break;
		default: piece = plain; break;
		}
		for (const char *q = piece; *q; q++, used++)
			if (used + 1 < len)
				buf[used] = *q;
	}
	if (len)
		buf[used < len ? used : len - 1] = '\0';
	return used;
}

/* HELP text escaping: backslash and newline only. */
static void put_help(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s ", name);
	for (const char *p = help; *p; p++) {
		if (*p == '\\')
			fputs("\\\\", out);
		else if (*p == '\n')
			fputs("\\n", out);
		else
			fputc(*p, out);
	}
	fprintf(out, "\n# TYPE %s %s\n", name, type);
}

/* One label pair "name=\"value\"", escaped, preceded by a comma unless first. */
static void put_label(FILE *out, bool first, const char *name, const char *value)
{
	char escaped[512];

	metrics_escape_label_value(value, escaped, sizeof(escaped));
	fprintf(out, "%s%s=\"%s\"", first ? "" : ",", name, escaped);
}

/* A family of one sample without labels: HELP, TYPE and the sample. */
static void put_int_family(FILE *out, const char *name, const char *type, const char *help, long long value)
{
	put_help(out, name, type, help);
	fprintf(out, "%s %lld\n", name, value);
}

/* Runs of such families, as tables. */
struct int_family {
	const char *name, *type, *help;
	long long value;
};

static void put_int_families(FILE *out, const struct int_family *families, size_t n)
{
	for (size_t i = 0; i < n; i++)
		put_int_family(out, families[i].name, families[i].type, families[i].help, families[i].value);
}

#define PUT_INT_FAMILIES(out, array) put_int_families(out, array, sizeof(array) / sizeof((array)[0]))

/* A one-sample gauge in seconds with a fixed number of decimals. */
static void put_seconds(FILE *out, const char *name, const char *help, int decimals, double value)
{
	put_help(out, name, "gauge", help);
	fprintf(out, "%s %.*f\n", name, decimals, value);
}

/* The Prometheus base unit for bytes; counts carry what they count (node_exporter's
 * node_filesystem_files, node_processes_threads). */
static const char *unit_suffix(enum signal_unit unit)
{
	switch (unit) {
	case SIGNAL_UNIT_BYTES: return "bytes";
	case SIGNAL_UNIT_INODES: return "inodes";
	case SIGNAL_UNIT_TASKS: return "tasks";
	case SIGNAL_UNIT_PERMYRIAD: return "permyriad";
	}
	return "unknown";
}

static const char *kind_name(bool hard)
{
	return hard ? "hard" : "soft";
}

/* Go's strconv formatting is what Prometheus parses; %.17g round-trips and never prints a
 * locale comma (the daemon does not call setlocale). */
static void put_double(FILE *out, double value)
{
	fprintf(out, "%.17g", value);
}

/* name_<unit>{signal} for the present signals measured in unit. */
static void put_signal_family(FILE *out, const struct metrics_snapshot *snap, const char *prefix,
			      enum signal_unit unit, const char *help, const int64_t *values)
{
	char name[96];
	bool any = false;

	for (int s = 0; s < EV_SIGNAL_COUNT; s++)
		any |= snap->signal_present[s] && signal_meta(s)->unit == unit;
	if (!any)
		return;	/* no family without samples */
	snprintf(name, sizeof(name), "%s_%s", prefix, unit_suffix(unit));
	put_help(out, name, "gauge", help);
	for (int s = 0; s < EV_SIGNAL_COUNT; s++) {
		if (!snap->signal_present[s] || signal_meta(s)->unit != unit)
			continue;
		fprintf(out, "%s{", name);
		put_label(out, true, "signal", signal_name(s));
		fprintf(out, "} %lld\n", (long long)values[s]);
	}
}

static void put_threshold_family(FILE *out, const struct metrics_snapshot *snap, enum signal_unit unit)
{
	char name[64];
	bool any = false;

	for (size_t i = 0; i < snap->n_thresholds; i++)
		any |= signal_meta(snap->thresholds[i].signal)->unit == unit;
	if (!any)
		return;
	snprintf(name, sizeof(name), "evictd_threshold_%s", unit_suffix(unit));
	put_help(out, name, "gauge", "Eviction threshold resolved against the signal's capacity.");
	for (size_t i = 0; i < snap->n_thresholds; i++) {
		if (signal_meta(snap->thresholds[i].signal)->unit != unit)
			continue;
		fprintf(out, "%s{", name);
		put_label(out, true, "signal", signal_name(snap->thresholds[i].signal));
		put_label(out, false, "kind", kind_name(snap->thresholds[i].hard));
		fprintf(out, "} %lld\n", (long long)snap->thresholds[i].value);
	}
}

/* A {label="name"} counter family from name/value pairs. */
static void put_counts(FILE *out, const char *name, const char *label, const char *help,
		       const struct metrics_bpf_count *counts, size_t n)
{
	put_help(out, name, "counter", help);
	for (size_t i = 0; i < n && i < METRICS_MAX_BPF_COUNTS; i++) {
		fprintf(out, "%s{", name);
		put_label(out, true, label, counts[i].name);
		fprintf(out, "} %llu\n", (unsigned long long)counts[i].value);
	}
}

void metrics_exposition_write(FILE *out, const struct metrics_snapshot *snap,
			      const struct metrics_counters *counters, const char *version,
			      const char *commit, int64_t start_unix_s)
{
	uint64_t cumulative = 0;

	put_help(out, "evictd_build_info", "gauge", "evictd build information; always 1.");
	fputs("evictd_build_info{", out);
	put_label(out, true, "version", version);
	put_label(out, false, "commit", commit);
	fputs("} 1\n", out);

	const struct int_family start[] = {
		{ "evictd_start_time_seconds", "gauge", "When evictd started, Unix seconds.", start_unix_s },
		{ "evictd_dry_run", "gauge", "1 when evictd decides and reports but kills nothing.",
		  snap->dry_run },
	};
	PUT_INT_FAMILIES(out, start);

	/* One family per unit, as node_exporter splits node_filesystem_avail_bytes from
	 * node_filesystem_files_free (https://prometheus.io/docs/practices/naming/: "a single
	 * unit", suffixed). */
	for (int u = SIGNAL_UNIT_BYTES; u <= SIGNAL_UNIT_PERMYRIAD; u++)
		put_signal_family(out, snap, "evictd_signal_available", u,
				  "Eviction signal's available amount (oom.guard: MemAvailable).",
				  snap->signal_available);
	for (int u = SIGNAL_UNIT_BYTES; u <= SIGNAL_UNIT_PERMYRIAD; u++)
		put_signal_family(out, snap, "evictd_signal_capacity", u, "Eviction signal's capacity.",
				  snap->signal_capacity);

	if (snap->memory_available_kubelet >= 0 && snap->memory_available_refault_aware >= 0) {
		put_help(out, "evictd_memory_available_bytes", "gauge",
			 "memory.available two ways: formula=\"kubelet\" (capacity - (usage - inactive_file)), "
			 "formula=\"refault-aware\" (only refaulting or recently used file cache counted: classic LRU, "
			 "active file cache free unless it refaults; MGLRU, all file cache counted while it "
			 "refaults; what thresholds use with --memory-refault-aware).");
		fputs("evictd_memory_available_bytes{", out);
		put_label(out, true, "formula", "kubelet");
		fprintf(out, "} %lld\n", (long long)snap->memory_available_kubelet);
		fputs("evictd_memory_available_bytes{", out);
		put_label(out, true, "formula", "refault-aware");
		fprintf(out, "} %lld\n", (long long)snap->memory_available_refault_aware);
		put_int_family(out, "evictd_file_cache_refaulting", "gauge",
			       "1 while more than 1% of the file cache is read back in per second (workingset_refault_file).",
			       snap->file_cache_refaulting);
	}

	for (int u = SIGNAL_UNIT_BYTES; u <= SIGNAL_UNIT_PERMYRIAD; u++)
		put_threshold_family(out, snap, u);
	put_help(out, "evictd_threshold_met", "gauge",
		 "1 while the threshold is met (crossed, or not yet back above its minimum reclaim).");
	for (size_t i = 0; i < snap->n_thresholds; i++) {
		fputs("evictd_threshold_met{", out);
		put_label(out, true, "signal", signal_name(snap->thresholds[i].signal));
		put_label(out, false, "kind", kind_name(snap->thresholds[i].hard));
		fprintf(out, "} %d\n", snap->thresholds[i].met);
	}

	/* Absent while no estimate is sure (doc/DESIGN.md "Seeing ahead"): a gauge that said NaN
	 * or a huge number would look like data to an alert rule. */
	for (size_t i = 0, said = 0; i < snap->n_thresholds; i++) {
		if (!snap->thresholds[i].ahead_sure)
			continue;
		if (!said++)	/* no family without samples */
			put_help(out, "evictd_time_to_threshold_seconds", "gauge",
				 "Seconds until the threshold is reached at the measured rate; only while the rate is sure.");
		fputs("evictd_time_to_threshold_seconds{", out);
		put_label(out, true, "signal", signal_name(snap->thresholds[i].signal));
		put_label(out, false, "kind", kind_name(snap->thresholds[i].hard));
		fputs("} ", out);
		put_double(out, snap->thresholds[i].ahead_seconds);
		fputc('\n', out);
	}

	put_help(out, "evictd_node_condition", "gauge",
		 "Node pressure condition as the kubelet would report it: 1 true, 0 false.");
	for (int c = 0; c < EV_CONDITION_COUNT; c++) {
		fputs("evictd_node_condition{", out);
		put_label(out, true, "condition", condition_name(c));
		fprintf(out, "} %d\n", snap->conditions[c]);
	}

	put_help(out, "evictd_evictions_total", "counter",
		 "Eviction decisions acted on, by signal and result (killed, failed, dry_run).");
	for (int s = 0; s < EV_SIGNAL_COUNT; s++) {
		for (int r = 0; r < METRICS_RESULT_COUNT; r++) {
			fputs("evictd_evictions_total{", out);
			put_label(out, true, "signal", signal_name(s));
			put_label(out, false, "result", metrics_result_name(r));
			fprintf(out, "} %llu\n", (unsigned long long)counters->evictions[s][r]);
		}
	}

	put_help(out, "evictd_eviction_latency_seconds", "histogram",
		 "From the signal reading that crossed the threshold to the victim's cgroup being empty.");
	for (int b = 0; b < METRICS_N_LATENCY_BUCKETS; b++) {
		cumulative += counters->latency_bucket[b];
		fprintf(out, "evictd_eviction_latency_seconds_bucket{le=\"%g\"} %llu\n", latency_buckets[b],
			(unsigned long long)cumulative);
	}
	fprintf(out, "evictd_eviction_latency_seconds_bucket{le=\"+Inf\"} %llu\n",
		(unsigned long long)counters->latency_count);
	fputs("evictd_eviction_latency_seconds_sum ", out);
	put_double(out, counters->latency_sum_s);
	fputc('\n', out);
	fprintf(out, "evictd_eviction_latency_seconds_count %llu\n", (unsigned long long)counters->latency_count);

	if (snap->kernel_oom_kills_known) {
		put_int_family(out, "evictd_kernel_oom_kills_total", "counter",
			       "Kernel OOM-killer kills since boot (/proc/vmstat oom_kill).",
			       (long long)snap->kernel_oom_kills);
	}

	const struct int_family bpf[] = {
		{ "evictd_bpf_enabled", "gauge",
		  "1 when the BPF programs are loaded; 0 when evictd runs on polling and PSI alone.",
		  snap->bpf_enabled },
		{ "evictd_bpf_programs_attached", "gauge", "BPF programs attached to tracepoints.",
		  snap->bpf_programs_attached },
	};
	PUT_INT_FAMILIES(out, bpf);
	if (snap->bpf_counters_known) {
		put_counts(out, "evictd_bpf_events_total", "event",
			   "Kernel events the BPF programs counted (the node_stats map), by event.",
			   snap->bpf_events, snap->n_bpf_events);
		const struct int_family wakeups[] = {
			{ "evictd_bpf_wakeups_sent_total", "counter",
			  "Wake-up records the BPF programs submitted to the ring buffer.",
			  snap->bpf_wakeups_sent },
			{ "evictd_bpf_wakeups_dropped_total", "counter",
			  "Wake-up records lost because the ring buffer was full.",
			  snap->bpf_wakeups_dropped },
			{ "evictd_bpf_wakeups_rate_limited_total", "counter",
			  "Step crossings not sent: inside the wake-up group's minimum interval.",
			  snap->bpf_wakeups_rate_limited },
		};
		PUT_INT_FAMILIES(out, wakeups);
		put_counts(out, "evictd_bpf_wakeups_received_total", "type",
			   "Wake-up records the daemon read from the ring buffer, by type.",
			   snap->bpf_wakeups_received, snap->n_bpf_wakeups_received);
	}

	/* Only evictd_ names: the kubelet's kubelet_graceful_shutdown_* are the kubelet's own
	 * series, and on a node where both run they would collide in one scrape target's
	 * namespace and mislead alerts about which agent shut the node down. */
	const struct int_family shutdown[] = {
		{ "evictd_graceful_shutdown_start_time_seconds", "gauge",
		  "Last graceful shutdown start time since unix epoch in seconds",
		  counters->shutdown_start_unix_s },
		{ "evictd_graceful_shutdown_end_time_seconds", "gauge",
		  "Last graceful shutdown end time since unix epoch in seconds",
		  counters->shutdown_end_unix_s },
	};
	PUT_INT_FAMILIES(out, shutdown);

	put_seconds(out, "evictd_loop_iteration_max_seconds",
		    "The longest event-loop iteration (one batch of events handled) in the last minute.", 6,
		    (double)snap->loop_iteration_window_max_ns / 1e9);
	put_seconds(out, "evictd_loop_iteration_max_since_start_seconds",
		    "The longest event-loop iteration since start.", 6,
		    (double)snap->loop_iteration_max_ns / 1e9);
	put_seconds(out, "evictd_loop_iteration_last_seconds", "The last event-loop iteration.", 6,
		    (double)snap->loop_iteration_last_ns / 1e9);
	const struct int_family kills[] = {
		{ "evictd_actions_in_flight", "gauge",
		  "Kills under way (SIGTERM grace or waiting for the cgroup to empty).",
		  snap->actions_in_flight },
		{ "evictd_evictions_refused_stale_total", "counter",
		  "Kills refused because the cgroup at the victim's path was no longer the one ranked.",
		  snap->evictions_refused_stale },
		{ "evictd_evictions_unreturned_total", "counter",
		  "Completed kills that did not give back the memory they held (tmpfs, shared memory).",
		  snap->evictions_unreturned },
		{ "evictd_escaped_processes_total", "counter",
		  "Processes that left a victim's cgroup before it emptied; killed through their pidfds.",
		  snap->escaped_processes },
		{ "evictd_warnings_total", "counter",
		  "Pre-kill warnings said (--warn-memory-available), at most one per --warn-interval.",
		  snap->warnings },
		{ "evictd_memory_pressure_workloads_above", "gauge",
		  "Workloads whose own memory.pressure is above --memory-pressure-limit now (held or not).",
		  snap->pressure_workloads_above },
	};
	PUT_INT_FAMILIES(out, kills);
	const struct int_family pods_seen[] = {
		{ "evictd_pods_memory_usage_estimated", "gauge",
		  "Pods whose memory.current cannot be read (no memory controller): usage estimated from their processes.",
		  snap->pods_memory_estimated },
		{ "evictd_pods_refused_total", "counter",
		  "Pods of a pod list or watch event refused alone (malformed, or claiming another pod's cgroup).",
		  snap->pods_refused },
	};
	PUT_INT_FAMILIES(out, pods_seen);
	if (counters->can_evict.known) {
		const struct metrics_can_evict *ce = &counters->can_evict;

		put_int_family(out, "evictd_can_evict", "gauge",
			       "1 when evictd is able to kill pods on this node, 0 when it cannot (cgroup v1, "
			       "cgroup.kill not writable, missing capabilities): see evictd_cannot_evict_reason.",
			       ce->can_evict);
		put_help(out, "evictd_cannot_evict_reason", "gauge",
			 "1 for each reason evictd cannot evict (evictctl status has the text).");
		for (size_t i = 0; i < ce->n_reasons; i++) {
			if (!ce->reasons[i].fatal)
				continue;
			fputs("evictd_cannot_evict_reason{", out);
			put_label(out, true, "reason", ce->reasons[i].key);
			fputs("} 1\n", out);
		}
		put_help(out, "evictd_eviction_degraded_reason", "gauge",
			 "1 for each reason evictd evicts worse than it could (no memory controller, no CAP_KILL).");
		for (size_t i = 0; i < ce->n_reasons; i++) {
			if (ce->reasons[i].fatal)
				continue;
			fputs("evictd_eviction_degraded_reason{", out);
			put_label(out, true, "reason", ce->reasons[i].key);
			fputs("} 1\n", out);
		}
	}
	if (counters->kube.enabled) {
		const struct metrics_kube *kube = &counters->kube;

		put_int_family(out, "evictd_kube_ready", "gauge",
			       "1 when pod metadata is listed and watched (/readyz): not on a 403 or a lost watch.",
			       metrics_kube_ready(kube, clock_monotonic_ns(), NULL));
		put_seconds(out, "evictd_kube_pods_stale_seconds",
			    "Age of the pod metadata once no list, watch event or bookmark came within the "
			    "progress bound (90 s); 0 while it is fresh.",
			    3, metrics_kube_stale_seconds(kube, clock_monotonic_ns()));
		const struct int_family pods[] = {
			{ "evictd_kube_pods_listed", "gauge", "1 once the node's pods were listed.",
			  kube->listed },
			{ "evictd_kube_pods_watch_open", "gauge", "1 while a pod watch stream is open.",
			  kube->watching },
			{ "evictd_kube_api_forbidden", "gauge",
			  "1 while the API server answers the pod list or watch with 403 Forbidden (RBAC).",
			  kube->failing && kube->last_status == 403 },
			{ "evictd_kube_pods_lists_total", "counter",
			  "Pod lists completed (relists included).", kube->lists },
			{ "evictd_kube_pods_relists_total", "counter", "Pod lists after a watch's 410 Gone.",
			  kube->relists },
			{ "evictd_kube_pods_watches_total", "counter", "Pod watch streams opened.",
			  kube->watches },
			{ "evictd_kube_pods_watch_events_total", "counter",
			  "Pod watch events applied (ADDED, MODIFIED, DELETED).", kube->watch_events },
			{ "evictd_kube_pods_watch_bookmarks_total", "counter", "Pod watch bookmarks.",
			  kube->bookmarks },
			{ "evictd_kube_pods_failures_total", "counter",
			  "Pod list or watch attempts that failed.", kube->failures },
			{ "evictd_kube_pressure_taint_lifted_total", "counter",
			  "Times evictd lifted its pressure taints so that a DaemonSet's pod could land.",
			  kube->taint_lifts },
		};
		PUT_INT_FAMILIES(out, pods);
		put_help(out, "evictd_kube_http_version", "gauge",
			 "HTTP version of the API server's last answer: 1.1 or 2 (libcurl negotiates HTTP/2 by "
			 "ALPN; EVICTD_KUBE_HTTP_VERSION overrides); 0 before the first.");
		fprintf(out, "evictd_kube_http_version %g\n", kube->http_version / 10.0);
	}
	put_int_family(out, "evictd_evaluations_total", "counter",
		       "Threshold evaluations since start.", (long long)snap->evaluations);
	put_help(out, "evictd_last_evaluation_timestamp_seconds", "gauge",
		 "When the thresholds were last evaluated, Unix seconds; 0 before the first.");
	fprintf(out, "evictd_last_evaluation_timestamp_seconds %lld.%03lld\n",
		(long long)(snap->last_evaluation_unix_ns / 1000000000),
		(long long)(snap->last_evaluation_unix_ns % 1000000000 / 1000000));
}

