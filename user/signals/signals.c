// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Eviction signals (DESIGN.md §1), computed the way the kubelet computes them:
 *
 *  memory.available  MemTotal - workingSet. The kubelet takes the root container's limit
 *                    (cadvisor container/common/helpers.go: MemTotal for "/") minus the
 *                    working set; its capacity is available + workingSet (eviction
 *                    helpers.go), i.e. MemTotal again. Not floored: if the working set ever
 *                    exceeds MemTotal the kubelet's value goes negative too.
 *  workingSet        usage - inactive file, floored at 0; when the inactive key is missing
 *                    from memory.stat nothing is subtracted (cadvisor libcontainer/handler.go
 *                    setMemoryStats). v2 root: usage = anon + file of memory.stat, as the
 *                    root has no memory.current (opencontainers/cgroups fs2/memory.go
 *                    rootStatsFromMeminfo), key inactive_file. v1: memory.usage_in_bytes,
 *                    key total_inactive_file (hierarchical; not the root-local inactive_file).
 *  fs signals        statvfs: f_bavail*f_frsize of f_blocks*f_frsize, f_ffree of f_files
 *                    (cadvisor fs/fs.go getVfsStats).
 *  pid.available     min(pid_max, threads-max) - tasks, tasks = total of /proc/loadavg's
 *                    4th field (kubelet stats/pidlimit/pidlimit_linux.go).
 *
 *  allocatableMemory.available  the kubepods cgroup's memory limit - its working set
 *                    (allocatable.c).
 *
 * This file: the filesystem and pid readers and signals_read(); memory.c the memory signals;
 * allocatable.c the kubepods one; sysfile.c the path and file helpers.
 *
 * This runs on every BPF wake-up: open/read/close into stack buffers, no allocation.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>

#include "signals/parts.h"
#include "sys/clock.h"

/* ---- names ----------------------------------------------------------------------------- */


/* ---- failure logging ------------------------------------------------------------------ */

/* A file that stays missing (no /var/lib/kubelet on a standalone host) would otherwise log
 * an error on every wake-up: a group that already failed last round logs at debug. */
static __thread unsigned groups_failing;
__thread bool signals_log_quietly;

static void group_begin(enum signal_group group)
{
	signals_log_quietly = groups_failing & group;
}

static int group_end(enum signal_group group, const char *what, int err)
{
	signals_log_quietly = false;
	if (err) {
		groups_failing |= group;
	} else if (groups_failing & group) {
		groups_failing &= ~(unsigned)group;
		log_info("%s signals readable again", what);
	}
	return err;
}

/* ---- filesystems ---------------------------------------------------------------------- */

static int real_stat(const char *path, struct stat *st)
{
	return stat(path, st);
}

static int real_statvfs(const char *path, struct statvfs *sv)
{
	return statvfs(path, sv);
}

static struct signals_fs_ops fs_ops = { .stat = real_stat, .statvfs = real_statvfs };

void signals_set_fs_ops(const struct signals_fs_ops *ops)
{
	fs_ops.stat = ops && ops->stat ? ops->stat : real_stat;
	fs_ops.statvfs = ops && ops->statvfs ? ops->statvfs : real_statvfs;
}

struct fs_reading {
	dev_t dev;
	int64_t bytes_available, bytes_capacity;
	int64_t inodes_free, inodes;
	char path[PATH_MAX];
};

/* stat + statvfs of root/dir. A missing dir returns -ENOENT unlogged when the caller has a
 * fallback (missing_ok), so only the fallback is reported. */
static int fs_read(const char *root, const char *dir, bool missing_ok, struct fs_reading *out)
{
	struct statvfs sv;
	struct stat st;
	int err;

	err = sig_path_join(out->path, sizeof(out->path), root, dir, NULL);
	if (err)
		return err;
	if (fs_ops.stat(out->path, &st)) {
		err = errno;
		if (!(missing_ok && err == ENOENT))
			log_fail("stat %s: %m", out->path);
		return -err;
	}
	if (fs_ops.statvfs(out->path, &sv)) {
		err = errno;
		log_fail("statvfs %s: %m", out->path);
		return -err;
	}
	out->dev = st.st_dev;
	out->bytes_available = mul_clamp(sv.f_bavail, sv.f_frsize);
	out->bytes_capacity = mul_clamp(sv.f_blocks, sv.f_frsize);
	out->inodes_free = mul_clamp(sv.f_ffree, 1);
	out->inodes = mul_clamp(sv.f_files, 1);
	return 0;
}

/* imagefs/containerfs dirs that do not exist are on nodefs: the kubelet treats a runtime
 * without a separate image filesystem as "same as nodefs". */
