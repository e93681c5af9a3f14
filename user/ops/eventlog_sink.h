/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Where the decision log's lines go (ops/eventlog.h): standard output, nothing, or a file
 * bounded by size. A file that would grow past max_size is rotated first, in its own
 * directory: path.(N-1) -> path.N ... path -> path.1, then path opened anew; the oldest beyond
 * max_files is overwritten by the rename. A few renames and one open: the loop never waits
 * on it (doc/DESIGN.md, "The loop never waits"). Write and rotation failures (ENOSPC) are
 * not fatal: logged once per change of error, and once when writing works again.
 */
#ifndef EVICTD_EVENTLOG_SINK_H
#define EVICTD_EVENTLOG_SINK_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum eventlog_sink_kind {
	SINK_STDOUT,
	SINK_FILE,
	SINK_NONE,
};

struct eventlog_sink {
	enum eventlog_sink_kind kind;
	char path[PATH_MAX];
	int fd;			/* STDOUT_FILENO, the file, or -1 (a file to open before the next write) */
	bool regular;		/* a regular file: rotated; a character device is not */
	int64_t size;		/* of the file, as far as we know (fstat at open + our writes) */
	int64_t max_size;	/* rotate before a line would pass it; 0: no cap */
	unsigned max_files;	/* rotated files kept (path.1 ... path.N); 0: path is removed */
	bool broken_line;	/* a write failed mid-line: start the next with a newline */
	int last_write_err;	/* logged once per change */
	int last_rotate_err;
};

/* path: NULL, "" or "-" standard output; "off" nothing; else the file (see eventlog.h). */
int eventlog_sink_open(struct eventlog_sink *sink, const char *path, int64_t max_size,
		       unsigned max_files);
void eventlog_sink_close(struct eventlog_sink *sink);
/* SIGHUP: open path anew (an external logrotate moved it). 0 or -errno (old fd kept). */
int eventlog_sink_reopen(struct eventlog_sink *sink);
/* One whole line (with its '\n'), rotating first when it would pass the cap. 0 or -errno. */
int eventlog_sink_write(struct eventlog_sink *sink, const char *line, size_t len);

#endif
