// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Metrics: the exposition text is parsed back line by line (format 0.0.4) and checked for
 * declared types, names, labels, escaping and histogram consistency; then over real HTTP. */
#include "testutil.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include "ops/metrics.h"
#include "sys/clock.h"

/* ---- a strict parser of the text format ------------------------------------------------- */

#define MAX_SAMPLES 512
#define MAX_FAMILIES 96
#define MAX_LABELS 4

struct label {
	char name[32];
	char value[128];
};

struct sample {
	char name[96];
	struct label labels[MAX_LABELS];
	int n_labels;
	double value;
};

struct family {
	char name[96];
	char type[16];
	bool has_help;
};

struct exposition {
	struct sample samples[MAX_SAMPLES];
	int n_samples;
	struct family families[MAX_FAMILIES];
	int n_families;
};

static bool valid_metric_name(const char *name)
{
	if (!*name || !(isalpha((unsigned char)*name) || *name == '_' || *name == ':'))
		return false;
	for (const char *p = name; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_' || *p == ':'))
			return false;
	return true;
}

static struct family *find_family(struct exposition *exp, const char *name)
{
	for (int i = 0; i < exp->n_families; i++)
		if (!strcmp(exp->families[i].name, name))
			return &exp->families[i];
	return NULL;
}

/* The family a sample belongs to: histograms add _bucket, _sum, _count. */
static struct family *sample_family(struct exposition *exp, const char *name)
{
	static const char *const suffixes[] = { "_bucket", "_sum", "_count" };
	struct family *family = find_family(exp, name);
	char base[96];

	if (family)
		return family;
	for (size_t i = 0; i < 3; i++) {
		size_t len = strlen(name), slen = strlen(suffixes[i]);

		if (len > slen && !strcmp(name + len - slen, suffixes[i])) {
			snprintf(base, sizeof(base), "%.*s", (int)(len - slen), name);
			family = find_family(exp, base);
			if (family && !strcmp(family->type, "histogram"))
				return family;
		}
	}
	return NULL;
}

/* Parse label set starting after '{'; returns the position after '}'. */
static const char *parse_labels(const char *p, struct sample *sample, int lineno)
{
	while (*p != '}') {
		struct label *label;
		size_t n = 0;

		if (sample->n_labels == MAX_LABELS)
			fail_msg("line %d: too many labels", lineno);
		label = &sample->labels[sample->n_labels++];
		while (isalnum((unsigned char)*p) || *p == '_')
			label->name[n++] = *p++;
		label->name[n] = '\0';
		if (!n || *p++ != '=' || *p++ != '"')
			fail_msg("line %d: malformed label", lineno);
		n = 0;
		while (*p != '"') {
			if (!*p || *p == '\n')
				fail_msg("line %d: unterminated label value", lineno);
			if (*p == '\\') {
				p++;
				if (*p == 'n')
					label->value[n++] = '\n';
				else if (*p == '\\' || *p == '"')
					label->value[n++] = *p;
				else
					fail_msg("line %d: bad escape \\%c", lineno, *p);
				p++;
				continue;
			}
			label->value[n++] = *p++;
		}
		label->value[n] = '\0';
		p++;
		if (*p == ',')
			p++;
		else if (*p != '}')
			fail_msg("line %d: expected , or } after a label", lineno);
	}
	return p + 1;
}

static void parse_exposition(const char *text, struct exposition *exp)
{
	char *copy = strdup(text), *save = NULL;
	int lineno = 0;

	memset(exp, 0, sizeof(*exp));
	assert_non_null(copy);
	assert_true(strlen(text) > 0 && text[strlen(text) - 1] == '\n');
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		lineno++;
		if (!strncmp(line, "# HELP ", 7)) {
			char name[96];
			struct family *family;

			assert_int_equal(sscanf(line + 7, "%95s", name), 1);
			assert_true(valid_metric_name(name));
			family = find_family(exp, name);
			if (family && family->has_help)
				fail_msg("line %d: second HELP for %s", lineno, name);
			if (!family) {
				assert_true(exp->n_families < MAX_FAMILIES);
				family = &exp->families[exp->n_families++];
				snprintf(family->name, sizeof(family->name), "%s", name);
			}
			family->has_help = true;
		} else if (!strncmp(line, "# TYPE ", 7)) {
			char name[96], type[16];
			struct family *family;

			assert_int_equal(sscanf(line + 7, "%95s %15s", name, type), 2);
			if (strcmp(type, "gauge") && strcmp(type, "counter") && strcmp(type, "histogram"))
				fail_msg("line %d: unexpected type %s", lineno, type);
			family = find_family(exp, name);
			if (!family) {
				assert_true(exp->n_families < MAX_FAMILIES);
				family = &exp->families[exp->n_families++];
				snprintf(family->name, sizeof(family->name), "%s", name);
			}
			if (family->type[0])
				fail_msg("line %d: second TYPE for %s", lineno, name);
			snprintf(family->type, sizeof(family->type), "%s", type);
		} else if (line[0] == '#') {
			fail_msg("line %d: unexpected comment: %s", lineno, line);
		} else {
			struct sample *sample;
			const char *p = line;
			char *end;
			size_t n = 0;

			assert_true(exp->n_samples < MAX_SAMPLES);
			sample = &exp->samples[exp->n_samples++];
			while (*p && *p != '{' && *p != ' ')
				sample->name[n++] = *p++;
			sample->name[n] = '\0';
			if (!valid_metric_name(sample->name))
				fail_msg("line %d: bad metric name in: %s", lineno, line);
			if (*p == '{')
				p = parse_labels(p + 1, sample, lineno);
			if (*p++ != ' ')
				fail_msg("line %d: expected a space before the value: %s", lineno, line);
			if (!strcmp(p, "+Inf"))
				sample->value = INFINITY;
			else
				sample->value = strtod(p, &end);
			if (strcmp(p, "+Inf") && (end == p || *end))
				fail_msg("line %d: bad value \"%s\"", lineno, p);
			{
				struct family *family = sample_family(exp, sample->name);

				if (!family || !family->type[0])
					fail_msg("line %d: %s has no TYPE before it", lineno, sample->name);
				if (!family->has_help)
					fail_msg("line %d: %s has no HELP", lineno, sample->name);
			}
		}
	}
	free(copy);
}

