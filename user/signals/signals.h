/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Eviction signals (DESIGN.md §1): observations and the readers that compute them from
 * /proc, the cgroup tree and statvfs, every path under a root prefix. */
#ifndef EVICTD_SIGNALS_H
#define EVICTD_SIGNALS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/observations.h"
#include "core/signal_meta.h"

/* Where to read from. Every path is joined under root ("" or "/" = the real machine). */
struct signal_source {
	const char *root;
	const char *kubelet_dir;	/* nodefs, default /var/lib/kubelet */
	const char *imagefs_dir;	/* runtime images, default /var/lib/containerd */
	const char *containerfs_dir;	/* writable layers; NULL or "" = same as imagefs_dir */
	/* Where the v1 memory hierarchy and the v2 hierarchy are mounted, relative to root.
	 * NULL = detect (/sys/fs/cgroup, /sys/fs/cgroup/unified, /sys/fs/cgroup/memory). */
	const char *cgroup_v2_dir;
	const char *cgroup_v1_memory_dir;
	/* The kubelet's --cgroup-root, where kubepods(.slice) is (allocatableMemory.available);
	 * NULL or "" = the hierarchy's root. */
	const char *kubelet_cgroup_root;
	/* memory.available with the refault-aware working set (kubernetes issue 43916;
	 * signals/memory.c, DESIGN.md §1). Off: the kubelet's formula. */
	bool memory_refault_aware;
	/* CLOCK_MONOTONIC for the refault rate's window; NULL = the real clock (tests inject). */
	int64_t (*now_ns)(void);
};

/* Read which signals are set in `mask` (SIGNAL_MASK bits; 0 = all) into obs. Signals
 * whose source cannot be read are left !present and logged; returns 0 when at least the
 * requested memory signal (if asked) was read, else negative errno. Reads whole groups
 * (memory, filesystems, pid); signals of groups not in mask are left untouched. With no
 * memory signal in mask: 0 when any requested signal was read, else the first error. A
 * group that keeps failing logs at error level once, then at debug until it recovers. */
int signals_read(const struct signal_source *source, uint32_t mask, struct observations *obs);

/* Refaulting verdict over one window (signals/memory.c), exposed for tests: more than 1% of
 * the file cache read back in per second. */
struct refault_state_view {
	int64_t then_ns, now_ns;
	int64_t refault_pages_then, refault_pages_now;	/* workingset_refault_file */
	int64_t page_size;
	int64_t file_cache_bytes;			/* memory.stat file */
};
bool signals_file_cache_refaulting(struct refault_state_view *view);
/* The refault-aware working set from the root memory.stat (signals/memory.c). Classic LRU:
 * working_set - active_file unless refaulting. MGLRU (active_file = the two youngest
 * generations, refaulted pages in the oldest): working_set unless refaulting, then usage. */
struct refault_aware_view {
	int64_t usage;			/* anon + file */
	int64_t working_set;		/* the kubelet's: usage - inactive_file */
	int64_t active_file;
	bool refaulting;		/* signals_file_cache_refaulting() over the last window */
	bool mglru;			/* signals_read_mglru() */
};
int64_t signals_refault_aware_working_set(const struct refault_aware_view *view);
/* Whether MGLRU runs (root/sys/kernel/mm/lru_gen/enabled has the LRU_GEN_CORE bit). 0, or
 * -ENOENT for a kernel without CONFIG_LRU_GEN (classic LRU), or negative errno; *enabled is
 * false unless it read a set bit. It picks the refault-aware rule (memory.c). */
int signals_read_mglru(const char *root, bool *enabled);
/* Whether root/proc/sys/kernel/osrelease is 6.5 or later, where MGLRU's
 * workingset_refault_file counts every refault; before, --memory-refault-aware is refused
 * under MGLRU (memory.c). 0 or negative errno; *counts false unless it read such a release. */
int signals_mglru_counts_refaults(const char *root, bool *counts);

/* The individual readers, exposed for tests. Each returns 0 or negative errno and logs
 * the failing path with %m. */
int signals_read_meminfo(const char *root, int64_t *mem_total, int64_t *mem_available);
/* memory_dir (may be NULL) receives the root-joined directory that holds the memory.stat to
 * read: the v2 mount or the v1 memory hierarchy. */
enum cgroup_layout signals_detect_cgroup_layout(const struct signal_source *source,
						char *memory_dir, unsigned long memory_dir_len);
int signals_read_memory(const struct signal_source *source, struct observations *obs);
int signals_read_filesystems(const struct signal_source *source, struct observations *obs);
int signals_read_pids(const char *root, struct observations *obs);
/* allocatableMemory.available from the kubepods cgroup (allocatable.c). Leaves it !present,
 * returning 0, when there is no kubepods cgroup or it has no memory limit. */
int signals_read_allocatable(const struct signal_source *source, struct observations *obs);

/* swap.available and zram.available (swap.c). Either is left !present when the node has no
 * swap (SwapTotal 0) or no sized zram device. */
int signals_read_swap(const struct signal_source *source, struct observations *obs);
/* What the swap gate weighs, in bytes (DESIGN.md §1 "Swap and zram"). */
struct swap_room {
	int64_t swap_total, swap_free;	/* meminfo SwapTotal, SwapFree */
	int64_t mem_available;		/* meminfo MemAvailable; -1: not printed */
	int64_t zram_swap_free;		/* /proc/swaps: Size - Used summed over /dev/zram* */
	unsigned zram_swaps;		/* zram devices swapped on (/proc/swaps) */
	int64_t zram_orig, zram_compr;	/* mm_stat orig_data_size, compr_data_size summed */
	int64_t zram_room, zram_limit;	/* sum of limit - mem_used_total, of limit */
	unsigned zram_devices;		/* sized zram devices */
};
int signals_read_swap_meminfo(const char *root, struct swap_room *room);
int signals_parse_proc_swaps(const char *text, int64_t *zram_free, unsigned *zram_swaps);
/* The gate's inputs, pure: free swap with zram counted only up to what RAM can still hold
 * (MemAvailable x the compression ratio), and zram's room capped at MemAvailable. */
int64_t signals_swap_effective_free(const struct swap_room *room);
int64_t signals_zram_effective_room(const struct swap_room *room);
struct zram_device_stat {
	int64_t orig_data_size, compr_data_size, mem_used_total, mem_limit;	/* mm_stat */
	int64_t disksize;
};
int signals_parse_zram_mm_stat(const char *text, struct zram_device_stat *out);
int64_t signals_zram_limit(const struct zram_device_stat *stat);
/* Sum over root/sys/block/zram* into room: zram_room, zram_limit, zram_orig, zram_compr,
 * zram_devices. */
int signals_read_zram(const char *root, struct swap_room *room);

/* The stat/statvfs calls behind the filesystem signals, so tests can fake st_dev and the
 * statvfs numbers. Both behave like the libc calls (-1 and errno on failure). */
struct stat;
struct statvfs;
struct signals_fs_ops {
	int (*stat)(const char *path, struct stat *st);
	int (*statvfs)(const char *path, struct statvfs *sv);
};
/* NULL, or a NULL member, restores the real call. Not thread-safe: for tests. */
void signals_set_fs_ops(const struct signals_fs_ops *ops);

#endif
