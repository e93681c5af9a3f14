// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The daemon's graceful node shutdown (doc/DESIGN.md §7): logind, the group sequence, its kills
 * through the executor, reporting. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>

#include "daemon/daemon_parts.h"
#include "kube/kube.h"
#include "kube/kube_report.h"
#include "ops/metrics.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "sys/logind.h"

/* How long the end of a shutdown waits for its API reports before logind may go on. */
#define SHUTDOWN_REPORT_WAIT_NS (5LL * 1000000000)
/* How long systemd is asked for logind's shutdown job after the release. */
#define SHUTDOWN_KIND_WAIT_NS (10LL * 1000000000)

/* A pod whose termination ended as it started (its cgroup was already empty): reported to
 * the sequence from the loop, as shutdown_kill_ops requires, not from inside start(). */
struct ended_at_start {
	struct daemon *daemon;
	uint64_t token;
	struct loop_source *timer;
};

/* One pod's termination in flight: its status patch's answer, which the SIGTERM is held for. */
struct shutdown_kill {
	struct daemon *daemon;
	struct kube_status_wait *wait;
	bool reported;			/* its Failed/Terminated patch is queued */
};

static void shutdown_kill_free(void *ctx)
{
	struct shutdown_kill *kill = ctx;

	kube_status_wait_free(kill->wait);
	free(kill);
}

/* exec_request.handed_over: the patch landed, the kubelet stops the pod (doc/DESIGN.md §8). */
static bool shutdown_handed_over(void *ctx)
{
	struct shutdown_kill *kill = ctx;

	return kill->daemon->policy->config.kube_handover_termination &&
	       kube_status_wait_result(kill->wait) == 0;
}

static enum kube_node_fate node_fate(enum logind_shutdown_kind kind)
{
	return kind == LOGIND_SHUTDOWN_POWEROFF ? KUBE_NODE_GOING_AWAY :
	       kind == LOGIND_SHUTDOWN_REBOOT ? KUBE_NODE_COMING_BACK : KUBE_NODE_FATE_UNKNOWN;
}

/* systemd < 255: logind queued its job once the lock went; the kind is known now. */
static void on_shutdown_kind(void *ctx, enum logind_shutdown_kind kind)
{
	struct daemon *daemon = ctx;

	if (!daemon->shutdown_kind_pending || !daemon->kube_report)
		return;
	daemon->shutdown_kind_pending = false;
	kube_report_shutdown_end(daemon->kube_report, daemon->shutdown_all_pods_gone, node_fate(kind));
}

static void shutdown_advance(struct daemon *daemon)
{
	bool release = false;
	int64_t next = shutdown_step(&daemon->shutdown, clock_monotonic_ns(), &release);

	if (release && daemon->kube_report) {
		enum logind_shutdown_kind kind = daemon->logind ? logind_shutdown_kind(daemon->logind) :
							  LOGIND_SHUTDOWN_UNKNOWN;

		/* systemd >= 255 said which shutdown this is: the out-of-service decision now, so
		 * that the taint goes out before the lock. Otherwise it is asked after the release
		 * (daemon_shutdown_release_now). */
		daemon->shutdown_kind_pending = kind == LOGIND_SHUTDOWN_UNKNOWN && daemon->logind;
		if (!daemon->shutdown_kind_pending)
			kube_report_shutdown_end(daemon->kube_report, daemon->shutdown_all_pods_gone,
						 node_fate(kind));
		/* Get the pod and node updates out before the network goes down, without waiting
		 * here: the client says when it is idle, a timer bounds it. */
		daemon->release_pending = true;
		kube_client_request_idle_notify(daemon->kube);
		loop_timer_set(daemon->release_timer, clock_monotonic_ns() + SHUTDOWN_REPORT_WAIT_NS);
	} else if (release && daemon->logind) {
		logind_release(daemon->logind);
	}
	loop_timer_set(daemon->shutdown_timer, next == SHUTDOWN_NO_DEADLINE ? LOOP_NO_DEADLINE : next);
	if (daemon->ops)
		metrics_set_shutdown_times(daemon_ops_metrics(daemon),
					   shutdown_start_time_seconds(&daemon->shutdown),
					   shutdown_end_time_seconds(&daemon->shutdown));
}

void daemon_shutdown_release_now(struct daemon *daemon)
{
	if (!daemon->release_pending)
		return;
	daemon->release_pending = false;
	if (daemon->kube)
		kube_client_cancel_idle_notify(daemon->kube);
	loop_timer_set(daemon->release_timer, LOOP_NO_DEADLINE);
	if (daemon->logind)
		logind_release(daemon->logind);
	/* The kind of shutdown shows as the job logind queues now (logind.h). */
	if (daemon->shutdown_kind_pending && daemon->logind)
		logind_query_shutdown_kind(daemon->logind, SHUTDOWN_KIND_WAIT_NS, on_shutdown_kind, daemon);
}

