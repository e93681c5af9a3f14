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
#include "sys/procfs.h"

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

/* The v2 line of /proc/PID/cgroup ("0::/path"; hybrid hosts list the v1 hierarchies first)
 * into out, or the whole first line when there is none; "" when it cannot be read. */
static void read_cgroup_of(const char *proc_root, pid_t pid, char *out, size_t len)
{
	char path[256], text[4096];
	const char *v2;
	ssize_t n;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/proc/%d/cgroup", proc_root ? proc_root : "", (int)pid);
	n = fileio_read_at(AT_FDCWD, path, text, sizeof(text));
	if (n <= 0)
		return;
	v2 = !strncmp(text, "0::", 3) ? text : strstr(text, "\n0::");
	if (v2 && *v2 == '\n')
		v2++;
	snprintf(out, len, "%.*s", (int)strcspn(v2 ? v2 + 3 : text, "\n"), v2 ? v2 + 3 : text);
}

void aftermath_escaped(struct kill_tracked *tracked, const char *proc_root, bool kill_them,
		       struct kill_result *result)
{
	for (size_t i = 0; i < tracked->n; i++) {
		char cgroup[sizeof(result->escaped_to)];
		int exiting;

		if (tracked->pidfds[i] < 0 || !alive(tracked->pidfds[i]))
			continue;
		/*
		 * Not exited, yet its cgroup is empty: it moved out, or it is dying. A killed
		 * process leaves its cgroup in cgroup_exit() (the cgroup reads "populated 0") and
		 * only later, in exit_notify(), becomes a zombie whose pidfd polls readable; in
		 * between every thread of it has PF_EXITING, and /proc/PID/cgroup still names the
		 * emptied cgroup. That one is not an escape. What was read is that process's only
		 * if its pidfd still says it lives afterwards (a pid is not reused before it is
		 * reaped).
		 */
		exiting = procfs_process_exiting(proc_root, tracked->pids[i]);
		read_cgroup_of(proc_root, tracked->pids[i], cgroup, sizeof(cgroup));
		if (!alive(tracked->pidfds[i]))
			continue;	/* it finished exiting meanwhile */
		if (exiting == 1) {
			log_debug("kill: pid %d left %s by exiting (not reaped yet): not an escape",
				  (int)tracked->pids[i], cgroup[0] ? cgroup : "its cgroup");
			continue;
		}
		if (!result->escaped_to[0])
			snprintf(result->escaped_to, sizeof(result->escaped_to), "%s", cgroup);
		result->escaped++;
		if (kill_them) {
			if (pidfd_send_signal(tracked->pidfds[i], SIGKILL, NULL, 0) == 0)
				result->escaped_killed++;
			else if (errno != ESRCH)
				log_warn("kill: SIGKILL through the pidfd of pid %d: %m", (int)tracked->pids[i]);
		}
	}
}
