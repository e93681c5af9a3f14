// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ops/eventlog.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "ops/textsafe.h"

enum eventlog_sink {
	SINK_STDOUT,
	SINK_FILE,
	SINK_NONE,
};

struct eventlog {
	enum eventlog_sink sink;
	char path[PATH_MAX];
	int fd;			/* STDOUT_FILENO, the file, or -1 */
	int64_t (*realtime_ns)(void);
	int last_write_err;	/* logged once until a write succeeds */

	/* The previous decision, to log a repeating one once. */
	bool have_last;
	enum ev_signal last_signal;
	bool last_hard;
	enum eventlog_action last_action;
	char last_victim[4096];

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
	char stamp[40];

	eventlog_format_time(unix_ns, stamp, sizeof(stamp));
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

/*
 * The log file: a regular file, or a character device (/dev/null, a terminal). Opened
 * O_NONBLOCK: opening a FIFO for writing otherwise waits for a reader, for ever, with the
 * daemon's signals blocked (it could not even be stopped); with it a FIFO without a reader
 * fails with ENXIO, and anything that is neither a regular file nor a character device (a
 * FIFO with a reader, a socket, a block device) is refused after fstat. The flag stays: a
 * write to a terminal must not stop the loop either (doc/DESIGN.md, "The loop never
 * waits"). Standard output, whatever it is, is --event-log=-.
 */
static int open_log_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0640);
	struct stat st;

	if (fd < 0) {
		int err = -errno;

		if (err == -ENXIO) {
			log_err("event log %s: a FIFO or socket, not a regular file (--event-log=- writes to "
				"standard output)", path);
			return -EINVAL;
		}
		log_err("event log %s: %m", path);
		return err;
	}
	if (fstat(fd, &st)) {
		int err = -errno;

		log_err("event log %s: fstat: %m", path);
		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
		log_err("event log %s: a %s, not a regular file or character device (--event-log=- writes "
			"to standard output)", path, S_ISFIFO(st.st_mode) ? "FIFO" : S_ISSOCK(st.st_mode) ? "socket" :
			S_ISBLK(st.st_mode) ? "block device" : "special file");
		close(fd);
		return -EINVAL;
	}
	return fd;
}

int eventlog_open(struct eventlog **out, const struct eventlog_options *options)
{
	const char *path = options ? options->path : NULL;
	struct eventlog *log;

	*out = NULL;
	log = calloc(1, sizeof(*log));
	if (!log)
		return -ENOMEM;
	log->realtime_ns = options && options->realtime_ns ? options->realtime_ns : clock_realtime_ns;
	log->fd = -1;
	if (!path || !path[0] || !strcmp(path, "-")) {
		log->sink = SINK_STDOUT;
		log->fd = STDOUT_FILENO;
	} else if (!strcmp(path, "off")) {
		log->sink = SINK_NONE;
	} else {
		if (strlen(path) >= sizeof(log->path)) {
			log_err("event log %s: path too long", path);
			free(log);
			return -ENAMETOOLONG;
		}
		strcpy(log->path, path);
		log->sink = SINK_FILE;
		log->fd = open_log_file(path);
		if (log->fd < 0) {
			int err = log->fd;

			free(log);
			return err;
		}
	}
	*out = log;
	return 0;
}

void eventlog_close(struct eventlog *log)
{
	if (!log)
		return;
	if (log->sink == SINK_FILE && log->fd >= 0)
		close(log->fd);
	for (size_t i = 0; i < EVENTLOG_RING_SIZE; i++)
		json_object_put(log->ring[i]);
	free(log);
}

int eventlog_reopen(struct eventlog *log)
{
	int fd;

	if (!log || log->sink != SINK_FILE)
		return 0;
	fd = open_log_file(log->path);
	if (fd < 0) {
		log_err("event log: keeping the old file open after the failed reopen");
		return fd;
	}
	if (log->fd >= 0)
		close(log->fd);
	log->fd = fd;
	log_info("event log %s reopened", log->path);
	return 0;
}

/* One write of the whole line: with O_APPEND, concurrent writers (a second evictd, a test
 * appending markers) never split a line. Short writes are completed. */
static int write_line(struct eventlog *log, const char *line, size_t len)
{
	size_t done = 0;

	if (log->sink == SINK_STDOUT)
		fflush(stdout);	/* keep order with the daemon's stdio reports */
	while (done < len) {
		ssize_t n = write(log->fd, line + done, len - done);

		if (n < 0) {
			int err = -errno;

			if (errno == EINTR)
				continue;
			if (err != log->last_write_err)
				log_err("event log %s: write: %m", log->sink == SINK_FILE ? log->path : "stdout");
			log->last_write_err = err;
			return err;
		}
		done += (size_t)n;
	}
	log->last_write_err = 0;
	return 0;
}

static bool is_repeat(struct eventlog *log, const struct eventlog_decision *decision, const char *victim)
{
	if (decision->action != EVENTLOG_DRY_RUN && decision->action != EVENTLOG_NO_VICTIM)
		return false;
	return log->have_last && log->last_signal == decision->signal && log->last_hard == decision->hard &&
	       log->last_action == decision->action && !strcmp(log->last_victim, victim);
}

int eventlog_record(struct eventlog *log, const struct eventlog_decision *decision)
{
	const char *victim = decision->victim ? decision->victim->cgroup_path : "";
	struct json_object *entry;
	const char *text;
	char *line, *safe;
	size_t len;
	int err = 0;

	if (is_repeat(log, decision, victim))
		return 0;
	log->have_last = true;
	log->last_signal = decision->signal;
	log->last_hard = decision->hard;
	log->last_action = decision->action;
	snprintf(log->last_victim, sizeof(log->last_victim), "%s", victim);

	entry = eventlog_decision_json(decision, log->realtime_ns());
	if (log->sink != SINK_NONE) {
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
			err = write_line(log, line, len + 1);
			free(line);
		}
	}
	json_object_put(log->ring[log->ring_next]);
	log->ring[log->ring_next] = entry;
	log->ring_next = (log->ring_next + 1) % EVENTLOG_RING_SIZE;
	if (log->ring_count < EVENTLOG_RING_SIZE)
		log->ring_count++;
	return err ? err : 1;
}

void eventlog_pressure_cleared(struct eventlog *log)
{
	if (log)
		log->have_last = false;
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
