// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The BPF data plane against the running kernel (root only): drive real events from a
 * test cgroup and check that the maps say exactly what happened.
 *
 * EVICTD_TEST_DIR: a directory on a disk filesystem (ext4/xfs) for the page-cache and
 * inode tests (default /var/tmp).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/statvfs.h>

#include <bpf/bpf.h>

#include "bpftest.h"
#include "bpf_loader/bpf_loader.h"
#include "sys/log.h"

#define EXT4_MAGIC 0xEF53
#define XFS_MAGIC 0x58465342
#define TMPFS_MAGIC_ 0x01021994
#define RAMFS_MAGIC_ 0x858458f6

static struct {
	const char *skip_all;		/* why nothing can run */
	struct test_cgroups cg;
	char pin_parent[PATH_MAX];
	char pin_dir[PATH_MAX];
	struct bpf_loader *loader;
	int open_err;
	long page_size;
} T;

/* Every tracepoint evictd has a program for (the shared loader opens with inspect); all must
 * attach (as tp_btf) on 6.1 and 6.18. The memory hook (page_counter_try_charge by fentry, or
 * mm_page_alloc_zone_locked where fentry is refused, with mm_lru_insertion on demand) is
 * checked apart. */
static const char *const core_tracepoints[] = {
	"mm_vmscan_direct_reclaim_begin", "mm_vmscan_direct_reclaim_end",
	"mm_vmscan_memcg_reclaim_begin", "mm_vmscan_memcg_reclaim_end",
	"mm_vmscan_kswapd_wake", "mark_victim",
	"mm_lru_activate",
	"mm_filemap_add_to_page_cache", "mm_filemap_delete_from_page_cache",
	"mm_vmscan_lru_shrink_inactive",
	"sched_process_fork", "sched_process_exit",
};

/* Of those, what a default loader (no inspect) attaches: the wake-ups alone. */
static const char *const default_tracepoints[] = {
	"mm_vmscan_direct_reclaim_begin", "mm_vmscan_memcg_reclaim_begin",
	"mm_vmscan_kswapd_wake", "mark_victim", "sched_process_fork",
};

#define SKIP_BECAUSE(...)					\
	do {							\
		print_message("# skip: " __VA_ARGS__);		\
		print_message("\n");				\
		skip();						\
	} while (0)

#define NEED_LOADER()							\
	do {								\
		if (T.skip_all)						\
			SKIP_BECAUSE("%s", T.skip_all);			\
		if (!T.loader)						\
			fail_msg("BPF loader did not open: %s", strerror(-T.open_err)); \
	} while (0)

static bool filesystem_loaded(const char *name)
{
	char line[128];
	bool found = false;
	FILE *f = fopen("/proc/filesystems", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *word = strrchr(line, '\t');

		word = word ? word + 1 : line;
		word[strcspn(word, "\n")] = '\0';
		found = !strcmp(word, name);
	}
	fclose(f);
	return found;
}

static int group_setup(void **state)
{
	struct bpf_loader_opts opts = {};
	int err;

	T.page_size = sysconf(_SC_PAGESIZE);
	if (geteuid() != 0) {
		T.skip_all = "needs root (BPF, cgroups, bpffs)";
		return 0;
	}
	if (getenv("EVICTD_TEST_DEBUG") && getenv("EVICTD_TEST_DEBUG")[0])
		log_set_level(LOGLEVEL_DEBUG);
	err = test_cgroups_setup(&T.cg);
	if (err) {
		T.skip_all = "cannot create a test cgroup (no cgroup v2 mount?)";
		return 0;
	}
	err = pin_parent_make(T.pin_parent, sizeof(T.pin_parent));
	if (err) {
		T.skip_all = "cannot create a temp directory";
		return 0;
	}
	fmt_path(T.pin_dir, sizeof(T.pin_dir), "%s/evictd", T.pin_parent);
	opts.pin_dir = T.pin_dir;
	opts.inspect = true;	/* most tests check the inspection counters */
	T.open_err = bpf_loader_open(&T.loader, &opts);
	return 0;
}

static int group_teardown(void **state)
{
	bpf_loader_destroy(T.loader, true);
	if (T.pin_parent[0])
		pin_parent_remove(T.pin_parent);
	test_cgroups_teardown(&T.cg);
	return 0;
}

/* ---- ring buffer helpers ---- */

struct tally {
	unsigned int total;
	unsigned int by_type[16];
	uint64_t min_ktime, max_ktime;
	pid_t oom_pid;			/* record an OOM kill of this pid */
	bool oom_seen;
	uint64_t oom_cgroup;
};

static int tally_wake(void *ctx, const struct evictd_wake *wake)
{
	struct tally *t = ctx;

	t->total++;
	if (wake->type < 16)
		t->by_type[wake->type]++;
	if (!t->min_ktime || wake->ktime_ns < t->min_ktime)
		t->min_ktime = wake->ktime_ns;
	if (wake->ktime_ns > t->max_ktime)
		t->max_ktime = wake->ktime_ns;
	if (wake->type == EVICTD_WAKE_OOM_KILL && t->oom_pid && wake->value == (uint64_t)t->oom_pid) {
		t->oom_seen = true;
		t->oom_cgroup = wake->cgroup_id;
	}
	return 0;
}

static void drain_ring(struct bpf_loader *loader)
{
	struct tally ignored = {};

	assert_true(bpf_loader_consume(loader, tally_wake, &ignored) >= 0);
}

static void set_pids_step(uint64_t step, uint64_t min_interval_ns)
{
	struct bpf_loader_steps steps = {
		.pids_tasks = step,
		.min_interval_ns = { [EVICTD_GROUP_PIDS] = min_interval_ns },
	};

	assert_int_equal(bpf_loader_set_steps(T.loader, &steps), 0);
	drain_ring(T.loader);
}

static struct evictd_cgroup_stats cgroup_now(struct bpf_loader *loader, uint64_t id)
{
	struct evictd_cgroup_stats stats = {};
	int err = bpf_loader_read_cgroup(loader, id, &stats);

	if (err && err != -ENOENT)
		fail_msg("reading cgroup %llu: %s", (unsigned long long)id, strerror(-err));
	return stats;
}

static struct evictd_memcg_stats memcg_now(uint64_t id)
{
	struct evictd_memcg_stats stats = {};
	int err = bpf_loader_read_memcg(T.loader, id, &stats);

