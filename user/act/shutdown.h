/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Graceful node shutdown (DESIGN.md §7), the part that needs no D-Bus: the group plan the kubelet
 * builds from its configuration, the kill sequence as a clock-driven state machine, and the
 * persisted start/end times. logind.c delivers PrepareForShutdown and holds the inhibitor.
 *
 * Typical use by the event loop:
 *   shutdown_init(&m, &options)                       at start (loads the persisted times)
 *   PrepareForShutdown(true):  shutdown_begin(&m, now, pods, n)
 *   a deadline or a finished kill:  next = shutdown_step(&m, now, &release)
 *                                   release -> logind_release(); next -> arm a timer
 *   PrepareForShutdown(false): shutdown_cancel(&m, now)
 */
#ifndef EVICTD_SHUTDOWN_H
#define EVICTD_SHUTDOWN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "act/kill.h"
#include "core/rank.h"

#define SHUTDOWN_MAX_GROUPS CONFIG_MAX_SHUTDOWN_GROUPS
/* The kubelet's file name and JSON layout ({"startTime": RFC 3339, "endTime": ...}). */
#define SHUTDOWN_STATE_FILE "graceful_node_shutdown_state"
#define SHUTDOWN_DEFAULT_STATE_DIR "/var/lib/evictd"
/* shutdown_step()'s "nothing to wait for". */
#define SHUTDOWN_NO_DEADLINE INT64_MAX

/* ---- the group plan ---------------------------------------------------------------------- */

struct shutdown_plan_group {
	int32_t priority;	/* pods with priority >= this and < the next group's */
	int64_t period_ns;	/* shutdownGracePeriodSeconds, whole seconds */
};

struct shutdown_plan {
	struct shutdown_plan_group groups[SHUTDOWN_MAX_GROUPS];	/* lowest priority first */
	size_t n_groups;	/* 0 = the feature is off */
	int64_t total_ns;	/* sum of the periods: the inhibit delay to ask logind for */
};

/*
 * The kubelet's migrateConfig: shutdownGracePeriod/shutdownGracePeriodCriticalPods as two
 * priority groups, {0: total - critical} and {2000000000: critical}, each truncated to whole
 * seconds. Returns the number of groups written (2), or 0 when total is 0 or the pair is
 * inconsistent (critical > total).
 */
size_t shutdown_migrate_config(int64_t total_ns, int64_t critical_ns, struct shutdown_plan_group out[2]);

/* The plan from a validated configuration: the priority list as given (config keeps it sorted
 * lowest first), else the migrated two-period form. Returns the number of groups. */
size_t shutdown_plan_from_config(const struct evictd_config *config, struct shutdown_plan *plan);

/*
 * The kubelet's groupByPriority for one pod: the group with the highest priority <= the
 * pod's; a pod below the lowest listed priority goes to the lowest group, one above the
 * highest to the highest. plan must have at least one group.
 */
size_t shutdown_group_index(const struct shutdown_plan *plan, int32_t priority);

/* The grace a pod gets in a group: its terminationGracePeriodSeconds when set and not longer
 * than the group's period, else the period (the kubelet's gracePeriodOverride). */
int64_t shutdown_pod_grace_ns(const struct pod *pod, int64_t period_ns);

/* ---- the kill sequence --------------------------------------------------------------------- */

/*
 * How pods get killed. start() begins a soft kill (SIGTERM now, cgroup.kill when grace_ns has
 * passed) and must return without waiting; its end is reported with shutdown_kill_done(m,
 * token, err), from any later point of the event loop. start() returns 0 when the kill is
 * under way, negative errno when nothing was started (the pod then counts as finished).
 */
struct shutdown_kill_ops {
	int (*start)(void *ctx, uint64_t token, const struct pod *pod, int64_t grace_ns);
};

enum shutdown_phase {
	SHUTDOWN_IDLE,		/* no shutdown announced */
	SHUTDOWN_RUNNING,	/* PrepareForShutdown(true): groups being terminated */
	SHUTDOWN_DONE,		/* every group handled: the lock may go, the node goes down */
	SHUTDOWN_CANCELLED,	/* PrepareForShutdown(false) */
};
const char *shutdown_phase_name(enum shutdown_phase phase);

struct shutdown_pod;	/* the sequence's copy of one pod */

struct shutdown_options {
	const struct evictd_config *config;	/* for the plan; NULL = use plan */
	const struct shutdown_plan *plan;	/* used when config is NULL */
	const struct shutdown_kill_ops *ops;
	void *ops_ctx;
	/* Where SHUTDOWN_STATE_FILE lives; NULL = SHUTDOWN_DEFAULT_STATE_DIR, "" = keep no state. */
	const char *state_dir;
	/* CLOCK_REALTIME in ns for the recorded times; NULL = the real clock. */
	int64_t (*realtime_ns)(void);
	/* Called when a pod's termination ended (err 0: its cgroup is empty); NULL = none.
	 * The daemon reports the pod to the API server from here. */
	void (*pod_done)(void *ctx, const struct pod *pod, int err);
	void *pod_done_ctx;
};

