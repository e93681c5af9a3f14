// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * evictd BPF data plane: per-cgroup counters and rate-limited ring-buffer wake-ups.
 *
 * Every tracepoint has two programs with one body: "<tp>_btf" (tp_btf) and "<tp>_raw"
 * (raw_tp). The loader keeps exactly one of each pair (tp_btf when the kernel's BTF has
 * btf_trace_<tp>, raw_tp otherwise) or neither when the tracepoint does not exist. Bodies
 * read kernel memory through CO-RE probe reads, except the folio fields on the per-folio
 * hot path, which tp_btf programs load directly (FOLIO_READ): so the same code verifies as
 * tp_btf and as raw_tp, on 6.1 and on 6.18.
 *
 * Never one record per event: events only bump counters (per cgroup, per memcg, per node)
 * and per-CPU running amounts; a ring-buffer wake-up goes out when an amount crosses the
 * step userspace set, on reclaim (if asked), rate-limited, and on every kernel OOM kill.
 *
 * Kernel differences handled here (checked against the BTF of Debian 6.1.0-56 and 6.18):
 *  - sched_process_exit gained a bool (6.18); only the first argument is read.
 *  - struct folio and struct page: bpf/folio.h (flags and page counts on every layout,
 *    5.14's struct page included); PG_head / PG_swapbacked have different values: enum
 *    values are CO-RE relocated.
 *  - mm_lru_insertion/activate, mm_filemap_*: struct folio * on both (a struct page * on
 *    5.14/5.15 reads the same: a folio starts with its head page).
 *  - ext4 and xfs are modules on Debian 6.1: their tracepoints exist only once the module
 *    is loaded (module BTF); the loader skips them otherwise.
 *
 * Inode coverage (inode_allocs / inode_frees, attributed to the current task's cgroup):
 *  - ext4: ext4_allocate_inode / ext4_free_inode, exact on-disk allocation and release
 *    (6.1 and 6.18). The free fires where the last reference is dropped: usually the
 *    unlinking task, a kworker or another process when the file was still open.
 *  - xfs: xfs_create / xfs_remove (6.1 and 6.18), namespace operations, approximate: a
 *    create is counted before it can fail, a remove is counted even when other hard links
 *    keep the inode.
 *  - not covered: tmpfs/shmem, btrfs (btrfs_inode_new exists but has no matching on-disk
 *    free tracepoint), overlayfs upper dirs count on their backing filesystem.
 * Userspace re-reads statfs on an inode wake-up, so approximations only move the wake time.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "evictd.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#ifndef BPF_NOEXIST
#define BPF_NOEXIST 1
#endif

/* Set by the loader before load (bpf_loader_opts.inspect): the per-cgroup hash updates that
 * only feed the inspection maps (cgroup_stats, reclaim stall times). Off by default: the
 * verifier drops the dead branches, so the default programs never touch a hash map
 * (doc/DESIGN.md "BPF: what runs by default"). */
const volatile bool inspect_counters = false;

/* Tests only (bpf_loader_opts.muted_memory_hooks): memory hooks, by bit of enum
 * evictd_memory_hook, whose programs return at once: a hook that attaches and never fires,
 * as an inlined or renamed kernel function leaves it, for the loader's self-check. */
const volatile __u32 muted_memory_hooks = 0;

#define MAX_CGROUPS 16384
#define MAX_RECLAIMERS 4096
#define RINGBUF_BYTES (256 * 1024)	/* the loader may resize it before load */

/* Counters live as long as the pins: LRU so dead cgroups age out instead of filling up. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MAX_CGROUPS);
	__type(key, __u64);
	__type(value, struct evictd_cgroup_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cgroup_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MAX_CGROUPS);
	__type(key, __u64);
	__type(value, struct evictd_memcg_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} memcg_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct evictd_node_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} node_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct evictd_wake_config);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} wake_config SEC(".maps");

/* Shared wake-up state: amount accumulated per group since the last wake-up of that group,
 * and when that was. Atomics only (several CPUs flush into it). */
struct wake_state {
	__u64 generation;		/* wake_config generation the sums belong to */
	__u64 accumulated[EVICTD_GROUP_COUNT];
	__u64 last_wake_ns[EVICTD_GROUP_COUNT];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct wake_state);
} wake_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct evictd_wake_pending);
} wake_pending SEC(".maps");