static const char *label_of(const struct sample *sample, const char *name)
{
	for (int i = 0; i < sample->n_labels; i++)
		if (!strcmp(sample->labels[i].name, name))
			return sample->labels[i].value;
	return NULL;
}

/* The value of the one sample with this name and (up to two) label pairs; fails if absent
 * or ambiguous. */
static double value_of(const struct exposition *exp, const char *name, const char *l1, const char *v1,
		       const char *l2, const char *v2)
{
	const struct sample *found = NULL;

	for (int i = 0; i < exp->n_samples; i++) {
		const struct sample *s = &exp->samples[i];

		if (strcmp(s->name, name))
			continue;
		if (l1 && (!label_of(s, l1) || strcmp(label_of(s, l1), v1)))
			continue;
		if (l2 && (!label_of(s, l2) || strcmp(label_of(s, l2), v2)))
			continue;
		if (found)
			fail_msg("%s{%s=%s} appears twice", name, l1 ? l1 : "", v1 ? v1 : "");
		found = s;
	}
	if (!found)
		fail_msg("no sample %s{%s=\"%s\",%s=\"%s\"}", name, l1 ? l1 : "", v1 ? v1 : "", l2 ? l2 : "",
			 v2 ? v2 : "");
	return found->value;
}

static int count_samples(const struct exposition *exp, const char *name)
{
	int n = 0;

	for (int i = 0; i < exp->n_samples; i++)
		n += !strcmp(exp->samples[i].name, name);
	return n;
}

static const char *type_of(struct exposition *exp, const char *name)
{
	struct family *family = find_family(exp, name);

	return family ? family->type : "(none)";
}

/* ---- fixtures -------------------------------------------------------------------------- */

static void sample_snapshot(struct metrics_snapshot *snap)
{
	memset(snap, 0, sizeof(*snap));
	snap->signal_present[EV_SIGNAL_MEMORY_AVAILABLE] = true;
	snap->signal_available[EV_SIGNAL_MEMORY_AVAILABLE] = 512ll << 20;
	snap->signal_capacity[EV_SIGNAL_MEMORY_AVAILABLE] = 8ll << 30;
	snap->signal_present[EV_SIGNAL_PID_AVAILABLE] = true;
	snap->signal_available[EV_SIGNAL_PID_AVAILABLE] = 4000000;
	snap->signal_capacity[EV_SIGNAL_PID_AVAILABLE] = 4194304;
	/* The hard one is 12.5 s away at a sure rate; the soft one has no estimate. */
	snap->thresholds[0] = (struct metrics_threshold){ EV_SIGNAL_MEMORY_AVAILABLE, true, 100ll << 20, false,
							  true, 12.5 };
	snap->thresholds[1] = (struct metrics_threshold){ EV_SIGNAL_MEMORY_AVAILABLE, false, 1ll << 30, true,
							  false, 0 };
	snap->n_thresholds = 2;
	snap->conditions[EV_CONDITION_MEMORY_PRESSURE] = true;
	snap->evaluations = 42;
	snap->last_evaluation_unix_ns = 1700000000123000000ll;
	snap->dry_run = true;
	snap->kernel_oom_kills_known = true;
	snap->kernel_oom_kills = 3;
	snap->bpf_enabled = true;
	snap->bpf_programs_attached = 9;
}

static struct metrics *open_state_only(void)
{
	struct metrics *metrics;

	assert_int_equal(metrics_open(&metrics, &(struct metrics_options){ .address = "off", .version = "1.2.3" }), 0);
	assert_non_null(metrics);
	assert_int_equal(metrics_port(metrics), 0);
	return metrics;
}

