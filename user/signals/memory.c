// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* memory.available and the OOM guard (see signals.c for the formulas): /proc/meminfo, the
 * memory cgroup layout (v2, v1, hybrid) and the root working set. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/arith.h"
#include "signals/parts.h"
#include "sys/clock.h"

int signals_read_meminfo(const char *root, int64_t *mem_total, int64_t *mem_available)
{
	struct key_scan scan = { .keys = { "MemTotal", "MemAvailable" }, .nkeys = 2, .sep = ':',
				 .unit = "kB" };
	char path[PATH_MAX];
	int err;

	err = sig_path_join(path, sizeof(path), root, "/proc/meminfo", NULL);
	if (err)
		return err;
	err = sig_scan_keys(path, &scan);
	if (err)
		return err;
	if (scan.found != 3) {
		log_fail("%s: no %s line", path, scan.found & 1 ? "MemAvailable" : "MemTotal");
		return -ENODATA;
	}
	/* meminfo counts kB (cadvisor: `MemTotal:\s*([0-9]+) kB` times 1024). */
	*mem_total = mul_clamp((uint64_t)scan.values[0], 1024);
	*mem_available = mul_clamp((uint64_t)scan.values[1], 1024);
	return 0;
}

/* Whether a cgroup.controllers file names the memory controller. */
static bool controllers_list_memory(const char *path)
{
	char buf[512], *save, *word;

	if (sig_read_small(path, buf, sizeof(buf)) < 0)
		return false;
	for (word = strtok_r(buf, " \t\n", &save); word; word = strtok_r(NULL, " \t\n", &save))
		if (strcmp(word, "memory") == 0)
			return true;
	return false;
}

static enum cgroup_layout found_layout(enum cgroup_layout layout, const struct signal_source *source,
				       const char *dir, char *memory_dir, unsigned long memory_dir_len)
{
	if (memory_dir && sig_path_join(memory_dir, memory_dir_len, source->root, dir, NULL))
		return CGROUP_LAYOUT_UNKNOWN;
	log_debug("memory cgroup: %s at %.*s%s", layout == CGROUP_LAYOUT_V2 ? "v2" : "v1",
		  sig_root_len(source->root), source->root ? source->root : "", dir);
	return layout;
}