/* When the current task entered reclaim, keyed by thread id; removed at reclaim end. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_RECLAIMERS);
	__type(key, __u32);
	__type(value, __u64);
} reclaim_start_ns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RINGBUF_BYTES);
} wakeups SEC(".maps");

#include "folio.h"

/* ---- small helpers ---------------------------------------------------------------------- */

static __always_inline struct evictd_node_stats *node_stats_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&node_stats, &zero);
}

static __always_inline struct evictd_cgroup_stats *cgroup_stats_get(__u64 cgroup_id,
								     struct evictd_node_stats *node)
{
	struct evictd_cgroup_stats *stats, zero = {};

	stats = bpf_map_lookup_elem(&cgroup_stats, &cgroup_id);
	if (stats)
		return stats;
	/* -EEXIST: another CPU created it first, fine. */
	bpf_map_update_elem(&cgroup_stats, &cgroup_id, &zero, BPF_NOEXIST);
	stats = bpf_map_lookup_elem(&cgroup_stats, &cgroup_id);
	if (!stats && node)
		node->cgroup_map_full++;
	return stats;
}

static __always_inline struct evictd_memcg_stats *memcg_stats_get(__u64 memcg_id,
								   struct evictd_node_stats *node)
{
	struct evictd_memcg_stats *stats, zero = {};

	stats = bpf_map_lookup_elem(&memcg_stats, &memcg_id);
	if (stats)
		return stats;
	bpf_map_update_elem(&memcg_stats, &memcg_id, &zero, BPF_NOEXIST);
	stats = bpf_map_lookup_elem(&memcg_stats, &memcg_id);
	if (!stats && node)
		node->cgroup_map_full++;
	return stats;
}

/* cgroup v2 id of a task: task->cgroups->dfl_cgrp->kn->id (what bpf_get_current_cgroup_id()
 * returns for current). */
static __always_inline __u64 task_cgroup_id(struct task_struct *task)
{
	return BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
}

static __always_inline __u32 current_tid(void)
{
	return (__u32)bpf_get_current_pid_tgid();
}

/* Last memcg -> cgroup id resolved on this CPU: consecutive page-cache events mostly belong
 * to one memcg, and resolving costs three probe reads. Re-resolved every
 * MEMCG_CACHE_USES uses, so a memcg freed and another allocated at the same address can
 * be misattributed for that many events at most. */
#define MEMCG_CACHE_USES 4096

struct memcg_id_cache {
	__u64 memcg_data;
	__u64 cgroup_id;
	__u64 uses;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct memcg_id_cache);
} memcg_id_cache SEC(".maps");

/* Cgroup id of the memcg the folio is charged to (folio_memcg() for non-kmem folios), 0 when
 * uncharged or when this kernel has no memcg. */
static __always_inline __u64 folio_memcg_id(struct folio *folio, bool direct)
{
	struct memcg_id_cache *cache;
	unsigned long memcg_data;
	struct mem_cgroup *memcg;
	__u32 zero = 0;
	__u64 id;

	if (!bpf_core_field_exists(folio->memcg_data))
		return 0;
	memcg_data = FOLIO_READ(direct, folio, struct folio, memcg_data);
	/* Low bits are MEMCG_DATA_* flags (objcg/objext vectors, kmem): not a page-cache memcg. */
	if (!memcg_data || (memcg_data & 3))
		return 0;
	cache = bpf_map_lookup_elem(&memcg_id_cache, &zero);
	if (cache && cache->memcg_data == memcg_data && ++cache->uses < MEMCG_CACHE_USES)
		return cache->cgroup_id;
	memcg = (struct mem_cgroup *)memcg_data;
	id = BPF_CORE_READ(memcg, css.cgroup, kn, id);
	if (cache) {
		cache->memcg_data = memcg_data;
		cache->cgroup_id = id;
		cache->uses = 0;
	}
	return id;
}

/* ---- wake-ups -------------------------------------------------------------------------- */

