/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The BPF data plane behind one small API: everything libbpf is in user/bpf_loader/.
 *
 * Daemon use:
 *	struct bpf_loader *bpf;
 *	if (bpf_loader_open(&bpf, &opts) < 0)		// logged once; fall back to polling
 *		bpf = NULL;
 *	epoll_ctl(ep, EPOLL_CTL_ADD, bpf_loader_ring_fd(bpf), EPOLLIN);
 *	bpf_loader_set_steps(bpf, &steps);		// after every signal read
 *	... on EPOLLIN: bpf_loader_consume(bpf, on_wake, ctx);
 *	bpf_loader_destroy(bpf, true);			// clean exit: unpin
 */
#ifndef EVICTD_BPF_LOADER_H
#define EVICTD_BPF_LOADER_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "evictd.h"

struct bpf_loader;

struct bpf_loader_opts {
	/* Where the counter maps are pinned; NULL: EVICTD_PIN_DIR_DEFAULT. The directory is
	 * created 0700, pins are 0600. When it is not on a bpffs, bpffs is mounted on its
	 * parent directory first. */
	const char *pin_dir;
	bool no_pin;			/* keep the maps private to this process */
	size_t ringbuf_bytes;		/* 0: 256 KiB; else a power of two >= page size */
	bool force_raw_tp;		/* skip tp_btf (tests, kernels with broken BTF) */
	/* Also attach the programs that only feed the inspection maps (cgroup_stats,
	 * memcg_stats, the page-cache, exit, inode-free and reclaim-stall counters) and make the
	 * wake-up programs update cgroup_stats. Off by default: they cost the most on the hot
	 * paths and evictd itself reads none of it (doc/DESIGN.md "BPF: what runs by default"). */
	bool inspect;
	/* With inspect: leave out the per-memcg page-cache programs (mm_filemap_add_to_page_cache,
	 * mm_filemap_delete_from_page_cache, mm_lru_activate), which run once per folio. */
	bool no_page_cache;
	/* The hook that paces memory wake-ups (doc/DESIGN.md "The memory hook"). Default:
	 * memcg charge batches (fentry on page_counter_try_charge); where that cannot attach
	 * (fentry refused, no such function, raw_tp only, the memory controller disabled),
	 * buddy allocations (mm_page_alloc_zone_locked) with mm_lru_insertion attached beside
	 * it only while a step is within twice what the per-CPU page lists hold
	 * (bpf_loader_set_steps); mm_lru_insertion alone where neither exists. The others
	 * load one hook alone, to measure the candidates (tools/bench/bpf-overhead.sh). */
	enum bpf_loader_memory_hook {
		BPF_MEMORY_HOOK_CHARGE = 0,
		BPF_MEMORY_HOOK_LRU_INSERTION = 1,
		BPF_MEMORY_HOOK_PAGE_ALLOC = 2,
		BPF_MEMORY_HOOK_BUDDY = 3,
	} memory_hook;
	/* Where the per-CPU page-list counts are read (NULL: /proc/zoneinfo); tests. */
	const char *zoneinfo_path;
	/* How long a read of it stands (0: a second; negative: read on every step; tests). */
	int64_t zoneinfo_max_age_ns;
	/* Tests: load this mark_victim variant (1 task, 2 pid) instead of the one the kernel's
	 * BTF names; 0: from the BTF. */
	int force_mark_victim_shape;
	/* Tests: memory hooks (bits of enum evictd_memory_hook) whose programs attach but do
	 * nothing, as a hook the kernel never calls; bpf_loader_check_memory_hook() must then
	 * fall back. 0 in production. */
	uint32_t muted_memory_hooks;
	/* Where the kernel's page allocations are read (NULL: /proc/vmstat); tests. */
	const char *vmstat_path;
};

/* The argument shape of the kernel's mark_victim tracepoint, from its BTF (the
 * btf_trace_mark_victim typedef: a pointer to void (*)(void *, <arg>, ...)). */