static void render_parse(struct metrics *metrics, struct exposition *exp)
{
	char *text;
	size_t len;

	assert_int_equal(metrics_render(metrics, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	parse_exposition(text, exp);
	free(text);
}

/* ---- tests ----------------------------------------------------------------------------- */

static void test_exposition_series_and_types(void **state)
{
	static struct exposition exp;
	struct metrics_snapshot snap;
	struct metrics *metrics = open_state_only();

	sample_snapshot(&snap);
	metrics_update(metrics, &snap);
	metrics_set_shutdown_times(metrics, 1700000100, 1700000130);
	render_parse(metrics, &exp);

	assert_string_equal(type_of(&exp, "evictd_signal_available_bytes"), "gauge");
	assert_string_equal(type_of(&exp, "evictd_signal_capacity_bytes"), "gauge");
	assert_string_equal(type_of(&exp, "evictd_signal_available_tasks"), "gauge");
	assert_string_equal(type_of(&exp, "evictd_signal_capacity_tasks"), "gauge");
	assert_string_equal(type_of(&exp, "evictd_threshold_bytes"), "gauge");
	assert_string_equal(type_of(&exp, "evictd_node_condition"), "gauge");
	assert_string_equal(type_of(&exp, "evictd_evictions_total"), "counter");
	assert_string_equal(type_of(&exp, "evictd_eviction_latency_seconds"), "histogram");
	assert_string_equal(type_of(&exp, "evictd_kernel_oom_kills_total"), "counter");
	assert_string_equal(type_of(&exp, "evictd_evaluations_total"), "counter");
	assert_string_equal(type_of(&exp, "evictd_build_info"), "gauge");

	assert_true(value_of(&exp, "evictd_signal_available_bytes", "signal", "memory.available", NULL, NULL) == 512.0 * (1 << 20));
	assert_true(value_of(&exp, "evictd_signal_capacity_bytes", "signal", "memory.available", NULL, NULL) == 8.0 * (1 << 30));
	assert_true(value_of(&exp, "evictd_signal_available_tasks", "signal", "pid.available", NULL, NULL) == 4000000);
	/* A signal that could not be read has no series rather than a stale or zero one. */
	assert_int_equal(count_samples(&exp, "evictd_signal_available_bytes"), 1);
	assert_int_equal(count_samples(&exp, "evictd_signal_capacity_bytes"), 1);
	assert_int_equal(count_samples(&exp, "evictd_signal_available_tasks"), 1);
	/* No inode signal read: no inode family (and no family without samples, below). */
	assert_string_equal(type_of(&exp, "evictd_signal_available_inodes"), "(none)");

	assert_true(value_of(&exp, "evictd_threshold_bytes", "signal", "memory.available", "kind", "hard") == 100.0 * (1 << 20));
	assert_true(value_of(&exp, "evictd_threshold_bytes", "signal", "memory.available", "kind", "soft") == 1.0 * (1 << 30));
	assert_true(value_of(&exp, "evictd_threshold_met", "signal", "memory.available", "kind", "soft") == 1);
	assert_true(value_of(&exp, "evictd_threshold_met", "signal", "memory.available", "kind", "hard") == 0);
	/* Time to exhaustion: the sure estimate only (doc/DESIGN.md "Seeing ahead"). */
	assert_string_equal(type_of(&exp, "evictd_time_to_threshold_seconds"), "gauge");
	assert_true(value_of(&exp, "evictd_time_to_threshold_seconds", "signal", "memory.available", "kind", "hard") == 12.5);
	assert_int_equal(count_samples(&exp, "evictd_time_to_threshold_seconds"), 1);

	assert_true(value_of(&exp, "evictd_node_condition", "condition", "MemoryPressure", NULL, NULL) == 1);
	assert_true(value_of(&exp, "evictd_node_condition", "condition", "DiskPressure", NULL, NULL) == 0);
	assert_true(value_of(&exp, "evictd_node_condition", "condition", "PIDPressure", NULL, NULL) == 0);

	/* Every signal x result exists from the start, so rate() works from the first kill. */
	assert_int_equal(count_samples(&exp, "evictd_evictions_total"), EV_SIGNAL_COUNT * METRICS_RESULT_COUNT);
	assert_true(value_of(&exp, "evictd_evictions_total", "signal", "nodefs.available", "result", "failed") == 0);

	assert_true(value_of(&exp, "evictd_kernel_oom_kills_total", NULL, NULL, NULL, NULL) == 3);
	assert_true(value_of(&exp, "evictd_bpf_enabled", NULL, NULL, NULL, NULL) == 1);
	assert_true(value_of(&exp, "evictd_bpf_programs_attached", NULL, NULL, NULL, NULL) == 9);
	assert_true(value_of(&exp, "evictd_dry_run", NULL, NULL, NULL, NULL) == 1);
	assert_true(value_of(&exp, "evictd_evaluations_total", NULL, NULL, NULL, NULL) == 42);
	assert_true(fabs(value_of(&exp, "evictd_last_evaluation_timestamp_seconds", NULL, NULL, NULL, NULL) -
			 1700000000.123) < 1e-6);
	assert_true(value_of(&exp, "evictd_build_info", "version", "1.2.3", "commit", EVICTD_COMMIT) == 1);
	assert_true(value_of(&exp, "evictd_start_time_seconds", NULL, NULL, NULL, NULL) > 1600000000);

	/* Graceful shutdown: evictd's names only (never the kubelet's own series). */
	assert_true(value_of(&exp, "evictd_graceful_shutdown_start_time_seconds", NULL, NULL, NULL, NULL) == 1700000100);
	assert_true(value_of(&exp, "evictd_graceful_shutdown_end_time_seconds", NULL, NULL, NULL, NULL) == 1700000130);
	assert_string_equal(type_of(&exp, "evictd_graceful_shutdown_start_time_seconds"), "gauge");
	for (int i = 0; i < exp.n_families; i++)
		assert_true(!strncmp(exp.families[i].name, "evictd_", 7));

	/* Every family declared has at least one sample, except none. */
	for (int i = 0; i < exp.n_families; i++) {
		bool used = false;

		for (int s = 0; s < exp.n_samples && !used; s++)
			used = sample_family(&exp, exp.samples[s].name) == &exp.families[i];
		if (!used)
			fail_msg("family %s declared without samples", exp.families[i].name);
	}
	metrics_close(metrics);
}

/* Issue 22: no family mixes units. Every signal's series is in the family of its unit only
 * (node_exporter's split of node_filesystem_avail_bytes from node_filesystem_files_free). */
static void test_signal_families_by_unit(void **state)
{
	static struct exposition exp;
	struct metrics_snapshot snap;
	struct metrics *metrics = open_state_only();
	static const char *const families[] = {
		"evictd_signal_available_bytes", "evictd_signal_available_inodes", "evictd_signal_available_tasks",
		"evictd_signal_capacity_bytes", "evictd_signal_capacity_inodes", "evictd_signal_capacity_tasks",
		"evictd_threshold_bytes", "evictd_threshold_inodes", "evictd_threshold_tasks",
	};
	int seen = 0;

	sample_snapshot(&snap);
	snap.signal_present[EV_SIGNAL_NODEFS_AVAILABLE] = true;
	snap.signal_available[EV_SIGNAL_NODEFS_AVAILABLE] = 10ll << 30;
	snap.signal_capacity[EV_SIGNAL_NODEFS_AVAILABLE] = 100ll << 30;
	snap.signal_present[EV_SIGNAL_NODEFS_INODES_FREE] = true;
	snap.signal_available[EV_SIGNAL_NODEFS_INODES_FREE] = 5000;
	snap.signal_capacity[EV_SIGNAL_NODEFS_INODES_FREE] = 65536;
	snap.thresholds[2] = (struct metrics_threshold){ EV_SIGNAL_NODEFS_INODES_FREE, true, 3277, false, false, 0 };
	snap.thresholds[3] = (struct metrics_threshold){ EV_SIGNAL_PID_AVAILABLE, true, 41943, false, false, 0 };
	snap.n_thresholds = 4;
	metrics_update(metrics, &snap);
	render_parse(metrics, &exp);

	assert_true(value_of(&exp, "evictd_signal_available_inodes", "signal", "nodefs.inodesFree", NULL, NULL) == 5000);
	assert_true(value_of(&exp, "evictd_signal_capacity_inodes", "signal", "nodefs.inodesFree", NULL, NULL) == 65536);
	assert_true(value_of(&exp, "evictd_signal_available_bytes", "signal", "nodefs.available", NULL, NULL) == 10.0 * (1ll << 30));
	assert_true(value_of(&exp, "evictd_threshold_inodes", "signal", "nodefs.inodesFree", "kind", "hard") == 3277);
	assert_true(value_of(&exp, "evictd_threshold_tasks", "signal", "pid.available", "kind", "hard") == 41943);
	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
		const char *unit = strrchr(families[f], '_') + 1;

		assert_string_equal(type_of(&exp, families[f]), "gauge");
		for (int i = 0; i < exp.n_samples; i++) {
			enum ev_signal signal;

			if (strcmp(exp.samples[i].name, families[f]))
				continue;
			assert_string_equal(exp.samples[i].labels[0].name, "signal");
			assert_int_equal(signal_lookup(exp.samples[i].labels[0].value, &signal), 0);
			if (strcmp(signal_unit_name(signal), unit))
				fail_msg("%s holds %s, measured in %s", families[f],
					 exp.samples[i].labels[0].value, signal_unit_name(signal));
			seen++;
		}
	}
	assert_int_equal(seen, 4 * 2 + 4);	/* 4 signals x available/capacity, 4 thresholds */
	metrics_close(metrics);
}

/* Issue 22: the loop maximum is over the last minute, so an alert on it resolves. The
 * window on a made-up clock: a 2 s stall at t=5 s is seen until it is a minute old. */
static void test_loop_window_max(void **state)
{
	struct metrics_window_max window = { 0 };
	const int64_t s = 1000000000;

	assert_true(metrics_window_max_get(&window, 0) == 0);
	metrics_window_max_observe(&window, 5 * s, 2 * s);
	metrics_window_max_observe(&window, 30 * s, s / 10);
	metrics_window_max_observe(&window, 31 * s, s / 20);
	assert_true(metrics_window_max_get(&window, 40 * s) == 2 * s);
	assert_true(metrics_window_max_get(&window, 59 * s) == 2 * s);
	/* At 60 s the bucket of t=5 s (0-10 s) is out: the 0.1 s of t=30 s is the maximum. */
	assert_true(metrics_window_max_get(&window, 60 * s) == s / 10);
	assert_true(metrics_window_max_get(&window, 89 * s) == s / 10);
	assert_true(metrics_window_max_get(&window, 90 * s) == 0);
	/* A slot reused by a later bucket starts again from the new value. */
	metrics_window_max_observe(&window, 65 * s, s / 100);
	assert_true(metrics_window_max_get(&window, 66 * s) == s / 10);
	assert_true(metrics_window_max_get(&window, 95 * s) == s / 100);
}

/* Through the renderer: a stall shows in the windowed and the since-start families. */
static void test_loop_max_exported(void **state)
{
	static struct exposition exp;
	struct metrics *metrics = open_state_only();

	metrics_set_loop(metrics, 1500000000, 1500000000, 2);
	metrics_set_loop(metrics, 1500000000, 1000000, 2);
	render_parse(metrics, &exp);
	assert_string_equal(type_of(&exp, "evictd_loop_iteration_max_seconds"), "gauge");
	assert_true(fabs(value_of(&exp, "evictd_loop_iteration_max_seconds", NULL, NULL, NULL, NULL) - 1.5) < 1e-9);
	assert_true(fabs(value_of(&exp, "evictd_loop_iteration_max_since_start_seconds", NULL, NULL, NULL, NULL) - 1.5) < 1e-9);
	metrics_close(metrics);
}

/* Issue 22: the BPF programs' counters, by event and by wake-up type; none without BPF. */
static void test_bpf_counters(void **state)
{
	static struct exposition exp;
	struct metrics_snapshot snap;
	struct metrics *metrics = open_state_only();

	sample_snapshot(&snap);
	metrics_update(metrics, &snap);
	render_parse(metrics, &exp);
	assert_null(find_family(&exp, "evictd_bpf_events_total"));
	assert_null(find_family(&exp, "evictd_bpf_wakeups_sent_total"));

	snap.bpf_counters_known = true;
	snap.bpf_events[0] = (struct metrics_bpf_count){ "fork", 1234 };
	snap.bpf_events[1] = (struct metrics_bpf_count){ "oom_kill", 2 };
	snap.n_bpf_events = 2;
	snap.bpf_wakeups_received[0] = (struct metrics_bpf_count){ "memory-step", 17 };
	snap.bpf_wakeups_received[1] = (struct metrics_bpf_count){ "fork-step", 3 };
	snap.n_bpf_wakeups_received = 2;
	snap.bpf_wakeups_sent = 20;
	snap.bpf_wakeups_dropped = 1;
	snap.bpf_wakeups_rate_limited = 7;
	metrics_update(metrics, &snap);
	render_parse(metrics, &exp);
	assert_string_equal(type_of(&exp, "evictd_bpf_events_total"), "counter");
	assert_true(value_of(&exp, "evictd_bpf_events_total", "event", "fork", NULL, NULL) == 1234);
	assert_true(value_of(&exp, "evictd_bpf_events_total", "event", "oom_kill", NULL, NULL) == 2);
	assert_true(value_of(&exp, "evictd_bpf_wakeups_received_total", "type", "memory-step", NULL, NULL) == 17);
	assert_true(value_of(&exp, "evictd_bpf_wakeups_received_total", "type", "fork-step", NULL, NULL) == 3);
	assert_true(value_of(&exp, "evictd_bpf_wakeups_sent_total", NULL, NULL, NULL, NULL) == 20);
	assert_true(value_of(&exp, "evictd_bpf_wakeups_dropped_total", NULL, NULL, NULL, NULL) == 1);
	assert_true(value_of(&exp, "evictd_bpf_wakeups_rate_limited_total", NULL, NULL, NULL, NULL) == 7);
	metrics_close(metrics);
}

static void test_unknown_oom_count_is_absent(void **state)
{
	static struct exposition exp;
	struct metrics_snapshot snap;
	struct metrics *metrics = open_state_only();

	sample_snapshot(&snap);
	snap.kernel_oom_kills_known = false;
	metrics_update(metrics, &snap);
	render_parse(metrics, &exp);
	assert_int_equal(count_samples(&exp, "evictd_kernel_oom_kills_total"), 0);
	assert_null(find_family(&exp, "evictd_kernel_oom_kills_total"));
	metrics_close(metrics);
}

static void test_evictions_and_latency_histogram(void **state)
{
	static const double bounds[] = METRICS_LATENCY_BUCKETS;
	static struct exposition exp;
	struct metrics *metrics = open_state_only();
	double previous = -1, expected_sum = 0;
	int n_buckets = 0;
	/* 0.3 ms, 0.5 ms (on the bound: le is inclusive), 7 ms, 3 s, 60 s (+Inf only). */
	const int64_t latencies[] = { 300000, 500000, 7000000, 3000000000ll, 60000000000ll };

	for (size_t i = 0; i < sizeof(latencies) / sizeof(latencies[0]); i++) {
		metrics_record_eviction(metrics, EV_SIGNAL_MEMORY_AVAILABLE, METRICS_RESULT_KILLED, latencies[i]);
		expected_sum += (double)latencies[i] / 1e9;
	}
	metrics_record_eviction(metrics, EV_SIGNAL_OOM_GUARD, METRICS_RESULT_DRY_RUN, -1);
	metrics_record_eviction(metrics, EV_SIGNAL_NODEFS_AVAILABLE, METRICS_RESULT_FAILED, -1);
	metrics_record_eviction(metrics, EV_SIGNAL_COUNT, METRICS_RESULT_FAILED, -1);	/* ignored */
	render_parse(metrics, &exp);

	assert_true(value_of(&exp, "evictd_evictions_total", "signal", "memory.available", "result", "killed") == 5);
	assert_true(value_of(&exp, "evictd_evictions_total", "signal", "oom.guard", "result", "dry_run") == 1);
	assert_true(value_of(&exp, "evictd_evictions_total", "signal", "nodefs.available", "result", "failed") == 1);

	/* Buckets: cumulative, non-decreasing, le ascending, +Inf last and equal to _count. */
	for (int i = 0; i < exp.n_samples; i++) {
		const struct sample *s = &exp.samples[i];
		const char *le;
		double bound;

		if (strcmp(s->name, "evictd_eviction_latency_seconds_bucket"))
			continue;
		le = label_of(s, "le");
		assert_non_null(le);
		bound = strcmp(le, "+Inf") ? strtod(le, NULL) : INFINITY;
		if (n_buckets < METRICS_N_LATENCY_BUCKETS)
			assert_true(fabs(bound - bounds[n_buckets]) < 1e-12);
		else
			assert_true(isinf(bound));
		assert_true(s->value >= previous);
		previous = s->value;
		n_buckets++;
	}
	assert_int_equal(n_buckets, METRICS_N_LATENCY_BUCKETS + 1);
	assert_true(value_of(&exp, "evictd_eviction_latency_seconds_bucket", "le", "0.0005", NULL, NULL) == 2);
	assert_true(value_of(&exp, "evictd_eviction_latency_seconds_bucket", "le", "0.0025", NULL, NULL) == 2);
	assert_true(value_of(&exp, "evictd_eviction_latency_seconds_bucket", "le", "0.01", NULL, NULL) == 3);
	assert_true(value_of(&exp, "evictd_eviction_latency_seconds_bucket", "le", "5", NULL, NULL) == 4);
	assert_true(value_of(&exp, "evictd_eviction_latency_seconds_bucket", "le", "10", NULL, NULL) == 4);
	assert_true(value_of(&exp, "evictd_eviction_latency_seconds_bucket", "le", "+Inf", NULL, NULL) == 5);
	assert_true(value_of(&exp, "evictd_eviction_latency_seconds_count", NULL, NULL, NULL, NULL) == 5);
	assert_true(fabs(value_of(&exp, "evictd_eviction_latency_seconds_sum", NULL, NULL, NULL, NULL) - expected_sum) < 1e-9);
	metrics_close(metrics);
}

static void test_label_escaping(void **state)
{
	static struct exposition exp;
	struct metrics *metrics;
	char buf[64];
	const char *tricky = "1.0 \"beta\"\\x\nrc";

	assert_int_equal(metrics_escape_label_value("a\\b\"c\nd", buf, sizeof(buf)), 10);
	assert_string_equal(buf, "a\\\\b\\\"c\\nd");
	/* Truncation: still terminated, and the needed length is returned. */
	assert_int_equal(metrics_escape_label_value("\"\"\"\"", buf, 4), 8);
	assert_int_equal(strlen(buf), 3);

	/* Through the renderer and back through the parser: the value survives intact. */
	assert_int_equal(metrics_open(&metrics, &(struct metrics_options){ .address = "", .version = tricky }), 0);
	render_parse(metrics, &exp);
	assert_true(value_of(&exp, "evictd_build_info", "version", tricky, NULL, NULL) == 1);
	metrics_close(metrics);
}

static void test_snapshot_fill(void **state)
{
	struct eviction_engine engine;
	struct observations obs = { 0 };
	struct evaluation eval;
	struct metrics_snapshot snap = { .evaluations = 7 };
	struct threshold thresholds[2] = {
		{ .signal = EV_SIGNAL_NODEFS_AVAILABLE, .hard = true,
		  .value = { .is_percentage = true, .percentage = 0.25f, .text = "25%" } },
		{ .signal = EV_SIGNAL_MEMORY_AVAILABLE, .hard = true, .value = { .quantity = 100 << 20, .text = "100Mi" } },
	};

	assert_int_equal(engine_init(&engine, thresholds, 2, 0), 0);
	obs.signal[EV_SIGNAL_MEMORY_AVAILABLE] = (struct observation){ true, 50 << 20, 1ll << 30, 1 };
	obs.signal[EV_SIGNAL_NODEFS_AVAILABLE] = (struct observation){ true, 500ll << 30, 1000ll << 30, 1 };
	engine_evaluate(&engine, &obs, 1000, &eval);
	metrics_snapshot_fill(&snap, &engine, &obs, &eval);

	assert_int_equal(snap.evaluations, 7);	/* untouched */
	assert_int_equal(snap.n_thresholds, 2);
	/* The engine orders memory first. */
	assert_int_equal(snap.thresholds[0].signal, EV_SIGNAL_MEMORY_AVAILABLE);
	assert_true(snap.thresholds[0].met);
	assert_int_equal(snap.thresholds[1].signal, EV_SIGNAL_NODEFS_AVAILABLE);
	assert_int_equal(snap.thresholds[1].value, 250ll << 30);
	assert_false(snap.thresholds[1].met);
	assert_true(snap.signal_present[EV_SIGNAL_MEMORY_AVAILABLE]);
	assert_false(snap.signal_present[EV_SIGNAL_PID_AVAILABLE]);
	assert_true(snap.conditions[EV_CONDITION_MEMORY_PRESSURE]);
	assert_false(snap.conditions[EV_CONDITION_DISK_PRESSURE]);
}

static void test_parse_address(void **state)
{
	struct sockaddr_storage addr;
	socklen_t len;

	assert_int_equal(metrics_parse_address("127.0.0.1:9808", &addr, &len), 0);
	assert_int_equal(addr.ss_family, AF_INET);
	assert_int_equal(ntohs(((struct sockaddr_in *)&addr)->sin_port), 9808);
	assert_int_equal(len, sizeof(struct sockaddr_in));
	assert_int_equal(metrics_parse_address("[::1]:9808", &addr, &len), 0);
	assert_int_equal(addr.ss_family, AF_INET6);
	assert_int_equal(ntohs(((struct sockaddr_in6 *)&addr)->sin6_port), 9808);
	assert_int_equal(metrics_parse_address("0.0.0.0:0", &addr, &len), 0);
	assert_int_equal(metrics_parse_address("off", &addr, &len), 1);
	assert_int_equal(metrics_parse_address("", &addr, &len), 1);
	assert_int_equal(metrics_parse_address(NULL, &addr, &len), 1);

	assert_int_equal(metrics_parse_address("9808", &addr, &len), -EINVAL);
	assert_int_equal(metrics_parse_address("127.0.0.1", &addr, &len), -EINVAL);
	assert_int_equal(metrics_parse_address("127.0.0.1:", &addr, &len), -EINVAL);
	assert_int_equal(metrics_parse_address("127.0.0.1:65536", &addr, &len), -EINVAL);
	assert_int_equal(metrics_parse_address("127.0.0.1:-1", &addr, &len), -EINVAL);
	assert_int_equal(metrics_parse_address("::1:9808", &addr, &len), -EINVAL);
	assert_int_equal(metrics_parse_address("[::1]9808", &addr, &len), -EINVAL);
	assert_int_equal(metrics_parse_address("localhost:9808", &addr, &len), -EINVAL);
	assert_int_equal(metrics_parse_address("[127.0.0.1]:9808", &addr, &len), -EINVAL);
}

static void test_read_kernel_oom_kills(void **state)
{
	char root[PATH_MAX];
	uint64_t count = 0;

	fixture_tmpdir(root, "metrics");
	fixture_write(root, "proc/vmstat", "nr_free_pages 1000\noom_kill 17\npgfault 5\n");
	assert_int_equal(metrics_read_kernel_oom_kills(root, &count), 0);
	assert_int_equal(count, 17);
	fixture_write(root, "proc/vmstat", "nr_free_pages 1000\n");
	assert_int_equal(metrics_read_kernel_oom_kills(root, &count), -ENOENT);
	fixture_rm_rf(root);
	assert_int_equal(metrics_read_kernel_oom_kills(root, &count), -ENOENT);
}

/* ---- over HTTP ------------------------------------------------------------------------- */

/* One HTTP/1.0 request to 127.0.0.1:port; returns the status, fills body (malloc'd) and
 * the Content-Type header. */
static int http_request(int port, const char *method, const char *path, char **body, char *content_type,
			size_t ct_len)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap), request[256], *header_end, *ct;
	int fd, status = 0;

	assert_non_null(buf);
	inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	snprintf(request, sizeof(request), "%s %s HTTP/1.0\r\nHost: localhost\r\n\r\n", method, path);
	assert_true(send(fd, request, strlen(request), 0) > 0);
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		assert_int_equal(poll(&pfd, 1, 5000), 1);
		if (len + 1 >= cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		n = recv(fd, buf + len, cap - 1 - len, 0);
		assert_true(n >= 0);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	assert_int_equal(sscanf(buf, "HTTP/1.%*d %d", &status), 1);
	header_end = strstr(buf, "\r\n\r\n");
	assert_non_null(header_end);
	content_type[0] = '\0';
	ct = strcasestr(buf, "\r\nContent-Type: ");
	if (ct && ct < header_end)
		snprintf(content_type, ct_len, "%.*s", (int)strcspn(ct + 16, "\r"), ct + 16);
	*body = strdup(header_end + 4);
	free(buf);
	return status;
}

