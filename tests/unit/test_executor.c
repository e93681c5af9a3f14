// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The action executor on the host's real cgroup v2 tree (kernel behaviour on a real kernel):
 * cgroup.kill, cgroup.events through the loop, the grace deadline, identity, escalation, and
 * that the loop keeps serving other sources while a kill is in its grace.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/eventfd.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#include "act/executor.h"
#include "sys/cgroupfs.h"
#include "sys/clock.h"
#include "sys/fileio.h"
#include "sys/log.h"
#include "sys/loop.h"

#define MS 1000000LL
#define CGROUP2_MAGIC 0x63677270

static char mount_dir[256];
static char test_root[512];
static const char *roots[1];

/* The workloads started and not reaped yet: a failed assertion leaves them to the teardown. */
static pid_t started[32];
static size_t n_started;

/* Wait for the kernel to say the cgroup is empty: its cgroup.events' POLLPRI, no sleeping and
 * hoping. 0 empty (or the cgroup is gone), -ETIMEDOUT still populated after timeout_ms, or
 * negative errno. */
static int wait_unpopulated(const char *cgroup, int64_t timeout_ms)
{
	char events[600];
	int64_t end = clock_monotonic_ns() + timeout_ms * 1000000;
	int fd, populated;

	snprintf(events, sizeof(events), "%s/cgroup.events", cgroup);
	fd = open(events, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	/* Read, then poll: kernfs arms the next POLLPRI on each read. */
	while ((populated = cgroupfs_read_populated(fd)) == 1) {
		int64_t left = (end - clock_monotonic_ns()) / 1000000;
		struct pollfd pfd = { .fd = fd, .events = POLLPRI };

		if (left <= 0 || poll(&pfd, 1, (int)left + 1) == 0) {
			populated = -ETIMEDOUT;
			break;
		}
	}
	close(fd);
	return populated == 0 || populated == -ENODEV ? 0 : populated;
}

/* rmdir once the cgroup is empty: 0 or negative errno. */
static int remove_cgroup(const char *cgroup)
{
	int err = wait_unpopulated(cgroup, 5000);

	if (err)
		return err;
	return rmdir(cgroup) ? -errno : 0;
}

static void forget_started(pid_t pid)
{
	for (size_t i = 0; i < n_started; i++)
		if (started[i] == pid) {
			started[i] = started[--n_started];
			return;
		}
}

/* After every test, passed or failed (cmocka runs it after a failed assertion too): kill and
 * reap what it left running, empty and remove its cgroups, so a failure leaves no
 * evictd-test-executor-* cgroup behind. */
static int cleanup_test(void **state)
{
	DIR *dir;
	struct dirent *entry;

	for (size_t i = 0; i < n_started; i++) {
		kill(started[i], SIGKILL);
		waitpid(started[i], NULL, 0);
	}
	n_started = 0;
	if (!test_root[0] || !(dir = opendir(test_root)))
		return 0;
	while ((entry = readdir(dir))) {
		char cgroup[900];
		struct stat st;
		int fd, err;

		if (entry->d_name[0] == '.' ||
		    snprintf(cgroup, sizeof(cgroup), "%s/%s", test_root, entry->d_name) >= (int)sizeof(cgroup) ||
		    stat(cgroup, &st) || !S_ISDIR(st.st_mode))
			continue;
		fd = open(cgroup, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0) {
			fileio_write_at(fd, "cgroup.kill", "1");
			close(fd);
		}
		if ((err = remove_cgroup(cgroup)))
			print_message("# cleanup: cannot remove %s: %s\n", cgroup, strerror(-err));
	}
	closedir(dir);
	return 0;
}

struct done_record {
	int calls;
	int err;
	struct kill_result result;
	int64_t at_ns;
};

static void on_done(void *ctx, const struct exec_action *action, int err, const struct kill_result *result)
{
	struct done_record *done = ctx;

	done->calls++;
	done->err = err;
	done->result = *result;
	done->at_ns = clock_monotonic_ns();
}

static bool find_cgroup2(void)
{
	static const char *candidates[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	struct statfs sfs;

	for (size_t i = 0; i < 2; i++)
		if (statfs(candidates[i], &sfs) == 0 && sfs.f_type == CGROUP2_MAGIC) {
			char kill_file[600];

			snprintf(mount_dir, sizeof(mount_dir), "%s", candidates[i]);
			snprintf(test_root, sizeof(test_root), "%s/evictd-test-executor-%d", mount_dir, getpid());
			if (mkdir(test_root, 0755) && errno != EEXIST)
				return false;
			snprintf(kill_file, sizeof(kill_file), "%s/cgroup.kill", test_root);
			if (access(kill_file, W_OK)) {
				rmdir(test_root);
				return false;
			}
			roots[0] = test_root;
			return true;
		}
	return false;
}

static int setup(void **state)
{
	if (geteuid() != 0 || !find_cgroup2())
		*state = "no writable cgroup v2 tree with cgroup.kill here";
	return 0;
}

static int teardown(void **state)
{
	cleanup_test(state);
	if (test_root[0] && rmdir(test_root))
		print_message("# cannot remove %s: %s\n", test_root, strerror(errno));
	return 0;
}

#define NEED_CGROUP2() do { if (*state) skip(); } while (0)

static struct kill_config config(void)
{
	return (struct kill_config){
		.cgroup_mount = mount_dir,
		.allowed_roots = roots,
		.n_allowed_roots = 1,
		.self_cgroup = "/nowhere/evictd-self",
		.kill_timeout_ns = 5000 * MS,
	};
}

/* A workload cgroup with one process in it; ignore_term: it survives SIGTERM. */
static pid_t start_workload(const char *name, struct pod *pod, bool ignore_term)
{
	char procs[4200];
	struct stat st;
	int ready[2];
	pid_t pid;
	char c;

	memset(pod, 0, sizeof(*pod));
	snprintf(pod->cgroup_path, sizeof(pod->cgroup_path), "%s/%s", test_root, name);
	snprintf(pod->name, sizeof(pod->name), "%s", name);
	pod->qos = POD_QOS_BESTEFFORT;
	pod->processes = 1;
	assert_int_equal(mkdir(pod->cgroup_path, 0755), 0);
	assert_int_equal(stat(pod->cgroup_path, &st), 0);
	pod->cgroup_id = st.st_ino;
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", pod->cgroup_path);
	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		FILE *f = fopen(procs, "w");

		if (!f || fprintf(f, "0\n") < 0 || fclose(f))
			_exit(3);
		if (ignore_term)
			signal(SIGTERM, SIG_IGN);
		else
			signal(SIGTERM, SIG_DFL);
		if (write(ready[1], "r", 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	assert_true(n_started < sizeof(started) / sizeof(started[0]));
	started[n_started++] = pid;
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	return pid;
}

static void reap(pid_t pid, int expect_signal)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	forget_started(pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), expect_signal);
}

static void run_until(struct loop *loop, struct done_record *done, int64_t limit_ns)
{
	int64_t end = clock_monotonic_ns() + limit_ns;

	while (!done->calls && clock_monotonic_ns() < end)
		assert_true(loop_run_once(loop, 50, NULL, NULL) >= 0);
}

/* A loop, an executor, the kill rules and what the done callback saw. */
struct rig {
	struct loop *loop;
	struct executor *executor;
	struct kill_config rules;
	struct done_record done;
};

static void rig_open(struct rig *rig)
{
	memset(rig, 0, sizeof(*rig));
	rig->rules = config();
	assert_int_equal(loop_new(&rig->loop), 0);
	assert_int_equal(executor_new(&rig->executor, rig->loop), 0);
}

static void rig_close(struct rig *rig)
{
	executor_free(rig->executor);
	loop_free(rig->loop);
}

static int rig_start(struct rig *rig, const struct pod *pod, enum kill_mode mode, int64_t grace_ns,
		     bool any_priority)
{
	return executor_start(rig->executor, &rig->rules, &(struct exec_request){
		.pod = pod, .mode = mode, .grace_ns = grace_ns, .done = on_done, .ctx = &rig->done,
		.any_priority = any_priority }, NULL);
}

static void test_hard_kill_ends_through_cgroup_events(void **state)
{
	struct rig rig;
	struct pod pod;
	pid_t pid;

	NEED_CGROUP2();
	pid = start_workload("hard", &pod, true);
	rig_open(&rig);
	assert_int_equal(rig_start(&rig, &pod, KILL_HARD, 0, false), 0);
	assert_int_equal(executor_in_flight(rig.executor), 1);
	assert_non_null(executor_find(rig.executor, &pod));
	/* The same cgroup twice is refused while the first is in flight. */
	assert_int_equal(rig_start(&rig, &pod, KILL_HARD, 0, false), -EALREADY);
	run_until(rig.loop, &rig.done, 5000 * MS);
	assert_int_equal(rig.done.calls, 1);
	assert_int_equal(rig.done.err, 0);
	assert_true(rig.done.result.used_cgroup_kill);
	assert_true(rig.done.result.kill_to_empty_ns >= 0);
	assert_int_equal(executor_in_flight(rig.executor), 0);
	reap(pid, SIGKILL);
	rig_close(&rig);
	assert_int_equal(rmdir(pod.cgroup_path), 0);
}

/* What had happened when cgroup.kill was written (test_hard_kill_writes_first). */
static struct {
	struct loop *loop;
	struct executor *executor;
	int log_fd;
	int writes;
	size_t sources_at_write, in_flight_at_write;
	off_t logged_at_write;
} order;

static int recording_write(int dir_fd, const char *name, const char *text)
{
	if (!strcmp(name, "cgroup.kill")) {
		order.writes++;
		order.sources_at_write = loop_n_sources(order.loop);
		order.in_flight_at_write = executor_in_flight(order.executor);
		order.logged_at_write = lseek(order.log_fd, 0, SEEK_END);
	}
	return fileio_write_at(dir_fd, name, text);
}

/*
 * doc/DESIGN.md "Acting": a hard kill's cgroup.kill write comes before anything that can come
 * after it: its log line, the loop's registrations (cgroup.events, the timer), the action
 * itself. stderr (where log lines go) is a file here, so what was logged is its size.
 */
static void test_hard_kill_writes_first(void **state)
{
	static const struct kill_ops ops = { .write_file = recording_write };
	char log_path[] = "/tmp/evictd-test-executor-log-XXXXXX";
	struct rig rig;
	struct pod pod;
	off_t logged_after;
	int saved_stderr;
	pid_t pid;

	NEED_CGROUP2();
	pid = start_workload("first", &pod, true);
	rig_open(&rig);
	rig.rules.ops = &ops;
	memset(&order, 0, sizeof(order));
	order.loop = rig.loop;
	order.executor = rig.executor;
	order.log_fd = mkstemp(log_path);
	assert_true(order.log_fd >= 0);
	unlink(log_path);
	saved_stderr = dup(STDERR_FILENO);
	assert_true(saved_stderr >= 0);
	log_set_level(LOGLEVEL_INFO);
	assert_int_equal(dup2(order.log_fd, STDERR_FILENO), STDERR_FILENO);
	assert_int_equal(loop_n_sources(rig.loop), 0);

	assert_int_equal(rig_start(&rig, &pod, KILL_HARD, 0, false), 0);
	logged_after = lseek(order.log_fd, 0, SEEK_END);
	assert_int_equal(dup2(saved_stderr, STDERR_FILENO), STDERR_FILENO);
	close(saved_stderr);

	print_message("# at the write: %zu loop sources, %zu in flight, %lld bytes logged (after: "
		      "%zu, %zu, %lld)\n", order.sources_at_write, order.in_flight_at_write,
		      (long long)order.logged_at_write, loop_n_sources(rig.loop),
		      executor_in_flight(rig.executor), (long long)logged_after);
	assert_int_equal(order.writes, 1);
	assert_int_equal(order.sources_at_write, 0);
	assert_int_equal(order.in_flight_at_write, 0);
	assert_int_equal(order.logged_at_write, 0);
	/* ... and all of it after. */
	assert_int_equal(loop_n_sources(rig.loop), 2);
	assert_int_equal(executor_in_flight(rig.executor), 1);
	assert_true(logged_after > 0);

	run_until(rig.loop, &rig.done, 5000 * MS);
	assert_int_equal(rig.done.calls, 1);
	assert_int_equal(rig.done.err, 0);
	assert_true(rig.done.result.used_cgroup_kill);
	close(order.log_fd);
	reap(pid, SIGKILL);
	rig_close(&rig);
	assert_int_equal(rmdir(pod.cgroup_path), 0);
}

static void on_tick(void *ctx)
{
	(*(int *)ctx)++;
}

/* SIGTERM is ignored: cgroup.kill at the end of the grace, and meanwhile the loop serves other
 * sources (a 20 ms periodic timer ticks through the grace). */
static void test_soft_kill_grace_does_not_block_the_loop(void **state)
{
	struct rig rig;
	struct pod pod;
	int64_t start;
	int ticks = 0;
	pid_t pid;

	NEED_CGROUP2();
	pid = start_workload("soft", &pod, true);
	rig_open(&rig);
	assert_non_null(loop_add_periodic(rig.loop, 20 * MS, on_tick, &ticks));
	start = clock_monotonic_ns();
	assert_int_equal(rig_start(&rig, &pod, KILL_SOFT, 400 * MS, false), 0);
	/* executor_start returned without waiting out the grace: still in it, not done. */
	assert_int_equal(executor_action_phase(executor_find(rig.executor, &pod)), EXEC_GRACE);
	assert_int_equal(rig.done.calls, 0);
	run_until(rig.loop, &rig.done, 5000 * MS);
	assert_int_equal(rig.done.err, 0);
	assert_false(rig.done.result.exited_in_grace);
	assert_true(rig.done.result.used_cgroup_kill);
	assert_true(rig.done.at_ns - start >= 400 * MS);
	/* The loop was never held: it ticked through the grace (~20 ticks; a held loop ticks
	 * about once) and no iteration lasted the 400 ms grace. */
	assert_true(ticks >= 5);
	assert_true(loop_longest_iteration_ns(rig.loop) < 400 * MS);
	reap(pid, SIGKILL);
	rig_close(&rig);
	assert_int_equal(rmdir(pod.cgroup_path), 0);
}

static void test_soft_kill_exits_in_grace(void **state)
{
	struct rig rig;
	struct pod pod;
	pid_t pid;

	NEED_CGROUP2();
	pid = start_workload("polite", &pod, false);
	rig_open(&rig);
	assert_int_equal(rig_start(&rig, &pod, KILL_SOFT, 10000 * MS, false), 0);
	run_until(rig.loop, &rig.done, 5000 * MS);
	assert_int_equal(rig.done.err, 0);
	assert_true(rig.done.result.exited_in_grace);
	assert_false(rig.done.result.used_cgroup_kill);
	reap(pid, SIGTERM);
	rig_close(&rig);
	assert_int_equal(rmdir(pod.cgroup_path), 0);
}

/* A hard threshold names a pod in its 60 s grace: cgroup.kill now. */
static void test_escalate_cuts_the_grace(void **state)
{
	struct rig rig;
	struct pod pod;
	int64_t start;
	pid_t pid;

	NEED_CGROUP2();
	pid = start_workload("escalate", &pod, true);
	rig_open(&rig);
	assert_int_equal(rig_start(&rig, &pod, KILL_SOFT, 60000 * MS, false), 0);
	start = clock_monotonic_ns();
	assert_int_equal(executor_escalate(rig.executor, executor_find(rig.executor, &pod)), 0);
	run_until(rig.loop, &rig.done, 5000 * MS);
	assert_int_equal(rig.done.calls, 1);
	assert_int_equal(rig.done.err, 0);
	assert_true(rig.done.at_ns - start < 5000 * MS);
	reap(pid, SIGKILL);
	rig_close(&rig);
	assert_int_equal(rmdir(pod.cgroup_path), 0);
}

static int rig_start_held_mode(struct rig *rig, const struct pod *pod, enum kill_mode mode, int64_t grace_ns,
			       int hold_fd, int64_t hold_ns, bool (*handed_over)(void *ctx))
{
	return executor_start(rig->executor, &rig->rules, &(struct exec_request){
		.pod = pod, .mode = mode, .grace_ns = grace_ns, .done = on_done, .ctx = &rig->done,
		.hold_fd = hold_fd, .hold_ns = hold_ns, .handed_over = handed_over }, NULL);
}

static int rig_start_held(struct rig *rig, const struct pod *pod, int64_t grace_ns, int hold_fd,
			  int64_t hold_ns)
{
	return rig_start_held_mode(rig, pod, KILL_SOFT, grace_ns, hold_fd, hold_ns, NULL);
}

static bool alive(pid_t pid)
{
	if (waitpid(pid, NULL, WNOHANG) == 0)
		return true;
	forget_started(pid);	/* reaped (or not ours): the teardown must not signal its pid */
	return false;
}

/* The status report's answer ends the hold: no SIGTERM before it, however many loop
 * iterations run meanwhile; then SIGTERM, and a polite victim exits within its grace. */
static void test_hold_ends_when_its_fd_fires(void **state)
{
	struct rig rig;
	struct pod pod;
	uint64_t one = 1;
	int ticks = 0, efd;
	pid_t pid;

	NEED_CGROUP2();
	pid = start_workload("held", &pod, false);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(efd >= 0);
	rig_open(&rig);
	assert_non_null(loop_add_periodic(rig.loop, 10 * MS, on_tick, &ticks));
	assert_int_equal(rig_start_held(&rig, &pod, 10000 * MS, efd, 60000 * MS), 0);
	assert_int_equal(executor_action_phase(executor_find(rig.executor, &pod)), EXEC_HELD);
	/* The loop runs on (the ticker) and the victim is not signalled. */
	while (ticks < 5)
		assert_true(loop_run_once(rig.loop, 50, NULL, NULL) >= 0);
	assert_int_equal(rig.done.calls, 0);
	assert_true(alive(pid));
	assert_int_equal(executor_action_phase(executor_find(rig.executor, &pod)), EXEC_HELD);
	assert_int_equal(write(efd, &one, sizeof(one)), sizeof(one));
	run_until(rig.loop, &rig.done, 5000 * MS);
	assert_int_equal(rig.done.calls, 1);
	assert_int_equal(rig.done.err, 0);
	assert_true(rig.done.result.exited_in_grace);
	assert_int_equal(rig.done.result.n_sigterm, 1);
	assert_false(rig.done.result.used_cgroup_kill);
	reap(pid, SIGTERM);
	rig_close(&rig);
	close(efd);
	assert_int_equal(rmdir(pod.cgroup_path), 0);
}

/* No answer: the hold ends at its bound, without holding the loop (a held loop would tick
 * about once), and the grace runs from the SIGTERM. */
static void test_hold_is_bounded(void **state)
{
	struct rig rig;
	struct pod pod;
	int64_t start;
	int ticks = 0, efd;
	pid_t pid;

	NEED_CGROUP2();
	pid = start_workload("held-bounded", &pod, false);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(efd >= 0);
	rig_open(&rig);
	assert_non_null(loop_add_periodic(rig.loop, 20 * MS, on_tick, &ticks));
	start = clock_monotonic_ns();
	assert_int_equal(rig_start_held(&rig, &pod, 10000 * MS, efd, 300 * MS), 0);
	run_until(rig.loop, &rig.done, 5000 * MS);
	assert_int_equal(rig.done.err, 0);
	assert_true(rig.done.result.exited_in_grace);
	assert_int_equal(rig.done.result.n_sigterm, 1);
	assert_true(rig.done.at_ns - start >= 300 * MS);
	assert_true(ticks >= 3);
	assert_true(loop_longest_iteration_ns(rig.loop) < 300 * MS);
	reap(pid, SIGTERM);
	rig_close(&rig);
	close(efd);
	assert_int_equal(rmdir(pod.cgroup_path), 0);
}

/* A hard threshold names a pod whose soft eviction is held: cgroup.kill now, one done, and the
 * answer arriving afterwards does nothing (its fd is no longer watched). */
static void test_escalate_cuts_the_hold(void **state)
{
	struct rig rig;
	struct pod pod;
	uint64_t one = 1;
	int efd;
	pid_t pid;

	NEED_CGROUP2();
	pid = start_workload("held-escalate", &pod, true);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(efd >= 0);
	rig_open(&rig);
	assert_int_equal(rig_start_held(&rig, &pod, 60000 * MS, efd, 60000 * MS), 0);
	assert_int_equal(executor_escalate(rig.executor, executor_find(rig.executor, &pod)), 0);
	assert_int_equal(executor_action_phase(executor_find(rig.executor, &pod)), EXEC_KILLED);
	assert_int_equal(write(efd, &one, sizeof(one)), sizeof(one));
	run_until(rig.loop, &rig.done, 5000 * MS);
	assert_int_equal(rig.done.calls, 1);
	assert_int_equal(rig.done.err, 0);
	assert_true(rig.done.result.used_cgroup_kill);
	assert_int_equal(rig.done.result.n_sigterm, 0);
	for (int i = 0; i < 3; i++)
		assert_true(loop_run_once(rig.loop, 10, NULL, NULL) >= 0);
	assert_int_equal(rig.done.calls, 1);
	reap(pid, SIGKILL);
	rig_close(&rig);
	close(efd);
	assert_int_equal(rmdir(pod.cgroup_path), 0);
}

/* The pod ends by itself while held: done once, nothing was signalled. */
static void test_hold_ended_by_itself(void **state)
{
	struct rig rig;
	struct pod pod;
	int efd;
	pid_t pid;

	NEED_CGROUP2();
	pid = start_workload("held-gone", &pod, true);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(efd >= 0);
	rig_open(&rig);
	assert_int_equal(rig_start_held(&rig, &pod, 60000 * MS, efd, 60000 * MS), 0);
	assert_int_equal(kill(pid, SIGKILL), 0);
	reap(pid, SIGKILL);
	run_until(rig.loop, &rig.done, 5000 * MS);
	assert_int_equal(rig.done.calls, 1);
	assert_int_equal(rig.done.err, 0);
	assert_int_equal(rig.done.result.n_sigterm, 0);
	assert_false(rig.done.result.used_cgroup_kill);
	assert_int_equal(executor_in_flight(rig.executor), 0);
	rig_close(&rig);
	close(efd);
	assert_int_equal(rmdir(pod.cgroup_path), 0);
}

static bool yes_handed_over(void *ctx)
{
	return true;
}

/* A hard kill held for its status report: nothing is written while held (the victim, which
 * ignores SIGTERM, lives on through many loop iterations), cgroup.kill at the answer. */
static void test_hard_hold_kills_at_the_answer(void **state)
{
	struct rig rig;
	struct pod pod;
	uint64_t one = 1;
	int ticks = 0, efd;
	pid_t pid;

	NEED_CGROUP2();
	pid = start_workload("hard-held", &pod, true);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(efd >= 0);
	rig_open(&rig);
	assert_non_null(loop_add_periodic(rig.loop, 10 * MS, on_tick, &ticks));
	assert_int_equal(rig_start_held_mode(&rig, &pod, KILL_HARD, 0, efd, 60000 * MS, NULL), 0);
	assert_int_equal(executor_action_phase(executor_find(rig.executor, &pod)), EXEC_HELD);
	assert_true(executor_action_hard(executor_find(rig.executor, &pod)));
	while (ticks < 5)
		assert_true(loop_run_once(rig.loop, 50, NULL, NULL) >= 0);
	assert_int_equal(rig.done.calls, 0);
	assert_true(alive(pid));
	assert_int_equal(write(efd, &one, sizeof(one)), sizeof(one));
	run_until(rig.loop, &rig.done, 5000 * MS);
	assert_int_equal(rig.done.calls, 1);
	assert_int_equal(rig.done.err, 0);
	assert_true(rig.done.result.used_cgroup_kill);
	assert_int_equal(rig.done.result.n_sigterm, 0);
	assert_true(rig.done.result.held_ns >= 40 * MS);
	reap(pid, SIGKILL);
	rig_close(&rig);
	close(efd);
	assert_int_equal(rmdir(pod.cgroup_path), 0);
}

/* No answer: the held hard kill is written at its bound; escalation writes it at once. */
static void test_hard_hold_bounded_and_escalated(void **state)
{
	struct rig rig;
	struct pod pod, pod2;
	int64_t start;
	int efd;
	pid_t pid, pid2;

	NEED_CGROUP2();
	pid = start_workload("hard-held-bound", &pod, true);
	pid2 = start_workload("hard-held-cut", &pod2, true);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(efd >= 0);
	rig_open(&rig);
	start = clock_monotonic_ns();
	assert_int_equal(rig_start_held_mode(&rig, &pod, KILL_HARD, 0, efd, 300 * MS, NULL), 0);
	run_until(rig.loop, &rig.done, 5000 * MS);
	assert_int_equal(rig.done.calls, 1);
	assert_int_equal(rig.done.err, 0);
	assert_true(rig.done.result.used_cgroup_kill);
	assert_true(rig.done.at_ns - start >= 300 * MS);
	reap(pid, SIGKILL);
	memset(&rig.done, 0, sizeof(rig.done));
	assert_int_equal(rig_start_held_mode(&rig, &pod2, KILL_HARD, 0, efd, 60000 * MS, NULL), 0);
	assert_int_equal(executor_escalate(rig.executor, executor_find(rig.executor, &pod2)), 0);
	run_until(rig.loop, &rig.done, 5000 * MS);
	assert_int_equal(rig.done.calls, 1);
	assert_true(rig.done.result.used_cgroup_kill);
	reap(pid2, SIGKILL);
	rig_close(&rig);
	close(efd);
	assert_int_equal(rmdir(pod.cgroup_path), 0);
	assert_int_equal(rmdir(pod2.cgroup_path), 0);
}

/* A soft kill whose report landed is handed over (the kubelet terminates it): no SIGTERM from
 * the executor, and cgroup.kill at the end of the grace when the victim is still there. */
static void test_soft_hold_handed_over(void **state)
{
	struct rig rig;
	struct pod pod;
	uint64_t one = 1;
	int64_t answered;
	int efd;
	pid_t pid;

	NEED_CGROUP2();
	pid = start_workload("handed-over", &pod, false);	/* would exit on SIGTERM */
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(efd >= 0);
	rig_open(&rig);
	assert_int_equal(rig_start_held_mode(&rig, &pod, KILL_SOFT, 400 * MS, efd, 60000 * MS,
					     yes_handed_over), 0);
	assert_int_equal(write(efd, &one, sizeof(one)), sizeof(one));
	answered = clock_monotonic_ns();
	run_until(rig.loop, &rig.done, 5000 * MS);
	assert_int_equal(rig.done.calls, 1);
	assert_int_equal(rig.done.err, 0);
	assert_true(rig.done.result.handed_over);
	assert_int_equal(rig.done.result.n_sigterm, 0);
	assert_true(rig.done.result.used_cgroup_kill);
	assert_true(rig.done.at_ns - answered >= 400 * MS);
	reap(pid, SIGKILL);	/* SIGKILL: it never got a SIGTERM */
	rig_close(&rig);
	close(efd);
	assert_int_equal(rmdir(pod.cgroup_path), 0);
}

/* Check-then-act: the cgroup was removed and made again at the same path since it was ranked. */
static void test_recreated_cgroup_is_refused(void **state)
{
	struct rig rig;
	struct pod pod;
	pid_t pid, second;

	NEED_CGROUP2();
	pid = start_workload("recreated", &pod, false);
	assert_int_equal(kill(pid, SIGKILL), 0);
	reap(pid, SIGKILL);
	assert_int_equal(remove_cgroup(pod.cgroup_path), 0);
	{
		struct pod fresh;
		uint64_t old_id = pod.cgroup_id;

		second = start_workload("recreated", &fresh, false);
		assert_true(fresh.cgroup_id != old_id);
	}
	rig_open(&rig);
	assert_int_equal(rig_start(&rig, &pod, KILL_HARD, 0, false), -ESTALE);
	assert_int_equal(rig.done.calls, 0);
	/* The new workload is untouched. */
	assert_int_equal(kill(second, 0), 0);
	assert_int_equal(kill(second, SIGKILL), 0);
	reap(second, SIGKILL);
	rig_close(&rig);
	assert_int_equal(remove_cgroup(pod.cgroup_path), 0);
}

static void test_never_evict_unless_shutdown(void **state)
{
	struct rig rig;
	struct pod pod;
	pid_t pid;

	NEED_CGROUP2();
	pid = start_workload("critical", &pod, false);
	pod.priority = 2000000000;
	rig_open(&rig);
	assert_int_equal(rig_start(&rig, &pod, KILL_HARD, 0, false), -EPERM);
	assert_int_equal(kill(pid, 0), 0);
	/* Graceful shutdown terminates critical pods too, in their own group. */
	assert_int_equal(rig_start(&rig, &pod, KILL_SOFT, 5000 * MS, true), 0);
	run_until(rig.loop, &rig.done, 5000 * MS);
	assert_int_equal(rig.done.err, 0);
	reap(pid, SIGTERM);
	/* Empty now: nothing is started, the caller hears it at once. */
	assert_int_equal(rig_start(&rig, &pod, KILL_HARD, 0, true), 1);
	rig_close(&rig);
	assert_int_equal(rmdir(pod.cgroup_path), 0);
}

/* A cgroup that went away by itself since the ranking: -ENOENT, which the daemon does not
 * count as a failed eviction. */
static void test_vanished_cgroup(void **state)
{
	struct rig rig;
	struct pod pod;
	pid_t pid;

	NEED_CGROUP2();
	pid = start_workload("vanished", &pod, false);
	assert_int_equal(kill(pid, SIGKILL), 0);
	reap(pid, SIGKILL);
	assert_int_equal(remove_cgroup(pod.cgroup_path), 0);
	rig_open(&rig);
	assert_int_equal(rig_start(&rig, &pod, KILL_HARD, 0, false), -ENOENT);
	assert_int_equal(executor_in_flight(rig.executor), 0);
	rig_close(&rig);
}

/*
 * The kill empties the cgroup and it is removed before the executor has read its "populated
 * 0" (as a service manager removes an emptied unit's cgroup at once): reading cgroup.events
 * then fails with ENODEV, and that is a completed kill, not a failed one. The loop does not
 * run between the cgroup.kill write and the rmdir, so the executor's first read after the kill
 * is of a removed cgroup, every time (tests/cli/test_kill_accounting.sh part b can only race
 * for this).
 */
static void test_removed_before_its_empty_event(void **state)
{
	struct rig rig;
	struct pod pod;
	pid_t pid;

	NEED_CGROUP2();
	pid = start_workload("removed", &pod, true);
	rig_open(&rig);
	assert_int_equal(rig_start(&rig, &pod, KILL_HARD, 0, false), 0);
	reap(pid, SIGKILL);
	assert_int_equal(remove_cgroup(pod.cgroup_path), 0);
	assert_int_equal(rig.done.calls, 0);
	assert_int_equal(executor_in_flight(rig.executor), 1);
	run_until(rig.loop, &rig.done, 5000 * MS);
	assert_int_equal(rig.done.calls, 1);
	assert_int_equal(rig.done.err, 0);
	assert_true(rig.done.result.used_cgroup_kill);
	assert_true(rig.done.result.kill_to_empty_ns >= 0);
	assert_int_equal(rig.done.result.escaped, 0);
	assert_int_equal(executor_in_flight(rig.executor), 0);
	rig_close(&rig);
}

/* The same in a grace: the victim exits on its SIGTERM and its cgroup is removed before the
 * executor reads it empty; it emptied within its grace, and the process it signalled (held by
 * pidfd, reaped now) did not escape. */
static void test_removed_in_grace_before_its_empty_event(void **state)
{
	struct rig rig;
	struct pod pod;
	pid_t pid;

	NEED_CGROUP2();
	pid = start_workload("removed-grace", &pod, false);
	rig_open(&rig);
	assert_int_equal(rig_start(&rig, &pod, KILL_SOFT, 10000 * MS, false), 0);
	reap(pid, SIGTERM);
	assert_int_equal(remove_cgroup(pod.cgroup_path), 0);
	assert_int_equal(rig.done.calls, 0);
	run_until(rig.loop, &rig.done, 5000 * MS);
	assert_int_equal(rig.done.calls, 1);
	assert_int_equal(rig.done.err, 0);
	assert_true(rig.done.result.exited_in_grace);
	assert_false(rig.done.result.used_cgroup_kill);
	assert_int_equal(rig.done.result.n_sigterm, 1);
	assert_int_equal(rig.done.result.escaped, 0);
	assert_int_equal(executor_in_flight(rig.executor), 0);
	rig_close(&rig);
}

/* A target outside the allowed roots is refused before anything is written. */
static void test_outside_roots_refused(void **state)
{
	struct rig rig;
	struct pod pod = { .cgroup_path = "/sys/fs/cgroup/unified/system.slice", .processes = 1 };

	NEED_CGROUP2();
	rig_open(&rig);
	assert_int_equal(rig_start(&rig, &pod, KILL_HARD, 0, false), -EPERM);
	assert_int_equal(executor_in_flight(rig.executor), 0);
	rig_close(&rig);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_hard_kill_writes_first, cleanup_test),
		cmocka_unit_test_teardown(test_hard_kill_ends_through_cgroup_events, cleanup_test),
		cmocka_unit_test_teardown(test_soft_kill_grace_does_not_block_the_loop, cleanup_test),
		cmocka_unit_test_teardown(test_soft_kill_exits_in_grace, cleanup_test),
		cmocka_unit_test_teardown(test_escalate_cuts_the_grace, cleanup_test),
		cmocka_unit_test_teardown(test_hold_ends_when_its_fd_fires, cleanup_test),
		cmocka_unit_test_teardown(test_hold_is_bounded, cleanup_test),
		cmocka_unit_test_teardown(test_escalate_cuts_the_hold, cleanup_test),
		cmocka_unit_test_teardown(test_hold_ended_by_itself, cleanup_test),
		cmocka_unit_test_teardown(test_hard_hold_kills_at_the_answer, cleanup_test),
		cmocka_unit_test_teardown(test_hard_hold_bounded_and_escalated, cleanup_test),
		cmocka_unit_test_teardown(test_soft_hold_handed_over, cleanup_test),
		cmocka_unit_test_teardown(test_recreated_cgroup_is_refused, cleanup_test),
		cmocka_unit_test_teardown(test_never_evict_unless_shutdown, cleanup_test),
		cmocka_unit_test_teardown(test_outside_roots_refused, cleanup_test),
		cmocka_unit_test_teardown(test_vanished_cgroup, cleanup_test),
		cmocka_unit_test_teardown(test_removed_before_its_empty_event, cleanup_test),
		cmocka_unit_test_teardown(test_removed_in_grace_before_its_empty_event, cleanup_test),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
