// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * BPF loader, pinning: the bpffs and pin directory the counter maps live in, and what to do
 * with pins a previous run left (reuse when compatible: the counters carry over).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf_loader/internal.h"
#include "sys/cgroupfs.h"
#include "sys/log.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif
#ifndef SYSFS_MAGIC
#define SYSFS_MAGIC 0x62656572
#endif

/* ---- bpffs and pin directory ------------------------------------------------------------ */

static int parent_dir(const char *path, char *out, size_t size)
{
	const char *slash = strrchr(path, '/');
	size_t len;

	if (!slash)
		return -EINVAL;
	len = slash == path ? 1 : (size_t)(slash - path);
	if (len >= size)
		return -ENAMETOOLONG;
	memcpy(out, path, len);
	out[len] = '\0';
	return 0;
}

/*
 * Where pins may go (doc/DESIGN.md, "BPF pins"): on a bpffs, or in a new directory directly
 * inside one; or directly inside /sys/fs/bpf while nothing is mounted there, and then evictd
 * mounts bpffs on /sys/fs/bpf and nowhere else. A mount anywhere else would hide what is
 * there (a pin directory below /proc or / would take the host's /proc or / away).
 */
int bpf_loader_check_pin_dir(const char *pin_dir, bool *mount_needed, char *why, size_t len)
{
	char parent[PATH_MAX];
	struct statfs fs;

	*mount_needed = false;
	if (!cgroupfs_path_is_canonical(pin_dir) || !strcmp(pin_dir, "/")) {
		snprintf(why, len, "expected an absolute canonical path below a bpffs");
		return -EINVAL;
	}
	if (statfs(pin_dir, &fs) == 0)
		return fs.f_type == BPF_FS_MAGIC ? 0 :
		       (snprintf(why, len, "it exists and is not on a bpffs"), -ENOTDIR);
	if (parent_dir(pin_dir, parent, sizeof(parent)))
		return snprintf(why, len, "path too long"), -ENAMETOOLONG;
	if (statfs(parent, &fs)) {
		snprintf(why, len, "%s: %s", parent, strerror(errno));
		return -ENOENT;
	}
	if (fs.f_type == BPF_FS_MAGIC)
		return 0;
	if (!strcmp(parent, BPFFS_DEFAULT_MOUNT) && fs.f_type == SYSFS_MAGIC) {
		*mount_needed = true;
		return 0;
	}
	snprintf(why, len, "%s is not a bpffs: mount one there first, or use a directory inside "
		 BPFFS_DEFAULT_MOUNT, parent);
	return -ENOTDIR;
}

int bpfl_ensure_bpffs(const char *pin_dir)
{
	char why[PATH_MAX + 128];
	bool mount_needed;
	int err = bpf_loader_check_pin_dir(pin_dir, &mount_needed, why, sizeof(why));

	if (err) {
		log_err("bpf: pin directory %s: %s", pin_dir, why);
		return err;
	}
	if (!mount_needed)
		return 0;
	if (mount("bpf", BPFFS_DEFAULT_MOUNT, "bpf", 0, "mode=0700")) {
		err = -errno;
		log_err("bpf: mounting bpffs on " BPFFS_DEFAULT_MOUNT ": %m");
		return err;
	}
	log_info("bpf: mounted bpffs on " BPFFS_DEFAULT_MOUNT);
	return 0;
}

int bpfl_make_pin_dir(const char *pin_dir)
{
	struct stat st;
	int err;

	if (mkdir(pin_dir, 0700) == 0)
		return 0;
	if (errno != EEXIST) {
		err = -errno;
		log_err("bpf: mkdir %s: %m", pin_dir);
		return err;
	}
	if (stat(pin_dir, &st)) {
		err = -errno;
		log_err("bpf: stat %s: %m", pin_dir);
		return err;
	}
	if (!S_ISDIR(st.st_mode)) {
		log_err("bpf: pin path %s exists and is not a directory", pin_dir);
		return -ENOTDIR;
	}
	if ((st.st_mode & 07777) != 0700 && chmod(pin_dir, 0700)) {
		err = -errno;
		log_err("bpf: chmod 0700 %s: %m", pin_dir);
		return err;
	}
	return 0;
}

/* ---- stale pins -------------------------------------------------------------------------- */

