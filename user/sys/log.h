/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef EVICTD_LOG_H
#define EVICTD_LOG_H

#include <stddef.h>

/* Levels follow syslog's numbering so journald shows them with the right priority. */
enum log_level {
	LOGLEVEL_ERR = 3,
	LOGLEVEL_WARN = 4,
	LOGLEVEL_INFO = 6,
	LOGLEVEL_DEBUG = 7,
};

/* What an entry reports, for the journal's MESSAGE_ID (sys/journal.h): operators list the
 * evictions with `journalctl MESSAGE_ID=...` whatever the text says. */
enum log_kind {
	LOG_KIND_PLAIN,
	LOG_KIND_EVICTION,	/* a victim killed (or its kill failed) */
	LOG_KIND_DECISION,	/* a threshold met and the victim chosen, or no longer met */
	LOG_KIND_CANNOT_ACT,	/* evictd cannot evict on this node (DESIGN.md "Cannot act") */
	LOG_KIND_SHUTDOWN,	/* graceful node shutdown began or ended */
};

/* A structured field: NAME (journald's rules: A-Z, 0-9, _) and its value; a NULL value is
 * left out. Only the journal shows them; the text line must say what matters on its own. */
struct log_field {
	const char *name;
	const char *value;
};

void log_set_level(enum log_level level);
/* While set (the command line is being read), lines are "PROGRAM: message" without a
 * timestamp or level: a usage error reads like any command's. NULL: back to log lines. */
void log_set_program(const char *program);
enum log_level log_get_level(void);
/* Lines go to stderr; when stderr is the journal (JOURNAL_STREAM names it) they are native
 * journal entries, or "<N>"-prefixed stream lines if journald cannot be reached. */
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One entry with fields: under journald a native entry (MESSAGE_ID of kind, the fields,
 * CODE_FILE, CODE_LINE), else the same text line as log_msg. */
void log_entry(enum log_level level, enum log_kind kind, const struct log_field *fields,
	       size_t n_fields, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));
#define log_event(level, kind, fields, n_fields, ...) \
	log_entry(level, kind, fields, n_fields, __FILE__, __LINE__, __VA_ARGS__)

/* errno is preserved across these, so "%m" reports the failing call's error. */
#define log_err(...) log_msg(LOGLEVEL_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOGLEVEL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOGLEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOGLEVEL_DEBUG, __VA_ARGS__)

#endif
