/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the pods modules (pods.c, meta.c, usage.c, disk.c, crictl.c) share and nothing else
 * uses: the table itself and small helpers. Not an API. */
#ifndef EVICTD_PODS_INTERNAL_H
#define EVICTD_PODS_INTERNAL_H


#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pods/pods.h"

/*
 * "Logged once" (pods_first_time, pods.c): keys are remembered while they keep coming up, in a
 * hash set bounded by the size of the tables (WARNED_PER_POD keys per pod, at least
 * WARNED_MIN), and each kind of message has a token bucket of WARN_BURST lines refilled at one
 * per WARN_REFILL_NS: 100,000 pods without metadata give WARN_BURST lines and a count, not a
 * line per pod per evaluation.
 */
#define WARNED_MIN 4096
#define WARNED_PER_POD 4
#define WARN_BURST 20
#define WARN_REFILL_NS (1000000000ll)
#define WARN_KINDS 16

struct warned_key {
	uint64_t hash;		/* 0: empty slot */
	uint32_t seen;		/* the refresh generation it was last asked about */
};

struct warn_bucket {
	const char *kind;	/* NULL: free slot; compared by content */
	char kind_copy[32];
	int64_t tokens_ns;	/* tokens in units of WARN_REFILL_NS, up to WARN_BURST of them */
	int64_t last_ns;
	size_t held;		/* lines held back since the last one logged */
};

#define KUBEPODS_DIRS 2		/* kubepods.slice (systemd), kubepods (cgroupfs) */

struct pods {
	char root[PATH_MAX];
	char mount[PATH_MAX];
	char kubepods[KUBEPODS_DIRS][PATH_MAX];
	char workload_roots[PODS_MAX_WORKLOAD_ROOTS][PATH_MAX];
	size_t n_workload_roots;
	bool standalone;
	bool cheap_usage;	/* pods_options.cheap_usage */
	struct workload_prefs prefs;	/* pods_options.workload_prefs (copied) */
	uid_t scan_root_owner;		/* owner of the workload root being scanned (workloads.c) */

	struct pods_meta_source *meta_source;
	struct pod_meta_list meta;
	bool warned_no_source;
	bool warned_meta_pending;

	struct pod *items;
	struct pod **ptrs;
	size_t n_items, cap_items, cap_ptrs;
	/* The table of the refresh before, kept to carry measured disk use over (pods.c). */
	struct pod *prev;
	size_t n_prev, cap_prev;

	/* cgroup_watch.c: inotify on the directories pods live in; while nothing changed there,
	 * a refresh reads usage through the directory fds kept since discovery (dir_fds[i] is
	 * items[i]'s, -1 when none) instead of rediscovering. */
	int inotify_fd;
	bool watching;			/* watches are set and the table matches them */
	int *dir_fds;
	size_t n_fds, cap_fds;
	/* Per pod, its usage files kept open too and re-read with pread (file_fds[i * USAGE_FILES
	 * + k]; USAGE_FD_ABSENT: not there at discovery; -1: not kept). Kept fds of both kinds
	 * stay under fd_budget (half the RLIMIT_NOFILE soft limit): past it, pods are read by
	 * path as before. */
	int *file_fds;
	size_t fds_open, fd_budget;
	/* During a rediscovery: the last table's fds (index i is prev[i]'s), taken over by the
	 * cgroups found again, the rest closed after (pods_fds_retired_close). Counted in
	 * fds_open while open. */
	int *retired_dir_fds, *retired_file_fds;
	size_t n_retired, cap_retired, retired_hint;

	struct warned_key *warned;	/* open addressing, FNV-1a of (kind, key) */
	size_t n_warned, cap_warned;	/* cap: 0 or a power of two */
	uint32_t warn_generation;	/* bumped by every pods_refresh */
	struct warn_bucket warn_buckets[WARN_KINDS];
};

/* root NULL, "" or "/": paths are this machine's. */
/* buf = root + path (root ignored when it is the host). 0 or -ENAMETOOLONG. */
/* pods_read_usage() through the open cgroup dir dir_fd, with no identity check. */
int pods_read_usage_at(struct pod *pod, int dir_fd, bool cheap);
/* usage.c: a pod's usage files, kept open since discovery. */
enum usage_file { USAGE_EVENTS, USAGE_CURRENT, USAGE_STAT, USAGE_PIDS, USAGE_FILES };
#define USAGE_FD_ABSENT (-2)
/* Open the usage files of the cgroup at dir_fd into fds (absent ones USAGE_FD_ABSENT, others
 * that could not be opened -1); returns how many were opened. */
