// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Pods and workloads: cgroup discovery, usage, metadata (DESIGN.md §5, issue 4), and on demand
 * the kubelet's per-pod disk use for disk and inode ranking (pods_read_disk_usage).
 *
 * Where the kubelet puts pod cgroups (pkg/kubelet/cm/cgroup_manager_linux.go,
 * qos_container_manager_linux.go, pod_container_manager_linux.go):
 *
 *   systemd driver   kubepods.slice/kubepods-pod<uid>.slice                    Guaranteed
 *                    kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice
 *                    kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid>.slice
 *                    with '-' in the UID escaped to '_' (systemd unit names).
 *   cgroupfs driver  kubepods/pod<uid>, kubepods/burstable/pod<uid>, kubepods/besteffort/pod<uid>
 *
 * Usage is the cAdvisor view: working set = memory.current - inactive_file (memory.stat),
 * floored at 0; tasks = pids.current. It is re-read on every refresh through stack buffers;
 * metadata is re-parsed only when its source says it changed.
 *
 * This file: the table, discovery of the kubepods tree. workloads.c: standalone workloads;
 * join.c: the join with metadata; meta.c: the metadata parsing; file_source.c: the pods file;
 * usage.c: per-pod cgroup files; cgroup_watch.c: when to rediscover (kept directory fds in
 * between); disk.c and crictl.c: disk use.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/arith.h"
#include "core/quantity.h"
#include "sys/cgroupfs.h"
#include "sys/clock.h"
#include "sys/fileio.h"
#include "sys/log.h"
#include "pods/internal.h"
#include "pods/prefs.h"

bool pods_path_is_ancestor(const char *ancestor, const char *path)
{
	size_t len;

	if (!ancestor || !path)
		return false;
	len = strlen(ancestor);
	while (len > 1 && ancestor[len - 1] == '/')
		len--;
	if (len == 1 && ancestor[0] == '/')
		return path[0] == '/';
	return strncmp(ancestor, path, len) == 0 && (path[len] == '\0' || path[len] == '/');
}

/* ---- the table ----------------------------------------------------------------------- */

static int copy_checked(char *dst, size_t len, const char *src)
{
	if (strlen(src) >= len)
		return -ENAMETOOLONG;
	strcpy(dst, src);
	return 0;
}

int pods_open(struct pods **out, const struct pods_options *options)
{
	const char *cgroup_root;
	struct pods *pods;
	char rel[PATH_MAX];
	int err;

	if (!out || !options)
		return -EINVAL;
	*out = NULL;
	pods = calloc(1, sizeof(*pods));
	if (!pods) {
		if (options->meta_source && options->meta_source->destroy)
			options->meta_source->destroy(options->meta_source);
		return -ENOMEM;
	}
	pods->meta_source = options->meta_source;
	pods->inotify_fd = -1;
	err = copy_checked(pods->root, sizeof(pods->root), fileio_root_is_host(options->root) ? "" : options->root);
	if (err)
		goto fail;
	if (options->n_workload_roots > PODS_MAX_WORKLOAD_ROOTS) {
		log_err("pods: %zu workload roots, at most %d", options->n_workload_roots,
			PODS_MAX_WORKLOAD_ROOTS);
		err = -EINVAL;
		goto fail;
	}

	if (options->cgroup_dir && options->cgroup_dir[0])
		err = fileio_join_root(pods->mount, sizeof(pods->mount), pods->root, options->cgroup_dir);
	else
		err = pods_detect_cgroup_mount(pods->root, pods->mount, sizeof(pods->mount));
	if (err) {
		log_err("pods: no cgroup v2 mount under %s/sys/fs/cgroup: %s",
			pods->root, strerror(-err));
		goto fail;
	}

	pods->standalone = options->n_workload_roots > 0;
	if (options->workload_prefs)
		pods->prefs = *options->workload_prefs;
	pods->cheap_usage = options->cheap_usage;
	for (size_t i = 0; i < options->n_workload_roots; i++) {
		const char *dir = options->workload_roots[i];

		/* Kill safety compares paths lexically: only canonical absolute paths. */
		if (!dir || dir[0] != '/' || strstr(dir, "/../") || strstr(dir, "/./") ||
		    strstr(dir, "//") || (strlen(dir) > 1 && dir[strlen(dir) - 1] == '/') ||
		    strcmp(dir, "/") == 0) {
			log_err("pods: workload root \"%s\" must be a canonical absolute path below /",
				dir ? dir : "(null)");
			err = -EINVAL;
			goto fail;
		}
		err = fileio_join_root(pods->workload_roots[i], PATH_MAX, pods->root, dir);
		if (err)
			goto fail;
	}
	pods->n_workload_roots = options->n_workload_roots;

	cgroup_root = options->kubelet_cgroup_root && options->kubelet_cgroup_root[0] ?
			      options->kubelet_cgroup_root : "/";
	while (*cgroup_root == '/')
		cgroup_root++;
	snprintf(rel, sizeof(rel), "%s%s", cgroup_root[0] ? "/" : "", cgroup_root);
	if (strlen(rel) > 1 && rel[strlen(rel) - 1] == '/')
		rel[strlen(rel) - 1] = '\0';
	if (snprintf(pods->kubepods[0], PATH_MAX, "%s%s/kubepods.slice", pods->mount, rel) >= PATH_MAX ||
	    snprintf(pods->kubepods[1], PATH_MAX, "%s%s/kubepods", pods->mount, rel) >= PATH_MAX) {
		err = -ENAMETOOLONG;
		goto fail;
	}
	*out = pods;
	return 0;
fail:
	pods_close(pods);
	return err;
}

