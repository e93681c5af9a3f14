// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * One log line is one write(2) to stderr, whatever thread logs it: the line is formatted into
 * a buffer on the stack first. Several stdio calls per line (prefix, message, newline) let
 * lines from the memory.reclaim worker and the loop interleave mid-line in the journal.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sys/journal.h"
#include "sys/log.h"

/* At most PIPE_BUF (4096 on Linux): a write of that size to a pipe (journald's stream, a
 * test's pipe) is atomic even with other writers, so lines never interleave there either. */
#define LOG_LINE_MAX 4096
#define LOG_ELLIPSIS "...\n"

static int current_level = LOGLEVEL_INFO;

void log_set_level(enum log_level level)
{
	__atomic_store_n(&current_level, (int)level, __ATOMIC_RELAXED);
}

enum log_level log_get_level(void)
{
	return (enum log_level)__atomic_load_n(&current_level, __ATOMIC_RELAXED);
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

static const char *program;

void log_set_program(const char *name)
{
	__atomic_store_n(&program, name, __ATOMIC_RELEASE);
}

static bool to_journal(void)
{
	/* -1 unknown; racing threads compute the same answer, so a plain relaxed store is fine. */
	static int cached = -1;
	int value = __atomic_load_n(&cached, __ATOMIC_RELAXED);

	if (value < 0) {
		value = journal_stream_is(STDERR_FILENO, getenv("JOURNAL_STREAM"));
		__atomic_store_n(&cached, value, __ATOMIC_RELAXED);
	}
	return value;
}

static void write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;	/* nowhere to report a failing stderr */
		buf += n;
		len -= (size_t)n;
	}
}

/* Control characters in the message (a pod name, a namespace or an xattr value with a newline
 * or a terminal escape) would forge log lines or drive the reader's terminal: shown as \xNN.
 * Returns the new length; the text may be cut to fit. */
static size_t escape_controls(char *text, size_t len, size_t size)
{
	char copy[LOG_LINE_MAX];
	size_t out = 0;

	if (len > sizeof(copy))
		len = sizeof(copy);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f)
			goto escape;
	return len;
escape:
	memcpy(copy, text, len);
	for (size_t i = 0; i < len && out + 4 < size; i++) {
		unsigned char c = (unsigned char)copy[i];

		if (c < 0x20 || c == 0x7f)
			out += (size_t)snprintf(text + out, size - out, "\\x%02x", c);
		else
			text[out++] = (char)c;
	}
	return out;
}

/* Format one line: prefix (none under the journal, where it is PRIORITY), the message with
 * control characters escaped, cut to fit with "...", and a newline. Returns where the
 * message starts; *len is the whole line's length. */
static size_t format_line(char *line, size_t size, enum log_level level, bool journal,
			  int saved_errno, size_t *len, const char *fmt, va_list ap)
{
	const char *prog = __atomic_load_n(&program, __ATOMIC_ACQUIRE);
	size_t start, room;
	int n;

	if (journal) {
		n = 0;
	} else if (prog) {
		/* "evictd: unknown option ..." as getopt-style tools print; a warning says so. */
		n = snprintf(line, size, "%s: %s", prog, level == LOGLEVEL_ERR ? "" :
			     level == LOGLEVEL_WARN ? "warning: " : level == LOGLEVEL_INFO ? "" : "debug: ");
	} else {
		struct timespec now;
		struct tm tm;
		char stamp[32];

		clock_gettime(CLOCK_REALTIME, &now);
		gmtime_r(&now.tv_sec, &tm);
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
		n = snprintf(line, size, "%s.%03ldZ %s: ", stamp, now.tv_nsec / 1000000,
			     level_name(level));
	}
	start = n > 0 ? (size_t)n : 0;

	/* Room for the message and its newline; a longer message is cut and ends in "...". */
	room = size - start;
	errno = saved_errno;	/* for %m */
	n = vsnprintf(line + start, room, fmt, ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= room)
		n = (int)room - 1;
	n = (int)escape_controls(line + start, (size_t)n, room);
	if ((size_t)n + 1 < room) {
		*len = start + (size_t)n;
		line[(*len)++] = '\n';
	} else {
		*len = size;
		memcpy(line + size - strlen(LOG_ELLIPSIS), LOG_ELLIPSIS, strlen(LOG_ELLIPSIS));
	}
	return start;
}

static void vlog(enum log_level level, enum log_kind kind, const struct log_field *fields,
		 size_t n_fields, const char *file, int line_no, int saved_errno, const char *fmt,
		 va_list ap)
{
	bool journal = to_journal();
	char line[LOG_LINE_MAX + 1];
	size_t len, start;

	start = format_line(line, LOG_LINE_MAX, level, journal, saved_errno, &len, fmt, ap);
	if (journal) {
		struct journal_entry entry;

		line[len - 1] = '\0';	/* MESSAGE without the newline */
		journal_build(&entry, level, kind, fields, n_fields, file, line_no, line + start);
		if (journal_send(&entry) == 0)
			return;
		/* journald's socket is not reachable (a sandbox): the stream still is. */
		line[len - 1] = '\n';
		{
			char prefixed[LOG_LINE_MAX + 8];
			int n = snprintf(prefixed, sizeof(prefixed), "<%d>%s", level, line);

			write_all(STDERR_FILENO, prefixed, n > 0 ? (size_t)n : 0);
		}
		return;
	}
	write_all(STDERR_FILENO, line, len);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	int saved_errno = errno;
	va_list ap;

	if ((int)level > __atomic_load_n(&current_level, __ATOMIC_RELAXED))
		return;
	va_start(ap, fmt);
	vlog(level, LOG_KIND_PLAIN, NULL, 0, NULL, 0, saved_errno, fmt, ap);
	va_end(ap);
	errno = saved_errno;
}

void log_entry(enum log_level level, enum log_kind kind, const struct log_field *fields,
	       size_t n_fields, const char *file, int line, const char *fmt, ...)
{
	int saved_errno = errno;
	va_list ap;

	if ((int)level > __atomic_load_n(&current_level, __ATOMIC_RELAXED))
		return;
	va_start(ap, fmt);
	vlog(level, kind, fields, n_fields, file, line, saved_errno, fmt, ap);
	va_end(ap);
	errno = saved_errno;
}
