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
 * This runs on every BPF wake-up: open/read/close into stack buffers, no allocation.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>	/* snprintf only; reads go through open/read */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "core/arith.h"
#include "sys/log.h"
#include "signals/signals.h"

#define DEFAULT_KUBELET_DIR "/var/lib/kubelet"
#define DEFAULT_IMAGEFS_DIR "/var/lib/containerd"

/* ---- names ----------------------------------------------------------------------------- */

const char *fs_layout_name(enum fs_layout layout)
{
	switch (layout) {
	case FS_LAYOUT_SINGLE: return "single";
	case FS_LAYOUT_SPLIT_DISK: return "split-disk";
	case FS_LAYOUT_SPLIT_IMAGE: return "split-image";
	default: return "unknown";
	}
}

/* ---- failure logging ------------------------------------------------------------------ */

/* A file that stays missing (no /var/lib/kubelet on a standalone host) would otherwise log
 * an error on every wake-up: a group that already failed last round logs at debug. */
static __thread unsigned groups_failing;
static __thread bool log_quietly;

#define log_fail(...) log_msg(log_quietly ? LOGLEVEL_DEBUG : LOGLEVEL_ERR, __VA_ARGS__)

static void group_begin(enum signal_group group)
{
	log_quietly = groups_failing & group;
}

static int group_end(enum signal_group group, const char *what, int err)
{
	log_quietly = false;
	if (err) {
		groups_failing |= group;
	} else if (groups_failing & group) {
		groups_failing &= ~(unsigned)group;
		log_info("%s signals readable again", what);
	}
	return err;
}

/* ---- paths and reads ------------------------------------------------------------------ */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* "", "/" and NULL all mean the real machine; trailing slashes are dropped so joins stay
 * clean. */
static int root_len(const char *root)
{
	size_t len = root ? strlen(root) : 0;

	while (len > 0 && root[len - 1] == '/')
		len--;
	return len > INT_MAX ? INT_MAX : (int)len;
}

static bool root_is_host(const char *root)
{
	return root_len(root) == 0;
}

/* root + dir [+ "/" + file]; dir is taken as relative to root whether or not it starts
 * with '/'. */
static int path_join(char *buf, size_t size, const char *root, const char *dir, const char *file)
{
	int n = snprintf(buf, size, "%.*s%s%s%s%s", root_len(root), root ? root : "",
			 dir[0] == '/' ? "" : "/", dir, file ? "/" : "", file ? file : "");

	if (n < 0 || (size_t)n >= size) {
		log_fail("path too long: %s%s%s%s", root ? root : "", dir, file ? "/" : "",
			 file ? file : "");
		return -ENAMETOOLONG;
	}
	return 0;
}

/* dir + "/" + file, for dirs already joined under root (the detected memory dir). */
static int path_in(char *buf, size_t size, const char *dir, const char *file)
{
	int n = snprintf(buf, size, "%s/%s", dir, file);

	if (n < 0 || (size_t)n >= size) {
		log_fail("path too long: %s/%s", dir, file);
		return -ENAMETOOLONG;
	}
	return 0;
}

static const char *nonempty_or(const char *text, const char *fallback)
{
	return text && text[0] ? text : fallback;
}

/* A small file (one number, a controller list) into buf, NUL-terminated. Silent: used for
 * probing too. Returns the length or -errno, with errno set for %m. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len < size - 1) {
		ssize_t n = read(fd, buf + len, size - 1 - len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = errno;
			close(fd);
			errno = err;
			return -err;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return (ssize_t)len;
}

/* A non-negative decimal (the kernel prints these counters unsigned), then nothing but
 * blanks and, if given, the unit ("kB" in meminfo). */
static int parse_count(const char *text, const char *unit, int64_t *value)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(text, &end, 10);
	if (end == text || errno || v < 0)
		return -EINVAL;
	end += strspn(end, " \t\n");
	if (unit && strncmp(end, unit, strlen(unit)) == 0)
		end += strlen(unit) + strspn(end + strlen(unit), " \t\n");
	if (*end)
		return -EINVAL;
	*value = v;
	return 0;
}

/* A file holding one number (memory.usage_in_bytes, pid_max), unlogged: -errno (errno
 * kept for %m) or -EINVAL with the text left in buf for the message. */
static int read_int64_quiet(const char *path, int64_t *value, char *buf, size_t size)
{
	ssize_t len = read_small(path, buf, size);

	if (len < 0)
		return (int)len;
	if (parse_count(buf, NULL, value)) {
		buf[strcspn(buf, "\n")] = '\0';
		return -EINVAL;
	}
	return 0;
}

