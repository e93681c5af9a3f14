// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A memory PSI trigger on each pod's memory.pressure, kept in step with the pods table: a
 * pod stalling in its own limit wakes the daemon as the node's trigger does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "daemon/daemon_parts.h"
#include "sys/psi.h"

static void on_pod_psi(void *ctx, int fd, uint32_t revents);

static void drop_trigger(struct daemon *daemon, struct pod_psi *entry)
{
	loop_remove(daemon->loop, entry->source);	/* owned: closes the trigger */
	entry->source = NULL;
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
			if (!strcmp(daemon->pod_psi[i].cgroup_path, path))
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
		entry->seen = true;
		entry->source = loop_add_fd(daemon->loop, fd, EPOLLPRI, true, on_pod_psi, daemon);
		if (!entry->source) {
			close(fd);
			continue;
		}
		daemon->n_pod_psi++;
	}
	/* Pods that are gone: close their triggers, keep the table dense. */
	for (size_t i = 0; i < daemon->n_pod_psi;) {
		struct pod_psi *entry = &daemon->pod_psi[i];

		if (entry->seen && entry->source) {
			i++;
			continue;
		}
		drop_trigger(daemon, entry);
		*entry = daemon->pod_psi[--daemon->n_pod_psi];
	}
}

static void on_pod_psi(void *ctx, int fd, uint32_t revents)
{
	struct daemon *daemon = ctx;

	if (revents & EPOLLERR) {	/* the cgroup was removed: the next sync drops the trigger */
		for (size_t i = 0; i < daemon->n_pod_psi; i++)
			if (loop_source_fd(daemon->pod_psi[i].source) == fd)
				drop_trigger(daemon, &daemon->pod_psi[i]);
		return;
	}
	daemon->psi_wakeups++;
	daemon->pending_mask |= SIGNAL_MASK_MEMORY;
}

void daemon_pod_psi_close(struct daemon *daemon)
{
	for (size_t i = 0; i < daemon->n_pod_psi; i++)
		drop_trigger(daemon, &daemon->pod_psi[i]);
	free(daemon->pod_psi);
	daemon->pod_psi = NULL;
	daemon->n_pod_psi = 0;
}