static __always_inline struct evictd_wake_group_config *
group_config(struct evictd_wake_config *cfg, enum evictd_wake_group group)
{
	switch (group) {
	case EVICTD_GROUP_MEMORY:
		return &cfg->memory;
	case EVICTD_GROUP_PIDS:
		return &cfg->pids;
	default:
		return &cfg->inodes;
	}
}

/* cgroup_id 0: the current task's, looked up only now (off the hot path). */
static __always_inline void submit_wake(__u32 type, __u64 cgroup_id, __u64 value,
					struct evictd_node_stats *node)
{
	struct evictd_wake *wake;

	if (!cgroup_id)
		cgroup_id = bpf_get_current_cgroup_id();

	wake = bpf_ringbuf_reserve(&wakeups, sizeof(*wake), 0);
	if (!wake) {
		if (node)
			node->wakeups_dropped++;
		return;
	}
	wake->type = type;
	wake->cpu = bpf_get_smp_processor_id();
	wake->cgroup_id = cgroup_id;
	wake->value = value;
	wake->ktime_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(wake, 0);
	if (node)
		node->wakeups_sent++;
}

/* Take the right to wake userspace for this group: at most once per min_interval_ns over
 * all CPUs. The compare-and-swap makes exactly one of several racing CPUs win. */
static __always_inline bool claim_wake(__u64 *last_wake_ns, __u64 min_interval_ns, __u64 now)
{
	__u64 last = *(volatile __u64 *)last_wake_ns;

	if (last > now || (last && now - last < min_interval_ns))
		return false;
	return __sync_val_compare_and_swap(last_wake_ns, last, now) == last;
}

/* Add amount to the group's running count; wake userspace when the count since the last
 * wake-up crosses the step. Cheap path: a per-CPU add and compare. cgroup_id: as for
 * submit_wake(); node may be NULL (looked up only when a wake-up is due). */
static __always_inline void account_step(enum evictd_wake_group group, __u32 wake_type,
					 __u64 amount, __u64 cgroup_id,
					 struct evictd_node_stats *node,
					 enum evictd_memory_hook hook)
{
	struct evictd_wake_group_config *gcfg;
	struct evictd_wake_config *cfg;
	struct evictd_wake_pending *pending;
	struct wake_state *state;
	__u64 batch, total, now;
	__u32 zero = 0;

	if (hook < EVICTD_MEMORY_HOOK_COUNT && (muted_memory_hooks & (1U << hook)))
		return;
	pending = bpf_map_lookup_elem(&wake_pending, &zero);
	if (!pending)
		return;
	/* Before any step: the loader's self-check must see the hook fire without one. */
	if (hook < EVICTD_MEMORY_HOOK_COUNT)
		pending->memory_hook_pages[hook] += amount;
	cfg = bpf_map_lookup_elem(&wake_config, &zero);
	if (!cfg)
		return;
	gcfg = group_config(cfg, group);
	if (!gcfg->step)
		return;
	if (pending->generation != cfg->generation) {
		/* New userspace baseline: counts from before it no longer matter. */
		pending->generation = cfg->generation;
		pending->unflushed[EVICTD_GROUP_MEMORY] = 0;
		pending->unflushed[EVICTD_GROUP_PIDS] = 0;
		pending->unflushed[EVICTD_GROUP_INODES] = 0;
	}
	pending->unflushed[group] += amount;
	batch = gcfg->flush_batch ? gcfg->flush_batch : 1;
	if (pending->unflushed[group] < batch)
		return;
	amount = pending->unflushed[group];
	pending->unflushed[group] = 0;

	state = bpf_map_lookup_elem(&wake_state, &zero);
	if (!state)
		return;
	if (state->generation != cfg->generation) {
		__u64 seen = state->generation;

		if (__sync_val_compare_and_swap(&state->generation, seen, cfg->generation) == seen) {
			state->accumulated[EVICTD_GROUP_MEMORY] = 0;
			state->accumulated[EVICTD_GROUP_PIDS] = 0;
			state->accumulated[EVICTD_GROUP_INODES] = 0;
		}
	}
	__sync_fetch_and_add(&state->accumulated[group], amount);
	total = *(volatile __u64 *)&state->accumulated[group];
	if (total < gcfg->step)
		return;
	if (!node)
		node = node_stats_get();	/* looked up off the per-event path */
	now = bpf_ktime_get_ns();
	if (!claim_wake(&state->last_wake_ns[group], gcfg->min_interval_ns, now)) {
		if (node)
			node->wakeups_rate_limited++;
		return;
	}
	/* Subtract what is reported, keep what other CPUs added meanwhile. */
	__sync_fetch_and_sub(&state->accumulated[group], total);
	submit_wake(wake_type, cgroup_id, total, node);
}