static void on_release_deadline(void *ctx)
{
	struct daemon *daemon = ctx;

	if (daemon->release_pending)
		log_warn("shutdown: the API reports are not all out after %lld s; releasing the inhibitor",
			 (long long)(SHUTDOWN_REPORT_WAIT_NS / 1000000000));
	daemon_shutdown_release_now(daemon);
}

static void on_kill_done(void *ctx, const struct exec_action *action, int err,
			 const struct kill_result *result)
{
	struct shutdown_kill *kill = ctx;
	struct daemon *daemon = kill->daemon;
	uint64_t token = (uint64_t)(uintptr_t)executor_action_owner(action);

	/* Its status could not be queued before the SIGTERM: after the kill, as before. */
	if (!err && !kill->reported && daemon->kube_report && !daemon->policy->config.workload_roots.n)
		kube_report_shutdown_pod(daemon->kube_report, executor_action_pod(action), NULL);
	shutdown_kill_free(kill);
	shutdown_kill_done(&daemon->shutdown, token, err);
	shutdown_advance(daemon);
}

static void on_ended_at_start(void *ctx)
{
	struct ended_at_start *ended = ctx;
	struct daemon *daemon = ended->daemon;

	loop_remove(daemon->loop, ended->timer);
	shutdown_kill_done(&daemon->shutdown, ended->token, 0);
	free(ended);
	shutdown_advance(daemon);
}

/*
 * shutdown_kill_ops.start: the pod's status Failed/Terminated first, the SIGTERM held for its
 * answer (at most --kube-eviction-status-wait: a SIGTERM sent before a late answer is the
 * kubelet's too, a second one), then handed to the kubelet when it landed (its
 * pod worker stops the pod with preStop and STOPSIGNAL instead of restarting it in place when
 * its sandbox dies, tests/cluster/node/scenario-g.sh) or SIGTERM; cgroup.kill at the end of
 * grace_ns. Never waits.
 */
static int start_kill(void *ctx, uint64_t token, const struct pod *pod, int64_t grace_ns)
{
	struct daemon *daemon = ctx;
	const struct evictd_config *config = &daemon->policy->config;
	struct ended_at_start *ended;
	struct shutdown_kill *kill = calloc(1, sizeof(*kill));
	int err;

	if (!kill)
		return -ENOMEM;
	kill->daemon = daemon;
	if (daemon->kube_report && !config->workload_roots.n && !config->dry_run)
		kill->reported = kube_report_shutdown_pod(daemon->kube_report, pod,
							  config->kube_eviction_status_wait_ns > 0 ? &kill->wait : NULL) == 0;
	err = executor_start(daemon->executor, &daemon->policy->kill, &(struct exec_request){
		.pod = pod,
		.mode = KILL_SOFT,
		.grace_ns = grace_ns,
		.done = on_kill_done,
		.ctx = kill,
		.owner = (void *)(uintptr_t)token,
		.kind = DAEMON_ACTION_SHUTDOWN,
		.any_priority = true,
		.hold_fd = kube_status_wait_fd(kill->wait),
		.hold_ns = kill->wait ? config->kube_eviction_status_wait_ns : 0,
		.handed_over = shutdown_handed_over,
		.release = shutdown_kill_free,
	}, NULL);

	if (err)
		shutdown_kill_free(kill);	/* done is not called */
	if (err <= 0)
		return err;
	ended = calloc(1, sizeof(*ended));
	if (!ended)
		return -ENOMEM;
	*ended = (struct ended_at_start){ .daemon = daemon, .token = token };
	ended->timer = loop_add_timer(daemon->loop, clock_monotonic_ns(), on_ended_at_start, ended);
	if (!ended->timer) {
		free(ended);
		return -ENOMEM;
	}
	return 0;
}

static const struct shutdown_kill_ops executor_kill_ops = {
	.start = start_kill,
};

static void on_prepare_for_shutdown(void *ctx, bool start)
{
	struct daemon *daemon = ctx;
	struct policy *policy = daemon->policy;
	struct pod **pods = NULL;
	size_t n = 0;

	if (!start) {
		daemon->shutdown_kind_pending = false;
		shutdown_cancel(&daemon->shutdown, clock_monotonic_ns());
		if (daemon->kube_report)
			kube_report_shutdown_cancel(daemon->kube_report);
		shutdown_advance(daemon);
		return;
	}
	daemon->shutdown_all_pods_gone = true;
	if (daemon->kube_report)
		kube_report_shutdown_begin(daemon->kube_report);
	/* The sequence copies the pods; the refresh also drops the decision's pointers. */
	if (policy_refresh_pods(policy) == 0)
		pods = pods_list(policy->pods, &n);
	/* On failure do not hold the node up: let the shutdown proceed. */
	if (shutdown_begin(&daemon->shutdown, clock_monotonic_ns(), pods, n) == -ENOMEM && daemon->logind)
		logind_release(daemon->logind);
	shutdown_advance(daemon);
}

static void on_shutdown_pod_done(void *ctx, const struct pod *pod, int err)
{
	struct daemon *daemon = ctx;

	if (err) {
		daemon->shutdown_all_pods_gone = false;
		return;
	}
	/* Its status went out when its termination began (start_kill, on_kill_done). */
	(void)pod;
}

