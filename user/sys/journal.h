/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Native journald entries behind sys/log: when stderr is the journal, a line becomes an entry
 * with PRIORITY, MESSAGE, a MESSAGE_ID for the kinds operators query (eviction, decision,
 * cannot act, shutdown) and the caller's fields (POD, SIGNAL, ...). doc/DESIGN.md §9. */
#ifndef EVICTD_SYS_JOURNAL_H
#define EVICTD_SYS_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

#include "sys/log.h"

/* The MESSAGE_IDs (made once with `systemd-id128 new`; listed in DESIGN.md and evictd(8)). */
#define JOURNAL_ID_EVICTION "823644b284b8464ca1d522d0379e6c3c"
#define JOURNAL_ID_DECISION "28c4b7bb6289457ba4bf3e558768d298"
#define JOURNAL_ID_CANNOT_ACT "ff5d96766e0348879d2bd62375c99249"
#define JOURNAL_ID_SHUTDOWN "a52db0921d134c3cbba0d024c3a11148"

/* A kind's MESSAGE_ID (32 hex digits), NULL for LOG_KIND_PLAIN. */
const char *journal_message_id(enum log_kind kind);

/* Whether stderr is journald's stream: JOURNAL_STREAM is "DEV:INO" of it (systemd.exec(5)
 * "$JOURNAL_STREAM": compare with fstat(2) of fd 2, since a child whose stderr was redirected
 * inherits the variable). */
bool journal_stream_is(int fd, const char *journal_stream);

#define JOURNAL_MAX_FIELDS 16
#define JOURNAL_BUF 6144

/* One entry as the iovecs sd_journal_sendv takes, "NAME=value" each, in buf. */
struct journal_entry {
	struct iovec iov[JOURNAL_MAX_FIELDS + 6];
	size_t n;
	char buf[JOURNAL_BUF];
	size_t used;
};

/* Build the entry: PRIORITY, SYSLOG_IDENTIFIER=evictd, MESSAGE_ID (for a kind), CODE_FILE and
 * CODE_LINE (when file is not NULL), then each field whose name journald accepts (A-Z, 0-9, _,
 * not starting with _ or a digit, at most 64 bytes; others are dropped) and whose value is not
 * NULL, then MESSAGE. A value is cut to fit buf; MESSAGE always fits (the fields give way). */
void journal_build(struct journal_entry *entry, enum log_level level, enum log_kind kind,
		   const struct log_field *fields, size_t n_fields, const char *file, int line,
		   const char *message);
/* sd_journal_sendv: 0 or -errno (the caller falls back to the stream). */
int journal_send(const struct journal_entry *entry);

#endif
