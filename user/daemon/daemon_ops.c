// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The daemon's operations side: decision log, metrics, control socket, watchdog. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "act/can_evict.h"
#include "bpf_loader/bpf_loader.h"
#include "daemon/daemon_parts.h"
#include "ops/control.h"
#include "ops/eventlog.h"
#include "ops/metrics.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "sys/notify.h"
#include "version.h"

struct daemon_ops {
	struct metrics *metrics;
	struct eventlog *eventlog;
	struct control *control;
	struct metrics_snapshot snapshot;
	struct metrics_can_evict can_evict;	/* what metrics and evictctl show */
	int64_t started_ns;
	int64_t last_evaluation_unix_ns;
	int64_t oom_kills_read_ns;	/* /proc/vmstat is read at most once a second */
};

#define OOM_KILLS_READ_INTERVAL_NS (1000 * 1000000LL)

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
	int logged;

	if (!daemon->ops)
		return;
	/* Kills and failures are counted every time; a dry run once per logged decision, not once
	 * per tick of the same situation. A line that could not be written (ENOSPC) still counts. */
	logged = eventlog_record(daemon->ops->eventlog, entry);
	if (action == EVENTLOG_KILLED || action == EVENTLOG_FAILED || (action == EVENTLOG_DRY_RUN && logged))
		metrics_record_eviction(daemon->ops->metrics, entry->signal, results[action], entry->latency_ns);
}

static void bpf_count(struct metrics_bpf_count *counts, size_t *n, const char *name, uint64_t value)
{
	if (*n >= METRICS_MAX_BPF_COUNTS)
		return;
	snprintf(counts[*n].name, sizeof(counts[*n].name), "%s", name);
	counts[(*n)++].value = value;
}

/* The BPF programs' node counters (the per-CPU node_stats map the loader pins) and the
 * wake-ups read, by type: evictd_bpf_*_total. */
static void fill_bpf_counters(struct metrics_snapshot *snap, const struct bpf_loader *bpf)
{
	struct evictd_node_stats node;

	snap->bpf_counters_known = bpf && !bpf_loader_read_node(bpf, &node);
	snap->n_bpf_events = snap->n_bpf_wakeups_received = 0;
	if (!snap->bpf_counters_known)
		return;
	bpf_count(snap->bpf_events, &snap->n_bpf_events, "fork", node.forks);
	bpf_count(snap->bpf_events, &snap->n_bpf_events, "exit", node.exits);
	bpf_count(snap->bpf_events, &snap->n_bpf_events, "oom_kill", node.oom_kills);
	bpf_count(snap->bpf_events, &snap->n_bpf_events, "direct_reclaim", node.direct_reclaims);
	bpf_count(snap->bpf_events, &snap->n_bpf_events, "memcg_reclaim", node.memcg_reclaims);
	bpf_count(snap->bpf_events, &snap->n_bpf_events, "kswapd_wake", node.kswapd_wakes);
	bpf_count(snap->bpf_events, &snap->n_bpf_events, "inode_alloc", node.inode_allocs);
	bpf_count(snap->bpf_events, &snap->n_bpf_events, "inode_free", node.inode_frees);
	bpf_count(snap->bpf_events, &snap->n_bpf_events, "cgroup_map_full", node.cgroup_map_full);
	bpf_count(snap->bpf_events, &snap->n_bpf_events, "memory_hook_fallback",
		  bpf_loader_memory_hook_fallbacks(bpf));
	snap->bpf_wakeups_sent = node.wakeups_sent;
	snap->bpf_wakeups_dropped = node.wakeups_dropped;
	snap->bpf_wakeups_rate_limited = node.wakeups_rate_limited;
	for (uint32_t type = EVICTD_WAKE_MEMORY_STEP; type <= EVICTD_WAKE_OOM_KILL; type++)
		bpf_count(snap->bpf_wakeups_received, &snap->n_bpf_wakeups_received,
			  bpf_loader_wake_type_name(type), bpf_loader_wakeups_received(bpf, type));
}

void daemon_ops_update_metrics(struct daemon *daemon)
{
	struct daemon_ops *ops = daemon->ops;
	struct policy *policy = daemon->policy;
	struct metrics_snapshot *snap;
	uint64_t oom_kills;

	if (!ops)
		return;
	eventlog_tick(ops->eventlog);	/* a pending "repeated N times" line, once a minute */
	snap = &ops->snapshot;
	metrics_snapshot_fill(snap, &policy->engine, &policy->obs, &policy->eval);
	ops->last_evaluation_unix_ns = clock_realtime_ns();
	snap->evaluations = daemon->evaluations;
	snap->last_evaluation_unix_ns = ops->last_evaluation_unix_ns;
	snap->dry_run = policy->config.dry_run;
	/* Not on every wake-up (several hundred a second near a threshold): the counter is
	 * for dashboards, and the kernel's OOM kills wake us through BPF anyway. */
	if (!ops->oom_kills_read_ns || clock_monotonic_ns() - ops->oom_kills_read_ns >= OOM_KILLS_READ_INTERVAL_NS) {
		ops->oom_kills_read_ns = clock_monotonic_ns();
		snap->kernel_oom_kills_known = metrics_read_kernel_oom_kills(policy->config.root, &oom_kills) == 0;
		snap->kernel_oom_kills = snap->kernel_oom_kills_known ? oom_kills : 0;
	}
	snap->bpf_enabled = daemon->bpf != NULL;
	snap->bpf_programs_attached = daemon->bpf ? bpf_loader_attached_count(daemon->bpf) : 0;
	fill_bpf_counters(snap, daemon->bpf);
	snap->loop_iteration_max_ns = loop_longest_iteration_ns(daemon->loop);
	snap->loop_iteration_last_ns = loop_last_iteration_ns(daemon->loop);
	snap->actions_in_flight = executor_in_flight(daemon->executor);
	snap->evictions_refused_stale = daemon->evictions_stale;
	snap->evictions_unreturned = daemon->evictions_unreturned;
	snap->escaped_processes = daemon->escaped_processes;
	snap->warnings = daemon->warnings;
	snap->pressure_workloads_above = daemon->pressure.n_above;
	snap->pods_memory_estimated = daemon->usage_estimated_said;
	snap->pods_refused = pods_refused_total();
	metrics_update(ops->metrics, snap);
}

