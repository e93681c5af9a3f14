// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Where the kubelet's effective configuration lives besides one file (DESIGN.md §9): its
 * --config-dir drop-ins, and (opt-in) the command line of the running kubelet.
 *
 * cmd/kubelet/app/server.go: the --config file is loaded, then every *.conf file below
 * --config-dir is merged in (mergeKubeletConfigurations: filepath.WalkDir, so lexical order,
 * subdirectories where they sort), then the command-line flags are parsed again over the
 * result (kubeletConfigFlagPrecedence), so flags win.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/options.h"
#include "sys/fileio.h"
#include "sys/log.h"

#define DROPIN_MAX_DEPTH 8
#define DROPIN_MAX_FILES 256

static int name_cmp(const struct dirent **a, const struct dirent **b)
{
	/* Go compares names as bytes (fs.ReadDir sorts by filename). */
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int walk_dropins(struct evictd_config *config, const char *dir, int depth, int *n_files)
{
	struct dirent **entries = NULL;
	int n, err = 0;

	if (depth > DROPIN_MAX_DEPTH) {
		log_err("--config-dir %s: nested more than %d levels deep", value_echo(dir).text,
			DROPIN_MAX_DEPTH);
		return -ELOOP;
	}
	n = scandir(dir, &entries, NULL, name_cmp);
	if (n < 0) {
		err = -errno;
		log_err("--config-dir %s: %m", value_echo(dir).text);
		return err;
	}
	for (int i = 0; i < n; i++) {
		const char *name = entries[i]->d_name;
		size_t len = strlen(name);
		char path[PATH_MAX];
		struct stat st;

		if (!strcmp(name, ".") || !strcmp(name, "..") ||
		    snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path) ||
		    lstat(path, &st))
			continue;
		/* WalkDir does not follow a symlinked directory; a symlink to a file is read. */
		if (S_ISDIR(st.st_mode)) {
			if (walk_dropins(config, path, depth + 1, n_files))
				err = -EINVAL;
			continue;
		}
		/* filepath.Ext(name) == ".conf": the text from the last '.' on. */
		if (len < 5 || strcmp(name + len - 5, ".conf") || strchr(name + len - 5 + 1, '.'))
			continue;
		if (++*n_files > DROPIN_MAX_FILES) {
			log_err("--config-dir %s: more than %d drop-in files", value_echo(dir).text,
				DROPIN_MAX_FILES);
			err = -E2BIG;
			break;
		}
		log_debug("kubelet drop-in %s", path);
		if (config_load_dropin_file(config, path))
			err = -EINVAL;
	}
	for (int i = 0; i < n; i++)
		free(entries[i]);
	free(entries);
	return err;
}

int config_load_dropin_dir(struct evictd_config *config, const char *dir)
{
	int n_files = 0;

	return walk_dropins(config, dir, 0, &n_files);
}

/* ---- the running kubelet ------------------------------------------------------------------ */

#define CMDLINE_MAX (256u << 10)
#define AUTO_MAX_LISTED 8	/* pids named in the "more than one kubelet" error */

/*
 * Why the process behind pid_dir (an open /proc/PID) is not a kubelet evictd may take its
 * configuration from, or NULL when it is. Its comm is whatever it calls itself (any user can
 * prctl(PR_SET_NAME, "kubelet")), so auto wants more: real and effective uid 0 (status
 * "Uid:" line, proc(5)), an executable named kubelet, owned by root and writable by no one
 * else. The stat goes through /proc/PID/exe itself, which reaches the inode the process runs
 * even when the path was since replaced or deleted.
 */
