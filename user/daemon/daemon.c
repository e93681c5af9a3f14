// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The daemon: set-up, the loop's own sources (signals, timers, PSI), run and exit. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "daemon/daemon_parts.h"
#include "core/arith.h"
#include "kube/kube.h"
#include "ops/eventlog.h"
#include "ops/metrics.h"
#include "ops/notify_hook.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "sys/notify.h"
#include "sys/psi.h"
#include "sys/subprocess.h"

int daemon_init(struct daemon *daemon, const struct evictd_config *config, int argc, char **argv)
{
	int err;

	memset(daemon, 0, sizeof(*daemon));
	daemon->argc = argc;
	daemon->argv = argv;
	daemon->logged_threshold_index = -1;
	pressure_watch_init(&daemon->pressure);
	warn_state_init(&daemon->warn);
	warn_state_init(&daemon->warn_ahead);
	pacing_init(&daemon->memory_pacing);
	err = loop_new(&daemon->loop);
	if (!err)
		err = executor_new(&daemon->executor, daemon->loop);
	if (!err && !(daemon->notify = notify_hook_new(daemon->loop)))
		err = -ENOMEM;
	if (err)
		return err;
	/* The instance lock is held (main.c) unless --once --dry-run, which starts nothing. */
	if (!(config->once && config->dry_run)) {
		const char *state_dir = config->state_dir[0] ? config->state_dir : "/run/evictd";

		subprocess_track(state_dir);	/* kills what a crashed evictd left running */
		grace_store_open(&daemon->grace_store, state_dir, NULL);
	}
	/* The API client outlives reloads: made once, from the first configuration. */
	daemon_resolve_node_name(daemon, config);
	daemon_kube_setup(daemon, config);
	return policy_new(&daemon->policy, config, &(struct policy_deps){
		.kube = daemon->kube,
		.node_name = daemon->node_name,
		.pressure = &daemon->pressure,
	});
}

void daemon_destroy(struct daemon *daemon)
{
	if (daemon->loop)
		daemon_disk_usage_cancel(daemon);
	executor_free(daemon->executor);
	daemon->executor = NULL;
	notify_hook_free(daemon->notify);
	pressure_watch_free(&daemon->pressure);
	daemon->notify = NULL;
	grace_store_close(daemon->grace_store);
	daemon->grace_store = NULL;
	subprocess_track(NULL);
	policy_unref(daemon->policy);
	daemon->policy = NULL;
	free(daemon->can_evict);
	daemon->can_evict = NULL;
	loop_free(daemon->loop);
	daemon->loop = NULL;
}

static void on_signal(void *ctx, int fd, uint32_t revents)
{
	struct daemon *daemon = ctx;
	struct signalfd_siginfo info;

	while (read(fd, &info, sizeof(info)) == sizeof(info)) {
		if (info.ssi_signo == SIGHUP) {
			notify_reloading();
			if (daemon->ops)
				eventlog_reopen(daemon_ops_eventlog(daemon));
			if (daemon_reload(daemon) == 0)
				daemon->pending_mask |= SIGNAL_MASK_ALL;
			/* New roots, maybe a fixed mount: forget a refused kill and look again. */
			daemon_can_evict_note_kill_error(daemon, 0, NULL);
			daemon_can_evict_check(daemon);
			notify_ready("reloaded: %zu thresholds", daemon->policy->config.n_thresholds);
			continue;
		}
		log_info("received %s, exiting", strsignal((int)info.ssi_signo));
		daemon->stop = true;
	}
}

static void on_housekeeping(void *ctx)
{
	struct daemon *daemon = ctx;

	daemon->pending_mask |= SIGNAL_MASK_ALL;
	daemon->housekeeping_due = true;
}

static void on_grace_timer(void *ctx)
{
	struct daemon *daemon = ctx;

	daemon->pending_mask |= SIGNAL_MASK_ALL;
}

/* A soft threshold becomes actionable when its grace period ends, which no kernel event
 * announces: wake up exactly then instead of at the next housekeeping tick. */
static void arm_grace_timer(struct daemon *daemon)
{
	const struct policy *policy = daemon->policy;
	const struct eviction_engine *engine = &policy->engine;
	int64_t earliest = LOOP_NO_DEADLINE;

	for (size_t i = 0; i < engine->n_thresholds; i++) {
		int64_t deadline;

		if (engine->thresholds[i].hard || !policy->eval.met[i] || policy->eval.actionable[i] ||
		    engine->state.first_observed_ns[i] < 0)
			continue;
		deadline = sat_add_i64(engine->state.first_observed_ns[i], engine->thresholds[i].grace_period_ns);
		if (deadline < earliest)
			earliest = deadline;
	}
	loop_timer_set(daemon->grace_timer, earliest);
}

