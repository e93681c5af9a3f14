/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Node-level reclaim before evicting (DESIGN.md §4): on DiskPressure, run the configured commands
 * (default: remove exited containers, then prune unused images, through crictl) and re-read
 * the signal after each; on MemoryPressure, optionally ask the kernel to reclaim from the
 * ranked candidates through memory.reclaim (cgroup v2, Linux >= 5.19).
 */
#ifndef EVICTD_RECLAIM_H
#define EVICTD_RECLAIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "act/kill.h"
#include "core/rank.h"
#include "signals/signals.h"

#define RECLAIM_MAX_STEPS 16
#define RECLAIM_DEFAULT_TIMEOUT_NS (120ll * 1000000000)
#define RECLAIM_DEFAULT_MEMORY_PODS 3

/* The default disk steps, used when no commands are configured and crictl is in PATH. */
#define RECLAIM_CRICTL_RM_EXITED "crictl ps -a -q --state exited | xargs -r crictl rm"
#define RECLAIM_CRICTL_PRUNE_IMAGES "crictl rmi --prune"

/* Re-read one signal's available value (bytes, inodes). 0 or negative errno. */
typedef int (*reclaim_read_fn)(void *ctx, enum ev_signal signal, int64_t *available);

struct reclaim_config {
	/* DiskPressure commands, run in order with /bin/sh -c, each in its own process group.
	 * NULL = the crictl defaults when crictl is in PATH (else none); a non-NULL array with
	 * n_disk_commands 0 = none. */
	const char *const *disk_commands;
	size_t n_disk_commands;
	int64_t command_timeout_ns;	/* per command; <= 0: RECLAIM_DEFAULT_TIMEOUT_NS */
	/* Which default steps a signal gets (seed: node-pressure eviction, "reclaiming node
	 * level resources"): one filesystem: containers then images for every disk signal;
	 * split disk: nodefs -> containers, imagefs/containerfs -> images; split image:
	 * nodefs/containerfs -> containers, imagefs -> images. Configured commands run for
	 * every disk signal. */
	enum fs_layout fs_layout;
	bool dry_run;			/* log the steps; run and write nothing */

	bool memory_reclaim;		/* --memory-reclaim-before-kill */
	size_t memory_reclaim_max_pods;	/* candidates to reclaim from; 0: RECLAIM_DEFAULT_MEMORY_PODS */
	/* The path rules memory.reclaim writes pass (kill_check_cgroup); required for them. */
	const struct kill_config *kill;
};

struct reclaim_step {
	char what[256];		/* the command, or the cgroup written to */
	int status;		/* exit status; 128+N killed by signal N; negative errno (not run) */
	bool timed_out;
	int64_t elapsed_ns;
	int64_t freed;		/* signal's available after - before (may be negative) */
	int64_t cgroup_freed;	/* memory: the cgroup's memory.current before - after */
};

struct reclaim_report {
	struct reclaim_step steps[RECLAIM_MAX_STEPS];
	size_t n_steps;
	int64_t available_before;
	int64_t available_after;
};

struct reclaim_job;
struct loop;

struct reclaim {
	struct reclaim_config config;
	bool crictl_checked;
	bool crictl_found;
	bool memory_reclaim_unsupported;	/* ENOENT/EINVAL seen once: not tried again */
	struct reclaim_job *job;		/* the running job, or NULL */
};

/* Cancel any running job (reclaim_cancel) before calling this again. */
void reclaim_init(struct reclaim *reclaim, const struct reclaim_config *config);

enum reclaim_kind {
	RECLAIM_DISK,		/* the disk commands (reclaim_disk) */
	RECLAIM_MEMORY,		/* memory.reclaim writes (reclaim_memory) */
};

struct reclaim_request {
	enum reclaim_kind kind;
	enum ev_signal signal;
	int64_t target_available;
	reclaim_read_fn read_signal;	/* called on the loop, after each step */
	void *read_ctx;
	/* RECLAIM_MEMORY: the ranked candidates; what the job needs of them is copied at start,
	 * so the pods may change while it runs. */
	struct pod *const *candidates;
	size_t n_candidates;
};

/* result: what reclaim_disk/reclaim_memory return (1 resolved, 0 still met, negative errno).
 * report is valid during the call only. */
typedef void (*reclaim_done_fn)(void *ctx, const struct reclaim_report *report, int result);

/*
 * Start a reclaim job on loop and return: the disk commands run one after another through
 * sys/subprocess (each bounded by command_timeout_ns + 2 kill graces), memory.reclaim writes
 * happen in a worker thread (a kernel write can take seconds) whose completion is an eventfd
 * in the loop. After each step the signal is re-read through read_signal and what the step
 * freed is logged, as by the synchronous calls. done is called exactly once, from the loop
 * (never from inside reclaim_start), unless the job is cancelled. Returns 0 when started,
 * -EBUSY when a job runs, -EINVAL for a bad request, or negative errno when the signal could
 * not be read at the start (then done is not called).
 */
int reclaim_start(struct reclaim *reclaim, struct loop *loop, const struct reclaim_request *req,
		  reclaim_done_fn done, void *ctx);
bool reclaim_busy(const struct reclaim *reclaim);
/* Stop the running job, if any (shutdown, reload): its command's group is SIGKILLed, an
 * in-flight memory.reclaim write finishes in its thread and is dropped; done is not called. */
void reclaim_cancel(struct reclaim *reclaim);

/* The synchronous calls below run the same job on a private loop until it is done (--once,
 * tests). */

/*
 * Run the disk steps for a DiskPressure signal, re-reading it after each (every step runs,
 * as the kubelet's reclaimNodeLevelResources does), and log what each freed. Returns 1 when
 * available >= target_available afterwards (no eviction needed), 0 when the signal is still
 * met or there was nothing to run, negative errno when the signal could not be read.
 * report may be NULL.
 */
int reclaim_disk(struct reclaim *reclaim, enum ev_signal signal, int64_t target_available,
		 reclaim_read_fn read_signal, void *ctx, struct reclaim_report *report);

/*
 * MemoryPressure, when config.memory_reclaim: write the missing bytes (target - available,
 * capped at the pod's memory.current) to memory.reclaim of the ranked candidates in order,
 * skipping the never-evict set, until the signal is back at target or
 * memory_reclaim_max_pods were tried. Returns 1 when no eviction is needed any more, 0 when
 * it still is (or reclaim is off), -EOPNOTSUPP when memory.reclaim is not supported (logged
 * once), or negative errno when the signal could not be read.
 */
int reclaim_memory(struct reclaim *reclaim, struct pod *const *candidates, size_t n_candidates,
		   enum ev_signal signal, int64_t target_available, reclaim_read_fn read_signal,
		   void *ctx, struct reclaim_report *report);

/*
 * Run one command with /bin/sh -c through sys/subprocess: own process group, stdin from
 * /dev/null, SIGTERM to the group at timeout_ns, SIGKILL a kill grace later, given up on
 * (status -1) a grace after that. status: exit code, or 128 + signal. The tail of its
 * combined output (NUL-terminated) goes to output when given. Returns 0 (it ran, whatever its
 * status), -ETIMEDOUT, or negative errno when it could not be started.
 */
int reclaim_run_command(const char *command, int64_t timeout_ns, int *status, char *output,
			size_t output_len);

/* true when an executable `name` is in the PATH given (NULL = $PATH). */
bool reclaim_in_path(const char *name, const char *path_env);

#endif
