// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The kill ledger: see kill_ledger.h and doc/DESIGN.md, "Acting: one victim per need". */
#include <string.h>

#include "core/arith.h"
#include "core/kill_ledger.h"

void kill_ledger_init(struct kill_ledger *ledger)
{
	memset(ledger, 0, sizeof(*ledger));
}

static struct ledger_state *state(struct kill_ledger *ledger, enum ledger_resource resource)
{
	return &ledger->r[resource < LEDGER_RESOURCES ? resource : LEDGER_OTHER];
}

void kill_ledger_completed(struct kill_ledger *ledger, enum ledger_resource resource, int64_t now_ns,
			   int64_t available_before, int64_t used_before, int64_t expected, int64_t left)
{
	struct ledger_state *s = state(ledger, resource);

	if (resource == LEDGER_PIDS) {
		/* Several kills in a row: the credit of each still unreaped adds up. */
		int64_t still = kill_ledger_reap_credit(ledger, resource, now_ns, used_before, -1);

		s->reap_tasks = sat_add_i64(still, expected > 0 ? expected : 0);
		s->reap_used_at_kill = s->reap_used_low = used_before;
		s->reap_until_ns = sat_add_i64(now_ns, LEDGER_REAP_WINDOW_NS);
		return;
	}
	if (resource != LEDGER_MEMORY)
		return;
	s->followup = true;
	s->followup_completed_ns = now_ns;
	s->followup_available_before = available_before;
	s->followup_expected = expected;
	s->followup_left = left;
}

bool kill_ledger_reap_open(const struct kill_ledger *ledger, enum ledger_resource resource, int64_t now_ns)
{
	const struct ledger_state *s = &ledger->r[resource < LEDGER_RESOURCES ? resource : LEDGER_OTHER];

	return s->reap_tasks > 0 && now_ns < s->reap_until_ns;
}

int64_t kill_ledger_reap_credit(struct kill_ledger *ledger, enum ledger_resource resource,
				int64_t now_ns, int64_t used_now, int64_t zombies_now)
{
	struct ledger_state *s = state(ledger, resource);
	int64_t dropped, credit;

	if (s->reap_tasks <= 0 || now_ns >= s->reap_until_ns) {
		s->reap_tasks = 0;
		return 0;
	}
	/* As the node's use falls, the victim's zombies are being reaped: what it has fallen by
	 * is no longer owed. Another workload forking meanwhile makes the credit linger, never
	 * grow again: the lowest use seen since the kill counts. */
	if (used_now < s->reap_used_low)
		s->reap_used_low = used_now;
	dropped = s->reap_used_at_kill - s->reap_used_low;
	credit = s->reap_tasks - (dropped > 0 ? dropped : 0);
	if (zombies_now >= 0 && credit > zombies_now) {
		/* No more can be owed than are unreaped now: the rest were reaped while other
		 * tasks started. */
		credit = zombies_now;
		s->reap_tasks = zombies_now + (dropped > 0 ? dropped : 0);
	}
	if (credit <= 0) {
		s->reap_tasks = 0;
		return 0;
	}
	return credit;
}

struct ledger_verdict kill_ledger_judge(struct kill_ledger *ledger, enum ledger_resource resource,
					int64_t now_ns, int64_t observed_ns, int64_t available_now,
					bool still_met, int64_t margin)
{
	struct ledger_state *s = state(ledger, resource);
	struct ledger_verdict v = { .expected = -1, .left = -1 };
	int64_t returned;
	bool short_of_half;

	if (!s->followup || observed_ns < s->followup_completed_ns)
		return v;
	s->followup = false;
	returned = available_now - s->followup_available_before;
	v = (struct ledger_verdict){
		.judged = true,
		.expected = s->followup_expected,
		.returned = returned,
		.left = s->followup_left,
	};
	if (s->followup_left >= 0 && s->followup_expected > 0)
		/* The emptied cgroup still holds it: measured, not inferred. */
		short_of_half = s->followup_left > s->followup_expected / 2 &&
				s->followup_left >= LEDGER_MEMORY_NOISE_BYTES / 4;
	else if (s->followup_expected >= LEDGER_MEMORY_NOISE_BYTES)
		short_of_half = returned < s->followup_expected / 2;
	else
		/* Too small (or unknown) to see: it cannot have been what the node missed. */
		short_of_half = returned < LEDGER_MEMORY_NOISE_BYTES / 2;
	/* Measured in the emptied cgroup, the memory stayed whether or not the signal crossed back
	 * (the victim's own pages, freed, can lift it just over the threshold): reported and held
	 * all the same, or the next drift down kills a fresh workload for it. Inferred from the
	 * signal's rise, a signal back over the threshold says the kill was enough. */
	if (!short_of_half || (!still_met && s->followup_left < 0)) {
		/* It worked, or it no longer matters: the next hold starts short again. */
		s->hold_ns = 0;
		s->held = false;
		return v;
	}
	v.unreturned = true;
	s->hold_ns = s->hold_ns ? s->hold_ns * 2 : LEDGER_HOLD_MIN_NS;
	if (s->hold_ns > LEDGER_HOLD_MAX_NS)
		s->hold_ns = LEDGER_HOLD_MAX_NS;
	s->held = true;
	s->hold_level = available_now - (margin > 0 ? margin : 0);
	s->hold_until_ns = sat_add_i64(now_ns, s->hold_ns);
	v.hold_level = s->hold_level;
	v.hold_until_ns = s->hold_until_ns;
	return v;
}

bool kill_ledger_held(struct kill_ledger *ledger, enum ledger_resource resource, int64_t now_ns,
		      int64_t available_now)
{
	struct ledger_state *s = state(ledger, resource);

	if (!s->held)
		return false;
	if (now_ns >= s->hold_until_ns || available_now < s->hold_level) {
		/* hold_ns stays: if the next kill returns nothing either, its hold is longer. */
		s->held = false;
		return false;
	}
	return true;
}

void kill_ledger_failed(struct kill_ledger *ledger, enum ledger_resource resource, int64_t now_ns)
{
	struct ledger_state *s = state(ledger, resource);

	s->failures++;
	s->fail_ns = s->fail_ns ? s->fail_ns * 2 : LEDGER_FAIL_MIN_NS;
	if (s->fail_ns > LEDGER_FAIL_MAX_NS)
		s->fail_ns = LEDGER_FAIL_MAX_NS;
	s->fail_until_ns = sat_add_i64(now_ns, s->fail_ns);
}

void kill_ledger_succeeded(struct kill_ledger *ledger, enum ledger_resource resource)
{
	struct ledger_state *s = state(ledger, resource);

	s->failures = 0;
	s->fail_ns = 0;
	s->fail_until_ns = 0;
}

bool kill_ledger_backing_off(const struct kill_ledger *ledger, enum ledger_resource resource,
			     int64_t now_ns, int64_t *until_ns)
{
	const struct ledger_state *s = &ledger->r[resource < LEDGER_RESOURCES ? resource : LEDGER_OTHER];

	if (until_ns)
		*until_ns = s->fail_until_ns;
	return s->failures && now_ns < s->fail_until_ns;
}
