// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/fileio.h"

ssize_t fileio_pread_fd(int fd, char *buf, size_t len)
{
	ssize_t n;

	if (!len)
		return -EINVAL;
	n = pread(fd, buf, len - 1, 0);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return n;
}

ssize_t fileio_read_at(int dir_fd, const char *name, char *buf, size_t len)
{
	size_t used = 0;
	int fd, err = 0;

	if (!len)
		return -EINVAL;
	fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	while (used < len - 1) {
		ssize_t n = read(fd, buf + used, len - 1 - used);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	buf[used] = '\0';
	return err ? err : (ssize_t)used;
}

int fileio_write_at(int dir_fd, const char *name, const char *text)
{
	size_t len = strlen(text);
	ssize_t n;
	int fd, err = 0;

	fd = openat(dir_fd, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	if (n < 0)
		err = -errno;
	else if ((size_t)n != len)
		err = -EIO;
	close(fd);
	return err;
}

int fileio_write_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	char tmp[PATH_MAX], dir[PATH_MAX];
	const char *p = data;
	int fd, err = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	while (len && !err) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			err = n < 0 ? -errno : -EIO;
		else {
			p += n;
			len -= (size_t)n;
		}
	}
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		unlink(tmp);
		return err;
	}
	/* The rename is durable once the directory is. */
	snprintf(dir, sizeof(dir), "%s", path);
	fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	return 0;
}

int fileio_open_regular(const char *path, int flags, mode_t mode, struct stat *st)
{
	struct stat local;
	int fd, err;

	if (!st)
		st = &local;
	fd = open(path, flags | O_NONBLOCK | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st)) {
		err = -errno;
		close(fd);
		return err;
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

bool fileio_root_is_host(const char *root)
{
	return !root || !root[0] || (root[0] == '/' && !root[1]);
}

int fileio_join_root(char *buf, size_t len, const char *root, const char *path)
{
	int n = snprintf(buf, len, "%s%s", fileio_root_is_host(root) ? "" : root, path);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int fileio_mkdir_p(const char *path, mode_t mode)
{
	char copy[PATH_MAX];
	struct stat st;

	if ((size_t)snprintf(copy, sizeof(copy), "%s", path) >= sizeof(copy))
		return -ENAMETOOLONG;
	for (char *p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(copy, mode) && errno != EEXIST)
		return -errno;
	if (stat(copy, &st))
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}
