// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The boot id (sys/boot.h): state kept across restarts is void after a reboot. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "sys/boot.h"
#include "sys/fileio.h"

int boot_id_read(char *buf, size_t len)
{
	ssize_t n;

	if (!buf || len < BOOT_ID_LEN)
		return -EINVAL;
	n = fileio_read_at(AT_FDCWD, "/proc/sys/kernel/random/boot_id", buf, len);
	if (n < 0)
		return (int)n;
	buf[strcspn(buf, "\n")] = '\0';
	return buf[0] ? 0 : -ENODATA;
}
