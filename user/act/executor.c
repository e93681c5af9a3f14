// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The action executor (doc/DESIGN.md, "Acting"). Every step returns at once; the waits are
 * the loop's: EPOLLPRI on cgroup.events (kernfs re-arms it on each read), one timerfd per
 * action for the end of the grace or the kill timeout.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "act/aftermath.h"
#include "act/executor.h"
#include "core/arith.h"
#include "sys/clock.h"
#include "sys/log.h"

/* Without cgroup.kill (< 5.14): SIGKILL every process again this often until it is empty. */
#define FALLBACK_ROUND_NS (100LL * 1000000)
/* cgroup.events is re-read on these timers too, not only on its EPOLLPRI: the kernel may
 * never deliver the last notification of a cgroup that is emptied and removed at once (as a
 * service manager removes an emptied unit's cgroup), and a completion must not be lost.
 * After cgroup.kill: 10 ms, doubling to 1 s; in a grace: 100 ms, doubling to 1 s. */
#define RECHECK_KILLED_NS (10LL * 1000000)
#define RECHECK_GRACE_NS (100LL * 1000000)
#define RECHECK_MAX_NS (1000LL * 1000000)

struct exec_action {
	struct executor *executor;
	struct exec_action *prev, *next;
	struct pod pod;
	/* The rules' side-effect hooks and timings; the path rules were applied at start and
	 * the checked directory is held open, so no pointer into the configuration is kept. */
	const struct kill_ops *ops;
	int64_t kill_timeout_ns;
	struct kill_target target;
	struct loop_source *events_source;
	struct loop_source *timer;
	struct loop_source *hold_source;	/* EXEC_HELD: the hold's fd */
	enum exec_phase phase;
	bool hard;			/* no grace: cgroup.kill is the first signal */
	bool (*handed_over)(void *ctx);	/* exec_request.handed_over */
	void (*release)(void *ctx);	/* exec_request.release */
	bool sigkill_rounds;		/* no cgroup.kill: SIGKILL rounds until the deadline */
	int64_t start_ns, sigterm_ns, kill_ns, kill_deadline_ns;
	int64_t grace_ns, grace_deadline_ns;
	int64_t hold_deadline_ns;
	int64_t recheck_ns;		/* the next re-read of cgroup.events comes this long after */
	struct kill_result result;
	exec_done_fn done;
	void *ctx;
	void *owner;
	int kind;
};

struct executor {
	struct loop *loop;
	struct exec_action *head;
	size_t n;
};

/* A handed-over termination's deadline comes this long after its grace (begin_grace). */
#define HANDOVER_SLACK_NS (2000ll * 1000000)

static double ms(int64_t ns)
{
	return (double)ns / 1e6;
}

int executor_new(struct executor **out, struct loop *loop)
{
	struct executor *executor = calloc(1, sizeof(*executor));

	if (!executor)
		return -ENOMEM;
	executor->loop = loop;
	*out = executor;
	return 0;
}

static void action_unlink(struct exec_action *action)
{
	struct executor *executor = action->executor;

	if (action->prev)
		action->prev->next = action->next;
	else
		executor->head = action->next;
	if (action->next)
		action->next->prev = action->prev;
	executor->n--;
	loop_remove(executor->loop, action->events_source);
	loop_remove(executor->loop, action->timer);
	loop_remove(executor->loop, action->hold_source);
	action->hold_source = NULL;
	kill_close_target(&action->target);
}

static struct kill_config action_config(const struct exec_action *action)
{
	return (struct kill_config){ .ops = action->ops, .kill_timeout_ns = action->kill_timeout_ns };
}

