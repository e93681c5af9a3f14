/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What survives a restart of evictd but not a reboot: CLOCK_BOOTTIME (system-wide, and it
 * counts suspend, unlike MONOTONIC) and the boot id, which tells a state file written in
 * this boot from one left by the previous. */
#ifndef EVICTD_SYS_BOOT_H
#define EVICTD_SYS_BOOT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define BOOT_ID_LEN 37	/* a UUID and its NUL */

static inline int64_t clock_boottime_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_BOOTTIME, &now);
	return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* /proc/sys/kernel/random/boot_id into buf (the newline dropped): 0 or negative errno. */
int boot_id_read(char *buf, size_t len);

#endif
