// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The cgroup tree walker (sys/cgroupfs.h). One open directory per level of the current path,
 * held on a heap stack: depth costs fds and memory, never correctness. The old recursive
 * walk_procs() in act/kill.c stopped at depth 32 and silently skipped deeper tasks.
 */
#include <dirent.h>
#include <errno.h>
#include <sys/vfs.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/cgroupfs.h"
#include "sys/fileio.h"
#include "sys/log.h"

static bool vanished(int err)
{
	/* Removed between readdir and openat, or not a directory after all. */
	return err == ENOENT || err == ENOTDIR || err == ELOOP || err == ENODEV;
}

static void close_all(DIR **stack, size_t n)
{
	while (n)
		closedir(stack[--n]);
	free(stack);
}

int64_t cgroupfs_walk(int dir_fd, cgroupfs_dir_fn fn, void *ctx)
{
	DIR **stack = NULL, *dir;
	size_t n = 0, cap = 0;
	int64_t visited = 0;
	int first_err = 0, fd, ret;

	fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		ret = -errno;
		close(fd);
		return ret;
	}
	for (;;) {
		struct dirent *entry;

		if (dir) {
			/* A new cgroup: visit it, then descend into it. */
			visited++;
			ret = fn ? fn(ctx, dirfd(dir), (unsigned int)n) : 0;
			if (ret < 0) {
				closedir(dir);
				close_all(stack, n);
				return ret;
			}
			if (n == cap) {
				DIR **grown = realloc(stack, (cap ? cap * 2 : 16) * sizeof(*stack));

				if (!grown) {
					closedir(dir);
					close_all(stack, n);
					return -ENOMEM;
				}
				stack = grown;
				cap = cap ? cap * 2 : 16;
			}
			stack[n++] = dir;
			dir = NULL;
		}
		if (!n)
			break;
		errno = 0;
		entry = readdir(stack[n - 1]);
		if (!entry) {
			closedir(stack[--n]);
			continue;
		}
		if (entry->d_type != DT_DIR && entry->d_type != DT_UNKNOWN)
			continue;
		if (!strcmp(entry->d_name, ".") || !strcmp(entry->d_name, ".."))
			continue;
		fd = openat(dirfd(stack[n - 1]), entry->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			dir = fdopendir(fd);
			if (dir)
				continue;
			close(fd);
		}
		if (vanished(errno))
			continue;
		if (!first_err)
			first_err = -errno;
		log_err("cgroupfs: opening cgroup %s at depth %zu: %m; its subtree is not walked",
			entry->d_name, n);
	}
	free(stack);
	return first_err ? first_err : visited;
}

int cgroupfs_read_populated(int events_fd)
{
	char buf[256];
	const char *key;
	ssize_t n;

	n = pread(events_fd, buf, sizeof(buf) - 1, 0);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	key = strstr(buf, "populated ");
	if (!key || (key != buf && key[-1] != '\n'))
		return -EINVAL;
	return key[10] == '1' ? 1 : key[10] == '0' ? 0 : -EINVAL;
}

int cgroupfs_cgroup_id(int dir_fd, uint64_t *id)
{
	struct stat st;

	if (fstat(dir_fd, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	*id = (uint64_t)st.st_ino;
	return 0;
}

struct pid_walk {
	cgroupfs_pid_fn fn;
	void *ctx;
	int64_t seen;
};

/* Every number in cgroup.procs; one past INT_MAX is garbage and skipped. */
static int procs_of(void *opaque, int dir_fd, unsigned int depth)
{
	struct pid_walk *walk = opaque;
	char buf[4096];
	int64_t pid = 0;
	bool in_number = false;
	ssize_t n;
	int fd;

	fd = openat(dir_fd, "cgroup.procs", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return depth == 0 ? -errno : 0;	/* a child cgroup removed meanwhile */
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		/* A number cut by the end of a read goes on in the next one. */
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] >= '0' && buf[i] <= '9') {
				if (pid <= INT_MAX)
					pid = pid * 10 + (buf[i] - '0');
				in_number = true;
				continue;
			}
			if (in_number && pid > 0 && pid <= INT_MAX) {
				walk->seen++;
				if (walk->fn)
					walk->fn((pid_t)pid, walk->ctx);
			}
			pid = 0;
			in_number = false;
		}
	}
	if (in_number && pid > 0 && pid <= INT_MAX) {
		walk->seen++;
		if (walk->fn)
			walk->fn((pid_t)pid, walk->ctx);
	}
	if (n < 0 && depth == 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	return 0;
}

