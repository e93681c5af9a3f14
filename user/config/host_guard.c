// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Refusing nonsense (doc/DESIGN.md §9, "Hostile input"): every unit below a workload root is a
 * workload evictd may kill whole with cgroup.kill. A root that is a cgroup root, or whose
 * children are the host's own units, would make the machine's init.scope (PID 1, or a user
 * manager), system.slice (every service) or a user's session a workload: --validate and the
 * start refuse it with the reason, or only warn with --allow-host-units.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "config/options.h"
#include "sys/fileio.h"
#include "sys/log.h"

#define KEY "workloadRoots (--workload-root)"

/* What systemd puts directly below the root cgroup (src/core/unit.c: init.scope,
 * system.slice, user.slice) and below a user manager, user@UID.service (init.scope,
 * session.slice for the session's own services). */
static const char *const host_units[] = { "init.scope", "system.slice", "user.slice", "session.slice" };

/* A cgroup root: the hierarchy's root has no cgroup.events (CFTYPE_NOT_ON_ROOT in
 * kernel/cgroup/cgroup.c cgroup_base_files); a cgroup namespace's root, as a container sees
 * it, is where the cgroup2 mount starts: its parent is on another filesystem. */
static bool is_cgroup_root(int fd, const char *path)
{
	struct stat st, parent;
	char up[PATH_MAX];

	if (faccessat(fd, "cgroup.procs", F_OK, 0) == 0 && faccessat(fd, "cgroup.events", F_OK, 0) &&
	    errno == ENOENT)
		return true;
	if (snprintf(up, sizeof(up), "%s/..", path) >= (int)sizeof(up))
		return false;
	return fstat(fd, &st) == 0 && stat(up, &parent) == 0 && st.st_dev != parent.st_dev;
}

int config_check_host_units(const struct evictd_config *config, const char *dir)
{
	char path[PATH_MAX], found[128] = "";
	const char *why = NULL;
	int fd;

	if (fileio_join_root(path, sizeof(path), config->root, dir))
		return 0;	/* check_workload_root said it */
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;	/* the same */
	if (is_cgroup_root(fd, path)) {
		why = "is a cgroup root: every service, session and init.scope below it would be a workload";
	} else {
		for (size_t i = 0; i < sizeof(host_units) / sizeof(host_units[0]); i++) {
			struct stat st;

			if (fstatat(fd, host_units[i], &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
				continue;
			snprintf(found + strlen(found), sizeof(found) - strlen(found), "%s%s",
				 found[0] ? ", " : "", host_units[i]);
		}
		if (found[0])
			why = "holds the host's own units";
	}
	close(fd);
	if (!why)
		return 0;
	if (config->allow_host_units) {
		log_warn("%s: \"%s\" %s%s%s%s; accepted (--allow-host-units): evictd may kill them",
			 KEY, value_echo(dir).text, why, found[0] ? " (" : "", found, found[0] ? ")" : "");
		return 0;
	}
	log_err("%s: \"%s\" %s%s%s%s: every unit below a workload root may be killed whole, so the "
		"machine's own units would be; expected a slice of workloads (e.g. /sys/fs/cgroup/batch.slice), or "
		"--allow-host-units to mean it", KEY, value_echo(dir).text, why, found[0] ? " (" : "",
		found, found[0] ? ")" : "");
	return -EINVAL;
}
