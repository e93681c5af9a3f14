// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What a kill left behind: see aftermath.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <unistd.h>

#include "act/aftermath.h"
#include "sys/cgroupfs.h"
#include "sys/fileio.h"
#include "sys/log.h"

static int64_t read_i64(int dir_fd, const char *name)
{
	int64_t value;

	return cgroupfs_read_i64_at(dir_fd, name, &value) == 0 ? value : -1;
}

void aftermath_measure(int dir_fd, struct kill_result *result)
{
	char stat[8192];
	int64_t shmem;
	ssize_t n;

	if (dir_fd < 0)
		return;
	result->memory_left_bytes = read_i64(dir_fd, "memory.current");
	result->tasks_left = read_i64(dir_fd, "pids.current");
	n = fileio_read_at(dir_fd, "memory.stat", stat, sizeof(stat));
	if (n >= 0 && cgroupfs_keyed_value(stat, "shmem", &shmem) == 0)
		result->shmem_left_bytes = shmem;
}

/* A pidfd polls readable once its process has exited (pidfd_poll(): thread_group_exited). */
static bool alive(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return poll(&p, 1, 0) == 0;
}

void aftermath_escaped(struct kill_tracked *tracked, const char *proc_root, bool kill_them,
		       struct kill_result *result)
{
	for (size_t i = 0; i < tracked->n; i++) {
		if (tracked->pidfds[i] < 0 || !alive(tracked->pidfds[i]))
			continue;
		if (!result->escaped_to[0]) {
			char path[256], text[4096];
			ssize_t n;

			snprintf(path, sizeof(path), "%s/proc/%d/cgroup", proc_root ? proc_root : "",
				 (int)tracked->pids[i]);
			n = fileio_read_at(AT_FDCWD, path, text, sizeof(text));
			/* cgroup v2: the line "0::/path" (hybrid hosts list v1 hierarchies first);
			 * the pidfd says it is still this process. */
			if (n > 0 && alive(tracked->pidfds[i])) {
				const char *v2 = !strncmp(text, "0::", 3) ? text : strstr(text, "\n0::");

				if (v2 && *v2 == '\n')
					v2++;

				snprintf(result->escaped_to, sizeof(result->escaped_to), "%.*s",
					 (int)strcspn(v2 ? v2 + 3 : text, "\n"), v2 ? v2 + 3 : text);
			}
		}
		result->escaped++;
		if (kill_them) {
			if (pidfd_send_signal(tracked->pidfds[i], SIGKILL, NULL, 0) == 0)
				result->escaped_killed++;
			else if (errno != ESRCH)
				log_warn("kill: SIGKILL through the pidfd of pid %d: %m", (int)tracked->pids[i]);
		}
	}
}