enum cgroup_layout signals_detect_cgroup_layout(const struct signal_source *source,
						char *memory_dir, unsigned long memory_dir_len)
{
	/* Pure v2 mounts the unified hierarchy on /sys/fs/cgroup, hybrid on .../unified;
	 * either counts only when the memory controller is enabled there. */
	static const char *const v2_default[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	static const char *const v1_default[] = { "/sys/fs/cgroup/memory" };
	const char *const *v2_dirs = v2_default, *const *v1_dirs = v1_default;
	size_t n_v2 = 2, n_v1 = 1;
	char probe[PATH_MAX];

	if (source->cgroup_v2_dir && source->cgroup_v2_dir[0]) {
		v2_dirs = &source->cgroup_v2_dir;
		n_v2 = 1;
	}
	if (source->cgroup_v1_memory_dir && source->cgroup_v1_memory_dir[0]) {
		v1_dirs = &source->cgroup_v1_memory_dir;
		n_v1 = 1;
	}
	for (size_t i = 0; i < n_v2; i++) {
		if (sig_path_join(probe, sizeof(probe), source->root, v2_dirs[i], "cgroup.controllers"))
			continue;
		if (controllers_list_memory(probe))
			return found_layout(CGROUP_LAYOUT_V2, source, v2_dirs[i], memory_dir,
					    memory_dir_len);
	}
	for (size_t i = 0; i < n_v1; i++) {
		if (sig_path_join(probe, sizeof(probe), source->root, v1_dirs[i], "memory.usage_in_bytes"))
			continue;
		if (access(probe, F_OK) == 0)
			return found_layout(CGROUP_LAYOUT_V1, source, v1_dirs[i], memory_dir,
					    memory_dir_len);
	}
	return CGROUP_LAYOUT_UNKNOWN;
}

/* Mounts do not move while the node runs, so the detection (several opens) is done once
 * per source and thread, and redone only after a read under the found dir fails. */
static __thread struct {
	bool valid;
	enum cgroup_layout layout;
	char key[PATH_MAX];		/* root '\n' v2 dir '\n' v1 dir */
	char memory_dir[PATH_MAX];
} layout_cache;

enum cgroup_layout sig_cached_layout(const struct signal_source *source, const char **memory_dir)
{
	char key[PATH_MAX];
	int n;

	n = snprintf(key, sizeof(key), "%s\n%s\n%s", source->root ? source->root : "",
		     source->cgroup_v2_dir ? source->cgroup_v2_dir : "",
		     source->cgroup_v1_memory_dir ? source->cgroup_v1_memory_dir : "");
	if (n < 0 || (size_t)n >= sizeof(key))
		key[0] = '\0';	/* too long to remember: detect every time */
	if (!layout_cache.valid || !key[0] || strcmp(key, layout_cache.key) != 0) {
		layout_cache.valid = false;
		layout_cache.layout = signals_detect_cgroup_layout(source, layout_cache.memory_dir,
								   sizeof(layout_cache.memory_dir));
		if (layout_cache.layout != CGROUP_LAYOUT_UNKNOWN && key[0]) {
			memcpy(layout_cache.key, key, (size_t)n + 1);
			layout_cache.valid = true;
		}
	}
	*memory_dir = layout_cache.memory_dir;
	return layout_cache.layout;
}

void sig_layout_forget(void)
{
	layout_cache.valid = false;
}

/*
 * Refault-aware memory (kubernetes issue 43916: the kubelet counts all of active_file as used,
 * so a node full of cache nobody reads again evicts pods for nothing). Active file cache is
 * counted as reclaimable unless the node's file cache is refaulting: pages evicted from it
 * being read back in (workingset_refault_file, mm/workingset.c workingset_refault()), i.e.
 * the cache is the working set and reclaiming it would thrash. The rate is taken over at least
 * REFAULT_WINDOW_NS between baselines; refaulting = more than 1/REFAULT_SHARE of the file
 * cache coming back per second.
 */
#define REFAULT_WINDOW_NS (1000LL * 1000000)
#define REFAULT_SHARE 100

struct refault_state {
	bool valid;
	int64_t at_ns;
	int64_t refault_pages;		/* workingset_refault_file at at_ns */
	bool refaulting;		/* the last complete window's verdict */
};

bool signals_file_cache_refaulting(struct refault_state_view *view)
{
	int64_t elapsed = view->now_ns - view->then_ns;
	int64_t refaulted_bytes = (view->refault_pages_now - view->refault_pages_then) *
				  view->page_size;

	if (elapsed <= 0 || refaulted_bytes <= 0 || view->file_cache_bytes <= 0)
		return false;
	/* refaulted per second > file cache / REFAULT_SHARE; in 128-bit, no overflow. */
	return (__int128)refaulted_bytes * 1000000000LL * REFAULT_SHARE >
	       (__int128)view->file_cache_bytes * elapsed;
}

static __thread struct refault_state refault;

/*
 * MGLRU, the multi-gen LRU (CONFIG_LRU_GEN; on by default in Debian's 6.12: lru_gen/enabled
 * 0x0007; DESIGN.md §1, "Refault-aware memory.available under MGLRU"). memory.stat's
 * active_file is then the file pages of the two youngest generations (include/linux/mm_inline.h
 * lru_gen_is_active()): pages faulted in through page tables (mm/swap.c folio_add_lru() sets
 * them active, lru_gen_add_folio() puts them in max_seq) or found young by the aging walk, that
 * is pages used recently. read() cache goes to the oldest generations however often it is read
 * (lru_gen_add_folio(): min_seq or min_seq + 1; folio_mark_accessed() only counts the access in
 * the folio's tier), and so does a refaulted page (lru_gen_refault() counts it, activates
 * nothing), so the kubelet's usage - inactive_file already counts read() cache as free, the
 * thrashing cache included: the over-count of kubernetes issue 43916 turns into an under-count.
 * The rule there: not refaulting, the kubelet's value (what it counts is what was used
 * recently); refaulting (the same rate as classic LRU, workingset_refault_file, counted for every
 * refault, mm/workingset.c lru_gen_refault()), all of the file cache: memory.stat has no split
 * that holds the refaulting pages apart.
 */
#define LRU_GEN_CORE 0x1u	/* mm/vmscan.c enabled_show(): BIT(LRU_GEN_CORE), the main switch */

int signals_read_mglru(const char *root, bool *enabled)
{
	char path[PATH_MAX], buf[32], *end;
	unsigned long caps;
	ssize_t n;
	int err;

	*enabled = false;
	err = sig_path_join(path, sizeof(path), root, "/sys/kernel/mm/lru_gen/enabled", NULL);
	if (err)
		return err;
	n = sig_read_small(path, buf, sizeof(buf));
	if (n < 0) {
		if (n != -ENOENT)	/* absent: a kernel without CONFIG_LRU_GEN, classic LRU */
			log_fail("%s: %m", path);
		return (int)n;
	}
	errno = 0;
	caps = strtoul(buf, &end, 0);	/* "0x0007\n", as enabled_show() prints it */
	if (errno || end == buf || (*end && *end != '\n')) {
		log_fail("%s: not a capability mask: \"%.*s\"", path, (int)strcspn(buf, "\n"), buf);
		return -EINVAL;
	}
	*enabled = caps & LRU_GEN_CORE;
	return 0;
}

/*
 * Before 6.5, MGLRU's workingset_refault_file misses refaults: lru_gen_refault() returned
 * before counting unless the shadow's generation was the current min_seq, so once the
 * generations age a thrashing cache reads as quiet (mm/workingset.c; "mm: Multi-gen LRU: fix
 * workingset accounting", 6.5, moved the count ahead of that test). Debian's 6.1 with lru_gen
 * switched on is such a kernel: a thrash there showed workingset_activate_file 0 beside 124447
 * refaults, and one of two guest runs measured no refault at all. The MGLRU rule needs that
 * rate, so those kernels are refused (DESIGN.md §1).
 */
int signals_mglru_counts_refaults(const char *root, bool *counts)
{
	char path[PATH_MAX], buf[64];
	unsigned major, minor;
	ssize_t n;
	int err;

	*counts = false;
	err = sig_path_join(path, sizeof(path), root, "/proc/sys/kernel/osrelease", NULL);
	if (err)
		return err;
	n = sig_read_small(path, buf, sizeof(buf));
	if (n < 0) {
		log_fail("%s: %m", path);
		return (int)n;
	}
	if (sscanf(buf, "%u.%u", &major, &minor) != 2) {
		log_fail("%s: not a release: \"%.*s\"", path, (int)strcspn(buf, "\n"), buf);
		return -EINVAL;
	}
	*counts = major > 6 || (major == 6 && minor >= 5);
	return 0;
}

/* Read once per root and thread: the daemon's whole run is one boot, and the formula must not
 * change under a running threshold (a toggle of lru_gen/enabled takes a restart). */
static __thread struct {
	bool valid;
	bool enabled;
	bool counts_refaults;	/* 6.5+: workingset_refault_file counts every refault */
	bool said;		/* the rule or the refusal was logged (once per root, option on) */
	char root[PATH_MAX];
} mglru_cache;

/* Whether MGLRU runs; *usable: whether the refault-aware rule can run under it. */
static bool mglru_enabled(const struct signal_source *source, bool *usable)
{
	const char *root = source->root ? source->root : "";

	*usable = false;
	if (!mglru_cache.valid || strcmp(mglru_cache.root, root) != 0) {
		if (strlen(root) >= sizeof(mglru_cache.root))
			return false;
		memset(&mglru_cache, 0, sizeof(mglru_cache));
		(void)signals_read_mglru(root, &mglru_cache.enabled);	/* unreadable: classic */
		if (mglru_cache.enabled)	/* unreadable release: refused */
			(void)signals_mglru_counts_refaults(root, &mglru_cache.counts_refaults);
		strcpy(mglru_cache.root, root);
		mglru_cache.valid = true;
	}
	if (mglru_cache.enabled && source->memory_refault_aware && !mglru_cache.said) {
		if (mglru_cache.counts_refaults)
			log_info("--memory-refault-aware under MGLRU (%.*s/sys/kernel/mm/lru_gen/enabled): "
				 "the kubelet's value while the file cache does not refault (its "
				 "active_file is the two youngest generations, used recently), all of "
				 "the file cache counted while it does (refaulted pages go back to the "
				 "oldest generations)", sig_root_len(root), root);
		else
			log_warn("--memory-refault-aware refused: MGLRU is on (%.*s/sys/kernel/mm/lru_gen/enabled) "
				 "and this kernel is older than 6.5 (or its release is unreadable), whose "
				 "workingset_refault_file misses refaults once the generations age; "
				 "memory.available uses the kubelet's formula (echo n > "
				 "/sys/kernel/mm/lru_gen/enabled and restart evictd to use the option)",
				 sig_root_len(root), root);
		mglru_cache.said = true;
	}
	*usable = mglru_cache.counts_refaults;
	return mglru_cache.enabled;
}

static bool refaulting_now(int64_t now, int64_t refault_pages, int64_t file_cache_bytes)
{
	static long page_size;

	if (!page_size)
		page_size = sysconf(_SC_PAGESIZE);
	if (!refault.valid || refault_pages < refault.refault_pages) {
		/* First read, or the counter went back (another root): no rate yet. */
		refault = (struct refault_state){ .valid = true, .at_ns = now,
						  .refault_pages = refault_pages };
		return false;
	}
	if (now - refault.at_ns < REFAULT_WINDOW_NS)
		return refault.refaulting;
	refault.refaulting = signals_file_cache_refaulting(&(struct refault_state_view){
		.then_ns = refault.at_ns, .now_ns = now, .refault_pages_then = refault.refault_pages,
		.refault_pages_now = refault_pages, .page_size = page_size,
		.file_cache_bytes = file_cache_bytes });
	refault.at_ns = now;
	refault.refault_pages = refault_pages;
	return refault.refaulting;
}

/* The refault-aware working set (DESIGN.md §1): classic LRU, the kubelet's without active_file
 * unless refaulting; MGLRU, the kubelet's unless refaulting, then usage (all file cache). */
int64_t signals_refault_aware_working_set(const struct refault_aware_view *view)
{
	if (view->mglru)
		return view->refaulting ? view->usage : view->working_set;
	if (view->refaulting)
		return view->working_set;
	return view->working_set < view->active_file ? 0 : view->working_set - view->active_file;
}

/* working_set: the kubelet's; refault_aware: the value above (-1 when memory.stat has no
 * refault counters). */
static int working_set_v2(const struct signal_source *source, const char *memory_dir,
			  int64_t *working_set, int64_t *refault_aware, bool *refaulting)
{
	struct key_scan scan = { .keys = { "anon", "file", "inactive_file", "active_file",
					   "workingset_refault_file" }, .nkeys = 5, .sep = ' ' };
	char path[PATH_MAX];
	int64_t usage;
	int err;

	err = sig_path_in(path, sizeof(path), memory_dir, "memory.stat");
	if (err)
		return err;
	err = sig_scan_keys(path, &scan);
	if (err)
		return err;
	if ((scan.found & 3) != 3) {
		log_fail("%s: no %s line", path, scan.found & 1 ? "file" : "anon");
		return -ENODATA;
	}
	/* The root has no memory.current: usage is anon + file, as v1's usage_in_bytes. */
	usage = sat_add_i64(scan.values[0], scan.values[1]);	/* each may be up to INT64_MAX */
	*working_set = usage;
	if (scan.found & 4)
		*working_set = usage < scan.values[2] ? 0 : usage - scan.values[2];
	*refault_aware = -1;
	*refaulting = false;
	/* active_file, workingset_refault_file: 5.9+. */
	if ((scan.found & (8 | 16)) == (8 | 16)) {
		bool mglru, mglru_usable;

		mglru = mglru_enabled(source, &mglru_usable);
		if (mglru && !mglru_usable)
			return 0;	/* refused: the refault counter misses refaults (< 6.5) */
		*refaulting = refaulting_now(source->now_ns ? source->now_ns() : clock_monotonic_ns(),
					     scan.values[4], scan.values[1]);
		*refault_aware = signals_refault_aware_working_set(&(struct refault_aware_view){
			.usage = usage, .working_set = *working_set, .active_file = scan.values[3],
			.refaulting = *refaulting, .mglru = mglru });
	}
	return 0;
}

static int working_set_v1(const char *memory_dir, int64_t *working_set)
{
	struct key_scan scan = { .keys = { "total_inactive_file" }, .nkeys = 1, .sep = ' ' };
	char path[PATH_MAX];
	int64_t usage;
	int err;

	err = sig_path_in(path, sizeof(path), memory_dir, "memory.usage_in_bytes");
	if (err)
		return err;
	err = sig_read_int64(path, &usage);
	if (err)
		return err;
	err = sig_path_in(path, sizeof(path), memory_dir, "memory.stat");
	if (err)
		return err;
	err = sig_scan_keys(path, &scan);
	if (err)
		return err;
	*working_set = usage;
	if (scan.found & 1)
		*working_set = usage < scan.values[0] ? 0 : usage - scan.values[0];
	return 0;
}

static int read_working_set(const struct signal_source *source, enum cgroup_layout *layout,
			    int64_t *working_set, int64_t *refault_aware, bool *refaulting)
{
	const char *memory_dir;
	int err;

	*refault_aware = -1;
	*refaulting = false;
	*layout = sig_cached_layout(source, &memory_dir);
	switch (*layout) {
	case CGROUP_LAYOUT_V2:
		err = working_set_v2(source, memory_dir, working_set, refault_aware, refaulting);
		break;
	case CGROUP_LAYOUT_V1:
		err = working_set_v1(memory_dir, working_set);
		break;
	default:
		log_fail("no memory cgroup under root \"%s\": no cgroup.controllers listing memory "
			 "in %s, no memory.usage_in_bytes in %s",
			 source->root ? source->root : "",
			 nonempty_or(source->cgroup_v2_dir, "/sys/fs/cgroup{,/unified}"),
			 nonempty_or(source->cgroup_v1_memory_dir, "/sys/fs/cgroup/memory"));
		return -ENOENT;
	}
	if (err)
		sig_layout_forget();
	return err;
}

/* MemTotal changes only with memory hotplug: a wake-up that needs no MemAvailable (no OOM
 * guard) takes it from the last meminfo read, and every read of the guard or of all the
 * signals (each housekeeping tick) refreshes it. Per root and thread, as the layout. */
static __thread struct {
	bool valid;
	int64_t total;
	char root[PATH_MAX];
} mem_total_cache;

static int read_meminfo_cached(const char *root, bool want_available, int64_t *total,
			       int64_t *available)
{
	const char *key = root ? root : "";
	int err;

	if (!want_available && mem_total_cache.valid && !strcmp(mem_total_cache.root, key)) {
		*total = mem_total_cache.total;
		return 1;
	}
	err = signals_read_meminfo(root, total, available);
	if (err || strlen(key) >= sizeof(mem_total_cache.root))
		return err;
	strcpy(mem_total_cache.root, key);
	mem_total_cache.total = *total;
	mem_total_cache.valid = true;
	return 0;
}

int sig_read_memory_group(const struct signal_source *source, struct observations *obs,
			  bool want_cgroup, bool want_guard)
{
	struct observation *memory = &obs->signal[EV_SIGNAL_MEMORY_AVAILABLE];
	struct observation *guard = &obs->signal[EV_SIGNAL_OOM_GUARD];
	int64_t total, available, working_set, refault_aware;
	bool refaulting;
	int err;

	if (want_guard || !want_cgroup)
		guard->present = false;
	if (want_cgroup) {
		memory->present = false;
		obs->memory_available_kubelet_bytes = -1;
		obs->memory_available_refault_aware_bytes = -1;
		obs->file_cache_refaulting = false;
	}
	err = read_meminfo_cached(source->root, want_guard || !want_cgroup, &total, &available);
	if (err < 0)
		return err;
	obs->mem_total_bytes = total;
	if (!err) {
		obs->mem_available_kernel_bytes = available;
		*guard = (struct observation){ .present = true, .available = available,
					       .capacity = total, .read_at_ns = clock_monotonic_ns() };
	}
	if (!want_cgroup)
		return 0;

	err = read_working_set(source, &obs->cgroup_layout, &working_set, &refault_aware,
			       &refaulting);
	if (err)
		return err;
	obs->memory_working_set_bytes = working_set;
	obs->memory_available_kubelet_bytes = total - working_set;
	obs->memory_available_refault_aware_bytes = refault_aware < 0 ? -1 : total - refault_aware;
	obs->file_cache_refaulting = refaulting;
	*memory = (struct observation){ .present = true, .available = total - working_set,
					.capacity = total, .read_at_ns = clock_monotonic_ns() };
	/* The opt-in mode: thresholds see the refault-aware value where the kernel has one. */
	if (source->memory_refault_aware && refault_aware >= 0)
		memory->available = total - refault_aware;
	return 0;
}

int signals_read_memory(const struct signal_source *source, struct observations *obs)
{
	return sig_read_memory_group(source, obs, true, true);
}