void pods_close(struct pods *pods)
{
	if (!pods)
		return;
	if (pods->meta_source && pods->meta_source->destroy)
		pods->meta_source->destroy(pods->meta_source);
	pod_meta_list_free(&pods->meta);
	pods_watch_close(pods);
	free(pods->items);
	free(pods->ptrs);
	free(pods->prev);
	free(pods->warned);
	free(pods);
}

struct pod *pods_add_pod(struct pods *pods)
{
	struct pod *pod;

	if (pods->n_items == pods->cap_items) {
		size_t cap = pods->cap_items ? pods->cap_items * 2 : 32;
		struct pod *items = realloc(pods->items, cap * sizeof(*items));

		if (!items)
			return NULL;
		pods->items = items;
		pods->cap_items = cap;
	}
	if (pods->n_items == pods->cap_ptrs) {
		size_t cap = pods->cap_items;
		struct pod **ptrs = realloc(pods->ptrs, cap * sizeof(*ptrs));

		if (!ptrs)
			return NULL;
		pods->ptrs = ptrs;
		pods->cap_ptrs = cap;
	}
	pod = &pods->items[pods->n_items++];
	memset(pod, 0, sizeof(*pod));
	pod->termination_grace_period_s = -1;
	return pod;
}

/* A pod cgroup's directory name: prefix + UID + suffix. systemd escapes '-' as '_'. */
static bool pod_uid_from_name(const char *name, const char *prefix, const char *suffix,
			      bool systemd, char *uid, size_t uid_len)
{
	size_t name_len = strlen(name), prefix_len = strlen(prefix), suffix_len = strlen(suffix);
	size_t len;

	if (name_len <= prefix_len + suffix_len || strncmp(name, prefix, prefix_len) != 0 ||
	    strcmp(name + name_len - suffix_len, suffix) != 0)
		return false;
	len = name_len - prefix_len - suffix_len;
	if (len >= uid_len)
		return false;
	memcpy(uid, name + prefix_len, len);
	uid[len] = '\0';
	for (char *p = uid; *p; p++) {
		if (systemd && *p == '_')
			*p = '-';
		else if (systemd && *p == '-')
			return false;	/* an escaped name never holds '-' */
	}
	return pods_uid_is_valid(uid);
}

/*
 * Open the cgroup dir d/name, record its id and read its usage through that one fd: the id
 * and the numbers are then the same cgroup's even if it is recreated meanwhile. On cgroup v2
 * the cgroup id is the kernfs node id, which the kernel gives the directory as its inode
 * number (since 5.5, on 64-bit) and which bpf_get_current_cgroup_id() returns; fstat is used
 * rather than name_to_handle_at because it needs no handle buffer, works on any filesystem
 * (test trees, a --root copy) and is one call on an fd we hold anyway. Ids are not reused
 * while the kernel runs, so a different id at the same path is a new cgroup.
 * Returns 0, or negative errno (gone or not a dir: skip it).
 */
