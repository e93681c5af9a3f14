// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Standalone workloads (doc/DESIGN.md §5 "Workloads on a host"): the units below each
 * --workload-root, their xattrs and preferences. On a host the roots are slices
 * (system.slice, user.slice, a user's slice) whose direct children are themselves slices and
 * user managers: killing user-1000.slice or user@1000.service takes the user's whole session
 * down for one leaking app. So the candidates are found as systemd-oomd finds them below a
 * monitored cgroup (src/oom/oomd-manager.c recursively_get_cgroup_context: the leaf cgroups,
 * or a cgroup with memory.oom.group set, which is killed whole): a service, a scope, a user
 * manager's own services and a session scope. A unit is killed whole (cgroup.kill takes its
 * subtree), so evictd stops at the unit rather than at the cgroup leaves inside a delegated
 * service, except in a user manager, which holds the user's units.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core/quantity.h"
#include "sys/fileio.h"
#include "sys/log.h"
#include "pods/internal.h"
#include "pods/prefs.h"

/* An xattr of the open cgroup dir fd as a NUL-terminated string with trailing whitespace cut.
 * 1 found, 0 absent, -EILSEQ when the value holds a NUL byte (the C string would silently
 * end early: "1\0garbage" is not "1"), other negative errno. */
int pods_read_xattr(int fd, const char *name, char *buf, size_t len)
{
	ssize_t n = fgetxattr(fd, name, buf, len - 1);

	if (n < 0)
		return (errno == ENODATA || errno == ENOTSUP) ? 0 : -errno;
	if (memchr(buf, '\0', (size_t)n))
		return -EILSEQ;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		buf[--n] = '\0';
	return 1;
}

/*
 * One workload setting: trusted.evictd.<name> on any workload cgroup, else user.evictd.<name>
 * only when root owns the cgroup directory. The owner of a delegated cgroup (systemd
 * Delegate=, a user's session) can write user.* xattrs on it and would otherwise set
 * priority 2147483647 and never be evicted. systemd-oomd guards its user.oomd_avoid and
 * user.oomd_omit the same way (src/oom/oomd-util.c, oomd_fetch_cgroup_oom_preference: read
 * when cg_get_owner() is 0, or the same owner as the monitored prefix cgroup, else the
 * preference is NONE); evictd ranks workloads of every root against each other, so only
 * root's word counts. trusted.* needs CAP_SYS_ADMIN to set (xattr(7)). Sets *used to the
 * name read. 1 found, 0 absent or refused (logged once), negative errno.
 */
static int workload_xattr(struct pods *pods, struct pod *pod, int fd, uid_t owner,
			  const char *trusted, const char *user, char *value, size_t len,
			  const char **used)
{
	char key[PATH_MAX + 64];
	int found;

	*used = trusted;
	found = pods_read_xattr(fd, trusted, value, len);
	if (found == 0) {
		*used = user;
		found = pods_read_xattr(fd, user, value, len);
		if (found > 0 && owner != 0) {
			snprintf(key, sizeof(key), "%s:%s", pod->cgroup_path, user);
			if (pods_first_time(pods, "xattr-not-root", key))
				log_warn("workload %s: ignoring %s: the cgroup is owned by uid %u, not "
					 "root (a delegated cgroup cannot set its own rank; root may set "
					 "trusted.evictd.*); using 0", pod->cgroup_path, user,
					 (unsigned int)owner);
			return 0;
		}
	}
	if (found == -EILSEQ) {
		snprintf(key, sizeof(key), "%s:%s", pod->cgroup_path, *used);
		if (pods_first_time(pods, "xattr-nul", key))
			log_warn("workload %s: %s holds a NUL byte; ignoring it, using 0",
				 pod->cgroup_path, *used);
		return 0;
	}
	if (found < 0) {
		snprintf(key, sizeof(key), "%s:%s", pod->cgroup_path, *used);
		if (pods_first_time(pods, "xattr-error", key)) {
			errno = -found;
			log_warn("workload %s: getxattr %s: %m; using 0", pod->cgroup_path, *used);
		}
		return 0;
	}
	return found;
}

/* systemd's ManagedOOMPreference (its xattrs, under systemd-oomd's ownership rule) and the
 * configured workloadPreferences (prefs.h). priority_set: an xattr gave the priority. */