static void on_logind(void *ctx, int fd, uint32_t revents)
{
	struct daemon *daemon = ctx;

	logind_process(daemon->logind);
}

static void on_shutdown_timer(void *ctx)
{
	shutdown_advance(ctx);
}

int daemon_shutdown_setup(struct daemon *daemon)
{
	const struct evictd_config *config = &daemon->policy->config;
	int err;

	if (!daemon->policy->pods) {
		if (config->shutdown_grace_period_ns || config->n_shutdown_groups)
			log_err("graceful node shutdown is configured but there is no cgroup v2 tree: off");
		return 0;
	}
	err = shutdown_init(&daemon->shutdown, &(struct shutdown_options){
		.config = config,
		.ops = &executor_kill_ops,
		.ops_ctx = daemon,
		.state_dir = config->state_dir,
		.pod_done = on_shutdown_pod_done,
		.pod_done_ctx = daemon,
	});
	if (err) {
		log_err("graceful node shutdown: %s; off", strerror(-err));
		return err;
	}
	daemon->shutdown_ready = true;
	if (daemon->ops)
		metrics_set_shutdown_times(daemon_ops_metrics(daemon),
					   shutdown_start_time_seconds(&daemon->shutdown),
					   shutdown_end_time_seconds(&daemon->shutdown));
	if (!shutdown_enabled(&daemon->shutdown))
		return 0;
	for (size_t g = 0; g < daemon->shutdown.plan.n_groups; g++)
		log_info("shutdown: group %zu: priority >= %d, %lld s", g + 1,
			 daemon->shutdown.plan.groups[g].priority,
			 (long long)(daemon->shutdown.plan.groups[g].period_ns / 1000000000));
	daemon->shutdown_timer = loop_add_timer(daemon->loop, LOOP_NO_DEADLINE, on_shutdown_timer, daemon);
	daemon->release_timer = loop_add_timer(daemon->loop, LOOP_NO_DEADLINE, on_release_deadline, daemon);
	if (!daemon->shutdown_timer || !daemon->release_timer) {
		log_err("graceful node shutdown: no timer: %m; off");
		return -errno;
	}
	/* logind_open reconnects by itself every second if the bus or logind is not there. */
	err = logind_open(&daemon->logind, &(struct logind_options){
		.inhibit_delay_ns = daemon->shutdown.plan.total_ns,
		.dropin_dir = config->logind_dropin_dir,
		.prepare_for_shutdown = on_prepare_for_shutdown,
		.ctx = daemon,
	});
	if (err) {
		log_err("graceful node shutdown: cannot start the logind client: %s; off", strerror(-err));
		daemon->logind = NULL;
		return err;
	}
	daemon->logind_source = loop_add_fd(daemon->loop, logind_fd(daemon->logind), EPOLLIN, false,
					    on_logind, daemon);
	if (!daemon->logind_source) {
		log_err("graceful node shutdown: cannot watch the bus: %m; off");
		return -errno;
	}
	return 0;
}

/* Stopping while the kind of shutdown is still asked of systemd (systemd < 255): the power-off
 * that stops evictd is the very job being waited for, and its SIGTERM can come before the
 * ListJobs answer. The loop has stopped, so waiting here blocks nothing: up to
 * SHUTDOWN_EXIT_KIND_WAIT_NS for the answer, then the out-of-service decision, whose request
 * daemon_kube_teardown drains. */
#define SHUTDOWN_EXIT_KIND_WAIT_NS (1500LL * 1000000)

static void finish_kind_query(struct daemon *daemon)
{
	int64_t end = clock_monotonic_ns() + SHUTDOWN_EXIT_KIND_WAIT_NS;

	if (!daemon->logind || !daemon->shutdown_kind_pending)
		return;
	if (daemon->release_pending)
		daemon_shutdown_release_now(daemon);	/* asks systemd */
	while (daemon->shutdown_kind_pending && clock_monotonic_ns() < end) {
		struct pollfd pfd = { .fd = logind_fd(daemon->logind), .events = POLLIN };

		if (poll(&pfd, 1, 50) > 0)
			logind_process(daemon->logind);
	}
	if (daemon->shutdown_kind_pending)
		log_warn("shutdown: stopping before systemd said whether the node powers off; no "
			 "out-of-service taint");
}

void daemon_shutdown_teardown(struct daemon *daemon)
{
	finish_kind_query(daemon);
	loop_remove(daemon->loop, daemon->logind_source);
	daemon->logind_source = NULL;
	if (daemon->logind)
		logind_close(daemon->logind);	/* releases the lock */
	daemon->logind = NULL;
	if (daemon->shutdown_ready)
		shutdown_destroy(&daemon->shutdown);
	daemon->shutdown_ready = false;
	loop_remove(daemon->loop, daemon->shutdown_timer);
	daemon->shutdown_timer = NULL;
	loop_remove(daemon->loop, daemon->release_timer);
	daemon->release_timer = NULL;
}