/* workloads: non-NULL for a standalone workload, whose xattrs are read through the same fd
 * (the owner checked is then the owner of the directory the values come from). The fd is
 * kept for the pod's later usage reads (cgroup_watch.c); a rediscovery takes over the fds of
 * a cgroup it already had (same path, same id: ino, readdir's d_ino) instead of opening it
 * again. */
int pods_open_cgroup(DIR *d, const char *name, ino_t ino, struct pod *pod, struct pods *pods,
		     bool workload)
{
	size_t index = pods->n_items - 1;	/* items[index] is pod: its fds go there */
	bool kept = pods_fds_reserve(pods, pods->n_items) == 0;
	struct stat st;
	int fd = -1, err = 0;

	if (kept) {
		while (pods->n_fds < pods->n_items) {
			pods->dir_fds[pods->n_fds] = -1;
			pods_fds_keep(pods, pods->n_fds++, -1);
		}
		fd = pods_fds_claim(pods, index, pod->cgroup_path, (uint64_t)ino);
	}
	if (fd >= 0) {
		pod->cgroup_id = (uint64_t)ino;
		pods_read_usage_fds(pod, fd, &pods->file_fds[index * USAGE_FILES], pods->cheap_usage);
		if (workload && fstat(fd, &st) == 0)
			pods_workload_xattrs(pods, pod, fd, st.st_uid);
		return 0;
	}
	fd = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		err = -errno;
	else if (!st.st_ino)
		err = -EINVAL;	/* 0 means unknown in struct pod */
	if (!err) {
		pod->cgroup_id = (uint64_t)st.st_ino;
		pods_read_usage_at(pod, fd, pods->cheap_usage);
		if (workload)
			pods_workload_xattrs(pods, pod, fd, st.st_uid);
	}
	if (err || !kept) {
		close(fd);
		fd = -1;
	}
	if (!err)
		pods_fds_keep(pods, index, fd);
	return err;
}