static void workload_preferences(struct pods *pods, struct pod *pod, int fd, uid_t owner,
				 bool priority_set)
{
	const char *base = strrchr(pod->cgroup_path, '/'), *rel = pod->cgroup_path;
	size_t mount_len = strlen(pods->mount);
	const char *xattr;

	pod->preference = pods_oomd_preference(fd, owner, pods->scan_root_owner, &xattr);
	if (xattr)
		snprintf(pod->preference_from, sizeof(pod->preference_from),
			 "ManagedOOMPreference=%s (%s)",
			 pod->preference == POD_PREF_NEVER ? "omit" : "avoid", xattr);
	if (!strncmp(rel, pods->mount, mount_len) && rel[mount_len] == '/')
		rel += mount_len + 1;
	workload_prefs_apply(&pods->prefs, pod, base ? base + 1 : pod->cgroup_path, rel, priority_set);
}

void pods_workload_xattrs(struct pods *pods, struct pod *pod, int fd, uid_t owner)
{
	char value[128], key[PATH_MAX + 200];
	const char *name;
	bool priority_set = false;

	if (workload_xattr(pods, pod, fd, owner, PODS_XATTR_TRUSTED_PRIORITY, PODS_XATTR_PRIORITY,
			   value, sizeof(value), &name) > 0) {
		char *end;
		long long priority;

		errno = 0;
		priority = strtoll(value, &end, 10);
		if (errno || end == value || *end || priority < INT32_MIN || priority > INT32_MAX) {
			snprintf(key, sizeof(key), "%s=%s", pod->cgroup_path, value);
			if (pods_first_time(pods, "bad-priority", key))
				log_warn("workload %s: %s \"%s\" is not a 32-bit integer; using 0",
					 pod->cgroup_path, name, value);
		} else {
			pod->priority = (int32_t)priority;
			priority_set = true;
		}
	}
	workload_preferences(pods, pod, fd, owner, priority_set);

	if (workload_xattr(pods, pod, fd, owner, PODS_XATTR_TRUSTED_MEMORY_REQUEST,
			   PODS_XATTR_MEMORY_REQUEST, value, sizeof(value), &name) > 0) {
		int64_t request;

		if (quantity_parse(value, &request) || request < 0) {
			snprintf(key, sizeof(key), "%s=%s", pod->cgroup_path, value);
			if (pods_first_time(pods, "bad-request", key))
				log_warn("workload %s: %s \"%s\" is not a non-negative quantity; using 0",
					 pod->cgroup_path, name, value);
		} else {
			pod->memory_request = request;
		}
	}
	/* No QoS exists outside Kubernetes; name the closest so reports read sensibly. */
	pod->qos = pod->memory_request > 0 ? POD_QOS_BURSTABLE : POD_QOS_BESTEFFORT;
}

/* Deeper than this the cgroup reached is the candidate (a bound on the recursion; systemd's
 * own trees are 5 deep below user.slice). */
#define WORKLOAD_MAX_DEPTH 12

static bool has_suffix(const char *name, const char *suffix)
{
	size_t n = strlen(name), k = strlen(suffix);

	return n >= k && !strcmp(name + n - k, suffix);
}

/* A small cgroup file of the open dir fd, trailing newline cut; "" when it cannot be read
 * (a tree without the memory controller has no memory.oom.group). */
static void read_small(int dir_fd, const char *file, char *buf, size_t len)
{
	ssize_t n = fileio_read_at(dir_fd, file, buf, len);

	if (n <= 0)
		buf[0] = '\0';
	else if (buf[n - 1] == '\n')
		buf[n - 1] = '\0';
}

/* Whether the cgroup dir fd has a child cgroup (a subdirectory). */
static bool has_child_cgroup(int dir_fd)
{
	int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *entry;
	bool found = false;
	DIR *d;

	if (fd < 0)
		return false;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return false;
	}
	while (!found && (entry = readdir(d)))
		found = entry->d_name[0] != '.' && pods_is_directory(d, entry);
	closedir(d);
	return found;
}

enum unit_kind { UNIT_SKIP, UNIT_CANDIDATE, UNIT_DESCEND };

/*
 * What a child cgroup of a workload root (or of a cgroup descended into) is:
 *  - init.scope: a manager's own processes (PID 1, or a user's systemd --user and sd-pam);
 *    killing it is killing every unit it manages: never a candidate;
 *  - a cgroup without child cgroups: a candidate (oomd: "no subgroups? We're a leaf node"),
 *    except a slice, which never holds a process (systemd.slice(5));
 *  - memory.oom.group = 1: a candidate, killed whole (oomd does not descend into it either);
 *  - cgroup.type "domain threaded": its children are threads of its processes, which
 *    cgroup.kill refuses (kernel/cgroup/cgroup.c cgroup_kill_write): a candidate, whole;
 *  - a slice or a user manager (user@UID.service): descended into;
 *  - any other unit (a service or scope, delegated or not): a candidate, killed whole.
 */
