// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The daemon's graceful node shutdown (DESIGN.md §7): logind, the group sequence, reporting. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/daemon_parts.h"
#include "sys/log.h"
#include "kube/kube_report.h"
#include "sys/logind.h"
#include "ops/metrics.h"
#include "act/shutdown.h"

/* Advance the sequence, release the inhibitor when it says so, arm the timer for its next
 * deadline. */
static void shutdown_advance(struct daemon *daemon)
{
	bool release = false;
	int64_t next = shutdown_step(&daemon->shutdown, daemon_monotonic_ns(), &release);

	if (release && daemon->kube_report) {
		kube_report_shutdown_end(daemon->kube_report, daemon->shutdown_all_pods_gone);
		/* Get the pod and node updates out before the network goes down. */
		kube_client_drain(daemon->kube, 5LL * 1000000000);
	}
	if (release && daemon->logind)
		logind_release(daemon->logind);
	daemon_arm_timer_at(daemon->shutdown_timer_fd, next == SHUTDOWN_NO_DEADLINE ? INT64_MAX : next,
			    "shutdown");
	if (daemon->ops)
		metrics_set_shutdown_times(daemon->ops->metrics,
					   shutdown_start_time_seconds(&daemon->shutdown),
					   shutdown_end_time_seconds(&daemon->shutdown));
}

static void on_prepare_for_shutdown(void *ctx, bool start)
{
	struct daemon *daemon = ctx;
	struct pod **pods = NULL;
	size_t n = 0;

	if (!start) {
		shutdown_cancel(&daemon->shutdown, daemon_monotonic_ns());
		if (daemon->kube_report)
			kube_report_shutdown_cancel(daemon->kube_report);
		shutdown_advance(daemon);
		return;
	}
	daemon->shutdown_all_pods_gone = true;
	if (daemon->kube_report)
		kube_report_shutdown_begin(daemon->kube_report);
	if (daemon->pods && pods_refresh(daemon->pods) == 0)
		pods = pods_list(daemon->pods, &n);
	/* On failure do not hold the node up: let the shutdown proceed. */
	if (shutdown_begin(&daemon->shutdown, daemon_monotonic_ns(), pods, n) == -ENOMEM && daemon->logind)
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
	if (daemon->kube_report && !daemon->config.workload_roots.n)
		kube_report_shutdown_pod(daemon->kube_report, pod);
}

static void on_logind(struct daemon *daemon, struct loop_source *source, uint32_t revents)
{
	logind_process(daemon->logind);
}

static void on_shutdown_killer(struct daemon *daemon, struct loop_source *source, uint32_t revents)
{
	shutdown_killer_dispatch(daemon->shutdown_killer, &daemon->shutdown);
	shutdown_advance(daemon);
}

static void on_shutdown_timer(struct daemon *daemon, struct loop_source *source, uint32_t revents)
{
	daemon_drain_timerfd(source->fd, "shutdown");
	shutdown_advance(daemon);
}

void daemon_shutdown_setup(struct daemon *daemon)
{
	int err;

	daemon->shutdown_timer_fd = -1;
	if (!daemon->pods) {
		if (daemon->config.shutdown_grace_period_ns || daemon->config.n_shutdown_groups)
			log_err("graceful node shutdown is configured but there is no cgroup v2 tree: off");
		return;
	}
	err = shutdown_killer_new(&daemon->shutdown_killer, &daemon->kill);
	if (err)
		return;
	err = shutdown_init(&daemon->shutdown, &(struct shutdown_options){
		.config = &daemon->config,
		.ops = &shutdown_killer_ops,
		.ops_ctx = daemon->shutdown_killer,
		.state_dir = daemon->config.state_dir,
		.pod_done = on_shutdown_pod_done,
		.pod_done_ctx = daemon,
	});
	if (err) {
		log_err("graceful node shutdown: %s; off", strerror(-err));
		return;
	}
	daemon->shutdown_ready = true;
	if (daemon->ops)
		metrics_set_shutdown_times(daemon->ops->metrics,
					   shutdown_start_time_seconds(&daemon->shutdown),
					   shutdown_end_time_seconds(&daemon->shutdown));
	if (!shutdown_enabled(&daemon->shutdown))
		return;
	for (size_t g = 0; g < daemon->shutdown.plan.n_groups; g++)
		log_info("shutdown: group %zu: priority >= %d, %lld s", g + 1,
			 daemon->shutdown.plan.groups[g].priority,
			 (long long)(daemon->shutdown.plan.groups[g].period_ns / 1000000000));
	daemon->shutdown_timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (daemon->shutdown_timer_fd < 0) {
		log_err("shutdown timerfd: %m");
		return;
	}
	/* logind_open reconnects by itself every second if the bus or logind is not there. */
	err = logind_open(&daemon->logind, &(struct logind_options){
		.inhibit_delay_ns = daemon->shutdown.plan.total_ns,
		.dropin_dir = daemon->config.logind_dropin_dir,
		.prepare_for_shutdown = on_prepare_for_shutdown,
		.ctx = daemon,
	});
	if (err) {
		log_err("graceful node shutdown: cannot start the logind client: %s", strerror(-err));
		daemon->logind = NULL;
		return;
	}
	daemon_add_borrowed_source(daemon, logind_fd(daemon->logind), EPOLLIN, on_logind, NULL);
	daemon_add_borrowed_source(daemon, shutdown_killer_fd(daemon->shutdown_killer), EPOLLIN,
			  on_shutdown_killer, NULL);
	daemon_add_source(daemon, daemon->shutdown_timer_fd, EPOLLIN, on_shutdown_timer, NULL);
}

void daemon_shutdown_teardown(struct daemon *daemon)
{
	if (daemon->logind)
		logind_close(daemon->logind);	/* releases the lock */
	daemon->logind = NULL;
	if (daemon->shutdown_ready)
		shutdown_destroy(&daemon->shutdown);
	daemon->shutdown_ready = false;
	if (daemon->shutdown_killer)
		shutdown_killer_free(daemon->shutdown_killer);
	daemon->shutdown_killer = NULL;
}
