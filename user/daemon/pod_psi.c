// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A memory PSI trigger on each pod's memory.pressure, kept in step with the pods table: a
 * pod stalling in its own limit wakes the daemon as the node's trigger does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "daemon/daemon_parts.h"
#include "sys/clock.h"
#include "sys/psi.h"

static void on_pod_psi(void *ctx, int fd, uint32_t revents);

/* Close the triggers of the entries [first, n_pod_psi) at once (see psi_triggers_close). */
static void close_triggers_from(struct daemon *daemon, size_t first)
{
	size_t n = daemon->n_pod_psi - first;
	int *fds;

	if (!n)
		return;
	if (!(fds = calloc(n, sizeof(*fds)))) {
		for (size_t i = first; i < daemon->n_pod_psi; i++) {
			struct pod_psi *entry = &daemon->pod_psi[i];

			loop_remove(daemon->loop, entry->source);	/* owned: closes it */
			if (entry->gone_fd >= 0)
				close(entry->gone_fd);
			entry->source = NULL;
			entry->gone_fd = -1;
		}
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct pod_psi *entry = &daemon->pod_psi[first + i];

		fds[i] = entry->source ? loop_detach_fd(daemon->loop, entry->source) : entry->gone_fd;
		entry->source = NULL;
		entry->gone_fd = -1;
	}
	psi_triggers_close(fds, n);
	free(fds);
}

void daemon_sync_pod_psi(struct daemon *daemon)
{
	struct policy *policy = daemon->policy;
	struct pod **pods;
	size_t n_pods = 0;

	if (!policy->pods || policy->config.no_psi || !daemon->psi_enabled)
		return;
	if (!daemon->pod_psi && !(daemon->pod_psi = calloc(DAEMON_MAX_POD_PSI, sizeof(*daemon->pod_psi))))
		return;
	for (size_t i = 0; i < daemon->n_pod_psi; i++)
		daemon->pod_psi[i].seen = false;
	pods = pods_list(policy->pods, &n_pods);
	for (size_t p = 0; p < n_pods; p++) {
		const char *path = pods[p]->cgroup_path;
		struct pod_psi *entry = NULL;
		char pressure[600];
		int fd;

		for (size_t i = 0; i < daemon->n_pod_psi && !entry; i++)
			if (daemon->pod_psi[i].cgroup_id == pods[p]->cgroup_id &&
			    !strcmp(daemon->pod_psi[i].cgroup_path, path))
				entry = &daemon->pod_psi[i];
		if (entry) {
			entry->seen = true;
			continue;
		}
		if (daemon->n_pod_psi >= DAEMON_MAX_POD_PSI || strlen(path) >= sizeof(entry->cgroup_path))
			continue;
		snprintf(pressure, sizeof(pressure), "%s/memory.pressure", path);
		fd = psi_trigger_open_memory(pressure);
		if (fd < 0)
			continue;
		entry = &daemon->pod_psi[daemon->n_pod_psi];
		snprintf(entry->cgroup_path, sizeof(entry->cgroup_path), "%s", path);
		entry->cgroup_id = pods[p]->cgroup_id;
		entry->seen = true;
		entry->gone_fd = -1;
		entry->source = loop_add_fd(daemon->loop, fd, EPOLLPRI, true, on_pod_psi, daemon);
		if (!entry->source) {
			close(fd);
			continue;
		}
		daemon->n_pod_psi++;
	}
	/* Pods that are gone: move their entries to the end, close their triggers together, keep
	 * the table dense. (A removed cgroup's trigger was destroyed by its rmdir: closing the fd
	 * is cheap; a pod dropped while its cgroup stays costs a grace period.) */
	size_t kept = 0;

	for (size_t i = 0; i < daemon->n_pod_psi; i++) {
		if (daemon->pod_psi[i].seen && daemon->pod_psi[i].source) {
			struct pod_psi tmp = daemon->pod_psi[kept];

			daemon->pod_psi[kept++] = daemon->pod_psi[i];
			daemon->pod_psi[i] = tmp;
		}
	}
	close_triggers_from(daemon, kept);
	daemon->n_pod_psi = kept;
}

static void on_pod_psi(void *ctx, int fd, uint32_t revents)
{
	struct daemon *daemon = ctx;

	if (revents & EPOLLERR) {	/* the cgroup was removed: the next sync closes the trigger */
		for (size_t i = 0; i < daemon->n_pod_psi; i++) {
			struct pod_psi *entry = &daemon->pod_psi[i];

			if (entry->source && loop_source_fd(entry->source) == fd) {
				entry->gone_fd = loop_detach_fd(daemon->loop, entry->source);
				entry->source = NULL;
			}
		}
		return;
	}
	daemon->psi_wakeups++;
	daemon->pending_mask |= SIGNAL_MASK_MEMORY;
}

void daemon_pod_psi_close(struct daemon *daemon)
{
	close_triggers_from(daemon, 0);
	free(daemon->pod_psi);
	daemon->pod_psi = NULL;
	daemon->n_pod_psi = 0;
}

static void on_pressure_timer(void *ctx)
{
	struct daemon *daemon = ctx;

	daemon->pending_mask |= SIGNAL_MASK_ALL;
}

/* While a memory pressure clock runs, read again each second, as systemd-oomd polls
 * (src/oom/oomd-manager.c, MEM_PRESSURE_INTERVAL_USEC): no kernel event says that a duration
 * has passed, nor that an average fell back under the limit (DESIGN.md §1 "Memory pressure"). */
void daemon_pressure_poll(struct daemon *daemon)
{
	const struct pressure_watch *watch = daemon->policy->pressure;

	if (!watch->criterion.on || (!watch->n_above && watch->node.above_since_ns < 0))
		return;
	if (!daemon->pressure_timer)
		daemon->pressure_timer = loop_add_timer(daemon->loop, LOOP_NO_DEADLINE, on_pressure_timer, daemon);
	if (daemon->pressure_timer)
		loop_timer_set(daemon->pressure_timer, clock_monotonic_ns() + 1000000000LL);
}
