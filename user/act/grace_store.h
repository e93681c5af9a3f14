/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Soft-eviction graces that survive a restart of evictd (doc/DESIGN.md §6). Each soft
 * eviction in its grace is a file <dir>/grace/<cgroup id>: the cgroup path, the SIGTERM time
 * in CLOCK_BOOTTIME (system-wide, so it runs on across a process restart, and it counts a
 * suspend, which a grace spans too), the grace length and the boot id (the clock starts
 * again at a reboot: another boot's entries are void). A restart caps the new grace by what is left of the old one,
 * as the kubelet's pod workers shorten a grace but never lengthen it.
 */
#ifndef EVICTD_ACT_GRACE_STORE_H
#define EVICTD_ACT_GRACE_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "sys/boot.h"

struct grace_store;

/* <dir>/grace is made when missing. boot_id NULL: this boot's (tests pass their own).
 * 0 and *out, or negative errno (logged). */
int grace_store_open(struct grace_store **out, const char *dir, const char *boot_id);
void grace_store_close(struct grace_store *store);

/* Written atomically (tmp + rename). 0 or negative errno (logged). */
int grace_store_record(struct grace_store *store, uint64_t cgroup_id, const char *path,
		       int64_t sigterm_boottime_ns, int64_t grace_ns);
/* 0, or negative errno (-ENOENT: none). */
int grace_store_forget(struct grace_store *store, uint64_t cgroup_id);
/* true when this boot recorded a grace for cgroup_id: *remaining = what is left of it at
 * now, at most grace_ns, at least 0. An entry of another boot or unreadable: false (and
 * removed). */
bool grace_store_remaining(struct grace_store *store, uint64_t cgroup_id, int64_t now_boottime_ns,
			   int64_t grace_ns, int64_t *remaining);

/* The eviction path in one call: grace_ns capped by a recorded grace for the cgroup (0: kill
 * now); a new grace > 0 is recorded from now unless dry_run. store NULL: grace_ns. */
int64_t grace_store_begin(struct grace_store *store, uint64_t cgroup_id, const char *path,
			  int64_t grace_ns, bool dry_run);

#endif