enum bpf_loader_mark_victim_shape {
	BPF_MARK_VICTIM_UNKNOWN = 0,	/* no such typedef, or an argument we do not know */
	BPF_MARK_VICTIM_TASK = 1,	/* struct task_struct *task (6.1 Debian, 6.9+) */
	BPF_MARK_VICTIM_PID = 2,	/* int pid (6.2 .. 6.8) */
};
struct btf;
enum bpf_loader_mark_victim_shape bpf_loader_mark_victim_shape(const struct btf *btf);
/* "task_struct *", "int pid", "unknown". */
const char *bpf_loader_mark_victim_shape_name(enum bpf_loader_mark_victim_shape shape);

/* Loads, pins and attaches. On success *out is set and the number of attached programs is
 * returned. On failure one error line is logged and a negative errno is returned:
 * -EPERM (not root / no CAP_BPF), -ENOENT (no kernel BTF or no tracepoint could attach),
 * -EOPNOTSUPP (kernel too old: no ring buffer), others from libbpf. */
int bpf_loader_open(struct bpf_loader **out, const struct bpf_loader_opts *opts);

/* The only place evictd mounts a bpffs, and only when nothing is mounted there. */
#define BPFFS_DEFAULT_MOUNT "/sys/fs/bpf"
/* May pin_dir hold the pins? On a bpffs, or new inside one, or new directly inside
 * BPFFS_DEFAULT_MOUNT while nothing is mounted there (*mount_needed). Else negative errno and
 * why (for a one-line error; --validate and start-up refuse with exit 2). */
int bpf_loader_check_pin_dir(const char *pin_dir, bool *mount_needed, char *why, size_t len);

/* Tear down. unpin=true removes the pins (clean exit); false leaves them for a restart,
 * which carries the counters over. NULL is fine. */
void bpf_loader_destroy(struct bpf_loader *loader, bool unpin);

/* Detach (false) or re-attach (true) every program that attached at open, and the on-demand
 * memory hook as the last steps want it, keeping maps and counters: e.g. a daemon told to stop using BPF on reload, or an A/B overhead benchmark.
 * Returns the number attached afterwards or a negative errno. */
int bpf_loader_set_attached(struct bpf_loader *loader, bool attached);

/* Filesystem module tracepoints (ext4, xfs) that did not exist at open, still waiting. */
unsigned int bpf_loader_late_pending(const struct bpf_loader *loader);
/* Attach those whose module is loaded now (raw_tp, logged); returns how many. Cheap: one
 * syscall per waiting tracepoint; call every few seconds while any is pending. */
int bpf_loader_attach_late(struct bpf_loader *loader);

/* fd to poll for EPOLLIN: readable while wake-up records are waiting. */
int bpf_loader_ring_fd(const struct bpf_loader *loader);

/* Called once per record, in the consuming thread; a negative return stops consuming. */
typedef int (*bpf_loader_wake_fn)(void *ctx, const struct evictd_wake *wake);

/* Hand every waiting record to fn without blocking. Returns the number of records, or fn's
 * negative return, or another negative errno. */
int bpf_loader_consume(struct bpf_loader *loader, bpf_loader_wake_fn fn, void *ctx);

/* Wake-up steps (0 = none for that group) and minimum intervals between wake-ups. */
struct bpf_loader_steps {
	uint64_t memory_pages;		/* e.g. (available - threshold) / 4 / page size */
	uint64_t pids_tasks;
	uint64_t inodes;
	uint64_t min_interval_ns[EVICTD_GROUP_COUNT];	/* indexed by enum evictd_wake_group */
	bool wake_on_reclaim;		/* direct/memcg reclaim and kswapd wake at once */
};

/* Write the steps and start a new baseline: counts from before this call are dropped.
 * With the buddy memory hook, also attaches mm_lru_insertion when the memory step is at most
 * twice the pages on the per-CPU lists (which the buddy hook does not see being handed out),
 * and detaches it when the step is larger again; a failed attach is logged, not returned. */
int bpf_loader_set_steps(struct bpf_loader *loader, const struct bpf_loader_steps *steps);

/* Pages on the per-CPU page lists: the sum of every pageset's "count:" in a /proc/zoneinfo
 * text. 0, or -EINVAL when the text has no pageset at all. */
int bpf_loader_pcp_pages(const char *zoneinfo, uint64_t *pages);

/* Counters of one cgroup v2 id (stat st_ino of its directory): 0, or -ENOENT when the
 * programs have not seen it yet. */
int bpf_loader_read_cgroup(const struct bpf_loader *loader, uint64_t cgroup_id,
			   struct evictd_cgroup_stats *out);
