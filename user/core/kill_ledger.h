/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The kill ledger (doc/DESIGN.md, "Acting: one victim per need"): what the evictions of one
 * resource have freed, still owe, or failed to return, so that a decision never kills a second
 * victim for a need the first one already met. Pure logic with an injected clock: no I/O.
 *
 *  - Reaping credit (PIDs): the tasks of a killed cgroup stay in the kernel's task count until
 *    their parent reaps them. For a while after the kill they count as freed, as many as the
 *    node's task count has not yet dropped by.
 *  - Follow-up (memory): the first fresh observation after a kill shows what it gave back. A
 *    kill that returned less than half of the victim's usage (tmpfs and shared memory outlive
 *    their processes; a process escaped) is reported and holds further evictions of the
 *    resource: the next one only once the signal falls a margin below where it stood, or when
 *    the hold ends (10 s, the kubelet's housekeeping interval, doubling to 5 min).
 *  - Failure backoff: a kill that fails is retried after 100 ms, doubling to 30 s.
 */
#ifndef EVICTD_CORE_KILL_LEDGER_H
#define EVICTD_CORE_KILL_LEDGER_H

#include <stdbool.h>
#include <stdint.h>

enum ledger_resource {
	LEDGER_MEMORY,
	LEDGER_PIDS,
	LEDGER_OTHER,
	LEDGER_RESOURCES,
};

/* Below this a kill's effect on memory is lost in the noise of the rest of the node. */
#define LEDGER_MEMORY_NOISE_BYTES (64LL << 20)
#define LEDGER_REAP_WINDOW_NS (30LL * 1000000000)
#define LEDGER_HOLD_MIN_NS (10LL * 1000000000)
#define LEDGER_HOLD_MAX_NS (300LL * 1000000000)
#define LEDGER_FAIL_MIN_NS (100LL * 1000000)
#define LEDGER_FAIL_MAX_NS (30LL * 1000000000)

struct ledger_state {
	/* PIDs: tasks that may still be zombies, and the node's task use at the decision. */
	int64_t reap_tasks;
	int64_t reap_used_at_kill;
	int64_t reap_used_low;			/* the lowest use seen since */
	int64_t reap_until_ns;
	/* Memory: a completed kill whose effect the next fresh observation judges. */
	bool followup;
	int64_t followup_completed_ns;
	int64_t followup_available_before;
	int64_t followup_expected;		/* the victim's usage at the decision; -1: unknown */
	int64_t followup_left;			/* measured still charged after the kill; -1: unknown */
	/* A kill did not return what it held: no eviction until the signal falls below level or
	 * until until_ns. */
	bool held;
	int64_t hold_level;
	int64_t hold_until_ns;
	int64_t hold_ns;			/* the length of the last hold; 0: none yet */
	/* Kill failures. */
	unsigned failures;
	int64_t fail_until_ns;
	int64_t fail_ns;
};

struct kill_ledger {
	struct ledger_state r[LEDGER_RESOURCES];
};

/* What the follow-up concluded. */
struct ledger_verdict {
	bool judged;		/* a follow-up was due and has been judged now */
	bool unreturned;	/* it gave back less than half of what it held */
	int64_t expected;	/* what the victim held (-1 unknown) */
	int64_t returned;	/* how far the signal rose since the decision */
	int64_t left;		/* measured still charged after the kill (-1 unknown) */
	int64_t hold_level, hold_until_ns;
};

void kill_ledger_init(struct kill_ledger *ledger);

/* A kill of this resource completed (the victim's cgroup is empty or gone). available_before
 * and used_before: the signal at the decision; expected: the victim's usage then (bytes or
 * tasks; -1 unknown); left: what stayed charged to the emptied cgroup (-1 unknown). */
void kill_ledger_completed(struct kill_ledger *ledger, enum ledger_resource resource, int64_t now_ns,
			   int64_t available_before, int64_t used_before, int64_t expected, int64_t left);

/* PIDs: the tasks of completed kills that still count in the node's task use (used_now), to add
 * to the observed available: at most what the node's task use has not dropped by since, and at
 * most the zombies the node holds now (zombies_now; negative: unknown), so that a task started
 * meanwhile is never taken for an unreaped one. */
int64_t kill_ledger_reap_credit(struct kill_ledger *ledger, enum ledger_resource resource,
				int64_t now_ns, int64_t used_now, int64_t zombies_now);
/* Is a reaping credit open (worth counting the node's zombies for)? */
bool kill_ledger_reap_open(const struct kill_ledger *ledger, enum ledger_resource resource, int64_t now_ns);

/* Memory: judge a due follow-up against an observation read at observed_ns (only one read
 * after the completion judges; still_met: the threshold is still met; margin: how far below the
 * observed value a new eviction may go ahead during the hold). A kill that returned what it
 * held ends the doubling of the holds. */
struct ledger_verdict kill_ledger_judge(struct kill_ledger *ledger, enum ledger_resource resource,
					int64_t now_ns, int64_t observed_ns, int64_t available_now,
					bool still_met, int64_t margin);

/* Is the resource held (a kill did not return its memory)? available_now below the hold's level
 * ends the hold early: the pressure is new. */
bool kill_ledger_held(struct kill_ledger *ledger, enum ledger_resource resource, int64_t now_ns,
		      int64_t available_now);

/* Failures: back off exponentially; a success resets. */
void kill_ledger_failed(struct kill_ledger *ledger, enum ledger_resource resource, int64_t now_ns);
void kill_ledger_succeeded(struct kill_ledger *ledger, enum ledger_resource resource);
/* True while a retry must wait; *until_ns says until when. */
bool kill_ledger_backing_off(const struct kill_ledger *ledger, enum ledger_resource resource,
			     int64_t now_ns, int64_t *until_ns);

#endif
