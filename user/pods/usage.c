// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Per-pod usage from cgroup v2 files (the cAdvisor view the kubelet ranks by), the cgroup
 * mount and evictd's own cgroup. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "sys/cgroupfs.h"
#include "sys/fileio.h"
#include "sys/log.h"
#include "pods/internal.h"

/* ---- cgroup mount, own cgroup, usage --------------------------------------------------- */

int pods_detect_cgroup_mount(const char *root, char *buf, size_t len)
{
	static const char *const candidates[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	char probe[PATH_MAX];

	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
		if (fileio_join_root(probe, sizeof(probe), root, candidates[i]) ||
		    strlen(probe) + sizeof("/cgroup.controllers") > sizeof(probe))
			return -ENAMETOOLONG;
		strcat(probe, "/cgroup.controllers");
		if (access(probe, F_OK) == 0)
			return fileio_join_root(buf, len, root, candidates[i]);
	}
	return -ENOENT;
}

int pods_read_self_cgroup(const char *root, const char *mount, char *buf, size_t len)
{
	return pods_read_pid_cgroup(root, mount, 0, buf, len);
}

int pods_read_pid_cgroup(const char *root, const char *mount, pid_t pid, char *buf, size_t len)
{
	char path[PATH_MAX], proc[64], text[4096];
	const char *line;
	ssize_t n;
	int err;

	if (!mount || !buf || pid < 0)
		return -EINVAL;
	if (pid)
		snprintf(proc, sizeof(proc), "/proc/%d/cgroup", (int)pid);
	else
		snprintf(proc, sizeof(proc), "/proc/self/cgroup");
	err = fileio_join_root(path, sizeof(path), root, proc);
	if (err)
		return err;
	n = fileio_read_at(AT_FDCWD, path, text, sizeof(text));
	if (n < 0)
		return (int)n;
	/* cgroup v2's line is "0::/path"; v1 hierarchies have non-zero ids. */
	for (line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		const char *rel, *nl;
		size_t rel_len, mount_len = strlen(mount);

		if (strncmp(line, "0::", 3) != 0)
			continue;
		rel = line + 3;
		nl = strchr(rel, '\n');
		rel_len = nl ? (size_t)(nl - rel) : strlen(rel);
		/* "/" itself adds nothing: the mount is the cgroup. */
		if (rel_len == 1 && rel[0] == '/')
			rel_len = 0;
		while (mount_len > 1 && mount[mount_len - 1] == '/')
			mount_len--;
		if (mount_len + rel_len + 1 > len)
			return -ENAMETOOLONG;
		memcpy(buf, mount, mount_len);
		memcpy(buf + mount_len, rel, rel_len);
		buf[mount_len + rel_len] = '\0';
		return 0;
	}
	return -ENOENT;
}

/* One cgroup's cgroup.threads (one TID per line), added to *ctx. */
static int count_threads_in(void *ctx, int dir_fd, unsigned int depth)
{
	int64_t *count = ctx;
	char buf[8192];
	ssize_t n;
	int fd;

	(void)depth;
	/* O_NONBLOCK as in fileio_read_at: a FIFO planted here must not hang the caller. */
	fd = openat(dir_fd, "cgroup.threads", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;	/* vanished or unreadable: count the others */
	/* Read in chunks: a busy pod can list far more than a stack buffer holds. */
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++)
			*count += buf[i] == '\n';
	}
	close(fd);
	return 0;
}

/* Tasks in the cgroup at dir_fd and every cgroup below it, at any depth (sys/cgroupfs: a
 * depth limit would leave the tasks of deep cgroups uncounted). dir_fd stays open. A partial
 * walk counts what it reached. */
static int64_t count_threads(int dir_fd)
{
	int64_t count = 0, ret;

	ret = cgroupfs_walk(dir_fd, count_threads_in, &count);
	if (ret < 0 && !count)
		return ret;
	return count;
}

/* Has the directory behind dir_fd been removed? rmdir(2) clears a directory's link count on
 * disk filesystems and tmpfs; kernfs keeps it, but every live cgroup v2 directory below the
 * root has cgroup.events, and a removed one has no names left (lookups in a dead directory
 * fail with ENOENT). Asked only when cgroup.events could not be read. */
