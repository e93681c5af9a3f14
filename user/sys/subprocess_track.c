// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Children must die with evictd (sys/subprocess.h). Each child is a process group leader
 * with PR_SET_PDEATHSIG(SIGKILL), but the signal reaches the leader alone: a `sleep 60`
 * under `sh -c` lives on. So every started group is recorded in <dir>/children/<pgid>
 * (boot id, pgid, session, the leader's start time from /proc/PID/stat) and forgotten once
 * the group is empty; the next evictd kills what is left before it starts anything.
 *
 * Never a recycled pid: a pid number stays allocated while a group or session uses it
 * (kernel/pid.c: a struct pid lives while any task links it as PIDTYPE_PGID/SID), so while
 * any process of the group is alive the number is ours. A process is killed only when it is
 * in the recorded group and session and started no earlier than the leader; the leader's
 * own pid only with its recorded start time (else the number was freed and reused: the group
 * is left alone). Each is checked again through a pidfd, which pins it, before SIGKILL.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/boot.h"
#include "sys/fileio.h"
#include "sys/log.h"
#include "sys/subprocess.h"

struct proc_ident {
	pid_t pgrp, session;
	unsigned long long starttime;	/* clock ticks after boot */
	bool zombie;			/* dead already: nothing to kill */
};

struct record {
	char boot_id[BOOT_ID_LEN];
	pid_t pgid, session;
	unsigned long long starttime;
};

static char track_dir[PATH_MAX];	/* <state-dir>/children; "" = not recording */

/* /proc/PID/stat: pgrp (5), session (6), starttime (22); fields counted after the last ')',
 * as comm may hold anything. */
static int proc_ident(pid_t pid, struct proc_ident *out)
{
	char path[64], buf[1024], *p;
	unsigned long long field[20];
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (fileio_read_at(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return -ESRCH;
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	p += 2;		/* ") " then the state: field 3 */
	out->zombie = *p == 'Z' || *p == 'X';
	while (*p && n < 20) {
		while (*p == ' ')
			p++;
		field[n++] = strtoull(p, &p, 10);	/* the state letter reads as 0 */
		p += strcspn(p, " ");
	}
	if (n < 20)
		return -EINVAL;
	/* field[0] is field 3 of the file. */
	out->pgrp = (pid_t)field[2];
	out->session = (pid_t)field[3];
	out->starttime = field[19];
	return 0;
}

static int record_path(char *buf, size_t len, const char *dir, pid_t pgid)
{
	if ((size_t)snprintf(buf, len, "%s/%d", dir, (int)pgid) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* tmp + rename, no fsync: the record must survive evictd's death, not the machine's (a
 * reboot voids it through the boot id). */
static int write_record(const char *path, const char *text)
{
	char tmp[PATH_MAX + 16];
	size_t len = strlen(text);
	int fd, err = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		err = -EIO;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

void subprocess_track_add(pid_t pgid)
{
	char path[PATH_MAX + 16], text[160], boot_id[BOOT_ID_LEN];
	struct proc_ident me;
	int err;

	if (!track_dir[0] || pgid <= 0)
		return;
	err = boot_id_read(boot_id, sizeof(boot_id));
	if (!err)
		err = proc_ident(pgid, &me);
	if (!err)
		err = record_path(path, sizeof(path), track_dir, pgid);
	if (!err) {
		snprintf(text, sizeof(text), "boot_id %s\npgid %d\nsession %d\nstarttime %llu\n",
			 boot_id, (int)pgid, (int)me.session, me.starttime);
		err = write_record(path, text);
	}
	if (err) {
		errno = -err;
		log_warn("subprocess: recording child group %d in %s: %m; a crash of evictd would "
			 "leave its children", (int)pgid, track_dir);
	}
}

void subprocess_track_forget(pid_t pgid)
{
	char path[PATH_MAX + 16];

	if (!track_dir[0] || pgid <= 0)
		return;
	/* A process of the group left behind keeps the record: the next start kills it. */
	if (kill(-pgid, 0) == 0 || errno != ESRCH)
		return;
	if (!record_path(path, sizeof(path), track_dir, pgid) && unlink(path) && errno != ENOENT)
		log_warn("subprocess: removing %s: %m", path);
}

static int parse_record(const char *text, struct record *r)
{
	int pgid, session;

	/* Session 0 is real: the session of a process whose session leader is outside its pid
	 * namespace, or that descends from an init that never called setsid() (kernel/sys.c
	 * getsid() -> pid_vnr(); init_task's session is 0). */
	memset(r, 0, sizeof(*r));
	if (sscanf(text, "boot_id %36s\npgid %d\nsession %d\nstarttime %llu", r->boot_id, &pgid,
		   &session, &r->starttime) != 4 || pgid <= 1 || session < 0)
		return -EINVAL;
	r->pgid = pgid;
	r->session = session;
	return 0;
}

static bool same_process(pid_t pid, const struct record *r, unsigned long long *starttime)
{
	struct proc_ident id;

	if (proc_ident(pid, &id) || id.zombie || id.pgrp != r->pgid || id.session != r->session ||
	    id.starttime < r->starttime || (pid == r->pgid && id.starttime != r->starttime))
		return false;
	if (starttime)
		*starttime = id.starttime;
	return true;
}

/* SIGKILL every process still of the recorded group; the number killed. */
static int kill_recorded(const struct record *r)
{
	struct proc_ident leader;
	struct dirent *entry;
	int killed = 0;
	DIR *proc;

	if (!proc_ident(r->pgid, &leader) && leader.starttime != r->starttime)
		return 0;	/* the leader's pid is another process now */
	proc = opendir("/proc");
	if (!proc) {
		log_err("subprocess: opendir /proc: %m");
		return -errno;
	}
	while ((entry = readdir(proc))) {
		unsigned long long before, after;
		pid_t pid;
		int fd;

		if (!isdigit((unsigned char)entry->d_name[0]))
			continue;
		pid = (pid_t)strtol(entry->d_name, NULL, 10);
		if (pid == getpid() || !same_process(pid, r, &before))
			continue;
		/* Pinned by the pidfd, then checked again: not a pid reused in between. */
		fd = pidfd_open(pid, 0);
		if (fd < 0)
			continue;
		if (same_process(pid, r, &after) && after == before && !pidfd_send_signal(fd, SIGKILL, NULL, 0)) {
			log_warn("subprocess: killed pid %d of child group %d left by a previous "
				 "evictd", (int)pid, (int)r->pgid);
			killed++;
		}
		close(fd);
	}
	closedir(proc);
	return killed;
}

int subprocess_track(const char *dir)
{
	char boot_id[BOOT_ID_LEN];
	struct dirent *entry;
	int killed = 0, err;
	DIR *d;

	track_dir[0] = '\0';
	if (!dir || !dir[0])
		return 0;
	if ((size_t)snprintf(track_dir, sizeof(track_dir), "%s/children", dir) >= sizeof(track_dir)) {
		track_dir[0] = '\0';
		return -ENAMETOOLONG;
	}
	err = fileio_mkdir_p(track_dir, 0700);
	if (!err)
		err = boot_id_read(boot_id, sizeof(boot_id));
	d = err ? NULL : opendir(track_dir);
	if (!d) {
		err = err ? err : -errno;
		errno = -err;
		log_err("subprocess: %s: %m; children are not recorded", track_dir);
		track_dir[0] = '\0';
		return err;
	}
	while ((entry = readdir(d))) {
		char path[PATH_MAX + 300], text[256];
		struct record r;
		int n;

		if (entry->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", track_dir, entry->d_name);
		if (fileio_read_at(AT_FDCWD, path, text, sizeof(text)) >= 0 && !parse_record(text, &r) &&
		    !strcmp(r.boot_id, boot_id)) {
			n = kill_recorded(&r);
			if (n > 0)
				killed += n;
		}
		/* Done with, from a previous boot, a partial write or garbage: gone. */
		unlink(path);
	}
	closedir(d);
	return killed;
}
