/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* One evictd per node: an exclusive lock taken before anything is touched (doc/DESIGN.md,
 * "One instance"). */
#ifndef EVICTD_SYS_LOCKFILE_H
#define EVICTD_SYS_LOCKFILE_H

#include <sys/types.h>

/* flock(LOCK_EX|LOCK_NB) on the regular file at path (made 0644 with its directory when
 * missing), then our pid written in it. 0 and *fd, kept open for the process's lifetime;
 * -EWOULDBLOCK when another process holds it (*holder: its pid as it wrote it, 0 unknown);
 * or another negative errno. A symlink or a non-regular file at path is refused. */
int lockfile_take(const char *path, int *fd, pid_t *holder);

#endif
