// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Signals (DESIGN.md §1): names, meminfo, cgroup layout detection, working set, filesystems
 * (through injected stat/statvfs), pids, signals_read, and one read of this real host.
 * Static trees: tests/fixtures/node-{v2,v1,hybrid}. Expected numbers are worked out by
 * hand in the comments. */
#include "testutil.h"

#include <stdint.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <time.h>

#include "sys/log.h"
#include "signals/signals.h"
#include "sys/clock.h"

#define NODE_V2 FIXTURES_DIR "/node-v2"
#define NODE_V1 FIXTURES_DIR "/node-v1"
#define NODE_HYBRID FIXTURES_DIR "/node-hybrid"

#define CGROUP2_SUPER_MAGIC_VALUE 0x63677270

static int setup_tmp(void **state)
{
	char *root = malloc(PATH_MAX);

	if (!root)
		return -1;
	fixture_tmpdir(root, "signals");
	*state = root;
	return 0;
}

static int teardown_tmp(void **state)
{
	fixture_rm_rf(*state);
	free(*state);
	signals_set_fs_ops(NULL);
	return 0;
}

static int teardown_fs_ops(void **state)
{
	signals_set_fs_ops(NULL);
	return 0;
}

/* A tmp tree with just enough for the memory signals. */
static void write_meminfo(const char *root, long total_kb, long available_kb)
{
	fixture_write(root, "proc/meminfo",
		      "MemTotal:       %ld kB\nMemFree:         123456 kB\n"
		      "MemAvailable:   %ld kB\nBuffers:           2048 kB\n",
		      total_kb, available_kb);
}

