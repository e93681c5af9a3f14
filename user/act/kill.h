/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Killing a pod or workload cgroup (DESIGN.md §6): hard = write "1" to cgroup.kill (Linux >= 5.14)
 * and wait for "populated 0" in cgroup.events; soft = SIGTERM every process in the subtree,
 * wait up to a grace period, then the hard kill. Every kill first passes the never-kill
 * rules (kill_check_cgroup); refusals are logged and return negative errno.
 */
#ifndef EVICTD_KILL_H
#define EVICTD_KILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/rank.h"

#define KILL_DEFAULT_TIMEOUT_NS (10ll * 1000000000)

/*
 * The side-effecting calls, so the logic runs on fixture trees (where cgroup.kill is a plain
 * file and nothing signals cgroup.events). A NULL ops or NULL member = the real call.
 */
struct kill_ops {
	/* One write(2) of text to name, opened O_WRONLY|O_NOFOLLOW relative to the cgroup
	 * directory fd. 0 or negative errno. */
	int (*write_file)(int dir_fd, const char *name, const char *text);
	/* kill(2). 0 or negative errno. */
	int (*signal_pid)(pid_t pid, int sig);
	/* Wait until the open cgroup.events fd reports a change (POLLPRI) or timeout_ms passes.
	 * 1 changed, 0 timed out, negative errno. */
	int (*wait_change)(int events_fd, int timeout_ms);
	/* 0 when dir_fd is on a cgroup v2 filesystem, else negative errno (-ENOTDIR). */
	int (*check_cgroupfs)(int dir_fd);
	/* CLOCK_MONOTONIC in ns. */
	int64_t (*now_ns)(void);
};

struct kill_config {
	/* Prefix for <root>/proc/self/cgroup; NULL, "" or "/" = this machine. */
	const char *root;
	/* The root-joined cgroup v2 mount: its root cgroup is never a target. Required. */
	const char *cgroup_mount;
	/* A target must lie strictly below one of these (the kubepods dirs or the workload
	 * roots: pods_kill_roots). None configured = every kill is refused. */
	const char *const *allowed_roots;
	size_t n_allowed_roots;
	/* evictd's own cgroup; NULL = re-read <root>/proc/self/cgroup before every kill. */
	const char *self_cgroup;
	bool dry_run;		/* log what would be done; write and signal nothing */
	int64_t kill_timeout_ns;	/* cgroup.kill -> populated 0; <= 0: KILL_DEFAULT_TIMEOUT_NS */
	const struct kill_ops *ops;
	/* Do not reap the killed processes' memory with process_mrelease(2) (benchmarks: with
	 * and without). It is only ever done with the real ops (ops NULL). */
	bool no_mrelease;
};

enum kill_mode {
	KILL_HARD,	/* cgroup.kill at once */
	KILL_SOFT,	/* SIGTERM, grace, then cgroup.kill */
};

/* What happened, with times from CLOCK_MONOTONIC (ops->now_ns). -1 = did not happen. */
struct kill_result {
	bool dry_run;
	bool was_empty;		/* populated 0 before anything was done: nothing to kill */
	bool exited_in_grace;	/* soft: the cgroup emptied after SIGTERM alone */
	bool used_cgroup_kill;	/* cgroup.kill was written */
	size_t n_sigterm;	/* processes sent SIGTERM (dry run: would be) */
	bool handed_over;	/* soft: the kubelet terminated it (exec_request.handed_over) */
	int64_t held_ns;	/* held for its status report this long before its first signal */
	int64_t grace_ns;	/* the grace applied (soft) */
	int64_t sigterm_to_empty_ns;	/* soft: SIGTERM sent -> populated 0 within the grace */
	int64_t kill_to_empty_ns;	/* cgroup.kill written -> populated 0 */
	int64_t killed_at_ns;		/* CLOCK_MONOTONIC just before the cgroup.kill write; 0: none */
	int64_t total_ns;		/* first action -> populated 0 */
	/* What the kill left behind (act/aftermath.c), measured when the cgroup emptied; -1 =
	 * unknown (the cgroup was gone, or no such file). */
	int64_t memory_left_bytes;	/* memory.current of the emptied cgroup */
	int64_t shmem_left_bytes;	/* memory.stat shmem: tmpfs and shared memory */
	int64_t tasks_left;		/* pids.current: zombies not reaped yet */
	size_t escaped;			/* signalled processes alive outside the cgroup */
	size_t escaped_killed;		/* of those, SIGKILLed through their pidfds */
	char escaped_to[128];		/* the cgroup the first one moved to */
};
/* Nothing happened yet: the times and measurements -1, the rest 0. */
void kill_result_init(struct kill_result *result);

/*
 * The never-kill rules for a cgroup directory path, in this order, each refusal logged with
 * the rule it broke: not empty, absolute and canonical (-EINVAL); not "/" nor the cgroup
 * mount's root (-EPERM); strictly below an allowed root (-EPERM); not evictd's own cgroup nor
 * an ancestor of it, and refused when that cannot be read (-EPERM); no symlink in any
 * component, checked by walking the path with openat(O_PATH|O_NOFOLLOW) (-ELOOP); a directory
 * on a cgroup v2 filesystem (-ENOTDIR). On success returns 0 and, when dir_fd is non-NULL, an
 * O_PATH fd of the checked directory (the caller closes it), so what was checked is what gets
 * written: no path is resolved again.
 */
