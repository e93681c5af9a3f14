/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The action executor: every kill evictd makes, eviction and graceful shutdown alike, is an
 * event source in the loop, as systemd-oomd does it. Starting an action checks the target
 * (never-kill rules, cgroup identity), sends SIGTERM or writes cgroup.kill, registers the
 * victim's cgroup.events and a deadline, and returns. The loop then reports "populated 0"
 * (done), the end of the grace (cgroup.kill), or the kill timeout (given up, logged).
 *
 * An action owns copies of everything it needs (the pod, the timings) and the fds of the
 * checked directory: it borrows nothing from the configuration, so a reload while it runs
 * cannot leave it pointing at freed memory.
 */
#ifndef EVICTD_ACT_EXECUTOR_H
#define EVICTD_ACT_EXECUTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "act/kill.h"
#include "core/rank.h"
#include "sys/loop.h"

struct executor;
struct exec_action;

enum exec_phase {
	EXEC_HELD,	/* not signalled yet: held until hold_fd is readable or hold_ns */
	EXEC_GRACE,	/* SIGTERM sent (or the termination handed over); cgroup.kill at the end
			 * of the grace */
	EXEC_KILLED,	/* cgroup.kill written; waiting for populated 0 */
};

/* Called once per action, from the loop, when it ends: err 0 = the cgroup is empty (result
 * says how), else why it failed (-ETIMEDOUT: still populated kill_timeout after the kill;
 * -ESTALE: not the cgroup that was ranked). The action is freed after the call. */
typedef void (*exec_done_fn)(void *ctx, const struct exec_action *action, int err,
			     const struct kill_result *result);

struct exec_request {
	const struct pod *pod;		/* copied */
	enum kill_mode mode;
	int64_t grace_ns;		/* soft: SIGTERM -> cgroup.kill; <= 0 makes it hard */
	exec_done_fn done;
	void *ctx;
	void *owner;			/* what the caller wants back (executor_action_owner) */
	int kind;			/* the caller's tag for it (executor_action_kind) */
	/* Graceful shutdown terminates every pod, critical ones in their own group: the
	 * never-evict set does not apply; the path rules (evictd's own cgroup, the allowed
	 * roots, no symlinks, identity) still do. */
	bool any_priority;
	/* An action held before its first signal until hold_fd is readable (EPOLLIN; borrowed: it
	 * must stay open until done is called) or hold_ns has passed, whichever comes first (the
	 * API status patch that must come before the kill, doc/DESIGN.md §8). The loop goes on
	 * meanwhile; a soft action's grace starts when the hold ends, a hard one's cgroup.kill is
	 * written then (or earlier: executor_escalate). hold_ns <= 0 or hold_fd < 0: no hold. */
	int hold_fd;
	int64_t hold_ns;
	/* Optional, soft and held: asked when hold_fd fired. True: the termination is handed
	 * over (the kubelet stops the containers on the terminal phase the report wrote, with
	 * their preStop hooks and STOPSIGNAL): no SIGTERM from here, the grace runs from now and
	 * cgroup.kill ends it if the cgroup is still populated then. */
	bool (*handed_over)(void *ctx);
	/* Optional: called with ctx instead of done when the executor is freed with the action
	 * still in flight (the daemon stops), so that the caller frees what ctx holds. */
	void (*release)(void *ctx);
};

int executor_new(struct executor **out, struct loop *loop);
/* Actions still in flight are abandoned (logged): a written cgroup.kill completes in the
 * kernel without us, a victim in its grace keeps running. done is not called; release is. */
void executor_free(struct executor *executor);

/*
 * Start an action against config's rules. Returns 0 when it is under way (done will be
 * called later), 1 when the cgroup was already empty or in dry-run mode (nothing started,
 * result filled, done not called), or negative errno when it was refused (logged; done not
 * called). A pod already in flight is refused with -EALREADY.
 */
int executor_start(struct executor *executor, const struct kill_config *config,
		   const struct exec_request *request, struct kill_result *result);
/* Cut an action's hold or grace short: cgroup.kill now (a hard threshold chose a pod already
 * in its grace, as the kubelet's pod workers shorten a grace period, never lengthen it; a held
 * hard kill can wait no longer). */
int executor_escalate(struct executor *executor, struct exec_action *action);

size_t executor_in_flight(const struct executor *executor);
/* The action for this cgroup (by id when known, else by path), or NULL. */
struct exec_action *executor_find(const struct executor *executor, const struct pod *pod);
/* Iterate: first with NULL, then with the previous one; NULL at the end. */
struct exec_action *executor_next(const struct executor *executor, const struct exec_action *prev);

const struct pod *executor_action_pod(const struct exec_action *action);
enum exec_phase executor_action_phase(const struct exec_action *action);
/* A hard action (no grace): cgroup.kill is its first signal. */
bool executor_action_hard(const struct exec_action *action);
void *executor_action_owner(const struct exec_action *action);
int executor_action_kind(const struct exec_action *action);
/* CLOCK_MONOTONIC time the action started. */
int64_t executor_action_started_ns(const struct exec_action *action);

#endif