static void log_int64_failure(const char *path, int err, const char *text)
{
	errno = -err;
	if (err == -EINVAL)
		log_fail("%s: not a number: \"%.20s\"", path, text);
	else
		log_fail("read %s: %m", path);
}

static int read_int64(const char *path, int64_t *value)
{
	char buf[64];
	int err = read_int64_quiet(path, value, buf, sizeof(buf));

	if (err)
		log_int64_failure(path, err, buf);
	return err;
}

/* Keyed files: memory.stat ("key value") and meminfo ("Key:   value kB"). The caller's keys
 * must match a whole key, so "anon" never picks up "anon_thp". */
#define MAX_KEYS 4
struct key_scan {
	const char *keys[MAX_KEYS];
	unsigned nkeys;
	char sep;			/* what follows the key: ' ' or ':' */
	const char *unit;		/* optional unit after the value */
	int64_t values[MAX_KEYS];
	unsigned found;			/* bit i: keys[i] seen */
	const char *bad_key;		/* first key whose value did not parse */
};

/* Returns true when every key was seen and the read can stop. */
static bool key_scan_line(struct key_scan *scan, const char *line, size_t len)
{
	for (unsigned i = 0; i < scan->nkeys; i++) {
		size_t key_len = strlen(scan->keys[i]);

		if (scan->found & (1u << i) || len <= key_len || line[key_len] != scan->sep ||
		    memcmp(line, scan->keys[i], key_len) != 0)
			continue;
		if (parse_count(line + key_len + 1, scan->unit, &scan->values[i]) && !scan->bad_key)
			scan->bad_key = scan->keys[i];
		scan->found |= 1u << i;
		break;
	}
	return scan->found == (1u << scan->nkeys) - 1;
}

/* Stream the file line by line through a stack buffer, so a memory.stat of any length
 * parses without allocating; stops early once every key was seen. */
static int scan_keys(const char *path, struct key_scan *scan)
{
	char buf[4096 + 1];	/* +1: room to terminate a last line without '\n' */
	size_t have = 0;
	bool overlong = false;	/* dropping the rest of a line longer than buf */
	int fd, err;

	scan->found = 0;
	scan->bad_key = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		log_fail("open %s: %m", path);
		return -err;
	}
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		size_t start = 0;
		char *nl;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = errno;
			log_fail("read %s: %m", path);
			close(fd);
			return -err;
		}
		if (n == 0)
			break;
		have += (size_t)n;
		while ((nl = memchr(buf + start, '\n', have - start))) {
			size_t len = (size_t)(nl - (buf + start));

			*nl = '\0';
			if (!overlong && key_scan_line(scan, buf + start, len))
				goto done;
			overlong = false;
			start += len + 1;
		}
		memmove(buf, buf + start, have - start);
		have -= start;
		if (have == sizeof(buf) - 1) {
			have = 0;
			overlong = true;
		}
	}
	if (have > 0 && !overlong) {
		buf[have] = '\0';
		key_scan_line(scan, buf, have);
	}
done:
	close(fd);
	if (scan->bad_key) {
		log_fail("%s: bad value for %s", path, scan->bad_key);
		return -EINVAL;
	}
	return 0;
}

static int64_t mul_clamp(uint64_t a, uint64_t b)
{
	uint64_t product;

	if (__builtin_mul_overflow(a, b, &product) || product > INT64_MAX)
		return INT64_MAX;
	return (int64_t)product;
}

/* ---- memory --------------------------------------------------------------------------- */

int signals_read_meminfo(const char *root, int64_t *mem_total, int64_t *mem_available)
{
	struct key_scan scan = { .keys = { "MemTotal", "MemAvailable" }, .nkeys = 2, .sep = ':',
				 .unit = "kB" };
	char path[PATH_MAX];
	int err;

	err = path_join(path, sizeof(path), root, "/proc/meminfo", NULL);
	if (err)
		return err;
	err = scan_keys(path, &scan);
	if (err)
		return err;
	if (scan.found != 3) {
		log_fail("%s: no %s line", path, scan.found & 1 ? "MemAvailable" : "MemTotal");
		return -ENODATA;
	}
	/* meminfo counts kB (cadvisor: `MemTotal:\s*([0-9]+) kB` times 1024). */
	*mem_total = mul_clamp((uint64_t)scan.values[0], 1024);
	*mem_available = mul_clamp((uint64_t)scan.values[1], 1024);
	return 0;
}

