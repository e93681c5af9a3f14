/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Small-file I/O, written once: cgroup and proc files, state files, drop-ins. Every call
 * returns 0 (or a length) or a negative errno and leaves logging to the caller, who knows
 * what the file is for. */
#ifndef EVICTD_SYS_FILEIO_H
#define EVICTD_SYS_FILEIO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Read at most len - 1 bytes of name (relative to dir_fd; AT_FDCWD for a plain path) and
 * NUL-terminate. O_NONBLOCK, so a FIFO planted where a file should be cannot hang the
 * caller; anything but a regular file, a proc/sysfs/cgroupfs file included, is read the
 * same way. Returns the length read or negative errno. */
ssize_t fileio_read_at(int dir_fd, const char *name, char *buf, size_t len);
/* The same with pread at offset 0 on an fd the caller keeps open. */
ssize_t fileio_pread_fd(int fd, char *buf, size_t len);
/* One write(2) of text to name (relative to dir_fd), opened O_WRONLY|O_NOFOLLOW: kernel
 * interface files take a value in one write. 0 or negative errno (-EIO: short write). */
int fileio_write_at(int dir_fd, const char *name, const char *text);
/* Write data to path atomically: a temporary file beside it, fsync, rename, fsync of the
 * directory. mode for the new file. 0 or negative errno; the temporary file never stays. */
int fileio_write_atomic(const char *path, const void *data, size_t len, mode_t mode);
/* open(2) with O_NONBLOCK|O_CLOEXEC added, then fstat: the fd, or negative errno; -EINVAL
 * (nothing left open) when it is not a regular file. A FIFO or device planted where a file
 * should be is refused instead of waited on. st may be NULL. */
int fileio_open_regular(const char *path, int flags, mode_t mode, struct stat *st);
/* The root prefix every path of evictd is read under (--root, tests' fixture trees): NULL,
 * "" and "/" are this machine. */
bool fileio_root_is_host(const char *root);
/* root + path into buf; -ENAMETOOLONG when it does not fit. */
int fileio_join_root(char *buf, size_t len, const char *root, const char *path);
/* mkdir -p: create path and its missing parents with mode. 0 (also when it exists as a
 * directory) or negative errno. */
int fileio_mkdir_p(const char *path, mode_t mode);

#endif
