// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Node-level reclaim (DESIGN.md §4): commands with timeouts, the crictl defaults per filesystem
 * layout (a fake crictl in PATH), what each step freed, and memory.reclaim on fixture
 * cgroups through the kill path rules. */
#include "testutil.h"

#include <signal.h>
#include <stdint.h>
#include <time.h>

#include "act/kill.h"
#include "sys/log.h"
#include "sys/loop.h"
#include "sys/subprocess.h"
#include "act/reclaim.h"

#define MS 1000000ll
#define MI (1024ll * 1024)
#define PATHF(buf, len, ...) assert_true(snprintf(buf, len, __VA_ARGS__) < (int)(len))

static int setup_tmp(void **state)
{
	char *root = malloc(PATH_MAX);

	if (!root)
		return -1;
	fixture_tmpdir(root, "reclaim");
	*state = root;
	return 0;
}

static int teardown_tmp(void **state)
{
	fixture_rm_rf(*state);
	free(*state);
	return 0;
}

static int64_t read_number(const char *path)
{
	char buf[64] = "";
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return strtoll(buf, NULL, 10);
}

/* The "signal" is a number in <root>/avail that commands rewrite. */
static int read_avail(void *ctx, enum ev_signal signal, int64_t *available)
{
	char path[PATH_MAX];

	PATHF(path, sizeof(path), "%s/avail", (const char *)ctx);
	*available = read_number(path);
	return *available < 0 ? -ENOENT : 0;
}

static void test_run_command_status_and_output(void **state)
{
	char output[64];
	int status;

	assert_int_equal(reclaim_run_command("echo hello; echo oops >&2; exit 3", 5000 * MS, &status,
					     output, sizeof(output)), 0);
	assert_int_equal(status, 3);
	assert_string_equal(output, "hello\noops\n");
	assert_int_equal(reclaim_run_command("kill -9 $$", 5000 * MS, &status, NULL, 0), 0);
	assert_int_equal(status, 128 + SIGKILL);
	/* Only the tail of a long output is kept. */
	assert_int_equal(reclaim_run_command("seq 1 5000", 5000 * MS, &status, output, sizeof(output)), 0);
	assert_int_equal(status, 0);
	assert_non_null(strstr(output, "4999\n5000\n"));
	assert_int_equal(reclaim_run_command(NULL, 0, &status, NULL, 0), -EINVAL);
}


static void test_run_command_timeout_kills_group(void **state)
{
	const char *root = *state;
	char command[PATH_MAX * 2], pid_file[PATH_MAX];
	struct timespec start, end;
	int64_t background;
	int status;

	/* A pipeline whose background child would outlive the shell: the group dies. */
	PATHF(pid_file, sizeof(pid_file), "%s/bg.pid", root);
	PATHF(command, sizeof(command), "sleep 30 & echo $! > %s; sleep 30", pid_file);
	clock_gettime(CLOCK_MONOTONIC, &start);
	assert_int_equal(reclaim_run_command(command, 300 * MS, &status, NULL, 0), -ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &end);
	assert_true(end.tv_sec - start.tv_sec < 5);
	/* SIGTERM to the group first (sys/subprocess); sh dies of it. */
	assert_int_equal(status, 128 + SIGTERM);
	background = read_number(pid_file);
	assert_true(background > 0);
	assert_true(process_gone((pid_t)background, 2000));
}