static void finish(struct exec_action *action, int err)
{
	int64_t now = clock_monotonic_ns();

	if (!err) {
		aftermath_measure(action->target.dir_fd, &action->result);
		/* Empty, yet a process it signalled lives on elsewhere: it left during its grace
		 * (or before cgroup.kill reached it). It was part of the victim: kill it. */
		aftermath_escaped(&action->target.tracked, NULL, true, &action->result);
	}
	if (!err && action->result.escaped) {
		log_warn("kill: %zu process(es) signalled in %s left it before it emptied (to %s); "
			 "%zu SIGKILLed through their pidfds", action->result.escaped, action->pod.cgroup_path,
			 action->result.escaped_to[0] ? action->result.escaped_to : "another cgroup",
			 action->result.escaped_killed);
		action->result.kill_to_empty_ns = now - (action->kill_ns ? action->kill_ns : action->start_ns);
	} else if (!err && action->phase == EXEC_HELD) {
		/* It ended by itself before its SIGTERM: nothing was sent. */
		action->result.exited_in_grace = true;
		log_info("kill: %s emptied by itself %.1f ms after the decision, before its SIGTERM",
			 action->pod.cgroup_path, ms(now - action->start_ns));
	} else if (!err && action->phase == EXEC_GRACE) {
		action->result.exited_in_grace = true;
		action->result.sigterm_to_empty_ns = now - action->sigterm_ns;
		log_info("kill: %s emptied %.1f ms after %s, within its grace", action->pod.cgroup_path,
			 ms(action->result.sigterm_to_empty_ns),
			 action->result.handed_over ? "its termination was handed to the kubelet" : "SIGTERM");
	} else if (!err) {
		action->result.kill_to_empty_ns = now - action->kill_ns;
		log_info("kill: %s empty %.1f ms after the kill (%.1f ms in all)", action->pod.cgroup_path,
			 ms(action->result.kill_to_empty_ns), ms(now - action->start_ns));
	}
	if (!err)
		action->result.total_ns = now - action->start_ns;
	action_unlink(action);
	if (action->done)
		action->done(action->ctx, action, err, &action->result);
	free(action);
}

static void arm(struct exec_action *action, int64_t deadline_ns)
{
	loop_timer_set(action->timer, deadline_ns);
}

/* The phase's deadline, or the next re-read of cgroup.events if that comes first. */
static void arm_recheck(struct exec_action *action, int64_t now, int64_t phase_deadline_ns)
{
	int64_t at = sat_add_i64(now, action->recheck_ns);

	arm(action, at < phase_deadline_ns ? at : phase_deadline_ns);
	action->recheck_ns = action->recheck_ns * 2 < RECHECK_MAX_NS ? action->recheck_ns * 2 : RECHECK_MAX_NS;
}

/* Empty, or removed (a cgroup can only be removed once empty): the kill is done. */
static bool emptied(int populated)
{
	return populated == 0 || populated == -ENODEV || populated == -ENOENT;
}

/* The hold is over: its fd is no longer watched (the owner may close it once done). */
static void drop_hold(struct exec_action *action)
{
	loop_remove(action->executor->loop, action->hold_source);
	action->hold_source = NULL;
}

/* cgroup.kill was written at kill_ns: give the memory back at once and watch for the end. */
static void killed(struct exec_action *action, int64_t kill_ns)
{
	struct kill_config config = action_config(action);

	action->phase = EXEC_KILLED;
	action->kill_ns = kill_ns;
	action->kill_deadline_ns = sat_add_i64(kill_ns, action->kill_timeout_ns);
	action->result.used_cgroup_kill = true;
	action->result.killed_at_ns = kill_ns;
	kill_target_mrelease(&config, action->target.dir_fd);	/* the memory back at once */
	action->recheck_ns = RECHECK_KILLED_NS;
	arm_recheck(action, kill_ns, action->kill_deadline_ns);
}

static void log_kill_failed(const char *cgroup_path, int err)
{
	errno = -err;
	log_err("kill: write 1 to %s/cgroup.kill: %m", cgroup_path);
}

/* cgroup.kill now; the deadline becomes the kill timeout. */
static int kill_now(struct exec_action *action)
{
	struct kill_config config = action_config(action);
	int64_t now;
	int err;

	drop_hold(action);
	now = clock_monotonic_ns();
	err = kill_target_cgroup_kill(&config, &action->target);
	if (err == -ENOENT) {
		static bool warned;

		if (!warned)
			log_warn("kill: %s/cgroup.kill is missing (Linux < 5.14); sending SIGKILL to each "
				 "process instead, which a forking process can outrun", action->pod.cgroup_path);
		warned = true;
		action->phase = EXEC_KILLED;
		action->kill_ns = now;
		action->kill_deadline_ns = sat_add_i64(now, action->kill_timeout_ns);
		action->sigkill_rounds = true;
		kill_target_signal(&config, &action->target, SIGKILL);
		arm(action, sat_add_i64(action->kill_ns, FALLBACK_ROUND_NS));
		return 0;
	}
	if (err) {
		action->phase = EXEC_KILLED;
		log_kill_failed(action->pod.cgroup_path, err);
		return err;
	}
	killed(action, now);
	return 0;
}

/* SIGTERM now (the hold is over, or there was none), unless the termination was handed over;
 * the grace runs from here. */
