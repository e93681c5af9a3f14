/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Types shared by the BPF programs (bpf/evictd.bpf.c) and userspace (user/bpf_loader.c).
 * Fixed-width kernel types only and no includes: the BPF side gets __u32/__u64 from
 * vmlinux.h, userspace from <linux/types.h> included before this header.
 *
 * Every struct here is the value of a pinned, BTF-typed map, so its field names are what
 * `bpftool map dump pinned /sys/fs/bpf/evictd/<map>` prints: keep them self-explanatory.
 * Changing a layout makes the loader drop (and log) stale pins of the old layout. */
#ifndef EVICTD_SHARED_H
#define EVICTD_SHARED_H

#define EVICTD_PIN_DIR_DEFAULT "/sys/fs/bpf/evictd"

/* Signal groups a wake-up concerns: the daemon re-reads only the signals of that group. */
enum evictd_wake_group {
	EVICTD_GROUP_MEMORY = 0,	/* memory.available, OOM guard */
	EVICTD_GROUP_PIDS = 1,		/* pid.available */
	EVICTD_GROUP_INODES = 2,	/* nodefs/imagefs inodesFree */
	EVICTD_GROUP_COUNT = 3,
};

/* evictd_wake.type */
enum evictd_wake_type {
	EVICTD_WAKE_MEMORY_STEP = 1,	/* LRU insertions since the last wake crossed the step */
	EVICTD_WAKE_FORK_STEP = 2,	/* forks since the last wake crossed the step */
	EVICTD_WAKE_INODE_STEP = 3,	/* inode allocations since the last wake crossed the step */
	EVICTD_WAKE_DIRECT_RECLAIM = 4,	/* a task entered direct reclaim (value: order) */
	EVICTD_WAKE_KSWAPD = 5,		/* kswapd was woken (value: order) */
	EVICTD_WAKE_MEMCG_RECLAIM = 6,	/* a task entered memcg limit reclaim (value: order) */
	EVICTD_WAKE_OOM_KILL = 7,	/* the kernel chose an OOM victim (value: its pid) */
};

/* evictd_wake.cgroup_id of an OOM kill on a kernel whose mark_victim passes only a pid. */
#define EVICTD_CGROUP_ID_UNKNOWN 0

/* One ring-buffer record. ktime_ns is bpf_ktime_get_ns() (CLOCK_MONOTONIC) at submit time,
 * so the handler can measure event->handler latency. cgroup_id is a cgroup v2 id: of the
 * current task, or of the OOM victim. value: see enum evictd_wake_type (for the *_STEP types,
 * the amount accumulated since the previous wake-up of that group). */
struct evictd_wake {
	__u32 type;
	__u32 cpu;
	__u64 ktime_ns;
	__u64 cgroup_id;
	__u64 value;
};

/* evictd_wake_config.flags */
#define EVICTD_CFG_WAKE_ON_RECLAIM (1U << 0)	/* reclaim tracepoints submit a wake-up */

/* Per group: wake when `step` units (pages / tasks / inodes) accumulated since the last
 * wake-up, at most once per min_interval_ns. step 0 = no step wake-ups for this group.
 * flush_batch: each CPU folds its private count into the shared total every flush_batch
 * units (set by the loader to step / (4 * nr_cpus), at least 1), so the shared counter is
 * touched rarely and a crossing is seen after at most step + step / 4 units. */
struct evictd_wake_group_config {
	__u64 step;
	__u64 min_interval_ns;
	__u64 flush_batch;
};

/* wake_config map, 1 entry, written by userspace. Bumping generation is the baseline:
 * every CPU drops its unflushed counts when it sees a new generation. */
struct evictd_wake_config {
	struct evictd_wake_group_config memory;	/* unit: pages inserted into an LRU list */
	struct evictd_wake_group_config pids;	/* unit: forks (processes and threads) */
	struct evictd_wake_group_config inodes;	/* unit: inodes allocated */
	__u32 flags;				/* EVICTD_CFG_* */
	__u32 reserved;
	__u64 generation;
};

