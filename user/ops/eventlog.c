// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/eventlog.h"
#include "ops/eventlog_sink.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "ops/textsafe.h"

/* Identifies a run of identical decisions: action, signal, kind, dry run, victim, error. */
#define COALESCE_KEY_LEN (PATH_MAX + 512)

struct eventlog {
	struct eventlog_sink sink;
	int64_t (*realtime_ns)(void);
	int64_t (*monotonic_ns)(void);

	/* The run of identical decisions the last line began (see eventlog.h). */
	bool have_last;
	char last_key[COALESCE_KEY_LEN];
	struct json_object *last_entry;	/* the run's first line, for the summary's fields */
	uint64_t repeats;		/* not yet summarised */
	int64_t window_start_ns;	/* monotonic: the run's last line (event or summary) */
	int64_t last_repeat_ns;

	struct json_object *ring[EVENTLOG_RING_SIZE];
	size_t ring_next;	/* slot the next entry goes to */
	size_t ring_count;
};

const char *eventlog_action_name(enum eventlog_action action)
{
	switch (action) {
	case EVENTLOG_KILLED: return "killed";
	case EVENTLOG_DRY_RUN: return "dry_run";
	case EVENTLOG_NO_VICTIM: return "no_victim";
	case EVENTLOG_RECLAIMED: return "reclaimed";
	case EVENTLOG_UNRETURNED: return "unreturned";
	case EVENTLOG_FAILED: return "failed";
	case EVENTLOG_WARNED: return "warn";
	}
	return "unknown";
}

