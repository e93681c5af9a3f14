// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* swap.available and zram.available (DESIGN.md §1 "Swap and zram"): free swap from
 * /proc/meminfo, its zram part (/proc/swaps) counted only as far as MemAvailable can hold it,
 * and the room left in zram devices from /sys/block/zram* (mm_stat and disksize), every path
 * under the root prefix. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/arith.h"
#include "signals/parts.h"
#include "sys/clock.h"

int signals_read_swap_meminfo(const char *root, struct swap_room *room)
{
	struct key_scan scan = { .keys = { "SwapTotal", "SwapFree", "MemAvailable" }, .nkeys = 3,
				 .sep = ':', .unit = "kB" };
	char path[PATH_MAX];
	int err;

	err = sig_path_join(path, sizeof(path), root, "/proc/meminfo", NULL);
	if (err)
		return err;
	err = sig_scan_keys(path, &scan);
	if (err)
		return err;
	room->mem_available = (scan.found & 4) ? mul_clamp((uint64_t)scan.values[2], 1024) : -1;
	if ((scan.found & 3) != 3) {
		/* CONFIG_SWAP=n kernels print neither line: no swap. */
		room->swap_total = room->swap_free = 0;
		return 0;
	}
	room->swap_total = mul_clamp((uint64_t)scan.values[0], 1024);
	room->swap_free = mul_clamp((uint64_t)scan.values[1], 1024);
	return 0;
}

/*
 * /proc/swaps as mm/swapfile.c swap_show prints it: a header, then per area "Filename Type
 * Size Used Priority", sizes in KiB (a path's blanks are escaped, seq_file_path). Sums the
 * free KiB of the areas on /dev/zram*, as bytes.
 */
int signals_parse_proc_swaps(const char *text, int64_t *zram_free, unsigned *zram_swaps)
{
	const char *line = strchr(text, '\n');

	*zram_free = 0;
	*zram_swaps = 0;
	if (!line)
		return strncmp(text, "Filename", 8) ? -EINVAL : 0;
	/* Whole lines only: a buffer cut short ends mid-line. */
	while (*++line && strchr(line, '\n')) {
		char name[256];
		long long size, used;

		if (sscanf(line, "%255s %*s %lld %lld", name, &size, &used) != 3 || size < 0 ||
		    used < 0)
			return -EINVAL;
		if (!strncmp(name, "/dev/zram", 9)) {
			*zram_free = sat_add_i64(*zram_free,
						 mul_clamp((uint64_t)(size > used ? size - used : 0), 1024));
			(*zram_swaps)++;
		}
		line = strchr(line, '\n');
	}
	return 0;
}

/* bytes x num / den without overflow, clamped to INT64_MAX. */
static int64_t scale_clamp(int64_t bytes, int64_t num, int64_t den)
{
	double scaled = (double)bytes * (double)num / (double)den;

	return scaled >= 9223372036854775807.0 ? INT64_MAX : (int64_t)scaled;
}

/*
 * zram's swap space is RAM (Documentation/admin-guide/blockdev/zram.rst: the device "uses
 * memory"; mm_stat_show's mem_used_total is the RAM it takes). A page swapped to it still
 * needs RAM for its compressed copy, so free zram swap is room only up to what RAM can hold:
 * MemAvailable x the observed ratio orig_data_size / compr_data_size (1 with no data yet, and
 * never below 1: incompressible pages are stored whole). Free swap on other devices counts
 * whole. nohang weighs zram the same way, by mem_used_total against RAM (src/nohang
 * check_zram, check_zram_ex: MemUsedZram >= max_zram % of MemTotal with MemAvailable low).
 */
int64_t signals_swap_effective_free(const struct swap_room *room)
{
	int64_t zram_free, other_free, cap;

	if (!room->zram_swaps || room->mem_available < 0)
		return room->swap_free;
	zram_free = room->zram_swap_free < room->swap_free ? room->zram_swap_free : room->swap_free;
	other_free = room->swap_free - zram_free;
	cap = room->zram_compr > 0 && room->zram_orig > room->zram_compr
		      ? scale_clamp(room->mem_available, room->zram_orig, room->zram_compr)
		      : room->mem_available;
	return sat_add_i64(other_free, zram_free < cap ? zram_free : cap);
}

/* zram's room (limit - mem_used_total) is RAM it may still take: never more than MemAvailable. */
int64_t signals_zram_effective_room(const struct swap_room *room)
{
	if (room->mem_available >= 0 && room->mem_available < room->zram_room)
		return room->mem_available;
	return room->zram_room;
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
 * zram_devices 0. A device that cannot be read is logged and left out. */
int signals_read_zram(const char *root, struct swap_room *room)
{
	char dir[PATH_MAX], base[PATH_MAX];
	struct dirent *entry;
	DIR *block;
	int err;

	room->zram_room = room->zram_limit = room->zram_orig = room->zram_compr = 0;
	room->zram_devices = 0;
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
		room->zram_limit = sat_add_i64(room->zram_limit, device_limit);
		room->zram_room = sat_add_i64(room->zram_room, device_limit > stat.mem_used_total
							       ? device_limit - stat.mem_used_total : 0);
		room->zram_orig = sat_add_i64(room->zram_orig, stat.orig_data_size);
		room->zram_compr = sat_add_i64(room->zram_compr, stat.compr_data_size);
		room->zram_devices++;
	}
	closedir(block);
	return 0;
}

/* The zram areas of /proc/swaps; none when it is absent (CONFIG_SWAP=n, a fixture tree). */
static int read_proc_swaps(const char *root, struct swap_room *room)
{
	char path[PATH_MAX], buf[4096];
	int err;

	room->zram_swap_free = 0;
	room->zram_swaps = 0;
	err = sig_path_join(path, sizeof(path), root, "/proc/swaps", NULL);
	if (err)
		return err;
	if (sig_read_small(path, buf, sizeof(buf)) < 0) {
		err = -errno;
		if (err == -ENOENT)
			return 0;
		log_fail("%s: %m", path);
		return err;
	}
	err = signals_parse_proc_swaps(buf, &room->zram_swap_free, &room->zram_swaps);
	if (err)
		log_fail("%s: \"%.40s\": expected Filename Type Size Used Priority", path, buf);
	return err;
}

int signals_read_swap(const struct signal_source *source, struct observations *obs)
{
	struct observation *swap = &obs->signal[EV_SIGNAL_SWAP_AVAILABLE];
	struct observation *zram = &obs->signal[EV_SIGNAL_ZRAM_AVAILABLE];
	struct swap_room room = { 0 };
	int err;

	swap->present = zram->present = false;
	err = signals_read_swap_meminfo(source->root, &room);
	if (err)
		return err;
	obs->swap_total_bytes = room.swap_total;
	err = signals_read_zram(source->root, &room);
	if (err)
		return err;
	obs->zram_devices = room.zram_devices;
	if (room.swap_total > 0) {
		err = read_proc_swaps(source->root, &room);
		if (err)
			return err;
	}
	/* No swap: nothing to observe (the gate then waits for nothing, thresholds.c). */
	if (room.swap_total > 0)
		*swap = (struct observation){ .present = true,
					      .available = signals_swap_effective_free(&room),
					      .capacity = room.swap_total,
					      .read_at_ns = clock_monotonic_ns() };
	if (room.zram_devices)
		*zram = (struct observation){ .present = true,
					      .available = signals_zram_effective_room(&room),
					      .capacity = room.zram_limit,
					      .read_at_ns = clock_monotonic_ns() };
	return 0;
}