static void write_v2_controllers(const char *root)
{
	fixture_write(root, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
}

/* ---- names ---------------------------------------------------------------------------- */

static void test_signal_names_round_trip(void **state)
{
	static const char *const kubelet[] = {
		"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available",
		"imagefs.inodesFree", "containerfs.available", "containerfs.inodesFree",
		"pid.available", "allocatableMemory.available",
	};
	enum ev_signal signal;

	assert_int_equal(sizeof(kubelet) / sizeof(kubelet[0]), EV_SIGNAL_OOM_GUARD);
	for (int i = 0; i < EV_SIGNAL_OOM_GUARD; i++) {
		assert_string_equal(signal_name((enum ev_signal)i), kubelet[i]);
		assert_int_equal(signal_from_name(kubelet[i], &signal), 0);
		assert_int_equal(signal, i);
	}
	assert_string_equal(signal_name(EV_SIGNAL_OOM_GUARD), "oom.guard");
	assert_string_equal(signal_name(EV_SIGNAL_COUNT), "unknown");
}

static void test_signal_from_name_rejects(void **state)
{
	enum ev_signal signal = EV_SIGNAL_PID_AVAILABLE;

	/* The guard is evictd's, never a configurable threshold. */
	assert_int_equal(signal_from_name("oom.guard", &signal), -ENOENT);
	assert_int_equal(signal_from_name("memory.Available", &signal), -ENOENT);
	assert_int_equal(signal_from_name("memory.available ", &signal), -ENOENT);
	assert_int_equal(signal_from_name("memory", &signal), -ENOENT);
	assert_int_equal(signal_from_name("", &signal), -ENOENT);
	assert_int_equal(signal_from_name(NULL, &signal), -ENOENT);
	assert_int_equal(signal, EV_SIGNAL_PID_AVAILABLE);	/* untouched on failure */
}

static void test_signal_valid_names(void **state)
{
	const char *names = signal_valid_names();

	for (int i = 0; i < EV_SIGNAL_OOM_GUARD; i++)
		assert_non_null(strstr(names, signal_name((enum ev_signal)i)));
	assert_null(strstr(names, "oom.guard"));
	assert_non_null(strchr(names, ','));
}

static void test_conditions(void **state)
{
	assert_string_equal(condition_name(EV_CONDITION_MEMORY_PRESSURE), "MemoryPressure");
	assert_string_equal(condition_name(EV_CONDITION_DISK_PRESSURE), "DiskPressure");
	assert_string_equal(condition_name(EV_CONDITION_PID_PRESSURE), "PIDPressure");

	assert_int_equal(signal_condition(EV_SIGNAL_MEMORY_AVAILABLE), EV_CONDITION_MEMORY_PRESSURE);
	for (int s = EV_SIGNAL_NODEFS_AVAILABLE; s <= EV_SIGNAL_CONTAINERFS_INODES_FREE; s++)
		assert_int_equal(signal_condition((enum ev_signal)s), EV_CONDITION_DISK_PRESSURE);
	assert_int_equal(signal_condition(EV_SIGNAL_PID_AVAILABLE), EV_CONDITION_PID_PRESSURE);
	assert_int_equal(signal_condition(EV_SIGNAL_OOM_GUARD), EV_CONDITION_NONE);
}

static void test_signal_meta_table(void **state)
{
	static const struct { enum ev_signal signal; const char *unit, *resource; } want[] = {
		{ EV_SIGNAL_MEMORY_AVAILABLE, "bytes", "memory" },
		{ EV_SIGNAL_NODEFS_AVAILABLE, "bytes", "ephemeral-storage" },
		{ EV_SIGNAL_NODEFS_INODES_FREE, "inodes", "inodes" },
		{ EV_SIGNAL_IMAGEFS_AVAILABLE, "bytes", "ephemeral-storage" },
		{ EV_SIGNAL_IMAGEFS_INODES_FREE, "inodes", "inodes" },
		{ EV_SIGNAL_CONTAINERFS_AVAILABLE, "bytes", "ephemeral-storage" },
		{ EV_SIGNAL_CONTAINERFS_INODES_FREE, "inodes", "inodes" },
		{ EV_SIGNAL_PID_AVAILABLE, "tasks", "pids" },
		{ EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE, "bytes", "memory" },
		{ EV_SIGNAL_OOM_GUARD, "bytes", "memory" },
		{ EV_SIGNAL_SWAP_AVAILABLE, "bytes", "memory" },
		{ EV_SIGNAL_ZRAM_AVAILABLE, "bytes", "memory" },
		{ EV_SIGNAL_MEMORY_PRESSURE, "permyriad", "memory" },
	};

	assert_int_equal(sizeof(want) / sizeof(want[0]), EV_SIGNAL_COUNT);
	for (size_t i = 0; i < EV_SIGNAL_COUNT; i++) {
		assert_string_equal(signal_unit_name(want[i].signal), want[i].unit);
		assert_string_equal(signal_resource(want[i].signal), want[i].resource);
	}
	/* The constant masks agree with the table. */
	assert_int_equal(signal_group_mask(SIGNAL_GROUP_MEMORY), SIGNAL_MASK_MEMORY);
	assert_int_equal(signal_group_mask(SIGNAL_GROUP_FS), SIGNAL_MASK_FS);
	assert_int_equal(signal_group_mask(SIGNAL_GROUP_PID), SIGNAL_MASK_PID);
	assert_int_equal(signal_group_mask(SIGNAL_GROUP_MEMORY | SIGNAL_GROUP_FS | SIGNAL_GROUP_PID),
			 ((1u << EV_SIGNAL_COUNT) - 1) & ~SIGNAL_MASK(EV_SIGNAL_MEMORY_PRESSURE));
	assert_true(signal_meta(EV_SIGNAL_CONTAINERFS_AVAILABLE)->derived);
	assert_false(signal_meta(EV_SIGNAL_NODEFS_AVAILABLE)->derived);
	assert_false(signal_meta(EV_SIGNAL_OOM_GUARD)->configurable);
	assert_string_equal(signal_meta(EV_SIGNAL_COUNT)->name, "unknown");
	assert_string_equal(condition_name(EV_CONDITION_NONE), "none");
	assert_string_equal(signal_valid_names(),
			    "memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, "
			    "imagefs.inodesFree, containerfs.available, containerfs.inodesFree, pid.available, "
			    "allocatableMemory.available");
}

static void test_fs_layout_names(void **state)
{
	assert_string_equal(fs_layout_name(FS_LAYOUT_SINGLE), "single");
	assert_string_equal(fs_layout_name(FS_LAYOUT_SPLIT_DISK), "split-disk");
	assert_string_equal(fs_layout_name(FS_LAYOUT_SPLIT_IMAGE), "split-image");
	assert_string_equal(fs_layout_name((enum fs_layout)42), "unknown");
}

/* ---- meminfo -------------------------------------------------------------------------- */

static void test_meminfo_fixture(void **state)
{
	int64_t total, available;

	/* MemTotal 4005056 kB * 1024 = 4101177344; MemAvailable 2874512 kB = 2943500288. */
	assert_int_equal(signals_read_meminfo(NODE_V2, &total, &available), 0);
	assert_int_equal(total, 4101177344LL);
	assert_int_equal(available, 2943500288LL);

	/* A trailing slash on root is the same root. */
	assert_int_equal(signals_read_meminfo(NODE_V2 "/", &total, &available), 0);
	assert_int_equal(total, 4101177344LL);
}

static void test_meminfo_missing(void **state)
{
	const char *root = *state;
	int64_t total = -1, available = -1;

	assert_int_equal(signals_read_meminfo(root, &total, &available), -ENOENT);

	/* A meminfo without MemAvailable (pre-3.14 shape) is not enough for the guard. */
	fixture_write(root, "proc/meminfo", "MemTotal:        1000 kB\nMemFree:  10 kB\n");
	assert_int_equal(signals_read_meminfo(root, &total, &available), -ENODATA);

	fixture_write(root, "proc/meminfo", "MemTotal:        lots kB\nMemAvailable: 1 kB\n");
	assert_int_equal(signals_read_meminfo(root, &total, &available), -EINVAL);
}

/* ---- cgroup layout -------------------------------------------------------------------- */

static void test_detect_v2(void **state)
{
	struct signal_source source = { .root = NODE_V2 };
	char dir[PATH_MAX];

	assert_int_equal(signals_detect_cgroup_layout(&source, dir, sizeof(dir)), CGROUP_LAYOUT_V2);
	assert_string_equal(dir, NODE_V2 "/sys/fs/cgroup");
}

static void test_detect_v1(void **state)
{
	struct signal_source source = { .root = NODE_V1 };
	char dir[PATH_MAX];

	assert_int_equal(signals_detect_cgroup_layout(&source, dir, sizeof(dir)), CGROUP_LAYOUT_V1);
	assert_string_equal(dir, NODE_V1 "/sys/fs/cgroup/memory");
}

static void test_detect_hybrid(void **state)
{
	struct signal_source source = { .root = NODE_HYBRID };
	char dir[PATH_MAX];

	/* unified/cgroup.controllers is "hugetlb": the memory controller is on v1. */
	assert_int_equal(signals_detect_cgroup_layout(&source, dir, sizeof(dir)), CGROUP_LAYOUT_V1);
	assert_string_equal(dir, NODE_HYBRID "/sys/fs/cgroup/memory");
	assert_int_equal(signals_detect_cgroup_layout(&source, NULL, 0), CGROUP_LAYOUT_V1);
}

static void test_detect_hybrid_memory_on_unified(void **state)
{
	const char *root = *state;
	struct signal_source source = { .root = root };
	char dir[PATH_MAX], want[PATH_MAX];

	/* Memory enabled on the unified mount wins even with a stale v1 memory dir around. */
	fixture_write(root, "sys/fs/cgroup/unified/cgroup.controllers", "memory pids\n");
	fixture_write(root, "sys/fs/cgroup/memory/memory.usage_in_bytes", "1\n");
	assert_int_equal(signals_detect_cgroup_layout(&source, dir, sizeof(dir)), CGROUP_LAYOUT_V2);
	snprintf(want, sizeof(want), "%s/sys/fs/cgroup/unified", root);
	assert_string_equal(dir, want);

	/* "memory_foo" is not "memory": whole words only. */
	fixture_write(root, "sys/fs/cgroup/unified/cgroup.controllers", "memory_foo hugetlb\n");
	assert_int_equal(signals_detect_cgroup_layout(&source, dir, sizeof(dir)), CGROUP_LAYOUT_V1);
}

static void test_detect_explicit_dirs(void **state)
{
	const char *root = *state;
	struct signal_source source = { .root = root };
	char dir[PATH_MAX], want[PATH_MAX];

	fixture_write(root, "sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
	fixture_write(root, "mnt/cg2/cgroup.controllers", "cpu io\n");
	fixture_write(root, "mnt/mem/memory.usage_in_bytes", "1\n");

	/* An explicit v2 dir replaces the defaults: /mnt/cg2 has no memory, so fall to v1. */
	source.cgroup_v2_dir = "/mnt/cg2";
	assert_int_equal(signals_detect_cgroup_layout(&source, dir, sizeof(dir)),
			 CGROUP_LAYOUT_UNKNOWN);
	source.cgroup_v1_memory_dir = "mnt/mem";	/* leading '/' optional */
	assert_int_equal(signals_detect_cgroup_layout(&source, dir, sizeof(dir)), CGROUP_LAYOUT_V1);
	snprintf(want, sizeof(want), "%s/mnt/mem", root);
	assert_string_equal(dir, want);

	source.cgroup_v2_dir = "";	/* "" = detect */
	assert_int_equal(signals_detect_cgroup_layout(&source, dir, sizeof(dir)), CGROUP_LAYOUT_V2);
	snprintf(want, sizeof(want), "%s/sys/fs/cgroup", root);
	assert_string_equal(dir, want);

	/* A dir buffer too small is a failure, not a truncated path. */
	assert_int_equal(signals_detect_cgroup_layout(&source, dir, 8), CGROUP_LAYOUT_UNKNOWN);
}

static void test_detect_none(void **state)
{
	const char *root = *state;
	struct signal_source source = { .root = root };
	struct observations obs = { 0 };
	char dir[PATH_MAX];

	/* Pure v2 with the memory controller disabled, no v1: nothing to read. */
	fixture_write(root, "sys/fs/cgroup/cgroup.controllers", "cpu io pids\n");
	write_meminfo(root, 1000, 500);
	assert_int_equal(signals_detect_cgroup_layout(&source, dir, sizeof(dir)),
			 CGROUP_LAYOUT_UNKNOWN);
	assert_int_equal(signals_read_memory(&source, &obs), -ENOENT);
	assert_false(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].present);
	assert_int_equal(obs.cgroup_layout, CGROUP_LAYOUT_UNKNOWN);

	/* A v1 memory dir without memory.usage_in_bytes is not a memory hierarchy. */
	fixture_write(root, "sys/fs/cgroup/memory/memory.stat", "total_inactive_file 0\n");
	assert_int_equal(signals_detect_cgroup_layout(&source, dir, sizeof(dir)),
			 CGROUP_LAYOUT_UNKNOWN);
}

/* ---- memory.available ----------------------------------------------------------------- */

static void test_memory_v2_fixture(void **state)
{
	struct signal_source source = { .root = NODE_V2 };
	struct observations obs = { 0 };
	const struct observation *mem = &obs.signal[EV_SIGNAL_MEMORY_AVAILABLE];
	const struct observation *guard = &obs.signal[EV_SIGNAL_OOM_GUARD];

	/* capacity   = MemTotal 4005056 kB                  = 4101177344
	 * usage      = anon 812003328 + file 1548124160     = 2360127488
	 * workingSet = usage - inactive_file 903831552      = 1456295936
	 * available  = 4101177344 - 1456295936              = 2644881408
	 * guard      = MemAvailable 2874512 kB              = 2943500288 of 4101177344 */
	assert_int_equal(signals_read_memory(&source, &obs), 0);
	assert_int_equal(obs.cgroup_layout, CGROUP_LAYOUT_V2);
	assert_true(mem->present);
	assert_int_equal(mem->capacity, 4101177344LL);
	assert_int_equal(mem->available, 2644881408LL);
	assert_int_equal(obs.memory_working_set_bytes, 1456295936LL);
	assert_int_equal(obs.mem_total_bytes, 4101177344LL);
	assert_int_equal(obs.mem_available_kernel_bytes, 2943500288LL);
	assert_true(guard->present);
	assert_int_equal(guard->available, 2943500288LL);
	assert_int_equal(guard->capacity, 4101177344LL);
	assert_true(mem->read_at_ns > 0 && mem->read_at_ns <= clock_monotonic_ns());

	/* Percentages are of capacity: 2644881408 / 4101177344 = 64.49%, so
	 * memory.available<10% (410117734) is not met and <65% (2665765273) is. */
	assert_int_equal(mem->available * 100 / mem->capacity, 64);
	assert_true(mem->capacity * 10 / 100 < mem->available);
	assert_true(mem->capacity * 65 / 100 > mem->available);
	/* The guard: 2943500288 / 4101177344 = 71.77%. */
	assert_int_equal(guard->available * 100 / guard->capacity, 71);

	/* Read again: the cached layout gives the same answer. */
	memset(&obs, 0, sizeof(obs));
	assert_int_equal(signals_read_memory(&source, &obs), 0);
	assert_int_equal(mem->available, 2644881408LL);
}

static void test_memory_v1_fixture(void **state)
{
	struct signal_source source = { .root = NODE_V1 };
	struct observations obs = { 0 };
	const struct observation *mem = &obs.signal[EV_SIGNAL_MEMORY_AVAILABLE];

	/* capacity   = MemTotal 8152812 kB                              = 8348479488
	 * usage      = memory.usage_in_bytes                            = 3546804224
	 * workingSet = usage - total_inactive_file 1874026496           = 1672777728
	 *              (not the root-local inactive_file 41213952, which would give 3505590272)
	 * available  = 8348479488 - 1672777728                          = 6675701760 (79.96%) */
	assert_int_equal(signals_read_memory(&source, &obs), 0);
	assert_int_equal(obs.cgroup_layout, CGROUP_LAYOUT_V1);
	assert_true(mem->present);
	assert_int_equal(mem->capacity, 8348479488LL);
	assert_int_equal(obs.memory_working_set_bytes, 1672777728LL);
	assert_int_equal(mem->available, 6675701760LL);
	assert_int_equal(mem->available * 100 / mem->capacity, 79);
	/* MemAvailable 5923144 kB = 6065299456. */
	assert_int_equal(obs.signal[EV_SIGNAL_OOM_GUARD].available, 6065299456LL);
}

static void test_memory_hybrid_fixture(void **state)
{
	struct signal_source source = { .root = NODE_HYBRID };
	struct observations obs = { 0 };
	const struct observation *mem = &obs.signal[EV_SIGNAL_MEMORY_AVAILABLE];

	/* A snapshot of this host (hybrid: v1 memory, unified has only hugetlb):
	 * capacity   = MemTotal 24684100 kB                      = 25276518400
	 * workingSet = usage 832061440 - total_inactive_file 274677760 = 557383680
	 * available  = 25276518400 - 557383680                    = 24719134720
	 * guard      = MemAvailable 24184204 kB                   = 24764624896 */
	assert_int_equal(signals_read_memory(&source, &obs), 0);
	assert_int_equal(obs.cgroup_layout, CGROUP_LAYOUT_V1);
	assert_int_equal(mem->capacity, 25276518400LL);
	assert_int_equal(obs.memory_working_set_bytes, 557383680LL);
	assert_int_equal(mem->available, 24719134720LL);
	assert_int_equal(obs.signal[EV_SIGNAL_OOM_GUARD].available, 24764624896LL);
}

static void test_memory_floor_at_zero(void **state)
{
	const char *root = *state;
	struct signal_source source = { .root = root };
	struct observations obs = { 0 };
	const struct observation *mem = &obs.signal[EV_SIGNAL_MEMORY_AVAILABLE];

	/* v2: usage = 4096 + 8192 = 12288 < inactive_file 65536 -> workingSet 0,
	 * available = capacity = 2048 kB = 2097152. */
	write_meminfo(root, 2048, 1024);
	write_v2_controllers(root);
	fixture_write(root, "sys/fs/cgroup/memory.stat", "anon 4096\nfile 8192\ninactive_file 65536\n");
	assert_int_equal(signals_read_memory(&source, &obs), 0);
	assert_int_equal(obs.memory_working_set_bytes, 0);
	assert_int_equal(mem->available, 2097152);
	assert_int_equal(mem->capacity, 2097152);

	/* usage == inactive_file is 0 too, not negative. */
	fixture_write(root, "sys/fs/cgroup/memory.stat", "anon 4096\nfile 8192\ninactive_file 12288\n");
	assert_int_equal(signals_read_memory(&source, &obs), 0);
	assert_int_equal(obs.memory_working_set_bytes, 0);
}

static void test_memory_v1_floor_at_zero(void **state)
{
	const char *root = *state;
	struct signal_source source = { .root = root };
	struct observations obs = { 0 };

	/* v1: usage 1000 - total_inactive_file 4096 < 0 -> 0; available = 1024 kB = 1048576. */
	write_meminfo(root, 1024, 512);
	fixture_write(root, "sys/fs/cgroup/memory/memory.usage_in_bytes", "1000\n");
	fixture_write(root, "sys/fs/cgroup/memory/memory.stat",
		      "cache 0\ninactive_file 1\ntotal_inactive_file 4096\n");
	assert_int_equal(signals_read_memory(&source, &obs), 0);
	assert_int_equal(obs.cgroup_layout, CGROUP_LAYOUT_V1);
	assert_int_equal(obs.memory_working_set_bytes, 0);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available, 1048576);
}

