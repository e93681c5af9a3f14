/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The decision log (DESIGN.md §9: every decision is logged once): one JSON object per line, to
 * stdout or an append-only file (--event-log) bounded by size and rotated
 * (--event-log-max-size, --event-log-max-files; ops/eventlog_sink.h), plus an in-memory ring
 * of the last EVENTLOG_RING_SIZE decisions that `evictctl events` reads through the control
 * socket.
 *
 * A line:
 *   {"time":"2025-01-02T03:04:05.678Z","signal":"memory.available","kind":"hard",
 *    "unit":"bytes","value":52428800,"threshold":104857600,"threshold_text":"100Mi",
 *    "oom_guard":false,"dry_run":false,"action":"killed","action_text":"killed default/web-1",
 *    "reason":"hard threshold met",
 *    "victim":{"name":"web-1","namespace":"default",...},"latency_ns":1834000,
 *    "candidates_total":3,"candidates":[{"name":"default/web-1","priority":0,
 *    "usage":...,"request":...,"qos":"BestEffort","reason":"..."}, ...]}
 * "error" is added for action "failed". latency_ns is null when nothing was killed.
 * action_text is for people: "killed NAME", and in a dry run "would kill NAME" (any action
 * with dry_run true reads "would ...").
 *
 * Consecutive identical decisions (same action, signal, kind, dry run, victim and error) are
 * coalesced: the first is written, the repeats counted, and one summary line
 *   {"time":...,"signal":...,"kind":...,"dry_run":...,"action":...,"action_text":...,
 *    "victim":...,"repeated":N,"seconds":S,"summary":"repeated N times in S s"}
 * is written when the decision changes, when pressure clears, at close, and at most once a
 * minute while it goes on (EVENTLOG_SUMMARY_INTERVAL_NS): a threshold whose kill fails every
 * 100 ms writes one line a minute, not one per try.
 *
 * Single-threaded: called from the daemon loop only.
 */
#ifndef EVICTD_EVENTLOG_H
#define EVICTD_EVENTLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/rank.h"
#include "signals/signals.h"

#define EVENTLOG_RING_SIZE 100
/* Candidates listed per line (candidates_total has the full count). */
#define EVENTLOG_MAX_CANDIDATES 16
/* A run of identical decisions is summarised at most this often. */
#define EVENTLOG_SUMMARY_INTERVAL_NS (60LL * 1000000000)

enum eventlog_action {
	EVENTLOG_KILLED,	/* the victim's cgroup is empty */
	EVENTLOG_DRY_RUN,	/* would have killed the victim */
	EVENTLOG_NO_VICTIM,	/* threshold met, nothing evictable */
	EVENTLOG_RECLAIMED,	/* node-level reclaim resolved the signal; nobody killed */
	EVENTLOG_FAILED,	/* the kill failed (error says why) */
	EVENTLOG_UNRETURNED,	/* a completed kill did not give back what it held (error: what) */
	EVENTLOG_WARNED,	/* the pre-kill warning: below --warn-memory-available (victim: first in line) */
};
/* "killed", "dry_run", "no_victim", "reclaimed", "failed", "unreturned", "warn". */
const char *eventlog_action_name(enum eventlog_action action);
struct eventlog_decision;
/* For people, with the victim's name: "killed NAME", "failed to kill NAME: ERROR", and with
 * dry_run "would kill NAME", "would kill NAME, but it was refused: ERROR" ... */
void eventlog_action_text(const struct eventlog_decision *decision, char *buf, size_t len);