static int begin_grace(struct exec_action *action, bool handed_over)
{
	struct kill_config config = action_config(action);
	int64_t sent;

	drop_hold(action);
	action->sigterm_ns = clock_monotonic_ns();
	if (handed_over) {
		action->phase = EXEC_GRACE;
		action->result.handed_over = true;
		log_info("kill: %s: the kubelet terminates it (preStop hooks, STOPSIGNAL) on the terminal "
			 "phase its status report wrote; cgroup.kill if it is still populated in %.0f ms",
			 action->pod.cgroup_path, ms(action->grace_ns + HANDOVER_SLACK_NS));
		/* The kubelet's grace runs from its own start, a little after ours, and its sandbox
		 * goes after the containers (StopPodSandbox): slack before the deadline's kill. */
		action->grace_deadline_ns = sat_add_i64(action->sigterm_ns, action->grace_ns + HANDOVER_SLACK_NS);
		action->recheck_ns = RECHECK_GRACE_NS;
		arm_recheck(action, action->sigterm_ns, action->grace_deadline_ns);
		return 0;
	}
	sent = kill_target_signal_tracked(&config, &action->target, SIGTERM);
	if (sent < 0) {
		log_err("kill: reading %s/cgroup.procs: %s", action->pod.cgroup_path, strerror((int)-sent));
		return (int)sent;
	}
	action->phase = EXEC_GRACE;
	action->result.n_sigterm = (size_t)sent;
	log_info("kill: sent SIGTERM to %zu processes in %s; grace %.0f ms", (size_t)sent,
		 action->pod.cgroup_path, ms(action->grace_ns));
	action->grace_deadline_ns = sat_add_i64(action->sigterm_ns, action->grace_ns);
	action->recheck_ns = RECHECK_GRACE_NS;
	arm_recheck(action, action->sigterm_ns, action->grace_deadline_ns);
	return 0;
}

/* The hold ends: its fd said so (answered) or its bound passed. Never waits. */
static void end_hold(struct exec_action *action, bool answered)
{
	int64_t held = clock_monotonic_ns() - action->start_ns;
	const char *next = action->hard ? "cgroup.kill" : "SIGTERM";
	bool handed_over = false;
	int err;

	action->result.held_ns = held;
	if (answered && !action->hard && action->handed_over && action->handed_over(action->ctx)) {
		handed_over = true;
		next = "no SIGTERM from evictd";
	}
	if (answered)
		log_info("kill: %s: held %.1f ms for its status report; %s now", action->pod.cgroup_path,
			 ms(held), next);
	else
		/* The bound as configured, then the time it took: a busy loop ends a hold late. */
		log_warn("kill: %s: no answer to its status report within %.0f ms (held %.1f ms): "
			 "%s anyway, the report follows", action->pod.cgroup_path,
			 ms(action->hold_deadline_ns - action->start_ns), ms(held), next);
	err = action->hard ? kill_now(action) : begin_grace(action, handed_over);
	if (err)
		finish(action, err);
}

static void on_hold(void *ctx, int fd, uint32_t revents)
{
	struct exec_action *action = ctx;

	if (action->phase == EXEC_HELD)
		end_hold(action, true);
}

static void on_events(void *ctx, int fd, uint32_t revents)
{
	struct exec_action *action = ctx;
	int populated = kill_target_populated(&action->target);

	if (emptied(populated))
		finish(action, 0);
	else if (populated < 0) {
		log_err("kill: reading %s/cgroup.events: %s", action->pod.cgroup_path, strerror(-populated));
		finish(action, populated);
	}
}

static void on_deadline(void *ctx)
{
	struct exec_action *action = ctx;
	int64_t now = clock_monotonic_ns();
	int populated = kill_target_populated(&action->target);
	int err;

	if (emptied(populated)) {
		finish(action, 0);
		return;
	}
	if (populated < 0 && populated != -EINTR) {
		log_err("kill: reading %s/cgroup.events: %s", action->pod.cgroup_path, strerror(-populated));
		finish(action, populated);
		return;
	}
	if (action->phase == EXEC_HELD) {
		if (now < action->hold_deadline_ns)
			arm(action, action->hold_deadline_ns);
		else
			end_hold(action, false);
		return;
	}
	if (action->phase == EXEC_GRACE && now < action->grace_deadline_ns) {
		arm_recheck(action, now, action->grace_deadline_ns);
		return;
	}
	if (action->phase == EXEC_KILLED && !action->sigkill_rounds && now < action->kill_deadline_ns) {
		arm_recheck(action, now, action->kill_deadline_ns);
		return;
	}
	if (action->phase == EXEC_GRACE) {
		log_info("kill: %s still populated at the end of its %.0f ms grace; cgroup.kill",
			 action->pod.cgroup_path, ms(action->result.grace_ns));
		err = kill_now(action);
		if (err)
			finish(action, err);
		return;
	}
	if (action->sigkill_rounds && now < action->kill_deadline_ns) {
		struct kill_config config = action_config(action);

		kill_target_signal(&config, &action->target, SIGKILL);
		arm(action, now + FALLBACK_ROUND_NS < action->kill_deadline_ns ?
				    now + FALLBACK_ROUND_NS : action->kill_deadline_ns);
		return;
	}
	log_err("kill: %s still populated %.0f ms after the kill; giving up (tasks stuck in "
		"uninterruptible sleep?)", action->pod.cgroup_path, ms(now - action->kill_ns));
	finish(action, -ETIMEDOUT);
}

