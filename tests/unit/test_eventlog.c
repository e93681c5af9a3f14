// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The decision log: one JSON line per decision with the documented fields, identical
 * decisions coalesced into a summary line, the size cap and rotation, write failures (ENOSPC)
 * not fatal and logged once, "would ..." in a dry run, the ring of the last 100, reopen for
 * logrotate, and the ranking reasons. */
#include "testutil.h"

#include <json-c/json.h>
#include <regex.h>

#include "ops/eventlog.h"

static int64_t fixed_clock_ns = 1234567890123456789ll;	/* 2009-02-13T23:31:30.123Z */
static int64_t fixed_clock(void)
{
	return fixed_clock_ns;
}

/* The injected monotonic clock: tests advance it. */
static int64_t mono_ns;
static int64_t mono_clock(void)
{
	return mono_ns;
}

static struct pod make_pod(const char *ns, const char *name, enum pod_qos qos, int32_t priority,
			   int64_t usage, int64_t request)
{
	struct pod pod = { .qos = qos, .priority = priority, .memory_working_set = usage,
			   .memory_request = request, .processes = 3, .termination_grace_period_s = -1 };

	snprintf(pod.namespace_, sizeof(pod.namespace_), "%s", ns);
	snprintf(pod.name, sizeof(pod.name), "%s", name);
	snprintf(pod.uid, sizeof(pod.uid), "uid-%s", name);
	snprintf(pod.cgroup_path, sizeof(pod.cgroup_path), "/sys/fs/cgroup/kubepods.slice/pod-%s", name);
	return pod;
}

/* Every line of the file, parsed; fails on a line that is not one JSON object. */
static size_t read_lines(const char *path, struct json_object **lines, size_t max)
{
	char buf[65536];
	size_t n = 0;
	FILE *file = fopen(path, "r");

	if (!file)
		return 0;
	while (fgets(buf, sizeof(buf), file)) {
		assert_true(strlen(buf) > 0 && buf[strlen(buf) - 1] == '\n');
		assert_true(n < max);
		lines[n] = json_tokener_parse(buf);
		if (!lines[n] || !json_object_is_type(lines[n], json_type_object))
			fail_msg("not a JSON object: %s", buf);
		n++;
	}
	fclose(file);
	return n;
}

static void put_lines(struct json_object **lines, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_object_put(lines[i]);
}

static struct json_object *get(struct json_object *object, const char *key)
{
	struct json_object *value = NULL;

	if (!json_object_object_get_ex(object, key, &value))
		fail_msg("missing field %s", key);
	return value;
}

struct fixture {
	char dir[PATH_MAX];
	char path[PATH_MAX + 32];
	struct pod pods[4];
	struct pod *ranked[4];
	struct rank_options options;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	fixture_tmpdir(f->dir, "eventlog");
	snprintf(f->path, sizeof(f->path), "%s/decisions.log", f->dir);
	f->pods[0] = make_pod("default", "hog", POD_QOS_BESTEFFORT, 0, 300 << 20, 0);
	f->pods[1] = make_pod("default", "web", POD_QOS_BURSTABLE, 1000, 200 << 20, 100 << 20);
	f->pods[2] = make_pod("kube-system", "agent", POD_QOS_BURSTABLE, 0, 50 << 20, 100 << 20);
	f->pods[2].is_daemonset = true;
	f->pods[3] = make_pod("kube-system", "etcd-node1", POD_QOS_BURSTABLE, 2000001000, 1 << 30, 100 << 20);
	f->pods[3].is_mirror = true;
	for (int i = 0; i < 4; i++)
		f->ranked[i] = &f->pods[i];
	f->options = (struct rank_options){ .daemonset_last = true };
	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, &f->options, f->ranked, 4);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	fixture_rm_rf(f->dir);
	free(f);
	return 0;
}

