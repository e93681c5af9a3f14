/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The memory pressure criterion applied (DESIGN.md §1 "Memory pressure"), standalone only:
 * the node's /proc/pressure/memory and every workload's memory.pressure, each held above the
 * limit for the duration (core/pressure.c pressure_update), as systemd-oomd's
 * src/oom/oomd-manager.c monitor_memory_pressure_contexts_handler reads its monitored
 * cgroups, with its 15 s pause after a kill (POST_ACTION_DELAY_USEC, oomd-manager.h: the
 * averages lag, and a kill must not be followed by another on the same stale numbers). */
#ifndef EVICTD_SIGNALS_PRESSURE_WATCH_H
#define EVICTD_SIGNALS_PRESSURE_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/observations.h"
#include "core/pressure.h"

#define PRESSURE_WATCH_POST_ACTION_DELAY_NS (15LL * 1000000000)

/* One workload as the caller's table has it. */
struct pressure_workload {
	uint64_t cgroup_id;
	const char *cgroup_path;	/* joined under the root already (pods.h) */
	bool candidate;			/* pod_is_candidate: omit/never and exited ones are not */
};

struct pressure_watch_entry {
	uint64_t cgroup_id;
	struct pressure_state state;
	bool seen;
};

struct pressure_watch {
	struct pressure_criterion criterion;	/* the configuration's, set before each update */
	struct pressure_state node;
	bool node_read;			/* /proc/pressure/memory was read this round */
	bool node_held;			/* above the limit for the duration */
	struct pressure_watch_entry *entries;	/* one per workload, by cgroup id */
	size_t n_entries, cap_entries;
	size_t n_above;			/* workloads above the limit now (held or not) */
	int64_t delay_until_ns;		/* after a kill: no verdict until then */
	/* The verdict of the last update: the held candidate workload with the most pressure,
	 * if any (its own rule), else the node (victim by ranking). */
	bool held;
	uint64_t victim_cgroup_id;	/* 0: none */
	int32_t victim_value;		/* its pressure, permyriad */
	bool said_unreadable;
};

void pressure_watch_init(struct pressure_watch *watch);
void pressure_watch_free(struct pressure_watch *watch);

/* Read the node's and each workload's pressure at now_ns and decide. A workload's file that
 * cannot be read (no memory controller below a hybrid mount) counts as no pressure. 0, or
 * -ENOMEM (the verdict is then the node's alone). */
int pressure_watch_update(struct pressure_watch *watch, const char *root,
			  const struct pressure_workload *workloads, size_t n, int64_t now_ns);

/* The memory.pressure observation for the engine: the share of time not stalled, 10000 -
 * the pressure (permyriad), of the victim workload, else the node; below the threshold
 * (10000 - limit) only when the verdict holds. Not present when nothing could be read. */
void pressure_watch_observe(const struct pressure_watch *watch, struct observation *out, int64_t now_ns);

/* A kill on this criterion completed: no verdict for the post-action delay. */
void pressure_watch_acted(struct pressure_watch *watch, int64_t now_ns);

#endif
