// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What a kill left behind (act/aftermath.c): which of the processes a soft kill signalled
 * escaped its cgroup, and which are only dying. The kernel takes an exiting process out of
 * its cgroup (cgroup_exit: the cgroup reads "populated 0") before it becomes a zombie whose
 * pidfd polls readable (exit_notify); a process caught in between has PF_EXITING on every
 * thread and is not an escape. That window lasts microseconds on a real kill, so it is built
 * here from a fixture /proc (the root aftermath reads under) beside a real pidfd; the flag
 * reader itself runs on real processes: a zombie, a live one, and one whose main thread has
 * exited while another thread lives on.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/pidfd.h>
#include <sys/wait.h>

#include "testutil.h"

#include "act/aftermath.h"
#include "sys/procfs.h"

/* A stat line as /proc/PID/task/TID/stat has it; flags is the 9th field. */
#define STAT_LINE "%d (sleep (x) y) %c 1 %d %d 0 -1 %u 120 0 0 0 1 0 0 0 20 0 1 0 100 1000 10\n"
#define FLAGS_LIVE 0x00400100u			/* PF_RANDOMIZE | PF_FORKNOEXEC */
#define FLAGS_EXITING (FLAGS_LIVE | 0x4u)	/* ... | PF_EXITING */

/* A child that sleeps until killed; reaped by the test. */
static pid_t start_sleeper(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}

static bool pidfd_exited(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

struct tracked_one {
	int pidfds[1];
	pid_t pids[1];
	struct kill_tracked tracked;
};

static void track_one(struct tracked_one *t, pid_t pid)
{
	t->pids[0] = pid;
	t->pidfds[0] = pidfd_open(pid, 0);
	assert_true(t->pidfds[0] >= 0);
	t->tracked = (struct kill_tracked){ .pidfds = t->pidfds, .pids = t->pids, .n = 1 };
}

/* The process is alive (its pidfd says so) and out of the emptied cgroup, but every thread of
 * it is exiting: it is dying, not escaped, and is not signalled. */
static void test_exiting_process_is_not_an_escape(void **state)
{
	char root[PATH_MAX];
	struct tracked_one t;
	struct kill_result result;
	pid_t pid = start_sleeper();
	int status;

	fixture_tmpdir(root, "aftermath");
	{
		char rel[128];

		snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", pid, pid);
		fixture_write(root, rel, STAT_LINE, pid, 'R', pid, pid, FLAGS_EXITING);
		snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", pid, pid + 1);
		fixture_write(root, rel, STAT_LINE, pid + 1, 'D', pid, pid, FLAGS_EXITING);
		snprintf(rel, sizeof(rel), "proc/%d/cgroup", pid);
		fixture_write(root, rel, "0::/kubepods/pod-a\n");
	}
	assert_int_equal(procfs_process_exiting(root, pid), 1);
	track_one(&t, pid);
	kill_result_init(&result);
	aftermath_escaped(&t.tracked, root, true, &result);
	assert_int_equal(result.escaped, 0);
	assert_int_equal(result.escaped_killed, 0);
	assert_string_equal(result.escaped_to, "");
	/* Not signalled: it lives until the test kills it. */
	assert_false(pidfd_exited(t.pidfds[0]));
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close(t.pidfds[0]);
	fixture_rm_rf(root);
}

/* One thread of it has not started to exit: it lives on elsewhere, an escape, killed through
 * its pidfd and logged with where it went. */
static void test_process_with_a_live_thread_escaped(void **state)
{
	char root[PATH_MAX], rel[128];
	struct tracked_one t;
	struct kill_result result;
	pid_t pid = start_sleeper();
	int status;

	fixture_tmpdir(root, "aftermath");
	/* The main thread exited (a zombie leader); another thread runs. */
	snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", pid, pid);
	fixture_write(root, rel, STAT_LINE, pid, 'Z', pid, pid, FLAGS_EXITING);
	snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", pid, pid + 1);
	fixture_write(root, rel, STAT_LINE, pid + 1, 'S', pid, pid, FLAGS_LIVE);
	snprintf(rel, sizeof(rel), "proc/%d/cgroup", pid);
	fixture_write(root, rel, "12:pids:/x\n0::/elsewhere\n");
	assert_int_equal(procfs_process_exiting(root, pid), 0);
	track_one(&t, pid);
	kill_result_init(&result);
	aftermath_escaped(&t.tracked, root, true, &result);
	assert_int_equal(result.escaped, 1);
	assert_int_equal(result.escaped_killed, 1);
	assert_string_equal(result.escaped_to, "/elsewhere");
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
	close(t.pidfds[0]);
	fixture_rm_rf(root);
}

/* A process that exited (its pidfd polls readable) is neither: nothing is read or sent. */
static void test_exited_process_is_skipped(void **state)
{
	struct tracked_one t;
	struct kill_result result;
	siginfo_t info;
	pid_t pid = start_sleeper();

	track_one(&t, pid);
	assert_int_equal(kill(pid, SIGKILL), 0);
	/* A zombie now, not reaped (WNOWAIT): its pidfd polls readable. */
	assert_int_equal(waitid(P_PID, pid, &info, WEXITED | WNOWAIT), 0);
	kill_result_init(&result);
	aftermath_escaped(&t.tracked, "/nonexistent-root", true, &result);
	assert_int_equal(result.escaped, 0);
	assert_int_equal(result.escaped_killed, 0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(t.pidfds[0]);
}

/* ---- the flag reader on real processes -------------------------------------------------- */

static void test_real_zombie_is_exiting(void **state)
{
	siginfo_t info;
	pid_t pid = start_sleeper();

	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitid(P_PID, pid, &info, WEXITED | WNOWAIT), 0);
	assert_int_equal(procfs_process_exiting(NULL, pid), 1);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	/* Reaped: no such process. */
	assert_int_equal(procfs_process_exiting(NULL, pid), -ENOENT);
}

static void test_real_live_process_is_not_exiting(void **state)
{
	pid_t pid = start_sleeper();

	assert_int_equal(procfs_process_exiting(NULL, pid), 0);
	assert_int_equal(procfs_process_exiting(NULL, getpid()), 0);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
}

static pthread_t main_thread;
static int ready_fd;

/* Joins the main thread (it returns once the main thread is in do_exit, past PF_EXITING),
 * says so, and lives on. */
static void *outlive_main(void *arg)
{
	pthread_join(main_thread, NULL);
	if (write(ready_fd, "j", 1) != 1)
		_exit(4);
	for (;;)
		pause();
	return NULL;
}

/* The main thread exited, another thread lives: the process is not exiting (reading the
 * main thread's flags alone would say it is). */
static void test_real_process_with_dead_main_thread(void **state)
{
	int ready[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pthread_t thread;

		close(ready[0]);
		ready_fd = ready[1];
		main_thread = pthread_self();
		if (pthread_create(&thread, NULL, outlive_main, NULL))
			_exit(3);
		pthread_exit(NULL);
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	assert_int_equal(procfs_process_exiting(NULL, pid), 0);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exiting_process_is_not_an_escape),
		cmocka_unit_test(test_process_with_a_live_thread_escaped),
		cmocka_unit_test(test_exited_process_is_skipped),
		cmocka_unit_test(test_real_zombie_is_exiting),
		cmocka_unit_test(test_real_live_process_is_not_exiting),
		cmocka_unit_test(test_real_process_with_dead_main_thread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
