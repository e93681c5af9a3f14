/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What a kill left behind, measured when its cgroup emptied (doc/DESIGN.md, "Acting: one
 * victim per need"): memory still charged to the emptied cgroup (tmpfs and shared memory
 * outlive their processes), tasks not reaped yet (zombies still count in pids.current and in
 * the node's task count), and processes that left the cgroup during their grace: those were
 * signalled as part of the victim and are killed through the pidfds held since.
 */
#ifndef EVICTD_ACT_AFTERMATH_H
#define EVICTD_ACT_AFTERMATH_H

#include "act/kill.h"

/* Fill result's memory_left_bytes, shmem_left_bytes and tasks_left from the emptied cgroup
 * (dir_fd; a removed cgroup leaves them -1). */
void aftermath_measure(int dir_fd, struct kill_result *result);

/* The tracked processes still alive: outside the cgroup now (it is empty). One whose every
 * thread is exiting (PF_EXITING: out of its cgroup since cgroup_exit, not a zombie yet) is
 * dying, not escaped. Each other is SIGKILLed through its pidfd when kill_them (exactly the
 * process that was signalled); counts in result->escaped and escaped_killed; the first one's
 * new cgroup in escaped_to (read from proc_root/proc/<pid>/cgroup; proc_root/proc/<pid>/task
 * for the threads). */
void aftermath_escaped(struct kill_tracked *tracked, const char *proc_root, bool kill_them,
		       struct kill_result *result);

#endif