static void test_memory_working_set_above_total(void **state)
{
	const char *root = *state;
	struct signal_source source = { .root = root };
	struct observations obs = { 0 };

	/* The kubelet does not floor available: limit 1024 kB (1048576) - workingSet 2000000
	 * = -951424, capacity = available + workingSet = 1048576. */
	write_meminfo(root, 1024, 512);
	fixture_write(root, "sys/fs/cgroup/memory/memory.usage_in_bytes", "2000000\n");
	fixture_write(root, "sys/fs/cgroup/memory/memory.stat", "total_inactive_file 0\n");
	assert_int_equal(signals_read_memory(&source, &obs), 0);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available, -951424);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].capacity, 1048576);
}

static void test_memory_huge_counters_saturate(void **state)
{
	const char *root = *state;
	struct signal_source source = { .root = root };
	struct observations obs = { 0 };

	/* anon + file past INT64_MAX (a corrupt or hostile memory.stat): saturate, no wrap. */
	write_meminfo(root, 1024, 512);
	write_v2_controllers(root);
	fixture_write(root, "sys/fs/cgroup/memory.stat",
		      "anon 9223372036854775807\nfile 9223372036854775807\n");
	assert_int_equal(signals_read_memory(&source, &obs), 0);
	assert_int_equal(obs.memory_working_set_bytes, INT64_MAX);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available, 1048576 - INT64_MAX);
}