/* Reclaim means the kernel is at its watermarks: wake at once (rate-limited with the memory
 * group's interval) when userspace asked for it. */
static __always_inline void reclaim_wake(__u32 wake_type, __u64 value, __u64 cgroup_id,
					 struct evictd_node_stats *node)
{
	struct evictd_wake_config *cfg;
	struct wake_state *state;
	__u32 zero = 0;

	cfg = bpf_map_lookup_elem(&wake_config, &zero);
	if (!cfg || !(cfg->flags & EVICTD_CFG_WAKE_ON_RECLAIM))
		return;
	state = bpf_map_lookup_elem(&wake_state, &zero);
	if (!state)
		return;
	if (!claim_wake(&state->last_wake_ns[EVICTD_GROUP_MEMORY], cfg->memory.min_interval_ns,
			bpf_ktime_get_ns())) {
		if (node)
			node->wakeups_rate_limited++;
		return;
	}
	submit_wake(wake_type, cgroup_id, value, node);
}

/* ---- memory cgroup events --------------------------------------------------------------- */

static __always_inline int on_reclaim_begin(bool memcg, int order)
{
	struct evictd_node_stats *node = node_stats_get();
	__u64 cgroup_id = bpf_get_current_cgroup_id();
	struct evictd_cgroup_stats *stats;
	__u32 tid = current_tid();
	__u64 now = bpf_ktime_get_ns();

	if (inspect_counters) {
		bpf_map_update_elem(&reclaim_start_ns, &tid, &now, BPF_ANY);
		stats = cgroup_stats_get(cgroup_id, node);
		if (stats)
			__sync_fetch_and_add(&stats->reclaim_entries, 1);
	}
	if (node) {
		if (memcg)
			node->memcg_reclaims++;
		else
			node->direct_reclaims++;
	}
	reclaim_wake(memcg ? EVICTD_WAKE_MEMCG_RECLAIM : EVICTD_WAKE_DIRECT_RECLAIM, order,
		     cgroup_id, node);
	return 0;
}

static __always_inline int on_reclaim_end(void)
{
	struct evictd_node_stats *node;
	struct evictd_cgroup_stats *stats;
	__u32 tid = current_tid();
	__u64 *start, stalled;

	start = bpf_map_lookup_elem(&reclaim_start_ns, &tid);
	if (!start)
		return 0;	/* began before we attached */
	stalled = bpf_ktime_get_ns() - *start;
	bpf_map_delete_elem(&reclaim_start_ns, &tid);
	node = node_stats_get();
	if (node)
		node->reclaim_stall_ns += stalled;
	stats = cgroup_stats_get(bpf_get_current_cgroup_id(), node);
	if (stats)
		__sync_fetch_and_add(&stats->reclaim_stall_ns, stalled);
	return 0;
}

static __always_inline int on_kswapd_wake(int order)
{
	struct evictd_node_stats *node = node_stats_get();

	if (node)
		node->kswapd_wakes++;
	/* current is the allocating task that woke kswapd. */
	reclaim_wake(EVICTD_WAKE_KSWAPD, order, 0, node);
	return 0;
}

/* Rare (one per kernel OOM kill): counted per cgroup even without inspect_counters. */
static __always_inline int on_mark_victim(struct task_struct *victim)
{
	struct evictd_node_stats *node = node_stats_get();
	__u64 cgroup_id = task_cgroup_id(victim);
	struct evictd_cgroup_stats *stats;

	if (node)
		node->oom_kills++;
	stats = cgroup_stats_get(cgroup_id, node);
	if (stats)
		__sync_fetch_and_add(&stats->oom_kills, 1);
	/* Always reported: the kernel already killed, userspace must know now. */
	submit_wake(EVICTD_WAKE_OOM_KILL, cgroup_id, BPF_CORE_READ(victim, pid), node);
	return 0;
}