static const char *kubelet_distrust(int pid_dir, char *why, size_t len)
{
	char status[4096], exe[PATH_MAX], *line, *name;
	unsigned int ruid, euid;
	struct stat st;
	ssize_t n;

	n = fileio_read_at(pid_dir, "status", status, sizeof(status));
	if (n < 0) {
		snprintf(why, len, "its status cannot be read (%s)", strerror((int)-n));
		return why;
	}
	line = strstr(status, "\nUid:");
	if (!line || sscanf(line + 5, "%u %u", &ruid, &euid) != 2) {
		snprintf(why, len, "its status has no Uid: line");
		return why;
	}
	if (ruid || euid) {
		snprintf(why, len, "it runs as uid %u (effective %u), not root", ruid, euid);
		return why;
	}
	n = readlinkat(pid_dir, "exe", exe, sizeof(exe) - 1);
	if (n < 0) {
		snprintf(why, len, "its exe link cannot be read (%m)");
		return why;
	}
	exe[n] = '\0';
	/* proc(5): an unlinked executable reads as "PATH (deleted)". */
	if ((size_t)n > 10 && !strcmp(exe + n - 10, " (deleted)"))
		exe[n - 10] = '\0';
	name = strrchr(exe, '/');
	name = name ? name + 1 : exe;
	if (strcmp(name, "kubelet")) {
		snprintf(why, len, "its executable %s is not named kubelet", value_echo(exe).text);
		return why;
	}
	if (fstatat(pid_dir, "exe", &st, 0)) {
		snprintf(why, len, "its executable cannot be examined (%m)");
		return why;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		snprintf(why, len, "its executable %s is %s (mode %04o, owner uid %u): expected a "
			 "root-owned file no one else may write", value_echo(exe).text,
			 !S_ISREG(st.st_mode) ? "not a regular file" :
			 st.st_uid ? "not owned by root" : "writable by group or others",
			 (unsigned int)(st.st_mode & 07777), (unsigned int)st.st_uid);
		return why;
	}
	return NULL;
}

/* The one trusted kubelet below root's /proc: its pid in pid and its /proc/PID open in
 * *pid_dir (the cmdline is read from the same process even if the pid is reused). */
