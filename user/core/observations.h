/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What one reading of the node's signals found: the data the engine and the ranking decide
 * on. Pure data; user/signals/ fills it. */
#ifndef EVICTD_CORE_OBSERVATIONS_H
#define EVICTD_CORE_OBSERVATIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/signal_meta.h"

/* Which filesystems the runtime keeps apart (seed: node-pressure eviction, "filesystem
 * signals"). Decided by comparing st_dev of the kubelet, image and container dirs. */
enum fs_layout {
	FS_LAYOUT_SINGLE,	/* everything on nodefs */
	FS_LAYOUT_SPLIT_DISK,	/* imagefs holds images and writable layers; containerfs = imagefs */
	FS_LAYOUT_SPLIT_IMAGE,	/* images on imagefs; writable layers on containerfs (= nodefs fs) */
};
const char *fs_layout_name(enum fs_layout layout);

enum cgroup_layout {
	CGROUP_LAYOUT_UNKNOWN,
	CGROUP_LAYOUT_V2,	/* memory controller on the unified hierarchy */
	CGROUP_LAYOUT_V1,	/* memory controller on a v1 hierarchy (legacy or hybrid) */
};

struct observation {
	bool present;		/* false: could not be read this round */
	int64_t available;	/* bytes, inodes or PIDs */
	int64_t capacity;	/* same unit; thresholds in % are taken of this */
	int64_t read_at_ns;	/* CLOCK_MONOTONIC when read */
};

struct observations {
	struct observation signal[EV_SIGNAL_COUNT];
	enum fs_layout fs_layout;	/* FS_LAYOUT_SINGLE when nodefs could not be read */
	enum cgroup_layout cgroup_layout;
	/* Raw inputs, kept for the decision log and metrics. */
	int64_t mem_total_bytes;
	int64_t mem_available_kernel_bytes;	/* /proc/meminfo MemAvailable */
	int64_t memory_working_set_bytes;
	/* memory.available both ways (v2 only; -1 when not known): the kubelet's, and with active
	 * file cache counted as reclaimable unless it refaults (signals/memory.c). */
	int64_t memory_available_kubelet_bytes;
	int64_t memory_available_refault_aware_bytes;
	bool file_cache_refaulting;
	int64_t swap_total_bytes;	/* meminfo SwapTotal; 0: no swap */
	unsigned zram_devices;		/* sized zram devices summed into zram.available */
};

const char *cgroup_layout_name(enum cgroup_layout layout);

#endif