	if (err && err != -ENOENT)
		fail_msg("reading memcg %llu: %s", (unsigned long long)id, strerror(-err));
	return stats;
}

/* ---- tests ---- */

static void test_load_attaches_core(void **state)
{
	const struct bpf_loader_prog *progs;
	bool want_ext4 = filesystem_loaded("ext4");
	size_t i, n;

	NEED_LOADER();
	progs = bpf_loader_progs(T.loader, &n);
	assert_true(n >= sizeof(core_tracepoints) / sizeof(core_tracepoints[0]));
	for (i = 0; i < n; i++)
		print_message("# %-36s %s%s\n", progs[i].tracepoint,
			      progs[i].attach ? progs[i].attach : "skipped: ",
			      progs[i].skip_reason ? progs[i].skip_reason : "");
	for (i = 0; i < sizeof(core_tracepoints) / sizeof(core_tracepoints[0]); i++) {
		size_t j;

		for (j = 0; j < n; j++)
			if (!strcmp(progs[j].tracepoint, core_tracepoints[i]))
				break;
		if (j == n)
			fail_msg("%s has no program", core_tracepoints[i]);
		if (!progs[j].attach || strcmp(progs[j].attach, "tp_btf"))
			fail_msg("%s not attached as tp_btf (%s)", core_tracepoints[i],
				 progs[j].attach ? progs[j].attach : progs[j].skip_reason);
	}
	/* One memory hook at open: the charge hook, else the buddy hook; mm_lru_insertion
	 * waits for a step near a threshold. */
	assert_true(bpf_loader_attached(T.loader, "page_counter_try_charge") !=
		    bpf_loader_attached(T.loader, "mm_page_alloc_zone_locked"));
	assert_false(bpf_loader_attached(T.loader, "mm_lru_insertion"));
	if (want_ext4) {
		assert_true(bpf_loader_attached(T.loader, "ext4_allocate_inode"));
		assert_true(bpf_loader_attached(T.loader, "ext4_free_inode"));
	}
	assert_int_equal(T.open_err, (int)bpf_loader_attached_count(T.loader));
}

static void test_fork_exit_counted_exactly(void **state)
{
	struct evictd_cgroup_stats before, after;
	struct evictd_node_stats node_before, node_after;
	const int n = 64;

	NEED_LOADER();
	before = cgroup_now(T.loader, T.cg.v2_id);
	assert_int_equal(bpf_loader_read_node(T.loader, &node_before), 0);
	assert_int_equal(fork_and_reap(n), n);
	after = cgroup_now(T.loader, T.cg.v2_id);
	assert_int_equal(bpf_loader_read_node(T.loader, &node_after), 0);

	assert_int_equal(after.forks - before.forks, n);
	assert_int_equal(after.exits - before.exits, n);
	/* Node totals include everything else on the host too. */
	assert_true(node_after.forks - node_before.forks >= (uint64_t)n);
	assert_true(node_after.exits - node_before.exits >= (uint64_t)n);
}

static const char *test_dir(void)
{
	const char *dir = getenv("EVICTD_TEST_DIR");

	return dir && dir[0] ? dir : "/var/tmp";
}

static long resident_pages(int fd, size_t size)
{
	long pages = (long)((size + T.page_size - 1) / T.page_size), resident = 0, i;
	unsigned char *vec = calloc(pages, 1);
	void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);

	if (!vec || map == MAP_FAILED) {
		free(vec);
		return -1;
	}
	if (!mincore(map, size, vec))
		for (i = 0; i < pages; i++)
			resident += vec[i] & 1;
	else
		resident = -1;
	munmap(map, size);
	free(vec);
	return resident;
}

static void read_all(int fd, size_t size)
{
	static char buf[128 * 1024];
	size_t done = 0;

	while (done < size) {
		ssize_t got = pread(fd, buf, sizeof(buf), (off_t)done);

		assert_true(got > 0);
		done += (size_t)got;
	}
}

/* MGLRU runs (/sys/kernel/mm/lru_gen/enabled has its core bit 0x1, mm/vmscan.c
 * enabled_show()); absent = a kernel without CONFIG_LRU_GEN, classic LRU. */
static bool mglru_on(void)
{
	FILE *f = fopen("/sys/kernel/mm/lru_gen/enabled", "r");
	unsigned int caps = 0;

	if (!f)
		return false;
	if (fscanf(f, "%i", (int *)&caps) != 1)
		caps = 0;
	fclose(f);
	return caps & 1;
}

/*
 * A 4 MiB file, written and dropped from the cache, then read once: the memcg's
 * file_added_pages rises by exactly its 1024 pages (readahead stops at EOF; large folios
 * count as all their pages). Dropping it again: file_removed_pages by the same 1024.
 * Classic LRU: the second read activates (mm_lru_activate). MGLRU: it does not, a read()
 * access only counts in the folio's tier (mm/swap.c folio_mark_accessed() ->
 * folio_inc_refs()), so no activation is asserted there (why --memory-refault-aware has its
 * own rule under MGLRU, DESIGN.md §1); the guest scenario 05-bpf-dataplane runs both.
 */
