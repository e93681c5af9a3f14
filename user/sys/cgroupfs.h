/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The cgroup tree, walked one way everywhere: a cgroup directory and every descendant, with no
 * depth limit (a limit silently skips the tasks of deep cgroups, which a kill must reach), an
 * explicit stack instead of recursion, openat(O_NOFOLLOW | O_DIRECTORY) at every step.
 * Cgroups that vanish during a walk are skipped.
 */
#ifndef EVICTD_SYS_CGROUPFS_H
#define EVICTD_SYS_CGROUPFS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Called for each cgroup, parents before children; dir_fd is valid during the call only and
 * must not be closed. depth: 0 for the root given. A negative return stops the walk. */
typedef int (*cgroupfs_dir_fn)(void *ctx, int dir_fd, unsigned int depth);
/* Called for each pid; the return value is ignored (one failure must not spare the rest). */
typedef int (*cgroupfs_pid_fn)(pid_t pid, void *ctx);

/*
 * Walk dir_fd (not closed) and all its descendants. Returns the number of cgroups visited, the
 * callback's negative return when it stopped the walk, or negative errno when dir_fd itself
 * cannot be read. A descendant that cannot be opened for another reason than having vanished
 * (EMFILE, EACCES) is logged and its subtree skipped; the walk goes on and returns -errno of
 * the first such failure at the end, so a caller never takes a partial walk for a whole one.
 */
int64_t cgroupfs_walk(int dir_fd, cgroupfs_dir_fn fn, void *ctx);

/* "populated 0/1" from cgroup.events (pread at offset 0 on the open fd; keeping it open lets
 * the caller poll for POLLPRI). 1 populated, 0 empty, negative errno (-EINVAL: no such line). */
int cgroupfs_read_populated(int events_fd);
/* 0 when fd (or path) is on a cgroup v2 filesystem, -ENOTDIR when not, or the statfs error. */
int cgroupfs_check_v2(int fd);
int cgroupfs_check_v2_path(const char *path);
/* Absolute, no empty, "." or ".." component, no trailing slash (except "/"): a cgroup path
 * that is compared as text (allowed roots, evictd's own cgroup) must be this. */
bool cgroupfs_path_is_canonical(const char *path);

/* The cgroup's id, which on cgroup v2 is the directory's inode number (what
 * bpf_get_current_cgroup_id() returns). 0 or negative errno. */
int cgroupfs_cgroup_id(int dir_fd, uint64_t *id);

/* Call fn (may be NULL: count only) for every pid in cgroup.procs of dir_fd and of every
 * cgroup below it. Returns the number of pids seen, or negative errno when dir_fd's own
 * cgroup.procs cannot be read or the walk failed (see cgroupfs_walk). */
int64_t cgroupfs_for_each_pid(int dir_fd, cgroupfs_pid_fn fn, void *ctx);

/* A whole non-negative decimal ("123\n"), optionally followed by whitespace: 0, -EINVAL or
 * -ERANGE. */
int cgroupfs_parse_u64_text(const char *text, int64_t *value);
/* That decimal read from the file name in dir_fd (memory.current, pids.current): 0 or -errno. */
int cgroupfs_read_i64_at(int dir_fd, const char *name, int64_t *value);
/* The value of key in a flat keyed file held in buf ("key value\n", memory.stat): 0, -ENOENT
 * when absent, -EINVAL. */
int cgroupfs_keyed_value(const char *buf, const char *key, int64_t *value);
/* The nearest cgroup from path up to (not including) mount that has a memory.max and has hit it
 * (memory.events "oom" > 0): 1 with its path in hit and the limit in *limit, 0 when none has,
 * or -errno. */
int cgroupfs_memory_limit_hit(const char *mount, const char *path, char *hit, size_t len,
			      int64_t *limit);

#endif
