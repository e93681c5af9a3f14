// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sys/journal: the native entry's fields (names journald accepts, MESSAGE last and whole, a
 * MESSAGE_ID per kind), JOURNAL_STREAM matched against stderr's dev:ino; and the "did you
 * mean" of flags and signal names (core/suggest, config/options_help). */
#include "testutil.h"

#include <sys/stat.h>

#include "config/options.h"
#include "core/signal_meta.h"
#include "core/suggest.h"
#include "sys/journal.h"

/* The iovecs as "NAME=value" strings, for comparison. */
static const char *field(const struct journal_entry *e, size_t i, char *buf, size_t len)
{
	size_t n = e->iov[i].iov_len < len - 1 ? e->iov[i].iov_len : len - 1;

	memcpy(buf, e->iov[i].iov_base, n);
	buf[n] = '\0';
	return buf;
}

static void test_eviction_fields(void **state)
{
	const struct log_field fields[] = {
		{ "POD", "web-1" }, { "NAMESPACE", "shop" }, { "SIGNAL", "memory.available" },
		{ "THRESHOLD", "500Mi" }, { "OBSERVED", "104857600" },
		{ "RANK_REASON", "usage 1.2Gi exceeds request 100Mi; priority 0" },
		{ "_PID", "1" },		/* trusted fields are journald's own: dropped */
		{ "lower", "x" }, { "9LIVES", "x" },	/* not a journal field name: dropped */
		{ "EMPTY", NULL },		/* no value: left out */
	};
	static struct journal_entry e;
	const char *expected[] = {
		"PRIORITY=6", "SYSLOG_IDENTIFIER=evictd", "MESSAGE_ID=" JOURNAL_ID_EVICTION,
		"CODE_FILE=user/daemon/act.c", "CODE_LINE=42", "POD=web-1", "NAMESPACE=shop",
		"SIGNAL=memory.available", "THRESHOLD=500Mi", "OBSERVED=104857600",
		"RANK_REASON=usage 1.2Gi exceeds request 100Mi; priority 0",
		"MESSAGE=evicted shop/web-1",
	};
	char buf[256];

	journal_build(&e, LOGLEVEL_INFO, LOG_KIND_EVICTION, fields, sizeof(fields) / sizeof(fields[0]),
		      "user/daemon/act.c", 42, "evicted shop/web-1");
	assert_int_equal(e.n, sizeof(expected) / sizeof(expected[0]));
	for (size_t i = 0; i < e.n; i++)
		assert_string_equal(field(&e, i, buf, sizeof(buf)), expected[i]);
}

/* A plain line has no MESSAGE_ID; huge field values give way to MESSAGE, which stays whole. */
static void test_message_kept_whole(void **state)
{
	static char huge[8192], message[4000];
	struct log_field fields[] = { { "RANK_REASON", huge }, { "POD", huge } };
	static struct journal_entry e;
	char buf[64];

	memset(huge, 'r', sizeof(huge) - 1);
	memset(message, 'm', sizeof(message) - 1);
	journal_build(&e, LOGLEVEL_ERR, LOG_KIND_PLAIN, fields, 2, NULL, 0, message);
	assert_string_equal(field(&e, 0, buf, sizeof(buf)), "PRIORITY=3");
	for (size_t i = 0; i < e.n; i++)
		assert_false(e.iov[i].iov_len > 11 && !memcmp(e.iov[i].iov_base, "MESSAGE_ID=", 11));
	assert_int_equal(e.iov[e.n - 1].iov_len, strlen("MESSAGE=") + strlen(message));
	assert_memory_equal(e.iov[e.n - 1].iov_base, "MESSAGE=mmm", 11);
	assert_true(e.used <= sizeof(e.buf));
}

static void test_message_ids(void **state)
{
	const enum log_kind kinds[] = { LOG_KIND_EVICTION, LOG_KIND_DECISION, LOG_KIND_CANNOT_ACT,
					LOG_KIND_SHUTDOWN };

	assert_null(journal_message_id(LOG_KIND_PLAIN));
	for (size_t i = 0; i < 4; i++) {
		const char *id = journal_message_id(kinds[i]);

		assert_non_null(id);
		assert_int_equal(strlen(id), 32);
		assert_int_equal(strspn(id, "0123456789abcdef"), 32);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(id, journal_message_id(kinds[j]));
	}
}

/* systemd.exec(5): JOURNAL_STREAM is "DEV:INO" of the stream; a child whose stderr was
 * redirected still inherits the variable and must not write journal lines into its file. */
static void test_stream_match(void **state)
{
	int fds[2];
	struct stat st;
	char text[64];

	assert_int_equal(pipe(fds), 0);
	assert_int_equal(fstat(fds[1], &st), 0);
	snprintf(text, sizeof(text), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	assert_true(journal_stream_is(fds[1], text));
	assert_false(journal_stream_is(fds[1], "8:1234"));
	strcat(text, "x");
	assert_false(journal_stream_is(fds[1], text));
	assert_false(journal_stream_is(fds[1], NULL));
	assert_false(journal_stream_is(fds[1], ""));
	close(fds[0]);
	close(fds[1]);
}

static void test_suggest_flags_and_signals(void **state)
{
	assert_int_equal(suggest_distance("availble", "available"), 1);
	assert_int_equal(suggest_distance("teh", "the"), 1);	/* a transposition is one edit */
	assert_int_equal(suggest_distance("", "abc"), 3);
	assert_string_equal(option_suggest("evction-hard"), "eviction-hard");
	assert_string_equal(option_suggest("dryrun"), "dry-run");
	assert_string_equal(option_suggest("Eviction-Soft"), "eviction-soft");
	assert_null(option_suggest("bogus"));
	assert_string_equal(signal_suggest("memory.availble"), "memory.available");
	assert_string_equal(signal_suggest("nodefs.inodesfree"), "nodefs.inodesFree");
	assert_string_equal(signal_suggest("pid.avail"), "pid.available");
	assert_null(signal_suggest("oom.guard"));	/* not configurable: never offered */
	assert_null(signal_suggest("cpu"));
	assert_null(signal_suggest("disk.available"));	/* 3 edits from pid.available: too far */
}

/* --help lists every option under one group: a new row without one would land in "Other". */
static void test_every_option_grouped(void **state)
{
	for (size_t i = 0; i < config_n_options; i++)
		if (!option_group_of(config_options[i].flag))
			fail_msg("--%s is in no --help group (config/options_help.c)", config_options[i].flag);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_eviction_fields),
		cmocka_unit_test(test_message_kept_whole),
		cmocka_unit_test(test_message_ids),
		cmocka_unit_test(test_stream_match),
		cmocka_unit_test(test_suggest_flags_and_signals),
		cmocka_unit_test(test_every_option_grouped),
	};

	return cmocka_run_group_tests_name("journal", tests, NULL, NULL);
}
