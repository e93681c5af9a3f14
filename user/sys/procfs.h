/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Whole-node reads of /proc that no single file answers. */
#ifndef EVICTD_SYS_PROCFS_H
#define EVICTD_SYS_PROCFS_H

#include <stdint.h>
#include <sys/types.h>

/* Processes in state Z (exited, not yet reaped by their parent) under root's /proc: each still
 * holds its pid and counts in /proc/loadavg's task total. Negative errno when /proc cannot be
 * listed. */
int64_t procfs_count_zombies(const char *root);

/* Whether process pid is on its way out: every thread listed in root's /proc/PID/task has
 * entered do_exit (PF_EXITING in its stat flags, set before the thread leaves its cgroup in
 * cgroup_exit). A killed process stays in that state, out of its cgroup yet with a pidfd that
 * does not poll readable, until its last thread's exit_notify. 1 exiting, 0 a thread has not
 * started to exit, negative errno (-ENOENT: no such process, or no thread left). */
int procfs_process_exiting(const char *root, pid_t pid);

#endif
