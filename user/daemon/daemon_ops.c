// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The daemon's operations side: decision log, metrics, control socket, watchdog. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "daemon/daemon_parts.h"
#include "ops/control.h"
#include "ops/eventlog.h"
#include "ops/metrics.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "sys/notify.h"

struct daemon_ops {
	struct metrics *metrics;
	struct eventlog *eventlog;
	struct control *control;
	struct metrics_snapshot snapshot;
	int64_t started_ns;
	int64_t last_evaluation_unix_ns;
};

struct eventlog *daemon_ops_eventlog(struct daemon *daemon)
{
	return daemon->ops ? daemon->ops->eventlog : NULL;
}

struct metrics *daemon_ops_metrics(struct daemon *daemon)
{
	return daemon->ops ? daemon->ops->metrics : NULL;
}

struct eventlog_decision daemon_ops_decision_entry(struct daemon *daemon, enum eventlog_action action,
						   int64_t latency_ns, const char *error)
{
	struct policy *policy = daemon->policy;
	const struct threshold *threshold = policy_threshold(policy);

	return (struct eventlog_decision){
		.signal = threshold->signal,
		.hard = threshold->hard,
		.value = policy->obs.signal[threshold->signal].available,
		.threshold = policy->eval.threshold_value[policy->decision.threshold_index],
		.threshold_text = threshold->value.text,
		.candidates = policy->candidates,
		.n_candidates = policy->n_candidates,
		.rank_options = &policy->rank_options,
		.victim = policy->decision.victim,
		.action = action,
		.latency_ns = latency_ns,
		.reason = policy->decision.reason,
		.error = error,
		.dry_run = policy->config.dry_run,
	};
}

void daemon_ops_record(struct daemon *daemon, const struct eventlog_decision *entry)
{
	static const enum metrics_eviction_result results[] = {
		[EVENTLOG_KILLED] = METRICS_RESULT_KILLED,
		[EVENTLOG_FAILED] = METRICS_RESULT_FAILED,
		[EVENTLOG_DRY_RUN] = METRICS_RESULT_DRY_RUN,
	};
	enum eventlog_action action = entry->action;

	if (!daemon->ops)
		return;
	/* Counted once per logged decision, not once per tick of the same situation. */
	if (eventlog_record(daemon->ops->eventlog, entry) == 1 &&
	    (action == EVENTLOG_KILLED || action == EVENTLOG_FAILED || action == EVENTLOG_DRY_RUN))
		metrics_record_eviction(daemon->ops->metrics, entry->signal, results[action], entry->latency_ns);
}

void daemon_ops_update_metrics(struct daemon *daemon)
{
	struct daemon_ops *ops = daemon->ops;
	struct policy *policy = daemon->policy;
	struct metrics_snapshot *snap;
	uint64_t oom_kills;

	if (!ops)
		return;
	snap = &ops->snapshot;
	metrics_snapshot_fill(snap, &policy->engine, &policy->obs, &policy->eval);
	ops->last_evaluation_unix_ns = clock_realtime_ns();
	snap->evaluations = daemon->evaluations;
	snap->last_evaluation_unix_ns = ops->last_evaluation_unix_ns;
	snap->dry_run = policy->config.dry_run;
	snap->kernel_oom_kills_known = metrics_read_kernel_oom_kills(policy->config.root, &oom_kills) == 0;
	snap->kernel_oom_kills = snap->kernel_oom_kills_known ? oom_kills : 0;
	snap->bpf_enabled = daemon->bpf != NULL;
	snap->bpf_programs_attached = daemon->bpf ? bpf_loader_attached_count(daemon->bpf) : 0;
	snap->loop_iteration_max_ns = loop_longest_iteration_ns(daemon->loop);
	snap->loop_iteration_last_ns = loop_last_iteration_ns(daemon->loop);
	snap->actions_in_flight = executor_in_flight(daemon->executor);
	snap->evictions_refused_stale = daemon->evictions_stale;
	metrics_update(ops->metrics, snap);
}