/* Page-cache counters of one memory cgroup id (v2 id; v1 memory hierarchy id on v1). */
int bpf_loader_read_memcg(const struct bpf_loader *loader, uint64_t memcg_id,
			  struct evictd_memcg_stats *out);
/* Node totals, summed over CPUs. */
int bpf_loader_read_node(const struct bpf_loader *loader, struct evictd_node_stats *out);
/* Every cgroup_stats entry; a non-zero return from fn stops and is returned. */
int bpf_loader_for_each_cgroup(const struct bpf_loader *loader,
			       int (*fn)(void *ctx, uint64_t cgroup_id,
					 const struct evictd_cgroup_stats *stats),
			       void *ctx);

/* ---- the memory hook's self-check (doc/DESIGN.md "The memory hook") ---- */

enum bpf_loader_hook_check {
	BPF_HOOK_CHECK_NONE = 0,	/* no memory hook attached (or detached): nothing to do */
	BPF_HOOK_CHECK_PENDING,		/* not decided yet: call again later */
	BPF_HOOK_CHECK_CONFIRMED,	/* the hook saw pages: done until the hook changes */
	BPF_HOOK_CHECK_FELL_BACK,	/* it saw none while the kernel allocated plenty: detached,
					 * the next one attached (logged); call again to check it */
};
/* Compare the pages the memory hook saw with the kernel's page allocations since the first
 * call for this hook; never blocks (two small reads). Call every second or so until it
 * returns CONFIRMED or NONE. */
enum bpf_loader_hook_check bpf_loader_check_memory_hook(struct bpf_loader *loader);
/* The tracepoint (or function) pacing memory now, NULL when none. */
const char *bpf_loader_memory_hook(const struct bpf_loader *loader);
/* How many hooks the self-check detached. */
unsigned int bpf_loader_memory_hook_fallbacks(const struct bpf_loader *loader);
/* Pages the named memory hook's program counted since load (summed over CPUs). */
int bpf_loader_memory_hook_pages(const struct bpf_loader *loader, const char *hook,
				 uint64_t *pages);
/* The sum of the pgalloc_* counters of a /proc/vmstat text: 0, or -EINVAL without any. */
int bpf_loader_vmstat_pgalloc(const char *vmstat, uint64_t *pages);
/* nr_free_pages of a /proc/vmstat text (the buddy lists' free pages): 0, or -EINVAL. */
int bpf_loader_vmstat_free(const char *vmstat, uint64_t *pages);

/* ---- status ---- */

struct bpf_loader_prog {
	const char *tracepoint;		/* e.g. "sched_process_fork" (or a function, fentry) */
	const char *attach;		/* "tp_btf", "raw_tp", "fentry", or NULL when not attached */
	const char *skip_reason;	/* why not attached, NULL when attached */
};

/* Every tracepoint evictd knows, attached or not; *count entries. */
const struct bpf_loader_prog *bpf_loader_progs(const struct bpf_loader *loader, size_t *count);
unsigned int bpf_loader_attached_count(const struct bpf_loader *loader);
/* Is this tracepoint attached (by either kind)? */
bool bpf_loader_attached(const struct bpf_loader *loader, const char *tracepoint);
/* The pin directory, or NULL when not pinning. */
const char *bpf_loader_pin_dir(const struct bpf_loader *loader);
/* What happened to pins left by a previous run. */
struct bpf_loader_pin_report {
	unsigned int created;		/* no old pin */
	unsigned int reused;		/* compatible old pin: counters carried over */
	unsigned int replaced;		/* incompatible old pin: old counters dropped */
};
void bpf_loader_pin_report(const struct bpf_loader *loader, struct bpf_loader_pin_report *out);

/* "fork-step", "oom-kill", ... ; "unknown" for anything else. */
const char *bpf_loader_wake_type_name(uint32_t type);
/* Wake-up records of this type read by bpf_loader_consume since the loader opened (0 for an
 * unknown type): evictd_bpf_wakeups_received_total. */
uint64_t bpf_loader_wakeups_received(const struct bpf_loader *loader, uint32_t type);
/* The signal group to re-read for a wake-up type (EVICTD_GROUP_COUNT when unknown). */
enum evictd_wake_group bpf_loader_wake_group(uint32_t type);

#endif
