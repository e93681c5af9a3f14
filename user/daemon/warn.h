/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The pre-kill warning (doc/DESIGN.md §9 "Warnings"): memory.available below
 * --warn-memory-available while no threshold acts and swap is short (the memory thresholds'
 * own gate), said at most once per --warn-interval: one log line naming who would be killed
 * first, a decision-log entry (action "warn"), the --on-evict hook and the D-Bus signal with
 * kind "warn". As earlyoom warns (SIGTERM level above the SIGKILL one, -r reports) and nohang's
 * warning_threshold_min_mem. */
#ifndef EVICTD_DAEMON_WARN_H
#define EVICTD_DAEMON_WARN_H

#include <stdbool.h>
#include <stdint.h>

struct policy;

struct warn_state {
	int64_t warned_at_ns;	/* the last warning; -1: never */
};

struct warn_verdict {
	bool below;		/* under the warning level now (and the gate open, no action) */
	bool due;		/* below, and the interval since the last warning has passed */
	int64_t observed;	/* memory.available, bytes */
	int64_t level;		/* the warning level resolved against the capacity */
};

/* --warn-ahead (doc/DESIGN.md "Seeing ahead"): a hard threshold not met yet whose sure time to
 * exhaustion is below the duration, while none acts. */
struct warn_ahead_verdict {
	int index;		/* the threshold (the soonest); -1: none below */
	bool due;		/* and the interval since the last such warning has passed */
};

void warn_state_init(struct warn_state *state);
struct warn_ahead_verdict warn_ahead_evaluate(const struct policy *policy, struct warn_state *state,
					      int64_t now_ns);
/* Judge the policy's last evaluation at now_ns; a due verdict marks it said. Pure but for the
 * policy it reads. */
struct warn_verdict warn_evaluate(const struct policy *policy, struct warn_state *state, int64_t now_ns);

#endif