struct shutdown_manager {
	struct shutdown_plan plan;
	const struct shutdown_kill_ops *ops;
	void *ops_ctx;
	int64_t (*realtime_ns)(void);
	char state_path[PATH_MAX];	/* "" = not persisted */

	/* graceful_shutdown_{start,end}_time_seconds, unix ns; 0 = unset. Loaded at init. */
	int64_t start_time_ns;
	int64_t end_time_ns;

	/* The sequence (monotonic times). */
	enum shutdown_phase phase;
	uint32_t generation;		/* tokens of older sequences are ignored */
	struct shutdown_pod *pods;	/* sorted by group, then as given */
	size_t n_pods;
	size_t group_first[SHUTDOWN_MAX_GROUPS + 1];	/* pods[group_first[g]..group_first[g+1]) */
	size_t group;			/* the group being terminated */
	size_t pending;			/* its kills not yet finished */
	bool group_started;
	int64_t begin_ns;
	int64_t group_start_ns;
	int64_t group_deadline_ns;
	bool release_due;		/* DONE, and shutdown_step has not said so yet */
	void (*pod_done)(void *ctx, const struct pod *pod, int err);
	void *pod_done_ctx;
};

/* Build the plan and load the persisted times (a missing file is not an error; an unreadable
 * or malformed one is logged and ignored). Returns 0, -EINVAL (no ops/plan) or -ENAMETOOLONG. */
int shutdown_init(struct shutdown_manager *m, const struct shutdown_options *options);
void shutdown_destroy(struct shutdown_manager *m);

static inline bool shutdown_enabled(const struct shutdown_manager *m)
{
	return m->plan.n_groups > 0;
}

/* The node is going down: from PrepareForShutdown(true) until it is cancelled. Pods should
 * not be admitted and the node reports NotReady ("node is shutting down"). */
static inline bool shutdown_in_progress(const struct shutdown_manager *m)
{
	return m->phase == SHUTDOWN_RUNNING || m->phase == SHUTDOWN_DONE;
}

/*
 * PrepareForShutdown(true). Records and persists the start time (end time reset), copies the
 * pods (evictd's own is left out) into their groups and starts the first non-empty group:
 * call shutdown_step() right after. A second call while running is ignored. Returns 0,
 * -ENOMEM, or -EALREADY when a sequence is already running.
 */
int shutdown_begin(struct shutdown_manager *m, int64_t now_ns, struct pod *const *pods, size_t n_pods);

/*
 * Advance the sequence at now_ns: start the next group once the current one's pods have all
 * finished or its period has passed, skipping empty groups at once. Returns the monotonic
 * time at which to call again (SHUTDOWN_NO_DEADLINE when only shutdown_kill_done can move it,
 * or nothing is running). *release_lock is set true exactly once, on the call that finds the
 * last group over: the end time is then recorded and persisted and the inhibitor lock should
 * be released.
 */
int64_t shutdown_step(struct shutdown_manager *m, int64_t now_ns, bool *release_lock);

/* A kill started through ops->start has ended (err: its result, for the log). Tokens from an
 * older sequence or a group already given up on are ignored. Call shutdown_step() after. */
void shutdown_kill_done(struct shutdown_manager *m, uint64_t token, int err);

/*
 * PrepareForShutdown(false). A running sequence stops: groups not yet started are left alone
 * (kills already started run to their end). The end time is recorded when a sequence was
 * running. The caller takes the inhibitor lock again. Returns true when a sequence was running.
 */
bool shutdown_cancel(struct shutdown_manager *m, int64_t now_ns);

/* graceful_shutdown_{start,end}_time_seconds; 0 when unset. */
double shutdown_start_time_seconds(const struct shutdown_manager *m);
double shutdown_end_time_seconds(const struct shutdown_manager *m);

/* ---- persisted state ------------------------------------------------------------------------ */

/* Write {"startTime":..., "endTime":...} (RFC 3339 UTC; 0 = Go's zero time) to path through a
 * temp file in the same directory, fsync, rename, fsync of the directory; the directory is
 * created (0755) when missing. 0 or negative errno (logged with the path). */
int shutdown_state_save(const char *path, int64_t start_ns, int64_t end_ns);
/* Read it back (the kubelet's file too: any RFC 3339 offset, fraction optional). A time
 * before 1970 (Go's zero time) reads as 0. 0, -ENOENT, -EINVAL (malformed, logged) or the
 * read error. */
int shutdown_state_load(const char *path, int64_t *start_ns, int64_t *end_ns);
/* RFC 3339 with nanoseconds, trailing zeros trimmed (Go's RFC3339Nano), UTC. */
void shutdown_format_time(int64_t unix_ns, char *buf, size_t len);
/* 0 or -EINVAL. */
int shutdown_parse_time(const char *text, int64_t *unix_ns);

/* ---- kills in worker threads ------------------------------------------------------------------ */

#endif
