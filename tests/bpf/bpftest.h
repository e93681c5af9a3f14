/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Helpers for the BPF data-plane tests: test cgroups, a private bpffs, child processes. */
#ifndef EVICTD_BPFTEST_H
#define EVICTD_BPFTEST_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CGROUP2_MAGIC_ 0x63677270
#define CGROUP_V1_ROOT "/sys/fs/cgroup"

/* snprintf for paths; truncation shows up as a failing open/mkdir later. */
static inline void fmt_path(char *out, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline void fmt_path(char *out, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out, size, fmt, ap);
	va_end(ap);
}

static inline int write_str(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t len = (ssize_t)strlen(value);
	int err = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, value, len) != len)
		err = -errno;
	close(fd);
	return err;
}

static inline uint64_t inode_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : (uint64_t)st.st_ino;
}

static inline uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The cgroup v2 mount: /sys/fs/cgroup/unified on a hybrid host, /sys/fs/cgroup on v2. */
static inline const char *cgroup2_root(void)
{
	struct statfs fs;

	if (!statfs("/sys/fs/cgroup/unified", &fs) && fs.f_type == CGROUP2_MAGIC_)
		return "/sys/fs/cgroup/unified";
	if (!statfs("/sys/fs/cgroup", &fs) && fs.f_type == CGROUP2_MAGIC_)
		return "/sys/fs/cgroup";
	return NULL;
}

/* Is word one of the comma-separated items of list? */
static inline bool list_has(const char *list, const char *word)
{
	size_t len = strlen(word);

	while (*list) {
		if (!strncmp(list, word, len) && (list[len] == ',' || !list[len]))
			return true;
		list = strchrnul(list, ',');
		if (*list)
			list++;
	}
	return false;
}

/* This process's path in hierarchy `controller` ("" for v2) from /proc/self/cgroup. */
static inline int own_cgroup(const char *controller, char *out, size_t size)
{
	char line[PATH_MAX + 64];
	FILE *f = fopen("/proc/self/cgroup", "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *ctrl = strchr(line, ':'), *path;

		if (!ctrl)
			continue;
		path = strchr(++ctrl, ':');
		if (!path)
			continue;
		*path++ = '\0';
		path[strcspn(path, "\n")] = '\0';
		if (controller[0] ? list_has(ctrl, controller) : !ctrl[0]) {
			fmt_path(out, size, "%s", path);
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

/*
 * The test runs inside its own cgroups so the per-cgroup counters see only its events:
 *  - v2: <v2 root>/evictd-test-<pid> (keys of cgroup_stats)
 *  - memory: a child of this process's v1 memory cgroup on a hybrid host, or the v2 test
 *    cgroup itself with the memory controller enabled on a v2 host (keys of memcg_stats).
 */
struct test_cgroups {
	char v2_orig[PATH_MAX];		/* where to move back to */
	char v2_path[PATH_MAX];
	uint64_t v2_id;
	bool mem_v1;
	char mem_orig[PATH_MAX];
	char mem_path[PATH_MAX];	/* "" when no memory cgroup could be made */
	uint64_t memcg_id;
};

static inline int move_self(const char *cgroup_dir)
{
	char procs[PATH_MAX + 16];

	fmt_path(procs, sizeof(procs), "%s/cgroup.procs", cgroup_dir);
	return write_str(procs, "0");
}

static inline int test_cgroups_setup(struct test_cgroups *cg)
{
	const char *root = cgroup2_root();
	char rel[PATH_MAX];
	int err;

	memset(cg, 0, sizeof(*cg));
	if (!root)
		return -ENOENT;
	if (own_cgroup("", rel, sizeof(rel)))
		fmt_path(rel, sizeof(rel), "/");
	fmt_path(cg->v2_orig, sizeof(cg->v2_orig), "%s%s", root, rel);
	fmt_path(cg->v2_path, sizeof(cg->v2_path), "%s/evictd-test-%d", root, (int)getpid());
	if (mkdir(cg->v2_path, 0755) && errno != EEXIST)
		return -errno;
	err = move_self(cg->v2_path);
	if (err)
		return err;
	cg->v2_id = inode_of(cg->v2_path);

	if (!access(CGROUP_V1_ROOT "/memory/memory.limit_in_bytes", F_OK)) {
		/* Hybrid: a child of our own v1 memory cgroup, so its limits still apply. */
		cg->mem_v1 = true;
		if (own_cgroup("memory", rel, sizeof(rel)))
			fmt_path(rel, sizeof(rel), "/");
		fmt_path(cg->mem_orig, sizeof(cg->mem_orig), CGROUP_V1_ROOT "/memory%s", rel);
		fmt_path(cg->mem_path, sizeof(cg->mem_path), "%s/evictd-test-%d", cg->mem_orig,
			 (int)getpid());
		if ((mkdir(cg->mem_path, 0755) && errno != EEXIST) || move_self(cg->mem_path)) {
			cg->mem_path[0] = '\0';
			return 0;
		}
		cg->memcg_id = inode_of(cg->mem_path);
	} else {
		/* v2: memory accounting needs +memory in the parent's subtree_control. */
		char control[PATH_MAX + 32];

		fmt_path(control, sizeof(control), "%s/cgroup.subtree_control", root);
		write_str(control, "+memory");
		fmt_path(control, sizeof(control), "%s/memory.current", cg->v2_path);
		if (!access(control, F_OK)) {
			fmt_path(cg->mem_path, sizeof(cg->mem_path), "%s", cg->v2_path);
			cg->memcg_id = cg->v2_id;
		}
	}
	return 0;
}

static inline void rmdir_retry(const char *path)
{
	int i;

	/* A just-reaped child can keep a cgroup busy for a moment. */
	for (i = 0; i < 50 && rmdir(path) && errno == EBUSY; i++)
		usleep(20000);
}

static inline void test_cgroups_teardown(struct test_cgroups *cg)
{
	if (cg->mem_v1 && cg->mem_path[0]) {
		move_self(cg->mem_orig);
		rmdir_retry(cg->mem_path);
	}
	if (cg->v2_path[0]) {
		move_self(cg->v2_orig);
		rmdir_retry(cg->v2_path);
	}
}

/* Fork n children that exit at once, reap them all. Returns how many were reaped. */
static inline int fork_and_reap(int n)
{
	int i, reaped = 0;

	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(0);
		if (pid < 0)
			break;
		if (waitpid(pid, NULL, 0) == pid)
			reaped++;
	}
	return reaped;
}

/* A private bpffs on a fresh directory for the pins (the loader mounts one only at
 * /sys/fs/bpf); pin_parent_remove undoes the mount. */
static inline int pin_parent_make(char *parent, size_t size)
{
	fmt_path(parent, size, "/tmp/evictd-bpftest-XXXXXX");
	if (!mkdtemp(parent))
		return -errno;
	if (mount("bpf", parent, "bpf", 0, "mode=0700")) {
		int err = -errno;

		rmdir(parent);
		return err;
	}
	return 0;
}

static inline void pin_parent_remove(const char *parent)
{
	struct statfs fs;

	if (!statfs(parent, &fs) && fs.f_type == 0xcafe4a11)
		umount2(parent, MNT_DETACH);
	rmdir(parent);
}

#endif
