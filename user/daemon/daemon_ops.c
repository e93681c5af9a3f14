// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The daemon's operations side: decision log, metrics, control socket, watchdog. */
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
#include "ops/control.h"
#include "ops/eventlog.h"
#include "ops/metrics.h"
#include "sys/notify.h"

static int64_t realtime_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

void daemon_ops_record(struct daemon *daemon, enum eventlog_action action, int64_t latency_ns,
		       const char *error)
{
	const struct threshold *threshold = &daemon->engine.thresholds[daemon->decision.threshold_index];
	static const enum metrics_eviction_result results[] = {
		[EVENTLOG_KILLED] = METRICS_RESULT_KILLED,
		[EVENTLOG_FAILED] = METRICS_RESULT_FAILED,
		[EVENTLOG_DRY_RUN] = METRICS_RESULT_DRY_RUN,
	};
	struct eventlog_decision entry = {
		.signal = threshold->signal,
		.hard = threshold->hard,
		.value = daemon->obs.signal[threshold->signal].available,
		.threshold = daemon->eval.threshold_value[daemon->decision.threshold_index],
		.threshold_text = threshold->value.text,
		.candidates = daemon->candidates,
		.n_candidates = daemon->n_candidates,
		.rank_options = &daemon->rank_options,
		.victim = daemon->decision.victim,
		.action = action,
		.latency_ns = latency_ns,
		.reason = daemon->decision.reason,
		.error = error,
		.dry_run = daemon->config.dry_run,
	};

	if (!daemon->ops)
		return;
	/* Counted once per logged decision, not once per tick of the same situation. */
	if (eventlog_record(daemon->ops->eventlog, &entry) == 1 &&
	    (action == EVENTLOG_KILLED || action == EVENTLOG_FAILED || action == EVENTLOG_DRY_RUN))
		metrics_record_eviction(daemon->ops->metrics, threshold->signal, results[action], latency_ns);
}

void daemon_ops_update_metrics(struct daemon *daemon)
{
	struct daemon_ops *ops = daemon->ops;
	struct metrics_snapshot *snap;
	uint64_t oom_kills;

	if (!ops)
		return;
	snap = &ops->snapshot;
	metrics_snapshot_fill(snap, &daemon->engine, &daemon->obs, &daemon->eval);
	ops->last_evaluation_unix_ns = realtime_ns();
	snap->evaluations = daemon->evaluations;
	snap->last_evaluation_unix_ns = ops->last_evaluation_unix_ns;
	snap->dry_run = daemon->config.dry_run;
	snap->kernel_oom_kills_known = metrics_read_kernel_oom_kills(daemon->config.root, &oom_kills) == 0;
	snap->kernel_oom_kills = snap->kernel_oom_kills_known ? oom_kills : 0;
	snap->bpf_enabled = daemon->bpf != NULL;
	snap->bpf_programs_attached = daemon->bpf ? bpf_loader_attached_count(daemon->bpf) : 0;
	metrics_update(ops->metrics, snap);
}

static int ops_view(void *ctx, enum control_command command, struct control_view *view)
{
	struct daemon *daemon = ctx;
	size_t n_pods = 0;
	struct pod **pods = daemon->pods ? pods_list(daemon->pods, &n_pods) : NULL;

	*view = (struct control_view){
		.config = &daemon->config,
		.engine = &daemon->engine,
		.obs = &daemon->obs,
		.eval = &daemon->eval,
		.decision = &daemon->decision,
		.pods = pods,
		.n_pods = n_pods,
		.rank_options = &daemon->rank_options,
		.eventlog = daemon->ops->eventlog,
		.bpf = {
			.enabled = daemon->bpf != NULL,
			.programs_attached = daemon->bpf ? bpf_loader_attached_count(daemon->bpf) : 0,
			.pin_dir = daemon->bpf ? bpf_loader_pin_dir(daemon->bpf) : NULL,
			.reason = daemon->bpf ? NULL : daemon->bpf_state,
		},
		.cgroup_tree = daemon->pods != NULL,
		.mode = daemon->config.workload_roots.n ? "standalone" : "kubernetes",
		.node_name = daemon->config.node_name,
		.uptime_ns = daemon->now_ns() - daemon->ops->started_ns,
		.evaluations = daemon->evaluations,
		.last_evaluation_unix_ns = daemon->ops->last_evaluation_unix_ns,
		.evictions = daemon->evictions,
		.evictions_failed = daemon->evictions_failed,
	};
	return 0;
}

static void on_control(struct daemon *daemon, struct loop_source *source, uint32_t revents)
{
	control_handle_ready(daemon->ops->control);
}

static void on_watchdog(struct daemon *daemon, struct loop_source *source, uint32_t revents)
{
	daemon_drain_timerfd(source->fd, "watchdog");
	notify_watchdog();
}

int daemon_ops_open(struct daemon *daemon)
{
	static struct daemon_ops ops;
	const struct evictd_config *config = &daemon->config;
	int64_t ping_ns = notify_watchdog_interval_ns();
	int err;

	memset(&ops, 0, sizeof(ops));
	ops.started_ns = daemon->now_ns();
	daemon->ops = &ops;
	err = eventlog_open(&ops.eventlog, &(struct eventlog_options){ .path = config->event_log });
	if (err)
		return err;
	/* /healthz: stale once no evaluation for three housekeeping rounds plus the longest a kill
	 * may legitimately block the loop. */
	err = metrics_open(&ops.metrics, &(struct metrics_options){
		.address = config->metrics_address,
		.version = "0.1.0",
		.stale_after_ns = 3 * config->housekeeping_interval_ns + config->kill_timeout_ns +
				  config->max_pod_grace_period_s * 1000000000,
	});
	if (err)
		return err;
	err = control_open(&ops.control, &(struct control_options){
		.path = config->control_socket, .view = ops_view, .ctx = daemon, .version = "0.1.0" });
	if (err)
		return err;
	err = daemon_add_borrowed_source(daemon, control_fd(ops.control), EPOLLIN, on_control, NULL);
	if (err)
		return err;
	if (ping_ns > 0) {
		struct itimerspec timer = {
			.it_interval = { ping_ns / 1000000000, ping_ns % 1000000000 },
			.it_value = { ping_ns / 1000000000, ping_ns % 1000000000 },
		};
		int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);

		if (fd < 0 || timerfd_settime(fd, 0, &timer, NULL) ||
		    daemon_add_source(daemon, fd, EPOLLIN, on_watchdog, NULL)) {
			log_err("watchdog timerfd: %m");
			return -EIO;
		}
	}
	return 0;
}

void daemon_ops_close(struct daemon *daemon)
{
	if (!daemon->ops)
		return;
	control_close(daemon->ops->control);
	metrics_close(daemon->ops->metrics);
	eventlog_close(daemon->ops->eventlog);
	daemon->ops = NULL;
}
