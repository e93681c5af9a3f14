// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Rediscover pod cgroups only when the tree changed (doc/DESIGN.md "Performance: 1,000 pods"):
 * inotify on the directories pods live in (the kubepods tree's QoS directories, their
 * parents so a tree or QoS level that appears is seen, the workload roots and the slices
 * below them that a discovery descends into) says when a cgroup was made, removed or
 * (workloads) had its xattrs changed: mkdir(2), rmdir(2) and setxattr(2)
 * on cgroupfs go through the VFS and notify (fsnotify_mkdir, fsnotify_rmdir, fsnotify_xattr in
 * fs/namei.c and fs/xattr.c). Between changes each pod's usage is read through the directory
 * fd kept since discovery (openat + read, no path walk). Without inotify (no instances or
 * watches left) every refresh rediscovers, as before.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <unistd.h>

#include "sys/log.h"
#include "pods/internal.h"

#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | \
		    IN_MOVE_SELF | IN_ONLYDIR)

void pods_fds_close(struct pods *pods)
{
	for (size_t i = 0; i < pods->n_fds; i++) {
		if (pods->dir_fds[i] >= 0)
			close(pods->dir_fds[i]);
		for (int k = 0; k < USAGE_FILES; k++)
			if (pods->file_fds[i * USAGE_FILES + k] >= 0)
				close(pods->file_fds[i * USAGE_FILES + k]);
	}
	pods->n_fds = 0;
	pods->fds_open = 0;
}

void pods_fds_retired_close(struct pods *pods)
{
	for (size_t i = 0; i < pods->n_retired; i++) {
		if (pods->retired_dir_fds[i] >= 0) {
			close(pods->retired_dir_fds[i]);
			pods->fds_open--;
		}
		for (int k = 0; k < USAGE_FILES; k++)
			if (pods->retired_file_fds[i * USAGE_FILES + k] >= 0) {
				close(pods->retired_file_fds[i * USAGE_FILES + k]);
				pods->fds_open--;
			}
	}
	pods->n_retired = 0;
}

void pods_fds_retire(struct pods *pods)
{
	int *dirs = pods->retired_dir_fds, *files = pods->retired_file_fds;
	size_t cap = pods->cap_retired;

	pods_fds_retired_close(pods);
	if (pods->n_fds != pods->n_items) {
		/* Not one fd slot per pod: index i would not be prev[i]'s. */
		pods_fds_close(pods);
		return;
	}
	/* Swap the buffers: the new table's fds go into the old retired ones. */
	pods->retired_dir_fds = pods->dir_fds;
	pods->retired_file_fds = pods->file_fds;
	pods->cap_retired = pods->cap_fds;
	pods->n_retired = pods->n_fds;
	pods->retired_hint = 0;
	pods->dir_fds = dirs;
	pods->file_fds = files;
	pods->cap_fds = cap;
	pods->n_fds = 0;
}

int pods_fds_claim(struct pods *pods, size_t index, const char *path, uint64_t id)
{
	size_t n = pods->n_retired < pods->n_prev ? pods->n_retired : pods->n_prev;

	if (!id || index >= pods->cap_fds)
		return -1;
	/* readdir order rarely changes between discoveries: try the next one first. */
	for (size_t k = 0; k < n; k++) {
		size_t i = (pods->retired_hint + k) % n;
		int fd = pods->retired_dir_fds[i];

		if (fd < 0 || pods->prev[i].cgroup_id != id || strcmp(pods->prev[i].cgroup_path, path))
			continue;
		pods->retired_dir_fds[i] = -1;
		for (int f = 0; f < USAGE_FILES; f++) {
			pods->file_fds[index * USAGE_FILES + f] = pods->retired_file_fds[i * USAGE_FILES + f];
			pods->retired_file_fds[i * USAGE_FILES + f] = -1;
		}
		pods->dir_fds[index] = fd;
		pods->retired_hint = (i + 1) % n;
		return fd;
	}
	return -1;
}

