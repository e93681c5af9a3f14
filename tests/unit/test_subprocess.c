// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sys/subprocess: status and output, the child's signal state, the SIGTERM -> SIGKILL ->
 * abandon sequence with its bounds (the loop keeps running meanwhile), cancel. */
#include "testutil.h"

#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>

#include "sys/clock.h"
#include "sys/log.h"
#include "sys/loop.h"
#include "sys/subprocess.h"

#define MS 1000000ll

static int count_fds(void)
{
	char path[64];
	int n = 0;

	for (int fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (access(path, F_OK) == 0)
			n++;
	}
	return n;
}


static void test_status_and_output(void **state)
{
	struct subprocess_options o = { .timeout_ns = 5000 * MS };
	struct subprocess_result r;
	const char *kill_self[] = { "sh", "-c", "kill -9 $$", NULL };
	const char *missing[] = { "/nonexistent/evictd-test", NULL };
	int fds = count_fds();

	o.shell_command = "echo hello; echo oops >&2; exit 3";
	assert_int_equal(subprocess_run_sync(&o, &r), 0);
	assert_int_equal(r.status, 3);
	assert_false(r.timed_out);
	assert_false(r.abandoned);
	assert_string_equal(r.output, "hello\noops\n");
	assert_true(r.pid > 0);
	assert_true(r.elapsed_ns > 0 && r.elapsed_ns < 5000 * MS);

	o.shell_command = NULL;
	o.argv = kill_self;
	assert_int_equal(subprocess_run_sync(&o, &r), 0);
	assert_int_equal(r.status, 128 + SIGKILL);

	/* Only the tail of a long output is kept. */
	o.argv = NULL;
	o.shell_command = "seq 1 5000";
	assert_int_equal(subprocess_run_sync(&o, &r), 0);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.output_len, SUBPROCESS_OUTPUT_TAIL);
	assert_int_equal(strlen(r.output), SUBPROCESS_OUTPUT_TAIL);
	assert_non_null(strstr(r.output, "4999\n5000\n"));

	/* stdin is /dev/null: cat ends at once. */
	o.shell_command = "cat; echo done";
	assert_int_equal(subprocess_run_sync(&o, &r), 0);
	assert_string_equal(r.output, "done\n");

	/* Not started: an error, no report. */
	o.shell_command = NULL;
	o.argv = missing;
	assert_int_equal(subprocess_run_sync(&o, &r), -ENOENT);
	o.argv = NULL;
	assert_int_equal(subprocess_run_sync(&o, &r), -EINVAL);
	o.shell_command = "true";
	o.timeout_ns = 0;
	assert_int_equal(subprocess_run_sync(&o, &r), -EINVAL);
	assert_int_equal(count_fds(), fds);
}

static void test_child_signals_default(void **state)
{
	const char *argv[] = { "grep", "-E", "^Sig(Blk|Ign):", "/proc/self/status", NULL };
	struct subprocess_options o = { .argv = argv, .timeout_ns = 5000 * MS };
	struct subprocess_result r;
	struct sigaction ignore = { .sa_handler = SIG_IGN }, saved_pipe, saved_usr1;
	sigset_t block, saved_mask;

	/* What main() does, and more. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGINT);
	assert_int_equal(sigprocmask(SIG_BLOCK, &block, &saved_mask), 0);
	sigaction(SIGPIPE, &ignore, &saved_pipe);
	sigaction(SIGUSR1, &ignore, &saved_usr1);
	assert_int_equal(subprocess_run_sync(&o, &r), 0);
	sigprocmask(SIG_SETMASK, &saved_mask, NULL);
	sigaction(SIGPIPE, &saved_pipe, NULL);
	sigaction(SIGUSR1, &saved_usr1, NULL);

	assert_int_equal(r.status, 0);
	{
		unsigned long long blocked = ~0ull, ignored = ~0ull;
		/* glibc's posix_spawn sets its own two internal signals (32 SIGCANCEL, 33
		 * SIGSETXID) to SIG_IGN in the child, and sigfillset() cannot name them; every
		 * other signal must be unblocked and at its default. */
		const unsigned long long glibc_internal = (1ull << 31) | (1ull << 32);

		assert_int_equal(sscanf(r.output, "SigBlk: %llx SigIgn: %llx", &blocked, &ignored), 2);
		assert_int_equal(blocked, 0);
		assert_int_equal(ignored & ~glibc_internal, 0);
	}
}

struct async_state {
	bool done;
	struct subprocess_result result;
	int ticks;
};

static void async_done(void *ctx, const struct subprocess_result *result)
{
	struct async_state *s = ctx;

	s->result = *result;
	s->done = true;
}

static void tick(void *ctx)
{
	((struct async_state *)ctx)->ticks++;
}

