// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ctl_view.h"
#include "ops/eventlog.h"
#include "ops/textsafe.h"
#include "signals/signals.h"

/* A cell: a cgroup path (4096 bytes) with a few escapes, or a long reason. */
#define CELL_MAX 8192

/* ---- JSON fields: any may be missing or of another type -------------------------------- */

static struct json_object *field(struct json_object *object, const char *name)
{
	struct json_object *value = NULL;

	if (object && json_object_is_type(object, json_type_object))
		json_object_object_get_ex(object, name, &value);
	return value;
}

static struct json_object *field_typed(struct json_object *object, const char *name, enum json_type type)
{
	struct json_object *value = field(object, name);

	return value && json_object_is_type(value, type) ? value : NULL;
}

static const char *field_string(struct json_object *object, const char *name, const char *fallback)
{
	struct json_object *value = field_typed(object, name, json_type_string);

	return value ? json_object_get_string(value) : fallback;
}

/* An integer field: true and *value, or false (missing, a double, a string, ...). */
static bool field_int(struct json_object *object, const char *name, int64_t *value)
{
	struct json_object *number = field_typed(object, name, json_type_int);

	*value = number ? json_object_get_int64(number) : 0;
	return number != NULL;
}

static int64_t field_int_or(struct json_object *object, const char *name, int64_t fallback)
{
	int64_t value;

	return field_int(object, name, &value) ? value : fallback;
}

static bool field_bool(struct json_object *object, const char *name)
{
	struct json_object *value = field_typed(object, name, json_type_boolean);

	return value && json_object_get_boolean(value);
}

static size_t array_length(struct json_object *array)
{
	return array && json_object_is_type(array, json_type_array) ? json_object_array_length(array) : 0;
}

static bool is_null(struct json_object *value)
{
	return !value || json_object_is_type(value, json_type_null);
}

/* An amount in the signal's unit ("300Mi"), or "?" when the field is not an integer. */
static void amount_field(const char *signal_text, struct json_object *object, const char *name, char *buf,
			 size_t len)
{
	enum ev_signal signal;
	int64_t value;

	if (!field_int(object, name, &value))
		snprintf(buf, len, "?");
	else if (signal_text && signal_lookup(signal_text, &signal) == 0)
		eventlog_format_amount(signal, value, buf, len);
	else
		snprintf(buf, len, "%lld", (long long)value);
}

static void format_duration(int64_t seconds, char *buf, size_t len)
{
	if (seconds < 0)
		snprintf(buf, len, "?");
	else if (seconds >= 86400)
		snprintf(buf, len, "%lldd%lldh", (long long)(seconds / 86400), (long long)(seconds % 86400 / 3600));
	else if (seconds >= 3600)
		snprintf(buf, len, "%lldh%02lldm", (long long)(seconds / 3600), (long long)(seconds % 3600 / 60));
	else if (seconds >= 60)
		snprintf(buf, len, "%lldm%02llds", (long long)(seconds / 60), (long long)(seconds % 60));
	else
		snprintf(buf, len, "%llds", (long long)seconds);
}

/* A counter for a line: the number, or "?". */
static const char *count_text(struct json_object *object, const char *name, char *buf, size_t len)
{
	int64_t value;

	if (field_int(object, name, &value))
		snprintf(buf, len, "%lld", (long long)value);
	else
		snprintf(buf, len, "?");
	return buf;
}

/* ---- output ---------------------------------------------------------------------------- */