static void on_psi(void *ctx, int fd, uint32_t revents)
{
	struct daemon *daemon = ctx;

	if (revents & EPOLLERR) {
		log_warn("PSI trigger on %s gone; relying on the other sources", PSI_MEMORY_PATH);
		return;
	}
	daemon->psi_wakeups++;
	daemon->pending_mask |= SIGNAL_MASK_MEMORY;
}

static int setup_loop(struct daemon *daemon)
{
	const struct evictd_config *config = &daemon->policy->config;
	char psi_path[PATH_MAX + 32];
	sigset_t mask;
	int fd;

	/* main() blocked these before any thread existed; the signalfd receives them. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0) {
		log_err("signalfd: %m");
		return -errno;
	}
	if (!loop_add_fd(daemon->loop, fd, EPOLLIN, true, on_signal, daemon)) {
		close(fd);
		return -EIO;
	}
	/* The backstop: everything is re-read at least every housekeeping interval. */
	if (!loop_add_periodic(daemon->loop, config->housekeeping_interval_ns, on_housekeeping, daemon))
		return -EIO;
	daemon->grace_timer = loop_add_timer(daemon->loop, LOOP_NO_DEADLINE, on_grace_timer, daemon);
	if (!daemon->grace_timer)
		return -EIO;

	/* PSI: the kernel wakes us when tasks stall on memory, i.e. near the watermarks. */
	snprintf(psi_path, sizeof(psi_path), "%s%s", config->root, PSI_MEMORY_PATH);
	fd = config->no_psi ? -ENOTSUP : psi_trigger_open_memory(psi_path);
	if (fd >= 0 && loop_add_fd(daemon->loop, fd, EPOLLPRI, true, on_psi, daemon))
		daemon->psi_enabled = true;
	else if (fd >= 0)
		close(fd);

	daemon_bpf_setup(daemon);
	return 0;
}

bool daemon_first_in_line(struct daemon *daemon, enum ev_signal *signal, char *buf, size_t len)
{
	struct policy *policy = daemon->policy;
	const struct threshold *threshold = policy_threshold(policy);
	const struct pod *pod;
	char reason[256];

	*signal = threshold ? threshold->signal : EV_SIGNAL_MEMORY_AVAILABLE;
	if (!policy->pods) {
		snprintf(buf, len, "nothing evictable: no cgroup v2 tree");
		return false;
	}
	pod = policy_first_in_line(policy, *signal);
	if (!pod) {
		snprintf(buf, len, "nothing evictable: %s", policy->config.workload_roots.n || 
			 policy->config.profile_effective == PROFILE_KUBERNETES ? "no evictable workload" :
			 "no workload roots (no system.slice or user slice)");
		return false;
	}
	eventlog_rank_reason(*signal, &policy->rank_options, pod, reason, sizeof(reason));
	snprintf(buf, len, "%.255s (%.255s): %s", pod->name[0] ? pod->name : pod->cgroup_path, pod->cgroup_path,
		 reason);
	return true;
}

static void log_round(struct daemon *daemon)
{
	struct policy *policy = daemon->policy;

	if (policy->config.dry_run || log_get_level() >= LOGLEVEL_DEBUG)
		report_live(stdout, &policy->engine, &policy->obs, &policy->eval, &policy->decision);
	/* A dry run says who it would kill first, and why, before anything needs it, and again
	 * when that changes (doc/DESIGN.md "Profiles": `make run` on a plain host). */
	if (policy->config.dry_run) {
		char line[sizeof(daemon->first_in_line_said)];
		enum ev_signal signal;

		daemon_first_in_line(daemon, &signal, line, sizeof(line));
		if (strcmp(line, daemon->first_in_line_said)) {
			snprintf(daemon->first_in_line_said, sizeof(daemon->first_in_line_said), "%s", line);
			log_info("[dry-run] first in line for %s: %s", signal_name(signal), line);
		}
	}
}

/* After each batch of wake-ups: one evaluation, reading only what they concern. */
static void after_batch(void *ctx)
{
	struct daemon *daemon = ctx;
	struct policy *policy;
	uint32_t mask = daemon->pending_mask;

	metrics_set_loop(daemon_ops_metrics(daemon), loop_longest_iteration_ns(daemon->loop),
			 loop_last_iteration_ns(daemon->loop), executor_in_flight(daemon->executor));
	/* doc/DESIGN.md "Cannot act": each tick, and at once after a kill refused for permission. */
	if ((daemon->housekeeping_due || daemon_can_evict_recheck_due(daemon)) && !daemon->stop)
		daemon_can_evict_check(daemon);
	if (!mask || daemon->stop)
		return;
	daemon->pending_mask = 0;
	if (daemon->housekeeping_due)
		policy_read_self_cgroup(daemon->policy);	/* we may have been moved */
	daemon_handle(daemon, mask == SIGNAL_MASK_ALL ? 0 : mask);
	daemon->wake_ktime_ns = 0;
	daemon->batch_ns = 0;
	policy = daemon->policy;
	/* Keep the ranking evictctl shows current even without pressure. */
	if (daemon->housekeeping_due && policy->decision.threshold_index < 0)
		policy_rank(policy, EV_SIGNAL_MEMORY_AVAILABLE);
	daemon_bpf_update_steps(daemon);
	arm_grace_timer(daemon);
	daemon_ops_update_metrics(daemon);
	if (daemon->housekeeping_due)
		log_round(daemon);
	daemon->housekeeping_due = false;
}