bool pods_is_directory(DIR *d, const struct dirent *entry)
{
	struct stat st;

	if (entry->d_type == DT_DIR)
		return true;
	if (entry->d_type != DT_UNKNOWN)
		return false;
	return fstatat(dirfd(d), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/* Add every pod cgroup directly in dir. Returns the count added or negative errno. */
static int scan_qos_dir(struct pods *pods, const char *dir, const char *prefix, const char *suffix,
			bool systemd, enum pod_qos qos)
{
	struct dirent *entry;
	int added = 0;
	DIR *d;

	d = opendir(dir);
	if (!d) {
		if (errno != ENOENT)
			log_warn("pods: opendir %s: %m", dir);
		return errno == ENOENT ? 0 : -errno;
	}
	while ((entry = readdir(d))) {
		char uid[64];
		struct pod *pod;

		if (!pod_uid_from_name(entry->d_name, prefix, suffix, systemd, uid, sizeof(uid)) ||
		    !pods_is_directory(d, entry))
			continue;
		pod = pods_add_pod(pods);
		if (!pod) {
			closedir(d);
			return -ENOMEM;
		}
		if (snprintf(pod->cgroup_path, sizeof(pod->cgroup_path), "%s/%s", dir, entry->d_name) >=
		    (int)sizeof(pod->cgroup_path) ||
		    pods_open_cgroup(d, entry->d_name, entry->d_ino, pod, pods, false)) {
			pods_drop_last(pods);
			continue;
		}
		strcpy(pod->uid, uid);
		pod->qos = qos;
		added++;
	}
	closedir(d);
	return added;
}

static int discover_kubepods(struct pods *pods)
{
	char dir[PATH_MAX];
	int err, found_tree = 0;
	struct stat st;

	/* systemd driver */
	if (stat(pods->kubepods[0], &st) == 0) {
		found_tree++;
		if ((err = scan_qos_dir(pods, pods->kubepods[0], "kubepods-pod", ".slice", true,
					POD_QOS_GUARANTEED)) < 0)
			return err;
		if (snprintf(dir, sizeof(dir), "%s/kubepods-burstable.slice", pods->kubepods[0]) >= (int)sizeof(dir))
			return -ENAMETOOLONG;
		if ((err = scan_qos_dir(pods, dir, "kubepods-burstable-pod", ".slice", true,
					POD_QOS_BURSTABLE)) < 0)
			return err;
		if (snprintf(dir, sizeof(dir), "%s/kubepods-besteffort.slice", pods->kubepods[0]) >= (int)sizeof(dir))
			return -ENAMETOOLONG;
		if ((err = scan_qos_dir(pods, dir, "kubepods-besteffort-pod", ".slice", true,
					POD_QOS_BESTEFFORT)) < 0)
			return err;
	}
	/* cgroupfs driver */
	if (stat(pods->kubepods[1], &st) == 0) {
		found_tree++;
		if ((err = scan_qos_dir(pods, pods->kubepods[1], "pod", "", false,
					POD_QOS_GUARANTEED)) < 0)
			return err;
		if (snprintf(dir, sizeof(dir), "%s/burstable", pods->kubepods[1]) >= (int)sizeof(dir))
			return -ENAMETOOLONG;
		if ((err = scan_qos_dir(pods, dir, "pod", "", false, POD_QOS_BURSTABLE)) < 0)
			return err;
		if (snprintf(dir, sizeof(dir), "%s/besteffort", pods->kubepods[1]) >= (int)sizeof(dir))
			return -ENAMETOOLONG;
		if ((err = scan_qos_dir(pods, dir, "pod", "", false, POD_QOS_BESTEFFORT)) < 0)
			return err;
	}
	if (!found_tree && pods_first_time(pods, "no-kubepods", pods->mount))
		log_warn("pods: neither %s nor %s exists; no pods yet", pods->kubepods[0],
			 pods->kubepods[1]);
	return 0;
}

static void mark_self(struct pods *pods)
{
	char self[PATH_MAX];
	int err = pods_read_self_cgroup(pods->root, pods->mount, self, sizeof(self));

	if (err) {
		if (pods_first_time(pods, "self", ""))
			log_warn("pods: cannot tell evictd's own cgroup from %s/proc/self/cgroup: %s",
				 pods->root, strerror(-err));
		return;
	}
	/* A pod containing evictd (at any depth) is evictd's pod. */
	for (size_t i = 0; i < pods->n_items; i++)
		pods->items[i].is_self = pods_path_is_ancestor(pods->items[i].cgroup_path, self);
}

/* 0, or -EINPROGRESS while the source reads its first list (pods_refresh holds). */
static int update_metadata(struct pods *pods)
{
	if (!pods->meta_source) {
		if (!pods->warned_no_source)
			log_warn("pods: no pod metadata source (--pods-file); every pod ranks as "
				 "priority 0 and static pods cannot be recognised");
		pods->warned_no_source = true;
		return 0;
	}
	/* On failure the source has logged and the last good list stays in use. */
	if (pods->meta_source->refresh(pods->meta_source, &pods->meta) == -EINPROGRESS) {
		if (!pods->warned_meta_pending)
			log_info("pods: the first pod list from %s is still being read; no pod is "
				 "evictable until it is in", pods->meta_source->name);
		pods->warned_meta_pending = true;
		return -EINPROGRESS;
	}
	pods->warned_meta_pending = false;
	return 0;
}

bool pods_meta_settling(const struct pods *pods, const char **example)
{
	const struct pod *unknown = NULL;

	if (!pods || pods->standalone || !pods->meta_source || !pods->meta_source->pending)
		return false;
	for (size_t i = 0; i < pods->n_items && !unknown; i++) {
		const struct pod *pod = &pods->items[i];

		if (pod->meta_unknown && pod->processes > 0 && !pod->exited)
			unknown = pod;
	}
	if (!unknown || !pods->meta_source->pending(pods->meta_source))
		return false;
	if (example)
		*example = unknown->cgroup_path;
	return true;
}

int pods_meta_wait(struct pods *pods, int64_t timeout_ns)
{
	if (!pods || !pods->meta_source || !pods->meta_source->wait)
		return 0;
	return pods->meta_source->wait(pods->meta_source, timeout_ns);
}

/* The disk use measured for a pod (expensive: disk.c) stays with it across refreshes, but
 * only while it is the same cgroup: same UID and same cgroup id. A cgroup recreated at the
 * same path is a new one and starts unmeasured. */
static void carry_disk_usage(struct pods *pods)
{
	size_t hint = 0;

	for (size_t i = 0; i < pods->n_items; i++) {
		struct pod *pod = &pods->items[i];
		const struct pod *old = NULL;

		/* readdir order rarely changes between refreshes: try the next one first. */
		for (size_t k = 0; k < pods->n_prev && !old; k++) {
			const struct pod *cand = &pods->prev[(hint + k) % pods->n_prev];

			if (cand->cgroup_id == pod->cgroup_id && strcmp(cand->uid, pod->uid) == 0) {
				old = cand;
				hint = (hint + k + 1) % pods->n_prev;
			}
		}
		if (!old)
			continue;
		pod->disk_bytes = old->disk_bytes;
		pod->disk_inodes = old->disk_inodes;
	}
}

/* Nothing changed in the watched tree: the same pods, their usage re-read through the kept
 * directory fds and the metadata joined again (it may have changed on its own: pod_derive
 * recomputes every metadata-derived field). */
static int refresh_in_place(struct pods *pods)
{
	pods->warn_generation++;
	for (size_t i = 0; i < pods->n_items; i++) {
		struct pod *pod = &pods->items[i];

		if (pods->dir_fds[i] >= 0)
			pods_read_usage_fds(pod, pods->dir_fds[i], &pods->file_fds[i * USAGE_FILES],
					    pods->cheap_usage);
		else
			pods_read_usage(pod);
		pods->ptrs[i] = pod;
	}
	if (!pods->standalone)
		pods_join_metadata(pods);
	mark_self(pods);
	return 0;
}

int pods_refresh(struct pods *pods)
{
	struct pod *swap_items;
	size_t swap_cap;
	int err;

	if (!pods)
		return -EINVAL;
	if (!pods->standalone) {
		/* Held: static pods cannot be told from others yet (pods.h). */
		err = update_metadata(pods);
		if (err) {
			pods->n_items = 0;
			pods_fds_close(pods);
			pods->watching = false;
			return err;
		}
	}
	if (!pods_watch_need_discovery(pods) && pods->n_fds == pods->n_items)
		return refresh_in_place(pods);
	/* The old table's fds, for the cgroups the discovery finds again (pods_open_cgroup). */
	pods_fds_retire(pods);
	/* Keep the last table as prev; the new one is built in prev's old buffer. */
	swap_items = pods->prev;
	swap_cap = pods->cap_prev;
	pods->prev = pods->items;
	pods->cap_prev = pods->cap_items;
	pods->n_prev = pods->n_items;
	pods->items = swap_items;
	pods->cap_items = swap_cap;
	pods->n_items = 0;
	pods->warn_generation++;
	err = pods->standalone ? pods_discover_workloads(pods) : discover_kubepods(pods);
	pods_fds_retired_close(pods);	/* cgroups gone, or not found again */
	if (err) {
		pods->n_items = 0;
		pods_fds_close(pods);
		pods->watching = false;	/* try the whole discovery again next time */
		errno = -err;
		log_err("pods: discovery failed: %m");
		return err;
	}
	if (!pods->standalone)
		pods_join_metadata(pods);
	/* Usage was read at discovery, through the fd the cgroup id came from. */
	for (size_t i = 0; i < pods->n_items; i++)
		pods->ptrs[i] = &pods->items[i];
	carry_disk_usage(pods);
	mark_self(pods);
	return 0;
}

int pods_refresh_usage(struct pods *pods)
{
	if (!pods)
		return -EINVAL;
	for (size_t i = 0; i < pods->n_items; i++) {
		if (i < pods->n_fds && pods->dir_fds[i] >= 0)
			pods_read_usage_fds(&pods->items[i], pods->dir_fds[i],
					    &pods->file_fds[i * USAGE_FILES], pods->cheap_usage);
		else
			pods_read_usage(&pods->items[i]);
	}
	return 0;
}

struct pod **pods_list(struct pods *pods, size_t *n_pods)
{
	if (!pods || !n_pods) {
		if (n_pods)
			*n_pods = 0;
		return NULL;
	}
	*n_pods = pods->n_items;
	return pods->ptrs;
}

size_t pods_kill_roots(const struct pods *pods, const char **roots, size_t max)
{
	size_t n = 0;

	if (!pods || !roots)
		return 0;
	if (pods->standalone) {
		for (size_t i = 0; i < pods->n_workload_roots && n < max; i++)
			roots[n++] = pods->workload_roots[i];
		return n;
	}
	for (size_t i = 0; i < KUBEPODS_DIRS && n < max; i++)
		roots[n++] = pods->kubepods[i];
	return n;
}

const char *pods_cgroup_mount(const struct pods *pods)
{
	return pods ? pods->mount : NULL;
}
