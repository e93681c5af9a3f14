// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Per-pod disk use (pods_read_disk_usage): local volume and log dir walks; the writable
 * layers come from crictl.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "core/arith.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "pods/crictl.h"
#include "pods/internal.h"


/* ---- disk usage (DESIGN.md §5) ----------------------------------------------------------------
 *
 * What the kubelet's rankDiskPressureFunc measures comes from the summary API: container
 * Rootfs (the runtime's writable layer) and Logs, and the VolumeStats of the pod's local
 * volumes (helpers.go podDiskUsage, containerUsage, podLocalVolumeUsage, localVolumeNames).
 * etc-hosts and the pod-level log files only enter PodStats.EphemeralStorage
 * (stats/helper.go calcEphemeralStorage), which eviction uses for ephemeral-storage limits,
 * not for ranking; they are not counted here.
 */

#define DISK_WALK_MAX_DEPTH 128

/* Memory-backed filesystems: an emptyDir with medium Memory or HugePages* is one of these,
 * and IsLocalEphemeralVolume excludes it. Values from linux/magic.h. */
#define DISK_TMPFS_MAGIC 0x01021994
#define DISK_RAMFS_MAGIC 0x858458f6
#define DISK_HUGETLBFS_MAGIC 0x958458f6

/* The volume plugins whose dirs hold IsLocalEphemeralVolume volumes (escaped plugin names:
 * '/' becomes '~'). Secrets, projected and downwardAPI volumes live on tmpfs and are not
 * local ephemeral volumes; hostPath has no dir here and reports no metrics. */
static const char *const local_volume_plugins[] = {
	"kubernetes.io~empty-dir",
	"kubernetes.io~configmap",
	"kubernetes.io~git-repo",
};

/* (dev, ino) of inodes with more than one link already counted for the pod. */
struct inode_set {
	struct { uint64_t dev, ino; } *slots;	/* ino 0 = empty */
	size_t cap, used;
};

static void inode_set_clear(struct inode_set *set)
{
	if (set->used)
		memset(set->slots, 0, set->cap * sizeof(*set->slots));
	set->used = 0;
}

