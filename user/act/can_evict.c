// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Can evictd kill at all here? doc/DESIGN.md, "Acting" / "Cannot act". */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "act/can_evict.h"
#include "pods/pods.h"
#include "sys/cgroupfs.h"
#include "sys/fileio.h"
#include "sys/log.h"

/* Where the kubelet and systemd keep a cgroup v1 memory hierarchy: named in the reason. */
#define V1_MEMORY_DIR "/sys/fs/cgroup/memory"

/* ---- reading ------------------------------------------------------------------------------ */

/* "Uid:\t0\t0\t0\t0": the second number is the effective one (proc(5)). */
static int parse_status(const char *text, struct can_evict_probe *probe)
{
	bool uid = false, gid = false, cap = false;

	for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		unsigned long real, eff;
		unsigned long long caps;

		if (sscanf(line, "Uid: %lu %lu", &real, &eff) == 2) {
			probe->euid = (uid_t)eff;
			uid = true;
		} else if (sscanf(line, "Gid: %lu %lu", &real, &eff) == 2) {
			probe->egid = (gid_t)eff;
			gid = true;
		} else if (sscanf(line, "CapEff: %llx", &caps) == 1) {
			probe->cap_eff = caps;
			cap = true;
		} else if (!strncmp(line, "Groups:", 7)) {
			const char *p = line + 7;
			char *end;

			probe->n_groups = 0;
			while (probe->n_groups < CAN_EVICT_MAX_GROUPS) {
				unsigned long g = strtoul(p, &end, 10);

				if (end == p || (*end && *end != ' ' && *end != '\t' && *end != '\n'))
					break;
				probe->groups[probe->n_groups++] = (gid_t)g;
				p = end;
				if (*p == '\n')
					break;
			}
		}
	}
	return uid && gid && cap ? 0 : -EINVAL;
}

/* <root>/proc/self/status when a fixture tree has one, else this process's own. */
static void read_creds(struct can_evict_probe *probe, const char *root)
{
	char path[PATH_MAX], text[8192];
	ssize_t n = -ENOENT;

	if (!fileio_root_is_host(root) && !fileio_join_root(path, sizeof(path), root, "/proc/self/status"))
		n = fileio_read_at(AT_FDCWD, path, text, sizeof(text));
	if (n == -ENOENT)
		n = fileio_read_at(AT_FDCWD, "/proc/self/status", text, sizeof(text));
	probe->creds_err = n < 0 ? (int)n : parse_status(text, probe);
}

