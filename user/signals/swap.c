// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* swap.available and zram.available (DESIGN.md §1 "Swap and zram"): free swap from
 * /proc/meminfo, and the room left in zram devices from /sys/block/zram* (mm_stat and
 * disksize), every path under the root prefix. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "signals/parts.h"
#include "sys/clock.h"

int signals_read_swap_meminfo(const char *root, int64_t *swap_total, int64_t *swap_free)
{
	struct key_scan scan = { .keys = { "SwapTotal", "SwapFree" }, .nkeys = 2, .sep = ':',
				 .unit = "kB" };
	char path[PATH_MAX];
	int err;

	err = sig_path_join(path, sizeof(path), root, "/proc/meminfo", NULL);
	if (err)
		return err;
	err = sig_scan_keys(path, &scan);
	if (err)
		return err;
	if (scan.found != 3) {
		/* CONFIG_SWAP=n kernels print neither line: no swap. */
		*swap_total = *swap_free = 0;
		return 0;
	}
	*swap_total = mul_clamp((uint64_t)scan.values[0], 1024);
	*swap_free = mul_clamp((uint64_t)scan.values[1], 1024);
	return 0;
}

/*
 * One device's mm_stat, as drivers/block/zram/zram_drv.c mm_stat_show prints it: bytes of
 * orig_data_size, compr_data_size, mem_used_total, mem_limit (0: none), mem_used_max, then
 * page counts. Only the first four are read; a kernel that appends fields changes nothing.
 */
int signals_parse_zram_mm_stat(const char *text, struct zram_device_stat *out)
{
	unsigned long long v[4];

	if (sscanf(text, "%llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3]) != 4)
		return -EINVAL;
	for (int i = 0; i < 4; i++)
		if (v[i] > INT64_MAX)
			return -ERANGE;
	out->orig_data_size = (int64_t)v[0];
	out->compr_data_size = (int64_t)v[1];
	out->mem_used_total = (int64_t)v[2];
	out->mem_limit = (int64_t)v[3];
	return 0;
}

/* The limit zram's compressed store is held to: mem_limit when set, else disksize (it never
 * stores more than disksize of pages, compressed or not). 0: an unconfigured device. */
int64_t signals_zram_limit(const struct zram_device_stat *stat)
{
	return stat->mem_limit > 0 ? stat->mem_limit : stat->disksize;
}

static int read_zram_device(const char *dir, struct zram_device_stat *stat)
{
	char path[PATH_MAX], buf[512];
	int64_t disksize;
	int err;

	err = sig_path_in(path, sizeof(path), dir, "disksize");
	if (err)
		return err;
	err = sig_read_int64(path, &disksize);
	if (err)
		return err;
	err = sig_path_in(path, sizeof(path), dir, "mm_stat");
	if (err)
		return err;
	if (sig_read_small(path, buf, sizeof(buf)) < 0) {
		err = -errno;
		log_fail("%s: %m", path);
		return err;
	}
	err = signals_parse_zram_mm_stat(buf, stat);
	if (err) {
		log_fail("%s: \"%.40s\": expected orig_data_size compr_data_size mem_used_total mem_limit",
			 path, buf);
		return err;
	}
	stat->disksize = disksize;
	return 0;
}

/* Sum the room of every initialised zram device under root/sys/block. No device: 0 with
 * *n_devices 0. A device that cannot be read is logged and left out. */
int signals_read_zram(const char *root, int64_t *room, int64_t *limit, unsigned *n_devices)
{
	char dir[PATH_MAX], base[PATH_MAX];
	struct dirent *entry;
	DIR *block;
	int err;

	*room = *limit = 0;
	*n_devices = 0;
	err = sig_path_join(base, sizeof(base), root, "/sys/block", NULL);
	if (err)
		return err;
	if (!(block = opendir(base))) {
		err = -errno;
		if (err == -ENOENT)
			return 0;
		log_fail("%s: %m", base);
		return err;
	}
	while ((entry = readdir(block))) {
		struct zram_device_stat stat = { 0 };
		int64_t device_limit;

		if (strncmp(entry->d_name, "zram", 4) || !entry->d_name[4])
			continue;
		if (sig_path_in(dir, sizeof(dir), base, entry->d_name) || read_zram_device(dir, &stat))
			continue;
		device_limit = signals_zram_limit(&stat);
		if (device_limit <= 0)
			continue;	/* reset or never sized: holds nothing */
		*limit += device_limit;
		*room += device_limit > stat.mem_used_total ? device_limit - stat.mem_used_total : 0;
		(*n_devices)++;
	}
	closedir(block);
	return 0;
}

int signals_read_swap(const struct signal_source *source, struct observations *obs)
{
	struct observation *swap = &obs->signal[EV_SIGNAL_SWAP_AVAILABLE];
	struct observation *zram = &obs->signal[EV_SIGNAL_ZRAM_AVAILABLE];
	int64_t total, free_bytes, room, limit;
	unsigned n_zram;
	int err;

	swap->present = zram->present = false;
	err = signals_read_swap_meminfo(source->root, &total, &free_bytes);
	if (err)
		return err;
	obs->swap_total_bytes = total;
	/* No swap: nothing to observe (the gate then waits for nothing, thresholds.c). */
	if (total > 0)
		*swap = (struct observation){ .present = true, .available = free_bytes,
					      .capacity = total, .read_at_ns = clock_monotonic_ns() };
	err = signals_read_zram(source->root, &room, &limit, &n_zram);
	if (err)
		return err;
	obs->zram_devices = n_zram;
	if (n_zram)
		*zram = (struct observation){ .present = true, .available = room, .capacity = limit,
					      .read_at_ns = clock_monotonic_ns() };
	return 0;
}