/*
 * --realtime-priority (doc/DESIGN.md "The loop never waits"): the loop thread alone runs
 * SCHED_FIFO, so a wake-up is not queued behind the node's other work (on the bench host the
 * record -> handler step had a p95 of 0.4 ms under load). Bounded by the BPF rate limit (one
 * memory wake-up per 100 us at most) and by the kernel's RT throttling (sched_rt_runtime_us).
 * SCHED_RESET_ON_FORK: threads and children made later start as SCHED_OTHER (sched_fork() in
 * kernel/sched/core.c); the threads already running are others and keep their policy.
 */
static void loop_realtime(int priority)
{
	struct sched_param param = { .sched_priority = priority };

	if (priority <= 0) {
		/* Set before start (systemd's CPUSchedulingPolicy=, as the shipped unit does). */
		int policy = sched_getscheduler(0);
		int base = policy < 0 ? policy : policy & ~SCHED_RESET_ON_FORK;

		if ((base == SCHED_FIFO || base == SCHED_RR) && !sched_getparam(0, &param))
			log_info("the event loop runs %s at priority %d, as it was started%s",
				 base == SCHED_FIFO ? "SCHED_FIFO" : "SCHED_RR", param.sched_priority,
				 policy & SCHED_RESET_ON_FORK ? "" :
				 " (without reset-on-fork: threads and children inherit it)");
		return;
	}
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &param)) {
		log_warn("--realtime-priority=%d: sched_setscheduler(SCHED_FIFO): %m; the loop keeps "
			 "its normal priority (needs CAP_SYS_NICE, and no RestrictRealtime=yes in the unit)",
			 priority);
		return;
	}
	log_info("the event loop runs SCHED_FIFO at priority %d", priority);
}

int daemon_run(struct daemon *daemon)
{
	struct policy *policy = daemon->policy;
	int status = 0;

	if (setup_loop(daemon) || daemon_ops_open(daemon)) {
		status = 1;
		goto cleanup;
	}
	/* Said once at start, loudly, before "running": an evictd that cannot kill protects nothing. */
	daemon_can_evict_check(daemon);
	daemon_shutdown_setup(daemon);
	daemon_kube_watch_policy(daemon);
	loop_realtime((int)policy->config.realtime_priority);
	log_info("evictd running%s: %zu thresholds, housekeeping every %lld ms, PSI %s, BPF %s",
		 policy->config.dry_run ? " in dry-run mode" : "", policy->config.n_thresholds,
		 (long long)(policy->config.housekeeping_interval_ns / 1000000),
		 daemon->psi_enabled ? "on" : "off", daemon->bpf_state);
	daemon->pending_mask = SIGNAL_MASK_ALL;
	daemon->housekeeping_due = true;
	after_batch(daemon);
	notify_ready("watching %zu thresholds%s", daemon->policy->config.n_thresholds,
		     daemon->policy->config.dry_run ? " (dry run)" : "");

	while (!daemon->stop) {
		int n = loop_run_once(daemon->loop, -1, after_batch, daemon);

		if (n < 0) {
			errno = -n;
			log_err("epoll_wait: %m");
			status = 1;
			break;
		}
	}
cleanup:
	notify_stopping();
	daemon_shutdown_teardown(daemon);
	daemon_kube_teardown(daemon);
	daemon_ops_close(daemon);
	/* A clean exit removes the pins; a crash leaves them for the next start to carry over. */
	bpf_loader_destroy(daemon->bpf, true);
	daemon->bpf = NULL;
	daemon_pod_psi_close(daemon);
	return status;
}

int daemon_once(struct daemon *daemon)
{
	int status = 0;

	/* --once acts on its decision too, as the daemon would: wait here for the kills and the
	 * reclaim steps (each bounded by its own deadlines), and decide again after each. */
	/* The pods file is parsed off the loop: --once decides on it, not on an empty table. */
	if (daemon->policy->pods)
		pods_meta_wait(daemon->policy->pods, 30LL * 1000000000);
	for (int round = 0; round < 16; round++) {
		daemon->pending_mask = 0;
		daemon_handle(daemon, 0);
		while (executor_in_flight(daemon->executor) || reclaim_busy(&daemon->policy->reclaim) ||
		       daemon->disk_job)
			if (loop_run_once(daemon->loop, -1, NULL, NULL) < 0)
				return 1;
		if (!daemon->pending_mask)
			break;
	}
	if (daemon->evictions_failed || daemon->evictions_stale)
		status = 1;
	return status;
}