/* Same memory layout: kinds, sizes, member names and offsets (typedefs/modifiers skipped). */
static bool btf_same_layout(const struct btf *a, __u32 a_id, const struct btf *b, __u32 b_id,
			    int depth)
{
	const struct btf_type *ta, *tb;
	int ra = btf__resolve_type(a, a_id), rb = btf__resolve_type(b, b_id);

	if (ra < 0 || rb < 0 || depth > 4)
		return false;
	ta = btf__type_by_id(a, ra);
	tb = btf__type_by_id(b, rb);
	if (!ta || !tb || btf_kind(ta) != btf_kind(tb) ||
	    btf__resolve_size(a, ra) != btf__resolve_size(b, rb))
		return false;
	if (btf_is_array(ta)) {
		const struct btf_array *aa = btf_array(ta), *ab = btf_array(tb);

		return aa->nelems == ab->nelems &&
		       btf_same_layout(a, aa->type, b, ab->type, depth + 1);
	}
	if (btf_is_composite(ta)) {
		const struct btf_member *ma = btf_members(ta), *mb = btf_members(tb);
		int i;

		if (btf_vlen(ta) != btf_vlen(tb))
			return false;
		for (i = 0; i < btf_vlen(ta); i++, ma++, mb++) {
			if (strcmp(btf__name_by_offset(a, ma->name_off),
				   btf__name_by_offset(b, mb->name_off)) ||
			    btf_member_bit_offset(ta, i) != btf_member_bit_offset(tb, i) ||
			    !btf_same_layout(a, ma->type, b, mb->type, depth + 1))
				return false;
		}
	}
	return true;
}

/* 1: the pin at path can be reused by map, 0: it cannot (why says so), <0: error. */
static int pin_compatible(const struct bpf_map *map, const struct btf *obj_btf,
			  const char *path, char *why, size_t why_len)
{
	struct bpf_map_info info = {};
	__u32 info_len = sizeof(info);
	struct btf *pinned_btf;
	int fd, ret = 0;

	fd = bpf_obj_get(path);
	if (fd < 0) {
		snprintf(why, why_len, "not a BPF map: %s", strerror(errno));
		return 0;
	}
	if (bpf_obj_get_info_by_fd(fd, &info, &info_len)) {
		ret = -errno;
		log_err("bpf: reading map info of %s: %m", path);
		goto out;
	}
	if (info.type != bpf_map__type(map) || info.key_size != bpf_map__key_size(map) ||
	    info.value_size != bpf_map__value_size(map) ||
	    info.max_entries != bpf_map__max_entries(map) ||
	    info.map_flags != bpf_map__map_flags(map)) {
		snprintf(why, why_len,
			 "type/key/value/entries/flags %u/%u/%u/%u/%#x, want %u/%u/%u/%u/%#x",
			 info.type, info.key_size, info.value_size, info.max_entries,
			 info.map_flags, bpf_map__type(map), bpf_map__key_size(map),
			 bpf_map__value_size(map), bpf_map__max_entries(map),
			 bpf_map__map_flags(map));
		goto out;
	}
	if (!info.btf_id) {
		snprintf(why, why_len, "it has no BTF");
		goto out;
	}
	pinned_btf = btf__load_from_kernel_by_id(info.btf_id);
	if (!pinned_btf) {
		snprintf(why, why_len, "its BTF %u cannot be read: %s", info.btf_id,
			 strerror(errno));
		goto out;
	}
	if (btf_same_layout(pinned_btf, info.btf_value_type_id, obj_btf,
			    bpf_map__btf_value_type_id(map), 0))
		ret = 1;
	else
		snprintf(why, why_len, "its value layout differs");
	btf__free(pinned_btf);
out:
	close(fd);
	return ret;
}

/* Before load: keep compatible pins (libbpf reuses them: counters carry over), remove
 * incompatible ones so libbpf creates fresh maps. Each outcome is logged. */
int bpfl_check_stale_pins(struct bpf_loader *loader)
{
	const struct btf *obj_btf = bpf_object__btf(loader->skel->obj);
	struct bpf_map *map;
	char why[160];

	memset(&loader->pins, 0, sizeof(loader->pins));
	bpf_object__for_each_map(map, loader->skel->obj) {
		const char *path = bpf_map__pin_path(map);
		int ret;

		if (!path)
			continue;
		if (access(path, F_OK)) {
			loader->pins.created++;
			continue;
		}
		why[0] = '\0';
		ret = pin_compatible(map, obj_btf, path, why, sizeof(why));
		if (ret < 0)
			return ret;
		if (ret) {
			loader->pins.reused++;
			log_info("bpf: carrying over counters from %s (left by a previous run)", path);
			continue;
		}
		log_warn("bpf: dropping old counters in %s: incompatible pin (%s)", path, why);
		if (unlink(path)) {
			ret = -errno;
			log_err("bpf: removing stale pin %s: %m", path);
			return ret;
		}
		loader->pins.replaced++;
	}
	return 0;
}

void bpfl_chmod_pins(struct bpf_loader *loader)
{
	struct bpf_map *map;

	bpf_object__for_each_map(map, loader->skel->obj) {
		const char *path = bpf_map__pin_path(map);

		if (path && bpf_map__is_pinned(map) && chmod(path, 0600))
			log_warn("bpf: chmod 0600 %s: %m", path);
	}
}

/* ---- status ---- */

const char *bpf_loader_pin_dir(const struct bpf_loader *loader)
{
	return loader ? loader->pin_dir : NULL;
}

void bpf_loader_pin_report(const struct bpf_loader *loader, struct bpf_loader_pin_report *out)
{
	if (loader)
		*out = loader->pins;
	else
		memset(out, 0, sizeof(*out));
}
