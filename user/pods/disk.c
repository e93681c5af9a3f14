// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Per-pod disk use: local volume and log dir walks, the writable layers from crictl.c. One
 * job type serves both entry points: pods_disk_usage_start() runs it in a worker thread on
 * a snapshot of the table (the event loop never blocks, doc/DESIGN.md "The loop never
 * waits"), pods_read_disk_usage() runs it inline. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "core/arith.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "pods/crictl.h"
#include "pods/internal.h"
#include "sys/fileio.h"


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

/* A message for the caller's thread: the worker logs nothing itself (log lines from two
 * threads would interleave, and the "logged once" set belongs to the table). */
struct disk_note {
	char *kind;
	char *key;
	char *text;
	enum log_level level;	/* the first time (kind, key) is seen; later at debug */
};

/* One pod of the snapshot the worker measures. */
struct disk_entry {
	char uid[64];
	uint64_t cgroup_id;
	struct pod_disk_usage bytes, inodes;
};

struct pods_disk_job {
	/* The snapshot: the worker reads only this, never the table. */
	char kubelet_dir[PATH_MAX];
	char log_dir[PATH_MAX];
	char crictl_name[PATH_MAX];	/* for messages */
	char crictl_path[PATH_MAX];	/* resolved; "" when not run */
	int crictl_resolve_err;		/* 0, or why crictl_path is "" (-ENOENT: not asked) */
	char *runtime_endpoint;
	int64_t crictl_timeout_ns;
	size_t max_entries;
	unsigned int parts;
	bool measure;			/* Kubernetes mode with pods: anything to walk */
	struct disk_entry *entries;	/* sorted by uid */
	size_t n_entries;
	struct pods_disk_report *report_out;	/* the caller's, filled by finish */

	/* The worker's results. */
	struct pods_disk_report report;
	struct disk_note *notes;
	size_t n_notes, cap_notes;
	struct inode_set links;		/* per pod */
	int64_t start_ns;

	/* Hand-over: done and cancelled change under lock; whoever sees the other flag set
	 * frees the job. stop is cancelled as the worker polls it, without the lock. */
	pthread_mutex_t lock;
	bool done, cancelled;
	int stop;
	int efd;
};

static size_t jobs_running;	/* worker threads alive (atomic) */

static void __attribute__((format(printf, 5, 6)))
note(struct pods_disk_job *job, enum log_level level, const char *kind, const char *key,
     const char *fmt, ...)
{
	int saved_errno = errno;	/* for a %m in fmt: the allocations below may change it */
	struct disk_note *slot;
	va_list ap;
	int n;

	if (job->n_notes == job->cap_notes) {
		size_t cap = job->cap_notes ? job->cap_notes * 2 : 8;
		struct disk_note *grown;

		/* Bounded: one per capped walk at most, plus a few for crictl and the log dir. */
		if (cap > 4096 || !(grown = realloc(job->notes, cap * sizeof(*grown))))
			return;
		job->notes = grown;
		job->cap_notes = cap;
	}
	slot = &job->notes[job->n_notes];
	slot->level = level;
	slot->kind = strdup(kind);
	slot->key = strdup(key);
	va_start(ap, fmt);
	errno = saved_errno;
	n = vasprintf(&slot->text, fmt, ap);
	va_end(ap);
	if (n < 0 || !slot->kind || !slot->key) {
		if (n >= 0)
			free(slot->text);
		free(slot->kind);
		free(slot->key);
		return;
	}
	job->n_notes++;
}

/* Walk the tree at dir_fd/name. count_dirs: dirs count, the starting one too (fs.DiskUsage).
 * skip_memory: a memory-backed filesystem is skipped (returns 1). Adds to *bytes, *inodes. */
static int walk_tree(struct pods_disk_job *job, int dir_fd, const char *name,
		     const char *path_for_log, int max_depth, bool count_dirs, bool skip_memory,
		     int64_t *bytes, int64_t *inodes)
{
	struct disk_walk walk = {
		.max_entries = job->max_entries,
		.max_depth = max_depth,
		.count_dirs = count_dirs,
		.links = &job->links,
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
		job->report.memory_volumes_skipped++;
		return 1;
	}
	walk.dev = st.st_dev;
	if (count_dirs)
		walk_account(&walk, &st);
	job->report.walks++;
	walk_dir(&walk, fd, 0);
	if (walk.capped || walk.too_deep) {
		job->report.capped_walks++;
		note(job, LOGLEVEL_WARN, "disk-walk-capped", path_for_log,
		     "pods: %s: stopped counting after %zu entries (limit %zu, depth limit %d); "
		     "its disk use is under-counted", path_for_log, walk.entries, walk.max_entries,
		     DISK_WALK_MAX_DEPTH);
	}
	*bytes = sat_add_i64(*bytes, walk.bytes);
	*inodes = sat_add_i64(*inodes, walk.inodes);
	return 0;
}

/* The pod's local volumes under <kubelet>/pods/<uid>/volumes. */
static void measure_volumes(struct pods_disk_job *job, struct disk_entry *pod)
{
	for (size_t p = 0; p < sizeof(local_volume_plugins) / sizeof(local_volume_plugins[0]); p++) {
		char dir[PATH_MAX], path[PATH_MAX];
		struct dirent *entry;
		DIR *d;
		int fd;

		if (snprintf(dir, sizeof(dir), "%s/pods/%s/volumes/%s", job->kubelet_dir, pod->uid,
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
			walk_tree(job, dirfd(d), entry->d_name, path, DISK_WALK_MAX_DEPTH, true, true,
				  &pod->bytes.volumes, &pod->inodes.volumes);
		}
		closedir(d);
	}
}

static int cmp_entry_uid(const void *a, const void *b)
{
	return strcmp(((const struct disk_entry *)a)->uid, ((const struct disk_entry *)b)->uid);
}

/* The first entry with uid (entries are sorted; equal UIDs sit together). */
static struct disk_entry *find_entry(struct disk_entry *entries, size_t n, const char *uid)
{
	struct disk_entry key, *found;

	if (!n || strlen(uid) >= sizeof(key.uid))	/* !n: no array; bsearch(NULL) is UB */
		return NULL;
	strcpy(key.uid, uid);
	found = bsearch(&key, entries, n, sizeof(*entries), cmp_entry_uid);
	while (found && found > entries && strcmp(found[-1].uid, uid) == 0)
		found--;
	return found;
}

/* <log_dir>/<namespace>_<name>_<uid>/: files in it and in its container dirs
 * (kuberuntime BuildPodLogsDirectory / BuildContainerLogsDirectory). */
static void measure_logs(struct pods_disk_job *job)
{
	struct dirent *entry;
	DIR *d;
	int fd;

	fd = open(job->log_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		note(job, errno == ENOENT ? LOGLEVEL_INFO : LOGLEVEL_WARN, "disk-log-dir",
		     job->log_dir, "pods: pod log dir %s: %m; container logs count 0 in disk ranking",
		     job->log_dir);
		return;
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while (!__atomic_load_n(&job->stop, __ATOMIC_RELAXED) && (entry = readdir(d))) {
		const char *uid = strrchr(entry->d_name, '_');
		char path[PATH_MAX];
		struct disk_entry *pod;

		/* UIDs hold no '_'; namespaces and names cannot either (DNS labels). */
		if (!uid || uid == entry->d_name ||
		    !(pod = find_entry(job->entries, job->n_entries, uid + 1)))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", job->log_dir, entry->d_name) >= (int)sizeof(path))
			path[sizeof(path) - 1] = '\0';	/* only names it in messages */
		inode_set_clear(&job->links);
		/* Depth 2: the pod dir's files, its container dirs' files; no dirs counted. */
		walk_tree(job, dirfd(d), entry->d_name, path, 2, false, false, &pod->bytes.logs,
			  &pod->inodes.logs);
	}
	closedir(d);
}

static bool add_writable(void *ctx, const char *uid, int64_t used, int64_t inodes)
{
	struct pods_disk_job *job = ctx;
	struct disk_entry *pod = find_entry(job->entries, job->n_entries, uid);

	if (!pod)
		return false;
	pod->bytes.writable = sat_add_i64(pod->bytes.writable, used);
	pod->inodes.writable = sat_add_i64(pod->inodes.writable, inodes);
	return true;
}

static void crictl_failed(struct pods_disk_job *job, const char *what, const char *detail)
{
	char key[PATH_MAX + 512];	/* what, "|", detail: all of both */

	snprintf(key, sizeof(key), "%s|%s", what, detail);
	note(job, LOGLEVEL_WARN, "crictl-failed", key,
	     "pods: %s%s%s; containers' writable layers count 0 in disk ranking", what,
	     detail[0] ? ": " : "", detail);
}

static void measure_writable(struct pods_disk_job *job)
{
	char err_tail[256], what[PATH_MAX + 64];
	char *argv[8], *out = NULL;
	size_t argc = 0, out_len = 0;
	int status = 0, err;
	pid_t unreaped = 0;

	if (job->crictl_resolve_err) {
		job->report.crictl_status = -ENOENT;
		/* crictl "" (not asked) is no failure: crictl_name is then empty. */
		if (job->crictl_name[0])
			note(job, LOGLEVEL_WARN, "crictl-missing", job->crictl_name,
			     "pods: %s %s; containers' writable layers count 0 in disk ranking",
			     job->crictl_name, strchr(job->crictl_name, '/') ? "is not executable" :
									      "is not in PATH");
		return;
	}
	argv[argc++] = job->crictl_path;
	if (job->runtime_endpoint) {
		argv[argc++] = (char *)"--runtime-endpoint";
		argv[argc++] = job->runtime_endpoint;
	}
	argv[argc++] = (char *)"stats";
	argv[argc++] = (char *)"-o";
	argv[argc++] = (char *)"json";
	argv[argc] = NULL;
	snprintf(what, sizeof(what), "%s stats -o json", job->crictl_path);

	err = pods_run_capture(argv, job->crictl_timeout_ns, PODS_CRICTL_MAX_OUTPUT, &job->stop,
			       &out, &out_len, err_tail, sizeof(err_tail), &status, &unreaped);
	if (unreaped)
		note(job, LOGLEVEL_ERR, "crictl-unreaped", what,
		     "pods: %s (pid %d) did not die of SIGKILL within %lld ms; left behind "
		     "unreaped", what, (int)unreaped, PODS_CRICTL_REAP_NS / 1000000);
	for (char *p = err_tail; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	for (size_t len = strlen(err_tail); len && err_tail[len - 1] == ' '; )
		err_tail[--len] = '\0';
	if (err) {
		job->report.crictl_status = err;
		crictl_failed(job, what, err == -ETIMEDOUT ? "timed out and was killed" :
					 err == -E2BIG ? "output too large" : strerror(-err));
		return;
	}
	if (status) {
		char detail[320];

		job->report.crictl_status = status;
		snprintf(detail, sizeof(detail), "exited %d%s%s", status, err_tail[0] ? ": " : "",
			 err_tail);
		crictl_failed(job, what, detail);
		free(out);
		return;
	}
	err = pods_crictl_parse_stats(out, out_len, add_writable, job);
	free(out);
	if (err < 0) {
		/* Half-applied sums are no use: all writable layers back to 0. */
		for (size_t i = 0; i < job->n_entries; i++)
			job->entries[i].bytes.writable = job->entries[i].inodes.writable = 0;
		job->report.crictl_status = err;
		crictl_failed(job, what, err == -EINVAL ? "output is not a container stats JSON "
							  "document" : strerror(-err));
		return;
	}
	job->report.crictl_status = 0;
	job->report.crictl_containers = (size_t)err;
}

/* The measurement itself: touches only the job. */
static void job_run(struct pods_disk_job *job)
{
	if (job->measure) {
		job->report.pods = job->n_entries;
		for (size_t i = 0; i < job->n_entries && (job->parts & PODS_DISK_VOLUMES); i++) {
			if (__atomic_load_n(&job->stop, __ATOMIC_RELAXED))
				break;
			/* Hard links are counted once per pod: a pod's volumes may share inodes. */
			inode_set_clear(&job->links);
			measure_volumes(job, &job->entries[i]);
		}
		/* Log dirs are walked in directory order, each with a fresh set: a hard link
		 * between a pod's volumes and its logs would count twice (the kubelet dedupes
		 * only within one volume, and within one log file). */
		if ((job->parts & PODS_DISK_LOGS) && !__atomic_load_n(&job->stop, __ATOMIC_RELAXED))
			measure_logs(job);
		if ((job->parts & PODS_DISK_WRITABLE) && !__atomic_load_n(&job->stop, __ATOMIC_RELAXED))
			measure_writable(job);
	}
	free(job->links.slots);
	job->links.slots = NULL;
	job->links.cap = job->links.used = 0;
	job->report.elapsed_ns = clock_monotonic_ns() - job->start_ns;
}

static void job_free(struct pods_disk_job *job)
{
	if (!job)
		return;
	for (size_t i = 0; i < job->n_notes; i++) {
		free(job->notes[i].kind);
		free(job->notes[i].key);
		free(job->notes[i].text);
	}
	free(job->notes);
	free(job->links.slots);
	free(job->entries);
	free(job->runtime_endpoint);
	if (job->efd >= 0)
		close(job->efd);
	pthread_mutex_destroy(&job->lock);
	free(job);
}

static void *job_thread(void *arg)
{
	struct pods_disk_job *job = arg;
	bool cancelled;

	job_run(job);
	pthread_mutex_lock(&job->lock);
	job->done = true;
	cancelled = job->cancelled;
	if (!cancelled)
		eventfd_write(job->efd, 1);
	pthread_mutex_unlock(&job->lock);
	if (cancelled) {
		/* Nobody will read the notes; a child left behind is still worth a line. */
		for (size_t i = 0; i < job->n_notes; i++) {
			if (strcmp(job->notes[i].kind, "crictl-unreaped") == 0) {
				flockfile(stderr);
				log_msg(job->notes[i].level, "%s", job->notes[i].text);
				funlockfile(stderr);
			}
		}
		job_free(job);
	}
	__atomic_sub_fetch(&jobs_running, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* Snapshot what the measurement needs. Runs in the caller's thread: getenv(PATH) and the
 * table are read here only. */
static int job_new(struct pods *pods, const struct pods_disk_options *options,
		   struct pods_disk_job **out)
{
	const char *name = options->crictl ? options->crictl : "crictl";
	struct pods_disk_job *job;
	int err;

	job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	job->efd = -1;
	pthread_mutex_init(&job->lock, NULL);
	job->start_ns = clock_monotonic_ns();
	job->report.crictl_status = 1;
	job->report_out = options->report;
	job->max_entries = options->max_entries ? options->max_entries : PODS_DISK_MAX_ENTRIES;
	job->parts = options->parts ? options->parts : PODS_DISK_ALL;
	job->crictl_timeout_ns = options->crictl_timeout_ns > 0 ? options->crictl_timeout_ns :
								   PODS_CRICTL_DEFAULT_TIMEOUT_NS;
	job->measure = !pods->standalone && pods->n_items;

	/* Every pod is in the snapshot: finish resets standalone workloads to 0 as well. */
	if (pods->n_items) {
		job->entries = calloc(pods->n_items, sizeof(*job->entries));
		if (!job->entries) {
			job_free(job);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < pods->n_items; i++) {
		memcpy(job->entries[i].uid, pods->items[i].uid, sizeof(job->entries[i].uid));
		job->entries[i].cgroup_id = pods->items[i].cgroup_id;
	}
	job->n_entries = pods->n_items;
	if (job->n_entries > 1)	/* no pods: no array, and qsort(NULL, 0) is UB */
		qsort(job->entries, job->n_entries, sizeof(*job->entries), cmp_entry_uid);
	if (!job->measure)
		goto done;

	err = fileio_join_root(job->kubelet_dir, sizeof(job->kubelet_dir), pods->root,
			     options->kubelet_dir && options->kubelet_dir[0] ? options->kubelet_dir :
									       PODS_DEFAULT_KUBELET_DIR);
	if (!err)
		err = fileio_join_root(job->log_dir, sizeof(job->log_dir), pods->root,
				     options->log_dir && options->log_dir[0] ? options->log_dir :
									   PODS_DEFAULT_LOG_DIR);
	if (err) {
		log_err("pods: kubelet or pod log dir path too long; disk use not measured");
		job->measure = false;
		goto done;
	}
	if ((job->parts & PODS_DISK_WRITABLE) && name[0]) {
		snprintf(job->crictl_name, sizeof(job->crictl_name), "%s", name);
		job->crictl_resolve_err = pods_crictl_resolve(name, job->crictl_path,
							      sizeof(job->crictl_path));
		if (job->crictl_resolve_err)
			job->crictl_path[0] = '\0';
		if (options->runtime_endpoint && options->runtime_endpoint[0] &&
		    !(job->runtime_endpoint = strdup(options->runtime_endpoint))) {
			job_free(job);
			return -ENOMEM;
		}
	} else {
		job->crictl_resolve_err = -ENOENT;	/* asked not to */
	}
done:
	*out = job;
	return 0;
}

/* Put the results into the pods still present with the same UID and cgroup id; log the
 * notes; fill the caller's report; free the job. */
static void job_apply(struct pods *pods, struct pods_disk_job *job)
{
	for (size_t i = 0; i < pods->n_items; i++) {
		struct pod *pod = &pods->items[i];
		struct disk_entry *entry = find_entry(job->entries, job->n_entries, pod->uid);

		for (; entry && entry < job->entries + job->n_entries &&
		       strcmp(entry->uid, pod->uid) == 0; entry++) {
			/* A cgroup recreated since the snapshot is not the one measured. */
			if (entry->cgroup_id != pod->cgroup_id)
				continue;
			pod->disk_bytes = entry->bytes;
			pod->disk_inodes = entry->inodes;
			break;
		}
	}
	for (size_t i = 0; i < job->n_notes; i++) {
		const struct disk_note *n = &job->notes[i];

		log_msg(pods_first_time(pods, n->kind, n->key) ? n->level : LOGLEVEL_DEBUG, "%s",
			n->text);
	}
	if (job->report_out)
		*job->report_out = job->report;
	job_free(job);
}

int pods_disk_usage_start(struct pods *pods, const struct pods_disk_options *options,
			  struct pods_disk_job **out)
{
	static const struct pods_disk_options defaults;
	struct pods_disk_job *job;
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t thread;
	int err;

	if (!pods || !out)
		return -EINVAL;
	*out = NULL;
	err = job_new(pods, options ? options : &defaults, &job);
	if (err)
		return err;
	job->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (job->efd < 0) {
		err = -errno;
		log_err("pods: eventfd for the disk usage job: %m");
		job_free(job);
		return err;
	}
	/* Every signal blocked in the worker: the daemon's handlers (signalfd or not) must run
	 * in its own thread, and posix_spawn resets the child's mask anyway. */
	sigfillset(&all);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	__atomic_add_fetch(&jobs_running, 1, __ATOMIC_RELAXED);
	err = -pthread_create(&thread, &attr, job_thread, job);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err) {
		__atomic_sub_fetch(&jobs_running, 1, __ATOMIC_RELAXED);
		errno = -err;
		log_err("pods: starting the disk usage worker: %m");
		job_free(job);
		return err;
	}
	*out = job;
	return 0;
}

int pods_disk_job_fd(const struct pods_disk_job *job)
{
	return job ? job->efd : -EINVAL;
}

bool pods_disk_job_done(struct pods_disk_job *job)
{
	bool done;

	if (!job)
		return false;
	pthread_mutex_lock(&job->lock);
	done = job->done;
	pthread_mutex_unlock(&job->lock);
	return done;
}

int pods_disk_usage_finish(struct pods *pods, struct pods_disk_job *job)
{
	if (!pods || !job)
		return -EINVAL;
	if (!pods_disk_job_done(job))
		return -EBUSY;	/* never wait: the caller's loop must not block */
	job_apply(pods, job);
	return 0;
}

void pods_disk_job_cancel(struct pods_disk_job *job)
{
	bool done;

	if (!job)
		return;
	pthread_mutex_lock(&job->lock);
	done = job->done;
	job->cancelled = true;
	__atomic_store_n(&job->stop, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&job->lock);
	/* Still running: the worker sees cancelled when it ends and frees the job then. */
	if (done)
		job_free(job);
}

size_t pods_disk_jobs_running(void)
{
	return __atomic_load_n(&jobs_running, __ATOMIC_RELAXED);
}

int pods_read_disk_usage(struct pods *pods, const struct pods_disk_options *options)
{
	static const struct pods_disk_options defaults;
	struct pods_disk_job *job;
	int err;

	if (!pods)
		return -EINVAL;
	/* The same code as the worker, run here. */
	err = job_new(pods, options ? options : &defaults, &job);
	if (err) {
		errno = -err;
		log_err("pods: measuring disk use: %m");
		return 0;
	}
	job_run(job);
	job->done = true;
	job_apply(pods, job);
	return 0;
}
