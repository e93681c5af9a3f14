// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The memory pressure criterion applied to the node and each workload (pressure_watch.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "signals/parts.h"
#include "signals/pressure_watch.h"
#include "sys/fileio.h"

void pressure_watch_init(struct pressure_watch *watch)
{
	memset(watch, 0, sizeof(*watch));
	pressure_state_init(&watch->node);
	watch->delay_until_ns = -1;
}

void pressure_watch_free(struct pressure_watch *watch)
{
	free(watch->entries);
	watch->entries = NULL;
	watch->n_entries = watch->cap_entries = 0;
}

static int read_pressure(const char *path, struct psi_reading *reading)
{
	char text[256];
	ssize_t len = fileio_read_at(AT_FDCWD, path, text, sizeof(text));

	if (len < 0) {
		errno = (int)-len;	/* for the caller's %m */
		return (int)len;
	}
	return pressure_parse(text, reading);
}

static struct pressure_watch_entry *entry_for(struct pressure_watch *watch, uint64_t cgroup_id)
{
	struct pressure_watch_entry *entry;

	for (size_t i = 0; i < watch->n_entries; i++)
		if (watch->entries[i].cgroup_id == cgroup_id)
			return &watch->entries[i];
	if (watch->n_entries == watch->cap_entries) {
		size_t cap = watch->cap_entries ? watch->cap_entries * 2 : 64;
		struct pressure_watch_entry *grown = realloc(watch->entries, cap * sizeof(*grown));

		if (!grown)
			return NULL;
		watch->entries = grown;
		watch->cap_entries = cap;
	}
	entry = &watch->entries[watch->n_entries++];
	entry->cgroup_id = cgroup_id;
	pressure_state_init(&entry->state);
	return entry;
}

int pressure_watch_update(struct pressure_watch *watch, const char *root,
			  const struct pressure_workload *workloads, size_t n, int64_t now_ns)
{
	const struct pressure_criterion *criterion = &watch->criterion;
	bool delayed = watch->delay_until_ns >= 0 && now_ns < watch->delay_until_ns;
	struct psi_reading reading;
	char path[PATH_MAX];
	int err = 0;

	watch->held = false;
	watch->victim_cgroup_id = 0;
	watch->victim_value = 0;
	watch->node_held = false;
	watch->node_read = false;
	watch->n_above = 0;
	if (!criterion->on)
		return 0;
	if (!sig_path_join(path, sizeof(path), root, "/proc/pressure/memory", NULL) &&
	    !read_pressure(path, &reading)) {
		watch->node_read = true;
		watch->node_held = pressure_update(criterion, &watch->node, &reading, now_ns);
	} else if (!watch->said_unreadable) {
		log_warn("memory pressure criterion: cannot read %s (%m; a kernel without PSI, or psi=0): "
			 "only the workloads' memory.pressure is watched", path);
		watch->said_unreadable = true;
	}
	for (size_t i = 0; i < watch->n_entries; i++)
		watch->entries[i].seen = false;
	for (size_t i = 0; i < n; i++) {
		struct pressure_watch_entry *entry;
		bool held;

		if (snprintf(path, sizeof(path), "%s/memory.pressure", workloads[i].cgroup_path) >= (int)sizeof(path) ||
		    read_pressure(path, &reading))
			continue;	/* no memory controller there, or gone: no pressure */
		entry = entry_for(watch, workloads[i].cgroup_id);
		if (!entry) {
			err = -ENOMEM;
			break;
		}
		entry->seen = true;
		held = pressure_update(criterion, &entry->state, &reading, now_ns);
		if (entry->state.above_since_ns >= 0)
			watch->n_above++;
		/* oomd kills within the limited unit; here the workload is the unit, so it is its
		 * own victim, the one with the most pressure first. Omitted ones never. */
		if (held && workloads[i].candidate &&
		    (!watch->victim_cgroup_id || entry->state.last_value > watch->victim_value)) {
			watch->victim_cgroup_id = workloads[i].cgroup_id;
			watch->victim_value = entry->state.last_value;
		}
	}
	/* Workloads that are gone: forget their clocks (a new unit starts afresh). */
	for (size_t i = 0; i < watch->n_entries;) {
		if (!watch->entries[i].seen)
			watch->entries[i] = watch->entries[--watch->n_entries];
		else
			i++;
	}
	if (delayed) {
		watch->victim_cgroup_id = 0;
		watch->victim_value = 0;
		watch->node_held = false;
	}
	watch->held = watch->victim_cgroup_id || watch->node_held;
	return err;
}

void pressure_watch_observe(const struct pressure_watch *watch, struct observation *out, int64_t now_ns)
{
	int32_t value;

	memset(out, 0, sizeof(*out));
	if (!watch->criterion.on || (!watch->node_read && !watch->victim_cgroup_id))
		return;
	if (watch->victim_cgroup_id)
		value = watch->victim_value;
	else if (watch->node_held)
		value = watch->node.last_value;
	else	/* above the limit but not yet for the duration counts as at it: not crossed */
		value = watch->node.last_value < watch->criterion.limit ? watch->node.last_value :
									  watch->criterion.limit;
	out->present = true;
	out->capacity = 10000;
	out->available = 10000 - value;
	out->read_at_ns = now_ns;
}

void pressure_watch_acted(struct pressure_watch *watch, int64_t now_ns)
{
	watch->delay_until_ns = now_ns + PRESSURE_WATCH_POST_ACTION_DELAY_NS;
}
