// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sys/log.h"
#include "sys/psi.h"

int psi_trigger_open(const char *path, const struct psi_trigger_spec *spec)
{
	char trigger[64];
	int fd, len, err;

	fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		log_warn("PSI %s: %m", path);
		return err;
	}
	len = snprintf(trigger, sizeof(trigger), "%s %u %u", spec->kind, spec->stall_us, spec->window_us);
	/* The trigger string must be written with its terminating NUL. */
	if (write(fd, trigger, (size_t)len + 1) < 0) {
		err = -errno;
		log_info("PSI trigger \"%s\" on %s refused: %m", trigger, path);
		close(fd);
		return err;
	}
	return fd;
}

int psi_trigger_open_memory(const char *path)
{
	int fd = psi_trigger_open(path, &(struct psi_trigger_spec){ "some", 100000, 1000000 });

	if (fd == -EINVAL)
		fd = psi_trigger_open(path, &(struct psi_trigger_spec){ "some", 200000, 2000000 });
	return fd;
}

int psi_read_total(const char *path, uint64_t *some_total_us)
{
	char buf[512], *total;
	ssize_t got;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		log_debug("PSI %s: %m", path);
		return err;
	}
	got = read(fd, buf, sizeof(buf) - 1);
	err = -errno;
	close(fd);
	if (got < 0)
		return err;
	buf[got] = '\0';
	if (strncmp(buf, "some ", 5) || !(total = strstr(buf, "total=")))
		return -EINVAL;
	*some_total_us = strtoull(total + 6, NULL, 10);
	return 0;
}