/* Ignores SIGTERM (ignored dispositions survive exec: sleep ignores it too). */
static void test_timeout_term_then_kill(void **state)
{
	struct async_state s = { 0 };
	struct subprocess_options o = {
		.shell_command = "trap '' TERM; echo started; sleep 60", .timeout_ns = 1000 * MS,
		.kill_grace_ns = 500 * MS, .done = async_done, .ctx = &s,
	};
	struct loop *loop;
	struct subprocess *p;
	int64_t start = clock_monotonic_ns(), took;
	int fds = count_fds();

	assert_int_equal(loop_new(&loop), 0);
	assert_non_null(loop_add_periodic(loop, 50 * MS, tick, &s));
	assert_int_equal(subprocess_start(loop, &o, &p), 0);
	assert_true(subprocess_pid(p) > 0);
	while (!s.done && clock_monotonic_ns() - start < 10000 * MS)
		loop_run_once(loop, 1000, NULL, NULL);
	took = clock_monotonic_ns() - start;
	assert_true(s.done);
	assert_true(s.result.timed_out);
	assert_false(s.result.abandoned);
	assert_int_equal(s.result.status, 128 + SIGKILL);
	assert_string_equal(s.result.output, "started\n");
	/* SIGTERM at 1 s did nothing; SIGKILL at 1.5 s did. */
	assert_true(took >= 1500 * MS);
	assert_true(took < 2500 * MS);
	assert_true(s.result.elapsed_ns >= 1500 * MS && s.result.elapsed_ns < 2500 * MS);
	/* The loop went on meanwhile: nothing blocked it. */
	assert_true(s.ticks >= 20);
	assert_true(loop_longest_iteration_ns(loop) < 100 * MS);
	assert_int_equal(loop_n_sources(loop), 1);
	loop_free(loop);
	assert_int_equal(count_fds(), fds);
}

/* SIGKILL "has no effect" (what a child in uninterruptible sleep looks like): the caller
 * gets control back at deadline + 2 * grace, with the child abandoned, never waited for. */
static int kill_does_nothing(pid_t pgid, int pidfd, int sig)
{
	return 0;
}

static void test_unkillable_is_abandoned(void **state)
{
	static const struct subprocess_ops ops = { .kill_group = kill_does_nothing };
	struct subprocess_options o = {
		.shell_command = "exec sleep 60", .timeout_ns = 300 * MS, .kill_grace_ns = 200 * MS,
		.ops = &ops,
	};
	struct subprocess_result r;
	int64_t start = clock_monotonic_ns(), took;
	pid_t pid;

	assert_int_equal(subprocess_bound_ns(&o), 700 * MS);
	assert_int_equal(subprocess_run_sync(&o, &r), 0);
	took = clock_monotonic_ns() - start;
	assert_true(r.timed_out);
	assert_true(r.abandoned);
	assert_int_equal(r.status, -1);
	assert_true(took >= 700 * MS);
	assert_true(took < 1500 * MS);
	pid = r.pid;
	assert_false(process_gone(pid, 0));

	/* When it does die, a later subprocess call reaps the zombie. */
	assert_int_equal(kill(pid, SIGKILL), 0);
	o.ops = NULL;
	o.shell_command = "true";
	for (int i = 0; i < 50; i++) {
		char path[64];

		assert_int_equal(subprocess_run_sync(&o, &r), 0);
		snprintf(path, sizeof(path), "/proc/%d", (int)pid);
		if (access(path, F_OK) != 0)
			break;
		usleep(10000);
	}
	assert_int_equal(waitpid(pid, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

static void test_cancel(void **state)
{
	struct async_state s = { 0 };
	struct subprocess_options o = {
		.shell_command = "sleep 60 & sleep 60", .timeout_ns = 60000 * MS,
		.done = async_done, .ctx = &s,
	};
	struct subprocess_result r;
	struct subprocess *p;
	struct loop *loop;
	int fds = count_fds();
	pid_t pid;

	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(subprocess_start(loop, &o, &p), 0);
	pid = subprocess_pid(p);
	loop_run_once(loop, 100, NULL, NULL);
	subprocess_cancel(p);
	assert_int_equal(loop_n_sources(loop), 0);
	loop_run_once(loop, 100, NULL, NULL);
	assert_false(s.done);	/* cancelled: no report */
	loop_free(loop);
	assert_true(process_gone(pid, 2000));
	/* Reaped by the next call. */
	o.shell_command = "true";
	assert_int_equal(subprocess_run_sync(&o, &r), 0);
	assert_int_equal(waitpid(pid, NULL, WNOHANG), -1);
	/* The group went too: nothing left in it (the leader, a zombie until that reap, was
	 * the last member that kill(-pgid, 0) could still find). */
	for (int i = 0; i < 200 && kill(-pid, 0) == 0; i++)
		usleep(10000);
	assert_int_equal(kill(-pid, 0), -1);
	assert_int_equal(count_fds(), fds);
	subprocess_cancel(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_and_output),
		cmocka_unit_test(test_child_signals_default),
		cmocka_unit_test(test_timeout_term_then_kill),
		cmocka_unit_test(test_unkillable_is_abandoned),
		cmocka_unit_test(test_cancel),
	};

	log_set_level(LOGLEVEL_ERR - 1);
	return cmocka_run_group_tests_name("subprocess", tests, NULL, NULL);
}
