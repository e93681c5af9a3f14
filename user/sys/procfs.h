/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Whole-node reads of /proc that no single file answers. */
#ifndef EVICTD_SYS_PROCFS_H
#define EVICTD_SYS_PROCFS_H

#include <stdint.h>

/* Processes in state Z (exited, not yet reaped by their parent) under root's /proc: each still
 * holds its pid and counts in /proc/loadavg's task total. Negative errno when /proc cannot be
 * listed. */
int64_t procfs_count_zombies(const char *root);

#endif