static void test_memory_no_inactive_key(void **state)
{
	const char *root = *state;
	struct signal_source source = { .root = root };
	struct observations obs = { 0 };

	/* cadvisor subtracts the inactive key only when memory.stat has it:
	 * workingSet = anon 4096 + file 8192 = 12288; available = 1048576 - 12288 = 1036288. */
	write_meminfo(root, 1024, 512);
	write_v2_controllers(root);
	fixture_write(root, "sys/fs/cgroup/memory.stat", "anon 4096\nfile 8192\nactive_file 8192\n");
	assert_int_equal(signals_read_memory(&source, &obs), 0);
	assert_int_equal(obs.memory_working_set_bytes, 12288);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available, 1036288);
}

static void test_memory_exact_keys(void **state)
{
	const char *root = *state;
	struct signal_source source = { .root = root };
	struct observations obs = { 0 };

	/* Decoys that share a prefix come first; only whole keys count:
	 * usage = anon 40960 + file 81920 = 122880; - inactive_file 20480 = 102400;
	 * available = 1048576 - 102400 = 946176. */
	write_meminfo(root, 1024, 512);
	write_v2_controllers(root);
	fixture_write(root, "sys/fs/cgroup/memory.stat",
		      "anon_thp 1\nanonymous 2\nfile_mapped 3\nfile_dirty 4\nfiles 5\n"
		      "inactive_anon 6\ninactive_file_x 7\nanon 40960\nfile 81920\n"
		      "inactive_file 20480\n");
	assert_int_equal(signals_read_memory(&source, &obs), 0);
	assert_int_equal(obs.memory_working_set_bytes, 102400);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available, 946176);
}

static void test_memory_long_stat(void **state)
{
	const char *root = *state;
	struct signal_source source = { .root = root };
	struct observations obs = { 0 };
	char path[PATH_MAX];
	FILE *f;

	/* A memory.stat far larger than the 4 KiB read buffer, the keys spread over chunk
	 * boundaries, one line longer than the buffer, and the last line without '\n':
	 * usage = 300000 + 500000 = 800000; - 200000 = 600000; available = 1048576 - 600000. */
	write_meminfo(root, 1024, 512);
	write_v2_controllers(root);
	snprintf(path, sizeof(path), "%s/sys/fs/cgroup/memory.stat", root);
	f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < 300; i++)
		fprintf(f, "filler_counter_%03d %d\n", i, i * 1000);
	fprintf(f, "anon 300000\n");
	fprintf(f, "long_");
	for (int i = 0; i < 6000; i++)
		fputc('x', f);
	fprintf(f, " 7\n");
	for (int i = 300; i < 600; i++)
		fprintf(f, "filler_counter_%03d %d\n", i, i * 1000);
	fprintf(f, "file 500000\ninactive_file 200000");
	fclose(f);
	assert_int_equal(signals_read_memory(&source, &obs), 0);
	assert_int_equal(obs.memory_working_set_bytes, 600000);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available, 448576);
}

static void test_memory_missing_files(void **state)
{
	const char *root = *state;
	struct signal_source source = { .root = root };
	struct observations obs = { 0 };

	/* controllers say v2 but memory.stat is gone: memory.available !present, the guard
	 * (meminfo only) still read. */
	write_meminfo(root, 1024, 512);
	write_v2_controllers(root);
	obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].present = true;
	assert_int_equal(signals_read_memory(&source, &obs), -ENOENT);
	assert_false(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].present);
	assert_true(obs.signal[EV_SIGNAL_OOM_GUARD].present);
	assert_int_equal(obs.signal[EV_SIGNAL_OOM_GUARD].available, 524288);

	/* memory.stat without anon/file is not a v2 root stat. */
	fixture_write(root, "sys/fs/cgroup/memory.stat", "file 1\ninactive_file 0\n");
	assert_int_equal(signals_read_memory(&source, &obs), -ENODATA);
	assert_false(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].present);

	fixture_write(root, "sys/fs/cgroup/memory.stat", "anon 12x\nfile 1\n");
	assert_int_equal(signals_read_memory(&source, &obs), -EINVAL);
	fixture_write(root, "sys/fs/cgroup/memory.stat", "anon -5\nfile 1\n");
	assert_int_equal(signals_read_memory(&source, &obs), -EINVAL);

	/* No meminfo: neither memory signal. */
	fixture_write(root, "sys/fs/cgroup/memory.stat", "anon 1\nfile 1\n");
	assert_int_equal(signals_read_memory(&source, &obs), 0);
	{
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/proc/meminfo", root);
		assert_int_equal(unlink(path), 0);
	}
	assert_int_equal(signals_read_memory(&source, &obs), -ENOENT);
	assert_false(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].present);
	assert_false(obs.signal[EV_SIGNAL_OOM_GUARD].present);
}

static void test_memory_v1_missing_stat(void **state)
{
	const char *root = *state;
	struct signal_source source = { .root = root };
	struct observations obs = { 0 };
	char path[PATH_MAX];

	write_meminfo(root, 1024, 512);
	fixture_write(root, "sys/fs/cgroup/memory/memory.usage_in_bytes", "4096\n");
	fixture_write(root, "sys/fs/cgroup/memory/memory.stat", "total_inactive_file 1024\n");
	assert_int_equal(signals_read_memory(&source, &obs), 0);
	assert_int_equal(obs.memory_working_set_bytes, 3072);

	/* Like runc's v1 stats, an unreadable memory.stat fails the read (cached layout too). */
	snprintf(path, sizeof(path), "%s/sys/fs/cgroup/memory/memory.stat", root);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(signals_read_memory(&source, &obs), -ENOENT);
	assert_false(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].present);

	snprintf(path, sizeof(path), "%s/sys/fs/cgroup/memory/memory.usage_in_bytes", root);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(signals_read_memory(&source, &obs), -ENOENT);
}

/* ---- pid.available -------------------------------------------------------------------- */

static void test_pids_fixtures(void **state)
{
	struct observations obs = { 0 };
	const struct observation *pid = &obs.signal[EV_SIGNAL_PID_AVAILABLE];

	/* v2 node: min(pid_max 4194304, threads-max 31236) = 31236; loadavg 3/1187:
	 * 31236 - 1187 = 30049. */
	assert_int_equal(signals_read_pids(NODE_V2, &obs), 0);
	assert_true(pid->present);
	assert_int_equal(pid->capacity, 31236);
	assert_int_equal(pid->available, 30049);
	assert_true(pid->read_at_ns > 0);

	/* v1 node: min(pid_max 32768, threads-max 63503) = 32768; 2/412: 32768 - 412 = 32356. */
	assert_int_equal(signals_read_pids(NODE_V1, &obs), 0);
	assert_int_equal(pid->capacity, 32768);
	assert_int_equal(pid->available, 32356);
	/* pid.available<5%: 1638 < 32356, not met; 99%: 32440 > 32356, met. */
	assert_true(pid->capacity * 5 / 100 < pid->available);
	assert_true(pid->capacity * 99 / 100 > pid->available);

	/* hybrid (this host): min(32768, 192731) - 92 = 32676. */
	assert_int_equal(signals_read_pids(NODE_HYBRID, &obs), 0);
	assert_int_equal(pid->available, 32676);
}