static size_t inode_hash(uint64_t dev, uint64_t ino, size_t cap)
{
	uint64_t h = (ino ^ (dev * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;

	return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

/* true when (dev, ino) was not in the set (it is now, memory permitting). */
static bool inode_set_add(struct inode_set *set, uint64_t dev, uint64_t ino)
{
	size_t i;

	if (!ino)
		ino = UINT64_MAX;	/* 0 marks empty slots */
	if ((set->used + 1) * 2 > set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 256;
		__typeof__(set->slots) slots = calloc(cap, sizeof(*slots));

		if (!slots)
			return true;	/* count it again rather than fail the walk */
		for (size_t j = 0; j < set->cap; j++) {
			if (!set->slots[j].ino)
				continue;
			i = inode_hash(set->slots[j].dev, set->slots[j].ino, cap);
			while (slots[i].ino)
				i = (i + 1) & (cap - 1);
			slots[i] = set->slots[j];
		}
		free(set->slots);
		set->slots = slots;
		set->cap = cap;
	}
	for (i = inode_hash(dev, ino, set->cap); set->slots[i].ino; i = (i + 1) & (set->cap - 1)) {
		if (set->slots[i].dev == dev && set->slots[i].ino == ino)
			return false;
	}
	set->slots[i].dev = dev;
	set->slots[i].ino = ino;
	set->used++;
	return true;
}

struct disk_walk {
	dev_t dev;		/* the starting dir's filesystem */
	size_t max_entries;
	size_t entries;		/* entries examined (the cap's measure) */
	int max_depth;		/* dirs at this depth are counted but not entered */
	bool count_dirs;	/* fs.DiskUsage counts dirs; log stats count files only */
	bool capped;		/* max_entries reached: the walk stopped */
	bool too_deep;		/* dirs past DISK_WALK_MAX_DEPTH were left out */
	int64_t bytes, inodes;
	struct inode_set *links;
};

static void walk_account(struct disk_walk *walk, const struct stat *st)
{
	if (S_ISDIR(st->st_mode) && !walk->count_dirs)
		return;
	/* Dedupe what may be hard links, as fs.DiskUsage does (nlink > 1). */
	if (!S_ISDIR(st->st_mode) && st->st_nlink > 1 &&
	    !inode_set_add(walk->links, (uint64_t)st->st_dev, (uint64_t)st->st_ino))
		return;
	walk->bytes = sat_add_i64(walk->bytes, (int64_t)st->st_blocks * 512);
	walk->inodes = sat_add_i64(walk->inodes, 1);
}

/* Walk the open dir fd (consumed) at depth `depth` (the starting dir is 0). */
static void walk_dir(struct disk_walk *walk, int fd, int depth)
{
	struct dirent *entry;
	DIR *d = fdopendir(fd);

	if (!d) {
		close(fd);
		return;
	}
	while (!walk->capped && (entry = readdir(d))) {
		struct stat st, opened;
		int child;

		if (entry->d_name[0] == '.' && (!entry->d_name[1] ||
						 (entry->d_name[1] == '.' && !entry->d_name[2])))
			continue;
		if (walk->entries >= walk->max_entries) {
			walk->capped = true;
			break;
		}
		walk->entries++;
		/* Gone since readdir: fine, as for the kubelet. Never follow a symlink. */
		if (fstatat(dirfd(d), entry->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		/* Another filesystem mounted here: neither counted nor entered. */
		if (st.st_dev != walk->dev)
			continue;
		walk_account(walk, &st);
		if (!S_ISDIR(st.st_mode) || depth + 1 >= walk->max_depth) {
			if (S_ISDIR(st.st_mode) && walk->max_depth >= DISK_WALK_MAX_DEPTH)
				walk->too_deep = true;	/* not followed: say so */
			continue;
		}
		child = openat(dirfd(d), entry->d_name,
			       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (child < 0)
			continue;
		/* Swapped for something else since the fstatat: skip it. */
		if (fstat(child, &opened) || opened.st_dev != st.st_dev || opened.st_ino != st.st_ino) {
			close(child);
			continue;
		}
		walk_dir(walk, child, depth + 1);
	}
	closedir(d);
}

struct disk_ctx {
	struct pods *pods;
	size_t max_entries;
	struct inode_set links;		/* per pod */
	struct pods_disk_report *report;
};

/* Walk the tree at dir_fd/name. count_dirs: dirs count, the starting one too (fs.DiskUsage).
 * skip_memory: a memory-backed filesystem is skipped (returns 1). Adds to *bytes, *inodes. */
static int walk_tree(struct disk_ctx *ctx, int dir_fd, const char *name, const char *path_for_log,
		     int max_depth, bool count_dirs, bool skip_memory, int64_t *bytes, int64_t *inodes)
{
	struct disk_walk walk = {
		.max_entries = ctx->max_entries,
		.max_depth = max_depth,
		.count_dirs = count_dirs,
		.links = &ctx->links,
	};
	struct statfs sfs;
	struct stat st;
	int fd;

	fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		close(fd);
		return -errno;
	}
	if (skip_memory && fstatfs(fd, &sfs) == 0 &&
	    ((unsigned long)sfs.f_type == DISK_TMPFS_MAGIC ||
	     (unsigned long)sfs.f_type == DISK_RAMFS_MAGIC ||
	     (unsigned long)sfs.f_type == DISK_HUGETLBFS_MAGIC)) {
		close(fd);
		ctx->report->memory_volumes_skipped++;
		return 1;
	}
	walk.dev = st.st_dev;
	if (count_dirs)
		walk_account(&walk, &st);
	ctx->report->walks++;
	walk_dir(&walk, fd, 0);
	if (walk.capped || walk.too_deep) {
		ctx->report->capped_walks++;
		log_msg(pods_first_time(ctx->pods, "disk-walk-capped", path_for_log) ? LOGLEVEL_WARN :
										  LOGLEVEL_DEBUG,
			"pods: %s: stopped counting after %zu entries (limit %zu, depth limit %d); "
			"its disk use is under-counted", path_for_log, walk.entries, walk.max_entries,
			DISK_WALK_MAX_DEPTH);
	}
	*bytes = sat_add_i64(*bytes, walk.bytes);
	*inodes = sat_add_i64(*inodes, walk.inodes);
	return 0;
}

/* The pod's local volumes under <kubelet>/pods/<uid>/volumes. */
static void measure_volumes(struct disk_ctx *ctx, const char *kubelet_dir, struct pod *pod)
{
	for (size_t p = 0; p < sizeof(local_volume_plugins) / sizeof(local_volume_plugins[0]); p++) {
		char dir[PATH_MAX], path[PATH_MAX];
		struct dirent *entry;
		DIR *d;
		int fd;

		if (snprintf(dir, sizeof(dir), "%s/pods/%s/volumes/%s", kubelet_dir, pod->uid,
			     local_volume_plugins[p]) >= (int)sizeof(dir))
			continue;
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;	/* the pod has no volume of this kind */
		d = fdopendir(fd);
		if (!d) {
			close(fd);
			continue;
		}
		while ((entry = readdir(d))) {
			if (entry->d_name[0] == '.' && (!entry->d_name[1] ||
							 (entry->d_name[1] == '.' && !entry->d_name[2])))
				continue;
			/* A symlink or file here is no volume: openat(O_NOFOLLOW|O_DIRECTORY) fails. */
			if (snprintf(path, sizeof(path), "%s/%s", dir, entry->d_name) >= (int)sizeof(path))
				path[sizeof(path) - 1] = '\0';	/* only names it in messages */
			walk_tree(ctx, dirfd(d), entry->d_name, path, DISK_WALK_MAX_DEPTH, true, true,
				  &pod->disk_bytes.volumes, &pod->disk_inodes.volumes);
		}
		closedir(d);
	}
}

static int cmp_pod_uid(const void *a, const void *b)
{
	return strcmp((*(struct pod *const *)a)->uid, (*(struct pod *const *)b)->uid);
}

static struct pod *find_pod_by_uid(struct pod **sorted, size_t n, const char *uid)
{
	struct pod key, *keyp = &key, **found;

	if (strlen(uid) >= sizeof(key.uid))
		return NULL;
	strcpy(key.uid, uid);
	found = bsearch(&keyp, sorted, n, sizeof(*sorted), cmp_pod_uid);
	return found ? *found : NULL;
}

/* <log_dir>/<namespace>_<name>_<uid>/: files in it and in its container dirs
 * (kuberuntime BuildPodLogsDirectory / BuildContainerLogsDirectory). */
static void measure_logs(struct disk_ctx *ctx, const char *log_dir, struct pod **sorted, size_t n)
{
	struct dirent *entry;
	DIR *d;
	int fd;

	fd = open(log_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		if (pods_first_time(ctx->pods, "disk-log-dir", log_dir))
			log_msg(errno == ENOENT ? LOGLEVEL_INFO : LOGLEVEL_WARN,
				"pods: pod log dir %s: %m; container logs count 0 in disk ranking",
				log_dir);
		return;
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((entry = readdir(d))) {
		const char *uid = strrchr(entry->d_name, '_');
		char path[PATH_MAX];
		struct pod *pod;

		/* UIDs hold no '_'; namespaces and names cannot either (DNS labels). */
		if (!uid || uid == entry->d_name || !(pod = find_pod_by_uid(sorted, n, uid + 1)))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", log_dir, entry->d_name) >= (int)sizeof(path))
			path[sizeof(path) - 1] = '\0';	/* only names it in messages */
		inode_set_clear(&ctx->links);
		/* Depth 2: the pod dir's files, its container dirs' files; no dirs counted. */
		walk_tree(ctx, dirfd(d), entry->d_name, path, 2, false, false, &pod->disk_bytes.logs,
			  &pod->disk_inodes.logs);
	}
	closedir(d);
}

struct pods_by_uid {
	struct pod **sorted;
	size_t n;
};

static bool add_writable(void *ctx, const char *uid, int64_t used, int64_t inodes)
{
	struct pods_by_uid *by_uid = ctx;
	struct pod *pod = find_pod_by_uid(by_uid->sorted, by_uid->n, uid);

	if (!pod)
		return false;
	pod->disk_bytes.writable = sat_add_i64(pod->disk_bytes.writable, used);
	pod->disk_inodes.writable = sat_add_i64(pod->disk_inodes.writable, inodes);
	return true;
}

static void crictl_failed(struct pods *pods, const char *what, const char *detail)
{
	char key[320];

	snprintf(key, sizeof(key), "%s|%s", what, detail);
	log_msg(pods_first_time(pods, "crictl-failed", key) ? LOGLEVEL_WARN : LOGLEVEL_DEBUG,
		"pods: %s%s%s; containers' writable layers count 0 in disk ranking", what,
		detail[0] ? ": " : "", detail);
}

static void measure_writable(struct pods *pods, const struct pods_disk_options *options,
			     struct pod **sorted, size_t n, struct pods_disk_report *report)
{
	const char *name = options->crictl ? options->crictl : "crictl";
	char path[PATH_MAX], err_tail[256], what[PATH_MAX + 64];
	char *argv[8], *out = NULL;
	size_t argc = 0, out_len = 0;
	int status = 0, err;

	if (!name[0]) {
		report->crictl_status = -ENOENT;	/* asked not to */
		return;
	}
	err = pods_crictl_resolve(name, path, sizeof(path));
	if (err) {
		report->crictl_status = -ENOENT;
		if (pods_first_time(pods, "crictl-missing", name))
			log_warn("pods: %s %s; containers' writable layers count 0 in disk ranking",
				 name, strchr(name, '/') ? "is not executable" : "is not in PATH");
		return;
	}
	argv[argc++] = path;
	if (options->runtime_endpoint && options->runtime_endpoint[0]) {
		argv[argc++] = (char *)"--runtime-endpoint";
		argv[argc++] = (char *)options->runtime_endpoint;
	}
	argv[argc++] = (char *)"stats";
	argv[argc++] = (char *)"-o";
	argv[argc++] = (char *)"json";
	argv[argc] = NULL;
	snprintf(what, sizeof(what), "%s stats -o json", path);

	err = pods_run_capture(argv, options->crictl_timeout_ns > 0 ? options->crictl_timeout_ns :
								 PODS_CRICTL_DEFAULT_TIMEOUT_NS,
			  PODS_CRICTL_MAX_OUTPUT, &out, &out_len, err_tail, sizeof(err_tail), &status);
	for (char *p = err_tail; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	for (size_t len = strlen(err_tail); len && err_tail[len - 1] == ' '; )
		err_tail[--len] = '\0';
	if (err) {
		report->crictl_status = err;
		crictl_failed(pods, what, err == -ETIMEDOUT ? "timed out and was killed" :
					   err == -E2BIG ? "output too large" : strerror(-err));
		return;
	}
	if (status) {
		char detail[320];

		report->crictl_status = status;
		snprintf(detail, sizeof(detail), "exited %d%s%s", status, err_tail[0] ? ": " : "",
			 err_tail);
		crictl_failed(pods, what, detail);
		free(out);
		return;
	}
	err = pods_crictl_parse_stats(out, out_len, add_writable, &(struct pods_by_uid){ sorted, n });
	free(out);
	if (err < 0) {
		/* Half-applied sums are no use: all writable layers back to 0. */
		for (size_t i = 0; i < n; i++)
			sorted[i]->disk_bytes.writable = sorted[i]->disk_inodes.writable = 0;
		report->crictl_status = err;
		crictl_failed(pods, what, err == -EINVAL ? "output is not a container stats JSON "
							   "document" : strerror(-err));
		return;
	}
	report->crictl_status = 0;
	report->crictl_containers = (size_t)err;
}

int pods_read_disk_usage(struct pods *pods, const struct pods_disk_options *options)
{
	static const struct pods_disk_options defaults;
	struct pods_disk_report scratch;
	char kubelet_dir[PATH_MAX], log_dir[PATH_MAX];
	struct disk_ctx ctx = { 0 };
	struct pod **sorted = NULL;
	unsigned int parts;
	int64_t start = clock_monotonic_ns();
	size_t n = 0;
	int err;

	if (!pods)
		return -EINVAL;
	if (!options)
		options = &defaults;
	ctx.pods = pods;
	ctx.report = options->report ? options->report : &scratch;
	memset(ctx.report, 0, sizeof(*ctx.report));
	ctx.report->crictl_status = 1;
	ctx.max_entries = options->max_entries ? options->max_entries : PODS_DISK_MAX_ENTRIES;
	parts = options->parts ? options->parts : PODS_DISK_ALL;

	for (size_t i = 0; i < pods->n_items; i++) {
		memset(&pods->items[i].disk_bytes, 0, sizeof(pods->items[i].disk_bytes));
		memset(&pods->items[i].disk_inodes, 0, sizeof(pods->items[i].disk_inodes));
	}
	if (pods->standalone || !pods->n_items)
		goto out;

	err = pods_join_path(kubelet_dir, sizeof(kubelet_dir), pods->root,
			options->kubelet_dir && options->kubelet_dir[0] ? options->kubelet_dir :
									    PODS_DEFAULT_KUBELET_DIR);
	if (!err)
		err = pods_join_path(log_dir, sizeof(log_dir), pods->root,
				options->log_dir && options->log_dir[0] ? options->log_dir :
									PODS_DEFAULT_LOG_DIR);
	if (err) {
		log_err("pods: kubelet or pod log dir path too long; disk use not measured");
		goto out;
	}
	sorted = malloc(pods->n_items * sizeof(*sorted));
	if (!sorted) {
		log_err("pods: out of memory measuring disk use");
		goto out;
	}
	for (size_t i = 0; i < pods->n_items; i++)
		sorted[n++] = &pods->items[i];
	qsort(sorted, n, sizeof(*sorted), cmp_pod_uid);
	ctx.report->pods = n;

	for (size_t i = 0; i < n && (parts & PODS_DISK_VOLUMES); i++) {
		/* Hard links are counted once per pod: a pod's volumes may share inodes. */
		inode_set_clear(&ctx.links);
		measure_volumes(&ctx, kubelet_dir, sorted[i]);
	}
	/* Log dirs are walked in directory order, each with a fresh set: a hard link between
	 * a pod's volumes and its logs would count twice (the kubelet dedupes only within
	 * one volume, and within one log file). */
	if (parts & PODS_DISK_LOGS)
		measure_logs(&ctx, log_dir, sorted, n);
	if (parts & PODS_DISK_WRITABLE)
		measure_writable(pods, options, sorted, n, ctx.report);
out:
	free(ctx.links.slots);
	free(sorted);
	ctx.report->elapsed_ns = clock_monotonic_ns() - start;
	return 0;
}