static void test_disk_configured_commands(void **state)
{
	const char *root = *state;
	char c1[PATH_MAX + 64], c2[PATH_MAX + 64], c3[PATH_MAX + 64];
	const char *commands[3] = { c1, c2, c3 };
	struct reclaim_config config = {
		.disk_commands = commands, .n_disk_commands = 3, .command_timeout_ns = 5000 * MS,
	};
	struct reclaim_report report;
	struct reclaim reclaim;

	fixture_write(root, "avail", "100\n");
	PATHF(c1, sizeof(c1), "echo 150 > %s/avail", root);
	PATHF(c2, sizeof(c2), "echo 400 > %s/avail; exit 1", root);	/* freed, then failed */
	PATHF(c3, sizeof(c3), "echo 420 > %s/avail", root);
	reclaim_init(&reclaim, &config);

	/* Every step runs, like the kubelet's reclaimNodeLevelResources; back above 300. */
	assert_int_equal(reclaim_disk(&reclaim, EV_SIGNAL_NODEFS_AVAILABLE, 300, read_avail,
				      (void *)root, &report), 1);
	assert_int_equal(report.n_steps, 3);
	assert_int_equal(report.available_before, 100);
	assert_int_equal(report.available_after, 420);
	assert_int_equal(report.steps[0].freed, 50);
	assert_int_equal(report.steps[0].status, 0);
	assert_int_equal(report.steps[1].freed, 250);
	assert_int_equal(report.steps[1].status, 1);
	assert_int_equal(report.steps[2].freed, 20);

	/* Still met afterwards: 0, eviction goes ahead. */
	fixture_write(root, "avail", "100\n");
	assert_int_equal(reclaim_disk(&reclaim, EV_SIGNAL_NODEFS_INODES_FREE, 1000, read_avail,
				      (void *)root, &report), 0);

	/* Not a disk signal. */
	assert_int_equal(reclaim_disk(&reclaim, EV_SIGNAL_MEMORY_AVAILABLE, 1, read_avail,
				      (void *)root, NULL), -EINVAL);
	/* The signal cannot be read. */
	PATHF(c1, sizeof(c1), "rm %s/avail", root);
	assert_int_equal(reclaim_disk(&reclaim, EV_SIGNAL_NODEFS_AVAILABLE, 1, read_avail,
				      (void *)root, NULL), -ENOENT);
}

static void test_disk_dry_run_runs_nothing(void **state)
{
	const char *root = *state;
	char c1[PATH_MAX + 64];
	const char *commands[1] = { c1 };
	struct reclaim_config config = { .disk_commands = commands, .n_disk_commands = 1, .dry_run = true };
	struct reclaim_report report;
	struct reclaim reclaim;

	fixture_write(root, "avail", "100\n");
	PATHF(c1, sizeof(c1), "echo 999 > %s/avail", root);
	reclaim_init(&reclaim, &config);
	assert_int_equal(reclaim_disk(&reclaim, EV_SIGNAL_NODEFS_AVAILABLE, 300, read_avail,
				      (void *)root, &report), 0);
	assert_int_equal(report.n_steps, 1);
	assert_int_equal(report.steps[0].status, -ECANCELED);
	PATHF(c1, sizeof(c1), "%s/avail", root);
	assert_int_equal(read_number(c1), 100);
}

/* A fake crictl that logs its arguments; "ps" lists one exited container. */
static void install_fake_crictl(const char *root, char *path_env, size_t len)
{
	char script[PATH_MAX];

	fixture_write(root, "bin/crictl",
		      "#!/bin/sh\necho \"$*\" >> %s/crictl.log\n"
		      "[ \"$1\" = ps ] && echo deadbeef\nexit 0\n", root);
	PATHF(script, sizeof(script), "%s/bin/crictl", root);
	assert_int_equal(chmod(script, 0755), 0);
	PATHF(path_env, len, "%s/bin:/usr/bin:/bin", root);
}

static void crictl_log(const char *root, char *buf, size_t len)
{
	char path[PATH_MAX];
	FILE *f;
	size_t n;

	PATHF(path, sizeof(path), "%s/crictl.log", root);
	buf[0] = '\0';
	f = fopen(path, "r");
	if (!f)
		return;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	unlink(path);
}

static void run_default(const char *root, enum fs_layout layout, enum ev_signal signal)
{
	struct reclaim_config config = { .fs_layout = layout, .command_timeout_ns = 5000 * MS };
	struct reclaim reclaim;

	reclaim_init(&reclaim, &config);
	assert_int_equal(reclaim_disk(&reclaim, signal, 0, read_avail, (void *)root, NULL), 1);
}

