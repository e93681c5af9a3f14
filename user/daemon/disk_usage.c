// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Per-pod disk usage for disk ranking, measured off the loop (doc/DESIGN.md, "The loop never
 * waits"): volume and log walks and `crictl stats` run in a worker thread on a copy of what
 * they need; the numbers are applied, by pod UID and cgroup id, when its eventfd fires.
 * Disk is freed slowly anyway (the runtime must clean up first), so a disk eviction waits
 * for numbers at most one housekeeping interval old rather than ranking on none.
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>

#include "daemon/daemon_parts.h"
#include "sys/clock.h"
#include "sys/log.h"

static void on_disk_job(void *ctx, int fd, uint32_t revents)
{
	struct daemon *daemon = ctx;
	struct policy *policy = daemon->policy;
	int err;

	if (!pods_disk_job_done(daemon->disk_job))
		return;
	loop_remove(daemon->loop, daemon->disk_source);
	daemon->disk_source = NULL;
	err = pods_disk_usage_finish(policy->pods, daemon->disk_job);
	daemon->disk_job = NULL;
	if (err)
		log_warn("per-pod disk usage: %s", strerror(-err));
	daemon->disk_usage_at_ns = clock_monotonic_ns();
	daemon->pending_mask |= SIGNAL_MASK_ALL;	/* rank again with the numbers */
}

bool daemon_disk_usage_ready(struct daemon *daemon)
{
	struct policy *policy = daemon->policy;
	int64_t now = clock_monotonic_ns();
	int err;

	if (!policy->pods)
		return true;
	if (daemon->disk_usage_at_ns &&
	    now - daemon->disk_usage_at_ns <= policy->config.housekeeping_interval_ns)
		return true;
	if (daemon->disk_job)
		return false;	/* measuring */
	err = pods_disk_usage_start(policy->pods, &(struct pods_disk_options){
		.kubelet_dir = policy->config.kubelet_dir,
	}, &daemon->disk_job);
	if (err) {
		log_warn("per-pod disk usage: cannot start the measurement: %s; ranking on what is known",
			 strerror(-err));
		daemon->disk_job = NULL;
		return true;
	}
	daemon->disk_source = loop_add_fd(daemon->loop, pods_disk_job_fd(daemon->disk_job), EPOLLIN, false,
					  on_disk_job, daemon);
	if (!daemon->disk_source) {
		pods_disk_job_cancel(daemon->disk_job);
		daemon->disk_job = NULL;
		return true;
	}
	return false;
}

void daemon_disk_usage_cancel(struct daemon *daemon)
{
	loop_remove(daemon->loop, daemon->disk_source);
	daemon->disk_source = NULL;
	pods_disk_job_cancel(daemon->disk_job);
	daemon->disk_job = NULL;
	daemon->disk_usage_at_ns = 0;
}