int64_t cgroupfs_for_each_pid(int dir_fd, cgroupfs_pid_fn fn, void *ctx)
{
	struct pid_walk walk = { .fn = fn, .ctx = ctx };
	int64_t ret = cgroupfs_walk(dir_fd, procs_of, &walk);

	return ret < 0 ? ret : walk.seen;
}

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

int cgroupfs_check_v2(int fd)
{
	struct statfs sfs;

	if (fstatfs(fd, &sfs))
		return -errno;
	return sfs.f_type == CGROUP2_SUPER_MAGIC ? 0 : -ENOTDIR;
}

int cgroupfs_check_v2_path(const char *path)
{
	struct statfs sfs;

	if (statfs(path, &sfs))
		return -errno;
	return sfs.f_type == CGROUP2_SUPER_MAGIC ? 0 : -ENOTDIR;
}

bool cgroupfs_path_is_canonical(const char *path)
{
	const char *p = path;

	if (path[0] != '/')
		return false;
	if (!path[1])
		return true;
	while (*p) {
		const char *start = ++p;	/* past the '/' */
		size_t len;

		while (*p && *p != '/')
			p++;
		len = (size_t)(p - start);
		if (len == 0 || (len == 1 && start[0] == '.') ||
		    (len == 2 && start[0] == '.' && start[1] == '.'))
			return false;
	}
	return true;
}

/* ---- reading cgroup files ------------------------------------------------------------- */

/* A whole non-negative decimal, optionally followed by whitespace. */
int cgroupfs_parse_u64_text(const char *text, int64_t *value)
{
	char *end;
	unsigned long long v;

	if (*text < '0' || *text > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || v > INT64_MAX)
		return -ERANGE;
	while (*end == ' ' || *end == '\n' || *end == '\t')
		end++;
	if (*end)
		return -EINVAL;
	*value = (int64_t)v;
	return 0;
}

int cgroupfs_read_i64_at(int dir_fd, const char *name, int64_t *value)
{
	char buf[64];
	ssize_t n = fileio_read_at(dir_fd, name, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	return cgroupfs_parse_u64_text(buf, value);
}

/* The value of `key` in a "key value\n" file held in buf; -ENOENT when absent. */
int cgroupfs_keyed_value(const char *buf, const char *key, int64_t *value)
{
	size_t key_len = strlen(key);
	const char *line = buf;

	while (line && *line) {
		if (strncmp(line, key, key_len) == 0 && line[key_len] == ' ') {
			char *end;
			long long v;

			errno = 0;
			v = strtoll(line + key_len + 1, &end, 10);
			if (errno || end == line + key_len + 1)
				return -EINVAL;
			*value = v;
			return 0;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return -ENOENT;
}

/*
 * A memcg OOM counts "oom" in the memory.events of the cgroup whose memory.max was reached
 * (mm/memcontrol.c mem_cgroup_oom: memcg_memory_event(memcg, MEMCG_OOM)), and of its ancestors;
 * a node-wide OOM (out_of_memory() without a memcg) counts it nowhere. So a kernel OOM victim
 * inside a limited cgroup that has hit its limit was most likely killed by that limit: a
 * container's own, not node pressure.
 */
int cgroupfs_memory_limit_hit(const char *mount, const char *path, char *hit, size_t len,
			      int64_t *limit)
{
	size_t mount_len = strlen(mount);
	char dir[PATH_MAX], buf[512];

	if (strncmp(path, mount, mount_len) || (path[mount_len] && path[mount_len] != '/'))
		return -EINVAL;
	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	while (strlen(dir) > mount_len) {
		char *slash;
		int64_t max, ooms;
		ssize_t n;
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (fd >= 0) {
			n = fileio_read_at(fd, "memory.max", buf, sizeof(buf));
			if (n > 0 && !cgroupfs_parse_u64_text(buf, &max)) {
				n = fileio_read_at(fd, "memory.events", buf, sizeof(buf));
				if (n > 0 && !cgroupfs_keyed_value(buf, "oom", &ooms) && ooms > 0) {
					close(fd);
					snprintf(hit, len, "%s", dir);
					*limit = max;
					return 1;
				}
			}
			close(fd);
		}
		slash = strrchr(dir, '/');
		if (!slash)
			break;
		*slash = '\0';
	}
	return 0;
}