static void test_disk_crictl_defaults_per_layout(void **state)
{
	const char *root = *state;
	char path_env[PATH_MAX * 2], log[1024];
	char *saved = getenv("PATH") ? strdup(getenv("PATH")) : NULL;

	fixture_write(root, "avail", "100\n");
	install_fake_crictl(root, path_env, sizeof(path_env));
	setenv("PATH", path_env, 1);
	assert_true(reclaim_in_path("crictl", NULL));
	assert_false(reclaim_in_path("crictl", "/nonexistent:"));

	/* One filesystem: dead containers, then unused images. */
	run_default(root, FS_LAYOUT_SINGLE, EV_SIGNAL_NODEFS_AVAILABLE);
	crictl_log(root, log, sizeof(log));
	assert_string_equal(log, "ps -a -q --state exited\nrm deadbeef\nrmi --prune\n");
	/* Split disk: nodefs gets the containers, imagefs (and containerfs = imagefs) images. */
	run_default(root, FS_LAYOUT_SPLIT_DISK, EV_SIGNAL_NODEFS_INODES_FREE);
	crictl_log(root, log, sizeof(log));
	assert_string_equal(log, "ps -a -q --state exited\nrm deadbeef\n");
	run_default(root, FS_LAYOUT_SPLIT_DISK, EV_SIGNAL_IMAGEFS_AVAILABLE);
	crictl_log(root, log, sizeof(log));
	assert_string_equal(log, "rmi --prune\n");
	run_default(root, FS_LAYOUT_SPLIT_DISK, EV_SIGNAL_CONTAINERFS_AVAILABLE);
	crictl_log(root, log, sizeof(log));
	assert_string_equal(log, "rmi --prune\n");
	/* Split image: containerfs (and nodefs) containers, imagefs images. */
	run_default(root, FS_LAYOUT_SPLIT_IMAGE, EV_SIGNAL_CONTAINERFS_AVAILABLE);
	crictl_log(root, log, sizeof(log));
	assert_string_equal(log, "ps -a -q --state exited\nrm deadbeef\n");
	run_default(root, FS_LAYOUT_SPLIT_IMAGE, EV_SIGNAL_IMAGEFS_INODES_FREE);
	crictl_log(root, log, sizeof(log));
	assert_string_equal(log, "rmi --prune\n");

	/* No crictl: nothing runs; the answer is the signal as it is. */
	setenv("PATH", "/nonexistent", 1);
	{
		struct reclaim_config config = { 0 };
		struct reclaim_report report;
		struct reclaim reclaim;

		reclaim_init(&reclaim, &config);
		assert_int_equal(reclaim_disk(&reclaim, EV_SIGNAL_NODEFS_AVAILABLE, 200, read_avail,
					      (void *)root, &report), 0);
		assert_int_equal(report.n_steps, 0);
	}
	if (saved)
		setenv("PATH", saved, 1);
	free(saved);
}

/* The daemon blocks SIGTERM/SIGHUP/SIGINT and ignores SIGPIPE; a command must not inherit
 * that (fork + exec did: a crictl that ignored the timeout's SIGTERM, a pipeline whose writer
 * never saw SIGPIPE). */
static void test_run_command_child_signals_default(void **state)
{
	struct sigaction ignore = { .sa_handler = SIG_IGN }, saved_pipe;
	unsigned long long blocked = ~0ull, ignored = ~0ull;
	sigset_t block, saved_mask;
	char output[256];
	int status;

	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGINT);
	assert_int_equal(sigprocmask(SIG_BLOCK, &block, &saved_mask), 0);
	sigaction(SIGPIPE, &ignore, &saved_pipe);
	assert_int_equal(reclaim_run_command("grep -E '^Sig(Blk|Ign):' /proc/self/status", 5000 * MS,
					     &status, output, sizeof(output)), 0);
	sigprocmask(SIG_SETMASK, &saved_mask, NULL);
	sigaction(SIGPIPE, &saved_pipe, NULL);
	assert_int_equal(status, 0);
	assert_int_equal(sscanf(output, "SigBlk: %llx SigIgn: %llx", &blocked, &ignored), 2);
	assert_int_equal(blocked, 0);
	/* glibc's posix_spawn leaves its internal signals 32 and 33 ignored; no others. */
	assert_int_equal(ignored & ~((1ull << 31) | (1ull << 32)), 0);
}

/* ---- the asynchronous job -------------------------------------------------------------- */

struct job_state {
	bool done;
	int result;
	struct reclaim_report report;
	int ticks;
};

static void job_done(void *ctx, const struct reclaim_report *report, int result)
{
	struct job_state *s = ctx;

	s->report = *report;
	s->result = result;
	s->done = true;
}

static void job_tick(void *ctx)
{
	((struct job_state *)ctx)->ticks++;
}

/* A step that ignores SIGTERM and sleeps 60 s: the caller's loop goes on, the step is killed at
 * timeout + grace and reported timed out, and the next step runs. */