/* printf with every %s argument already made safe by the caller (safe()). */
static void put(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(FILE *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
}

/* Up to four strings from the reply made safe for one line. */
struct safe_bufs {
	char buf[4][1024];
	int next;
};

static const char *safe(struct safe_bufs *bufs, const char *text)
{
	char *buf = bufs->buf[bufs->next++ % 4];

	return textsafe_display(text, buf, sizeof(bufs->buf[0]));
}

#define TABLE_MAX_COLS 10

struct table {
	size_t n_cols;
	size_t n_rows;
	size_t cap_rows;
	char *(*rows)[TABLE_MAX_COLS];
};

/* One row of n_cols cells, each made safe for the terminal. */
static void table_add(struct table *table, ...)
{
	char cell_buf[CELL_MAX];
	va_list ap;

	if (table->n_rows == table->cap_rows) {
		size_t cap = table->cap_rows ? table->cap_rows * 2 : 16;
		void *bigger = realloc(table->rows, cap * sizeof(*table->rows));

		if (!bigger)
			return;
		table->rows = bigger;
		table->cap_rows = cap;
	}
	va_start(ap, table);
	for (size_t c = 0; c < table->n_cols; c++) {
		const char *cell = va_arg(ap, const char *);

		table->rows[table->n_rows][c] = strdup(textsafe_display(cell ? cell : "", cell_buf, sizeof(cell_buf)));
	}
	va_end(ap);
	table->n_rows++;
}

/* Columns padded to their widest cell, two spaces apart, the last one not padded. */
static void table_print(FILE *out, struct table *table)
{
	size_t width[TABLE_MAX_COLS] = { 0 };

	for (size_t r = 0; r < table->n_rows; r++)
		for (size_t c = 0; c < table->n_cols; c++)
			if (table->rows[r][c] && textsafe_width(table->rows[r][c]) > width[c])
				width[c] = textsafe_width(table->rows[r][c]);
	for (size_t r = 0; r < table->n_rows; r++) {
		for (size_t c = 0; c < table->n_cols; c++) {
			const char *cell = table->rows[r][c] ? table->rows[r][c] : "";

			fputs(cell, out);
			if (c + 1 < table->n_cols)
				fprintf(out, "%*s", (int)(width[c] - textsafe_width(cell) + 2), "");
			else
				fputc('\n', out);
			free(table->rows[r][c]);
		}
	}
	free(table->rows);
	table->rows = NULL;
	table->n_rows = table->cap_rows = 0;
}

/* "namespace/name", or the cgroup when there is no name. */
static void pod_who(struct json_object *pod, char *buf, size_t len)
{
	const char *ns = field_string(pod, "namespace", ""), *name = field_string(pod, "name", "");

	snprintf(buf, len, "%s%s%s", ns, ns[0] ? "/" : "", name[0] ? name : field_string(pod, "cgroup", "?"));
}

/* ---- commands -------------------------------------------------------------------------- */

/* doc/DESIGN.md "Cannot act": first and loud, so nobody reads the tables of a daemon that
 * cannot kill and takes it for a guard. */
static void print_can_evict(FILE *out, struct json_object *reply, struct safe_bufs *s)
{
	struct json_object *fatal = field(reply, "cannot_evict"), *degraded = field(reply, "degraded");
	struct json_object *can = field_typed(reply, "can_evict", json_type_boolean);

	if (can && !json_object_get_boolean(can)) {
		for (size_t i = 0; i < array_length(fatal); i++) {
			struct json_object *reason = json_object_array_get_idx(fatal, i);

			put(out, "CANNOT EVICT: %s (%s)\n", safe(s, field_string(reason, "text", "?")),
			    safe(s, field_string(reason, "reason", "?")));
		}
		if (!array_length(fatal))
			put(out, "CANNOT EVICT: reason unknown\n");
	}
	for (size_t i = 0; i < array_length(degraded); i++) {
		struct json_object *reason = json_object_array_get_idx(degraded, i);

		put(out, "Degraded:    %s (%s)\n", safe(s, field_string(reason, "text", "?")),
		    safe(s, field_string(reason, "reason", "?")));
	}
}

/* A threshold's time to exhaustion: "in 12.3s (10.1-15.8s)", or why there is none ("-: noisy"). */
static void ahead_text(struct json_object *ahead, char *buf, size_t len)
{
	struct json_object *seconds = ahead ? field_typed(ahead, "seconds", json_type_double) : NULL;
	struct json_object *low = ahead ? field_typed(ahead, "seconds_low", json_type_double) : NULL;
	struct json_object *high = ahead ? field_typed(ahead, "seconds_high", json_type_double) : NULL;

	if (!ahead)
		snprintf(buf, len, "-");
	else if (!seconds || !low || !high)
		snprintf(buf, len, "-: %s", field_string(ahead, "why_not", "?"));
	else
		snprintf(buf, len, "in %.1fs (%.1f-%.1fs)", json_object_get_double(seconds),
			 json_object_get_double(low), json_object_get_double(high));
}

static void print_status(FILE *out, struct json_object *reply)
{
	struct json_object *signals = field_typed(reply, "signals", json_type_object);
	struct json_object *thresholds = field(reply, "thresholds");
	struct json_object *conditions = field_typed(reply, "conditions", json_type_object);
	struct json_object *decision = field_typed(reply, "decision", json_type_object);
	struct json_object *bpf = field(reply, "bpf"), *guard = field(reply, "oom_guard");
	struct json_object *evictions = field(reply, "evictions");
	struct table table = { .n_cols = 3 };
	struct safe_bufs s = { .next = 0 };
	char uptime[32], a[32], b[32], c[32], d[32];
	int64_t value;

	format_duration(field_int_or(reply, "uptime_seconds", -1), uptime, sizeof(uptime));
	put(out, "evictd %s, pid %s, up %s, %s mode%s%s%s\n", safe(&s, field_string(reply, "version", "?")),
	    count_text(reply, "pid", a, sizeof(a)), uptime, safe(&s, field_string(reply, "mode", "unknown")),
	    field_string(reply, "node_name", NULL) ? " on node " : "",
	    safe(&s, field_string(reply, "node_name", "")), field_bool(reply, "dry_run") ? ", DRY RUN (kills nothing)" : "");
	print_can_evict(out, reply, &s);
	if (field_bool(bpf, "enabled"))
		put(out, "BPF:         on, %s programs attached%s%s\n", count_text(bpf, "programs_attached", a, sizeof(a)),
		    field_string(bpf, "pin_dir", NULL) ? ", maps pinned at " : "", safe(&s, field_string(bpf, "pin_dir", "")));
	else
		put(out, "BPF:         off (%s): polling and PSI only\n", safe(&s, field_string(bpf, "reason", "disabled")));
	put(out, "Evaluations: %s, last at %s\n", count_text(reply, "evaluations", a, sizeof(a)),
	    safe(&s, field_string(reply, "last_evaluation", "never")));
	put(out, "Evictions:   %s killed, %s failed, %s refused (cgroup replaced), %s in flight\n",
	    count_text(evictions, "killed", a, sizeof(a)), count_text(evictions, "failed", b, sizeof(b)),
	    count_text(evictions, "refused_stale", c, sizeof(c)), count_text(evictions, "in_flight", d, sizeof(d)));
	if (field_int(reply, "loop_iteration_max_ns", &value))
		put(out, "Event loop:  longest iteration %.3f ms\n", (double)value / 1e6);
	else
		put(out, "Event loop:  longest iteration ?\n");
	if (field_bool(guard, "enabled")) {
		amount_field("oom.guard", guard, "mem_available", a, sizeof(a));
		amount_field("oom.guard", guard, "mem_total", b, sizeof(b));
		put(out, "OOM guard:   on, kernel MemAvailable %s of %s\n", a, b);
	} else {
		put(out, "OOM guard:   off\n");
	}
	fputc('\n', out);

	table_add(&table, "SIGNAL", "AVAILABLE", "CAPACITY");
	if (signals) {
		json_object_object_foreach(signals, name, entry) {
			amount_field(name, entry, "available", a, sizeof(a));
			amount_field(name, entry, "capacity", b, sizeof(b));
			table_add(&table, name, a, b);
		}
	}
	table_print(out, &table);
	fputc('\n', out);

	table.n_cols = 5;
	table_add(&table, "THRESHOLD", "RESOLVED", "GRACE", "STATE", "AHEAD");
	for (size_t i = 0; i < array_length(thresholds); i++) {
		struct json_object *threshold = json_object_array_get_idx(thresholds, i);
		const char *signal = field_string(threshold, "signal", "?");
		char text[600];

		/* memory.pressure's value is its criterion ("full avg10>60.00% for 30s"). */
		snprintf(text, sizeof(text), "%s %s%s%s%s", field_string(threshold, "kind", "?"), signal,
			 strcmp(signal, "memory.pressure") ? "<" : " ", field_string(threshold, "value", "?"),
			 field_bool(threshold, "derived") ? " (derived)" : "");
		amount_field(signal, threshold, "resolved", a, sizeof(a));
		ahead_text(field_typed(threshold, "ahead", json_type_object), b, sizeof(b));
		table_add(&table, text, a, field_string(threshold, "grace_period", "-"),
			  field_bool(threshold, "actionable") ? "ACTING" : field_bool(threshold, "met") ? "met" : "ok", b);
	}
	table_print(out, &table);
	fputc('\n', out);

	table.n_cols = 2;
	table_add(&table, "CONDITION", "STATUS");
	if (conditions) {
		json_object_object_foreach(conditions, condition, status) {
			const char *text = "?";

			if (status && json_object_is_type(status, json_type_boolean))
				text = json_object_get_boolean(status) ? "True" : "False";
			table_add(&table, condition, text);
		}
	}
	table_print(out, &table);
	fputc('\n', out);

	if (decision) {
		struct json_object *victim = field_typed(decision, "victim", json_type_object);
		char who[1200] = "no victim";

		if (victim)
			pod_who(victim, who, sizeof(who));
		put(out, "Decision:    %s %s -> %s (%s)%s\n", safe(&s, field_string(decision, "kind", "?")),
		    safe(&s, field_string(decision, "signal", "?")), safe(&s, who),
		    safe(&s, field_string(decision, "reason", "")), field_bool(decision, "dry_run") ? " [dry run]" : "");
	} else {
		put(out, "Decision:    none (no threshold is acted on)\n");
	}
}

static void print_pods(FILE *out, struct json_object *reply)
{
	struct json_object *pods = field(reply, "pods");
	const char *signal = field_string(reply, "signal", "?");
	struct table table = { .n_cols = 8 };
	struct safe_bufs s = { .next = 0 };
	size_t n = array_length(pods);

	put(out, "Ranking for %s (%s); usage and request in %s\n", safe(&s, signal),
	    safe(&s, field_string(reply, "signal_reason", "")), safe(&s, field_string(reply, "unit", "?")));
	if (!field_bool(reply, "cgroup_tree")) {
		put(out, "No cgroup v2 tree: evictd decides and reports only; nothing to rank.\n");
		return;
	}
	if (!n) {
		put(out, "No pods or workloads found.\n");
		return;
	}
	table_add(&table, "RANK", "POD", "QOS", "PRIORITY", "USAGE", "REQUEST", "MARK", "REASON");
	for (size_t i = 0; i < n; i++) {
		struct json_object *pod = json_object_array_get_idx(pods, i);
		char rank[24], who[1200], priority[24], usage_text[32], request_text[32];

		count_text(pod, "rank", rank, sizeof(rank));
		pod_who(pod, who, sizeof(who));
		count_text(pod, "priority", priority, sizeof(priority));
		amount_field(signal, pod, "usage", usage_text, sizeof(usage_text));
		amount_field(signal, pod, "request", request_text, sizeof(request_text));
		table_add(&table, rank, who, field_string(pod, "qos", "?"), priority, usage_text, request_text,
			  field_bool(pod, "victim") ? "VICTIM" : field_bool(pod, "never_evict") ? "NEVER" : "",
			  field_string(pod, "reason", ""));
	}
	table_print(out, &table);
}

static void print_events(FILE *out, struct json_object *reply)
{
	struct json_object *events = field(reply, "events");
	struct table table = { .n_cols = 8 };
	size_t n = array_length(events);

	if (!n) {
		put(out, "No decisions yet.\n");
		return;
	}
	table_add(&table, "TIME", "SIGNAL", "KIND", "VALUE", "THRESHOLD", "ACTION", "LATENCY", "VICTIM");
	for (size_t i = 0; i < n; i++) {
		struct json_object *event = json_object_array_get_idx(events, i);
		struct json_object *victim = field(event, "victim");
		const char *signal = field_string(event, "signal", "?");
		char value[32], threshold[32], latency_text[32] = "-", who[600] = "-";
		int64_t latency;

		amount_field(signal, event, "value", value, sizeof(value));
		amount_field(signal, event, "threshold", threshold, sizeof(threshold));
		if (field_int(event, "latency_ns", &latency))
			snprintf(latency_text, sizeof(latency_text), "%.1fms", (double)latency / 1e6);
		if (!is_null(victim))
			snprintf(who, sizeof(who), "%s", field_string(victim, "name", "?"));
		if (field_bool(event, "oom_guard"))
			strncat(who, " [oom-guard]", sizeof(who) - strlen(who) - 1);
		table_add(&table, field_string(event, "time", "?"), signal, field_string(event, "kind", "?"), value,
			  threshold, field_string(event, "action", "?"), latency_text, who);
	}
	table_print(out, &table);
}

/* ---- entry points ---------------------------------------------------------------------- */

int ctl_view_parse(const char *text, struct json_object **reply, char *err, size_t err_len)
{
	struct json_object *doc = json_tokener_parse(text);
	char shown[256];

	*reply = NULL;
	if (!doc || !json_object_is_type(doc, json_type_object)) {
		char safe_text[1024];

		json_object_put(doc);
		snprintf(shown, sizeof(shown), "%.200s", text);
		snprintf(err, err_len, "the reply is not a JSON object: %s",
			 textsafe_display(shown, safe_text, sizeof(safe_text)));
		return -EPROTO;
	}
	if (!field_bool(doc, "ok")) {
		char safe_text[1024];

		snprintf(err, err_len, "evictd: %s",
			 textsafe_display(field_string(doc, "error", "request failed"), safe_text, sizeof(safe_text)));
		json_object_put(doc);
		return -EREMOTEIO;
	}
	*reply = doc;
	return 0;
}

int ctl_view_render(FILE *out, const char *command, struct json_object *reply, char *err, size_t err_len)
{
	const char *part;
	enum json_type type;

	if (!strcmp(command, "status")) {
		part = "signals";
		type = json_type_object;
	} else if (!strcmp(command, "pods")) {
		part = "pods";
		type = json_type_array;
	} else if (!strcmp(command, "events")) {
		part = "events";
		type = json_type_array;
	} else {
		snprintf(err, err_len, "unknown command \"%.64s\"", command);
		return -EINVAL;
	}
	if (!field_typed(reply, part, type)) {
		snprintf(err, err_len, "the reply to %s has no \"%s\" %s: is evictd older or newer than "
			 "this evictctl?", command, part, type == json_type_object ? "object" : "array");
		return -EPROTO;
	}
	if (!strcmp(command, "status"))
		print_status(out, reply);
	else if (!strcmp(command, "pods"))
		print_pods(out, reply);
	else
		print_events(out, reply);
	return 0;
}

const char *ctl_view_pin_dir(struct json_object *reply, const char *fallback)
{
	return field_string(field(reply, "bpf"), "pin_dir", fallback);
}
