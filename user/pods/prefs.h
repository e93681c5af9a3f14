/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Standalone workload preferences (doc/DESIGN.md §5, "Workload preferences"): systemd's
 * ManagedOOMPreference= xattrs and the configuration's workloadPreferences, which match a
 * workload by name so that they survive systemd recreating its cgroup (the cgroup's own
 * user.evictd.priority xattr goes with it). Kubernetes mode never reads them.
 */
#ifndef EVICTD_PODS_PREFS_H
#define EVICTD_PODS_PREFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/rank.h"

#define PODS_MAX_WORKLOAD_PREFS 32
#define PODS_PREF_MATCH_MAX 256

/* systemd's names (src/core/cgroup.c sets them from ManagedOOMPreference=). */
#define PODS_XATTR_OOMD_AVOID "user.oomd_avoid"
#define PODS_XATTR_OOMD_OMIT "user.oomd_omit"

/*
 * One workloadPreferences entry. match is an fnmatch(3) glob without flags ('*' also crosses
 * '/'): without a '/' it is matched against the workload's name (its cgroup directory, the
 * unit name: "sshd.service"), with one against its cgroup path below the cgroup mount without
 * the leading '/' ("system.slice/sshd.service"; "*" + "/app-firefox*" for any parent).
 */
struct workload_pref {
	char match[PODS_PREF_MATCH_MAX];
	bool has_priority;
	int32_t priority;
	enum pod_preference preference;	/* POD_PREF_NONE: sets none */
};

struct workload_prefs {
	struct workload_pref items[PODS_MAX_WORKLOAD_PREFS];
	size_t n;
};

/* Parse "PATTERN=SETTING[,SETTING]" (--workload-preference), SETTING one of prefer, avoid,
 * never, priority:N. 0, or -EINVAL after one error line naming key. */
int workload_pref_parse(const char *key, const char *text, struct workload_pref *out);
/* A setting word of an entry (YAML: prefer: true etc.) into pref; -EINVAL after one line. */
int workload_pref_set(const char *key, const char *field, const char *value, struct workload_pref *pref);
/* Check an entry: a non-empty pattern that fnmatch accepts, at least one setting. 0 or
 * -EINVAL after one line naming key. */
int workload_pref_check(const char *key, const struct workload_pref *pref);
/* Whether pattern matches a workload named name at rel_path (below the mount, no leading /). */
bool workload_pref_matches(const char *pattern, const char *name, const char *rel_path);
/* "prefer", "avoid", "never" or "" */
const char *workload_pref_name(enum pod_preference preference);

/*
 * Apply the entries to a workload: for priority and for the preference each, the first
 * entry that matches and sets it. priority_set: an xattr already gave the priority (the
 * cgroup's own word wins over a pattern). A "never" from any source stays never.
 */
void workload_prefs_apply(const struct workload_prefs *prefs, struct pod *pod, const char *name,
			  const char *rel_path, bool priority_set);

/*
 * systemd-oomd's rule for user.oomd_avoid / user.oomd_omit (src/oom/oomd-util.c,
 * oomd_fetch_cgroup_oom_preference): trusted when the cgroup is owned by root, or by the
 * same uid as the monitored cgroup above it (here: the workload root, root_owner); else
 * the preference is none. Each is a systemd boolean (parse_boolean); omit wins over avoid.
 * fd is the workload's cgroup directory. Returns POD_PREF_NONE, _AVOID or _NEVER; *name is
 * set to the xattr that decided (NULL for none).
 */
enum pod_preference pods_oomd_preference(int fd, uid_t owner, uid_t root_owner, const char **name);

#endif
