/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef EVICTD_LOG_H
#define EVICTD_LOG_H

/* Levels follow syslog's numbering so journald shows them with the right priority. */
enum log_level {
	LOGLEVEL_ERR = 3,
	LOGLEVEL_WARN = 4,
	LOGLEVEL_INFO = 6,
	LOGLEVEL_DEBUG = 7,
};

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* Lines go to stderr with a "<N>" prefix when stderr is the journal (JOURNAL_STREAM set). */
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* errno is preserved across these, so "%m" reports the failing call's error. */
#define log_err(...) log_msg(LOGLEVEL_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOGLEVEL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOGLEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOGLEVEL_DEBUG, __VA_ARGS__)

#endif
