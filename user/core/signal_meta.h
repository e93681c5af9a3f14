/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The eviction signals and what is known about each (DESIGN.md §1), in one table: the kubelet
 * name, unit, resource, node condition and the reader group that fills it. Every module asks
 * here instead of keeping its own switch. */
#ifndef EVICTD_CORE_SIGNAL_META_H
#define EVICTD_CORE_SIGNAL_META_H

#include <stdbool.h>
#include <stdint.h>

enum ev_signal {
	EV_SIGNAL_MEMORY_AVAILABLE,
	EV_SIGNAL_NODEFS_AVAILABLE,
	EV_SIGNAL_NODEFS_INODES_FREE,
	EV_SIGNAL_IMAGEFS_AVAILABLE,
	EV_SIGNAL_IMAGEFS_INODES_FREE,
	EV_SIGNAL_CONTAINERFS_AVAILABLE,
	EV_SIGNAL_CONTAINERFS_INODES_FREE,
	EV_SIGNAL_PID_AVAILABLE,
	/* The kubepods cgroup's memory limit minus its working set (the kubelet's "pods" system
	 * container); its thresholds follow the hard memory.available ones when
	 * enforceNodeAllocatable contains "pods" (helpers.go addAllocatableThresholds). */
	EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE,
	/* evictd's OOM guard (DESIGN.md §1): the kernel's own view, MemAvailable against MemTotal.
	 * Never configured as a kubelet threshold; no node condition. */
	EV_SIGNAL_OOM_GUARD,
	/* Host signals (DESIGN.md §1 "Swap and zram"): free swap (SwapFree of SwapTotal) and the
	 * room left in zram devices (mem_limit, or disksize, minus mem_used_total). Never kubelet
	 * thresholds: --swap-guard and --zram-guard gate the memory thresholds with them. */
	EV_SIGNAL_SWAP_AVAILABLE,
	EV_SIGNAL_ZRAM_AVAILABLE,
	/* The memory pressure criterion (DESIGN.md §1 "Memory pressure"), standalone only: the
	 * share of time not stalled on memory, in permyriad (10000 - PSI), of the node or of the
	 * workload whose own pressure stayed above the limit for the duration. Filled by the
	 * policy (signals/pressure_watch.c), never by signals_read; no node condition. */
	EV_SIGNAL_MEMORY_PRESSURE,
	EV_SIGNAL_COUNT,
};

enum node_condition {
	EV_CONDITION_MEMORY_PRESSURE,
	EV_CONDITION_DISK_PRESSURE,
	EV_CONDITION_PID_PRESSURE,
	EV_CONDITION_COUNT,
	EV_CONDITION_NONE = -1,
};

enum signal_unit {
	SIGNAL_UNIT_BYTES,
	SIGNAL_UNIT_INODES,
	SIGNAL_UNIT_TASKS,
	SIGNAL_UNIT_PERMYRIAD,	/* memory.pressure: hundredths of a percent */
};

/* What one read fills (signals_read reads whole groups; a BPF wake-up names a group). */
enum signal_group {
	SIGNAL_GROUP_MEMORY = 1u << 0,	/* /proc/meminfo and the root memory cgroup */
	SIGNAL_GROUP_FS = 1u << 1,	/* statvfs of nodefs, imagefs, containerfs */
	SIGNAL_GROUP_PID = 1u << 2,	/* pid_max, threads-max, loadavg */
};

struct signal_meta {
	const char *name;		/* kubelet spelling: "memory.available"; "oom.guard" */
	enum signal_unit unit;
	const char *unit_name;		/* "bytes", "inodes", "tasks" */
	/* The kubelet's signalToResource: "memory", "ephemeral-storage", "inodes", "pids". */
	const char *resource;
	enum node_condition condition;	/* EV_CONDITION_NONE: the OOM guard */
	enum signal_group group;
	bool configurable;		/* a kubelet threshold may name it (not the guard) */
	bool derived;			/* containerfs: follows nodefs or imagefs, never set */
	/* Swap: a gate (swap, zram) never acts alone; a gated memory signal (memory.available,
	 * the OOM guard) counts as met only while a gate is met too (thresholds.c). */
	bool swap_gate;
	bool swap_gated;
};

/* Never NULL: an out-of-range signal gets an entry named "unknown". */
const struct signal_meta *signal_meta(enum ev_signal signal);

/* Kubelet spelling ("memory.available"); "oom.guard" for the guard. */
const char *signal_name(enum ev_signal signal);
/* Returns 0 and sets *signal, or -ENOENT for a name that is not a kubelet signal (the guard
 * is not accepted here). */
int signal_from_name(const char *name, enum ev_signal *signal);
/* The configurable signal name closest to a mistyped one ("memory.availble"), or NULL. */
const char *signal_suggest(const char *name);
/* Comma-separated list of the configurable signal names, for error messages. */
const char *signal_valid_names(void);
const char *signal_unit_name(enum ev_signal signal);
/* Any signal by name, the OOM guard's too (signal_from_name takes configurable ones only). */
int signal_lookup(const char *name, enum ev_signal *signal);	/* "bytes", "inodes", "tasks" */
const char *signal_resource(enum ev_signal signal);	/* "memory", "ephemeral-storage", ... */
enum node_condition signal_condition(enum ev_signal signal);
const char *condition_name(enum node_condition condition); /* "MemoryPressure" ... */

#define SIGNAL_MASK(sig) (1u << (sig))
/* The signals of one group (or several ORed), as a mask of SIGNAL_MASK bits. */
uint32_t signal_group_mask(unsigned groups);
/* The same as constants, for switch cases and initialisers; test_signals checks them
 * against the table. */
#define SIGNAL_MASK_MEMORY                                                                          \
	(SIGNAL_MASK(EV_SIGNAL_MEMORY_AVAILABLE) | SIGNAL_MASK(EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE) | \
	 SIGNAL_MASK(EV_SIGNAL_OOM_GUARD) | SIGNAL_MASK(EV_SIGNAL_SWAP_AVAILABLE) |                    \
	 SIGNAL_MASK(EV_SIGNAL_ZRAM_AVAILABLE))
#define SIGNAL_MASK_FS                                                                              \
	(SIGNAL_MASK(EV_SIGNAL_NODEFS_AVAILABLE) | SIGNAL_MASK(EV_SIGNAL_NODEFS_INODES_FREE) |         \
	 SIGNAL_MASK(EV_SIGNAL_IMAGEFS_AVAILABLE) | SIGNAL_MASK(EV_SIGNAL_IMAGEFS_INODES_FREE) |       \
	 SIGNAL_MASK(EV_SIGNAL_CONTAINERFS_AVAILABLE) | SIGNAL_MASK(EV_SIGNAL_CONTAINERFS_INODES_FREE))
#define SIGNAL_MASK_PID SIGNAL_MASK(EV_SIGNAL_PID_AVAILABLE)

#endif