static int find_kubelet_pid(const char *root, char *pid, size_t len, int *pid_dir)
{
	char proc[PATH_MAX], listed[AUTO_MAX_LISTED * 12] = "";
	struct dirent *entry;
	DIR *dir;
	int found = 0, proc_fd;

	*pid_dir = -1;
	if (fileio_join_root(proc, sizeof(proc), root, "/proc"))
		return -ENAMETOOLONG;
	dir = opendir(proc);
	if (!dir) {
		int err = -errno;

		log_err("--kubelet-flags-from=auto: %s: %m", proc);
		return err;
	}
	proc_fd = dirfd(dir);
	while ((entry = readdir(dir))) {
		char comm[64], why[PATH_MAX + 160];
		int fd;

		if (!isdigit((unsigned char)entry->d_name[0]) || strlen(entry->d_name) >= len)
			continue;
		fd = openat(proc_fd, entry->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;	/* gone since readdir */
		if (fileio_read_at(fd, "comm", comm, sizeof(comm)) <= 0 || strcmp(comm, "kubelet\n")) {
			close(fd);
			continue;
		}
		if (kubelet_distrust(fd, why, sizeof(why))) {
			log_warn("--kubelet-flags-from=auto: ignoring pid %s, named kubelet: %s",
				 entry->d_name, why);
			close(fd);
			continue;
		}
		if (found < AUTO_MAX_LISTED)
			snprintf(listed + strlen(listed), sizeof(listed) - strlen(listed), "%s%s",
				 found ? ", " : "", entry->d_name);
		if (found++) {
			close(fd);
			continue;
		}
		memcpy(pid, entry->d_name, strlen(entry->d_name) + 1);
		*pid_dir = fd;
	}
	closedir(dir);
	if (found > 1) {
		log_err("--kubelet-flags-from=auto: %d root kubelet processes (pids %s%s): give the "
			"pid of the one to read", found, listed, found > AUTO_MAX_LISTED ? ", ..." : "");
		close(*pid_dir);
		*pid_dir = -1;
		return -EEXIST;
	}
	if (!found) {
		log_err("--kubelet-flags-from=auto: no kubelet process run by root in %s", proc);
		return -ESRCH;
	}
	return 0;
}

/* The kubelet's flags evictd understands: the eviction, allocatable and cgroup ones, and
 * its --root-dir; the rest of its command line is not evictd's business. */
static bool kubelet_flag(const struct option_spec *spec)
{
	return spec && (spec->kubelet_key || !strcmp(spec->flag, "root-dir")) &&
	       strcmp(spec->flag, "housekeeping-interval");
}

static int apply_kubelet_args(struct evictd_config *config, char **args, size_t n, const char *pid)
{
	char key[128];
	int err = 0;

	for (size_t i = 1; i < n; i++) {
		char *arg = args[i], *value, name[96];
		const struct option_spec *spec;

		if (strncmp(arg, "--", 2))
			continue;
		arg += 2;
		value = strchr(arg, '=');
		snprintf(name, sizeof(name), "%.*s", value ? (int)(value - arg) : (int)strlen(arg), arg);
		/* WordSepNormalizeFunc: "_" is "-". */
		for (char *p = name; *p; p++)
			if (*p == '_')
				*p = '-';
		if (!strcmp(name, "config") || !strcmp(name, "config-dir"))
			continue;	/* read first, by the caller */
		/* cmd/kubelet/app/options/options.go AddKubeletConfigFlags: staticPodPath is
		 * the kubelet's --pod-manifest-path. */
		spec = option_by_flag(strcmp(name, "pod-manifest-path") ? name : "static-pod-path");
		if (!kubelet_flag(spec))
			continue;
		if (!value && spec->kind != OPT_BOOL) {
			if (i + 1 >= n)
				continue;
			value = args[++i];
		} else if (value) {
			value++;
		}
		snprintf(key, sizeof(key), "kubelet (pid %s): --%s", pid, name);
		if (option_apply(config, spec, key, value))
			err = -EINVAL;
	}
	return err;
}

/* The value of --name VALUE or --name=VALUE in args, or NULL. */
static const char *arg_value(char **args, size_t n, const char *name)
{
	size_t len = strlen(name);
	const char *found = NULL;

	for (size_t i = 1; i < n; i++) {
		if (strncmp(args[i], "--", 2) || strncmp(args[i] + 2, name, len))
			continue;
		if (args[i][2 + len] == '=')
			found = args[i] + 3 + len;
		else if (!args[i][2 + len] && i + 1 < n)
			found = args[i + 1];
	}
	return found;
}

int config_load_kubelet_process(struct evictd_config *config, const char *which)
{
	char pid[32], path[PATH_MAX + 64], *buf, *args[1024];
	const char *file, *dir;
	size_t n_args = 0;
	ssize_t len;
	int err = 0, pid_dir = -1;

	if (fileio_join_root(path, sizeof(path) - 40, config->root, "/proc"))
		return -ENAMETOOLONG;
	if (!strcmp(which, "auto")) {
		err = find_kubelet_pid(config->root, pid, sizeof(pid), &pid_dir);
		if (err)
			return err;
	} else if (strspn(which, "0123456789") == strlen(which) && which[0] &&
		   strlen(which) < sizeof(pid)) {
		/* A pid given by the operator is read as given: the checks are auto's. */
		snprintf(pid, sizeof(pid), "%s", which);
	} else {
		log_err("--kubelet-flags-from: \"%s\": expected a pid or auto", value_echo(which).text);
		return -EINVAL;
	}
	strcat(path, "/");
	strcat(path, pid);
	strcat(path, "/cmdline");
	buf = malloc(CMDLINE_MAX + 1);
	if (!buf) {
		if (pid_dir >= 0)
			close(pid_dir);
		return -ENOMEM;
	}
	len = fileio_read_at(pid_dir >= 0 ? pid_dir : AT_FDCWD, pid_dir >= 0 ? "cmdline" : path,
			     buf, CMDLINE_MAX + 1);
	if (pid_dir >= 0)
		close(pid_dir);
	if (len < 0) {
		errno = (int)-len;
		log_err("--kubelet-flags-from: %s: %m", path);
		free(buf);
		return (int)len;
	}
	/* NUL-separated arguments, each ending in a NUL: one cut by the size limit is dropped
	 * whole, never read as a shorter value. */
	if (len > 0 && buf[len - 1] != '\0') {
		log_warn("--kubelet-flags-from: %s is longer than %u KiB: the rest is ignored", path,
			 CMDLINE_MAX >> 10);
		while (len > 0 && buf[len - 1] != '\0')
			len--;
	}
	for (ssize_t i = 0; i < len && n_args < sizeof(args) / sizeof(args[0]);) {
		args[n_args++] = buf + i;
		i += (ssize_t)strlen(buf + i) + 1;
	}
	log_info("reading the kubelet's configuration from pid %s (%zu arguments)", pid, n_args);
	file = arg_value(args, n_args, "config");
	dir = arg_value(args, n_args, "config-dir");
	if (file) {
		char joined[PATH_MAX];

		if (fileio_join_root(joined, sizeof(joined), config->root, file) ||
		    config_load_file(config, joined))
			err = -EINVAL;
	}
	if (dir) {
		char joined[PATH_MAX];

		if (fileio_join_root(joined, sizeof(joined), config->root, dir) ||
		    config_load_dropin_dir(config, joined))
			err = -EINVAL;
	}
	if (apply_kubelet_args(config, args, n_args, pid))
		err = -EINVAL;
	free(buf);
	return err;
}
