// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Native journal entries (sys/journal.h). The entry is built into a buffer on the stack, so a
 * logging thread allocates nothing, as sys/log's stream lines. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
/* sd-journal.h otherwise makes sd_journal_sendv add its own CODE_FILE/CODE_LINE/CODE_FUNC
 * (this file's): the entry carries the caller's, from log_event. */
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "sys/journal.h"

const char *journal_message_id(enum log_kind kind)
{
	switch (kind) {
	case LOG_KIND_EVICTION: return JOURNAL_ID_EVICTION;
	case LOG_KIND_DECISION: return JOURNAL_ID_DECISION;
	case LOG_KIND_CANNOT_ACT: return JOURNAL_ID_CANNOT_ACT;
	case LOG_KIND_SHUTDOWN: return JOURNAL_ID_SHUTDOWN;
	default: return NULL;
	}
}

bool journal_stream_is(int fd, const char *journal_stream)
{
	unsigned long long dev, ino;
	struct stat st;
	int end = 0;

	if (!journal_stream || sscanf(journal_stream, "%llu:%llu%n", &dev, &ino, &end) != 2 ||
	    journal_stream[end] != '\0')
		return false;
	return fstat(fd, &st) == 0 && (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

/* journald's rule for a field name (journal_field_valid in systemd's journal-file.c):
 * upper case, digits and '_', not starting with '_' (trusted fields) or a digit, <= 64. */
static bool field_name_valid(const char *name)
{
	size_t len = name ? strlen(name) : 0;

	if (len == 0 || len > 64 || name[0] == '_' || (name[0] >= '0' && name[0] <= '9'))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= '0' && name[i] <= '9') ||
		      name[i] == '_'))
			return false;
	return true;
}

/* Append "NAME=value" (value cut to leave keep bytes of buf free). */
static void put(struct journal_entry *entry, const char *name, const char *value, size_t keep)
{
	size_t room = sizeof(entry->buf) - entry->used, need = strlen(name) + 1;
	size_t len = strlen(value);
	char *at = entry->buf + entry->used;

	if (entry->n >= sizeof(entry->iov) / sizeof(entry->iov[0]) || room < need + keep + 1)
		return;
	if (len > room - need - keep)
		len = room - need - keep;
	memcpy(at, name, need - 1);
	at[need - 1] = '=';
	memcpy(at + need, value, len);
	entry->iov[entry->n++] = (struct iovec){ .iov_base = at, .iov_len = need + len };
	entry->used += need + len;
}

void journal_build(struct journal_entry *entry, enum log_level level, enum log_kind kind,
		   const struct log_field *fields, size_t n_fields, const char *file, int line,
		   const char *message)
{
	/* MESSAGE keeps its room: at most a log line (sys/log cuts it to LOG_LINE_MAX). */
	size_t keep = strlen("MESSAGE=") + strnlen(message, 4096) + 1;
	const char *id = journal_message_id(kind);
	char number[16];

	entry->n = 0;
	entry->used = 0;
	snprintf(number, sizeof(number), "%d", (int)level);
	put(entry, "PRIORITY", number, keep);
	put(entry, "SYSLOG_IDENTIFIER", "evictd", keep);
	if (id)
		put(entry, "MESSAGE_ID", id, keep);
	if (file) {
		put(entry, "CODE_FILE", file, keep);
		snprintf(number, sizeof(number), "%d", line);
		put(entry, "CODE_LINE", number, keep);
	}
	for (size_t i = 0; i < n_fields && entry->n < JOURNAL_MAX_FIELDS + 5; i++)
		if (fields[i].value && field_name_valid(fields[i].name))
			put(entry, fields[i].name, fields[i].value, keep);
	put(entry, "MESSAGE", message, 0);
}

int journal_send(const struct journal_entry *entry)
{
	return sd_journal_sendv(entry->iov, (int)entry->n);
}