static void test_page_cache_pages_counted(void **state)
{
	const size_t size = 4 << 20;
	const long pages = (long)(size / T.page_size);
	struct evictd_memcg_stats before, after;
	char path[PATH_MAX];
	struct statfs fs;
	char *chunk;
	size_t off;
	int fd;

	NEED_LOADER();
	if (!T.cg.mem_path[0])
		SKIP_BECAUSE("no memory cgroup to attribute page-cache pages to");
	if (statfs(test_dir(), &fs) || fs.f_type == TMPFS_MAGIC_ || fs.f_type == RAMFS_MAGIC_)
		SKIP_BECAUSE("%s is not on a disk filesystem (set EVICTD_TEST_DIR)", test_dir());

	fmt_path(path, sizeof(path), "%s/evictd-pagecache-%d", test_dir(), (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	chunk = malloc(1 << 20);
	assert_non_null(chunk);
	memset(chunk, 0x5a, 1 << 20);
	for (off = 0; off < size; off += 1 << 20)
		assert_int_equal(pwrite(fd, chunk, 1 << 20, (off_t)off), 1 << 20);
	free(chunk);
	assert_int_equal(fsync(fd), 0);
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	assert_int_equal(resident_pages(fd, size), 0);

	before = memcg_now(T.cg.memcg_id);
	read_all(fd, size);
	after = memcg_now(T.cg.memcg_id);
	print_message("# memcg %llu: +%llu pages added for a %ld-page file\n",
		      (unsigned long long)T.cg.memcg_id,
		      (unsigned long long)(after.file_added_pages - before.file_added_pages), pages);
	assert_int_equal(resident_pages(fd, size), pages);
	assert_int_equal(after.file_added_pages - before.file_added_pages, pages);

	/* Read twice more: the second access activates; drop flushes pending activations. */
	read_all(fd, size);
	read_all(fd, size);
	before = after;
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	after = memcg_now(T.cg.memcg_id);
	print_message("# activated %llu, removed %llu pages\n",
		      (unsigned long long)(after.file_activated_pages - before.file_activated_pages),
		      (unsigned long long)(after.file_removed_pages - before.file_removed_pages));
	assert_int_equal(resident_pages(fd, size), 0);
	assert_int_equal(after.file_removed_pages - before.file_removed_pages, pages);
	if (!mglru_on())
		assert_true(after.file_activated_pages - before.file_activated_pages > 0);
	else
		print_message("# MGLRU on: a second read() does not activate, no activation expected\n");
	assert_true(after.file_activated_pages - before.file_activated_pages <= (uint64_t)pages);
	close(fd);
	unlink(path);
}

/* K files created and deleted on ext4/xfs: inode_allocs and inode_frees move by K. */
static void test_inode_alloc_free_counted(void **state)
{
	const int k = 40;
	struct evictd_cgroup_stats before, after;
	char dir[PATH_MAX], path[PATH_MAX + 32];
	struct statfs fs;
	int i;

	NEED_LOADER();
	if (statfs(test_dir(), &fs) || (fs.f_type != EXT4_MAGIC && fs.f_type != XFS_MAGIC))
		SKIP_BECAUSE("%s is not ext4 or xfs (set EVICTD_TEST_DIR)", test_dir());
	if (fs.f_type == EXT4_MAGIC && !bpf_loader_attached(T.loader, "ext4_allocate_inode"))
		fail_msg("ext4 is mounted but ext4_allocate_inode is not attached");
	fmt_path(dir, sizeof(dir), "%s/evictd-inodes-XXXXXX", test_dir());
	assert_non_null(mkdtemp(dir));

	before = cgroup_now(T.loader, T.cg.v2_id);
	for (i = 0; i < k; i++) {
		int fd;

		fmt_path(path, sizeof(path), "%s/f%d", dir, i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		assert_true(fd >= 0);
		close(fd);
	}
	after = cgroup_now(T.loader, T.cg.v2_id);
	assert_int_equal(after.inode_allocs - before.inode_allocs, k);
	for (i = 0; i < k; i++) {
		fmt_path(path, sizeof(path), "%s/f%d", dir, i);
		assert_int_equal(unlink(path), 0);
	}
	after = cgroup_now(T.loader, T.cg.v2_id);
	assert_int_equal(after.inode_frees - before.inode_frees, k);
	assert_int_equal(after.inode_allocs - before.inode_allocs, k);
	rmdir(dir);
}

/* step 100 forks, 150 forks: at least one fork-step wake-up, never one per fork. */
static void test_step_crossed_wakes(void **state)
{
	struct tally tally = {};
	uint64_t t0, t1;

	NEED_LOADER();
	set_pids_step(100, 0);
	t0 = monotonic_ns();
	assert_int_equal(fork_and_reap(150), 150);
	t1 = monotonic_ns();
	assert_true(bpf_loader_consume(T.loader, tally_wake, &tally) >= 0);
	print_message("# %u fork-step wake-ups for 150 forks at step 100\n",
		      tally.by_type[EVICTD_WAKE_FORK_STEP]);
	assert_true(tally.by_type[EVICTD_WAKE_FORK_STEP] >= 1);
	/* Background forks on the host can add one more crossing, not dozens. */
	assert_true(tally.by_type[EVICTD_WAKE_FORK_STEP] <= 3);
	assert_true(tally.min_ktime >= t0 && tally.max_ktime <= t1);
	set_pids_step(0, 0);
}

/* step 10000, 50 forks: no record at all. */
static void test_step_not_crossed_silent(void **state)
{
	struct tally tally = {};

	NEED_LOADER();
	set_pids_step(10000, 0);
	assert_int_equal(fork_and_reap(50), 50);
	assert_true(bpf_loader_consume(T.loader, tally_wake, &tally) >= 0);
	assert_int_equal(tally.total, 0);
	set_pids_step(0, 0);
}

struct step_values {
	unsigned int count;
	uint64_t min_value;
};

static int memory_step_values(void *ctx, const struct evictd_wake *wake)
{
	struct step_values *v = ctx;

	if (wake->type != EVICTD_WAKE_MEMORY_STEP)
		return 0;
	if (!v->count || wake->value < v->min_value)
		v->min_value = wake->value;
	v->count++;
	return 0;
}

/* Far from any watermark (no reclaim on this 24 GiB host): touching 64 MiB of anonymous
 * memory crosses a 16 MiB memory step through LRU insertions alone. */
static void test_memory_step_without_reclaim(void **state)
{
	struct bpf_loader_steps steps = { .memory_pages = (16 << 20) / T.page_size };
	const size_t size = 64 << 20;
	struct step_values values = {};
	size_t off;
	char *mem;

	NEED_LOADER();
	assert_int_equal(bpf_loader_set_steps(T.loader, &steps), 0);
	drain_ring(T.loader);
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(mem != MAP_FAILED);
	for (off = 0; off < size; off += T.page_size)
		mem[off] = 1;
	assert_true(bpf_loader_consume(T.loader, memory_step_values, &values) >= 0);
	munmap(mem, size);
	set_pids_step(0, 0);
	print_message("# %u memory-step wake-ups for 64 MiB touched at a 16 MiB step\n",
		      values.count);
	assert_true(values.count >= 1);
	/* Each reports at least a step's worth of pages, never single events. */
	assert_true(values.min_value >= steps.memory_pages);
}

/* step 1 with a 1 s interval: 30 quick forks give one wake-up, the rest is rate-limited. */
static void test_rate_limited(void **state)
{
	struct evictd_node_stats before, after;
	struct tally tally = {};

	NEED_LOADER();
	/* The interval runs from the group's last wake-up: let any earlier one age out. */
	set_pids_step(0, 0);
	usleep(1100000);
	set_pids_step(1, 1000000000ULL);
	assert_int_equal(bpf_loader_read_node(T.loader, &before), 0);
	assert_int_equal(fork_and_reap(30), 30);
	assert_int_equal(bpf_loader_read_node(T.loader, &after), 0);
	assert_true(bpf_loader_consume(T.loader, tally_wake, &tally) >= 0);
	assert_int_equal(tally.by_type[EVICTD_WAKE_FORK_STEP], 1);
	assert_true(after.wakeups_rate_limited - before.wakeups_rate_limited >= 29);
	set_pids_step(0, 0);
}

/*
 * A child in a memory cgroup limited to 32 MiB touches 256 MiB (no swap here): the kernel
 * OOM-kills it. The ring buffer reports the kill with the child's pid and v2 cgroup, and
 * that cgroup's counters show the OOM kill and the memcg reclaim that preceded it.
 */
static void test_oom_kill_reported(void **state)
{
	struct bpf_loader_steps steps = { .wake_on_reclaim = true };
	struct evictd_cgroup_stats before, after;
	char oom_cg[PATH_MAX + 16], file[PATH_MAX + 64];
	struct tally tally = {};
	uint64_t expect_cgroup = 0;
	int status, i;
	pid_t pid;

	NEED_LOADER();
	if (T.cg.mem_v1) {
		if (!T.cg.mem_path[0])
			SKIP_BECAUSE("no v1 memory cgroup could be created");
		fmt_path(oom_cg, sizeof(oom_cg), "%s/oom", T.cg.mem_path);
		expect_cgroup = T.cg.v2_id;	/* the v2 cgroup does not change */
	} else {
		/* v2: a sibling, since a cgroup with processes cannot delegate controllers. */
		fmt_path(oom_cg, sizeof(oom_cg), "%s-oom", T.cg.v2_path);
	}
	if (mkdir(oom_cg, 0755) && errno != EEXIST)
		SKIP_BECAUSE("cannot create %s: %s", oom_cg, strerror(errno));
	if (T.cg.mem_v1) {
		fmt_path(file, sizeof(file), "%s/memory.limit_in_bytes", oom_cg);
		assert_int_equal(write_str(file, "33554432"), 0);
		fmt_path(file, sizeof(file), "%s/memory.swappiness", oom_cg);
		write_str(file, "0");
	} else {
		fmt_path(file, sizeof(file), "%s/memory.max", oom_cg);
		if (write_str(file, "33554432")) {
			rmdir(oom_cg);
			SKIP_BECAUSE("no memory controller in %s", oom_cg);
		}
		fmt_path(file, sizeof(file), "%s/memory.swap.max", oom_cg);
		write_str(file, "0");
		expect_cgroup = inode_of(oom_cg);
	}

	assert_int_equal(bpf_loader_set_steps(T.loader, &steps), 0);
	drain_ring(T.loader);
	before = cgroup_now(T.loader, expect_cgroup);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const size_t size = 256 << 20;
		char *mem;
		size_t off;

		if (move_self(oom_cg))
			_exit(2);
		mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (mem == MAP_FAILED)
			_exit(3);
		for (off = 0; off < size; off += 4096)
			mem[off] = 1;
		_exit(4);	/* not killed */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	tally.oom_pid = pid;
	assert_true(bpf_loader_consume(T.loader, tally_wake, &tally) >= 0);
	after = cgroup_now(T.loader, expect_cgroup);
	for (i = 0; i < 50 && rmdir(oom_cg) && errno == EBUSY; i++)
		usleep(20000);

	if (!WIFSIGNALED(status))
		fail_msg("child was not OOM-killed (exit status %d)", WEXITSTATUS(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
	assert_true(tally.oom_seen);
	assert_int_equal(tally.oom_cgroup, expect_cgroup);
	assert_int_equal(after.oom_kills - before.oom_kills, 1);
	assert_true(after.reclaim_entries > before.reclaim_entries);
	assert_true(after.reclaim_stall_ns > before.reclaim_stall_ns);
	assert_true(tally.by_type[EVICTD_WAKE_MEMCG_RECLAIM] >= 1);
	print_message("# OOM kill of %d reported for cgroup %llu; %llu reclaim entries, %llu us "
		      "stalled, %u memcg-reclaim wake-ups\n", (int)pid,
		      (unsigned long long)tally.oom_cgroup,
		      (unsigned long long)(after.reclaim_entries - before.reclaim_entries),
		      (unsigned long long)(after.reclaim_stall_ns - before.reclaim_stall_ns) / 1000,
		      tally.by_type[EVICTD_WAKE_MEMCG_RECLAIM]);
	set_pids_step(0, 0);
}

static const char *const pinned_maps[] = { "cgroup_stats", "memcg_stats", "node_stats",
					    "wake_config" };

/* Pins are 0600 in a 0700 dir and bpftool prints their fields by name. */
static void test_pins_and_bpftool(void **state)
{
	char path[PATH_MAX + 32], cmd[PATH_MAX + 128], out[65536], key[32];
	struct stat st;
	size_t i, len;
	FILE *p;

	NEED_LOADER();
	assert_string_equal(bpf_loader_pin_dir(T.loader), T.pin_dir);
	assert_int_equal(stat(T.pin_dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	for (i = 0; i < sizeof(pinned_maps) / sizeof(pinned_maps[0]); i++) {
		fmt_path(path, sizeof(path), "%s/%s", T.pin_dir, pinned_maps[i]);
		if (stat(path, &st))
			fail_msg("%s not pinned: %s", path, strerror(errno));
		assert_int_equal(st.st_mode & 07777, 0600);
	}

	if (system("command -v bpftool >/dev/null 2>&1"))
		SKIP_BECAUSE("bpftool not installed");
	assert_int_equal(fork_and_reap(1), 1);	/* make sure our cgroup has an entry */
	fmt_path(cmd, sizeof(cmd), "bpftool map dump pinned %s/cgroup_stats 2>&1", T.pin_dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	len = fread(out, 1, sizeof(out) - 1, p);
	out[len] = '\0';
	assert_int_equal(pclose(p), 0);
	snprintf(key, sizeof(key), "\"key\": %llu,", (unsigned long long)T.cg.v2_id);
	if (!strstr(out, key) || !strstr(out, "\"forks\": ") ||
	    !strstr(out, "\"reclaim_stall_ns\": ") || !strstr(out, "\"inode_allocs\": "))
		fail_msg("bpftool output lacks named fields or key %s:\n%.2000s", key, out);
}

/* A restart finds the old pins: compatible ones carry their counters over, an incompatible
 * one is replaced; destroy(unpin) removes them all. */
static void test_pins_reused_and_replaced(void **state)
{
	struct bpf_loader_opts opts = {};
	struct bpf_loader_pin_report report;
	struct evictd_cgroup_stats stats, carried;
	struct bpf_loader *loader;
	char dir[PATH_MAX + 16], path[PATH_MAX + 32];
	int fd, ret;

	NEED_LOADER();
	fmt_path(dir, sizeof(dir), "%s/reuse", T.pin_parent);
	opts.pin_dir = dir;
	opts.inspect = true;

	ret = bpf_loader_open(&loader, &opts);
	assert_true(ret > 0);
	bpf_loader_pin_report(loader, &report);
	assert_int_equal(report.created, 4);
	assert_int_equal(fork_and_reap(5), 5);
	stats = cgroup_now(loader, T.cg.v2_id);
	assert_true(stats.forks >= 5);
	bpf_loader_destroy(loader, false);
	fmt_path(path, sizeof(path), "%s/cgroup_stats", dir);
	assert_int_equal(access(path, F_OK), 0);

	ret = bpf_loader_open(&loader, &opts);
	assert_true(ret > 0);
	bpf_loader_pin_report(loader, &report);
	assert_int_equal(report.reused, 4);
	assert_int_equal(report.replaced, 0);
	carried = cgroup_now(loader, T.cg.v2_id);
	assert_int_equal(carried.forks, stats.forks);
	bpf_loader_destroy(loader, false);

	/* Same name, different map: must be replaced, not reused and not a load failure. */
	assert_int_equal(unlink(path), 0);
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "cgroup_stats", 4, 8, 1, NULL);
	assert_true(fd >= 0);
	assert_int_equal(bpf_obj_pin(fd, path), 0);
	close(fd);
	ret = bpf_loader_open(&loader, &opts);
	assert_true(ret > 0);
	bpf_loader_pin_report(loader, &report);
	assert_int_equal(report.replaced, 1);
	assert_int_equal(report.reused, 3);
	assert_int_equal(bpf_loader_read_cgroup(loader, T.cg.v2_id, &stats), -ENOENT);
	assert_int_equal(fork_and_reap(3), 3);
	stats = cgroup_now(loader, T.cg.v2_id);
	assert_int_equal(stats.forks, 3);
	bpf_loader_destroy(loader, true);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(access(dir, F_OK), -1);
}

/* The raw_tp twins load and count the same on this kernel. */
static void test_raw_tp_fallback(void **state)
{
	struct bpf_loader_opts opts = { .no_pin = true, .force_raw_tp = true, .inspect = true };
	const struct bpf_loader_prog *progs;
	struct evictd_cgroup_stats before, after;
	struct bpf_loader *loader;
	size_t i, j, n;

	NEED_LOADER();
	assert_true(bpf_loader_open(&loader, &opts) > 0);
	assert_null(bpf_loader_pin_dir(loader));
	progs = bpf_loader_progs(loader, &n);
	for (i = 0; i < sizeof(core_tracepoints) / sizeof(core_tracepoints[0]); i++) {
		for (j = 0; j < n; j++)
			if (!strcmp(progs[j].tracepoint, core_tracepoints[i]))
				break;
		assert_true(j < n);
		if (!progs[j].attach || strcmp(progs[j].attach, "raw_tp"))
			fail_msg("%s not attached as raw_tp", core_tracepoints[i]);
	}
	/* fentry needs BTF trampolines: raw_tp means the buddy hook paces memory. */
	assert_false(bpf_loader_attached(loader, "page_counter_try_charge"));
	assert_true(bpf_loader_attached(loader, "mm_page_alloc_zone_locked"));
	assert_false(bpf_loader_attached(loader, "mm_lru_insertion"));
	before = cgroup_now(loader, T.cg.v2_id);
	assert_int_equal(fork_and_reap(10), 10);
	after = cgroup_now(loader, T.cg.v2_id);
	assert_int_equal(after.forks - before.forks, 10);
	assert_int_equal(after.exits - before.exits, 10);
	bpf_loader_destroy(loader, true);
}

/* no_page_cache leaves out exactly the per-memcg page-cache programs. */
static void test_no_page_cache_option(void **state)
{
	static const char *const left_out[] = { "mm_filemap_add_to_page_cache",
						"mm_filemap_delete_from_page_cache",
						"mm_lru_activate" };
	struct bpf_loader_opts opts = { .no_pin = true, .no_page_cache = true, .inspect = true };
	const struct bpf_loader_prog *progs;
	struct bpf_loader *loader;
	size_t i, j, n;

	NEED_LOADER();
	assert_true(bpf_loader_open(&loader, &opts) > 0);
	progs = bpf_loader_progs(loader, &n);
	for (i = 0; i < sizeof(core_tracepoints) / sizeof(core_tracepoints[0]); i++) {
		bool excluded = false;

		for (j = 0; j < sizeof(left_out) / sizeof(left_out[0]); j++)
			excluded |= !strcmp(core_tracepoints[i], left_out[j]);
		if (bpf_loader_attached(loader, core_tracepoints[i]) == excluded)
			fail_msg("%s %s", core_tracepoints[i],
				 excluded ? "attached despite no_page_cache" : "not attached");
	}
	for (i = 0; i < n; i++)
		for (j = 0; j < sizeof(left_out) / sizeof(left_out[0]); j++)
			if (!strcmp(progs[i].tracepoint, left_out[j]))
				assert_string_equal(progs[i].skip_reason,
						    "page-cache accounting disabled");
	bpf_loader_destroy(loader, true);
}

static bool in_list(const char *const *list, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(list[i], name))
			return true;
	return false;
}

/*
 * The default loader attaches exactly the wake-up programs (plus ext4/xfs inode allocation
 * where loaded), never the inspection-only ones, and its fork program updates no
 * per-cgroup hash entry; the memory and fork steps still wake it.
 */
static void test_default_is_wakeups_only(void **state)
{
	struct bpf_loader_opts opts = { .no_pin = true };
	struct evictd_node_stats node_before, node_after;
	struct evictd_cgroup_stats stats;
	const struct bpf_loader_prog *progs;
	struct bpf_loader_steps steps = { .pids_tasks = 10 };
	struct tally tally = {};
	struct bpf_loader *loader;
	size_t i, n;
	char *mem;

	NEED_LOADER();
	assert_true(bpf_loader_open(&loader, &opts) > 0);
	progs = bpf_loader_progs(loader, &n);
	for (i = 0; i < n; i++) {
		bool wanted = in_list(default_tracepoints, sizeof(default_tracepoints) /
				      sizeof(default_tracepoints[0]), progs[i].tracepoint) ||
			      !strcmp(progs[i].tracepoint, "page_counter_try_charge") ||
			      !strcmp(progs[i].tracepoint, "mm_page_alloc_zone_locked") ||
			      !strcmp(progs[i].tracepoint, "ext4_allocate_inode") ||
			      !strcmp(progs[i].tracepoint, "xfs_create");
		bool core = in_list(core_tracepoints, sizeof(core_tracepoints) /
				    sizeof(core_tracepoints[0]), progs[i].tracepoint);

		print_message("# default: %-36s %s%s\n", progs[i].tracepoint,
			      progs[i].attach ? progs[i].attach : "skipped: ",
			      progs[i].skip_reason ? progs[i].skip_reason : "");
		if (!wanted && progs[i].attach)
			fail_msg("%s attached by default", progs[i].tracepoint);
		if (wanted && core && !progs[i].attach)
			fail_msg("%s not attached by default: %s", progs[i].tracepoint,
				 progs[i].skip_reason);
	}
	assert_false(bpf_loader_attached(loader, "mm_page_alloc"));
	/* Exactly one memory hook: memcg charge batches (fentry) where the kernel allows it,
	 * else buddy allocations; no steps yet, so mm_lru_insertion is not attached. */
	print_message("# default memory hook: %s\n",
		      bpf_loader_attached(loader, "page_counter_try_charge") ?
		      "page_counter_try_charge (fentry)" : "mm_page_alloc_zone_locked");
	assert_true(bpf_loader_attached(loader, "page_counter_try_charge") !=
		    bpf_loader_attached(loader, "mm_page_alloc_zone_locked"));
	assert_false(bpf_loader_attached(loader, "mm_lru_insertion"));

	/* A fresh child cgroup id: no entry may appear for it (the shared inspect loader is
	 * attached too, so look at what the default loader's own map holds). */
	assert_int_equal(bpf_loader_set_steps(loader, &steps), 0);
	drain_ring(loader);
	assert_int_equal(bpf_loader_read_node(loader, &node_before), 0);
	assert_int_equal(fork_and_reap(25), 25);
	assert_int_equal(bpf_loader_read_node(loader, &node_after), 0);
	assert_true(node_after.forks - node_before.forks >= 25);
	assert_int_equal(bpf_loader_read_cgroup(loader, T.cg.v2_id, &stats), -ENOENT);
	assert_true(bpf_loader_consume(loader, tally_wake, &tally) >= 0);
	assert_true(tally.by_type[EVICTD_WAKE_FORK_STEP] >= 1);

	/* 64 MiB touched at a 1 MiB memory step: memory-step wake-ups without any reclaim. */
	memset(&tally, 0, sizeof(tally));
	steps = (struct bpf_loader_steps){ .memory_pages = (1 << 20) / T.page_size };
	assert_int_equal(bpf_loader_set_steps(loader, &steps), 0);
	drain_ring(loader);
	mem = mmap(NULL, 64 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(mem != MAP_FAILED);
	memset(mem, 1, 64 << 20);
	munmap(mem, 64 << 20);
	assert_true(bpf_loader_consume(loader, tally_wake, &tally) >= 0);
	print_message("# default: %u memory-step, %u fork-step wake-ups\n",
		      tally.by_type[EVICTD_WAKE_MEMORY_STEP], tally.by_type[EVICTD_WAKE_FORK_STEP]);
	assert_true(tally.by_type[EVICTD_WAKE_MEMORY_STEP] >= 1);
	bpf_loader_destroy(loader, true);
}

/* The mark_victim variants: the one this kernel's BTF names attaches by default; the int-pid
 * program (6.2 .. 6.8) passes the verifier on this kernel too, as raw_tp (as tp_btf it may
 * not: its argument is typed here). */
static void test_mark_victim_variants(void **state)
{
	struct bpf_loader_opts opts = { .no_pin = true, .force_raw_tp = true,
					.force_mark_victim_shape = BPF_MARK_VICTIM_PID };
	struct bpf_loader *loader;

	NEED_LOADER();
	assert_true(bpf_loader_attached(T.loader, "mark_victim"));
	assert_true(bpf_loader_open(&loader, &opts) > 0);
	assert_true(bpf_loader_attached(loader, "mark_victim"));
	bpf_loader_destroy(loader, true);
}

/* ---- the buddy memory hook and its on-demand companion ---- */

/* A /proc/zoneinfo stand-in whose per-CPU lists hold `pages` (NULL text: remove it). */
static void write_zoneinfo(const char *path, const char *text, uint64_t pages)
{
	FILE *f;

	if (!text && pages == UINT64_MAX) {
		unlink(path);
		return;
	}
	f = fopen(path, "w");
	assert_non_null(f);
	if (text)
		fputs(text, f);
	else
		fprintf(f, "Node 0, zone   Normal\n  pages free     5000\n  pagesets\n"
			"    cpu: 0\n              count: %llu\n              high:  2000\n"
			"  vm stats threshold: 24\n", (unsigned long long)pages);
	assert_int_equal(fclose(f), 0);
}

/* A fresh path for the stand-in (the pin parent is a bpffs: no regular files there). */
static void zoneinfo_tmp(char *path)
{
	int fd;

	strcpy(path, "/tmp/evictd-zoneinfo-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
}

static uint64_t lru_inserted_now(struct bpf_loader *loader)
{
	struct evictd_node_stats node;

	assert_int_equal(bpf_loader_read_node(loader, &node), 0);
	return node.lru_inserted_pages;
}

static void touch_anon(size_t size)
{
	char *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(mem != MAP_FAILED);
	for (size_t off = 0; off < size; off += (size_t)T.page_size)
		mem[off] = 1;
	munmap(mem, size);
}

/* What the per-CPU lists hold now, from the real /proc/zoneinfo. */
static uint64_t pcp_pages_now(void)
{
	static char text[1 << 20];
	uint64_t pages = 0;
	FILE *f = fopen("/proc/zoneinfo", "re");
	size_t len;

	assert_non_null(f);
	len = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[len] = '\0';
	assert_int_equal(bpf_loader_pcp_pages(text, &pages), 0);
	return pages;
}

/*
 * The buddy hook alone (no on-demand companion: the stand-in zoneinfo says the per-CPU lists
 * are empty) wakes on anonymous memory and on page cache: both need pages from the buddy
 * lists once the per-CPU lists are used up, so each allocation is made four times what
 * they hold now.
 */
static void test_buddy_hook_sees_anon_and_page_cache(void **state)
{
	char zoneinfo[PATH_MAX], path[PATH_MAX];
	struct bpf_loader_opts opts = { .no_pin = true, .memory_hook = BPF_MEMORY_HOOK_BUDDY,
					.zoneinfo_path = zoneinfo };
	uint64_t pcp = pcp_pages_now();
	size_t size = (size_t)(4 * pcp + 16384) * (size_t)T.page_size;
	struct bpf_loader_steps steps = { .memory_pages = (uint64_t)(size / 8 / T.page_size) };
	struct step_values anon = {}, cache = {};
	size_t cache_size = size;
	struct bpf_loader *loader;
	struct statvfs fs;
	int fd;

	NEED_LOADER();
	zoneinfo_tmp(zoneinfo);
	write_zoneinfo(zoneinfo, NULL, 0);
	assert_true(bpf_loader_open(&loader, &opts) > 0);
	assert_true(bpf_loader_attached(loader, "mm_page_alloc_zone_locked"));
	assert_false(bpf_loader_attached(loader, "mm_lru_insertion"));
	assert_false(bpf_loader_attached(loader, "page_counter_try_charge"));

	assert_int_equal(bpf_loader_set_steps(loader, &steps), 0);
	drain_ring(loader);
	touch_anon(size);
	assert_true(bpf_loader_consume(loader, memory_step_values, &anon) >= 0);

	snprintf(path, sizeof(path), "%s/evictd-buddy-XXXXXX", test_dir());
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	/* Page cache: as much, or half the free space of a small test disk (the guest's). */
	assert_int_equal(fstatvfs(fd, &fs), 0);
	if (cache_size > (size_t)fs.f_bavail * fs.f_frsize / 2)
		cache_size = ((size_t)fs.f_bavail * fs.f_frsize / 2) & ~(size_t)((1 << 20) - 1);
	if (cache_size < (size_t)(4 * pcp + 2048) * (size_t)T.page_size)
		fail_msg("%s: %zu MiB free, too little beside per-CPU lists of %llu pages", path,
			 (size_t)fs.f_bavail * fs.f_frsize >> 20, (unsigned long long)pcp);
	steps.memory_pages = (uint64_t)(cache_size / 8 / T.page_size);
	assert_int_equal(bpf_loader_set_steps(loader, &steps), 0);
	drain_ring(loader);
	{
		static char buf[1 << 20];

		memset(buf, 0x5a, sizeof(buf));
		for (size_t off = 0; off < cache_size; off += sizeof(buf))
			assert_int_equal(pwrite(fd, buf, sizeof(buf), (off_t)off), sizeof(buf));
	}
	assert_true(bpf_loader_consume(loader, memory_step_values, &cache) >= 0);
	close(fd);
	print_message("# buddy hook: per-CPU lists %llu pages; anon %zu MiB, page cache %zu MiB, "
		      "each at an eighth of it as the step: %u and %u memory-step wake-ups\n",
		      (unsigned long long)pcp, size >> 20, cache_size >> 20, anon.count, cache.count);
	assert_true(anon.count >= 1);
	assert_true(cache.count >= 1);
	assert_false(bpf_loader_attached(loader, "mm_lru_insertion"));
	bpf_loader_destroy(loader, true);
	unlink(zoneinfo);
}

/*
 * mm_lru_insertion is attached beside the buddy hook exactly while the memory step is at most
 * twice what the per-CPU lists hold (boundary included), detached otherwise, never while the
 * loader is detached, and whenever the lists cannot be read. Its program runs only while
 * attached (inspect: the node's lru_inserted_pages).
 */
static void test_near_hook_on_demand(void **state)
{
	char zoneinfo[PATH_MAX];
	struct bpf_loader_opts opts = { .no_pin = true, .inspect = true, .zoneinfo_path = zoneinfo,
					.zoneinfo_max_age_ns = -1 };
	struct bpf_loader_steps steps = {};
	struct bpf_loader *loader;
	unsigned int at_open;
	uint64_t before;

	NEED_LOADER();
	zoneinfo_tmp(zoneinfo);
	write_zoneinfo(zoneinfo, NULL, 25600);
	assert_true(bpf_loader_open(&loader, &opts) > 0);
	at_open = bpf_loader_attached_count(loader);
	if (bpf_loader_attached(loader, "page_counter_try_charge")) {
		/* The charge hook sees every charge batch: nothing to add near a threshold. */
		steps.memory_pages = 1;
		assert_int_equal(bpf_loader_set_steps(loader, &steps), 0);
		assert_false(bpf_loader_attached(loader, "mm_lru_insertion"));
		assert_false(bpf_loader_attached(loader, "mm_page_alloc_zone_locked"));
		bpf_loader_destroy(loader, true);
		SKIP_BECAUSE("the charge hook attached (fentry allowed): no on-demand hook");
	}
	assert_true(bpf_loader_attached(loader, "mm_page_alloc_zone_locked"));

#define STEP_EXPECT(pages, near)								do {												steps.memory_pages = (pages);								assert_int_equal(bpf_loader_set_steps(loader, &steps), 0);				if (bpf_loader_attached(loader, "mm_lru_insertion") != (near))					fail_msg("step %llu pages: mm_lru_insertion %s", 						 (unsigned long long)(pages), (near) ? "not attached" :					 "attached");								assert_int_equal(bpf_loader_attached_count(loader), at_open + !!(near));	} while (0)

	STEP_EXPECT(262144, false);	/* 1 GiB step, 100 MiB on the lists */
	STEP_EXPECT(51200, true);	/* twice the lists */
	STEP_EXPECT(51201, false);	/* one page past */
	STEP_EXPECT(1, true);
	STEP_EXPECT(0, false);		/* no memory threshold */

	/* Its program runs only while attached. */
	STEP_EXPECT(262144, false);
	before = lru_inserted_now(loader);
	touch_anon(16 << 20);
	assert_int_equal(lru_inserted_now(loader), before);
	STEP_EXPECT(100, true);
	before = lru_inserted_now(loader);
	touch_anon(16 << 20);
	print_message("# near hook attached: %llu pages inserted for 16 MiB touched\n",
		      (unsigned long long)(lru_inserted_now(loader) - before));
	/* Not all 4096: the last few folios wait in the per-CPU lru_add batches. */
	assert_true(lru_inserted_now(loader) - before >= (uint64_t)((8 << 20) / T.page_size));

	/* Detached: nothing comes back with new steps until re-attached. */
	assert_int_equal(bpf_loader_set_attached(loader, false), 0);
	assert_false(bpf_loader_attached(loader, "mm_lru_insertion"));
	steps.memory_pages = 100;
	assert_int_equal(bpf_loader_set_steps(loader, &steps), 0);
	assert_false(bpf_loader_attached(loader, "mm_lru_insertion"));
	assert_int_equal(bpf_loader_attached_count(loader), 0);
	/* Re-attached: back at once for the last step. */
	assert_int_equal(bpf_loader_set_attached(loader, true), (int)at_open + 1);
	assert_true(bpf_loader_attached(loader, "mm_lru_insertion"));
	STEP_EXPECT(100, true);

	/* Lists that cannot be read: the safe side, every folio seen while a threshold is set. */
	write_zoneinfo(zoneinfo, "Node 0, zone Normal\n  pagesets\n    cpu: 0\n  count: -1\n", 0);
	STEP_EXPECT(262144, true);
	write_zoneinfo(zoneinfo, NULL, UINT64_MAX);
	STEP_EXPECT(262144, true);
	STEP_EXPECT(0, false);
	write_zoneinfo(zoneinfo, NULL, 0);
	STEP_EXPECT(1, false);		/* empty lists: the buddy hook sees every page */
#undef STEP_EXPECT
	bpf_loader_destroy(loader, true);
	unlink(zoneinfo);
}

/* The candidate memory hook loads and replaces mm_lru_insertion when asked for. */
static void test_page_alloc_hook(void **state)
{
	struct bpf_loader_opts opts = { .no_pin = true,
					.memory_hook = BPF_MEMORY_HOOK_PAGE_ALLOC };
	struct bpf_loader *loader;

	NEED_LOADER();
	assert_true(bpf_loader_open(&loader, &opts) > 0);
	assert_true(bpf_loader_attached(loader, "mm_page_alloc"));
	assert_false(bpf_loader_attached(loader, "mm_lru_insertion"));
	bpf_loader_destroy(loader, true);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct latency {
	uint64_t *samples;
	size_t count, cap;
};

static int record_latency(void *ctx, const struct evictd_wake *wake)
{
	struct latency *lat = ctx;
	uint64_t now = monotonic_ns();

	if (wake->type == EVICTD_WAKE_FORK_STEP && lat->count < lat->cap && now >= wake->ktime_ns)
		lat->samples[lat->count++] = now - wake->ktime_ns;
	return 0;
}

/* Kernel event -> handler latency over >= 1000 wake-ups (printed; no timing assertion). */
static void test_wake_latency_measured(void **state)
{
	struct latency lat = { .cap = 1200 };
	struct epoll_event ev = { .events = EPOLLIN };
	uint64_t deadline;
	int ep, status;
	pid_t gen;

	NEED_LOADER();
	lat.samples = calloc(lat.cap, sizeof(*lat.samples));
	assert_non_null(lat.samples);
	set_pids_step(1, 0);
	ep = epoll_create1(EPOLL_CLOEXEC);
	assert_true(ep >= 0);
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, bpf_loader_ring_fd(T.loader), &ev), 0);

	gen = fork();
	assert_true(gen >= 0);
	if (gen == 0) {
		/* One fork every ~1 ms, so each wake-up finds the handler idle in epoll. */
		for (int i = 0; i < 1150; i++) {
			fork_and_reap(1);
			usleep(1000);
		}
		_exit(0);
	}
	deadline = monotonic_ns() + 30ULL * 1000000000ULL;
	while (lat.count < 1000 && monotonic_ns() < deadline) {
		if (epoll_wait(ep, &ev, 1, 100) > 0)
			bpf_loader_consume(T.loader, record_latency, &lat);
	}
	kill(gen, SIGKILL);
	waitpid(gen, &status, 0);
	close(ep);
	set_pids_step(0, 0);
	assert_true(lat.count >= 1000);
	qsort(lat.samples, lat.count, sizeof(*lat.samples), cmp_u64);
	print_message("# event->handler latency over %zu wake-ups: p50 %.1f us, p99 %.1f us, "
		      "max %.1f us\n", lat.count, lat.samples[lat.count / 2] / 1000.0,
		      lat.samples[lat.count * 99 / 100] / 1000.0,
		      lat.samples[lat.count - 1] / 1000.0);
	free(lat.samples);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_attaches_core),
		cmocka_unit_test(test_fork_exit_counted_exactly),
		cmocka_unit_test(test_page_cache_pages_counted),
		cmocka_unit_test(test_inode_alloc_free_counted),
		cmocka_unit_test(test_step_crossed_wakes),
		cmocka_unit_test(test_step_not_crossed_silent),
		cmocka_unit_test(test_rate_limited),
		cmocka_unit_test(test_memory_step_without_reclaim),
		cmocka_unit_test(test_oom_kill_reported),
		cmocka_unit_test(test_pins_and_bpftool),
		cmocka_unit_test(test_pins_reused_and_replaced),
		cmocka_unit_test(test_raw_tp_fallback),
		cmocka_unit_test(test_no_page_cache_option),
		cmocka_unit_test(test_default_is_wakeups_only),
		cmocka_unit_test(test_mark_victim_variants),
		cmocka_unit_test(test_page_alloc_hook),
		cmocka_unit_test(test_buddy_hook_sees_anon_and_page_cache),
		cmocka_unit_test(test_near_hook_on_demand),
		cmocka_unit_test(test_wake_latency_measured),
	};

	return cmocka_run_group_tests_name("bpf_dataplane", tests, group_setup, group_teardown);
}
