// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Node-level reclaim before evicting (doc/DESIGN.md §4), a daemon part of act.c's decisions:
 * the reclaim job runs in the loop (commands through sys/subprocess, memory.reclaim in a
 * worker thread) and asks for a new decision when it ends.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "daemon/daemon_parts.h"
#include "sys/log.h"

/* reclaim_read_fn: re-read one signal for the reclaim steps. */
static int reread_signal(void *ctx, enum ev_signal signal, int64_t *available)
{
	struct policy *policy = ctx;
	int err = signals_read(&policy->source, SIGNAL_MASK(signal), &policy->obs);

	if (!policy->obs.signal[signal].present)
		return err ? err : -ENODATA;
	*available = policy->obs.signal[signal].available;
	return 0;
}

static void on_reclaim_done(void *ctx, const struct reclaim_report *report, int result)
{
	struct daemon *daemon = ctx;
	struct policy *policy = daemon->policy;
	enum ev_signal signal = daemon->reclaim_signal;
	const struct threshold *threshold = policy_threshold(policy);

	if (report->n_steps)
		log_info("node-level reclaim for %s: %zu steps, available %lld -> %lld", signal_name(signal),
			 report->n_steps, (long long)report->available_before, (long long)report->available_after);
	if (result == 1) {
		log_info("%s resolved by node-level reclaim; no pod evicted", signal_name(signal));
		if (threshold && threshold->signal == signal) {
			struct eventlog_decision entry = daemon_ops_decision_entry(daemon, EVENTLOG_RECLAIMED, -1, NULL);

			daemon_ops_record(daemon, &entry);
		}
	} else {
		/* Not enough: the next decision for this signal evicts. */
		daemon->reclaim_tried[signal] = true;
	}
	daemon->pending_mask |= SIGNAL_MASK_ALL;
}

/*
 * doc/DESIGN.md §4: node-level reclaim before evicting, as a job in the loop (commands through
 * sys/subprocess, memory.reclaim in a worker thread). Returns true while reclaim is what is
 * being done about this signal (started now or still running), false when it is time to evict.
 */
bool daemon_reclaim_first(struct daemon *daemon, const struct threshold *threshold, int64_t target)
{
	struct policy *policy = daemon->policy;
	struct reclaim_request request = {
		.signal = threshold->signal,
		.target_available = target,
		.read_signal = reread_signal,
		.read_ctx = policy,
	};
	int err;

	if (daemon_is_disk_signal(threshold->signal)) {
		request.kind = RECLAIM_DISK;
	} else if (daemon_is_memory_signal(threshold->signal) && policy->config.memory_reclaim_before_kill) {
		request.kind = RECLAIM_MEMORY;
		/* Reclaim walks the ranking as far as it needs: all of it in exact order (a slow
		 * path already: memory.reclaim writes take milliseconds each). */
		policy_rank_settle(policy, SIZE_MAX);
		request.candidates = policy->candidates;
		request.n_candidates = policy->n_candidates;
	} else {
		return false;
	}
	if (reclaim_busy(&policy->reclaim)) {
		if (daemon->reclaim_signal == threshold->signal)
			return true;	/* its steps are still running */
		return false;		/* one job at a time: this signal evicts */
	}
	err = reclaim_start(&policy->reclaim, daemon->loop, &request, on_reclaim_done, daemon);
	if (err) {
		log_warn("node-level reclaim for %s: %s; evicting instead", signal_name(threshold->signal),
			 strerror(-err));
		return false;
	}
	daemon->reclaim_signal = threshold->signal;
	return true;
}
