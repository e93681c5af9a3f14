/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Seams of act/mrelease.c for tests (kill_mrelease_cgroup itself is declared in act/kill.h):
 * how the worker is started and the process_mrelease(2) call. NULL members (or NULL hooks)
 * are the real thing: a detached pthread and the syscall.
 */
#ifndef EVICTD_ACT_MRELEASE_H
#define EVICTD_ACT_MRELEASE_H

struct kill_mrelease_hooks {
	/* Run worker(job) off the caller; 0 or a positive errno, as pthread_create(). */
	int (*spawn)(void *(*worker)(void *), void *job);
	/* process_mrelease(pidfd, flags): 0, or -1 with errno. */
	long (*mrelease)(int pidfd, unsigned int flags);
};

/* Not thread-safe: set before any kill, from the test's main thread. */
void kill_mrelease_set_hooks(const struct kill_mrelease_hooks *hooks);

#endif
