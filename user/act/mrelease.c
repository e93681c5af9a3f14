// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory back at once after cgroup.kill: process_mrelease(2) (Linux 5.15) on every process
 * of the killed cgroup. A SIGKILLed process frees its memory only when it runs its own exit,
 * which a busy CPU, a task in uninterruptible sleep or a thousand siblings exiting one after
 * another can delay; process_mrelease() reaps the address space of a dying process from the
 * caller's context, as the kernel's oom_reaper does (mm/oom_kill.c, SYSCALL_DEFINE2
 * process_mrelease: -EINVAL unless the task will free its mm). The pidfds are opened in the
 * loop right after cgroup.kill (a few microseconds each); the reaping, which takes as long as
 * unmapping the memory does, runs in a detached worker thread, so the loop never waits. A
 * kernel without the syscall (ENOSYS) or without pidfd_open is remembered, logged once, and
 * never asked again. doc/DESIGN.md "Killing".
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "act/kill.h"
#include "act/mrelease.h"
#include "sys/cgroupfs.h"
#include "sys/log.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_process_mrelease
#define SYS_process_mrelease 448
#endif

/* Reaped only in pods of at most this many processes: many processes tear down their own
 * address spaces in parallel as they exit, and one thread reaping them one by one competes
 * with that (bench/results.md, scale-bench memkill in the guest: 1,000 processes holding
 * 300 MiB came back in 1065 ms with it, 872 ms without). */
#define MRELEASE_MAX_PROCESSES 16

static atomic_bool unsupported;
static struct kill_mrelease_hooks hooks;

void kill_mrelease_set_hooks(const struct kill_mrelease_hooks *set)
{
	hooks = set ? *set : (struct kill_mrelease_hooks){ 0 };
}

static long do_mrelease(int pidfd)
{
	if (hooks.mrelease)
		return hooks.mrelease(pidfd, 0);
	return syscall(SYS_process_mrelease, pidfd, 0);
}

static int spawn_detached(void *(*worker)(void *), void *job)
{
	pthread_attr_t attr;
	pthread_t thread;
	int err;

	if (hooks.spawn)
		return hooks.spawn(worker, job);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	err = pthread_create(&thread, &attr, worker, job);
	pthread_attr_destroy(&attr);
	return err;
}

struct mrelease_job {
	size_t n, cap;
	int *pidfds;
	bool too_many;
};

static void say_unsupported(const char *what)
{
	if (!atomic_exchange(&unsupported, true))
		log_info("kill: this kernel has no %s; memory of killed pods comes back as their "
			 "processes exit", what);
}

static int open_pidfd(pid_t pid, void *ctx)
{
	struct mrelease_job *job = ctx;
	int fd;

	if (atomic_load(&unsupported))
		return 0;
	if (job->n == MRELEASE_MAX_PROCESSES) {
		job->too_many = true;
		return 1;	/* stop the walk */
	}
	if (job->n == job->cap) {
		size_t cap = job->cap ? job->cap * 2 : 64;
		int *grown = realloc(job->pidfds, cap * sizeof(*grown));

		if (!grown)
			return 0;
		job->pidfds = grown;
		job->cap = cap;
	}
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0) {
		if (errno == ENOSYS)
			say_unsupported("pidfd_open(2) (Linux < 5.3)");
		return 0;	/* ESRCH: it has exited already */
	}
	job->pidfds[job->n++] = fd;
	return 0;
}

static void *mrelease_worker(void *arg)
{
	struct mrelease_job *job = arg;

	for (size_t i = 0; i < job->n; i++) {
		/* EINVAL: not dying (yet) or its mm shared with a live process; ESRCH: gone. */
		if (!atomic_load(&unsupported) &&
		    do_mrelease(job->pidfds[i]) && errno == ENOSYS)
			say_unsupported("process_mrelease(2) (Linux < 5.15)");
		close(job->pidfds[i]);
	}
	free(job->pidfds);
	free(job);
	return NULL;
}

int64_t kill_mrelease_cgroup(int dir_fd)
{
	struct mrelease_job *job;
	size_t handed;
	int err;

	if (atomic_load(&unsupported))
		return -ENOSYS;
	job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	cgroupfs_for_each_pid(dir_fd, open_pidfd, job);
	if (job->too_many) {
		for (size_t i = 0; i < job->n; i++)
			close(job->pidfds[i]);
		job->n = 0;
	}
	if (!job->n) {
		free(job->pidfds);
		free(job);
		return 0;
	}
	/* The job is the worker's from here: it may be freed before spawn returns. */
	handed = job->n;
	err = spawn_detached(mrelease_worker, job);
	if (err) {
		/* No thread: the processes still exit on their own; nothing is lost but time. */
		job->n = 0;
		for (size_t i = 0; i < handed; i++)
			close(job->pidfds[i]);
		mrelease_worker(job);
		return -err;
	}
	return (int64_t)handed;
}

bool kill_mrelease_supported(void)
{
	return !atomic_load(&unsupported);
}