/* One decision as the daemon made it. Pointers are only read during eventlog_record(). */
struct eventlog_decision {
	enum ev_signal signal;
	bool hard;
	int64_t value;			/* the signal's available amount when it was read */
	int64_t threshold;		/* resolved against capacity, same unit */
	const char *threshold_text;	/* as configured ("100Mi", "10%"); may be NULL */
	/* The ranking, first = first choice; never-evict pods may be included (they rank last
	 * and are reported as such). NULL/0 when there was nothing to rank. */
	struct pod *const *candidates;
	size_t n_candidates;
	const struct rank_options *rank_options;	/* as used for the ranking; NULL = defaults */
	const struct pod *victim;	/* NULL: none */
	enum eventlog_action action;
	int64_t latency_ns;		/* detection -> victim's cgroup empty; < 0: not applicable */
	const char *reason;		/* the decision's reason (decision.reason) */
	const char *error;		/* action FAILED: what failed */
	bool dry_run;
};

struct eventlog_options {
	/* NULL, "" or "-": standard output. "off": no lines, the ring only. Else a file opened
	 * O_APPEND|O_CREAT|O_CLOEXEC|O_NONBLOCK, mode 0640: a regular file or a character
	 * device (/dev/null, a terminal); a FIFO, socket or block device is refused (-EINVAL,
	 * logged), never waited on. */
	const char *path;
	/* A regular file is rotated before a line would take it past max_size bytes (0: no
	 * cap), keeping max_files rotated files (path.1 newest ... path.N; 0: none kept). */
	int64_t max_size;
	unsigned max_files;
	/* CLOCK_REALTIME and CLOCK_MONOTONIC sources in ns; NULL = clock_gettime. For tests. */
	int64_t (*realtime_ns)(void);
	int64_t (*monotonic_ns)(void);
};

struct eventlog;
struct json_object;

/* 0, -ENOMEM, -EINVAL (not a regular file or character device), or the open error (logged
 * with the path and %m). */
int eventlog_open(struct eventlog **out, const struct eventlog_options *options);
void eventlog_close(struct eventlog *log);

/* SIGHUP (logrotate): open the path anew and switch to it; on failure the old fd stays in
 * use (logged). No-op for stdout and "off". Returns 0 or negative errno. */
int eventlog_reopen(struct eventlog *log);

/*
 * Log one decision: render it, write the line, keep it in the ring. A decision identical to
 * the previous one (action, signal, kind, dry run, victim, error) is counted, not written
 * (see the summary line above). Returns 1 when logged, 0 when coalesced as a repeat, or
 * negative errno when the line could not be written (it is still in the ring; the failure
 * is logged once per change of error, never fatal).
 */
int eventlog_record(struct eventlog *log, const struct eventlog_decision *decision);

/* Housekeeping: write the pending summary once a minute has passed since the last line of
 * the run, so a run that stops repeating is not left unreported until the next decision. */
void eventlog_tick(struct eventlog *log);

/* No threshold is met any more: the pending summary is written and the next decision is
 * logged even if it repeats the last. */
void eventlog_pressure_cleared(struct eventlog *log);

/* The ring, oldest first, as a new JSON array the caller puts. */
struct json_object *eventlog_events_json(const struct eventlog *log);
size_t eventlog_count(const struct eventlog *log);

/* One decision as the JSON object written (unix_ns = its time). Caller puts. */
struct json_object *eventlog_decision_json(const struct eventlog_decision *decision, int64_t unix_ns);

/* Why a pod sits where it does in the ranking for signal: its sort keys in order, e.g.
 * "usage 300Mi exceeds request 100Mi; priority 0; usage - request 200Mi", or
 * "never evicted: mirror pod". Also used by `evictctl pods`. */
void eventlog_rank_reason(enum ev_signal signal, const struct rank_options *options,
			  const struct pod *pod, char *buf, size_t len);

/* "2025-01-02T03:04:05.678Z" (RFC 3339, UTC, milliseconds); buf holds >= 32. */
void eventlog_format_time(int64_t unix_ns, char *buf, size_t len);
/* Amounts for people: "300Mi", "1.5Gi", "512" (bytes), or a plain count for inodes/tasks. */
void eventlog_format_amount(enum ev_signal signal, int64_t value, char *buf, size_t len);
/* "bytes", "inodes" or "tasks". */
const char *eventlog_signal_unit(enum ev_signal signal);

#endif
