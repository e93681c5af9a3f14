// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Getting a resource back before evicting for it again, a daemon part of act.c's decisions:
 * node-level reclaim first (doc/DESIGN.md §4; the job runs in the loop, commands through
 * sys/subprocess, memory.reclaim in a worker thread, and asks for a new decision when it
 * ends), and after a disk eviction the kubelet's clean-up of the pod's volumes.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>
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

/* The kubelet's waitForPodsCleanup after an eviction (pkg/kubelet/eviction/eviction_manager.go:
 * podCleanupTimeout 30 s, polled every podCleanupPollFreq, 1 s). */
#define DISK_CLEANUP_POLL_NS (1ll * 1000000000)

/*
 * A disk eviction's space comes back when the kubelet has removed the pod's volumes
 * (<kubelet dir>/pods/<uid>/volumes, emptyDirs included), seconds after its cgroup emptied:
 * until then, or 30 s, the next disk eviction waits, as the kubelet's eviction manager waits
 * for the pod's resources to be reclaimed before it takes another (without it the real node
 * saw a second pod, one that used no disk, evicted 80 ms after the first,
 * tests/cluster/node/scenario-e.sh).
 */
bool daemon_disk_cleanup_pending(struct daemon *daemon, int64_t now)
{
	const struct evictd_config *config = &daemon->policy->config;
	char path[PATH_MAX + 128];

	if (!daemon->disk_cleanup_until_ns)
		return false;
	if (now >= daemon->disk_cleanup_until_ns || !daemon->disk_cleanup_uid[0] ||
	    snprintf(path, sizeof(path), "%s%s/pods/%s/volumes", config->root, config->kubelet_dir,
		     daemon->disk_cleanup_uid) >= (int)sizeof(path) || access(path, F_OK)) {
		daemon->disk_cleanup_until_ns = 0;
		return false;
	}
	if (!daemon->disk_cleanup_said)
		log_info("disk: waiting for the kubelet to remove the evicted pod's volumes (%s) before "
			 "the next disk eviction, at most %.0f s more", path,
			 (double)(daemon->disk_cleanup_until_ns - now) / 1e9);
	daemon->disk_cleanup_said = true;
	daemon_arm_retry(daemon, now + DISK_CLEANUP_POLL_NS < daemon->disk_cleanup_until_ns ?
				 now + DISK_CLEANUP_POLL_NS : daemon->disk_cleanup_until_ns);
	return true;
}