static void test_http_endpoints(void **state)
{
	static struct exposition exp;
	struct metrics_snapshot snap;
	struct metrics *metrics;
	char content_type[128], *body;
	int port;

	assert_int_equal(metrics_open(&metrics, &(struct metrics_options){
		.address = "127.0.0.1:0", .version = "t", .stale_after_ns = 200000000 }), 0);
	port = metrics_port(metrics);
	assert_true(port > 0);
	sample_snapshot(&snap);
	metrics_update(metrics, &snap);
	metrics_record_eviction(metrics, EV_SIGNAL_MEMORY_AVAILABLE, METRICS_RESULT_KILLED, 1000000);

	assert_int_equal(http_request(port, "GET", "/metrics", &body, content_type, sizeof(content_type)), 200);
	assert_string_equal(content_type, METRICS_CONTENT_TYPE);
	parse_exposition(body, &exp);
	assert_true(value_of(&exp, "evictd_evictions_total", "signal", "memory.available", "result", "killed") == 1);
	assert_true(value_of(&exp, "evictd_signal_available_bytes", "signal", "memory.available", NULL, NULL) == 512.0 * (1 << 20));
	free(body);

	assert_int_equal(http_request(port, "GET", "/healthz", &body, content_type, sizeof(content_type)), 200);
	assert_string_equal(body, "ok\n");
	free(body);
	/* No update for longer than stale_after_ns: the loop is stuck, /healthz says so. */
	usleep(300000);
	assert_int_equal(http_request(port, "GET", "/healthz", &body, content_type, sizeof(content_type)), 503);
	assert_non_null(strstr(body, "stale"));
	free(body);
	metrics_update(metrics, &snap);
	assert_int_equal(http_request(port, "GET", "/healthz", &body, content_type, sizeof(content_type)), 200);
	free(body);

	assert_int_equal(http_request(port, "GET", "/nope", &body, content_type, sizeof(content_type)), 404);
	free(body);
	assert_int_equal(http_request(port, "POST", "/metrics", &body, content_type, sizeof(content_type)), 405);
	free(body);
	metrics_close(metrics);
}

