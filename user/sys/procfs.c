// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Whole-node reads of /proc: see procfs.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sys/fileio.h"
#include "sys/procfs.h"

int64_t procfs_count_zombies(const char *root)
{
	char path[4096];
	struct dirent *entry;
	int64_t zombies = 0;
	int proc_fd;
	DIR *dir;

	if (fileio_join_root(path, sizeof(path), root, "/proc"))
		return -ENAMETOOLONG;
	proc_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (proc_fd < 0)
		return -errno;
	dir = fdopendir(proc_fd);
	if (!dir) {
		int err = -errno;

		close(proc_fd);
		return err;
	}
	while ((entry = readdir(dir))) {
		char name[300], stat[512];
		const char *state;
		ssize_t n;

		if (entry->d_name[0] < '1' || entry->d_name[0] > '9')
			continue;
		snprintf(name, sizeof(name), "%s/stat", entry->d_name);
		n = fileio_read_at(proc_fd, name, stat, sizeof(stat));
		if (n <= 0)
			continue;	/* gone meanwhile */
		/* "pid (comm) S ...": comm may hold spaces and parentheses; the state follows the
		 * last ')'. */
		state = strrchr(stat, ')');
		if (state && state[1] == ' ' && state[2] == 'Z')
			zombies++;
	}
	closedir(dir);
	return zombies;
}

/* include/linux/sched.h: "getting shut down", set by exit_signals() at the start of do_exit. */
#define PF_EXITING 0x00000004u

/* The flags field (the 9th) of a /proc/.../stat line; false when it cannot be parsed. */
static bool stat_flags(const char *stat, unsigned int *flags)
{
	/* "pid (comm) S ppid pgrp session tty_nr tpgid flags ...": comm may hold spaces and
	 * parentheses; the fields follow the last ')'. */
	const char *rest = strrchr(stat, ')');

	return rest && sscanf(rest + 1, " %*c %*d %*d %*d %*d %*d %u", flags) == 1;
}

int procfs_process_exiting(const char *root, pid_t pid)
{
	char path[4096], rel[64];
	struct dirent *entry;
	int task_fd, threads = 0, exiting = 1;
	DIR *dir;

	if (pid <= 0)
		return -EINVAL;
	snprintf(rel, sizeof(rel), "/proc/%d/task", (int)pid);
	if (fileio_join_root(path, sizeof(path), root, rel))
		return -ENAMETOOLONG;
	task_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (task_fd < 0)
		return -errno;
	dir = fdopendir(task_fd);
	if (!dir) {
		int err = -errno;

		close(task_fd);
		return err;
	}
	while ((entry = readdir(dir))) {
		char name[300], stat[1024];
		unsigned int flags;
		ssize_t n;

		if (entry->d_name[0] < '1' || entry->d_name[0] > '9')
			continue;
		snprintf(name, sizeof(name), "%s/stat", entry->d_name);
		n = fileio_read_at(task_fd, name, stat, sizeof(stat));
		if (n <= 0)
			continue;	/* the thread was released meanwhile: it had exited */
		threads++;
		if (!stat_flags(stat, &flags) || !(flags & PF_EXITING)) {
			exiting = 0;
			break;
		}
	}
	closedir(dir);
	return threads ? exiting : -ENOENT;
}