/* mark_victim on 6.2 .. 6.8 passes only the victim's pid (TP_PROTO(int pid) in
 * include/trace/events/oom.h), 6.1 (Debian) and 6.9+ a task_struct *: the loader loads the
 * variant matching the running kernel's btf_trace_mark_victim (bpf_loader_mark_victim_shape).
 * With a pid only, the victim's cgroup is unknown here: reported as cgroup id 0. */
static __always_inline int on_mark_victim_pid(int pid)
{
	struct evictd_node_stats *node = node_stats_get();

	if (node)
		node->oom_kills++;
	submit_wake(EVICTD_WAKE_OOM_KILL, EVICTD_CGROUP_ID_UNKNOWN, (__u64)pid, node);
	return 0;
}

/* ---- page cache / LRU ------------------------------------------------------------------- */

/*
 * Every page that enters an LRU list (anon faults, page-cache fills): memory being put to
 * use, the far-from-watermark signal. The hottest program: no per-memcg attribution here
 * (file pages are counted per memcg at mm_filemap_add_to_page_cache), just the page count.
 */
static __always_inline int on_lru_insertion(struct folio *folio, bool direct)
{
	__u64 pages = folio_pages(folio, folio_flags(folio, direct), direct);
	struct evictd_node_stats *node = NULL;

	/* Once per folio: the node total only for inspection, one lookup less by default. */
	if (inspect_counters) {
		node = node_stats_get();
		if (node)
			node->lru_inserted_pages += pages;
	}
	account_step(EVICTD_GROUP_MEMORY, EVICTD_WAKE_MEMORY_STEP, pages, 0, node,
		     EVICTD_MEMORY_HOOK_LRU);
	return 0;
}

/*
 * Page allocations counted by order. Two tracepoints share this body:
 *  - mm_page_alloc_zone_locked: pages taken from the buddy lists under the zone lock
 *    (rmqueue_bulk refilling a per-CPU list, or a high-order request), not the pages served
 *    from a per-CPU list. The memory hook where fentry is refused (doc/DESIGN.md "The memory
 *    hook"): net use the per-CPU lists hide is at most what they held when the step was set,
 *    and near a threshold the loader attaches mm_lru_insertion beside it.
 *  - mm_page_alloc: every allocation; a candidate measured by tools/bench/bpf-overhead.sh
 *    (--memory-hook page-alloc), loaded only with bpf_loader_opts.memory_hook.
 * Kernel allocations (slab, page tables) are counted too: an earlier wake-up, never a later.
 */
static __always_inline int on_page_alloc(unsigned int order, enum evictd_memory_hook hook)
{
	account_step(EVICTD_GROUP_MEMORY, EVICTD_WAKE_MEMORY_STEP, 1ULL << (order & 31), 0,
		     NULL, hook);
	return 0;
}

enum page_cache_event {
	LRU_ACTIVATE,
	FILEMAP_ADD,
	FILEMAP_DELETE,
};

/* Page-cache changes, attributed to the memcg the folio is charged to. */
static __always_inline int on_page_cache(struct folio *folio, enum page_cache_event event,
					 bool direct)
{
	struct evictd_node_stats *node = node_stats_get();
	unsigned long flags = folio_flags(folio, direct);
	struct evictd_memcg_stats *stats;
	__u64 pages;

	if (event == LRU_ACTIVATE && folio_swap_backed(flags))
		return 0;	/* only the file LRU tells reclaimable from thrashing */
	pages = folio_pages(folio, flags, direct);
	stats = memcg_stats_get(folio_memcg_id(folio, direct), node);
	switch (event) {
	case LRU_ACTIVATE:
		if (stats)
			__sync_fetch_and_add(&stats->file_activated_pages, pages);
		if (node)
			node->file_activated_pages += pages;
		break;
	case FILEMAP_ADD:
		if (stats)
			__sync_fetch_and_add(&stats->file_added_pages, pages);
		if (node)
			node->file_added_pages += pages;
		break;
	case FILEMAP_DELETE:
		if (stats)
			__sync_fetch_and_add(&stats->file_removed_pages, pages);
		if (node)
			node->file_removed_pages += pages;
		break;
	}
	return 0;
}