static struct eventlog_decision decision_for(struct fixture *f, enum eventlog_action action)
{
	return (struct eventlog_decision){
		.signal = EV_SIGNAL_MEMORY_AVAILABLE,
		.hard = true,
		.value = 50 << 20,
		.threshold = 100 << 20,
		.threshold_text = "100Mi",
		.candidates = f->ranked,
		.n_candidates = 4,
		.rank_options = &f->options,
		.victim = f->ranked[0],
		.action = action,
		.latency_ns = action == EVENTLOG_KILLED ? 1834000 : -1,
		.reason = "hard threshold met",
		.error = action == EVENTLOG_FAILED ? "Operation not permitted" : NULL,
		.dry_run = action == EVENTLOG_DRY_RUN,
	};
}

static void test_line_has_every_field(void **state)
{
	struct fixture *f = *state;
	struct eventlog *log;
	struct json_object *lines[4], *line, *candidates, *first, *victim;
	struct eventlog_decision decision = decision_for(f, EVENTLOG_KILLED);
	regex_t rfc3339;

	assert_int_equal(eventlog_open(&log, &(struct eventlog_options){ .path = f->path, .realtime_ns = fixed_clock }), 0);
	assert_int_equal(eventlog_record(log, &decision), 1);
	eventlog_close(log);

	assert_int_equal(read_lines(f->path, lines, 4), 1);
	line = lines[0];
	assert_int_equal(regcomp(&rfc3339, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$",
				 REG_EXTENDED | REG_NOSUB), 0);
	assert_int_equal(regexec(&rfc3339, json_object_get_string(get(line, "time")), 0, NULL, 0), 0);
	regfree(&rfc3339);
	assert_string_equal(json_object_get_string(get(line, "time")), "2009-02-13T23:31:30.123Z");
	assert_string_equal(json_object_get_string(get(line, "signal")), "memory.available");
	assert_string_equal(json_object_get_string(get(line, "kind")), "hard");
	assert_string_equal(json_object_get_string(get(line, "unit")), "bytes");
	assert_int_equal(json_object_get_int64(get(line, "value")), 50 << 20);
	assert_int_equal(json_object_get_int64(get(line, "threshold")), 100 << 20);
	assert_string_equal(json_object_get_string(get(line, "threshold_text")), "100Mi");
	assert_string_equal(json_object_get_string(get(line, "action")), "killed");
	assert_string_equal(json_object_get_string(get(line, "action_text")), "killed default/hog");
	assert_int_equal(json_object_get_int64(get(line, "latency_ns")), 1834000);
	assert_false(json_object_get_boolean(get(line, "oom_guard")));
	assert_false(json_object_get_boolean(get(line, "dry_run")));
	assert_string_equal(json_object_get_string(get(line, "reason")), "hard threshold met");

	victim = get(line, "victim");
	assert_string_equal(json_object_get_string(get(victim, "name")), "default/hog");
	assert_string_equal(json_object_get_string(get(victim, "uid")), "uid-hog");
	assert_string_equal(json_object_get_string(get(victim, "qos")), "BestEffort");
	assert_string_equal(json_object_get_string(get(victim, "cgroup")), "/sys/fs/cgroup/kubepods.slice/pod-hog");

	/* Candidates in ranking order: hog (exceeds, prio 0), web (exceeds, prio 1000), the
	 * DaemonSet pod, then the never-evict mirror pod. */
	assert_int_equal(json_object_get_int64(get(line, "candidates_total")), 4);
	candidates = get(line, "candidates");
	assert_int_equal(json_object_array_length(candidates), 4);
	first = json_object_array_get_idx(candidates, 0);
	assert_string_equal(json_object_get_string(get(first, "name")), "default/hog");
	assert_int_equal(json_object_get_int(get(first, "priority")), 0);
	assert_int_equal(json_object_get_int64(get(first, "usage")), 300 << 20);
	assert_int_equal(json_object_get_int64(get(first, "request")), 0);
	assert_string_equal(json_object_get_string(get(first, "reason")),
			    "usage 300Mi exceeds request 0; priority 0; usage - request 300Mi");
	assert_string_equal(json_object_get_string(get(json_object_array_get_idx(candidates, 1), "name")), "default/web");
	assert_string_equal(json_object_get_string(get(json_object_array_get_idx(candidates, 2), "name")),
			    "kube-system/agent");
	assert_non_null(strstr(json_object_get_string(get(json_object_array_get_idx(candidates, 2), "reason")),
			       "DaemonSet"));
	assert_true(json_object_get_boolean(get(json_object_array_get_idx(candidates, 3), "never_evict")));
	assert_null(json_object_object_get(line, "error"));
	put_lines(lines, 1);
}