static void test_pids_one_limit(void **state)
{
	const char *root = *state;
	struct observations obs = { 0 };
	const struct observation *pid = &obs.signal[EV_SIGNAL_PID_AVAILABLE];

	/* Like the kubelet, a limit that cannot be read is skipped: 1000 - 10 = 990. */
	fixture_write(root, "proc/loadavg", "0.00 0.01 0.05 1/10 77\n");
	fixture_write(root, "proc/sys/kernel/threads-max", "1000\n");
	assert_int_equal(signals_read_pids(root, &obs), 0);
	assert_int_equal(pid->capacity, 1000);
	assert_int_equal(pid->available, 990);

	/* Both present, pid_max the smaller: 500 - 10 = 490. */
	fixture_write(root, "proc/sys/kernel/pid_max", "500\n");
	assert_int_equal(signals_read_pids(root, &obs), 0);
	assert_int_equal(pid->capacity, 500);
	assert_int_equal(pid->available, 490);
}

static void test_pids_missing(void **state)
{
	const char *root = *state;
	struct observations obs = { 0 };
	const struct observation *pid = &obs.signal[EV_SIGNAL_PID_AVAILABLE];

	obs.signal[EV_SIGNAL_PID_AVAILABLE].present = true;
	assert_int_equal(signals_read_pids(root, &obs), -ENOENT);
	assert_false(pid->present);

	/* Limits but no loadavg: a fixture root never falls back to this host's sysinfo. */
	fixture_write(root, "proc/sys/kernel/pid_max", "500\n");
	fixture_write(root, "proc/sys/kernel/threads-max", "1000\n");
	assert_int_equal(signals_read_pids(root, &obs), -ENOENT);
	assert_false(pid->present);

	/* Malformed loadavg: the slash must be in the 4th field. */
	fixture_write(root, "proc/loadavg", "0.00 0.01 0.05 17 1/10\n");
	assert_int_equal(signals_read_pids(root, &obs), -EINVAL);
	fixture_write(root, "proc/loadavg", "0.00 0.01\n");
	assert_int_equal(signals_read_pids(root, &obs), -EINVAL);
	fixture_write(root, "proc/loadavg", "0.00 0.01 0.05 1/ 5\n");
	assert_int_equal(signals_read_pids(root, &obs), -EINVAL);
	assert_false(pid->present);

	fixture_write(root, "proc/sys/kernel/pid_max", "many\n");
	fixture_write(root, "proc/loadavg", "0.00 0.01 0.05 1/10 5\n");
	assert_int_equal(signals_read_pids(root, &obs), 0);	/* threads-max alone */
	assert_int_equal(pid->available, 990);
}

/* ---- filesystems (injected stat/statvfs) ---------------------------------------------- */

struct fake_fs {
	const char *path;
	dev_t dev;
	unsigned long frsize;
	fsblkcnt_t blocks, bavail;
	fsfilcnt_t files, ffree;
};

static const struct fake_fs *fake_table;
static size_t fake_count;

static const struct fake_fs *fake_lookup(const char *path)
{
	for (size_t i = 0; i < fake_count; i++)
		if (strcmp(fake_table[i].path, path) == 0)
			return &fake_table[i];
	errno = ENOENT;
	return NULL;
}

static int fake_stat(const char *path, struct stat *st)
{
	const struct fake_fs *fs = fake_lookup(path);

	if (!fs)
		return -1;
	memset(st, 0, sizeof(*st));
	st->st_dev = fs->dev;
	st->st_mode = S_IFDIR | 0755;
	return 0;
}

static int fake_statvfs(const char *path, struct statvfs *sv)
{
	const struct fake_fs *fs = fake_lookup(path);

	if (!fs)
		return -1;
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = 1048576;	/* preferred I/O size; the counts are in f_frsize units */
	sv->f_frsize = fs->frsize;
	sv->f_blocks = fs->blocks;
	sv->f_bfree = fs->bavail + 1000;	/* root-reserved blocks: not available */
	sv->f_bavail = fs->bavail;
	sv->f_files = fs->files;
	sv->f_ffree = fs->ffree;
	sv->f_favail = fs->ffree;
	return 0;
}

static void use_fake_fs(const struct fake_fs *table, size_t count)
{
	static const struct signals_fs_ops ops = { .stat = fake_stat, .statvfs = fake_statvfs };

	fake_table = table;
	fake_count = count;
	signals_set_fs_ops(&ops);
}

/* nodefs: 100 GiB of 4 KiB blocks, 10 GiB available; 6553600 inodes, 327680 free (5%).
 * imagefs: 200 GiB, 30 GiB available (15%); 13107200 inodes, 12000000 free. */
#define NODEFS(path) { path, 1, 4096, 26214400, 2621440, 6553600, 327680 }
#define IMAGEFS(path) { path, 2, 4096, 52428800, 7864320, 13107200, 12000000 }
#define NODEFS_AVAIL 10737418240LL	/* 2621440 * 4096 */
#define NODEFS_CAP 107374182400LL	/* 26214400 * 4096 */
#define IMAGEFS_AVAIL 32212254720LL	/* 7864320 * 4096 */
#define IMAGEFS_CAP 214748364800LL	/* 52428800 * 4096 */

static void assert_fs(const struct observations *obs, enum ev_signal bytes, int64_t available,
		      int64_t capacity, int64_t inodes_free, int64_t inodes)
{
	const struct observation *b = &obs->signal[bytes], *i = &obs->signal[bytes + 1];

	assert_true(b->present);
	assert_int_equal(b->available, available);
	assert_int_equal(b->capacity, capacity);
	assert_true(i->present);
	assert_int_equal(i->available, inodes_free);
	assert_int_equal(i->capacity, inodes);
}

static void test_fs_single(void **state)
{
	static const struct fake_fs table[] = {
		NODEFS("/fake/var/lib/kubelet"),
		NODEFS("/fake/var/lib/containerd"),
	};
	struct signal_source source = { .root = "/fake" };	/* default dirs */
	struct observations obs = { .fs_layout = FS_LAYOUT_SPLIT_DISK };

	use_fake_fs(table, 2);
	assert_int_equal(signals_read_filesystems(&source, &obs), 0);
	assert_int_equal(obs.fs_layout, FS_LAYOUT_SINGLE);
	assert_fs(&obs, EV_SIGNAL_NODEFS_AVAILABLE, NODEFS_AVAIL, NODEFS_CAP, 327680, 6553600);
	assert_fs(&obs, EV_SIGNAL_IMAGEFS_AVAILABLE, NODEFS_AVAIL, NODEFS_CAP, 327680, 6553600);
	assert_fs(&obs, EV_SIGNAL_CONTAINERFS_AVAILABLE, NODEFS_AVAIL, NODEFS_CAP, 327680, 6553600);

	/* Percentages of capacity: nodefs is at exactly 10% (10 GiB of 100 GiB), so the
	 * default nodefs.available<10% threshold (10737418240) is not met (not <); inodes at
	 * exactly 5% (327680 of 6553600), nodefs.inodesFree<5% = 327680, not met either. */
	assert_int_equal(obs.signal[EV_SIGNAL_NODEFS_AVAILABLE].capacity * 10 / 100, NODEFS_AVAIL);
	assert_int_equal(obs.signal[EV_SIGNAL_NODEFS_INODES_FREE].capacity * 5 / 100, 327680);
}

static void test_fs_split_disk(void **state)
{
	static const struct fake_fs table[] = {
		NODEFS("/fake/var/lib/kubelet"),
		IMAGEFS("/fake/data/containerd"),
	};
	/* containerfs NULL = imagefs dir: images and writable layers together, apart from
	 * nodefs. */
	struct signal_source source = { .root = "/fake/", .kubelet_dir = "/var/lib/kubelet",
					.imagefs_dir = "/data/containerd" };
	struct observations obs = { 0 };

	use_fake_fs(table, 2);
	assert_int_equal(signals_read_filesystems(&source, &obs), 0);
	assert_int_equal(obs.fs_layout, FS_LAYOUT_SPLIT_DISK);
	assert_fs(&obs, EV_SIGNAL_NODEFS_AVAILABLE, NODEFS_AVAIL, NODEFS_CAP, 327680, 6553600);
	assert_fs(&obs, EV_SIGNAL_IMAGEFS_AVAILABLE, IMAGEFS_AVAIL, IMAGEFS_CAP, 12000000, 13107200);
	assert_fs(&obs, EV_SIGNAL_CONTAINERFS_AVAILABLE, IMAGEFS_AVAIL, IMAGEFS_CAP, 12000000,
		  13107200);
	/* imagefs at exactly 15% of capacity: 214748364800 * 15 / 100 = 32212254720. */
	assert_int_equal(IMAGEFS_CAP * 15 / 100, IMAGEFS_AVAIL);
}