/* ---- can evict (doc/DESIGN.md "Cannot act") ------------------------------------------------ */

static bool needs_memory_controller(const struct policy *policy)
{
	/* The configured thresholds: the engine is only laid out at the first evaluation. */
	for (size_t i = 0; i < policy->config.n_thresholds; i++) {
		enum ev_signal signal = policy->config.thresholds[i].signal;

		if (signal == EV_SIGNAL_MEMORY_AVAILABLE || signal == EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE)
			return true;
	}
	return false;
}

static void to_metrics(const struct can_evict_state *state, struct metrics_can_evict *out)
{
	memset(out, 0, sizeof(*out));
	if (!state)
		return;
	out->known = true;
	out->can_evict = state->can_evict;
	for (size_t i = 0; i < state->n_reasons && i < METRICS_MAX_CAN_EVICT_REASONS; i++) {
		snprintf(out->reasons[i].key, sizeof(out->reasons[i].key), "%s", state->reasons[i].key);
		snprintf(out->reasons[i].text, sizeof(out->reasons[i].text), "%s", state->reasons[i].text);
		out->reasons[i].fatal = state->reasons[i].fatal;
		out->n_reasons++;
	}
}

const struct can_evict_state *daemon_can_evict_check(struct daemon *daemon)
{
	const struct policy *policy = daemon->policy;
	struct can_evict_input input = {
		.root = policy->config.root,
		.need_memory = needs_memory_controller(policy),
	};

	if (!daemon->can_evict && !(daemon->can_evict = calloc(1, sizeof(*daemon->can_evict))))
		return NULL;
	if (policy->pods) {
		input.cgroup_mount = pods_cgroup_mount(policy->pods);
		input.kill_roots = policy->kill_roots;
		input.n_kill_roots = policy->kill.n_allowed_roots < CAN_EVICT_MAX_ROOTS ?
					     policy->kill.n_allowed_roots : CAN_EVICT_MAX_ROOTS;
	}
	can_evict_update(daemon->can_evict, &input);
	if (daemon->ops) {
		struct metrics_can_evict shown;

		to_metrics(&daemon->can_evict->state, &shown);
		metrics_set_can_evict(daemon->ops->metrics, &shown);
		daemon->ops->can_evict = shown;
	}
	return &daemon->can_evict->state;
}

void daemon_can_evict_view(const struct daemon *daemon, struct metrics_can_evict *out)
{
	to_metrics(daemon->can_evict && daemon->can_evict->known ? &daemon->can_evict->state : NULL, out);
}

void daemon_can_evict_note_kill_error(struct daemon *daemon, int err, const char *cgroup_path)
{
	if (!daemon->can_evict && !(daemon->can_evict = calloc(1, sizeof(*daemon->can_evict))))
		return;
	can_evict_note_kill_error(daemon->can_evict, err, cgroup_path);
	/* Re-checked after this batch (daemon.c after_batch), not from inside the kill's callback. */
}

bool daemon_can_evict_recheck_due(const struct daemon *daemon)
{
	return daemon->can_evict && daemon->can_evict->recheck;
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
		.can_evict = daemon->ops->can_evict.known ? &daemon->ops->can_evict : NULL,
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
	err = eventlog_open(&ops->eventlog, &(struct eventlog_options){
		.path = config->event_log,
		.max_size = config->event_log_max_size,
		.max_files = (unsigned)config->event_log_max_files,
	});
	if (err)
		return err;
	/* /healthz: stale once no evaluation for three housekeeping rounds. Nothing on the loop
	 * waits for a kill or a command any more (doc/DESIGN.md, "The loop never waits"). */
	err = metrics_open(&ops->metrics, &(struct metrics_options){
		.address = config->metrics_address,
		.version = EVICTD_VERSION,
		.commit = EVICTD_COMMIT,
		.stale_after_ns = 3 * config->housekeeping_interval_ns,
	});
	if (err)
		return err;
	err = control_open(&ops->control, &(struct control_options){
		.path = config->control_socket, .view = ops_view, .ctx = daemon, .version = EVICTD_VERSION,
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