static void test_failed_no_victim_and_guard(void **state)
{
	struct fixture *f = *state;
	struct eventlog *log;
	struct json_object *lines[4];
	struct eventlog_decision failed = decision_for(f, EVENTLOG_FAILED);
	struct eventlog_decision none = decision_for(f, EVENTLOG_NO_VICTIM);

	none.victim = NULL;
	none.candidates = NULL;
	none.n_candidates = 0;
	none.signal = EV_SIGNAL_OOM_GUARD;
	none.reason = "no pods or workloads to evict";
	assert_int_equal(eventlog_open(&log, &(struct eventlog_options){ .path = f->path }), 0);
	assert_int_equal(eventlog_record(log, &failed), 1);
	assert_int_equal(eventlog_record(log, &none), 1);
	eventlog_close(log);

	assert_int_equal(read_lines(f->path, lines, 4), 2);
	assert_string_equal(json_object_get_string(get(lines[0], "action")), "failed");
	assert_string_equal(json_object_get_string(get(lines[0], "error")), "Operation not permitted");
	assert_true(json_object_is_type(get(lines[0], "latency_ns"), json_type_null));
	assert_string_equal(json_object_get_string(get(lines[1], "action")), "no_victim");
	assert_true(json_object_is_type(get(lines[1], "victim"), json_type_null));
	assert_true(json_object_get_boolean(get(lines[1], "oom_guard")));
	assert_string_equal(json_object_get_string(get(lines[1], "signal")), "oom.guard");
	assert_int_equal(json_object_array_length(get(lines[1], "candidates")), 0);
	put_lines(lines, 2);
}

static void test_repeats_logged_once(void **state)
{
	struct fixture *f = *state;
	struct eventlog *log;
	struct json_object *lines[8];
	struct eventlog_decision dry = decision_for(f, EVENTLOG_DRY_RUN);
	struct eventlog_decision killed = decision_for(f, EVENTLOG_KILLED);

	mono_ns = 0;
	assert_int_equal(eventlog_open(&log, &(struct eventlog_options){ .path = f->path,
									  .monotonic_ns = mono_clock }), 0);
	assert_int_equal(eventlog_record(log, &dry), 1);
	mono_ns += 100000000;
	assert_int_equal(eventlog_record(log, &dry), 0);	/* the same situation, next tick */
	mono_ns += 100000000;
	assert_int_equal(eventlog_record(log, &dry), 0);
	dry.victim = f->ranked[1];				/* another victim: a new decision */
	assert_int_equal(eventlog_record(log, &dry), 1);	/* after "repeated 2 times in 0.2 s" */
	eventlog_pressure_cleared(log);				/* pressure gone and back */
	assert_int_equal(eventlog_record(log, &dry), 1);
	assert_int_equal(eventlog_record(log, &killed), 1);
	assert_int_equal(eventlog_record(log, &killed), 0);	/* the same kill again: counted */
	assert_int_equal(eventlog_count(log), 5);
	eventlog_close(log);					/* writes the pending summary */
	assert_int_equal(read_lines(f->path, lines, 8), 6);
	assert_string_equal(json_object_get_string(get(lines[1], "summary")), "repeated 2 times in 0.2 s");
	assert_int_equal(json_object_get_int64(get(lines[1], "repeated")), 2);
	assert_string_equal(json_object_get_string(get(lines[1], "action")), "dry_run");
	assert_string_equal(json_object_get_string(get(get(lines[1], "victim"), "name")), "default/hog");
	assert_string_equal(json_object_get_string(get(get(lines[2], "victim"), "name")), "default/web");
	assert_string_equal(json_object_get_string(get(lines[5], "summary")), "repeated 1 times in 0.0 s");
	assert_string_equal(json_object_get_string(get(lines[5], "action")), "killed");
	put_lines(lines, 6);
}