static void test_async_hanging_step(void **state)
{
	const char *root = *state;
	char c1[PATH_MAX + 64], c2[PATH_MAX + 64];
	const char *commands[2] = { c1, c2 };
	struct reclaim_config config = {
		.disk_commands = commands, .n_disk_commands = 2, .command_timeout_ns = 1000 * MS,
	};
	struct reclaim_request req = {
		.kind = RECLAIM_DISK, .signal = EV_SIGNAL_NODEFS_AVAILABLE, .target_available = 300,
		.read_signal = read_avail, .read_ctx = (void *)root,
	};
	struct job_state s = { 0 };
	struct reclaim reclaim;
	struct loop *loop;
	int64_t start, took;
	struct timespec ts;

	fixture_write(root, "avail", "100\n");
	PATHF(c1, sizeof(c1), "echo 150 > %s/avail; trap '' TERM; sleep 60", root);
	PATHF(c2, sizeof(c2), "echo 400 > %s/avail", root);
	reclaim_init(&reclaim, &config);
	assert_int_equal(loop_new(&loop), 0);
	assert_non_null(loop_add_periodic(loop, 50 * MS, job_tick, &s));
	clock_gettime(CLOCK_MONOTONIC, &ts);
	start = ts.tv_sec * 1000000000ll + ts.tv_nsec;
	assert_int_equal(reclaim_start(&reclaim, loop, &req, job_done, &s), 0);
	assert_false(s.done);		/* never from inside reclaim_start */
	assert_true(reclaim_busy(&reclaim));
	assert_int_equal(reclaim_start(&reclaim, loop, &req, job_done, &s), -EBUSY);
	while (!s.done) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		assert_true(ts.tv_sec * 1000000000ll + ts.tv_nsec - start < 30000 * MS);
		loop_run_once(loop, 1000, NULL, NULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	took = ts.tv_sec * 1000000000ll + ts.tv_nsec - start;
	assert_false(reclaim_busy(&reclaim));
	assert_int_equal(s.result, 1);
	assert_int_equal(s.report.n_steps, 2);
	assert_true(s.report.steps[0].timed_out);
	assert_int_equal(s.report.steps[0].status, 128 + SIGKILL);
	assert_int_equal(s.report.steps[0].freed, 50);
	assert_true(s.report.steps[0].elapsed_ns >= 1000 * MS);
	/* Killed, not waited out: the step sleeps 60 s; the bound only catches that. */
	assert_true(s.report.steps[0].elapsed_ns < 30000 * MS);
	assert_false(s.report.steps[1].timed_out);
	assert_int_equal(s.report.steps[1].status, 0);
	assert_int_equal(s.report.steps[1].freed, 250);
	assert_int_equal(s.report.available_after, 400);
	assert_true(took < 30000 * MS);
	/* The loop kept running while the step ran (timeout + grace, 3 s): many 50 ms ticks, where
	 * a loop held by the step would tick about once; and no iteration as long as the step's
	 * 1 s timeout, which a loop that waited for it would show. */
	assert_true(s.ticks >= 5);
	assert_true(loop_longest_iteration_ns(loop) < 1000 * MS);
	loop_free(loop);
}

static void test_async_cancel(void **state)
{
	const char *root = *state;
	char c1[PATH_MAX + 64], pid_file[PATH_MAX];
	const char *commands[1] = { c1 };
	struct reclaim_config config = {
		.disk_commands = commands, .n_disk_commands = 1, .command_timeout_ns = 60000 * MS,
	};
	struct reclaim_request req = {
		.kind = RECLAIM_DISK, .signal = EV_SIGNAL_NODEFS_AVAILABLE, .target_available = 300,
		.read_signal = read_avail, .read_ctx = (void *)root,
	};
	struct job_state s = { 0 };
	struct reclaim reclaim;
	struct loop *loop;
	int64_t pid = -1;

	fixture_write(root, "avail", "100\n");
	PATHF(pid_file, sizeof(pid_file), "%s/pid", root);
	PATHF(c1, sizeof(c1), "echo $$ > %s; sleep 60", pid_file);
	reclaim_init(&reclaim, &config);
	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(reclaim_start(&reclaim, loop, &req, job_done, &s), 0);
	for (int i = 0; i < 200 && pid <= 0; i++) {
		loop_run_once(loop, 10, NULL, NULL);
		pid = read_number(pid_file);
	}
	assert_true(pid > 0);
	reclaim_cancel(&reclaim);
	assert_false(reclaim_busy(&reclaim));
	assert_int_equal(loop_n_sources(loop), 0);
	loop_run_once(loop, 50, NULL, NULL);
	assert_false(s.done);
	loop_free(loop);
	assert_true(process_gone((pid_t)pid, 2000));
	reclaim_cancel(&reclaim);	/* nothing running: fine */
	/* Memory reclaim off: the answer (0) still comes from the loop. */
	assert_int_equal(loop_new(&loop), 0);
	req.kind = RECLAIM_MEMORY;
	req.signal = EV_SIGNAL_MEMORY_AVAILABLE;
	assert_int_equal(reclaim_start(&reclaim, loop, &req, job_done, &s), 0);
	assert_false(s.done);
	while (!s.done)
		loop_run_once(loop, 1000, NULL, NULL);
	assert_int_equal(s.result, 0);
	loop_free(loop);
}

/* ---- memory.reclaim -------------------------------------------------------------------- */

#define CG "sys/fs/cgroup"
#define PODS CG "/kubepods.slice"

struct mem_ctx {
	const char *root;
	int64_t base;
	const char *cgroups[3];
};

/* The "kernel": what was written to each memory.reclaim comes back as available memory. */
static int read_mem_avail(void *opaque, enum ev_signal signal, int64_t *available)
{
	struct mem_ctx *ctx = opaque;
	int64_t total = ctx->base;

	for (size_t i = 0; i < 3; i++) {
		char path[PATH_MAX];
		int64_t written;

		PATHF(path, sizeof(path), "%s/%s/memory.reclaim", ctx->root, ctx->cgroups[i]);
		written = read_number(path);
		if (written > 0)
			total += written;
	}
	*available = total;
	return 0;
}

static int accept_cgroupfs(int dir_fd)
{
	return 0;
}

static void test_memory_reclaim_candidates(void **state)
{
	const char *root = *state;
	static const struct kill_ops ops = { .check_cgroupfs = accept_cgroupfs };
	char mount[PATH_MAX], allowed[PATH_MAX], self[PATH_MAX], path[PATH_MAX];
	const char *roots[1] = { allowed };
	struct kill_config kill_config = {
		.cgroup_mount = mount, .allowed_roots = roots, .n_allowed_roots = 1,
		.self_cgroup = self, .ops = &ops,
	};
	struct reclaim_config config = { .memory_reclaim = true, .memory_reclaim_max_pods = 3,
					 .kill = &kill_config };
	struct mem_ctx ctx = { .root = root, .base = 100 * MI,
			       .cgroups = { PODS "/a", PODS "/b", PODS "/c" } };
	struct pod a = { .name = "a" }, b = { .name = "b", .is_static = true }, c = { .name = "c" };
	struct pod *candidates[3] = { &a, &b, &c };
	struct reclaim_report report;
	struct reclaim reclaim;

	PATHF(mount, sizeof(mount), "%s/" CG, root);
	PATHF(allowed, sizeof(allowed), "%s/" PODS, root);
	PATHF(self, sizeof(self), "%s/" CG "/system.slice/evictd.service", root);
	fixture_write(root, PODS "/a/memory.current", "%lld\n", 30 * MI);
	fixture_write(root, PODS "/a/memory.reclaim", "%s", "");
	fixture_write(root, PODS "/b/memory.current", "%lld\n", 500 * MI);
	fixture_write(root, PODS "/b/memory.reclaim", "%s", "");
	fixture_write(root, PODS "/c/memory.current", "%lld\n", 500 * MI);
	fixture_write(root, PODS "/c/memory.reclaim", "%s", "");
	PATHF(a.cgroup_path, sizeof(a.cgroup_path), "%s/" PODS "/a", root);
	PATHF(b.cgroup_path, sizeof(b.cgroup_path), "%s/" PODS "/b", root);
	PATHF(c.cgroup_path, sizeof(c.cgroup_path), "%s/" PODS "/c", root);

	/* Off: nothing. */
	config.memory_reclaim = false;
	reclaim_init(&reclaim, &config);
	assert_int_equal(reclaim_memory(&reclaim, candidates, 3, EV_SIGNAL_MEMORY_AVAILABLE,
					200 * MI, read_mem_avail, &ctx, &report), 0);
	assert_int_equal(report.n_steps, 0);

	/* Dry run: says what it would write, writes nothing. */
	config.memory_reclaim = true;
	config.dry_run = true;
	reclaim_init(&reclaim, &config);
	assert_int_equal(reclaim_memory(&reclaim, candidates, 3, EV_SIGNAL_MEMORY_AVAILABLE,
					200 * MI, read_mem_avail, &ctx, &report), 0);
	assert_int_equal(report.n_steps, 2);
	PATHF(path, sizeof(path), "%s/" PODS "/a/memory.reclaim", root);
	assert_int_equal(read_number(path), 0);

	/* Need 100Mi: a gives at most its 30Mi, b is static (skipped), c gives the other 70Mi. */
	config.dry_run = false;
	reclaim_init(&reclaim, &config);
	assert_int_equal(reclaim_memory(&reclaim, candidates, 3, EV_SIGNAL_MEMORY_AVAILABLE,
					200 * MI, read_mem_avail, &ctx, &report), 1);
	assert_int_equal(report.n_steps, 2);
	assert_int_equal(read_number(path), 30 * MI);
	PATHF(path, sizeof(path), "%s/" PODS "/b/memory.reclaim", root);
	assert_int_equal(read_number(path), 0);
	PATHF(path, sizeof(path), "%s/" PODS "/c/memory.reclaim", root);
	assert_int_equal(read_number(path), 70 * MI);
	assert_int_equal(report.steps[0].freed, 30 * MI);
	assert_int_equal(report.steps[1].freed, 70 * MI);
	assert_int_equal(report.available_after, 200 * MI);
}

static void test_memory_reclaim_unsupported_once(void **state)
{
	const char *root = *state;
	static const struct kill_ops ops = { .check_cgroupfs = accept_cgroupfs };
	char mount[PATH_MAX], allowed[PATH_MAX], self[PATH_MAX];
	const char *roots[1] = { allowed };
	struct kill_config kill_config = {
		.cgroup_mount = mount, .allowed_roots = roots, .n_allowed_roots = 1,
		.self_cgroup = self, .ops = &ops,
	};
	struct reclaim_config config = { .memory_reclaim = true, .kill = &kill_config };
	struct mem_ctx ctx = { .root = root, .base = 0, .cgroups = { PODS "/a", PODS "/a", PODS "/a" } };
	struct pod a = { .name = "a" }, outside = { .name = "o" };
	struct pod *candidates[2] = { &outside, &a };
	struct reclaim reclaim;

	PATHF(mount, sizeof(mount), "%s/" CG, root);
	PATHF(allowed, sizeof(allowed), "%s/" PODS, root);
	PATHF(self, sizeof(self), "%s/" CG "/system.slice/evictd.service", root);
	/* memory.reclaim missing (Linux < 5.19 or no memory controller). */
	fixture_write(root, PODS "/a/memory.current", "%lld\n", 30 * MI);
	fixture_write(root, CG "/system.slice/x/memory.reclaim", "%s", "");
	PATHF(a.cgroup_path, sizeof(a.cgroup_path), "%s/" PODS "/a", root);
	/* A candidate outside the allowed roots is skipped, never written. */
	PATHF(outside.cgroup_path, sizeof(outside.cgroup_path), "%s/" CG "/system.slice/x", root);
	reclaim_init(&reclaim, &config);
	assert_int_equal(reclaim_memory(&reclaim, candidates, 2, EV_SIGNAL_MEMORY_AVAILABLE, MI,
					read_mem_avail, &ctx, NULL), -EOPNOTSUPP);
	assert_true(reclaim.memory_reclaim_unsupported);
	/* Not tried again. */
	fixture_write(root, PODS "/a/memory.reclaim", "%s", "");
	assert_int_equal(reclaim_memory(&reclaim, candidates, 2, EV_SIGNAL_MEMORY_AVAILABLE, MI,
					read_mem_avail, &ctx, NULL), -EOPNOTSUPP);
	{
		char path[PATH_MAX];

		PATHF(path, sizeof(path), "%s/" PODS "/a/memory.reclaim", root);
		assert_int_equal(read_number(path), 0);
		PATHF(path, sizeof(path), "%s/" CG "/system.slice/x/memory.reclaim", root);
		assert_int_equal(read_number(path), 0);
	}
	/* No kill rules configured: refused outright. */
	config.kill = NULL;
	reclaim_init(&reclaim, &config);
	assert_int_equal(reclaim_memory(&reclaim, candidates, 2, EV_SIGNAL_MEMORY_AVAILABLE, MI,
					read_mem_avail, &ctx, NULL), -EINVAL);
}

#define TT(fn) cmocka_unit_test_setup_teardown(fn, setup_tmp, teardown_tmp)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_command_status_and_output),
		TT(test_run_command_timeout_kills_group),
		cmocka_unit_test(test_run_command_child_signals_default),
		TT(test_async_hanging_step),
		TT(test_async_cancel),
		TT(test_disk_configured_commands),
		TT(test_disk_dry_run_runs_nothing),
		TT(test_disk_crictl_defaults_per_layout),
		TT(test_memory_reclaim_candidates),
		TT(test_memory_reclaim_unsupported_once),
	};

	log_set_level(LOGLEVEL_ERR - 1);
	return cmocka_run_group_tests_name("reclaim", tests, NULL, NULL);
}
