/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * After an eviction (doc/DESIGN.md §9, "Hooks and notifications"): the --on-evict command and
 * the --dbus-signal D-Bus signal. The command runs through sys/subprocess.c, an event source of
 * the loop: never waited for, its group SIGTERMed at --on-evict-timeout and SIGKILLed 2 s
 * later. At most NOTIFY_HOOK_MAX_RUNNING at once; an event past that is logged and dropped
 * (a hook that hangs cannot pile up processes). Its environment is only PATH and:
 *   EVICTD_KIND (evicted; warn: the pre-kill warning, daemon/warn.h), EVICTD_VICTIM, EVICTD_CGROUP, EVICTD_SIGNAL, EVICTD_THRESHOLD,
 *   EVICTD_OBSERVED (the signal's value, bytes or count), EVICTD_REASON (why this victim).
 */
#ifndef EVICTD_OPS_NOTIFY_HOOK_H
#define EVICTD_OPS_NOTIFY_HOOK_H

#include <stdbool.h>
#include <stdint.h>

struct loop;
struct notify_hook;

#define NOTIFY_HOOK_MAX_RUNNING 4

struct notify_event {
	const char *kind;		/* "evicted", "warn" */
	const char *victim;		/* the workload or namespace/pod name */
	const char *cgroup;
	const char *signal;		/* memory.available, ... */
	const char *threshold;		/* as configured: 500Mi, 10% */
	int64_t observed;
	const char *reason;
};

struct notify_hook *notify_hook_new(struct loop *loop);
/* Cancels running commands (their groups are SIGKILLed). NULL is fine. */
void notify_hook_free(struct notify_hook *hook);
/* Run command ("" or NULL: none) with timeout_ns, and emit the D-Bus signal when dbus. */
void notify_hook_fire(struct notify_hook *hook, const char *command, int64_t timeout_ns, bool dbus,
		      const struct notify_event *event);
/* Commands started, finished, timed out, dropped (at the limit), for tests and metrics. */
struct notify_hook_stats {
	uint64_t started, finished, timed_out, dropped;
};
struct notify_hook_stats notify_hook_stats(const struct notify_hook *hook);

#endif