static void test_fs_split_image(void **state)
{
	static const struct fake_fs table[] = {
		NODEFS("/fake/var/lib/kubelet"),
		IMAGEFS("/fake/data/images"),
		NODEFS("/fake/var/lib/containers/rw"),
	};
	/* Images on their own disk, writable layers back on the nodefs filesystem. */
	struct signal_source source = { .root = "/fake", .imagefs_dir = "/data/images",
					.containerfs_dir = "/var/lib/containers/rw" };
	struct observations obs = { 0 };

	use_fake_fs(table, 3);
	assert_int_equal(signals_read_filesystems(&source, &obs), 0);
	assert_int_equal(obs.fs_layout, FS_LAYOUT_SPLIT_IMAGE);
	assert_fs(&obs, EV_SIGNAL_IMAGEFS_AVAILABLE, IMAGEFS_AVAIL, IMAGEFS_CAP, 12000000, 13107200);
	assert_fs(&obs, EV_SIGNAL_CONTAINERFS_AVAILABLE, NODEFS_AVAIL, NODEFS_CAP, 327680, 6553600);

	/* A containerfs dir that does not exist is on nodefs: still split-image. */
	source.containerfs_dir = "/var/lib/nothing-here";
	assert_int_equal(signals_read_filesystems(&source, &obs), 0);
	assert_int_equal(obs.fs_layout, FS_LAYOUT_SPLIT_IMAGE);
	assert_fs(&obs, EV_SIGNAL_CONTAINERFS_AVAILABLE, NODEFS_AVAIL, NODEFS_CAP, 327680, 6553600);
}

static void test_fs_three_devices(void **state)
{
	static const struct fake_fs table[] = {
		NODEFS("/fake/var/lib/kubelet"),
		IMAGEFS("/fake/images"),
		{ "/fake/layers", 3, 4096, 1000, 500, 100, 50 },
	};
	struct signal_source source = { .root = "/fake", .imagefs_dir = "/images",
					.containerfs_dir = "/layers" };
	struct observations obs = { 0 };

	/* Not a kubelet layout: images and layers are still apart, reported as split-image.
	 * containerfs: 500 * 4096 = 2048000 of 1000 * 4096 = 4096000. */
	use_fake_fs(table, 3);
	assert_int_equal(signals_read_filesystems(&source, &obs), 0);
	assert_int_equal(obs.fs_layout, FS_LAYOUT_SPLIT_IMAGE);
	assert_fs(&obs, EV_SIGNAL_CONTAINERFS_AVAILABLE, 2048000, 4096000, 50, 100);
}

static void test_fs_imagefs_missing(void **state)
{
	static const struct fake_fs table[] = {
		NODEFS("/fake/var/lib/kubelet"),
	};
	struct signal_source source = { .root = "/fake", .imagefs_dir = "/var/lib/containerd",
					.containerfs_dir = "" };
	struct observations obs = { .fs_layout = FS_LAYOUT_SPLIT_IMAGE };

	/* No separate imagefs: the kubelet's "same as nodefs". */
	use_fake_fs(table, 1);
	assert_int_equal(signals_read_filesystems(&source, &obs), 0);
	assert_int_equal(obs.fs_layout, FS_LAYOUT_SINGLE);
	assert_fs(&obs, EV_SIGNAL_IMAGEFS_AVAILABLE, NODEFS_AVAIL, NODEFS_CAP, 327680, 6553600);
	assert_fs(&obs, EV_SIGNAL_CONTAINERFS_AVAILABLE, NODEFS_AVAIL, NODEFS_CAP, 327680, 6553600);
}

static void test_fs_zero_inodes(void **state)
{
	/* btrfs / tmpfs nr_inodes=0 report f_files 0: no inode signals, bytes still there.
	 * nodefs: 250 * 65536 = 16384000 of 1000 * 65536 = 65536000. */
	static const struct fake_fs table[] = {
		{ "/fake/var/lib/kubelet", 7, 65536, 1000, 250, 0, 0 },
		IMAGEFS("/fake/var/lib/containerd"),
	};
	struct signal_source source = { .root = "/fake" };
	struct observations obs = { 0 };

	use_fake_fs(table, 2);
	obs.signal[EV_SIGNAL_NODEFS_INODES_FREE].present = true;
	assert_int_equal(signals_read_filesystems(&source, &obs), 0);
	assert_true(obs.signal[EV_SIGNAL_NODEFS_AVAILABLE].present);
	assert_int_equal(obs.signal[EV_SIGNAL_NODEFS_AVAILABLE].available, 16384000);
	assert_int_equal(obs.signal[EV_SIGNAL_NODEFS_AVAILABLE].capacity, 65536000);
	assert_false(obs.signal[EV_SIGNAL_NODEFS_INODES_FREE].present);
	assert_true(obs.signal[EV_SIGNAL_IMAGEFS_INODES_FREE].present);
	assert_int_equal(obs.fs_layout, FS_LAYOUT_SPLIT_DISK);
}

static void test_fs_nodefs_missing(void **state)
{
	static const struct fake_fs table[] = {
		IMAGEFS("/fake/var/lib/containerd"),
	};
	struct signal_source source = { .root = "/fake" };
	struct observations obs = { .fs_layout = FS_LAYOUT_SPLIT_DISK };

	/* No kubelet dir: nodefs !present, the error returned; imagefs still read on its own,
	 * and the layout cannot be decided (single). */
	use_fake_fs(table, 1);
	for (int s = EV_SIGNAL_NODEFS_AVAILABLE; s <= EV_SIGNAL_CONTAINERFS_INODES_FREE; s++)
		obs.signal[s].present = true;
	assert_int_equal(signals_read_filesystems(&source, &obs), -ENOENT);
	assert_false(obs.signal[EV_SIGNAL_NODEFS_AVAILABLE].present);
	assert_false(obs.signal[EV_SIGNAL_NODEFS_INODES_FREE].present);
	assert_fs(&obs, EV_SIGNAL_IMAGEFS_AVAILABLE, IMAGEFS_AVAIL, IMAGEFS_CAP, 12000000, 13107200);
	assert_int_equal(obs.fs_layout, FS_LAYOUT_SINGLE);

	/* Nothing at all. */
	use_fake_fs(table, 0);
	assert_int_equal(signals_read_filesystems(&source, &obs), -ENOENT);
	for (int s = EV_SIGNAL_NODEFS_AVAILABLE; s <= EV_SIGNAL_CONTAINERFS_INODES_FREE; s++)
		assert_false(obs.signal[s].present);
}