size_t pods_usage_files_open(int dir_fd, int fds[USAGE_FILES]);
/* pods_read_usage_at() through the kept files (pread at 0 regenerates a cgroup file). cheap:
 * leave memory.stat and the thread walk for pods_refine_usage_fds() (pods_options.cheap_usage). */
int pods_read_usage_fds(struct pod *pod, int dir_fd, const int fds[USAGE_FILES], bool cheap);
/* What the kubelet wrote into a pod cgroup about its memory request, for pods without
 * metadata: memory.max (Guaranteed), memory.min (Burstable with MemoryQoS), else 0. */
int64_t pods_request_from_cgroup(const struct pod *pod);
/* Read what a cheap read left out (working_set_unrefined, processes_unrefined). */
int pods_refine_usage_fds(struct pod *pod, int dir_fd, const int fds[USAGE_FILES]);

/* pods.c: a new zeroed row at the end of the table (NULL: no memory). */
struct pod *pods_add_pod(struct pods *pods);
/* pods.c: open the cgroup dir d/name into pod (the last row): its id, usage, kept fds and,
 * for a standalone workload, its xattrs. 0, or -errno (gone, not a dir: drop the row). */
int pods_open_cgroup(DIR *d, const char *name, ino_t ino, struct pod *pod, struct pods *pods,
		     bool workload);
/* pods.c: whether a readdir entry of d is a directory (d_type, else fstatat). */
bool pods_is_directory(DIR *d, const struct dirent *entry);

/* workloads.c: the standalone workloads below every workload root (0 or -ENOMEM), and one
 * workload's xattrs and preferences read through its cgroup dir fd (owned by owner). */
int pods_discover_workloads(struct pods *pods);
void pods_workload_xattrs(struct pods *pods, struct pod *pod, int fd, uid_t owner);

/* cgroup_watch.c. Close the kept directory fds (n_fds = 0). */
void pods_fds_close(struct pods *pods);
/* Room for n pods' kept fds. 0 or -ENOMEM. */
int pods_fds_reserve(struct pods *pods, size_t n);
/* Drop the last pod added (its cgroup could not be used) and its kept fds. */
void pods_drop_last(struct pods *pods);
/* Keep dir_fd (owned from here on) and its usage files for pod index, within the budget. */
void pods_fds_keep(struct pods *pods, size_t index, int dir_fd);
/* Before a rediscovery: set the table's kept fds aside (the table becomes prev). */
void pods_fds_retire(struct pods *pods);
/* The retired dir fd of the cgroup at path with id (prev's entry: same path, same cgroup id),
 * with its usage files moved to index's slots; -1 when there is none. */
int pods_fds_claim(struct pods *pods, size_t index, const char *path, uint64_t id);
/* After it: close the retired fds nobody claimed. */
void pods_fds_retired_close(struct pods *pods);
/* Close the inotify instance and the kept fds. */
void pods_watch_close(struct pods *pods);
/* Must pods_refresh() rediscover (first time, no watching, or a change seen)? When true, the
 * watches are set anew before returning, so a change during the scan is seen next time. */
bool pods_watch_need_discovery(struct pods *pods);
/* Watch one more directory a discovery reads (a slice below a workload root), when watching;
 * a failure turns watching off (every refresh rediscovers). */
void pods_watch_add(struct pods *pods, const char *dir);
/* true the first time (kind, key) is seen and its kind's rate allows a line: the caller logs
 * then. A key held back by the rate is not remembered, so it gets its line later. */
bool pods_first_time(struct pods *pods, const char *kind, const char *key);
/* An xattr of the open cgroup dir fd as a NUL-terminated string with trailing whitespace cut
 * (pods.c): 1 found, 0 absent, -EILSEQ when the value holds a NUL byte, other -errno. */
int pods_read_xattr(int fd, const char *name, char *buf, size_t len);
/* A UID as the kubelet uses it in cgroup names: letters, digits and '-' only. */
bool pods_uid_is_valid(const char *uid);
/* qsort/bsearch order of pod_meta by cgroup_uid. */
int pods_cmp_meta_cgroup_uid(const void *a, const void *b);

/* join.c: derive every pod's metadata-derived fields (names, priority, static, mirror,
 * DaemonSet, requests, containers, meta_unknown) from the current list, or mark it
 * meta_unknown; the cgroup's facts (identity, QoS from the path, usage) are kept. Kubernetes
 * mode, after every refresh. */
void pods_join_metadata(struct pods *pods);

/* meta.c: pods_parse_podlist without logging; an error's message (for -EINVAL) goes to message.
 * For the pods-file worker thread (file_source.c), which leaves the logging to the loop. */
int pods_parse_podlist_quiet(const char *json, size_t len, const char *name, const char *node_name,
			     struct pod_meta_list *list, char *message, size_t message_len);

#endif
