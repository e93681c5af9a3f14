// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The decision log's output: stdout, nothing, or a size-bounded file (ops/eventlog_sink.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops/eventlog_sink.h"
#include "sys/log.h"

/* Room for ".NNN" after the path. */
#define ROTATED_SUFFIX_MAX 8

/*
 * The log file: a regular file, or a character device (/dev/null, a terminal). Opened
 * O_NONBLOCK: opening a FIFO for writing otherwise waits for a reader, for ever, with the
 * daemon's signals blocked (it could not even be stopped); with it a FIFO without a reader
 * fails with ENXIO, and anything that is neither a regular file nor a character device (a
 * FIFO with a reader, a socket, a block device) is refused after fstat. The flag stays: a
 * write to a terminal must not stop the loop either (doc/DESIGN.md, "The loop never
 * waits"). Standard output, whatever it is, is --event-log=-.
 */
static int open_log_file(const char *path, struct stat *st)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0640);

	if (fd < 0) {
		int err = -errno;

		if (err == -ENXIO) {
			log_err("event log %s: a FIFO or socket, not a regular file (--event-log=- writes to "
				"standard output)", path);
			return -EINVAL;
		}
		log_err("event log %s: %m", path);
		return err;
	}
	if (fstat(fd, st)) {
		int err = -errno;

		log_err("event log %s: fstat: %m", path);
		close(fd);
		return err;
	}
	if (!S_ISREG(st->st_mode) && !S_ISCHR(st->st_mode)) {
		log_err("event log %s: a %s, not a regular file or character device (--event-log=- writes "
			"to standard output)", path, S_ISFIFO(st->st_mode) ? "FIFO" : S_ISSOCK(st->st_mode) ? "socket" :
			S_ISBLK(st->st_mode) ? "block device" : "special file");
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/* Switch to a newly opened fd (old one closed). */
static void use_fd(struct eventlog_sink *sink, int fd, const struct stat *st)
{
	if (sink->fd >= 0)
		close(sink->fd);
	sink->fd = fd;
	sink->regular = S_ISREG(st->st_mode);
	sink->size = sink->regular ? st->st_size : 0;
}

int eventlog_sink_open(struct eventlog_sink *sink, const char *path, int64_t max_size,
		       unsigned max_files)
{
	struct stat st;
	int fd;

	*sink = (struct eventlog_sink){ .fd = -1, .max_size = max_size, .max_files = max_files };
	if (!path || !path[0] || !strcmp(path, "-")) {
		sink->kind = SINK_STDOUT;
		sink->fd = STDOUT_FILENO;
		return 0;
	}
	if (!strcmp(path, "off")) {
		sink->kind = SINK_NONE;
		return 0;
	}
	if (strlen(path) >= sizeof(sink->path) - ROTATED_SUFFIX_MAX) {
		log_err("event log %s: path too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(sink->path, path);
	sink->kind = SINK_FILE;
	fd = open_log_file(path, &st);
	if (fd < 0)
		return fd;
	use_fd(sink, fd, &st);
	return 0;
}

void eventlog_sink_close(struct eventlog_sink *sink)
{
	if (sink->kind == SINK_FILE && sink->fd >= 0)
		close(sink->fd);
	sink->fd = -1;
}

int eventlog_sink_reopen(struct eventlog_sink *sink)
{
	struct stat st;
	int fd;

	if (sink->kind != SINK_FILE)
		return 0;
	fd = open_log_file(sink->path, &st);
	if (fd < 0) {
		log_err("event log: keeping the old file open after the failed reopen");
		return fd;
	}
	use_fd(sink, fd, &st);
	log_info("event log %s reopened", sink->path);
	return 0;
}

static void rotated_name(const struct eventlog_sink *sink, unsigned n, char *buf, size_t len)
{
	snprintf(buf, len, "%s.%u", sink->path, n);
}

static void note_rotate_err(struct eventlog_sink *sink, int err, const char *what, const char *path)
{
	if (err != sink->last_rotate_err)
		log_err("event log %s: rotation: %s %s: %s", sink->path, what, path, strerror(-err));
	sink->last_rotate_err = err;
}

/*
 * path -> path.1, path.1 -> path.2 ..., the oldest (path.max_files) replaced by the rename;
 * then path opened anew. When path is no longer the file we write (an external logrotate
 * moved it and SIGHUP has not come yet), that other file is left alone: we only reopen.
 * Whatever fails, the fd is closed when the renames were done, so the cap holds; the next
 * write opens path again.
 */
static void rotate(struct eventlog_sink *sink)
{
	char from[PATH_MAX + 16], to[PATH_MAX + 16];	/* path is shorter by ROTATED_SUFFIX_MAX */
	struct stat ours, named;
	int fd, err = 0;
	bool same = sink->fd >= 0 && !fstat(sink->fd, &ours) && !stat(sink->path, &named) &&
		    ours.st_dev == named.st_dev && ours.st_ino == named.st_ino;

	if (same) {
		for (unsigned n = sink->max_files; n > 1; n--) {
			rotated_name(sink, n - 1, from, sizeof(from));
			rotated_name(sink, n, to, sizeof(to));
			if (rename(from, to) && errno != ENOENT) {
				err = -errno;
				note_rotate_err(sink, err, "rename", from);
			}
		}
		rotated_name(sink, 1, to, sizeof(to));
		if (sink->max_files ? rename(sink->path, to) : unlink(sink->path)) {
			err = -errno;
			note_rotate_err(sink, err, sink->max_files ? "rename" : "unlink", sink->path);
			return;	/* still the same file: the next line tries again */
		}
	}
	if (sink->fd >= 0)
		close(sink->fd);
	sink->fd = -1;
	sink->size = 0;
	fd = open_log_file(sink->path, &ours);
	if (fd < 0) {
		note_rotate_err(sink, fd, "open", sink->path);
		return;
	}
	use_fd(sink, fd, &ours);
	if (!err && sink->last_rotate_err) {
		log_info("event log %s: rotating again", sink->path);
		sink->last_rotate_err = 0;
	}
}

static int write_all(struct eventlog_sink *sink, const char *data, size_t len, size_t *done)
{
	*done = 0;
	while (*done < len) {
		ssize_t n = write(sink->fd, data + *done, len - *done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		*done += (size_t)n;
		sink->size += n;
	}
	return 0;
}

/* One write of the whole line: with O_APPEND, concurrent writers (a second evictd, a test
 * appending markers) never split a line. Short writes are completed. */
int eventlog_sink_write(struct eventlog_sink *sink, const char *line, size_t len)
{
	size_t done = 0;
	int err;

	if (sink->kind == SINK_NONE)
		return 0;
	if (sink->kind == SINK_STDOUT)
		fflush(stdout);	/* keep order with the daemon's stdio reports */
	if (sink->kind == SINK_FILE && (sink->fd < 0 ||
	    (sink->regular && sink->max_size > 0 && sink->size > 0 &&
	     sink->size + (int64_t)len + sink->broken_line > sink->max_size)))
		rotate(sink);
	if (sink->fd < 0) {
		err = sink->last_rotate_err ? sink->last_rotate_err : -EBADF;
	} else {
		err = sink->broken_line ? write_all(sink, "\n", 1, &done) : 0;
		if (!err)
			sink->broken_line = false;
		if (!err)
			err = write_all(sink, line, len, &done);
		if (err && done > 0)
			sink->broken_line = true;
	}
	if (err) {
		if (err != sink->last_write_err)
			log_err("event log %s: write: %s", sink->kind == SINK_FILE ? sink->path : "stdout",
				strerror(-err));
		sink->last_write_err = err;
		return err;
	}
	if (sink->last_write_err)
		log_info("event log %s: writing again", sink->kind == SINK_FILE ? sink->path : "stdout");
	sink->last_write_err = 0;
	return 0;
}
