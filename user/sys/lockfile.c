// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/fileio.h"
#include "sys/lockfile.h"

int lockfile_take(const char *path, int *fd_out, pid_t *holder)
{
	char dir[PATH_MAX], text[32];
	ssize_t n;
	int fd, err;

	*fd_out = -1;
	*holder = 0;
	if ((size_t)snprintf(dir, sizeof(dir), "%s", path) >= sizeof(dir))
		return -ENAMETOOLONG;
	err = fileio_mkdir_p(dirname(dir), 0755);
	if (err)
		return err;
	fd = fileio_open_regular(path, O_RDWR | O_CREAT | O_NOFOLLOW, 0644, NULL);
	if (fd < 0)
		return fd;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		err = -errno;
		n = pread(fd, text, sizeof(text) - 1, 0);
		if (n > 0) {
			text[n] = '\0';
			*holder = (pid_t)strtol(text, NULL, 10);
		}
		close(fd);
		return err == -EAGAIN ? -EWOULDBLOCK : err;
	}
	n = snprintf(text, sizeof(text), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, text, (size_t)n, 0) != n) {
		err = -errno;
		close(fd);
		return err;
	}
	*fd_out = fd;
	return 0;
}
