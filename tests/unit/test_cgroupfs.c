// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sys/cgroupfs on a tmpdir fixture: a 40-level tree whose every cgroup.procs is read (the old
 * walk stopped at 32), symlinks not followed, cgroup.events parsing, the cgroup id. */
#include "testutil.h"

#include <stdint.h>

#include "sys/cgroupfs.h"
#include "sys/log.h"

#define DEPTH 40

static int setup_tmp(void **state)
{
	char *root = malloc(PATH_MAX);

	if (!root)
		return -1;
	fixture_tmpdir(root, "cgroupfs");
	*state = root;
	return 0;
}

static int teardown_tmp(void **state)
{
	fixture_rm_rf(*state);
	free(*state);
	return 0;
}

/* root/c0/c1/.../c39: level i holds pid 1000 + i (and level 0 a second one, 999999);
 * root/side holds 77; root/link -> c0 must not be walked twice. */
static void make_tree(const char *root)
{
	char rel[PATH_MAX] = "", path[PATH_MAX];
	size_t len = 0;

	fixture_write(root, "cgroup.procs", "999999\n");
	fixture_write(root, "side/cgroup.procs", "77\n");
	for (int i = 0; i < DEPTH; i++) {
		char file[PATH_MAX + 32];

		len += (size_t)snprintf(rel + len, sizeof(rel) - len, "%sc%d", i ? "/" : "", i);
		snprintf(file, sizeof(file), "%s/cgroup.procs", rel);
		fixture_write(root, file, "%d\n", 1000 + i);
	}
	snprintf(path, sizeof(path), "%s/link", root);
	assert_int_equal(symlink("c0", path), 0);
}

struct seen {
	int count[DEPTH + 2];
	int other;
	int total;
};

static int record_pid(pid_t pid, void *opaque)
{
	struct seen *seen = opaque;

	seen->total++;
	if (pid >= 1000 && pid < 1000 + DEPTH)
		seen->count[pid - 1000]++;
	else if (pid == 77 || pid == 999999)
		seen->other++;
	return -ESRCH;	/* ignored: the walk goes on */
}

static void test_deep_tree_every_level(void **state)
{
	const char *root = *state;
	struct seen seen = { 0 };
	int fd;

	make_tree(root);
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(cgroupfs_for_each_pid(fd, record_pid, &seen), DEPTH + 2);
	for (int i = 0; i < DEPTH; i++)
		assert_int_equal(seen.count[i], 1);
	assert_int_equal(seen.other, 2);
	assert_int_equal(seen.total, DEPTH + 2);
	/* Count only. */
	assert_int_equal(cgroupfs_for_each_pid(fd, NULL, NULL), DEPTH + 2);
	/* root, side, c0..c39; the symlink is not followed. */
	assert_int_equal(cgroupfs_walk(fd, NULL, NULL), DEPTH + 2);
	close(fd);
}

struct depth_ctx {
	unsigned int max_depth;
	int visits;
	int stop_at;
};

