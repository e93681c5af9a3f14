// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The daemon's live table goes to a terminal only: to a file (a journal, a redirect) nothing
 * of it is written, so a dry run left running cannot fill a disk with tables. */
#include "testutil.h"

#include <poll.h>

#include <stdlib.h>

#include "ops/report.h"

static struct eviction_engine engine;
static struct observations obs;
static struct evaluation eval;
static struct decision decision = { .threshold_index = -1 };

static void test_live_table_not_to_a_file(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	struct stat st;
	FILE *out;

	fixture_tmpdir(dir, "report");
	snprintf(path, sizeof(path), "%s/stdout", dir);
	out = fopen(path, "w");
	assert_non_null(out);
	for (int i = 0; i < 100; i++)
		assert_false(report_live(out, &engine, &obs, &eval, &decision));
	fclose(out);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 0);
	fixture_rm_rf(dir);
}

static void test_live_table_to_a_terminal(void **state)
{
	char buf[4096] = "";
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC), slave;
	ssize_t n;
	FILE *out;

	if (master < 0 || grantpt(master) || unlockpt(master)) {
		print_message("SKIP reason: no pseudo-terminal here: %s\n", strerror(errno));
		skip();
	}
	slave = open(ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
	assert_true(slave >= 0);
	out = fdopen(slave, "w");
	assert_non_null(out);
	assert_true(report_live(out, &engine, &obs, &eval, &decision));
	fflush(out);
	/* A pseudo-terminal hands the table over in pieces: read until its last line is there
	 * (the wait only bounds a hang: the data is already written). */
	for (size_t used = 0; !strstr(buf, "decision: none") && used < sizeof(buf) - 1;) {
		struct pollfd p = { .fd = master, .events = POLLIN };

		if (poll(&p, 1, 5000) <= 0)
			break;
		n = read(master, buf + used, sizeof(buf) - 1 - used);
		if (n <= 0)
			break;
		used += (size_t)n;
		buf[used] = '\0';
	}
	assert_non_null(strstr(buf, "decision: none"));
	fclose(out);
	close(master);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live_table_not_to_a_file),
		cmocka_unit_test(test_live_table_to_a_terminal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