int kill_check_cgroup(const struct kill_config *config, const char *path, int *dir_fd);

/*
 * Kill a pod: refuse the never-evict set (pod_never_evict: static, mirror, priority >=
 * 2000000000, evictd itself) with -EPERM, then kill_cgroup(pod->cgroup_path).
 */
/* kill_pod's first step, shared with the executor: the never-evict refusal (-EPERM, logged)
 * and the line saying who is killed and why. 0 when the kill may go on. */
int kill_pod_announce(const struct kill_config *config, const struct pod *pod, enum kill_mode mode,
		      int64_t grace_ns);
/* Its two halves: the executor logs a hard kill's line after the cgroup.kill write. */
int kill_pod_check(const struct kill_config *config, const struct pod *pod);
void kill_pod_log(const struct kill_config *config, const struct pod *pod, enum kill_mode mode,
		  int64_t grace_ns);
int kill_pod(const struct kill_config *config, const struct pod *pod, enum kill_mode mode,
	     int64_t grace_ns, struct kill_result *result);

/*
 * Kill every process in the cgroup at path (and its subtree). KILL_SOFT: SIGTERM to each
 * process listed in cgroup.procs through the subtree, wait up to grace_ns for populated 0,
 * then cgroup.kill; grace_ns <= 0 makes it a hard kill. Waits are poll(POLLPRI) on
 * cgroup.events. Returns 0 once the cgroup is empty; -ETIMEDOUT (logged) when it is still
 * populated kill_timeout_ns after cgroup.kill; a refusal's errno; or another negative errno.
 * In dry-run mode only the checks run and a line says what would be done. result may be
 * NULL.
 */
int kill_cgroup(const struct kill_config *config, const char *path, enum kill_mode mode,
		int64_t grace_ns, struct kill_result *result);

/*
 * The steps of a kill, each returning at once, for the asynchronous executor (act/executor.c).
 * kill_open_target: the never-kill rules (kill_check_cgroup), then identity: when expected_id
 * is not 0 the directory's cgroup id (inode) must equal it, else -ESTALE (logged) — the
 * cgroup at that path was removed and made again since it was ranked; then cgroup.events is
 * opened. Returns 1 populated, 0 empty, negative errno (nothing left open).
 */
/* The processes a soft kill signalled, held by pidfd: one that leaves the cgroup during its
 * grace is still found (act/aftermath.c). */
#define KILL_TRACK_MAX 1024
struct kill_tracked {
	int *pidfds;
	pid_t *pids;
	size_t n;
	bool truncated;		/* more than KILL_TRACK_MAX were signalled */
};

struct kill_target {
	int dir_fd;		/* O_PATH fd of the checked directory: no path is resolved again */
	int events_fd;		/* cgroup.events: POLLPRI/EPOLLPRI on every change */
	struct kill_tracked tracked;
};
int kill_open_target(const struct kill_config *config, const char *path, uint64_t expected_id,
		     struct kill_target *target);
void kill_close_target(struct kill_target *target);
/* Re-read cgroup.events (which re-arms its POLLPRI): 1 populated, 0 empty, negative errno. */
int kill_target_populated(const struct kill_target *target);
/* Send sig to every process in the subtree; the number sent or negative errno. */
int64_t kill_target_signal(const struct kill_config *config, const struct kill_target *target, int sig);
/* The same, and hold a pidfd of each process signalled (up to KILL_TRACK_MAX) in
 * target->tracked; closed by kill_close_target(). */
int64_t kill_target_signal_tracked(const struct kill_config *config, struct kill_target *target, int sig);
/* Write "1" to cgroup.kill: 0, -ENOENT when the kernel has none (< 5.14: the caller sends
 * SIGKILL rounds instead), or another negative errno. */
int kill_target_cgroup_kill(const struct kill_config *config, const struct kill_target *target);

/* mrelease.c. After cgroup.kill: a pidfd for every process of the cgroup at dir_fd, reaped
 * with process_mrelease(2) in a detached worker thread. Returns the number handed over, or
 * -ENOSYS once the kernel has said it has no such call (logged once), or another negative
 * errno. */
int64_t kill_mrelease_cgroup(int dir_fd);
bool kill_mrelease_supported(void);
/* Reap after cgroup.kill unless told not to, or the ops are test doubles. */
static inline void kill_target_mrelease(const struct kill_config *config, int dir_fd)
{
	if (!config->ops && !config->no_mrelease && !config->dry_run)
		kill_mrelease_cgroup(dir_fd);
}

/* Processes in the cgroup subtree (cgroup.procs of every cgroup below dir_fd), for reports
 * and dry runs. Negative errno on failure. */
int64_t kill_count_procs(int dir_fd);

/* The kubelet's pod grace for a soft eviction (DESIGN.md §2): min(terminationGracePeriodSeconds
 * (30 when unset), evictionMaxPodGracePeriod) in ns; max_pod_grace_s <= 0 means no max set,
 * and then soft evictions kill at once (0). */
int64_t kill_soft_grace_ns(const struct pod *pod, int64_t max_pod_grace_s);

#endif
