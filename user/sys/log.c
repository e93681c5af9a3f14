// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sys/log.h"

static enum log_level current_level = LOGLEVEL_INFO;

void log_set_level(enum log_level level)
{
	current_level = level;
}

enum log_level log_get_level(void)
{
	return current_level;
}

static const char *level_name(enum log_level level)
{
	switch (level) {
	case LOGLEVEL_ERR: return "error";
	case LOGLEVEL_WARN: return "warning";
	case LOGLEVEL_INFO: return "info";
	default: return "debug";
	}
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	int saved_errno = errno;
	static int to_journal = -1;
	va_list ap;

	if (level > current_level)
		return;
	if (to_journal < 0)
		to_journal = getenv("JOURNAL_STREAM") != NULL;

	if (to_journal) {
		fprintf(stderr, "<%d>", level);
	} else {
		struct timespec now;
		struct tm tm;
		char stamp[32];

		clock_gettime(CLOCK_REALTIME, &now);
		gmtime_r(&now.tv_sec, &tm);
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
		fprintf(stderr, "%s.%03ldZ %s: ", stamp, now.tv_nsec / 1000000, level_name(level));
	}
	va_start(ap, fmt);
	errno = saved_errno;
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	errno = saved_errno;
}