static __always_inline int on_shrink_inactive(unsigned long scanned, unsigned long reclaimed,
					      int file)
{
	struct evictd_node_stats *node = node_stats_get();

	if (!node)
		return 0;
	if (file) {
		node->shrink_inactive_file_scanned += scanned;
		node->shrink_inactive_file_reclaimed += reclaimed;
	} else {
		node->shrink_inactive_anon_scanned += scanned;
		node->shrink_inactive_anon_reclaimed += reclaimed;
	}
	return 0;
}

/* ---- processes -------------------------------------------------------------------------- */

static __always_inline int on_fork(struct task_struct *child)
{
	struct evictd_node_stats *node = node_stats_get();
	/* The child's cgroup: differs from the parent's with CLONE_INTO_CGROUP. Only read for
	 * the inspection counters; a wake-up looks up the current task's when it is sent. */
	__u64 cgroup_id = inspect_counters ? task_cgroup_id(child) : 0;
	struct evictd_cgroup_stats *stats;

	if (node)
		node->forks++;
	if (inspect_counters) {
		stats = cgroup_stats_get(cgroup_id, node);
		if (stats)
			__sync_fetch_and_add(&stats->forks, 1);
	}
	account_step(EVICTD_GROUP_PIDS, EVICTD_WAKE_FORK_STEP, 1, cgroup_id, node,
		     EVICTD_MEMORY_HOOK_NONE);
	return 0;
}

static __always_inline int on_exit(void)
{
	struct evictd_node_stats *node = node_stats_get();
	struct evictd_cgroup_stats *stats;

	if (node)
		node->exits++;
	/* sched_process_exit runs in the exiting task. */
	stats = cgroup_stats_get(bpf_get_current_cgroup_id(), node);
	if (stats)
		__sync_fetch_and_add(&stats->exits, 1);
	return 0;
}

/* ---- inodes ----------------------------------------------------------------------------- */

static __always_inline int on_inode(bool alloc)
{
	struct evictd_node_stats *node = node_stats_get();
	struct evictd_cgroup_stats *stats = NULL;
	__u64 cgroup_id = 0;

	if (inspect_counters) {
		cgroup_id = bpf_get_current_cgroup_id();
		stats = cgroup_stats_get(cgroup_id, node);
	}
	if (alloc) {
		if (stats)
			__sync_fetch_and_add(&stats->inode_allocs, 1);
		if (node)
			node->inode_allocs++;
		account_step(EVICTD_GROUP_INODES, EVICTD_WAKE_INODE_STEP, 1, cgroup_id, node,
			     EVICTD_MEMORY_HOOK_NONE);
	} else {
		if (stats)
			__sync_fetch_and_add(&stats->inode_frees, 1);
		if (node)
			node->inode_frees++;
	}
	return 0;
}

/* ---- program pairs ---------------------------------------------------------------------- */

/* One tp_btf and one raw_tp program per tracepoint around the same body; `direct` tells
 * the body whether its pointer arguments are BTF-typed (see FOLIO_READ). */