/* The programs that can pace memory wake-ups (doc/DESIGN.md "The memory hook"): each counts
 * the pages it saw into evictd_wake_pending.memory_hook_pages[hook], so the loader can
 * check that the one attached fires (bpf_loader_check_memory_hook). */
enum evictd_memory_hook {
	EVICTD_MEMORY_HOOK_CHARGE = 0,		/* fentry page_counter_try_charge */
	EVICTD_MEMORY_HOOK_BUDDY = 1,		/* mm_page_alloc_zone_locked */
	EVICTD_MEMORY_HOOK_LRU = 2,		/* mm_lru_insertion */
	EVICTD_MEMORY_HOOK_PAGE_ALLOC = 3,	/* mm_page_alloc (benchmarks only) */
	EVICTD_MEMORY_HOOK_COUNT = 4,
	EVICTD_MEMORY_HOOK_NONE = 5,		/* account_step() of another group */
};

/* Per-CPU amounts not yet folded into the shared wake-up state (fewer than flush_batch
 * each; dropped when generation changes), and the pages each memory hook saw since load
 * (never reset). Not pinned: private to one loader. */
struct evictd_wake_pending {
	__u64 generation;
	__u64 unflushed[EVICTD_GROUP_COUNT];
	__u64 memory_hook_pages[EVICTD_MEMORY_HOOK_COUNT];
};

/* Counters per cgroup v2 id (cgroup_stats map). The key is the v2 (default hierarchy) id of
 * the task that caused the event: bpf_get_current_cgroup_id(), the forked child's cgroup, or
 * the OOM victim's cgroup. v2 ids equal the inode number of the cgroup directory. A hybrid
 * host's v1 hierarchies have their own id spaces; they are never mixed in here. */
struct evictd_cgroup_stats {
	__u64 reclaim_entries;		/* direct + memcg reclaim entered by its tasks */
	__u64 reclaim_stall_ns;		/* time its tasks spent in them (begin -> end) */
	__u64 oom_kills;		/* kernel OOM victims (mark_victim) */
	__u64 forks;			/* tasks (processes and threads) created in it */
	__u64 exits;			/* tasks that exited in it; live delta = forks - exits */
	__u64 inode_allocs;		/* inodes its tasks allocated (see bpf/evictd.bpf.c) */
	__u64 inode_frees;		/* inodes its tasks released */
};

/* Page-cache / LRU counters per memory cgroup (memcg_stats map), keyed by the cgroup id of
 * the folio's charged memcg: the v2 id on a cgroup v2 host, the v1 memory hierarchy's id on
 * a v1/hybrid host (hence a separate map). Key 0: folios charged to no memcg. Unit: pages
 * (a large folio counts as all of its pages). */
struct evictd_memcg_stats {
	__u64 file_added_pages;		/* mm_filemap_add_to_page_cache */
	__u64 file_removed_pages;	/* mm_filemap_delete_from_page_cache */
	__u64 file_activated_pages;	/* mm_lru_activate of file folios: inactive -> active */
};

/* Node-wide counters (node_stats, per-CPU array of 1: sum over CPUs). */
struct evictd_node_stats {
	__u64 forks;
	__u64 exits;
	__u64 oom_kills;
	__u64 direct_reclaims;
	__u64 memcg_reclaims;
	__u64 kswapd_wakes;
	__u64 reclaim_stall_ns;
	__u64 lru_inserted_pages;	/* mm_lru_insertion, anon and file (--bpf-inspect only) */
	__u64 file_added_pages;
	__u64 file_removed_pages;
	__u64 file_activated_pages;
	__u64 shrink_inactive_file_scanned;	/* mm_vmscan_lru_shrink_inactive, file LRU */
	__u64 shrink_inactive_file_reclaimed;
	__u64 shrink_inactive_anon_scanned;
	__u64 shrink_inactive_anon_reclaimed;
	__u64 inode_allocs;
	__u64 inode_frees;
	__u64 wakeups_sent;
	__u64 wakeups_dropped;		/* ring buffer full */
	__u64 wakeups_rate_limited;	/* crossing seen inside min_interval_ns */
	__u64 cgroup_map_full;		/* a counter update found no free map slot */
};

#endif /* EVICTD_SHARED_H */
