// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Whole-node reads of /proc: see procfs.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
