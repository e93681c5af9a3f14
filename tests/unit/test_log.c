// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sys/log: a line from any thread is one write(2), so lines never interleave; long lines are
 * cut with "..."; errno survives for %m. stderr is pointed at a pipe for each test. */
#include "testutil.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/wait.h>

#include "sys/log.h"

#define N_THREADS 8
#define N_LINES 400
#define PAYLOAD 700	/* long enough that stdio would write it in pieces */

struct capture {
	int saved_stderr;
	int read_fd;
	pthread_t reader;
	char *buf;
	size_t len, cap;
};

static void *reader_main(void *opaque)
{
	struct capture *c = opaque;

	for (;;) {
		ssize_t n;

		if (c->cap - c->len < 65536) {
			c->cap = c->cap ? c->cap * 2 : 1 << 20;
			c->buf = realloc(c->buf, c->cap);
			if (!c->buf)
				abort();
		}
		n = read(c->read_fd, c->buf + c->len, c->cap - c->len - 1);
		if (n <= 0)
			break;
		c->len += (size_t)n;
	}
	c->buf[c->len] = '\0';
	return NULL;
}

/* stderr into a pipe read by a thread (the writers would fill a pipe buffer otherwise). */
static void capture_start(struct capture *c)
{
	int fds[2];

	memset(c, 0, sizeof(*c));
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	c->saved_stderr = dup(STDERR_FILENO);
	assert_true(c->saved_stderr >= 0);
	assert_int_equal(dup2(fds[1], STDERR_FILENO), STDERR_FILENO);
	close(fds[1]);
	c->read_fd = fds[0];
	assert_int_equal(pthread_create(&c->reader, NULL, reader_main, c), 0);
}

static void capture_stop(struct capture *c)
{
	fflush(stderr);
	dup2(c->saved_stderr, STDERR_FILENO);	/* the pipe's last writer goes: EOF */
	close(c->saved_stderr);
	pthread_join(c->reader, NULL);
	close(c->read_fd);
}

static void *logger_main(void *opaque)
{
	int id = (int)(intptr_t)opaque;
	char payload[PAYLOAD + 1];

	memset(payload, 'a' + id, PAYLOAD);
	payload[PAYLOAD] = '\0';
	for (int i = 0; i < N_LINES; i++)
		log_info("thread %d line %d %s end", id, i, payload);
	return NULL;
}

/* Whole: "<stamp> info: thread T line L <PAYLOAD x letter T> end". */
static bool line_whole(const char *line, size_t len, int *id, int *index)
{
	const char *p = strstr(line, " info: thread ");
	int consumed = 0;

	if (!p || p > line + len)
		return false;
	if (sscanf(p, " info: thread %d line %d %n", id, index, &consumed) != 2 || !consumed)
		return false;
	if (*id < 0 || *id >= N_THREADS || *index < 0 || *index >= N_LINES)
		return false;
	p += consumed;
	for (int i = 0; i < PAYLOAD; i++)
		if (p[i] != 'a' + *id)
			return false;
	p += PAYLOAD;
	return (size_t)(p - line) + 4 == len && memcmp(p, " end", 4) == 0;
}

static void test_threads_whole_lines(void **state)
{
	static bool seen[N_THREADS][N_LINES];
	pthread_t threads[N_THREADS];
	struct capture c;
	size_t n_lines = 0, broken = 0;
	char *line;

	memset(seen, 0, sizeof(seen));
	log_set_level(LOGLEVEL_INFO);
	capture_start(&c);
	for (int i = 0; i < N_THREADS; i++)
		assert_int_equal(pthread_create(&threads[i], NULL, logger_main, (void *)(intptr_t)i), 0);
	for (int i = 0; i < N_THREADS; i++)
		pthread_join(threads[i], NULL);
	capture_stop(&c);

	line = c.buf;
	while (line < c.buf + c.len) {
		char *nl = memchr(line, '\n', (size_t)(c.buf + c.len - line));
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		int id, index;

		*(nl ? nl : line + len) = '\0';
		if (line_whole(line, len, &id, &index) && !seen[id][index])
			seen[id][index] = true;
		else
			broken++;
		n_lines++;
		line += len + 1;
	}
	free(c.buf);
	assert_int_equal(broken, 0);
	assert_int_equal(n_lines, N_THREADS * N_LINES);
	for (int i = 0; i < N_THREADS; i++)
		for (int j = 0; j < N_LINES; j++)
			assert_true(seen[i][j]);
}

static void test_long_line_truncated(void **state)
{
	char *big = malloc(20000);
	struct capture c;

	assert_non_null(big);
	memset(big, 'x', 19999);
	big[19999] = '\0';
	log_set_level(LOGLEVEL_INFO);
	capture_start(&c);
	log_warn("big %s", big);
	log_debug("not shown at info");
	errno = ENOENT;
	log_err("open /nonexistent: %m");
	assert_int_equal(errno, ENOENT);
	capture_stop(&c);
	free(big);

	/* Two lines: the first cut at 4096 bytes with "...", then the %m one. */
	{
		char *nl = strchr(c.buf, '\n');

		assert_non_null(nl);
		assert_int_equal(nl - c.buf + 1, 4096);
		assert_memory_equal(nl - 3, "...", 3);
		assert_non_null(strstr(c.buf, " warning: big xxx"));
		assert_non_null(strstr(nl + 1, " error: open /nonexistent: No such file or directory\n"));
		assert_null(strstr(c.buf, "not shown"));
		assert_null(strchr(strchr(nl + 1, '\n') + 1, '\n'));
	}
	free(c.buf);
}

/* A pod name with a newline and a terminal escape stays on one line, the bytes shown. */
static void test_control_characters_escaped(void **state)
{
	struct capture c;

	log_set_level(LOGLEVEL_INFO);
	capture_start(&c);
	log_info("evicted %s now", "ns/evil\n2026-01-01T00:00:00.000Z error: forged\x1b[2J");
	capture_stop(&c);
	assert_non_null(strstr(c.buf, "evicted ns/evil\\x0a2026-01-01T00:00:00.000Z error: forged\\x1b[2J now\n"));
	assert_ptr_equal(strchr(c.buf, '\n'), c.buf + strlen(c.buf) - 1);
	free(c.buf);
}

/* The journal check is made once per process: a child makes it with JOURNAL_STREAM set. A
 * JOURNAL_STREAM naming another stream (inherited by a child whose stderr was redirected,
 * systemd.exec(5)) is not the journal: the line keeps its timestamp, no "<N>" prefix. */
static void test_journal_prefix(void **state)
{
	char buf[256] = "";
	size_t len = 0;
	int fds[2], status;
	pid_t pid;

	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("JOURNAL_STREAM", "8:1234", 1);
		dup2(fds[1], STDERR_FILENO);
		log_set_level(LOGLEVEL_DEBUG);
		log_debug("dbg %d", 7);
		_exit(0);
	}
	close(fds[1]);
	for (ssize_t n; (n = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0; )
		len += (size_t)n;
	buf[len] = '\0';
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(buf[0], '2');	/* "2026-...Z debug: dbg 7" */
	assert_non_null(strstr(buf, "Z debug: dbg 7\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* First: the parent must not have made the journal check before the fork. */
		cmocka_unit_test(test_journal_prefix),
		cmocka_unit_test(test_threads_whole_lines),
		cmocka_unit_test(test_long_line_truncated),
		cmocka_unit_test(test_control_characters_escaped),
	};

	unsetenv("JOURNAL_STREAM");
	return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