/* The kill's log line; after the cgroup.kill write for a hard kill. */
static void announce(const struct kill_config *config, const struct pod *pod, enum kill_mode mode,
		     const struct exec_request *request)
{
	if (request->any_priority)
		log_info("kill: terminating %s (priority %d)%s", pod->cgroup_path, pod->priority,
			 config->dry_run ? " (dry-run)" : "");
	else
		kill_pod_log(config, pod, mode, request->grace_ns);
}

int executor_start(struct executor *executor, const struct kill_config *config,
		   const struct exec_request *request, struct kill_result *result)
{
	const struct pod *pod = request->pod;
	struct kill_result local;
	struct exec_action *action;
	struct kill_target target;
	enum kill_mode mode = request->mode;
	int64_t timeout_ns = config->kill_timeout_ns > 0 ? config->kill_timeout_ns : KILL_DEFAULT_TIMEOUT_NS;
	int64_t kill_ns = 0;
	int populated, err, written = -ENOENT;	/* -ENOENT: not written (yet) */
	bool held;

	if (!result)
		result = &local;
	kill_result_init(result);
	if (!pod)
		return -EINVAL;
	if (executor_find(executor, pod)) {
		log_debug("kill: %s is already being killed", pod->cgroup_path);
		return -EALREADY;
	}
	if (mode == KILL_SOFT && request->grace_ns <= 0)
		mode = KILL_HARD;
	if (!request->any_priority && (err = kill_pod_check(config, pod)))
		return err;
	populated = kill_open_target(config, pod->cgroup_path, pod->cgroup_id, &target);
	if (populated < 0)
		return populated;
	result->grace_ns = mode == KILL_SOFT ? request->grace_ns : 0;
	/* A hard kill: nothing that can come after the write comes before it (doc/DESIGN.md,
	 * "Acting": the log lines, the allocation, the loop's registrations), unless it is held
	 * for its status report. Without cgroup.kill (-ENOENT) kill_now() below falls back to
	 * SIGKILL rounds. */
	held = request->hold_ns > 0 && request->hold_fd >= 0;
	if (mode == KILL_HARD && !held && !config->dry_run && populated) {
		kill_ns = clock_monotonic_ns();
		written = kill_target_cgroup_kill(config, &target);
		if (written && written != -ENOENT) {
			announce(config, pod, mode, request);
			log_kill_failed(pod->cgroup_path, written);
			kill_close_target(&target);
			return written;
		}
	}
	announce(config, pod, mode, request);
	if (config->dry_run) {
		int64_t procs = kill_count_procs(target.dir_fd);

		result->dry_run = true;
		result->was_empty = !populated;
		if (mode == KILL_SOFT)
			log_info("kill: dry-run: would send SIGTERM to the %" PRId64 " processes in %s, "
				 "wait up to %.0f ms for it to empty, then write 1 to %s/cgroup.kill",
				 procs, pod->cgroup_path, ms(request->grace_ns), pod->cgroup_path);
		else
			log_info("kill: dry-run: would write 1 to %s/cgroup.kill (%" PRId64
				 " processes) and wait up to %.0f ms for populated 0",
				 pod->cgroup_path, procs, ms(timeout_ns));
		kill_close_target(&target);
		return 1;
	}
	if (!populated) {
		result->was_empty = true;
		log_info("kill: %s is already empty; nothing to kill", pod->cgroup_path);
		kill_close_target(&target);
		return 1;
	}

	action = calloc(1, sizeof(*action));
	if (!action) {
		if (!written)
			log_err("kill: %s: cgroup.kill written, but out of memory to watch it empty",
				pod->cgroup_path);
		kill_close_target(&target);
		return -ENOMEM;
	}
	*action = (struct exec_action){
		.executor = executor,
		.pod = *pod,
		.ops = config->ops,
		.kill_timeout_ns = timeout_ns,
		.target = target,
		.done = request->done,
		.ctx = request->ctx,
		.owner = request->owner,
		.kind = request->kind,
		.start_ns = written ? clock_monotonic_ns() : kill_ns,
		.grace_ns = request->grace_ns,
		.hard = mode == KILL_HARD,
		.handed_over = request->handed_over,
		.release = request->release,
	};
	kill_result_init(&action->result);
	action->result.grace_ns = result->grace_ns;
	action->events_source = loop_add_fd(executor->loop, target.events_fd, EPOLLPRI, false, on_events, action);
	action->timer = loop_add_timer(executor->loop, LOOP_NO_DEADLINE, on_deadline, action);
	if (!action->events_source || !action->timer) {
		err = errno ? -errno : -ENOMEM;
		if (!written)
			log_err("kill: %s: cgroup.kill written, but its end cannot be watched: %s",
				pod->cgroup_path, strerror(-err));
		loop_remove(executor->loop, action->events_source);
		loop_remove(executor->loop, action->timer);
		kill_close_target(&action->target);
		free(action);
		return err;
	}
	action->next = executor->head;
	if (executor->head)
		executor->head->prev = action;
	executor->head = action;
	executor->n++;

	if (held && (action->hold_source = loop_add_fd(executor->loop, request->hold_fd, EPOLLIN, false,
						       on_hold, action))) {
		/* Held: the loop goes on; the fd or the deadline ends it (on_hold, on_deadline).
		 * Failing to watch the fd (logged by the loop) just means no hold. */
		action->phase = EXEC_HELD;
		action->hold_deadline_ns = sat_add_i64(action->start_ns, request->hold_ns);
		arm(action, action->hold_deadline_ns);
		log_info("kill: %s: %s once its status report is answered, in %.0f ms at most",
			 pod->cgroup_path, mode == KILL_HARD ? "cgroup.kill" : "SIGTERM", ms(request->hold_ns));
	} else if (mode == KILL_SOFT) {
		err = begin_grace(action, false);
		if (err) {
			action_unlink(action);
			free(action);
			return err;
		}
	} else if (!written) {
		killed(action, kill_ns);
	} else {	/* hard, not written yet: held, but its hold could not be watched */
		err = kill_now(action);
		if (err) {
			action_unlink(action);
			free(action);
			return err;
		}
	}
	*result = action->result;
	return 0;
}