static int ops_view(void *ctx, enum control_command command, struct control_view *view)
{
	struct daemon *daemon = ctx;
	struct policy *policy = daemon->policy;
	size_t n_pods = 0;
	struct pod **pods;

	/* evictctl shows every pod: all of them exact (ranked ones re-ranked as such). */
	policy_rank_settle(policy, SIZE_MAX);
	pods = policy->pods ? pods_list(policy->pods, &n_pods) : NULL;

	*view = (struct control_view){
		.config = &policy->config,
		.engine = &policy->engine,
		.obs = &policy->obs,
		.eval = &policy->eval,
		.decision = &policy->decision,
		.pods = pods,
		.n_pods = n_pods,
		.rank_options = &policy->rank_options,
		.eventlog = daemon->ops->eventlog,
		.bpf = {
			.enabled = daemon->bpf != NULL,
			.programs_attached = daemon->bpf ? bpf_loader_attached_count(daemon->bpf) : 0,
			.pin_dir = daemon->bpf ? bpf_loader_pin_dir(daemon->bpf) : NULL,
			.reason = daemon->bpf ? NULL : daemon->bpf_state,
		},
		.cgroup_tree = policy->pods != NULL,
		.mode = policy->config.workload_roots.n ? "standalone" : "kubernetes",
		.node_name = policy->config.node_name,
		.uptime_ns = clock_monotonic_ns() - daemon->ops->started_ns,
		.evaluations = daemon->evaluations,
		.last_evaluation_unix_ns = daemon->ops->last_evaluation_unix_ns,
		.evictions = daemon->evictions,
		.evictions_failed = daemon->evictions_failed,
		.evictions_stale = daemon->evictions_stale,
		.loop_iteration_max_ns = loop_longest_iteration_ns(daemon->loop),
		.actions_in_flight = executor_in_flight(daemon->executor),
	};
	return 0;
}

static void on_control(void *ctx, int fd, uint32_t revents)
{
	struct daemon *daemon = ctx;

	control_handle_ready(daemon->ops->control);
}

static void on_watchdog(void *ctx)
{
	notify_watchdog();
}

int daemon_ops_open(struct daemon *daemon)
{
	struct daemon_ops *ops = calloc(1, sizeof(*ops));
	const struct evictd_config *config = &daemon->policy->config;
	int64_t ping_ns = notify_watchdog_interval_ns();
	int err;

	if (!ops)
		return -ENOMEM;
	ops->started_ns = clock_monotonic_ns();
	daemon->ops = ops;
	err = eventlog_open(&ops->eventlog, &(struct eventlog_options){ .path = config->event_log });
	if (err)
		return err;
	/* /healthz: stale once no evaluation for three housekeeping rounds. Nothing on the loop
	 * waits for a kill or a command any more (doc/DESIGN.md, "The loop never waits"). */
	err = metrics_open(&ops->metrics, &(struct metrics_options){
		.address = config->metrics_address,
		.version = "0.1.0",
		.stale_after_ns = 3 * config->housekeeping_interval_ns,
	});
	if (err)
		return err;
	err = control_open(&ops->control, &(struct control_options){
		.path = config->control_socket, .view = ops_view, .ctx = daemon, .version = "0.1.0",
		.loop = daemon->loop });
	if (err)
		return err;
	if (!loop_add_fd(daemon->loop, control_fd(ops->control), EPOLLIN, false, on_control, daemon))
		return -errno;
	if (ping_ns > 0 && !loop_add_periodic(daemon->loop, ping_ns, on_watchdog, daemon))
		return -EIO;
	return 0;
}

void daemon_ops_close(struct daemon *daemon)
{
	if (!daemon->ops)
		return;
	control_close(daemon->ops->control);
	metrics_close(daemon->ops->metrics);
	eventlog_close(daemon->ops->eventlog);
	free(daemon->ops);
	daemon->ops = NULL;
}