static enum unit_kind unit_kind(DIR *parent, const char *name, unsigned depth)
{
	char value[32];
	enum unit_kind kind = UNIT_CANDIDATE;
	int fd;

	if (!strcmp(name, "init.scope"))
		return UNIT_SKIP;
	fd = openat(dirfd(parent), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return UNIT_SKIP;	/* gone meanwhile */
	if (!has_child_cgroup(fd)) {
		kind = has_suffix(name, ".slice") ? UNIT_SKIP : UNIT_CANDIDATE;
	} else if (depth + 1 < WORKLOAD_MAX_DEPTH &&
		   (has_suffix(name, ".slice") ||
		    (!strncmp(name, "user@", 5) && has_suffix(name, ".service")))) {
		read_small(fd, "memory.oom.group", value, sizeof(value));
		kind = strcmp(value, "1") ? UNIT_DESCEND : UNIT_CANDIDATE;
		if (kind == UNIT_DESCEND) {
			read_small(fd, "cgroup.type", value, sizeof(value));
			if (!strcmp(value, "domain threaded"))
				kind = UNIT_CANDIDATE;
		}
	}
	close(fd);
	return kind;
}

static int scan_units(struct pods *pods, const char *dir, unsigned depth);

/* One candidate: the cgroup dir d/name at path. 0, or -ENOMEM. */
static int add_workload(struct pods *pods, DIR *d, const struct dirent *entry, const char *path)
{
	struct pod *pod = pods_add_pod(pods);

	if (!pod)
		return -ENOMEM;
	if (snprintf(pod->cgroup_path, sizeof(pod->cgroup_path), "%s", path) >=
		    (int)sizeof(pod->cgroup_path) ||
	    pods_open_cgroup(d, entry->d_name, entry->d_ino, pod, pods, true)) {
		pods_drop_last(pods);
		return 0;
	}
	/* The cgroup id is the workload's UID: it is what the BPF side keys its counters by,
	 * and it changes when the cgroup is recreated. The name is the unit's. */
	snprintf(pod->uid, sizeof(pod->uid), "%llu", (unsigned long long)pod->cgroup_id);
	snprintf(pod->name, sizeof(pod->name), "%s", entry->d_name);
	return 0;
}

/* The candidates below dir, depth levels below its workload root. 0 or -ENOMEM; a
 * directory that vanished or cannot be read is skipped. */
static int scan_units(struct pods *pods, const char *dir, unsigned depth)
{
	struct dirent *entry;
	DIR *d = opendir(dir);
	int err = 0;

	if (!d) {
		if (depth == 0 && pods_first_time(pods, "workload-root", dir))
			log_err("workload root %s: %m", dir);
		return 0;
	}
	/* A unit started later in a slice below the root must trigger a rediscovery too. */
	if (depth > 0)
		pods_watch_add(pods, dir);
	while (!err && (entry = readdir(d))) {
		char path[PATH_MAX];

		if (entry->d_name[0] == '.' || !pods_is_directory(d, entry))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, entry->d_name) >= (int)sizeof(path))
			continue;
		switch (unit_kind(d, entry->d_name, depth)) {
		case UNIT_SKIP:
			break;
		case UNIT_DESCEND:
			err = scan_units(pods, path, depth + 1);
			break;
		case UNIT_CANDIDATE:
			err = add_workload(pods, d, entry, path);
			break;
		}
	}
	closedir(d);
	return err;
}

int pods_discover_workloads(struct pods *pods)
{
	for (size_t r = 0; r < pods->n_workload_roots; r++) {
		const char *root = pods->workload_roots[r];
		struct stat st;
		int err;

		/* systemd-oomd trusts a non-root cgroup's user.oomd_* only when the monitored
		 * cgroup above it has the same owner (prefs.h): here the workload root, for every
		 * unit below it, since evictd ranks them all against each other. uid -1 matches
		 * no cgroup. */
		pods->scan_root_owner = stat(root, &st) == 0 ? st.st_uid : (uid_t)-1;
		err = scan_units(pods, root, 0);
		if (err)
			return err;
	}
	return 0;
}