static int fs_read_or_nodefs(const char *root, const char *dir, const char *what,
			     const struct fs_reading *node, int node_err, struct fs_reading *out)
{
	int err = fs_read(root, dir, true, out);

	if (err != -ENOENT)
		return err;
	if (node_err) {
		/* nodefs's own failure was logged: one line is enough. */
		log_debug("%s dir %s does not exist and nodefs is unreadable", what, out->path);
		return err;
	}
	log_debug("%s dir %s does not exist: using nodefs (%s)", what, out->path, node->path);
	*out = *node;
	return 0;
}

static void fs_publish(struct observations *obs, enum ev_signal bytes, enum ev_signal inodes,
		       const struct fs_reading *fs, int64_t now)
{
	obs->signal[bytes] = (struct observation){ .present = true, .available = fs->bytes_available,
						   .capacity = fs->bytes_capacity, .read_at_ns = now };
	/* f_files == 0 (tmpfs with nr_inodes=0, btrfs): no inode limit to observe. The kubelet
	 * would report 0 of 0, which a literal threshold would call pressure. */
	if (fs->inodes > 0)
		obs->signal[inodes] = (struct observation){ .present = true,
							    .available = fs->inodes_free,
							    .capacity = fs->inodes, .read_at_ns = now };
}

static enum fs_layout decide_fs_layout(dev_t node, dev_t image, dev_t container)
{
	static bool warned;

	if (image == node)
		return FS_LAYOUT_SINGLE;
	if (container == image)
		return FS_LAYOUT_SPLIT_DISK;
	if (container != node && !warned) {
		/* The kubelet supports no third filesystem; images and writable layers are still
		 * apart, which is what split-image means for reclaim. */
		log_warn("nodefs, imagefs and containerfs are three filesystems; treating as %s",
			 fs_layout_name(FS_LAYOUT_SPLIT_IMAGE));
		warned = true;
	}
	return FS_LAYOUT_SPLIT_IMAGE;
}

int signals_read_filesystems(const struct signal_source *source, struct observations *obs)
{
	const char *kubelet_dir = nonempty_or(source->kubelet_dir, DEFAULT_KUBELET_DIR);
	const char *image_dir = nonempty_or(source->imagefs_dir, DEFAULT_IMAGEFS_DIR);
	const char *container_dir = nonempty_or(source->containerfs_dir, image_dir);
	struct fs_reading node, image, container;
	int node_err, image_err, container_err;
	int64_t now;

	for (int s = 0; s < EV_SIGNAL_COUNT; s++)
		if (signal_meta(s)->group == SIGNAL_GROUP_FS)
			obs->signal[s].present = false;

	node_err = fs_read(source->root, kubelet_dir, false, &node);
	image_err = fs_read_or_nodefs(source->root, image_dir, "imagefs", &node, node_err, &image);
	if (strcmp(container_dir, image_dir) == 0) {
		container = image;
		container_err = image_err;
	} else {
		container_err = fs_read_or_nodefs(source->root, container_dir, "containerfs", &node,
						  node_err, &container);
	}

	now = clock_monotonic_ns();
	if (!node_err)
		fs_publish(obs, EV_SIGNAL_NODEFS_AVAILABLE, EV_SIGNAL_NODEFS_INODES_FREE, &node, now);
	if (!image_err)
		fs_publish(obs, EV_SIGNAL_IMAGEFS_AVAILABLE, EV_SIGNAL_IMAGEFS_INODES_FREE, &image, now);
	if (!container_err)
		fs_publish(obs, EV_SIGNAL_CONTAINERFS_AVAILABLE, EV_SIGNAL_CONTAINERFS_INODES_FREE,
			   &container, now);

	obs->fs_layout = FS_LAYOUT_SINGLE;
	if (!node_err && !image_err && !container_err)
		obs->fs_layout = decide_fs_layout(node.dev, image.dev, container.dev);
	return node_err ? node_err : image_err ? image_err : container_err;
}

/* ---- pids ----------------------------------------------------------------------------- */

/* nr_threads: the total after '/' in loadavg's 4th field ("0.52 0.58 0.59 3/1187 40231"). */
static int read_task_count(const char *root, int64_t *tasks)
{
	char path[PATH_MAX], buf[128], total[24];
	const char *field = NULL, *slash = NULL;
	size_t field_len = 0;
	ssize_t len;
	int err;

	err = sig_path_join(path, sizeof(path), root, "/proc/loadavg", NULL);
	if (err)
		return err;
	len = sig_read_small(path, buf, sizeof(buf));
	if (len < 0) {
		log_fail("read %s: %m", path);
		return (int)len;
	}
	buf[strcspn(buf, "\n")] = '\0';
	field = buf;
	for (int i = 0; i < 4; i++) {
		field += field_len;
		field += strspn(field, " \t");
		field_len = strcspn(field, " \t");
	}
	if (field_len)
		slash = memchr(field, '/', field_len);
	/* Copy out the part after the slash so the 4th field alone is parsed. */
	if (slash && (size_t)(field + field_len - slash) <= sizeof(total)) {
		memcpy(total, slash + 1, (size_t)(field + field_len - slash - 1));
		total[field + field_len - slash - 1] = '\0';
	}
	if (!slash || (size_t)(field + field_len - slash) > sizeof(total) ||
	    sig_parse_count(total, NULL, tasks)) {
		log_fail("%s: no running/total 4th field in \"%.60s\"", path, buf);
		return -EINVAL;
	}
	return 0;
}