/* Sum of the file sizes of path, path.1 ... path.9; checks each is at most cap. */
static off_t rotated_sizes(const char *path, off_t cap, int *n_files)
{
	char name[PATH_MAX + 64];
	struct stat st;
	off_t total = 0;

	*n_files = 0;
	for (int i = 0; i < 10; i++) {
		if (i)
			snprintf(name, sizeof(name), "%s.%d", path, i);
		else
			snprintf(name, sizeof(name), "%s", path);
		if (stat(name, &st))
			continue;
		assert_true(st.st_size <= cap);
		total += st.st_size;
		(*n_files)++;
	}
	return total;
}

/* 300 decisions (~1.5 KB each, alternating victims so that none is coalesced) into a 16 KiB
 * cap with 2 rotated files: decisions.log, .1 and .2 exist, none over the cap, no .3; the
 * newest lines are in decisions.log, older in .1, older still in .2, each file whole lines. */
static void test_size_cap_and_rotation(void **state)
{
	struct fixture *f = *state;
	struct eventlog *log;
	struct json_object *lines[64];
	struct eventlog_decision killed = decision_for(f, EVENTLOG_KILLED);
	char name[PATH_MAX + 64];
	int64_t newest[3];
	int n_files;
	off_t total;

	assert_int_equal(eventlog_open(&log, &(struct eventlog_options){ .path = f->path,
		.max_size = 16384, .max_files = 2 }), 0);
	for (int i = 0; i < 300; i++) {
		killed.value = i;
		killed.victim = f->ranked[i % 2];
		assert_int_equal(eventlog_record(log, &killed), 1);
	}
	eventlog_close(log);
	total = rotated_sizes(f->path, 16384, &n_files);
	assert_int_equal(n_files, 3);
	assert_true(total > 2 * 12000);	/* the files are used, not emptied at each rotation */
	snprintf(name, sizeof(name), "%s.3", f->path);
	assert_int_equal(access(name, F_OK), -1);
	for (int i = 0; i < 3; i++) {
		size_t n;

		if (i)
			snprintf(name, sizeof(name), "%s.%d", f->path, i);
		else
			snprintf(name, sizeof(name), "%s", f->path);
		n = read_lines(name, lines, 64);
		assert_true(n >= 1);
		newest[i] = json_object_get_int64(get(lines[n - 1], "value"));
		if (i) /* continuity: this file ends just before the newer one begins */
			assert_true(newest[i] < newest[i - 1]);
		put_lines(lines, n);
	}
	assert_int_equal(newest[0], 299);

	/* max_files 0: the full file is removed, nothing rotated is kept. */
	snprintf(name, sizeof(name), "%s/zero.log", f->dir);
	assert_int_equal(eventlog_open(&log, &(struct eventlog_options){ .path = name,
		.max_size = 8192, .max_files = 0 }), 0);
	for (int i = 0; i < 100; i++) {
		killed.victim = f->ranked[i % 2];
		assert_int_equal(eventlog_record(log, &killed), 1);
	}
	eventlog_close(log);
	assert_true(rotated_sizes(name, 8192, &n_files) > 0);
	assert_int_equal(n_files, 1);
}

/* A held threshold whose kill fails every 100 ms for 100 s: 1,000 identical failures write
 * the first line and one summary a minute, not 1,000 lines (the unfixed code: ~1.3 MB). */