static int connect_local(int port)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd;

	inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	return fd;
}

/* A slowloris: many connections from one client, each with a header that never ends. The
 * probe from the same address still gets its answer (metrics.h: the oldest idle connection
 * of a client over its limit is dropped, not the newcomer). */
static void test_slow_clients_do_not_starve_healthz(void **state)
{
	enum { N_SLOW = 3 * METRICS_MAX_PER_CLIENT };
	static const char partial[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: a";
	struct metrics *metrics;
	char content_type[128], *body;
	int fds[N_SLOW], port, dropped = 0;

	assert_int_equal(metrics_open(&metrics, &(struct metrics_options){ .address = "127.0.0.1:0" }), 0);
	port = metrics_port(metrics);
	for (int i = 0; i < N_SLOW; i++) {
		fds[i] = connect_local(port);
		assert_true(send(fds[i], partial, sizeof(partial) - 1, MSG_NOSIGNAL) > 0);
	}
	usleep(200000);
	for (int round = 0; round < 3; round++) {
		assert_int_equal(http_request(port, "GET", "/healthz", &body, content_type, sizeof(content_type)), 200);
		assert_string_equal(body, "ok\n");
		free(body);
	}
	/* The slow ones beyond the limit were dropped, oldest first: they read the end. */
	for (int i = 0; i < N_SLOW; i++) {
		struct pollfd pfd = { .fd = fds[i], .events = POLLIN };
		char byte;

		if (poll(&pfd, 1, 100) == 1 && recv(fds[i], &byte, 1, MSG_DONTWAIT) <= 0)
			dropped++;
		close(fds[i]);
	}
	assert_true(dropped >= N_SLOW - METRICS_MAX_PER_CLIENT);
	metrics_close(metrics);
}

/* Every malformed request is a warning from libmicrohttpd: thousands of them make a handful
 * of lines, the last saying how many were suppressed. */
static void test_malformed_requests_log_a_few_lines(void **state)
{
	static const char bad[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n";
	char path[] = "/tmp/evictd-test-metrics-log-XXXXXX", line[1024], *body, content_type[128];
	struct metrics *metrics;
	int log_fd, saved_stderr, port, lines = 0, counted = 0;
	int64_t start = clock_monotonic_ns(), seconds;
	FILE *log;

	log_fd = mkstemp(path);
	assert_true(log_fd >= 0);
	saved_stderr = dup(STDERR_FILENO);
	dup2(log_fd, STDERR_FILENO);
	assert_int_equal(metrics_open(&metrics, &(struct metrics_options){ .address = "127.0.0.1:0" }), 0);
	port = metrics_port(metrics);
	for (int i = 0; i < 1000; i++) {
		int fd = connect_local(port);
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		char reply[64];

		assert_true(send(fd, bad, sizeof(bad) - 1, MSG_NOSIGNAL) > 0);
		assert_int_equal(poll(&pfd, 1, 5000), 1);
		assert_true(recv(fd, reply, sizeof(reply), 0) > 12);
		assert_memory_equal(reply + 9, "400", 3);
		close(fd);
	}
	seconds = (clock_monotonic_ns() - start) / 1000000000;
	usleep(1100000);
	/* The next request writes the count of those suppressed since the last line. */
	assert_int_equal(http_request(port, "GET", "/healthz", &body, content_type, sizeof(content_type)), 200);
	free(body);
	metrics_close(metrics);
	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);

	log = fdopen(log_fd, "r");
	assert_non_null(log);
	rewind(log);
	while (fgets(line, sizeof(line), log)) {
		char *mark = strstr(line, " similar warnings suppressed");

		if (!strstr(line, "warning: metrics: "))
			continue;
		lines++;
		/* "... (N similar warnings suppressed)" or "metrics: N similar warnings suppressed" */
		if (mark) {
			while (mark > line && isdigit((unsigned char)mark[-1]))
				mark--;
			counted += atoi(mark);
		}
	}
	fclose(log);
	unlink(path);
	assert_true(lines >= 1);
	assert_true(lines <= seconds + 3);
	/* Each malformed request warned once (libmicrohttpd may add one about a closed peer). */
	assert_true(lines + counted >= 1000);
}

static void test_address_in_use(void **state)
{
	struct metrics *first, *second = (struct metrics *)1;
	char address[64];

	assert_int_equal(metrics_open(&first, &(struct metrics_options){ .address = "127.0.0.1:0" }), 0);
	snprintf(address, sizeof(address), "127.0.0.1:%d", metrics_port(first));
	assert_int_equal(metrics_open(&second, &(struct metrics_options){ .address = address }), -EADDRINUSE);
	assert_null(second);
	assert_int_equal(metrics_open(&second, &(struct metrics_options){ .address = "nonsense" }), -EINVAL);
	metrics_close(first);
}

/* A listening TCP socket on 127.0.0.1, its port in *port. */
static int listening_socket(int *port)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	socklen_t len = sizeof(addr);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
	assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&addr, &len), 0);
	*port = ntohs(addr.sin_port);
	return fd;
}