/* Whether a cgroup.controllers file names the memory controller. */
static bool controllers_list_memory(const char *path)
{
	char buf[512], *save, *word;

	if (read_small(path, buf, sizeof(buf)) < 0)
		return false;
	for (word = strtok_r(buf, " \t\n", &save); word; word = strtok_r(NULL, " \t\n", &save))
		if (strcmp(word, "memory") == 0)
			return true;
	return false;
}

static enum cgroup_layout found_layout(enum cgroup_layout layout, const struct signal_source *source,
				       const char *dir, char *memory_dir, unsigned long memory_dir_len)
{
	if (memory_dir && path_join(memory_dir, memory_dir_len, source->root, dir, NULL))
		return CGROUP_LAYOUT_UNKNOWN;
	log_debug("memory cgroup: %s at %.*s%s", layout == CGROUP_LAYOUT_V2 ? "v2" : "v1",
		  root_len(source->root), source->root ? source->root : "", dir);
	return layout;
}

enum cgroup_layout signals_detect_cgroup_layout(const struct signal_source *source,
						char *memory_dir, unsigned long memory_dir_len)
{
	/* Pure v2 mounts the unified hierarchy on /sys/fs/cgroup, hybrid on .../unified;
	 * either counts only when the memory controller is enabled there. */
	static const char *const v2_default[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	static const char *const v1_default[] = { "/sys/fs/cgroup/memory" };
	const char *const *v2_dirs = v2_default, *const *v1_dirs = v1_default;
	size_t n_v2 = 2, n_v1 = 1;
	char probe[PATH_MAX];

	if (source->cgroup_v2_dir && source->cgroup_v2_dir[0]) {
		v2_dirs = &source->cgroup_v2_dir;
		n_v2 = 1;
	}
	if (source->cgroup_v1_memory_dir && source->cgroup_v1_memory_dir[0]) {
		v1_dirs = &source->cgroup_v1_memory_dir;
		n_v1 = 1;
	}
	for (size_t i = 0; i < n_v2; i++) {
		if (path_join(probe, sizeof(probe), source->root, v2_dirs[i], "cgroup.controllers"))
			continue;
		if (controllers_list_memory(probe))
			return found_layout(CGROUP_LAYOUT_V2, source, v2_dirs[i], memory_dir,
					    memory_dir_len);
	}
	for (size_t i = 0; i < n_v1; i++) {
		if (path_join(probe, sizeof(probe), source->root, v1_dirs[i], "memory.usage_in_bytes"))
			continue;
		if (access(probe, F_OK) == 0)
			return found_layout(CGROUP_LAYOUT_V1, source, v1_dirs[i], memory_dir,
					    memory_dir_len);
	}
	return CGROUP_LAYOUT_UNKNOWN;
}

/* Mounts do not move while the node runs, so the detection (several opens) is done once
 * per source and thread, and redone only after a read under the found dir fails. */
static __thread struct {
	bool valid;
	enum cgroup_layout layout;
	char key[PATH_MAX];		/* root '\n' v2 dir '\n' v1 dir */
	char memory_dir[PATH_MAX];
} layout_cache;

static enum cgroup_layout cached_layout(const struct signal_source *source, const char **memory_dir)
{
	char key[PATH_MAX];
	int n;

	n = snprintf(key, sizeof(key), "%s\n%s\n%s", source->root ? source->root : "",
		     source->cgroup_v2_dir ? source->cgroup_v2_dir : "",
		     source->cgroup_v1_memory_dir ? source->cgroup_v1_memory_dir : "");
	if (n < 0 || (size_t)n >= sizeof(key))
		key[0] = '\0';	/* too long to remember: detect every time */
	if (!layout_cache.valid || !key[0] || strcmp(key, layout_cache.key) != 0) {
		layout_cache.valid = false;
		layout_cache.layout = signals_detect_cgroup_layout(source, layout_cache.memory_dir,
								   sizeof(layout_cache.memory_dir));
		if (layout_cache.layout != CGROUP_LAYOUT_UNKNOWN && key[0]) {
			memcpy(layout_cache.key, key, (size_t)n + 1);
			layout_cache.valid = true;
		}
	}
	*memory_dir = layout_cache.memory_dir;
	return layout_cache.layout;
}

static int working_set_v2(const char *memory_dir, int64_t *working_set)
{
	struct key_scan scan = { .keys = { "anon", "file", "inactive_file" }, .nkeys = 3, .sep = ' ' };
	char path[PATH_MAX];
	int64_t usage;
	int err;

	err = path_in(path, sizeof(path), memory_dir, "memory.stat");
	if (err)
		return err;
	err = scan_keys(path, &scan);
	if (err)
		return err;
	if ((scan.found & 3) != 3) {
		log_fail("%s: no %s line", path, scan.found & 1 ? "file" : "anon");
		return -ENODATA;
	}
	/* The root has no memory.current: usage is anon + file, as v1's usage_in_bytes. */
	usage = sat_add_i64(scan.values[0], scan.values[1]);	/* each may be up to INT64_MAX */
	*working_set = usage;
	if (scan.found & 4)
		*working_set = usage < scan.values[2] ? 0 : usage - scan.values[2];
	return 0;
}

static int working_set_v1(const char *memory_dir, int64_t *working_set)
{
	struct key_scan scan = { .keys = { "total_inactive_file" }, .nkeys = 1, .sep = ' ' };
	char path[PATH_MAX];
	int64_t usage;
	int err;

	err = path_in(path, sizeof(path), memory_dir, "memory.usage_in_bytes");
	if (err)
		return err;
	err = read_int64(path, &usage);
	if (err)
		return err;
	err = path_in(path, sizeof(path), memory_dir, "memory.stat");
	if (err)
		return err;
	err = scan_keys(path, &scan);
	if (err)
		return err;
	*working_set = usage;
	if (scan.found & 1)
		*working_set = usage < scan.values[0] ? 0 : usage - scan.values[0];
	return 0;
}

static int read_working_set(const struct signal_source *source, enum cgroup_layout *layout,
			    int64_t *working_set)
{
	const char *memory_dir;
	int err;

	*layout = cached_layout(source, &memory_dir);
	switch (*layout) {
	case CGROUP_LAYOUT_V2:
		err = working_set_v2(memory_dir, working_set);
		break;
	case CGROUP_LAYOUT_V1:
		err = working_set_v1(memory_dir, working_set);
		break;
	default:
		log_fail("no memory cgroup under root \"%s\": no cgroup.controllers listing memory "
			 "in %s, no memory.usage_in_bytes in %s",
			 source->root ? source->root : "",
			 nonempty_or(source->cgroup_v2_dir, "/sys/fs/cgroup{,/unified}"),
			 nonempty_or(source->cgroup_v1_memory_dir, "/sys/fs/cgroup/memory"));
		return -ENOENT;
	}
	if (err)
		layout_cache.valid = false;
	return err;
}

static int read_memory_group(const struct signal_source *source, struct observations *obs,
			     bool want_cgroup)
{
	struct observation *memory = &obs->signal[EV_SIGNAL_MEMORY_AVAILABLE];
	struct observation *guard = &obs->signal[EV_SIGNAL_OOM_GUARD];
	int64_t total, available, working_set;
	int err;

	guard->present = false;
	if (want_cgroup)
		memory->present = false;
	err = signals_read_meminfo(source->root, &total, &available);
	if (err)
		return err;
	obs->mem_total_bytes = total;
	obs->mem_available_kernel_bytes = available;
	*guard = (struct observation){ .present = true, .available = available,
				       .capacity = total, .read_at_ns = now_ns() };
	if (!want_cgroup)
		return 0;

	err = read_working_set(source, &obs->cgroup_layout, &working_set);
	if (err)
		return err;
	obs->memory_working_set_bytes = working_set;
	*memory = (struct observation){ .present = true, .available = total - working_set,
					.capacity = total, .read_at_ns = now_ns() };
	return 0;
}

int signals_read_memory(const struct signal_source *source, struct observations *obs)
{
	return read_memory_group(source, obs, true);
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

	err = path_join(out->path, sizeof(out->path), root, dir, NULL);
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

	now = now_ns();
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

	err = path_join(path, sizeof(path), root, "/proc/loadavg", NULL);
	if (err)
		return err;
	len = read_small(path, buf, sizeof(buf));
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
	    parse_count(total, NULL, tasks)) {
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
		err = path_join(path, sizeof(path), root, limit_files[i], NULL);
		if (err)
			return err;
		err = read_int64_quiet(path, &limit, text, sizeof(text));
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
		log_int64_failure(first_path, first_err, first_text);
		return first_err;
	}

	err = read_task_count(root, &tasks);
	if (err) {
		struct sysinfo info;

		/* The kubelet falls back to sysinfo(2) procs (16 bits, truncated above 65535);
		 * only meaningful for the real machine, not a fixture root. */
		if (!root_is_host(root) || sysinfo(&info))
			return err;
		tasks = info.procs;
	}
	*pid = (struct observation){ .present = true, .available = max_tasks - tasks,
				     .capacity = max_tasks, .read_at_ns = now_ns() };
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
		/* The guard alone needs only meminfo: skip the cgroup read. */
		memory_err = read_memory_group(source, obs,
					       mask & SIGNAL_MASK(EV_SIGNAL_MEMORY_AVAILABLE));
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
