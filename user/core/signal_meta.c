// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The one table of signal metadata. Names: kubelet pkg/kubelet/eviction/api/types.go;
 * resources and conditions: eviction helpers.go signalToResource and signalToNodeCondition. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "core/signal_meta.h"
#include "core/suggest.h"

#define BYTES SIGNAL_UNIT_BYTES, "bytes"
#define INODES SIGNAL_UNIT_INODES, "inodes"
#define TASKS SIGNAL_UNIT_TASKS, "tasks"
#define PERMYRIAD SIGNAL_UNIT_PERMYRIAD, "permyriad"

static const struct signal_meta signal_table[EV_SIGNAL_COUNT] = {
	[EV_SIGNAL_MEMORY_AVAILABLE] = { "memory.available", BYTES, "memory",
		EV_CONDITION_MEMORY_PRESSURE, SIGNAL_GROUP_MEMORY, true, false, false, true },
	[EV_SIGNAL_NODEFS_AVAILABLE] = { "nodefs.available", BYTES, "ephemeral-storage",
		EV_CONDITION_DISK_PRESSURE, SIGNAL_GROUP_FS, true, false },
	[EV_SIGNAL_NODEFS_INODES_FREE] = { "nodefs.inodesFree", INODES, "inodes",
		EV_CONDITION_DISK_PRESSURE, SIGNAL_GROUP_FS, true, false },
	[EV_SIGNAL_IMAGEFS_AVAILABLE] = { "imagefs.available", BYTES, "ephemeral-storage",
		EV_CONDITION_DISK_PRESSURE, SIGNAL_GROUP_FS, true, false },
	[EV_SIGNAL_IMAGEFS_INODES_FREE] = { "imagefs.inodesFree", INODES, "inodes",
		EV_CONDITION_DISK_PRESSURE, SIGNAL_GROUP_FS, true, false },
	/* helpers.go UpdateContainerFsThresholds: containerfs follows nodefs or imagefs. */
	[EV_SIGNAL_CONTAINERFS_AVAILABLE] = { "containerfs.available", BYTES, "ephemeral-storage",
		EV_CONDITION_DISK_PRESSURE, SIGNAL_GROUP_FS, true, true },
	[EV_SIGNAL_CONTAINERFS_INODES_FREE] = { "containerfs.inodesFree", INODES, "inodes",
		EV_CONDITION_DISK_PRESSURE, SIGNAL_GROUP_FS, true, true },
	[EV_SIGNAL_PID_AVAILABLE] = { "pid.available", TASKS, "pids",
		EV_CONDITION_PID_PRESSURE, SIGNAL_GROUP_PID, true, false },
	/* helpers.go signalToResource / signalToNodeCondition: memory, MemoryPressure. */
	[EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE] = { "allocatableMemory.available", BYTES, "memory",
		EV_CONDITION_MEMORY_PRESSURE, SIGNAL_GROUP_MEMORY, true, false },
	/* The guard ranks and reports as memory but sets no node condition (DESIGN.md §1). */
	[EV_SIGNAL_OOM_GUARD] = { "oom.guard", BYTES, "memory",
		EV_CONDITION_NONE, SIGNAL_GROUP_MEMORY, false, false, false, true },
	/* Read with /proc/meminfo (signals/swap.c); gates, no condition of their own. */
	[EV_SIGNAL_SWAP_AVAILABLE] = { "swap.available", BYTES, "memory",
		EV_CONDITION_NONE, SIGNAL_GROUP_MEMORY, false, false, true, false },
	[EV_SIGNAL_ZRAM_AVAILABLE] = { "zram.available", BYTES, "memory",
		EV_CONDITION_NONE, SIGNAL_GROUP_MEMORY, false, false, true, false },
	/* No reader group: the policy fills it from the pressure watch. Its kills count as
	 * memory kills in the ranking (rank.c), not in the memory ledger (daemon/act.c). */
	[EV_SIGNAL_MEMORY_PRESSURE] = { "memory.pressure", PERMYRIAD, "memory",
		EV_CONDITION_NONE, 0, false, false, false, false },
};

static const struct signal_meta unknown_signal = {
	"unknown", BYTES, "unknown", EV_CONDITION_NONE, 0, false, false, false, false,
};

static const char *const condition_names[EV_CONDITION_COUNT] = {
	[EV_CONDITION_MEMORY_PRESSURE] = "MemoryPressure",
	[EV_CONDITION_DISK_PRESSURE] = "DiskPressure",
	[EV_CONDITION_PID_PRESSURE] = "PIDPressure",
};

const struct signal_meta *signal_meta(enum ev_signal signal)
{
	if ((unsigned)signal >= EV_SIGNAL_COUNT)
		return &unknown_signal;
	return &signal_table[signal];
}

const char *signal_name(enum ev_signal signal)
{
	return signal_meta(signal)->name;
}

int signal_from_name(const char *name, enum ev_signal *signal)
{
	if (!name)
		return -ENOENT;
	for (int i = 0; i < EV_SIGNAL_COUNT; i++) {
		if (signal_table[i].configurable && strcmp(name, signal_table[i].name) == 0) {
			*signal = (enum ev_signal)i;
			return 0;
		}
	}
	return -ENOENT;
}

const char *signal_suggest(const char *name)
{
	struct suggest s;

	suggest_begin(&s, name);
	for (int i = 0; i < EV_SIGNAL_COUNT; i++)
		if (signal_table[i].configurable)
			suggest_offer(&s, signal_table[i].name);
	return s.best;
}

int signal_lookup(const char *name, enum ev_signal *signal)
{
	for (int i = 0; name && i < EV_SIGNAL_COUNT; i++) {
		if (strcmp(name, signal_table[i].name) == 0) {
			*signal = (enum ev_signal)i;
			return 0;
		}
	}
	return -ENOENT;
}

const char *signal_valid_names(void)
{
	/* Built from the table; every signal name fits many times over. */
	static char names[EV_SIGNAL_COUNT * 32];
	size_t len = 0;

	names[0] = '\0';
	for (int i = 0; i < EV_SIGNAL_COUNT; i++) {
		size_t name_len = strlen(signal_table[i].name);

		if (!signal_table[i].configurable || len + name_len + 3 > sizeof(names))
			continue;
		if (len) {
			memcpy(names + len, ", ", 2);
			len += 2;
		}
		memcpy(names + len, signal_table[i].name, name_len + 1);
		len += name_len;
	}
	return names;
}

const char *signal_unit_name(enum ev_signal signal)
{
	return signal_meta(signal)->unit_name;
}

const char *signal_resource(enum ev_signal signal)
{
	return signal_meta(signal)->resource;
}

enum node_condition signal_condition(enum ev_signal signal)
{
	return signal_meta(signal)->condition;
}

const char *condition_name(enum node_condition condition)
{
	if (condition == EV_CONDITION_NONE)
		return "none";
	if ((unsigned)condition >= EV_CONDITION_COUNT)
		return "unknown";
	return condition_names[condition];
}

uint32_t signal_group_mask(unsigned groups)
{
	uint32_t mask = 0;

	for (int i = 0; i < EV_SIGNAL_COUNT; i++)
		if (signal_table[i].group & groups)
			mask |= SIGNAL_MASK(i);
	return mask;
}