static void test_fs_real_statvfs(void **state)
{
	struct signal_source source = { .root = NODE_V2 };
	struct observations obs = { 0 };
	const struct observation *node = &obs.signal[EV_SIGNAL_NODEFS_AVAILABLE];
	struct statvfs sv;
	int64_t capacity, available;

	/* The real calls (default ops) on the fixture's var/lib/kubelet; no containerd dir in
	 * the fixture, so imagefs falls back to the same filesystem. */
	signals_set_fs_ops(NULL);
	assert_int_equal(signals_read_filesystems(&source, &obs), 0);
	assert_int_equal(statvfs(NODE_V2 "/var/lib/kubelet", &sv), 0);
	capacity = (int64_t)sv.f_blocks * (int64_t)sv.f_frsize;
	available = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
	assert_true(node->present);
	assert_int_equal(node->capacity, capacity);
	/* Free space moves while other tests write: within 1% of capacity. */
	assert_true(llabs(node->available - available) <= capacity / 100);
	assert_int_equal(obs.fs_layout, FS_LAYOUT_SINGLE);
	assert_int_equal(obs.signal[EV_SIGNAL_IMAGEFS_AVAILABLE].capacity, capacity);
	assert_int_equal(obs.signal[EV_SIGNAL_NODEFS_INODES_FREE].present, sv.f_files > 0);
	if (sv.f_files > 0)
		assert_int_equal(obs.signal[EV_SIGNAL_NODEFS_INODES_FREE].capacity, sv.f_files);
}

/* ---- signals_read --------------------------------------------------------------------- */

static void test_read_all(void **state)
{
	static const struct fake_fs table[] = {
		NODEFS(NODE_V2 "/var/lib/kubelet"),
		IMAGEFS(NODE_V2 "/var/lib/containerd"),
	};
	struct signal_source source = { .root = NODE_V2 };
	struct observations obs = { 0 };
	int64_t before = clock_monotonic_ns(), after;

	use_fake_fs(table, 2);
	assert_int_equal(signals_read(&source, 0, &obs), 0);
	after = clock_monotonic_ns();
	for (int s = 0; s < EV_SIGNAL_COUNT; s++) {
		/* This node has no kubepods cgroup: no allocatable observation, as the kubelet
		 * has none without the "pods" system container. */
		if (s == EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE) {
			assert_false(obs.signal[s].present);
			continue;
		}
		/* Nor swap or zram: this node has neither (test_swap.c reads them). */
		if (s == EV_SIGNAL_SWAP_AVAILABLE || s == EV_SIGNAL_ZRAM_AVAILABLE) {
			assert_false(obs.signal[s].present);
			continue;
		}
		/* memory.pressure is the policy's (signals/pressure_watch.c), never signals_read's. */
		if (s == EV_SIGNAL_MEMORY_PRESSURE) {
			assert_false(obs.signal[s].present);
			continue;
		}
		assert_true(obs.signal[s].present);
		assert_true(obs.signal[s].read_at_ns >= before && obs.signal[s].read_at_ns <= after);
	}
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available, 2644881408LL);
	assert_int_equal(obs.signal[EV_SIGNAL_OOM_GUARD].available, 2943500288LL);
	assert_int_equal(obs.signal[EV_SIGNAL_PID_AVAILABLE].available, 30049);
	assert_int_equal(obs.signal[EV_SIGNAL_IMAGEFS_AVAILABLE].available, IMAGEFS_AVAIL);
	assert_int_equal(obs.fs_layout, FS_LAYOUT_SPLIT_DISK);
	assert_int_equal(obs.cgroup_layout, CGROUP_LAYOUT_V2);
}

static void test_read_mask(void **state)
{
	struct signal_source source = { .root = NODE_V1 };
	struct observations obs = { 0 };
	const struct observation sentinel = { .present = true, .available = -7, .capacity = 7 };

	/* Only the pid group: everything else stays as it was. */
	for (int s = 0; s < EV_SIGNAL_COUNT; s++)
		obs.signal[s] = sentinel;
	assert_int_equal(signals_read(&source, SIGNAL_MASK_PID, &obs), 0);
	assert_int_equal(obs.signal[EV_SIGNAL_PID_AVAILABLE].available, 32356);
	for (int s = 0; s < EV_SIGNAL_COUNT; s++)
		if (s != EV_SIGNAL_PID_AVAILABLE)
			assert_memory_equal(&obs.signal[s], &sentinel, sizeof(sentinel));

	/* Memory group only. */
	assert_int_equal(signals_read(&source, SIGNAL_MASK_MEMORY, &obs), 0);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available, 6675701760LL);
	assert_memory_equal(&obs.signal[EV_SIGNAL_NODEFS_AVAILABLE], &sentinel, sizeof(sentinel));
}

static void test_read_guard_only(void **state)
{
	const char *root = *state;
	struct signal_source source = { .root = root };
	struct observations obs = { 0 };

	/* Only meminfo, no cgroup tree: the guard alone reads fine and memory.available is
	 * not touched (the cgroup is not read). */
	write_meminfo(root, 2048, 100);
	obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available = 12345;
	assert_int_equal(signals_read(&source, SIGNAL_MASK(EV_SIGNAL_OOM_GUARD), &obs), 0);
	assert_true(obs.signal[EV_SIGNAL_OOM_GUARD].present);
	assert_int_equal(obs.signal[EV_SIGNAL_OOM_GUARD].available, 102400);
	assert_int_equal(obs.signal[EV_SIGNAL_OOM_GUARD].capacity, 2097152);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available, 12345);

	/* Asking for memory.available too fails: no cgroup. */
	assert_int_equal(signals_read(&source, SIGNAL_MASK_MEMORY, &obs), -ENOENT);
	assert_false(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].present);
	assert_true(obs.signal[EV_SIGNAL_OOM_GUARD].present);
}

static void test_read_failures(void **state)
{
	const char *root = *state;
	struct signal_source source = { .root = root };
	struct observations obs = { 0 };

	/* An empty root: memory asked and missing -> its error; twice (the second logs
	 * quietly). */
	assert_int_equal(signals_read(&source, 0, &obs), -ENOENT);
	assert_int_equal(signals_read(&source, 0, &obs), -ENOENT);
	for (int s = 0; s < EV_SIGNAL_COUNT; s++)
		assert_false(obs.signal[s].present);
	assert_int_equal(signals_read(&source, SIGNAL_MASK_PID | SIGNAL_MASK_FS, &obs), -ENOENT);

	/* Memory readable, pids not: success, pid.available !present. */
	write_meminfo(root, 1024, 512);
	write_v2_controllers(root);
	fixture_write(root, "sys/fs/cgroup/memory.stat", "anon 0\nfile 0\n");
	assert_int_equal(signals_read(&source, SIGNAL_MASK_MEMORY | SIGNAL_MASK_PID, &obs), 0);
	assert_true(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].present);
	assert_false(obs.signal[EV_SIGNAL_PID_AVAILABLE].present);

	/* No memory asked: success as soon as one requested signal was read. */
	fixture_write(root, "proc/sys/kernel/pid_max", "100\n");
	fixture_write(root, "proc/loadavg", "0 0 0 1/1 1\n");
	assert_int_equal(signals_read(&source, SIGNAL_MASK_PID | SIGNAL_MASK_FS, &obs), 0);
	assert_int_equal(obs.signal[EV_SIGNAL_PID_AVAILABLE].available, 99);

	assert_int_equal(signals_read(NULL, 0, &obs), -EINVAL);
	assert_int_equal(signals_read(&source, 0, NULL), -EINVAL);
}

/* ---- this host ------------------------------------------------------------------------ */

static bool read_key(const char *path, const char *key, long long *value)
{
	char name[128];
	long long v;
	FILE *f = fopen(path, "r");
	bool found = false;

	if (!f)
		return false;
	while (!found && fscanf(f, "%127s %lld%*[^\n]", name, &v) == 2) {
		size_t len = strlen(name);

		if (len && name[len - 1] == ':')
			name[len - 1] = '\0';
		if (strcmp(name, key) == 0) {
			*value = v;
			found = true;
		}
	}
	fclose(f);
	return found;
}