static int read_memory_controller(const char *dir, bool *memory)
{
	char path[PATH_MAX], text[1024];
	ssize_t n;

	*memory = false;
	if (snprintf(path, sizeof(path), "%s/cgroup.controllers", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	n = fileio_read_at(AT_FDCWD, path, text, sizeof(text));
	if (n < 0)
		return (int)n;
	for (char *save = NULL, *word = strtok_r(text, " \t\n", &save); word; word = strtok_r(NULL, " \t\n", &save))
		if (!strcmp(word, "memory"))
			*memory = true;
	return 0;
}

static void probe_root(struct can_evict_root_probe *root, const char *dir)
{
	char kill_path[PATH_MAX + 16];
	struct statvfs vfs;
	struct stat st;

	snprintf(root->path, sizeof(root->path), "%s", dir);
	root->dir_err = stat(dir, &st) ? -errno : S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	if (root->dir_err)
		return;
	root->statvfs_err = statvfs(dir, &vfs) ? -errno : 0;
	root->read_only = !root->statvfs_err && (vfs.f_flag & ST_RDONLY);
	snprintf(kill_path, sizeof(kill_path), "%s/cgroup.kill", dir);
	if (stat(kill_path, &st)) {
		root->kill_err = -errno;
	} else {
		root->kill_uid = st.st_uid;
		root->kill_gid = st.st_gid;
		root->kill_mode = st.st_mode & 07777;
		/* Effective ids, as the kernel checks the write (AT_EACCESS). */
		root->access_err = faccessat(AT_FDCWD, kill_path, W_OK, AT_EACCESS) ? -errno : 0;
	}
	root->controllers_err = read_memory_controller(dir, &root->memory_controller);
}

int can_evict_probe_read(struct can_evict_probe *probe, const struct can_evict_input *input)
{
	const char *root;
	char path[PATH_MAX];

	if (!probe || !input || input->n_kill_roots > CAN_EVICT_MAX_ROOTS ||
	    (input->n_kill_roots && !input->kill_roots))
		return -EINVAL;
	memset(probe, 0, sizeof(*probe));
	root = fileio_root_is_host(input->root) ? "" : input->root;
	probe->need_memory = input->need_memory;
	read_creds(probe, root);
	if (!fileio_join_root(path, sizeof(path), root, V1_MEMORY_DIR "/memory.limit_in_bytes") &&
	    access(path, F_OK) == 0)
		snprintf(probe->v1_memory, sizeof(probe->v1_memory), "%s", V1_MEMORY_DIR);

	/* The mount evictd uses: the one pods found, or found the same way (pods.h). */
	if (input->cgroup_mount && input->cgroup_mount[0])
		probe->mount_err = snprintf(probe->mount, sizeof(probe->mount), "%s", input->cgroup_mount) >=
						   (int)sizeof(probe->mount) ? -ENAMETOOLONG : 0;
	else
		probe->mount_err = pods_detect_cgroup_mount(root, probe->mount, sizeof(probe->mount));
	/* On this machine the filesystem type decides; fixture trees are plain directories. */
	if (!probe->mount_err && !root[0])
		probe->mount_err = cgroupfs_check_v2_path(probe->mount);
	if (probe->mount_err)
		return 0;
	for (size_t i = 0; i < input->n_kill_roots; i++)
		probe_root(&probe->roots[probe->n_roots++], input->kill_roots[i]);
	/* No kill root exists yet: the mount itself says whether anything could be written. */
	if (!input->n_kill_roots && probe->n_roots < CAN_EVICT_MAX_ROOTS)
		probe_root(&probe->roots[probe->n_roots++], probe->mount);
	return 0;
}

/* ---- deciding ----------------------------------------------------------------------------- */

__attribute__((format(printf, 4, 5)))
static void add_reason(struct can_evict_state *state, const char *key, bool fatal, const char *fmt, ...)
{
	struct can_evict_reason *reason;
	va_list ap;

	if (fatal)
		state->can_evict = false;
	for (size_t i = 0; i < state->n_reasons; i++)
		if (!strcmp(state->reasons[i].key, key))
			return;	/* one per key: the first root that shows it */
	if (state->n_reasons >= CAN_EVICT_MAX_REASONS)
		return;
	reason = &state->reasons[state->n_reasons++];
	snprintf(reason->key, sizeof(reason->key), "%s", key);
	reason->fatal = fatal;
	va_start(ap, fmt);
	vsnprintf(reason->text, sizeof(reason->text), fmt, ap);
	va_end(ap);
}

static bool has_cap(const struct can_evict_probe *probe, int cap)
{
	return probe->cap_eff & (1ull << cap);
}

/* The kernel's generic_permission() for MAY_WRITE on a file without ACLs (kernfs has none):
 * CAP_DAC_OVERRIDE, else the owner, group or other write bit that applies. */
static bool mode_allows_write(const struct can_evict_probe *probe, const struct can_evict_root_probe *root)
{
	bool in_group = probe->egid == root->kill_gid;

	if (has_cap(probe, CAN_EVICT_CAP_DAC_OVERRIDE))
		return true;
	if (probe->euid == root->kill_uid)
		return root->kill_mode & S_IWUSR;
	for (size_t i = 0; i < probe->n_groups && !in_group; i++)
		in_group = probe->groups[i] == root->kill_gid;
	if (in_group)
		return root->kill_mode & S_IWGRP;
	return root->kill_mode & S_IWOTH;
}

static void evaluate_root(const struct can_evict_probe *probe, const struct can_evict_root_probe *root,
			  bool is_mount, struct can_evict_state *state)
{
	if (root->read_only)
		add_reason(state, "cgroup_read_only", true,
			   "%s is on a read-only mount (ST_RDONLY): cgroup.kill cannot be written", root->path);
	if (probe->need_memory && !root->controllers_err && !root->memory_controller)
		add_reason(state, "no_memory_controller", false,
			   "%s/cgroup.controllers has no memory controller: memory signals rank pods without "
			   "their usage (priority only)", root->path);
	if (is_mount)
		return;	/* the root cgroup has no cgroup.kill */
	if (root->kill_err == -ENOENT) {
		add_reason(state, "no_cgroup_kill", false,
			   "%s/cgroup.kill is missing (Linux < 5.14): kills send SIGKILL to each process", root->path);
	} else if (root->kill_err) {
		add_reason(state, "cgroup_kill_unreadable", true, "%s/cgroup.kill: %s", root->path,
			   strerror(-root->kill_err));
	} else if (!probe->creds_err && !mode_allows_write(probe, root)) {
		add_reason(state, "cgroup_kill_not_writable", true,
			   "%s/cgroup.kill: not writable by uid %u (owner %u:%u, mode %04o, no CAP_DAC_OVERRIDE)",
			   root->path, (unsigned int)probe->euid, (unsigned int)root->kill_uid,
			   (unsigned int)root->kill_gid, (unsigned int)root->kill_mode);
	} else if (root->access_err && !root->read_only) {
		add_reason(state, "cgroup_kill_not_writable", true, "%s/cgroup.kill: %s", root->path,
			   strerror(-root->access_err));
	}
}

void can_evict_evaluate(const struct can_evict_probe *probe, struct can_evict_state *state)
{
	bool any_root = false;

	memset(state, 0, sizeof(*state));
	state->can_evict = true;
	if (probe->mount_err) {
		if (probe->mount_err == -ENOTDIR)
			add_reason(state, "no_cgroup2", true,
				   "%s is not a cgroup2 filesystem: evictd kills through cgroup v2's cgroup.kill",
				   probe->mount);
		else
			add_reason(state, "no_cgroup2", true,
				   "no cgroup v2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified (%s)%s%s%s: "
				   "evictd kills through cgroup v2's cgroup.kill", strerror(-probe->mount_err),
				   probe->v1_memory[0] ? "; a cgroup v1 host (memory controller at " : "",
				   probe->v1_memory, probe->v1_memory[0] ? ")" : "");
	} else {
		for (size_t i = 0; i < probe->n_roots; i++) {
			const struct can_evict_root_probe *root = &probe->roots[i];
			bool is_mount = !strcmp(root->path, probe->mount);

			if (root->dir_err)
				continue;
			any_root |= !is_mount;
			evaluate_root(probe, root, is_mount, state);
		}
		if (!any_root)
			add_reason(state, "no_kill_root", false,
				   "no cgroup to evict below exists yet under %s (kubepods or --workload-root): "
				   "nothing to evict", probe->mount);
	}
	if (probe->creds_err)
		add_reason(state, "credentials_unknown", false, "/proc/self/status: %s: capabilities not checked",
			   strerror(-probe->creds_err));
	else if (!has_cap(probe, CAN_EVICT_CAP_KILL))
		add_reason(state, "no_cap_kill", false,
			   "no CAP_KILL: a soft eviction's SIGTERM (and SIGKILL without cgroup.kill) reaches only "
			   "uid %u's processes", (unsigned int)probe->euid);
	if (probe->kill_error)
		add_reason(state, "kill_refused", true, "the last kill was refused: %s: %s",
			   probe->kill_error_path[0] ? probe->kill_error_path : "cgroup.kill",
			   strerror(-probe->kill_error));
}

/* ---- tracking ----------------------------------------------------------------------------- */

bool can_evict_is_permission_error(int err)
{
	if (err < 0)
		err = -err;
	return err == EACCES || err == EPERM || err == EROFS;
}

void can_evict_note_kill_error(struct can_evict_tracker *tracker, int err, const char *path)
{
	if (!tracker)
		return;
	if (!err) {
		if (tracker->kill_error)
			tracker->recheck = true;	/* a kill worked: the refusal is over */
		tracker->kill_error = 0;
		return;
	}
	if (!can_evict_is_permission_error(err))
		return;
	tracker->kill_error = err < 0 ? err : -err;
	snprintf(tracker->kill_error_path, sizeof(tracker->kill_error_path), "%s", path ? path : "");
	tracker->recheck = true;
}

static bool same_state(const struct can_evict_state *a, const struct can_evict_state *b)
{
	if (a->can_evict != b->can_evict || a->n_reasons != b->n_reasons)
		return false;
	for (size_t i = 0; i < a->n_reasons; i++)
		if (strcmp(a->reasons[i].key, b->reasons[i].key) || strcmp(a->reasons[i].text, b->reasons[i].text))
			return false;
	return true;
}

void can_evict_summary(const struct can_evict_state *state, char *buf, size_t len)
{
	size_t used = 0;

	if (!len)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < state->n_reasons; i++) {
		int n;

		if (!state->reasons[i].fatal)
			continue;
		n = snprintf(buf + used, len - used, "%s%s", used ? "; " : "", state->reasons[i].text);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
}

bool can_evict_update(struct can_evict_tracker *tracker, const struct can_evict_input *input)
{
	struct can_evict_probe *probe;
	struct can_evict_state state;
	bool first = !tracker->known;

	probe = calloc(1, sizeof(*probe));	/* PATH_MAX per root: not on the stack */
	if (!probe)
		return false;
	tracker->recheck = false;
	if (can_evict_probe_read(probe, input)) {
		free(probe);
		return false;
	}
	probe->kill_error = tracker->kill_error;
	snprintf(probe->kill_error_path, sizeof(probe->kill_error_path), "%s", tracker->kill_error_path);
	can_evict_evaluate(probe, &state);
	free(probe);
	if (!first && same_state(&state, &tracker->state))
		return false;
	/* Logged once at start and on each change, not on every check. */
	if (!state.can_evict)
		log_event(LOGLEVEL_ERR, LOG_KIND_CANNOT_ACT, NULL, 0,
			  "CANNOT EVICT: evictd cannot kill any pod on this node (%zu reason%s below)",
			  state.n_reasons, state.n_reasons == 1 ? "" : "s");
	else if (!first && !tracker->state.can_evict)
		log_info("can evict again: nothing stops evictd from killing");
	for (size_t i = 0; i < state.n_reasons; i++) {
		const struct log_field why[] = { { "REASON_KEY", state.reasons[i].key } };

		if (state.reasons[i].fatal)
			log_event(LOGLEVEL_ERR, LOG_KIND_CANNOT_ACT, why, 1, "cannot evict: %s: %s",
				  state.reasons[i].key, state.reasons[i].text);
		else
			log_warn("eviction degraded: %s: %s", state.reasons[i].key, state.reasons[i].text);
	}
	tracker->state = state;
	tracker->known = true;
	return true;
}
