/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * "Can evict": whether this process, on this node, is able to kill a pod at all
 * (doc/DESIGN.md, "Acting" / "Cannot act"). A node with cgroup v1 only, a read-only or
 * unwritable cgroup.kill, or a process without the capabilities to write it, used to give one
 * log line and a daemon that looked healthy; this state is what /readyz, the metrics,
 * `evictctl status` and `--once`'s exit status show instead.
 *
 * Two halves: can_evict_probe_read() reads (paths under a root prefix, so tests use fixture
 * trees), can_evict_evaluate() decides from what was read and does no I/O.
 */
#ifndef EVICTD_ACT_CAN_EVICT_H
#define EVICTD_ACT_CAN_EVICT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CAN_EVICT_MAX_REASONS 8
#define CAN_EVICT_MAX_ROOTS 8
#define CAN_EVICT_MAX_GROUPS 64

/* Capability bits (linux/capability.h). */
#define CAN_EVICT_CAP_DAC_OVERRIDE 1
#define CAN_EVICT_CAP_KILL 5

struct can_evict_reason {
	char key[32];		/* machine key, a metric label: "no_cgroup2", ... */
	char text[600];		/* for people: what, the path, the error */
	bool fatal;		/* false: evictd still kills, worse (degraded) */
};

struct can_evict_state {
	bool can_evict;
	size_t n_reasons;	/* fatal and degraded ones */
	struct can_evict_reason reasons[CAN_EVICT_MAX_REASONS];
};

/* What one kill root looked like. */
struct can_evict_root_probe {
	char path[PATH_MAX];	/* root-joined */
	int dir_err;		/* stat of the directory: 0 or -errno */
	int kill_err;		/* stat of its cgroup.kill: 0, -ENOENT (< Linux 5.14) ... */
	uid_t kill_uid;
	gid_t kill_gid;
	mode_t kill_mode;
	int access_err;		/* faccessat(cgroup.kill, W_OK, AT_EACCESS): 0 or -errno */
	int statvfs_err;
	bool read_only;		/* the mount's ST_RDONLY: root passes access() checks on it */
	int controllers_err;	/* reading cgroup.controllers */
	bool memory_controller;
};

/* Everything can_evict_evaluate() decides on; filled by can_evict_probe_read() or a test. */
struct can_evict_probe {
	int mount_err;		/* 0: a cgroup v2 mount; -ENOENT none; -ENOTDIR not cgroup2 */
	char mount[PATH_MAX];	/* root-joined, when mount_err == 0 */
	char v1_memory[PATH_MAX];	/* a cgroup v1 memory hierarchy seen ("" none) */
	/* The process's credentials (/proc/self/status Uid, Gid, Groups, CapEff). */
	int creds_err;
	uid_t euid;
	gid_t egid;
	gid_t groups[CAN_EVICT_MAX_GROUPS];
	size_t n_groups;
	uint64_t cap_eff;
	size_t n_roots;
	struct can_evict_root_probe roots[CAN_EVICT_MAX_ROOTS];
	bool need_memory;	/* a memory threshold ranks by the memory controller's files */
	int kill_error;		/* the last kill's EACCES/EPERM/EROFS (negative), 0: none */
	char kill_error_path[PATH_MAX];
};

struct can_evict_input {
	const char *root;		/* prefix of every path; NULL, "" or "/": this machine */
	const char *cgroup_mount;	/* root-joined mount in use; NULL: detect as pods does */
	const char *const *kill_roots;	/* root-joined (pods_kill_roots) */
	size_t n_kill_roots;
	bool need_memory;
};

/* Read what the evaluation needs. 0 or -EINVAL (bad input); read failures are recorded in
 * the probe, not returned. */
int can_evict_probe_read(struct can_evict_probe *probe, const struct can_evict_input *input);
/* Pure: the state for probe. */
void can_evict_evaluate(const struct can_evict_probe *probe, struct can_evict_state *state);

/* "Sticky" facts between checks, kept by the daemon: the last kill refused for lack of
 * permission (a kill can be refused by what no check sees: an LSM, a changed mount). */
struct can_evict_tracker {
	struct can_evict_state state;
	bool known;		/* state computed at least once */
	bool recheck;		/* a kill failed for lack of permission: check again soon */
	int kill_error;
	char kill_error_path[PATH_MAX];
};

/* EACCES, EPERM, EROFS (either sign): a failure that says evictd may not be able to act. */
bool can_evict_is_permission_error(int err);
/* A kill ended with err (0: success, which clears a remembered refusal) on cgroup path
 * (may be NULL). Sets recheck when err is a permission error. */
void can_evict_note_kill_error(struct can_evict_tracker *tracker, int err, const char *path);
/* Read and evaluate; log one error line per fatal reason (warning per degraded one) on the
 * first check and whenever the state changes, nothing otherwise. Returns true when the state
 * changed (or is new). */
bool can_evict_update(struct can_evict_tracker *tracker, const struct can_evict_input *input);
/* "reason; reason" of the fatal reasons (the texts), for /readyz and logs. */
void can_evict_summary(const struct can_evict_state *state, char *buf, size_t len);

#endif