static bool file_has_word(const char *path, const char *word)
{
	char buf[128];
	FILE *f = fopen(path, "r");
	bool found = false;

	if (!f)
		return false;
	while (!found && fscanf(f, "%127s", buf) == 1)
		found = strcmp(buf, word) == 0;
	fclose(f);
	return found;
}

static void test_real_host(void **state)
{
	struct signal_source source = { .root = "" };
	struct observations obs = { 0 };
	enum cgroup_layout expect;
	long long total_kb = 0, anon = 0, file = 0, usage = 0, inactive = 0, working_set;
	int64_t expected, diff;
	struct statfs sfs;

	signals_set_fs_ops(NULL);
	if (!read_key("/proc/meminfo", "MemTotal", &total_kb)) {
		print_message("# skipping: /proc/meminfo has no MemTotal\n");
		skip();
	}
	/* Independent of the module's detection: the kubelet's own rule (cgroup2 fs on
	 * /sys/fs/cgroup = v2), then the hybrid unified mount, then v1. */
	if (statfs("/sys/fs/cgroup", &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC_VALUE &&
	    file_has_word("/sys/fs/cgroup/cgroup.controllers", "memory")) {
		expect = CGROUP_LAYOUT_V2;
		if (!read_key("/sys/fs/cgroup/memory.stat", "anon", &anon) ||
		    !read_key("/sys/fs/cgroup/memory.stat", "file", &file)) {
			print_message("# skipping: /sys/fs/cgroup/memory.stat unreadable\n");
			skip();
		}
		read_key("/sys/fs/cgroup/memory.stat", "inactive_file", &inactive);
		usage = anon + file;
	} else if (file_has_word("/sys/fs/cgroup/unified/cgroup.controllers", "memory")) {
		expect = CGROUP_LAYOUT_V2;
		if (!read_key("/sys/fs/cgroup/unified/memory.stat", "anon", &anon) ||
		    !read_key("/sys/fs/cgroup/unified/memory.stat", "file", &file)) {
			print_message("# skipping: /sys/fs/cgroup/unified/memory.stat unreadable\n");
			skip();
		}
		read_key("/sys/fs/cgroup/unified/memory.stat", "inactive_file", &inactive);
		usage = anon + file;
	} else {
		FILE *f = fopen("/sys/fs/cgroup/memory/memory.usage_in_bytes", "r");

		if (!f) {
			print_message("# skipping: no memory cgroup on this host (%s)\n", strerror(errno));
			skip();
		}
		assert_int_equal(fscanf(f, "%lld", &usage), 1);
		fclose(f);
		expect = CGROUP_LAYOUT_V1;
		read_key("/sys/fs/cgroup/memory/memory.stat", "total_inactive_file", &inactive);
	}
	working_set = usage > inactive ? usage - inactive : 0;
	expected = total_kb * 1024 - working_set;

	assert_int_equal(signals_read(&source, SIGNAL_MASK_MEMORY, &obs), 0);
	assert_int_equal(obs.cgroup_layout, expect);
	assert_int_equal(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].capacity, total_kb * 1024);
	diff = llabs(obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available - expected);
	print_message("# this host: %s, memory.available %lld (independent %lld), MemAvailable %lld\n",
		      expect == CGROUP_LAYOUT_V2 ? "v2" : "v1",
		      (long long)obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available,
		      (long long)expected, (long long)obs.mem_available_kernel_bytes);
	assert_true(diff <= expected / 100);
	assert_true(obs.signal[EV_SIGNAL_OOM_GUARD].present);
	assert_true(obs.mem_available_kernel_bytes > 0 &&
		    obs.mem_available_kernel_bytes <= obs.mem_total_bytes);

	/* pid.available too: the limits are fixed, the task count moves a little. */
	{
		long long pid_max, threads_max;
		FILE *f;

		f = fopen("/proc/sys/kernel/pid_max", "r");
		assert_non_null(f);
		assert_int_equal(fscanf(f, "%lld", &pid_max), 1);
		fclose(f);
		f = fopen("/proc/sys/kernel/threads-max", "r");
		assert_non_null(f);
		assert_int_equal(fscanf(f, "%lld", &threads_max), 1);
		fclose(f);
		assert_int_equal(signals_read(&source, SIGNAL_MASK_PID, &obs), 0);
		assert_int_equal(obs.signal[EV_SIGNAL_PID_AVAILABLE].capacity,
				 pid_max < threads_max ? pid_max : threads_max);
		assert_true(obs.signal[EV_SIGNAL_PID_AVAILABLE].available > 0);
		assert_true(obs.signal[EV_SIGNAL_PID_AVAILABLE].available <
			    obs.signal[EV_SIGNAL_PID_AVAILABLE].capacity);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_signal_names_round_trip),
		cmocka_unit_test(test_signal_from_name_rejects),
		cmocka_unit_test(test_signal_valid_names),
		cmocka_unit_test(test_conditions),
		cmocka_unit_test(test_signal_meta_table),
		cmocka_unit_test(test_fs_layout_names),
		cmocka_unit_test(test_meminfo_fixture),
		cmocka_unit_test_setup_teardown(test_meminfo_missing, setup_tmp, teardown_tmp),
		cmocka_unit_test(test_detect_v2),
		cmocka_unit_test(test_detect_v1),
		cmocka_unit_test(test_detect_hybrid),
		cmocka_unit_test_setup_teardown(test_detect_hybrid_memory_on_unified, setup_tmp,
						teardown_tmp),
		cmocka_unit_test_setup_teardown(test_detect_explicit_dirs, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_detect_none, setup_tmp, teardown_tmp),
		cmocka_unit_test(test_memory_v2_fixture),
		cmocka_unit_test(test_memory_v1_fixture),
		cmocka_unit_test(test_memory_hybrid_fixture),
		cmocka_unit_test_setup_teardown(test_memory_floor_at_zero, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_memory_v1_floor_at_zero, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_memory_working_set_above_total, setup_tmp,
						teardown_tmp),
		cmocka_unit_test_setup_teardown(test_memory_huge_counters_saturate, setup_tmp, teardown_tmp),
				cmocka_unit_test_setup_teardown(test_memory_no_inactive_key, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_memory_exact_keys, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_memory_long_stat, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_memory_missing_files, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_memory_v1_missing_stat, setup_tmp, teardown_tmp),
		cmocka_unit_test(test_pids_fixtures),
		cmocka_unit_test_setup_teardown(test_pids_one_limit, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_pids_missing, setup_tmp, teardown_tmp),
		cmocka_unit_test_teardown(test_fs_single, teardown_fs_ops),
		cmocka_unit_test_teardown(test_fs_split_disk, teardown_fs_ops),
		cmocka_unit_test_teardown(test_fs_split_image, teardown_fs_ops),
		cmocka_unit_test_teardown(test_fs_three_devices, teardown_fs_ops),
		cmocka_unit_test_teardown(test_fs_imagefs_missing, teardown_fs_ops),
		cmocka_unit_test_teardown(test_fs_zero_inodes, teardown_fs_ops),
		cmocka_unit_test_teardown(test_fs_nodefs_missing, teardown_fs_ops),
		cmocka_unit_test(test_fs_real_statvfs),
		cmocka_unit_test_teardown(test_read_all, teardown_fs_ops),
		cmocka_unit_test(test_read_mask),
		cmocka_unit_test_setup_teardown(test_read_guard_only, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_read_failures, setup_tmp, teardown_tmp),
		cmocka_unit_test(test_real_host),
	};

	/* The failure paths log by design; keep the TAP stream readable unless asked. */
	if (!getenv("EVICTD_TEST_LOG"))
		log_set_level((enum log_level)0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