static bool dir_is_gone(int dir_fd)
{
	struct statfs fs;
	struct stat st;

	if (fstat(dir_fd, &st) == 0 && st.st_nlink == 0)
		return true;
	return fstatfs(dir_fd, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC &&
	       faccessat(dir_fd, "cgroup.events", F_OK, 0) && errno == ENOENT;
}

/* memory.current read: the working set from memory.stat's inactive_file now, or (cheap) the
 * upper bound memory.current until pods_refine_usage(). */
static void set_working_set(struct pod *pod, int64_t current, const char *stat_text)
{
	int64_t inactive = 0;

	/* cAdvisor subtracts nothing when inactive_file is missing. A negative one (no kernel
	 * writes that) adds nothing either: the working set never exceeds memory.current, the
	 * upper bound a cheap read ranks by. */
	if (!stat_text || cgroupfs_keyed_value(stat_text, "inactive_file", &inactive) < 0 ||
	    inactive < 0)
		inactive = 0;
	pod->memory_working_set = current > inactive ? current - inactive : 0;
	pod->stats_missing = false;
	pod->memory_estimated = false;
}

static ssize_t reread(int dir_fd, int fd, enum usage_file which, char *buf, size_t len);

struct rss_sum {
	int64_t bytes;
	int64_t page_size;
	size_t read;
};

static int add_rss(pid_t pid, void *opaque)
{
	struct rss_sum *sum = opaque;
	char path[64], buf[128];
	long long size, resident;

	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	if (fileio_read_at(AT_FDCWD, path, buf, sizeof(buf)) <= 0 ||
	    sscanf(buf, "%lld %lld", &size, &resident) != 2 || resident < 0)
		return 0;	/* exited meanwhile */
	sum->bytes += resident * sum->page_size;
	sum->read++;
	return 0;
}

/* Without memory.current: the resident memory of the cgroup's processes, what killing them
 * gives back at least (pages shared between them are counted once per process, so it errs
 * high: toward one victim too few, never one too many). */
static void estimate_working_set(struct pod *pod, int dir_fd)
{
	struct rss_sum sum = { .page_size = sysconf(_SC_PAGESIZE) };

	pod->memory_working_set = 0;
	pod->stats_missing = true;
	pod->memory_estimated = false;
	if (cgroupfs_for_each_pid(dir_fd, add_rss, &sum) < 0)
		return;
	pod->memory_working_set = sum.bytes;
	pod->stats_missing = false;
	pod->memory_estimated = true;
}

/* Tasks: pids.current (through pids_fd, or by name when it is -1), else cgroup.threads walked
 * through the subtree (no pids controller). */
static void read_processes(struct pod *pod, int dir_fd, int pids_fd)
{
	char buf[64];
	int64_t tasks;
	ssize_t n = reread(dir_fd, pids_fd, USAGE_PIDS, buf, sizeof(buf));

	if (n < 0 || cgroupfs_parse_u64_text(buf, &tasks) < 0) {
		tasks = count_threads(dir_fd);
		if (tasks < 0)
			tasks = 0;
	}
	pod->processes = tasks;
	pod->processes_unrefined = false;
}

/* A cheap read counts no task: populated stands in for "at least one" (all candidacy asks),
 * when cgroup.events could be read. */
static void set_processes(struct pod *pod, int dir_fd, int pids_fd, bool cheap, bool events_read)
{
	if (cheap && events_read) {
		pod->processes = pod->exited ? 0 : 1;
		pod->processes_unrefined = true;
		return;
	}
	read_processes(pod, dir_fd, pids_fd);
}

int pods_read_usage_at(struct pod *pod, int dir_fd, bool cheap)
{
	char stat_buf[8192];
	int64_t current;
	bool events_read;
	ssize_t n;
	int err;

	pod->working_set_unrefined = pod->processes_unrefined = false;
	/* populated 0 is the kernel's word that no live task is left; pids.current still
	 * counts zombies until they are reaped. */
	n = fileio_read_at(dir_fd, "cgroup.events", stat_buf, sizeof(stat_buf));
	if (n < 0 && dir_is_gone(dir_fd)) {
		/* A kept fd of a cgroup removed since discovery (cgroup_watch.c): nothing is left
		 * to kill there, and a cgroup made again at its path is another one. */
		pod->memory_working_set = 0;
		pod->processes = 0;
		pod->stats_missing = true;
		pod->exited = true;
		return -ENOENT;
	}
	events_read = n >= 0;
	{
		int64_t populated = 1;

		pod->exited = n >= 0 && cgroupfs_keyed_value(stat_buf, "populated", &populated) == 0 &&
			      populated == 0;
	}
	err = cgroupfs_read_i64_at(dir_fd, "memory.current", &current);
	if (!err && cheap) {
		set_working_set(pod, current, NULL);
		pod->working_set_unrefined = true;
	} else if (!err) {
		n = fileio_read_at(dir_fd, "memory.stat", stat_buf, sizeof(stat_buf));
		set_working_set(pod, current, n < 0 ? NULL : stat_buf);
	} else {
		estimate_working_set(pod, dir_fd);
	}

	set_processes(pod, dir_fd, -1, cheap, events_read);
	return err;
}

static const char *const usage_file_names[USAGE_FILES] = {
	[USAGE_EVENTS] = "cgroup.events",
	[USAGE_CURRENT] = "memory.current",
	[USAGE_STAT] = "memory.stat",
	[USAGE_PIDS] = "pids.current",
};

size_t pods_usage_files_open(int dir_fd, int fds[USAGE_FILES])
{
	size_t opened = 0;

	for (int k = 0; k < USAGE_FILES; k++) {
		/* O_NONBLOCK as in fileio_read_at: a FIFO planted here must not hang a read. */
		fds[k] = openat(dir_fd, usage_file_names[k], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fds[k] >= 0)
			opened++;
		else if (errno == ENOENT)
			fds[k] = USAGE_FD_ABSENT;
	}
	return opened;
}

/* The whole file at offset 0 into buf (NUL-terminated): pread regenerates a cgroup file. */
static ssize_t reread(int dir_fd, int fd, enum usage_file which, char *buf, size_t len)
{
	size_t used = 0;

	if (fd == USAGE_FD_ABSENT)
		return -ENOENT;
	if (fd < 0)
		return fileio_read_at(dir_fd, usage_file_names[which], buf, len);
	while (used < len - 1) {
		ssize_t n = pread(fd, buf + used, len - 1 - used, (off_t)used);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		used += (size_t)n;
		if (which != USAGE_STAT)
			break;	/* one short line: one call */
	}
	buf[used] = '\0';
	return (ssize_t)used;
}

int pods_read_usage_fds(struct pod *pod, int dir_fd, const int fds[USAGE_FILES], bool cheap)
{
	char stat_buf[8192];
	int64_t current, populated = 1;
	bool events_read;
	ssize_t n;
	int err;

	pod->working_set_unrefined = pod->processes_unrefined = false;
	n = reread(dir_fd, fds[USAGE_EVENTS], USAGE_EVENTS, stat_buf, sizeof(stat_buf));
	/* kernfs answers ENODEV for a file of a removed cgroup. */
	if (n < 0 && (n == -ENODEV || dir_is_gone(dir_fd))) {
		pod->memory_working_set = 0;
		pod->processes = 0;
		pod->stats_missing = true;
		pod->exited = true;
		return -ENOENT;
	}
	events_read = n >= 0;
	pod->exited = n >= 0 && cgroupfs_keyed_value(stat_buf, "populated", &populated) == 0 &&
		      populated == 0;
	n = reread(dir_fd, fds[USAGE_CURRENT], USAGE_CURRENT, stat_buf, sizeof(stat_buf));
	err = n < 0 ? (int)n : cgroupfs_parse_u64_text(stat_buf, &current);
	if (!err && cheap) {
		set_working_set(pod, current, NULL);
		pod->working_set_unrefined = true;
	} else if (!err) {
		n = reread(dir_fd, fds[USAGE_STAT], USAGE_STAT, stat_buf, sizeof(stat_buf));
		set_working_set(pod, current, n < 0 ? NULL : stat_buf);
	} else {
		estimate_working_set(pod, dir_fd);
	}
	set_processes(pod, dir_fd, fds[USAGE_PIDS], cheap, events_read);
	return err;
}

int pods_refine_usage_fds(struct pod *pod, int dir_fd, const int fds[USAGE_FILES])
{
	char stat_buf[8192];
	ssize_t n;

	if (pod->working_set_unrefined) {
		n = reread(dir_fd, fds[USAGE_STAT], USAGE_STAT, stat_buf, sizeof(stat_buf));
		/* memory_working_set holds memory.current until now */
		set_working_set(pod, pod->memory_working_set, n < 0 ? NULL : stat_buf);
		pod->working_set_unrefined = false;
	}
	if (pod->processes_unrefined)
		read_processes(pod, dir_fd, fds[USAGE_PIDS]);
	return 0;
}

int pods_read_usage(struct pod *pod)
{
	struct stat st;
	int fd, err;

	if (!pod)
		return -EINVAL;
	pod->working_set_unrefined = pod->processes_unrefined = false;
	/* Every file through one fd of the directory: all of it is the same cgroup's, and the
	 * one whose id was recorded at discovery. */
	fd = open(pod->cgroup_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		/* Gone: as when none of its files can be read. */
		err = -errno;
		pod->memory_working_set = 0;
		pod->processes = 0;
		pod->stats_missing = true;
		pod->exited = false;
		return err;
	}
	if (pod->cgroup_id && (fstat(fd, &st) || (uint64_t)st.st_ino != pod->cgroup_id)) {
		/* Removed and recreated since discovery: a different cgroup that this entry must
		 * not describe. The old one has no task left (nothing to kill); the next
		 * pods_refresh() finds the new one. */
		close(fd);
		pod->memory_working_set = 0;
		pod->processes = 0;
		pod->stats_missing = true;
		pod->exited = true;
		return -ESTALE;
	}
	err = pods_read_usage_at(pod, fd, false);
	close(fd);
	return err;
}

int pods_refine_usage(struct pods *pods, struct pod *pod)
{
	size_t i;

	if (!pods || !pod || (uintptr_t)pod < (uintptr_t)pods->items)
		return -EINVAL;
	i = (size_t)(pod - pods->items);
	if (i >= pods->n_items)
		return -EINVAL;
	if (!pod->working_set_unrefined && !pod->processes_unrefined)
		return 0;
	if (i < pods->n_fds && pods->dir_fds[i] >= 0)
		return pods_refine_usage_fds(pod, pods->dir_fds[i], &pods->file_fds[i * USAGE_FILES]);
	/* Read by path (over the fd budget): everything, exactly. */
	pods_read_usage(pod);
	pod->working_set_unrefined = pod->processes_unrefined = false;
	return 0;
}

/* pod's cgroup file name as a number, 0 when it cannot be read. */
static int64_t cgroup_i64_or_zero(const struct pod *pod, const char *name)
{
	char path[PATH_MAX];
	int64_t value = 0;

	if (snprintf(path, sizeof(path), "%s/%s", pod->cgroup_path, name) >= (int)sizeof(path) ||
	    cgroupfs_read_i64_at(AT_FDCWD, path, &value))
		return 0;
	return value;
}

/* What the kubelet wrote into a pod cgroup about its request, for pods without metadata. */
int64_t pods_request_from_cgroup(const struct pod *pod)
{
	int64_t value = 0;

	switch (pod->qos) {
	case POD_QOS_GUARANTEED:
		/* Guaranteed: limits == requests, and the pod cgroup's memory.max is their sum
		 * ("max" when unlimited, which a Guaranteed pod cannot be: read fails, 0). */
		value = cgroup_i64_or_zero(pod, "memory.max");
		break;
	case POD_QOS_BURSTABLE:
		/* MemoryQoS writes the request to memory.min; 0 without it. */
		value = cgroup_i64_or_zero(pod, "memory.min");
		break;
	case POD_QOS_BESTEFFORT:
		break;
	}
	return value;
}