int pods_fds_reserve(struct pods *pods, size_t n)
{
	int *grown;

	if (!pods->fd_budget) {
		struct rlimit limit;

		/* Half the soft limit, for the rest of the daemon (sockets, kills in flight). */
		pods->fd_budget = getrlimit(RLIMIT_NOFILE, &limit) == 0 &&
				  limit.rlim_cur != RLIM_INFINITY ? limit.rlim_cur / 2 : 512;
	}
	if (n <= pods->cap_fds)
		return 0;
	grown = realloc(pods->dir_fds, n * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	pods->dir_fds = grown;
	grown = realloc(pods->file_fds, n * USAGE_FILES * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	pods->file_fds = grown;
	pods->cap_fds = n;
	return 0;
}

void pods_fds_keep(struct pods *pods, size_t index, int dir_fd)
{
	int *files = &pods->file_fds[index * USAGE_FILES];

	for (int k = 0; k < USAGE_FILES; k++)
		files[k] = -1;
	if (dir_fd < 0)
		return;
	if (pods->fds_open + 1 + USAGE_FILES > pods->fd_budget) {
		/* Over budget: this pod is read by path (pods_read_usage). */
		close(dir_fd);
		pods->dir_fds[index] = -1;
		return;
	}
	pods->dir_fds[index] = dir_fd;
	pods->fds_open += 1 + pods_usage_files_open(dir_fd, files);
}

/* Drop the last pod added (its cgroup could not be used) and its kept fd. */
void pods_drop_last(struct pods *pods)
{
	if (pods->n_fds == pods->n_items) {
		size_t last = pods->n_fds - 1;

		if (pods->dir_fds[last] >= 0) {
			close(pods->dir_fds[last]);
			pods->fds_open--;
		}
		for (int k = 0; k < USAGE_FILES; k++)
			if (pods->file_fds[last * USAGE_FILES + k] >= 0) {
				close(pods->file_fds[last * USAGE_FILES + k]);
				pods->fds_open--;
			}
		pods->n_fds--;
	}
	pods->n_items--;
}

void pods_watch_close(struct pods *pods)
{
	if (pods->inotify_fd >= 0)
		close(pods->inotify_fd);
	pods->inotify_fd = -1;
	pods->watching = false;
	pods_fds_close(pods);
	pods_fds_retired_close(pods);
	free(pods->dir_fds);
	free(pods->file_fds);
	free(pods->retired_dir_fds);
	free(pods->retired_file_fds);
	pods->dir_fds = pods->file_fds = NULL;
	pods->retired_dir_fds = pods->retired_file_fds = NULL;
	pods->cap_fds = pods->cap_retired = 0;
}

/* 0 added, 1 the directory does not exist (not an error: a parent watch sees it appear). */
static int watch_dir(struct pods *pods, const char *dir, uint32_t extra)
{
	if (inotify_add_watch(pods->inotify_fd, dir, WATCH_MASK | extra) >= 0)
		return 0;
	if (errno == ENOENT || errno == ENOTDIR)
		return 1;
	return -errno;
}

static int watch_parent(struct pods *pods, const char *dir)
{
	char parent[PATH_MAX];
	char *slash;

	if (strlen(dir) >= sizeof(parent))
		return -ENAMETOOLONG;
	strcpy(parent, dir);
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return 0;
	*slash = '\0';
	return watch_dir(pods, parent, 0) < 0 ? -errno : 0;	/* absent parent: fine */
}

/* Fresh watches for the directories a discovery is about to read. False: no watching, every
 * refresh rediscovers (logged once). */
static bool watch_tree(struct pods *pods)
{
	static const char *const qos_dirs[KUBEPODS_DIRS][2] = {
		{ "kubepods-burstable.slice", "kubepods-besteffort.slice" },
		{ "burstable", "besteffort" },
	};
	char dir[PATH_MAX];
	int err = 0;

	/* Closing the instance drops every old watch at once. */
	if (pods->inotify_fd >= 0)
		close(pods->inotify_fd);
	pods->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (pods->inotify_fd < 0) {
		err = -errno;
		goto fail;
	}
	if (pods->standalone) {
		for (size_t r = 0; r < pods->n_workload_roots && !err; r++)
			if (watch_dir(pods, pods->workload_roots[r], IN_ATTRIB) == 1)
				err = watch_parent(pods, pods->workload_roots[r]);
	} else {
		for (size_t t = 0; t < KUBEPODS_DIRS && !err; t++) {
			err = watch_parent(pods, pods->kubepods[t]);
			if (err || watch_dir(pods, pods->kubepods[t], 0))
				continue;	/* absent: the parent's watch sees it made */
			for (size_t q = 0; q < 2 && !err; q++) {
				if (snprintf(dir, sizeof(dir), "%s/%s", pods->kubepods[t],
					     qos_dirs[t][q]) >= (int)sizeof(dir))
					err = -ENAMETOOLONG;
				else if ((err = watch_dir(pods, dir, 0)) > 0)
					err = 0;	/* absent: the tree's watch sees it made */
			}
		}
	}
	if (!err)
		return true;
fail:
	if (pods->inotify_fd >= 0)
		close(pods->inotify_fd);
	pods->inotify_fd = -1;
	if (pods_first_time(pods, "inotify", "")) {
		errno = -err;
		log_warn("pods: cannot watch the cgroup tree (%m): every evaluation rediscovers "
			 "the pod cgroups (raise fs.inotify.max_user_watches/instances)");
	}
	return false;
}

void pods_watch_add(struct pods *pods, const char *dir)
{
	if (pods->inotify_fd < 0 || !pods->watching)
		return;
	/* IN_ATTRIB: a unit's xattrs (ManagedOOMPreference=) changed. */
	if (watch_dir(pods, dir, IN_ATTRIB) < 0) {
		if (pods_first_time(pods, "inotify", ""))
			log_warn("pods: cannot watch %s (%m): every evaluation rediscovers the "
				 "workloads (raise fs.inotify.max_user_watches)", dir);
		pods->watching = false;
	}
}

/* Did anything change in the watched directories since the last call? Drains the queue. */
static bool events_pending(struct pods *pods)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool changed = false;
	ssize_t n;

	while ((n = read(pods->inotify_fd, buf, sizeof(buf))) > 0)
		changed = true;	/* any event (overflow included) means: look again */
	if (n < 0 && errno != EAGAIN && errno != EINTR)
		changed = true;
	return changed;
}

bool pods_watch_need_discovery(struct pods *pods)
{
	if (!pods->watching || pods->inotify_fd < 0 || events_pending(pods)) {
		/* Watches first, then the scan: a change during the scan is seen next time. */
		pods->watching = watch_tree(pods);
		return true;
	}
	return false;
}