/* Socket activation (evictd.socket): the socket systemd passes as fd 3 with LISTEN_FDS=1 and
 * LISTEN_PID=<our pid> is served, and --metrics-address is not bound: here it names a port
 * already in use, which the daemon binding it would fail on (-EADDRINUSE). With another
 * process's LISTEN_PID the variables are not ours (sd_listen_fds(3)) and the address is bound. */
static void test_socket_activation(void **state)
{
	struct metrics *metrics = NULL;
	char address[64], content_type[128], pid[32], *body;
	int passed_port, busy_port, passed, busy, saved;

	passed = listening_socket(&passed_port);
	busy = listening_socket(&busy_port);
	snprintf(address, sizeof(address), "127.0.0.1:%d", busy_port);
	/* fd 3 is SD_LISTEN_FDS_START; keep whatever the test runner has there. */
	saved = fcntl(3, F_GETFD) >= 0 ? fcntl(3, F_DUPFD_CLOEXEC, 10) : -1;
	if (passed != 3) {
		assert_int_equal(dup2(passed, 3), 3);
		close(passed);
	}
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("LISTEN_PID", pid, 1);
	setenv("LISTEN_FDS", "1", 1);

	assert_int_equal(metrics_open(&metrics, &(struct metrics_options){ .address = address }), 0);
	assert_int_equal(metrics_port(metrics), passed_port);
	assert_int_equal(http_request(passed_port, "GET", "/healthz", &body, content_type,
				      sizeof(content_type)), 200);
	assert_string_equal(body, "ok\n");
	free(body);
	metrics_close(metrics);	/* closes fd 3, as systemd's copy stays open */
	assert_true(fcntl(3, F_GETFD) < 0);

	/* LISTEN_PID of another process: nothing passed to us, the address is bound. */
	setenv("LISTEN_PID", "1", 1);
	assert_int_equal(metrics_open(&metrics, &(struct metrics_options){ .address = address }),
			 -EADDRINUSE);
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	close(busy);
	if (saved >= 0) {
		dup2(saved, 3);
		close(saved);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exposition_series_and_types),
		cmocka_unit_test(test_signal_families_by_unit),
		cmocka_unit_test(test_loop_window_max),
		cmocka_unit_test(test_loop_max_exported),
		cmocka_unit_test(test_bpf_counters),
		cmocka_unit_test(test_unknown_oom_count_is_absent),
		cmocka_unit_test(test_evictions_and_latency_histogram),
		cmocka_unit_test(test_label_escaping),
		cmocka_unit_test(test_snapshot_fill),
		cmocka_unit_test(test_parse_address),
		cmocka_unit_test(test_read_kernel_oom_kills),
		cmocka_unit_test(test_http_endpoints),
		cmocka_unit_test(test_address_in_use),
		cmocka_unit_test(test_socket_activation),
		cmocka_unit_test(test_slow_clients_do_not_starve_healthz),
		cmocka_unit_test(test_malformed_requests_log_a_few_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