static void test_coalesce_1000_failures(void **state)
{
	struct fixture *f = *state;
	struct eventlog *log;
	struct json_object *lines[8];
	struct eventlog_decision failed = decision_for(f, EVENTLOG_FAILED);
	struct stat st;
	int logged = 0;

	mono_ns = 0;
	assert_int_equal(eventlog_open(&log, &(struct eventlog_options){ .path = f->path,
									  .monotonic_ns = mono_clock }), 0);
	for (int i = 0; i < 1000; i++) {
		failed.value = 1000 - i;	/* the value moves; the situation is the same */
		logged += eventlog_record(log, &failed);
		mono_ns += 100000000;
	}
	assert_int_equal(logged, 1);
	assert_int_equal(stat(f->path, &st), 0);
	eventlog_close(log);
	assert_int_equal(stat(f->path, &st), 0);
	assert_true(st.st_size < 4096);
	assert_int_equal(read_lines(f->path, lines, 8), 3);
	assert_string_equal(json_object_get_string(get(lines[0], "action")), "failed");
	assert_string_equal(json_object_get_string(get(lines[1], "summary")), "repeated 600 times in 60.0 s");
	assert_string_equal(json_object_get_string(get(lines[1], "error")), "Operation not permitted");
	assert_string_equal(json_object_get_string(get(lines[2], "summary")), "repeated 399 times in 39.9 s");
	put_lines(lines, 3);

	/* A run that stops: housekeeping writes its summary once a minute has passed. */
	unlink(f->path);
	mono_ns = 0;
	assert_int_equal(eventlog_open(&log, &(struct eventlog_options){ .path = f->path,
									  .monotonic_ns = mono_clock }), 0);
	assert_int_equal(eventlog_record(log, &failed), 1);
	mono_ns = 5000000000;
	assert_int_equal(eventlog_record(log, &failed), 0);
	eventlog_tick(log);
	assert_int_equal(read_lines(f->path, lines, 8), 1);	/* not yet a minute */
	put_lines(lines, 1);
	mono_ns = 61000000000;
	eventlog_tick(log);
	eventlog_tick(log);
	assert_int_equal(read_lines(f->path, lines, 8), 2);
	assert_string_equal(json_object_get_string(get(lines[1], "summary")), "repeated 1 times in 5.0 s");
	put_lines(lines, 2);
	eventlog_close(log);
	assert_int_equal(read_lines(f->path, lines, 8), 2);	/* nothing pending any more */
	put_lines(lines, 2);
}

/* In a dry run every line says so: dry_run true and "would ..." whatever the action. */
static void test_dry_run_would(void **state)
{
	struct fixture *f = *state;
	struct eventlog *log;
	struct json_object *lines[8];
	struct eventlog_decision dry = decision_for(f, EVENTLOG_DRY_RUN);
	struct eventlog_decision refused = decision_for(f, EVENTLOG_FAILED);
	struct eventlog_decision none = decision_for(f, EVENTLOG_NO_VICTIM);
	struct eventlog_decision failed = decision_for(f, EVENTLOG_FAILED);

	refused.dry_run = true;
	none.dry_run = true;
	none.victim = NULL;
	assert_int_equal(eventlog_open(&log, &(struct eventlog_options){ .path = f->path }), 0);
	assert_int_equal(eventlog_record(log, &dry), 1);
	assert_int_equal(eventlog_record(log, &refused), 1);
	assert_int_equal(eventlog_record(log, &none), 1);
	assert_int_equal(eventlog_record(log, &failed), 1);
	eventlog_close(log);
	assert_int_equal(read_lines(f->path, lines, 8), 4);
	for (int i = 0; i < 3; i++) {
		assert_true(json_object_get_boolean(get(lines[i], "dry_run")));
		assert_memory_equal(json_object_get_string(get(lines[i], "action_text")), "would ", 6);
	}
	assert_string_equal(json_object_get_string(get(lines[0], "action_text")), "would kill default/hog");
	assert_string_equal(json_object_get_string(get(lines[1], "action_text")),
			    "would kill default/hog, but it was refused: Operation not permitted");
	assert_string_equal(json_object_get_string(get(lines[2], "action_text")),
			    "would kill nothing: no evictable pod or workload");
	assert_false(json_object_get_boolean(get(lines[3], "dry_run")));
	assert_string_equal(json_object_get_string(get(lines[3], "action_text")),
			    "failed to kill default/hog: Operation not permitted");
	put_lines(lines, 4);
}

/* A full disk (/dev/full: every write ENOSPC): not fatal, the decision is still in the ring,
 * and the error is logged once, not once per decision. */