int signals_read_pids(const char *root, struct observations *obs)
{
	static const char *const limit_files[] = { "/proc/sys/kernel/pid_max",
						   "/proc/sys/kernel/threads-max" };
	struct observation *pid = &obs->signal[EV_SIGNAL_PID_AVAILABLE];
	int64_t max_tasks = -1, limit, tasks = 0;
	char path[PATH_MAX], first_path[PATH_MAX], text[64], first_text[64];
	int err, first_err = 0;

	pid->present = false;
	/* Both bound the number of tasks; like the kubelet, take the smaller of those that
	 * could be read, and complain only when neither could. */
	for (size_t i = 0; i < sizeof(limit_files) / sizeof(limit_files[0]); i++) {
		err = sig_path_join(path, sizeof(path), root, limit_files[i], NULL);
		if (err)
			return err;
		err = sig_read_int64_quiet(path, &limit, text, sizeof(text));
		if (err) {
			if (!first_err) {
				first_err = err;
				memcpy(first_path, path, sizeof(path));
				memcpy(first_text, text, sizeof(text));
			}
			log_debug("%s unreadable (%s), using the other limit", path, strerror(-err));
			continue;
		}
		if (max_tasks < 0 || limit < max_tasks)
			max_tasks = limit;
	}
	if (max_tasks < 0) {
		sig_log_int64_failure(first_path, first_err, first_text);
		return first_err;
	}

	err = read_task_count(root, &tasks);
	if (err) {
		struct sysinfo info;

		/* The kubelet falls back to sysinfo(2) procs (16 bits, truncated above 65535);
		 * only meaningful for the real machine, not a fixture root. */
		if (!sig_root_is_host(root) || sysinfo(&info))
			return err;
		tasks = info.procs;
	}
	*pid = (struct observation){ .present = true, .available = max_tasks - tasks,
				     .capacity = max_tasks, .read_at_ns = clock_monotonic_ns() };
	return 0;
}

/* ---- all ------------------------------------------------------------------------------ */

int signals_read(const struct signal_source *source, uint32_t mask, struct observations *obs)
{
	const uint32_t all = (1u << EV_SIGNAL_COUNT) - 1;
	int memory_err = 0, first_err = 0, err;

	if (!source || !obs)
		return -EINVAL;
	mask = mask ? mask & all : all;

	if (mask & SIGNAL_MASK_MEMORY) {
		group_begin(SIGNAL_GROUP_MEMORY);
		/* The guard alone needs only meminfo: skip the cgroup read; memory.available
		 * alone needs no MemAvailable. */
		if (mask & (SIGNAL_MASK(EV_SIGNAL_MEMORY_AVAILABLE) | SIGNAL_MASK(EV_SIGNAL_OOM_GUARD)))
			memory_err = sig_read_memory_group(source, obs,
						       mask & SIGNAL_MASK(EV_SIGNAL_MEMORY_AVAILABLE),
						       mask & SIGNAL_MASK(EV_SIGNAL_OOM_GUARD));
		/* Swap and zram gate the memory thresholds (swap.c): read where a gate is set, and
		 * on every full read (metrics, evictctl); a failure leaves them absent (logged
		 * there) and the memory signals stand. */
		if (mask & (SIGNAL_MASK(EV_SIGNAL_SWAP_AVAILABLE) | SIGNAL_MASK(EV_SIGNAL_ZRAM_AVAILABLE)))
			(void)signals_read_swap(source, obs);
		if (mask & SIGNAL_MASK(EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE)) {
			err = signals_read_allocatable(source, obs);
			memory_err = memory_err ? memory_err : err;
		}
		group_end(SIGNAL_GROUP_MEMORY, "memory", memory_err);
		first_err = memory_err;
	}
	if (mask & SIGNAL_MASK_FS) {
		group_begin(SIGNAL_GROUP_FS);
		err = group_end(SIGNAL_GROUP_FS, "filesystem", signals_read_filesystems(source, obs));
		first_err = first_err ? first_err : err;
	}
	if (mask & SIGNAL_MASK_PID) {
		group_begin(SIGNAL_GROUP_PID);
		err = group_end(SIGNAL_GROUP_PID, "pid", signals_read_pids(source->root, obs));
		first_err = first_err ? first_err : err;
	}

	if (mask & SIGNAL_MASK_MEMORY)
		return memory_err;
	for (int s = 0; s < EV_SIGNAL_COUNT; s++)
		if ((mask & SIGNAL_MASK(s)) && obs->signal[s].present)
			return 0;
	return first_err ? first_err : -ENODATA;
}