void eventlog_format_time(int64_t unix_ns, char *buf, size_t len)
{
	time_t seconds = (time_t)(unix_ns / 1000000000);
	long millis = (long)(unix_ns % 1000000000 / 1000000);
	char stamp[24];
	struct tm tm;

	gmtime_r(&seconds, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03ldZ", stamp, millis);
}

static bool signal_in_bytes(enum ev_signal signal)
{
	return signal_meta(signal)->unit == SIGNAL_UNIT_BYTES;
}

const char *eventlog_signal_unit(enum ev_signal signal)
{
	return signal_unit_name(signal);
}

static void format_bytes(int64_t value, char *buf, size_t len)
{
	static const char *const suffixes[] = { "Ki", "Mi", "Gi", "Ti", "Pi" };
	double scaled = (double)value;
	int unit = -1;

	while ((scaled >= 1024 || scaled <= -1024) && unit < 4) {
		scaled /= 1024;
		unit++;
	}
	if (unit < 0)
		snprintf(buf, len, "%lld", (long long)value);
	else if (scaled == (double)(long long)scaled)
		snprintf(buf, len, "%lld%s", (long long)scaled, suffixes[unit]);
	else
		snprintf(buf, len, "%.1f%s", scaled, suffixes[unit]);
}

void eventlog_format_amount(enum ev_signal signal, int64_t value, char *buf, size_t len)
{
	if (signal_in_bytes(signal))
		format_bytes(value, buf, len);
	else if (signal_meta(signal)->unit == SIGNAL_UNIT_PERMYRIAD)	/* memory.pressure */
		snprintf(buf, len, "%lld.%02lld%%", (long long)value / 100, (long long)(value < 0 ? -value : value) % 100);
	else
		snprintf(buf, len, "%lld", (long long)value);
}

/* ---- why a pod ranks where it does ------------------------------------------------------ */

/* The kubelet's rank functions by signal (mirrors rank.c's mapping). */
enum rank_keys {
	KEYS_REQUEST_PRIORITY_USAGE,	/* memory, disk bytes: exceeds request, priority, usage - request */
	KEYS_PRIORITY_PROCESSES,	/* pid.available */
	KEYS_INODES,			/* inodesFree: exceeds (no request), priority, usage */
};

static enum rank_keys signal_keys(enum ev_signal signal)
{
	if (signal == EV_SIGNAL_PID_AVAILABLE)
		return KEYS_PRIORITY_PROCESSES;
	if (signal == EV_SIGNAL_NODEFS_INODES_FREE || signal == EV_SIGNAL_IMAGEFS_INODES_FREE ||
	    signal == EV_SIGNAL_CONTAINERFS_INODES_FREE)
		return KEYS_INODES;
	return KEYS_REQUEST_PRIORITY_USAGE;
}

void eventlog_rank_reason(enum ev_signal signal, const struct rank_options *options,
			  const struct pod *pod, char *buf, size_t len)
{
	/* memory.pressure ranks as memory (rank.c), in bytes, not in its own permyriad. */
	signal = signal == EV_SIGNAL_MEMORY_PRESSURE ? EV_SIGNAL_MEMORY_AVAILABLE : signal;
	int64_t usage = rank_usage(signal, options, pod);
	int64_t request = rank_request(signal, pod);
	char usage_text[32], request_text[32], above_text[32];
	bool daemonset_last = options ? options->daemonset_last : true;
	const char *never = pod_never_evict_reason(pod);
	size_t used = 0;

	if (never) {
		snprintf(buf, len, "never evicted: %s, priority %d; ranked last", never, pod->priority);
		return;
	}
	buf[0] = '\0';
	if (pod->processes == 0 && !pod->stats_missing)
		used += (size_t)snprintf(buf, len, "no task left, not a candidate; ");
	if (daemonset_last && pod->is_daemonset && used < len)
		used += (size_t)snprintf(buf + used, len - used,
					 "DaemonSet pod: ranked after all others (it would be recreated here); ");
	if ((pod->preference == POD_PREF_PREFER || pod->preference == POD_PREF_AVOID) && used < len)
		used += (size_t)snprintf(buf + used, len - used, "%s: ranked %s; ", pod->preference_from,
					 pod->preference == POD_PREF_PREFER ? "before the others" :
									      "after the others");
	if (used >= len)
		return;
	if (pod->stats_missing) {
		snprintf(buf + used, len - used, "no usage could be read: ranked first, as the kubelet "
			 "ranks a pod without stats; priority %d", pod->priority);
		return;
	}
	eventlog_format_amount(signal, usage, usage_text, sizeof(usage_text));
	eventlog_format_amount(signal, request, request_text, sizeof(request_text));
	switch (signal_keys(signal)) {
	case KEYS_REQUEST_PRIORITY_USAGE:
		eventlog_format_amount(signal, usage - request, above_text, sizeof(above_text));
		snprintf(buf + used, len - used, "usage %s %s request %s; priority %d; usage - request %s",
			 usage_text, usage > request ? "exceeds" : "within", request_text, pod->priority,
			 above_text);
		break;
	case KEYS_PRIORITY_PROCESSES:
		snprintf(buf + used, len - used, "priority %d; %s tasks", pod->priority, usage_text);
		break;
	case KEYS_INODES:
		snprintf(buf + used, len - used, "%s inodes (no request exists); priority %d",
			 usage_text, pod->priority);
		break;
	}
}

/* ---- rendering ------------------------------------------------------------------------- */

/* Room for "namespace/name" or a whole cgroup path. */
#define POD_DISPLAY_NAME_LEN (sizeof(((struct pod *)0)->cgroup_path) + 8)

static void pod_display_name(const struct pod *pod, char *buf, size_t len)
{
	if (pod->namespace_[0])
		snprintf(buf, len, "%s/%s", pod->namespace_, pod->name);
	else
		snprintf(buf, len, "%s", pod->name[0] ? pod->name : pod->cgroup_path);
}

void eventlog_action_text(const struct eventlog_decision *decision, char *buf, size_t len)
{
	char name[POD_DISPLAY_NAME_LEN] = "";
	const char *error = decision->error ? decision->error : "unknown";
	bool would = decision->dry_run || decision->action == EVENTLOG_DRY_RUN;

	if (decision->victim)
		pod_display_name(decision->victim, name, sizeof(name));
	switch (decision->action) {
	case EVENTLOG_KILLED:
	case EVENTLOG_DRY_RUN:
		snprintf(buf, len, "%s %s", would ? "would kill" : "killed", name);
		return;
	case EVENTLOG_NO_VICTIM:
		snprintf(buf, len, "%s nothing: no evictable pod or workload", would ? "would kill" : "killed");
		return;
	case EVENTLOG_RECLAIMED:
		snprintf(buf, len, "%s at node level; nobody killed", would ? "would reclaim" : "reclaimed");
		return;
	case EVENTLOG_FAILED:
		if (would)
			snprintf(buf, len, "would kill %s, but it was refused: %s", name, error);
		else
			snprintf(buf, len, "failed to kill %s: %s", name, error);
		return;
	case EVENTLOG_UNRETURNED:
		snprintf(buf, len, "the last kill did not give back its memory: %s; holding evictions", error);
		return;
	case EVENTLOG_WARNED:
		/* --warn-ahead's is on a hard threshold not met yet (daemon/warn.c) */
		snprintf(buf, len, "warning: %s; first in line %s",
			 decision->hard ? "the threshold is near at the measured rate" : "below the warning level",
			 decision->victim ? name : "nothing evictable");
		return;
	}
	snprintf(buf, len, "%s", eventlog_action_name(decision->action));
}

static struct json_object *victim_json(const struct pod *pod)
{
	struct json_object *victim = json_object_new_object();
	char name[POD_DISPLAY_NAME_LEN];

	pod_display_name(pod, name, sizeof(name));
	json_object_object_add(victim, "name", json_object_new_string(name));
	json_object_object_add(victim, "namespace", json_object_new_string(pod->namespace_));
	json_object_object_add(victim, "pod", json_object_new_string(pod->name));
	json_object_object_add(victim, "uid", json_object_new_string(pod->uid));
	json_object_object_add(victim, "cgroup", json_object_new_string(pod->cgroup_path));
	json_object_object_add(victim, "qos", json_object_new_string(pod_qos_name(pod->qos)));
	json_object_object_add(victim, "priority", json_object_new_int(pod->priority));
	return victim;
}

static struct json_object *candidate_json(const struct eventlog_decision *decision, const struct pod *pod)
{
	struct json_object *candidate = json_object_new_object();
	char name[POD_DISPLAY_NAME_LEN], reason[512];

	pod_display_name(pod, name, sizeof(name));
	eventlog_rank_reason(decision->signal, decision->rank_options, pod, reason, sizeof(reason));
	json_object_object_add(candidate, "name", json_object_new_string(name));
	json_object_object_add(candidate, "priority", json_object_new_int(pod->priority));
	json_object_object_add(candidate, "qos", json_object_new_string(pod_qos_name(pod->qos)));
	json_object_object_add(candidate, "usage",
			       json_object_new_int64(rank_usage(decision->signal, decision->rank_options, pod)));
	json_object_object_add(candidate, "request", json_object_new_int64(rank_request(decision->signal, pod)));
	json_object_object_add(candidate, "never_evict", json_object_new_boolean(pod_never_evict(pod)));
	json_object_object_add(candidate, "reason", json_object_new_string(reason));
	return candidate;
}

struct json_object *eventlog_decision_json(const struct eventlog_decision *decision, int64_t unix_ns)
{
	struct json_object *entry = json_object_new_object();
	struct json_object *candidates = json_object_new_array();
	char stamp[40], text[POD_DISPLAY_NAME_LEN + 128];

	eventlog_format_time(unix_ns, stamp, sizeof(stamp));
	eventlog_action_text(decision, text, sizeof(text));
	json_object_object_add(entry, "time", json_object_new_string(stamp));
	json_object_object_add(entry, "signal", json_object_new_string(signal_name(decision->signal)));
	json_object_object_add(entry, "kind", json_object_new_string(decision->hard ? "hard" : "soft"));
	json_object_object_add(entry, "unit", json_object_new_string(eventlog_signal_unit(decision->signal)));
	json_object_object_add(entry, "value", json_object_new_int64(decision->value));
	json_object_object_add(entry, "threshold", json_object_new_int64(decision->threshold));
	if (decision->threshold_text)
		json_object_object_add(entry, "threshold_text", json_object_new_string(decision->threshold_text));
	json_object_object_add(entry, "oom_guard", json_object_new_boolean(decision->signal == EV_SIGNAL_OOM_GUARD));
	json_object_object_add(entry, "dry_run", json_object_new_boolean(decision->dry_run));
	json_object_object_add(entry, "action", json_object_new_string(eventlog_action_name(decision->action)));
	json_object_object_add(entry, "action_text", json_object_new_string(text));
	json_object_object_add(entry, "reason", json_object_new_string(decision->reason ? decision->reason : ""));
	if (decision->action == EVENTLOG_FAILED)
		json_object_object_add(entry, "error", json_object_new_string(decision->error ? decision->error : "unknown"));
	json_object_object_add(entry, "victim", decision->victim ? victim_json(decision->victim) : NULL);
	json_object_object_add(entry, "latency_ns",
			       decision->latency_ns >= 0 ? json_object_new_int64(decision->latency_ns) : NULL);
	json_object_object_add(entry, "candidates_total", json_object_new_int64((int64_t)decision->n_candidates));
	for (size_t i = 0; i < decision->n_candidates && i < EVENTLOG_MAX_CANDIDATES; i++)
		json_object_array_add(candidates, candidate_json(decision, decision->candidates[i]));
	json_object_object_add(entry, "candidates", candidates);
	return entry;
}

/* ---- output ---------------------------------------------------------------------------- */

int eventlog_open(struct eventlog **out, const struct eventlog_options *options)
{
	const char *path = options ? options->path : NULL;
	struct eventlog *log;
	int err;

	*out = NULL;
	log = calloc(1, sizeof(*log));
	if (!log)
		return -ENOMEM;
	log->realtime_ns = options && options->realtime_ns ? options->realtime_ns : clock_realtime_ns;
	log->monotonic_ns = options && options->monotonic_ns ? options->monotonic_ns : clock_monotonic_ns;
	err = eventlog_sink_open(&log->sink, path, options ? options->max_size : 0,
				 options ? options->max_files : 0);
	if (err) {
		free(log);
		return err;
	}
	*out = log;
	return 0;
}

int eventlog_reopen(struct eventlog *log)
{
	return log ? eventlog_sink_reopen(&log->sink) : 0;
}

static void ring_put(struct eventlog *log, struct json_object *entry)
{
	json_object_put(log->ring[log->ring_next]);
	log->ring[log->ring_next] = entry;
	log->ring_next = (log->ring_next + 1) % EVENTLOG_RING_SIZE;
	if (log->ring_count < EVENTLOG_RING_SIZE)
		log->ring_count++;
}

/* Render entry as one line and write it; the entry goes to the ring (the ring owns it). */
static int emit(struct eventlog *log, struct json_object *entry)
{
	const char *text;
	char *line, *safe;
	size_t len;
	int err = 0;

	if (log->sink.kind != SINK_NONE) {
		/* Valid UTF-8 whatever the names hold (ops/textsafe.h). */
		text = json_object_to_json_string_ext(entry, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
		safe = textsafe_json_utf8(text);
		len = safe ? strlen(safe) : 0;
		line = safe ? realloc(safe, len + 2) : NULL;
		if (!line) {
			free(safe);
			err = -ENOMEM;
		} else {
			line[len] = '\n';
			line[len + 1] = '\0';
			err = eventlog_sink_write(&log->sink, line, len + 1);
			free(line);
		}
	}
	ring_put(log, entry);
	return err;
}

static void copy_field(struct json_object *to, struct json_object *from, const char *key)
{
	struct json_object *value;

	if (json_object_object_get_ex(from, key, &value))
		json_object_object_add(to, key, json_object_get(value));
}

/* The pending repeats of the current run, as one line; the next window starts now. */
static void flush_summary(struct eventlog *log, int64_t now_ns)
{
	static const char *const fields[] = { "signal", "kind", "unit", "oom_guard", "dry_run", "action",
					      "action_text", "reason", "error", "victim" };
	struct json_object *summary;
	double seconds;
	char stamp[40], text[96], seconds_text[32];

	if (!log->have_last || !log->repeats || !log->last_entry)
		return;
	seconds = (double)(log->last_repeat_ns - log->window_start_ns) / 1e9;
	summary = json_object_new_object();
	eventlog_format_time(log->realtime_ns(), stamp, sizeof(stamp));
	json_object_object_add(summary, "time", json_object_new_string(stamp));
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		copy_field(summary, log->last_entry, fields[i]);
	json_object_object_add(summary, "repeated", json_object_new_int64((int64_t)log->repeats));
	snprintf(seconds_text, sizeof(seconds_text), "%.1f", seconds);
	json_object_object_add(summary, "seconds", json_object_new_double_s(seconds, seconds_text));
	snprintf(text, sizeof(text), "repeated %llu times in %s s", (unsigned long long)log->repeats, seconds_text);
	json_object_object_add(summary, "summary", json_object_new_string(text));
	emit(log, summary);
	log->repeats = 0;
	log->window_start_ns = now_ns;
}

int eventlog_record(struct eventlog *log, const struct eventlog_decision *decision)
{
	char key[COALESCE_KEY_LEN];
	int64_t now = log->monotonic_ns();
	struct json_object *entry;
	int err;

	snprintf(key, sizeof(key), "%d|%d|%d|%d|%s|%s", (int)decision->action, (int)decision->signal,
		 decision->hard, decision->dry_run, decision->victim ? decision->victim->cgroup_path : "",
		 decision->error ? decision->error : "");
	if (log->have_last && !strcmp(key, log->last_key)) {
		log->repeats++;
		log->last_repeat_ns = now;
		if (now - log->window_start_ns >= EVENTLOG_SUMMARY_INTERVAL_NS)
			flush_summary(log, now);
		return 0;
	}
	flush_summary(log, now);
	entry = eventlog_decision_json(decision, log->realtime_ns());
	json_object_put(log->last_entry);
	log->last_entry = json_object_get(entry);
	log->have_last = true;
	snprintf(log->last_key, sizeof(log->last_key), "%s", key);
	log->repeats = 0;
	log->window_start_ns = now;
	log->last_repeat_ns = now;
	err = emit(log, entry);
	return err ? err : 1;
}

void eventlog_tick(struct eventlog *log)
{
	int64_t now;

	if (!log || !log->repeats)
		return;
	now = log->monotonic_ns();
	if (now - log->window_start_ns >= EVENTLOG_SUMMARY_INTERVAL_NS)
		flush_summary(log, now);
}

void eventlog_pressure_cleared(struct eventlog *log)
{
	if (!log)
		return;
	flush_summary(log, log->monotonic_ns());
	log->have_last = false;
}

void eventlog_close(struct eventlog *log)
{
	if (!log)
		return;
	flush_summary(log, log->monotonic_ns());
	eventlog_sink_close(&log->sink);
	json_object_put(log->last_entry);
	for (size_t i = 0; i < EVENTLOG_RING_SIZE; i++)
		json_object_put(log->ring[i]);
	free(log);
}

size_t eventlog_count(const struct eventlog *log)
{
	return log ? log->ring_count : 0;
}

struct json_object *eventlog_events_json(const struct eventlog *log)
{
	struct json_object *events = json_object_new_array();
	size_t first;

	if (!log)
		return events;
	first = (log->ring_next + EVENTLOG_RING_SIZE - log->ring_count) % EVENTLOG_RING_SIZE;
	for (size_t i = 0; i < log->ring_count; i++)
		json_object_array_add(events, json_object_get(log->ring[(first + i) % EVENTLOG_RING_SIZE]));
	return events;
}