static void test_enospc_logged_once(void **state)
{
	struct fixture *f = *state;
	char errors[PATH_MAX + 32], buf[8192];
	struct eventlog *log;
	struct eventlog_decision killed = decision_for(f, EVENTLOG_KILLED);
	int saved, fd, n_lines = 0;
	ssize_t n;

	if (access("/dev/full", W_OK)) {
		print_message("SKIP reason: /dev/full is not writable here\n");
		skip();
	}
	snprintf(errors, sizeof(errors), "%s/stderr", f->dir);
	fd = open(errors, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	close(fd);
	assert_int_equal(eventlog_open(&log, &(struct eventlog_options){ .path = "/dev/full" }), 0);
	for (int i = 0; i < 50; i++) {
		killed.victim = f->ranked[i % 2];
		assert_int_equal(eventlog_record(log, &killed), -ENOSPC);
	}
	assert_int_equal(eventlog_count(log), 50);
	eventlog_close(log);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	fd = open(errors, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n > 0);
	buf[n] = '\0';
	for (char *p = buf; (p = strstr(p, "No space left on device")); p++)
		n_lines++;
	assert_int_equal(n_lines, 1);
	assert_non_null(strstr(buf, "event log /dev/full: write"));
}

static void test_ring_keeps_last_100_oldest_first(void **state)
{
	struct fixture *f = *state;
	struct eventlog *log;
	struct json_object *events;
	struct eventlog_decision killed = decision_for(f, EVENTLOG_KILLED);

	assert_int_equal(eventlog_open(&log, &(struct eventlog_options){ .path = "off" }), 0);
	events = eventlog_events_json(log);
	assert_int_equal(json_object_array_length(events), 0);
	json_object_put(events);
	for (int i = 0; i < 150; i++) {
		killed.value = i;
		killed.victim = f->ranked[i % 2];	/* not a repeat of the previous one */
		assert_int_equal(eventlog_record(log, &killed), 1);
	}
	assert_int_equal(eventlog_count(log), EVENTLOG_RING_SIZE);
	events = eventlog_events_json(log);
	assert_int_equal(json_object_array_length(events), EVENTLOG_RING_SIZE);
	assert_int_equal(json_object_get_int64(get(json_object_array_get_idx(events, 0), "value")), 50);
	assert_int_equal(json_object_get_int64(get(json_object_array_get_idx(events, 99), "value")), 149);
	eventlog_close(log);
	/* The array holds its own references: still valid after the log is gone. */
	assert_int_equal(json_object_get_int64(get(json_object_array_get_idx(events, 1), "value")), 51);
	json_object_put(events);
	/* "off" wrote nothing anywhere. */
	assert_int_equal(access(f->path, F_OK), -1);
}

static void test_reopen_after_rotation(void **state)
{
	struct fixture *f = *state;
	char rotated[PATH_MAX + 40];
	struct eventlog *log;
	struct json_object *lines[4];
	struct eventlog_decision killed = decision_for(f, EVENTLOG_KILLED);
	struct stat st;

	assert_int_equal(eventlog_open(&log, &(struct eventlog_options){ .path = f->path }), 0);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	assert_int_equal(eventlog_record(log, &killed), 1);
	snprintf(rotated, sizeof(rotated), "%s.1", f->path);
	assert_int_equal(rename(f->path, rotated), 0);
	killed.value = 7;
	killed.victim = f->ranked[1];
	assert_int_equal(eventlog_record(log, &killed), 1);	/* still the old (renamed) file */
	assert_int_equal(eventlog_reopen(log), 0);
	killed.value = 8;
	killed.victim = f->ranked[0];
	assert_int_equal(eventlog_record(log, &killed), 1);
	eventlog_close(log);

	assert_int_equal(read_lines(rotated, lines, 4), 2);
	assert_int_equal(json_object_get_int64(get(lines[1], "value")), 7);
	put_lines(lines, 2);
	assert_int_equal(read_lines(f->path, lines, 4), 1);
	assert_int_equal(json_object_get_int64(get(lines[0], "value")), 8);
	put_lines(lines, 1);
	remove(rotated);
}

/* A victim whose name is not UTF-8 (bytes from a directory name or an xattr): the line is
 * still strict JSON, the bytes written as \xNN. */
static void test_invalid_utf8_victim(void **state)
{
	struct fixture *f = *state;
	struct eventlog *log;
	struct pod odd = make_pod("ns\xc3", "pod\xff\x1b", POD_QOS_BESTEFFORT, 0, 1, 0);
	struct eventlog_decision decision = decision_for(f, EVENTLOG_KILLED);
	struct json_tokener *tok;
	struct json_object *line;
	char buf[65536];
	FILE *file;

	decision.victim = &odd;
	assert_int_equal(eventlog_open(&log, &(struct eventlog_options){ .path = f->path, .realtime_ns = fixed_clock }), 0);
	assert_int_equal(eventlog_record(log, &decision), 1);
	eventlog_close(log);
	file = fopen(f->path, "r");
	assert_non_null(file);
	assert_non_null(fgets(buf, sizeof(buf), file));
	fclose(file);
	tok = json_tokener_new();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	line = json_tokener_parse_ex(tok, buf, (int)strlen(buf));
	json_tokener_free(tok);
	if (!line)
		fail_msg("not strict UTF-8 JSON: %s", buf);
	assert_string_equal(json_object_get_string(get(get(line, "victim"), "pod")), "pod\\xff\x1b");
	assert_string_equal(json_object_get_string(get(get(line, "victim"), "namespace")), "ns\\xc3");
	json_object_put(line);
}

/* A FIFO as the log: refused at once, with or without a reader, never waited on (the open
 * of a FIFO for writing waits for a reader; the daemon then hung with its signals blocked).
 * On reopen (logrotate) the old file stays. A character device such as /dev/null is fine. */
static void test_fifo_refused_not_waited_on(void **state)
{
	struct fixture *f = *state;
	struct eventlog *log = (struct eventlog *)1;
	struct eventlog_decision decision = decision_for(f, EVENTLOG_KILLED);
	char fifo[PATH_MAX + 64], rotated[PATH_MAX + 64];
	struct json_object *lines[4];
	int reader;

	snprintf(fifo, sizeof(fifo), "%s.fifo", f->path);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	alarm(10);	/* the old code waits here for ever: end the test instead */
	assert_int_equal(eventlog_open(&log, &(struct eventlog_options){ .path = fifo }), -EINVAL);
	assert_null(log);
	reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	assert_true(reader >= 0);
	assert_int_equal(eventlog_open(&log, &(struct eventlog_options){ .path = fifo }), -EINVAL);
	assert_null(log);
	close(reader);

	assert_int_equal(eventlog_open(&log, &(struct eventlog_options){ .path = "/dev/null" }), 0);
	assert_int_equal(eventlog_record(log, &decision), 1);
	eventlog_close(log);

	/* Rotated and replaced by a FIFO: the reopen fails and the old file keeps the lines. */
	assert_int_equal(eventlog_open(&log, &(struct eventlog_options){ .path = f->path }), 0);
	snprintf(rotated, sizeof(rotated), "%s.1", f->path);
	assert_int_equal(rename(f->path, rotated), 0);
	assert_int_equal(mkfifo(f->path, 0600), 0);
	assert_int_equal(eventlog_reopen(log), -EINVAL);
	assert_int_equal(eventlog_record(log, &decision), 1);
	eventlog_close(log);
	alarm(0);
	assert_int_equal(read_lines(rotated, lines, 4), 1);
	put_lines(lines, 1);
	unlink(f->path);
	unlink(rotated);
	unlink(fifo);
}

static void test_open_failure_names_errno(void **state)
{
	struct eventlog *log = (struct eventlog *)1;

	assert_int_equal(eventlog_open(&log, &(struct eventlog_options){ .path = "/nonexistent-dir/x.log" }), -ENOENT);
	assert_null(log);
}

static void test_rank_reasons(void **state)
{
	struct pod pod = make_pod("ns", "p", POD_QOS_BURSTABLE, 5, 50 << 20, 100 << 20);
	struct rank_options options = { .daemonset_last = true };
	char reason[512];

	eventlog_rank_reason(EV_SIGNAL_MEMORY_AVAILABLE, &options, &pod, reason, sizeof(reason));
	assert_string_equal(reason, "usage 50Mi within request 100Mi; priority 5; usage - request -50Mi");

	pod.processes = 42;
	eventlog_rank_reason(EV_SIGNAL_PID_AVAILABLE, &options, &pod, reason, sizeof(reason));
	assert_string_equal(reason, "priority 5; 42 tasks");

	pod.disk_inodes.writable = 1000;
	eventlog_rank_reason(EV_SIGNAL_NODEFS_INODES_FREE, &options, &pod, reason, sizeof(reason));
	assert_string_equal(reason, "1000 inodes (no request exists); priority 5");

	pod.is_daemonset = true;
	eventlog_rank_reason(EV_SIGNAL_MEMORY_AVAILABLE, &options, &pod, reason, sizeof(reason));
	assert_non_null(strstr(reason, "DaemonSet pod: ranked after all others"));
	options.daemonset_last = false;
	eventlog_rank_reason(EV_SIGNAL_MEMORY_AVAILABLE, &options, &pod, reason, sizeof(reason));
	assert_null(strstr(reason, "DaemonSet"));

	pod.stats_missing = true;
	eventlog_rank_reason(EV_SIGNAL_MEMORY_AVAILABLE, &options, &pod, reason, sizeof(reason));
	assert_non_null(strstr(reason, "no usage could be read: ranked first"));
	pod.stats_missing = false;

	pod.processes = 0;
	eventlog_rank_reason(EV_SIGNAL_MEMORY_AVAILABLE, &options, &pod, reason, sizeof(reason));
	assert_non_null(strstr(reason, "no task left, not a candidate"));

	pod.is_static = true;
	eventlog_rank_reason(EV_SIGNAL_MEMORY_AVAILABLE, &options, &pod, reason, sizeof(reason));
	assert_string_equal(reason, "never evicted: static pod, priority 5; ranked last");
	pod.is_static = false;
	pod.priority = 2000000000;
	eventlog_rank_reason(EV_SIGNAL_MEMORY_AVAILABLE, &options, &pod, reason, sizeof(reason));
	assert_non_null(strstr(reason, "system-critical priority"));
	pod.is_self = true;
	eventlog_rank_reason(EV_SIGNAL_MEMORY_AVAILABLE, &options, &pod, reason, sizeof(reason));
	assert_non_null(strstr(reason, "evictd itself"));

	/* A short buffer is cut, never overrun. */
	eventlog_rank_reason(EV_SIGNAL_MEMORY_AVAILABLE, &options, &pod, reason, 8);
	assert_int_equal(strlen(reason), 7);
}

static void test_formatting(void **state)
{
	char buf[64];

	eventlog_format_time(0, buf, sizeof(buf));
	assert_string_equal(buf, "1970-01-01T00:00:00.000Z");
	eventlog_format_time(1234567890999999999ll, buf, sizeof(buf));
	assert_string_equal(buf, "2009-02-13T23:31:30.999Z");
	eventlog_format_amount(EV_SIGNAL_MEMORY_AVAILABLE, 1536ll << 20, buf, sizeof(buf));
	assert_string_equal(buf, "1.5Gi");
	eventlog_format_amount(EV_SIGNAL_NODEFS_AVAILABLE, 100 << 20, buf, sizeof(buf));
	assert_string_equal(buf, "100Mi");
	eventlog_format_amount(EV_SIGNAL_MEMORY_AVAILABLE, 512, buf, sizeof(buf));
	assert_string_equal(buf, "512");
	eventlog_format_amount(EV_SIGNAL_NODEFS_INODES_FREE, 1 << 20, buf, sizeof(buf));
	assert_string_equal(buf, "1048576");
	assert_string_equal(eventlog_signal_unit(EV_SIGNAL_PID_AVAILABLE), "tasks");
	assert_string_equal(eventlog_signal_unit(EV_SIGNAL_IMAGEFS_INODES_FREE), "inodes");
	assert_string_equal(eventlog_signal_unit(EV_SIGNAL_OOM_GUARD), "bytes");
	assert_string_equal(eventlog_action_name(EVENTLOG_RECLAIMED), "reclaimed");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_line_has_every_field, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_no_victim_and_guard, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repeats_logged_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_size_cap_and_rotation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_coalesce_1000_failures, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dry_run_would, setup, teardown),
		cmocka_unit_test_setup_teardown(test_enospc_logged_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ring_keeps_last_100_oldest_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen_after_rotation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_invalid_utf8_victim, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fifo_refused_not_waited_on, setup, teardown),
		cmocka_unit_test(test_open_failure_names_errno),
		cmocka_unit_test(test_rank_reasons),
		cmocka_unit_test(test_formatting),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
