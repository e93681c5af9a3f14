// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
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

struct close_share {
	const int *fds;
	size_t n, first, stride;
};

static void close_share(const struct close_share *share)
{
	for (size_t i = share->first; i < share->n; i += share->stride)
		if (share->fds[i] >= 0)
			close(share->fds[i]);
}

static void *close_share_thread(void *arg)
{
	close_share(arg);
	return NULL;
}

void psi_triggers_close(const int *fds, size_t n)
{
	struct close_share shares[PSI_CLOSE_MAX_THREADS];
	pthread_t threads[PSI_CLOSE_MAX_THREADS];
	bool started[PSI_CLOSE_MAX_THREADS] = { false };
	size_t n_threads = n < PSI_CLOSE_MAX_THREADS ? n : PSI_CLOSE_MAX_THREADS;
	sigset_t all, saved;

	if (n_threads <= 1) {
		close_share(&(struct close_share){ fds, n, 0, 1 });
		return;
	}
	/* The helpers take no signal: they inherit a full mask. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	for (size_t t = 0; t < n_threads; t++) {
		shares[t] = (struct close_share){ fds, n, t, n_threads };
		started[t] = t > 0 && pthread_create(&threads[t], NULL, close_share_thread, &shares[t]) == 0;
	}
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	/* Share 0, and any share whose thread could not start, are closed here. */
	for (size_t t = 0; t < n_threads; t++)
		if (!started[t])
			close_share(&shares[t]);
	for (size_t t = 0; t < n_threads; t++)
		if (started[t])
			pthread_join(threads[t], NULL);
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