#define EVICTD_TP(tp, body, ...)					\
	SEC("tp_btf/" #tp)						\
	int BPF_PROG(tp##_btf, ##__VA_ARGS__)				\
	{								\
		const bool direct __attribute__((unused)) = true;	\
									\
		return body;						\
	}								\
	SEC("raw_tp/" #tp)						\
	int BPF_PROG(tp##_raw, ##__VA_ARGS__)				\
	{								\
		const bool direct __attribute__((unused)) = false;	\
									\
		return body;						\
	}

/* The same, for a second argument shape of one tracepoint: programs <name>_btf / <name>_raw;
 * the loader picks the shape (see on_mark_victim_pid). */
#define EVICTD_TP_VARIANT(name, tp, body, ...)				\
	SEC("tp_btf/" #tp)						\
	int BPF_PROG(name##_btf, ##__VA_ARGS__)				\
	{								\
		return body;						\
	}								\
	SEC("raw_tp/" #tp)						\
	int BPF_PROG(name##_raw, ##__VA_ARGS__)				\
	{								\
		return body;						\
	}

EVICTD_TP(mm_vmscan_direct_reclaim_begin, on_reclaim_begin(false, order), int order)
EVICTD_TP(mm_vmscan_direct_reclaim_end, on_reclaim_end())
EVICTD_TP(mm_vmscan_memcg_reclaim_begin, on_reclaim_begin(true, order), int order)
EVICTD_TP(mm_vmscan_memcg_reclaim_end, on_reclaim_end())
EVICTD_TP(mm_vmscan_kswapd_wake, on_kswapd_wake(order), int nid, int zid, int order)
EVICTD_TP(mark_victim, on_mark_victim(task), struct task_struct *task)
EVICTD_TP_VARIANT(mark_victim_pid, mark_victim, on_mark_victim_pid(pid), int pid)

EVICTD_TP(mm_lru_insertion, on_lru_insertion(folio, direct), struct folio *folio)
EVICTD_TP(mm_page_alloc, on_page_alloc(order, EVICTD_MEMORY_HOOK_PAGE_ALLOC), struct page *page,
	  unsigned int order)
EVICTD_TP(mm_page_alloc_zone_locked, on_page_alloc(order, EVICTD_MEMORY_HOOK_BUDDY),
	  struct page *page, unsigned int order)

/*
 * The default memory hook (doc/DESIGN.md "BPF: what runs by default"): memcg charges, not
 * folios. try_charge_memcg() (mm/memcontrol.c) serves most charges from a per-CPU stock
 * and calls page_counter_try_charge() (mm/page_counter.c) only to refill it, with
 * MEMCG_CHARGE_BATCH (64) pages or the whole request when larger (a THP): about one call
 * per 64 pages of anon, page cache, shmem or kernel memory charged to any memcg, so a
 * page-cache read or a fork costs nothing per folio. Pages charged to no memcg (tasks in
 * the root cgroup) are not seen; on cgroup v1 with swap accounting memsw is charged too
 * and counted twice (an earlier wake-up, never a later one). Not a tracepoint: fentry,
 * BTF only; without it the loader attaches mm_page_alloc_zone_locked instead.
 */
SEC("fentry/page_counter_try_charge")
int BPF_PROG(page_counter_try_charge_fentry, struct page_counter *counter,
	     unsigned long nr_pages)
{
	account_step(EVICTD_GROUP_MEMORY, EVICTD_WAKE_MEMORY_STEP, nr_pages, 0, NULL,
		     EVICTD_MEMORY_HOOK_CHARGE);
	return 0;
}
EVICTD_TP(mm_lru_activate, on_page_cache(folio, LRU_ACTIVATE, direct), struct folio *folio)
EVICTD_TP(mm_filemap_add_to_page_cache, on_page_cache(folio, FILEMAP_ADD, direct),
	  struct folio *folio)
EVICTD_TP(mm_filemap_delete_from_page_cache, on_page_cache(folio, FILEMAP_DELETE, direct),
	  struct folio *folio)
EVICTD_TP(mm_vmscan_lru_shrink_inactive, on_shrink_inactive(scanned, reclaimed, file),
	  int nid, unsigned long scanned, unsigned long reclaimed, struct reclaim_stat *stat,
	  int priority, int file)

EVICTD_TP(sched_process_fork, on_fork(child), struct task_struct *parent,
	  struct task_struct *child)
EVICTD_TP(sched_process_exit, on_exit(), struct task_struct *task)

EVICTD_TP(ext4_allocate_inode, on_inode(true), struct inode *inode)
EVICTD_TP(ext4_free_inode, on_inode(false), struct inode *inode)
/* xfs is a module on Debian's kernels: its types are in the module's BTF, not in every
 * vmlinux.h (vmlinux/arm64's is from Debian's arm64 kernel). Only the pointer is passed. */
struct xfs_inode;
EVICTD_TP(xfs_create, on_inode(true), struct xfs_inode *dir)
EVICTD_TP(xfs_remove, on_inode(false), struct xfs_inode *dir)