int executor_escalate(struct executor *executor, struct exec_action *action)
{
	int err;

	if (!action || action->phase == EXEC_KILLED)
		return 0;
	log_info("kill: %s: its %s is cut short; cgroup.kill now", action->pod.cgroup_path,
		 action->phase != EXEC_HELD ? "grace" : action->hard ? "hold for its status report" :
		 "hold for its status report, and its grace,");
	err = kill_now(action);
	if (err)
		finish(action, err);
	return err;
}

size_t executor_in_flight(const struct executor *executor)
{
	return executor ? executor->n : 0;
}

struct exec_action *executor_find(const struct executor *executor, const struct pod *pod)
{
	for (struct exec_action *a = executor ? executor->head : NULL; a; a = a->next)
		if (pod->cgroup_id && a->pod.cgroup_id ? pod->cgroup_id == a->pod.cgroup_id :
							 !strcmp(pod->cgroup_path, a->pod.cgroup_path))
			return a;
	return NULL;
}

struct exec_action *executor_next(const struct executor *executor, const struct exec_action *prev)
{
	return prev ? prev->next : executor->head;
}

const struct pod *executor_action_pod(const struct exec_action *action)
{
	return &action->pod;
}

bool executor_action_hard(const struct exec_action *action)
{
	return action->hard;
}

enum exec_phase executor_action_phase(const struct exec_action *action)
{
	return action->phase;
}

void *executor_action_owner(const struct exec_action *action)
{
	return action->owner;
}

int executor_action_kind(const struct exec_action *action)
{
	return action->kind;
}

int64_t executor_action_started_ns(const struct exec_action *action)
{
	return action->start_ns;
}

void executor_free(struct executor *executor)
{
	if (!executor)
		return;
	while (executor->head) {
		struct exec_action *action = executor->head;

		log_warn("kill: leaving %s %s", action->pod.cgroup_path,
			 action->phase == EXEC_HELD ? "before its SIGTERM (not signalled)" :
			 action->phase == EXEC_GRACE ? "in its grace (not killed)" :
						       "after cgroup.kill (the kernel finishes it)");
		action_unlink(action);
		if (action->release)
			action->release(action->ctx);
		free(action);
	}
	free(executor);
}