static int note_depth(void *opaque, int dir_fd, unsigned int depth)
{
	struct depth_ctx *ctx = opaque;
	struct stat st;

	assert_int_equal(fstat(dir_fd, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	if (depth > ctx->max_depth)
		ctx->max_depth = depth;
	return ++ctx->visits == ctx->stop_at ? -ECANCELED : 0;
}

static void test_walk_depth_and_stop(void **state)
{
	const char *root = *state;
	struct depth_ctx ctx = { 0 };
	int fd;

	make_tree(root);
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(cgroupfs_walk(fd, note_depth, &ctx), DEPTH + 2);
	assert_int_equal(ctx.max_depth, DEPTH);
	/* A callback stops it. */
	memset(&ctx, 0, sizeof(ctx));
	ctx.stop_at = 5;
	assert_int_equal(cgroupfs_walk(fd, note_depth, &ctx), -ECANCELED);
	assert_int_equal(ctx.visits, 5);
	close(fd);

	/* The root's own cgroup.procs missing: an error, as in act/kill.c. */
	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	{
		char path[PATH_MAX];
		int sub;

		snprintf(path, sizeof(path), "%s/side", root);
		sub = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		assert_true(sub >= 0);
		assert_int_equal(unlinkat(sub, "cgroup.procs", 0), 0);
		assert_int_equal(cgroupfs_for_each_pid(sub, NULL, NULL), -ENOENT);
		close(sub);
	}
	close(fd);
}

static void test_populated_and_id(void **state)
{
	const char *root = *state;
	char path[PATH_MAX];
	struct stat st;
	uint64_t id = 0;
	int fd;

	fixture_write(root, "a/cgroup.events", "populated 1\nfrozen 0\n");
	fixture_write(root, "b/cgroup.events", "frozen 0\npopulated 0\n");
	fixture_write(root, "c/cgroup.events", "frozen 0\nunpopulated 1\n");
	fixture_write(root, "d/cgroup.events", "populated x\n");
	const char *names[] = { "a", "b", "c", "d" };
	const int expect[] = { 1, 0, -EINVAL, -EINVAL };

	for (int i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/%s/cgroup.events", root, names[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(cgroupfs_read_populated(fd), expect[i]);
		/* pread at 0: the same answer again on the same fd. */
		assert_int_equal(cgroupfs_read_populated(fd), expect[i]);
		close(fd);
	}
	assert_int_equal(cgroupfs_read_populated(-1), -EBADF);

	snprintf(path, sizeof(path), "%s/a", root);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(cgroupfs_cgroup_id(fd, &id), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(id, st.st_ino);
	close(fd);
	snprintf(path, sizeof(path), "%s/a/cgroup.events", root);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_int_equal(cgroupfs_cgroup_id(fd, &id), -ENOTDIR);
	close(fd);
}

#define TT(fn) cmocka_unit_test_setup_teardown(fn, setup_tmp, teardown_tmp)

/* A kernel OOM victim's cgroup chain: the nearest cgroup below the mount with a memory.max it
 * has hit ("oom" in memory.events) is the limit that killed it; "max" or no oom is none. */
static void test_memory_limit_hit(void **state)
{
	const char *root = *state;
	char mount[PATH_MAX], path[PATH_MAX + 32], hit[PATH_MAX + 32];
	int64_t limit = 0;

	snprintf(mount, sizeof(mount), "%s/cg", root);
	fixture_write(root, "cg/pod/memory.max", "67108864\n");
	fixture_write(root, "cg/pod/memory.events", "low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\n");
	fixture_write(root, "cg/pod/ctr/memory.max", "max\n");
	fixture_write(root, "cg/pod/ctr/memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 1\n");
	fixture_write(root, "cg/pod/ctr/leaf/memory.max", "max\n");
	fixture_write(root, "cg/memory.max", "1000\n");	/* the mount itself is never judged */
	fixture_write(root, "cg/memory.events", "oom 5\n");
	snprintf(path, sizeof(path), "%s/pod/ctr/leaf", mount);
	assert_int_equal(cgroupfs_memory_limit_hit(mount, path, hit, sizeof(hit), &limit), 1);
	assert_int_equal(limit, 67108864);
	snprintf(path, sizeof(path), "%s/pod", mount);
	assert_string_equal(hit, path);

	/* Limited, never hit: a node-wide OOM took it. */
	fixture_write(root, "cg/pod/memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 1\n");
	snprintf(path, sizeof(path), "%s/pod/ctr/leaf", mount);
	assert_int_equal(cgroupfs_memory_limit_hit(mount, path, hit, sizeof(hit), &limit), 0);
	/* Hit, but no limit of its own left (memory.max raised to max since): none. */
	fixture_write(root, "cg/pod/memory.events", "oom 1\n");
	fixture_write(root, "cg/pod/memory.max", "max\n");
	assert_int_equal(cgroupfs_memory_limit_hit(mount, path, hit, sizeof(hit), &limit), 0);
	/* Outside the mount: refused. */
	assert_int_equal(cgroupfs_memory_limit_hit(mount, "/elsewhere/x", hit, sizeof(hit), &limit),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TT(test_deep_tree_every_level),
		TT(test_walk_depth_and_stop),
		TT(test_populated_and_id),
		TT(test_memory_limit_hit),
	};

	log_set_level(LOGLEVEL_ERR - 1);
	return cmocka_run_group_tests_name("cgroupfs", tests, NULL, NULL);
}
