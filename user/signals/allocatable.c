// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * allocatableMemory.available (DESIGN.md §1): the kubelet's "pods" system container, the
 * kubepods cgroup, against its own memory limit.
 *
 * The kubelet (eviction helpers.go makeSignalObservations) takes the pods container's
 * memory.AvailableBytes as available and AvailableBytes + WorkingSetBytes as capacity; the
 * stats provider sets AvailableBytes = limit - working set only when the container has a
 * limit (pkg/kubelet/stats/helper.go: !isMemoryUnlimited), so a kubepods cgroup without a
 * limit gives no observation, and no allocatable threshold is evaluated. The working set is
 * usage - inactive_file, floored at 0 (cadvisor setMemoryStats), as for memory.available.
 *
 *   v2  kubepods(.slice)/memory.max, memory.current, memory.stat inactive_file
 *   v1  kubepods(.slice)/memory.limit_in_bytes, memory.usage_in_bytes, memory.stat
 *       total_inactive_file
 *
 * The kubepods cgroup is kubepods.slice (systemd driver) or kubepods (cgroupfs driver) under
 * the kubelet's --cgroup-root. The kubelet sets its limit to the node's allocatable memory
 * (capacity - kube-reserved - system-reserved) when it enforces "pods".
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "signals/parts.h"
#include "sys/clock.h"

/* cadvisor/kubelet isMemoryUnlimited: v1 reports "no limit" as a page-rounded 2^63-1. */
#define MEMORY_UNLIMITED_ABOVE (1LL << 62)

static int find_kubepods_dir(const struct signal_source *source, const char *memory_dir,
			     char *out, size_t len)
{
	static const char *const names[] = { "kubepods.slice", "kubepods" };
	const char *cgroup_root = nonempty_or(source->kubelet_cgroup_root, "/");

	cgroup_root += strspn(cgroup_root, "/");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char rel[PATH_MAX];

		if (snprintf(rel, sizeof(rel), "%s%s%s", cgroup_root, cgroup_root[0] ? "/" : "",
			     names[i]) >= (int)sizeof(rel) ||
		    sig_path_in(out, len, memory_dir, rel))
			return -ENAMETOOLONG;
		if (access(out, F_OK) == 0)
			return 0;
	}
	return -ENOENT;
}

/* The probe ran on every memory wake-up (bench/results.md, "Detection latency (issue 24)":
 * 23 us): the dir found is kept until a read under it fails; "none" (no kubelet yet) is
 * probed again at most once a second. Per thread, keyed by the memory dir and cgroup root. */
#define KUBEPODS_NONE_RECHECK_NS (1000 * 1000000LL)

static __thread struct {
	bool valid;
	int err;			/* 0: dir holds it; else what the probe said */
	int64_t probed_ns;
	char key[PATH_MAX];
	char dir[PATH_MAX];
} kubepods_cache;

static void kubepods_forget(void)
{
	kubepods_cache.valid = false;
}

static int kubepods_dir(const struct signal_source *source, const char *memory_dir, char *out,
			size_t len)
{
	int64_t now = source->now_ns ? source->now_ns() : clock_monotonic_ns();
	char key[PATH_MAX];
	int n = snprintf(key, sizeof(key), "%s\n%s", memory_dir,
			 source->kubelet_cgroup_root ? source->kubelet_cgroup_root : "");

	if (n < 0 || (size_t)n >= sizeof(key))
		return find_kubepods_dir(source, memory_dir, out, len);
	if (!kubepods_cache.valid || strcmp(key, kubepods_cache.key) ||
	    (kubepods_cache.err && now - kubepods_cache.probed_ns >= KUBEPODS_NONE_RECHECK_NS)) {
		kubepods_cache.err = find_kubepods_dir(source, memory_dir, kubepods_cache.dir,
						       sizeof(kubepods_cache.dir));
		kubepods_cache.probed_ns = now;
		memcpy(kubepods_cache.key, key, (size_t)n + 1);
		kubepods_cache.valid = true;
	}
	if (kubepods_cache.err)
		return kubepods_cache.err;
	if (strlen(kubepods_cache.dir) >= len)
		return -ENAMETOOLONG;
	strcpy(out, kubepods_cache.dir);
	return 0;
}

/* memory.max holds "max" for no limit. */
static int read_limit(const char *path, int64_t *limit)
{
	char buf[64];
	ssize_t len = sig_read_small(path, buf, sizeof(buf));

	if (len < 0) {
		log_fail("read %s: %m", path);
		return (int)len;
	}
	if (!strcmp(buf, "max") || !strcmp(buf, "max\n")) {
		*limit = INT64_MAX;
		return 0;
	}
	return sig_read_int64(path, limit);
}

int signals_read_allocatable(const struct signal_source *source, struct observations *obs)
{
	struct observation *allocatable = &obs->signal[EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE];
	struct key_scan scan = { .nkeys = 1, .sep = ' ' };
	char dir[PATH_MAX], path[PATH_MAX];
	const char *memory_dir;
	enum cgroup_layout layout;
	int64_t limit, usage, working_set;
	bool v2;
	int err;

	allocatable->present = false;
	layout = sig_cached_layout(source, &memory_dir);
	if (layout == CGROUP_LAYOUT_UNKNOWN)
		return -ENOENT;
	v2 = layout == CGROUP_LAYOUT_V2;
	/* No kubepods cgroup (standalone, or no kubelet yet): no observation, as the kubelet
	 * has none without the pods container. Not an error. */
	if (kubepods_dir(source, memory_dir, dir, sizeof(dir)))
		return 0;
	if ((err = sig_path_in(path, sizeof(path), dir, v2 ? "memory.max" : "memory.limit_in_bytes")) ||
	    (err = read_limit(path, &limit)))
		goto fail;
	if (limit > MEMORY_UNLIMITED_ABOVE)
		return 0;	/* no limit: nothing to measure against */
	if ((err = sig_path_in(path, sizeof(path), dir, v2 ? "memory.current" : "memory.usage_in_bytes")) ||
	    (err = sig_read_int64(path, &usage)))
		goto fail;
	scan.keys[0] = v2 ? "inactive_file" : "total_inactive_file";
	if ((err = sig_path_in(path, sizeof(path), dir, "memory.stat")) || (err = sig_scan_keys(path, &scan)))
		goto fail;
	working_set = usage;
	if (scan.found & 1)
		working_set = usage > scan.values[0] ? usage - scan.values[0] : 0;
	/* available = limit - working set; capacity = available + working set = limit. */
	*allocatable = (struct observation){ .present = true, .available = limit - working_set,
					     .capacity = limit, .read_at_ns = clock_monotonic_ns() };
	return 0;
fail:
	/* Removed or moved (a kubelet restart with another cgroup driver): probe again. */
	kubepods_forget();
	sig_layout_forget();
	return err;
}
