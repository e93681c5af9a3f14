// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sys/psi: closing many triggers at once closes every fd exactly once (skipping negative
 * entries), from helper threads that take no signal; loop_detach_fd hands a source's fd back
 * open. The cost that psi_triggers_close works around (a grace period per trigger) is a
 * kernel behaviour: tests/vm/scenarios/19-many-pods-exit.sh measures it on a real kernel. */
#include "testutil.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>

#include "sys/loop.h"
#include "sys/psi.h"

static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static void close_n(size_t n)
{
	int *fds = calloc(2 * n, sizeof(*fds));

	assert_non_null(fds);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(pipe2(&fds[2 * i], O_CLOEXEC), 0);
		/* Keep the write ends: they must stay open. */
	}
	int *read_ends = calloc(n + 2, sizeof(*read_ends));

	assert_non_null(read_ends);
	for (size_t i = 0; i < n; i++)
		read_ends[i] = fds[2 * i];
	read_ends[n] = -1;		/* skipped */
	read_ends[n + 1] = -EBADF;	/* skipped */
	psi_triggers_close(read_ends, n + 2);
	for (size_t i = 0; i < n; i++) {
		assert_false(fd_open(fds[2 * i]));
		assert_true(fd_open(fds[2 * i + 1]));
		close(fds[2 * i + 1]);
	}
	free(read_ends);
	free(fds);
}

static void test_close_counts(void **state)
{
	(void)state;
	psi_triggers_close(NULL, 0);
	close_n(1);
	close_n(2);
	close_n(PSI_CLOSE_MAX_THREADS - 1);
	close_n(PSI_CLOSE_MAX_THREADS);
	close_n(PSI_CLOSE_MAX_THREADS + 1);	/* one past the thread count: strides wrap */
	close_n(300);
}

static void test_signal_mask_restored(void **state)
{
	sigset_t before, after;
	int fds[2 * 8];

	(void)state;
	sigemptyset(&before);
	sigaddset(&before, SIGUSR1);
	assert_int_equal(pthread_sigmask(SIG_SETMASK, &before, NULL), 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(pipe(&fds[2 * i]), 0);
	psi_triggers_close(fds, 16);
	assert_int_equal(pthread_sigmask(SIG_SETMASK, NULL, &after), 0);
	assert_true(sigismember(&after, SIGUSR1));
	assert_false(sigismember(&after, SIGTERM));
	sigemptyset(&before);
	pthread_sigmask(SIG_SETMASK, &before, NULL);
}

static void nothing(void *ctx, int fd, uint32_t revents)
{
	(void)ctx, (void)fd, (void)revents;
}

static void test_loop_detach_fd(void **state)
{
	struct loop *loop;
	struct loop_source *source;
	int p[2];

	(void)state;
	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(pipe(p), 0);
	source = loop_add_fd(loop, p[0], EPOLLIN, true, nothing, NULL);
	assert_non_null(source);
	assert_int_equal(loop_n_sources(loop), 1);
	assert_int_equal(loop_detach_fd(loop, source), p[0]);
	assert_int_equal(loop_n_sources(loop), 0);
	assert_true(fd_open(p[0]));		/* owned, but handed back open */
	assert_int_equal(loop_detach_fd(loop, NULL), -1);
	loop_free(loop);
	assert_true(fd_open(p[0]));
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_close_counts),
		cmocka_unit_test(test_signal_mask_restored),
		cmocka_unit_test(test_loop_detach_fd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
