// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Graceful node shutdown (DESIGN.md §7): the kubelet's migrateConfig and groupByPriority (its own
 * unit-test cases), the seed's examples, the clock-driven kill sequence with a fake kill
 * callback, cancel, the persisted start/end times, and the logind
 * drop-in. */
#include "testutil.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "sys/log.h"
#include "sys/logind.h"
#include "act/shutdown.h"

#define S 1000000000ll
/* snprintf that must not truncate (a cut path or name would test the wrong thing). */
#define PATHF(buf, len, ...) assert_true(snprintf(buf, len, __VA_ARGS__) < (int)(len))
#define CRITICAL 2000000000
#define HIGHEST_USER_DEFINABLE 1000000000

/* ---- fixtures ------------------------------------------------------------------------------ */

#define MAX_PODS 16
#define MAX_KILLS 32

static struct pod pod_pool[MAX_PODS];
static struct pod *pod_ptrs[MAX_PODS];
static size_t n_pool;

static struct pod *make_pod(const char *name, int32_t priority, int64_t tgps_s)
{
	struct pod *pod = &pod_pool[n_pool];

	assert_true(n_pool < MAX_PODS);
	memset(pod, 0, sizeof(*pod));
	snprintf(pod->namespace_, sizeof(pod->namespace_), "default");
	snprintf(pod->name, sizeof(pod->name), "%s", name);
	snprintf(pod->uid, sizeof(pod->uid), "uid-%s", name);
	snprintf(pod->cgroup_path, sizeof(pod->cgroup_path), "/sys/fs/cgroup/test/%s", name);
	pod->priority = priority;
	pod->termination_grace_period_s = tgps_s;
	pod_ptrs[n_pool] = pod;
	n_pool++;
	return pod;
}

/* What the fake kill callback saw, in order. */
static struct fake_kills {
	size_t n;
	char name[MAX_KILLS][64];
	int64_t at_ns[MAX_KILLS];
	int64_t grace_ns[MAX_KILLS];
	uint64_t token[MAX_KILLS];
	int64_t now_ns;		/* the test's monotonic clock, as the callback sees it */
	const char *fail_name;	/* start() fails for this pod */
} kills;

static int64_t fake_wall_ns;

static int64_t fake_realtime(void)
{
	return fake_wall_ns;
}

static int fake_start(void *ctx, uint64_t token, const struct pod *pod, int64_t grace_ns)
{
	assert_ptr_equal(ctx, &kills);
	assert_true(kills.n < MAX_KILLS);
	if (kills.fail_name && strcmp(pod->name, kills.fail_name) == 0)
		return -EPERM;
	PATHF(kills.name[kills.n], sizeof(kills.name[0]), "%s", pod->name);
	kills.at_ns[kills.n] = kills.now_ns;
	kills.grace_ns[kills.n] = grace_ns;
	kills.token[kills.n] = token;
	kills.n++;
	return 0;
}

static const struct shutdown_kill_ops fake_ops = { .start = fake_start };

/* The index of pod name's kill, failing when it was never killed. */
static size_t kill_index(const char *name)
{
	for (size_t i = 0; i < kills.n; i++)
		if (strcmp(kills.name[i], name) == 0)
			return i;
	fail_msg("pod %s was never killed", name);
	return 0;
}

static bool was_killed(const char *name)
{
	for (size_t i = 0; i < kills.n; i++)
		if (strcmp(kills.name[i], name) == 0)
			return true;
	return false;
}

static void done(struct shutdown_manager *m, const char *name, int err)
{
	shutdown_kill_done(m, kills.token[kill_index(name)], err);
}

static int64_t step_at(struct shutdown_manager *m, int64_t now_ns, bool *release)
{
	kills.now_ns = now_ns;
	return shutdown_step(m, now_ns, release);
}

static int reset(void **state)
{
	memset(&kills, 0, sizeof(kills));
	n_pool = 0;
	fake_wall_ns = 1767225600ll * S;	/* 2026-01-01T00:00:00Z */
	log_set_level(LOGLEVEL_ERR);
	return 0;
}

static struct shutdown_plan plan_of(const struct shutdown_plan_group *groups, size_t n)
{
	struct shutdown_plan plan = { .n_groups = n };

	for (size_t i = 0; i < n; i++) {
		plan.groups[i] = groups[i];
		plan.total_ns += groups[i].period_ns;
	}
	return plan;
}

static void manager_with_plan(struct shutdown_manager *m, const struct shutdown_plan *plan,
			      const char *state_dir)
{
	assert_int_equal(shutdown_init(m, &(struct shutdown_options){
		.plan = plan,
		.ops = &fake_ops,
		.ops_ctx = &kills,
		.state_dir = state_dir ? state_dir : "",
		.realtime_ns = fake_realtime,
	}), 0);
}

/* A finalized configuration from kubelet-style flags (name, value pairs, NULL-terminated). */
static void config_from_flags(struct evictd_config *config, ...)
{
	const char *flag, *value;
	va_list ap;

	config_init_defaults(config);
	va_start(ap, config);
	while ((flag = va_arg(ap, const char *))) {
		value = va_arg(ap, const char *);
		assert_int_equal(config_apply_flag(config, flag, value), 0);
	}
	va_end(ap);
	assert_int_equal(config_finalize(config), 0);
}

/* ---- the plan: the kubelet's Test_migrateConfig -------------------------------------------- */

static void test_migrate_config(void **state)
{
	struct shutdown_plan_group g[2];

	/* both shutdownGracePeriodRequested and shutdownGracePeriodCriticalPods */
	assert_int_equal(shutdown_migrate_config(300 * S, 120 * S, g), 2);
	assert_int_equal(g[0].priority, 0);
	assert_int_equal(g[0].period_ns, 180 * S);
	assert_int_equal(g[1].priority, CRITICAL);
	assert_int_equal(g[1].period_ns, 120 * S);
	/* only shutdownGracePeriodRequested */
	assert_int_equal(shutdown_migrate_config(100 * S, 0, g), 2);
	assert_int_equal(g[0].period_ns, 100 * S);
	assert_int_equal(g[1].priority, CRITICAL);
	assert_int_equal(g[1].period_ns, 0);
	/* empty configuration */
	assert_int_equal(shutdown_migrate_config(0, 0, g), 0);
	/* wrong configuration */
	assert_int_equal(shutdown_migrate_config(1 * S, 100 * S, g), 0);
	/* each part truncated to whole seconds on its own, as int64(d / time.Second) */
	assert_int_equal(shutdown_migrate_config(30500 * S / 1000, 10200 * S / 1000, g), 2);
	assert_int_equal(g[0].period_ns, 20 * S);
	assert_int_equal(g[1].period_ns, 10 * S);
}

/* The seed: shutdownGracePeriod=30s, shutdownGracePeriodCriticalPods=10s -> the first 20 s for
 * regular pods, the last 10 s for critical ones; logind is asked to wait 30 s. */
static void test_plan_seed_two_periods(void **state)
{
	struct evictd_config config;
	struct shutdown_plan plan;

	config_from_flags(&config, "shutdown-grace-period", "30s",
			  "shutdown-grace-period-critical-pods", "10s", NULL);
	assert_int_equal(shutdown_plan_from_config(&config, &plan), 2);
	assert_int_equal(plan.groups[0].priority, 0);
	assert_int_equal(plan.groups[0].period_ns, 20 * S);
	assert_int_equal(plan.groups[1].priority, CRITICAL);
	assert_int_equal(plan.groups[1].period_ns, 10 * S);
	assert_int_equal(plan.total_ns, 30 * S);

	/* Both zero and no list: off. */
	config_from_flags(&config, NULL);
	assert_int_equal(shutdown_plan_from_config(&config, &plan), 0);
	assert_int_equal(plan.total_ns, 0);
}

/* The seed's table: 100000=10s, 10000=180s, 1000=120s, 0=60s, given highest first. */
static void test_plan_seed_priority_table(void **state)
{
	static const struct { int32_t priority; size_t group; } cases[] = {
		{ 2000000000, 3 }, { 100000, 3 },	/* >= 100000: 10 s */
		{ 99999, 2 }, { 10000, 2 },		/* [10000, 100000): 180 s */
		{ 9999, 1 }, { 1000, 1 },		/* [1000, 10000): 120 s */
		{ 999, 0 }, { 0, 0 }, { -5, 0 },	/* everything else: 60 s */
	};
	struct evictd_config config;
	struct shutdown_plan plan;

	config_from_flags(&config, "shutdown-grace-period-by-pod-priority",
			  "100000=10,10000=180,1000=120,0=60", NULL);
	assert_int_equal(shutdown_plan_from_config(&config, &plan), 4);
	assert_int_equal(plan.groups[0].priority, 0);
	assert_int_equal(plan.groups[0].period_ns, 60 * S);
	assert_int_equal(plan.groups[1].priority, 1000);
	assert_int_equal(plan.groups[1].period_ns, 120 * S);
	assert_int_equal(plan.groups[2].priority, 10000);
	assert_int_equal(plan.groups[2].period_ns, 180 * S);
	assert_int_equal(plan.groups[3].priority, 100000);
	assert_int_equal(plan.groups[3].period_ns, 10 * S);
	assert_int_equal(plan.total_ns, 370 * S);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (shutdown_group_index(&plan, cases[i].priority) != cases[i].group)
			fail_msg("priority %d: group %zu, want %zu", cases[i].priority,
				 shutdown_group_index(&plan, cases[i].priority), cases[i].group);
	}
}

/* The reduced form: 100000=300s, 1000=120s, 0=60s: custom-class-b (10000) joins
 * custom-class-c (1000). */
static void test_plan_seed_reduced_table(void **state)
{
	struct evictd_config config;
	struct shutdown_plan plan;

	config_from_flags(&config, "shutdown-grace-period-by-pod-priority", "100000=300,1000=120,0=60", NULL);
	assert_int_equal(shutdown_plan_from_config(&config, &plan), 3);
	assert_int_equal(plan.total_ns, 480 * S);
	assert_int_equal(shutdown_group_index(&plan, 100000), 2);	/* custom-class-a */
	assert_int_equal(shutdown_group_index(&plan, 10000), 1);	/* custom-class-b */
	assert_int_equal(shutdown_group_index(&plan, 1000), 1);		/* custom-class-c */
	assert_int_equal(shutdown_group_index(&plan, 0), 0);		/* regular/unset */
	assert_int_equal(plan.groups[1].period_ns, 120 * S);
}

/* The kubelet's Test_groupByPriority. */
static void test_group_by_priority_kubelet(void **state)
{
	struct shutdown_plan_group g[2];
	struct shutdown_plan plan;
	static const struct shutdown_plan_group four[] = {
		{ 1, 10 * S }, { 2, 20 * S }, { 3, 30 * S }, { 4, 40 * S },
	};
	static const size_t want[] = { 0, 0, 1, 2, 3, 3 };	/* pods with priority 0..5 */

	/* "migrate config": normal and highest-user-definable pods regular, critical last */
	assert_int_equal(shutdown_migrate_config(300 * S, 120 * S, g), 2);
	plan = plan_of(g, 2);
	assert_int_equal(shutdown_group_index(&plan, 0), 0);
	assert_int_equal(shutdown_group_index(&plan, HIGHEST_USER_DEFINABLE), 0);
	assert_int_equal(shutdown_group_index(&plan, CRITICAL), 1);
	/* below the lowest listed priority: the lowest group (the kubelet's sort.Search) */
	assert_int_equal(shutdown_group_index(&plan, -1000), 0);
	assert_int_equal(shutdown_group_index(&plan, INT32_MIN), 0);
	assert_int_equal(shutdown_group_index(&plan, INT32_MAX), 1);

	/* "pod priority" */
	plan = plan_of(four, 4);
	for (int32_t p = 0; p <= 5; p++)
		assert_int_equal(shutdown_group_index(&plan, p), want[p]);
}

/* The grace each pod gets: the kubelet's TestManager expectations (gracePeriodOverride). */
static void test_pod_grace(void **state)
{
	struct shutdown_plan_group g[2];
	struct pod *normal = make_pod("normal-nil", 0, -1);
	struct pod *normal2 = make_pod("normal-2", 0, 2);
	struct pod *normal_long = make_pod("normal-1000", 0, 1000);

	/* total=30s, critical=10s */
	assert_int_equal(shutdown_migrate_config(30 * S, 10 * S, g), 2);
	assert_int_equal(shutdown_pod_grace_ns(normal, g[0].period_ns), 20 * S);
	assert_int_equal(shutdown_pod_grace_ns(normal, g[1].period_ns), 10 * S);	/* a critical pod */
	assert_int_equal(shutdown_pod_grace_ns(normal2, g[0].period_ns), 2 * S);
	assert_int_equal(shutdown_pod_grace_ns(normal2, g[1].period_ns), 2 * S);
	assert_int_equal(shutdown_pod_grace_ns(normal_long, g[0].period_ns), 20 * S);
	/* total=30, critical=0 */
	assert_int_equal(shutdown_migrate_config(30 * S, 0, g), 2);
	assert_int_equal(shutdown_pod_grace_ns(normal, g[0].period_ns), 30 * S);
	assert_int_equal(shutdown_pod_grace_ns(normal, g[1].period_ns), 0);
	/* all time to critical pods (5/5) */
	assert_int_equal(shutdown_migrate_config(5 * S, 5 * S, g), 2);
	assert_int_equal(shutdown_pod_grace_ns(normal, g[0].period_ns), 0);
	assert_int_equal(shutdown_pod_grace_ns(normal, g[1].period_ns), 5 * S);
	/* terminationGracePeriodSeconds: 0 is honoured (0 <= period) */
	assert_int_equal(shutdown_pod_grace_ns(make_pod("zero", 0, 0), 20 * S), 0);
}

/* ---- the sequence ------------------------------------------------------------------------- */

/* The VM scenario's plan, driven by a fake clock: order, budgets, early end, empty group. */
static void test_sequence_groups(void **state)
{
	static const struct shutdown_plan_group groups[] = {
		{ 0, 4 * S }, { 1000, 3 * S }, { 100000, 3 * S }, { CRITICAL, 2 * S },
	};
	struct shutdown_plan plan = plan_of(groups, 4);
	struct shutdown_manager m;
	struct pod *self;
	bool release;
	int64_t t0 = 100 * S, next;

	/* Given in no particular order: the sequence sorts by group, stable within one. */
	make_pod("crit", CRITICAL, -1);
	make_pod("low", 0, -1);
	make_pod("mid", 1000, -1);
	make_pod("neg", -100, -1);
	make_pod("high", 99999, -1);
	make_pod("stub", 500, -1);
	make_pod("crit2", 2100000000, 1);	/* its own grace is shorter than the group's */
	self = make_pod("evictd", 0, -1);
	self->is_self = true;
	manager_with_plan(&m, &plan, NULL);
	assert_int_equal(m.plan.total_ns, 12 * S);
	assert_false(shutdown_in_progress(&m));

	assert_int_equal(shutdown_begin(&m, t0, pod_ptrs, n_pool), 0);
	assert_true(shutdown_in_progress(&m));
	assert_int_equal(m.start_time_ns, fake_wall_ns);
	assert_int_equal(m.end_time_ns, 0);
	assert_int_equal(shutdown_begin(&m, t0, pod_ptrs, n_pool), -EALREADY);

	/* Group 1 (priority < 1000): low, neg, stub at once, grace 4 s; wait until 104 s. */
	next = step_at(&m, t0, &release);
	assert_false(release);
	assert_int_equal(next, t0 + 4 * S);
	assert_int_equal(kills.n, 3);
	assert_string_equal(kills.name[0], "low");
	assert_string_equal(kills.name[1], "neg");
	assert_string_equal(kills.name[2], "stub");
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(kills.at_ns[i], t0);
		assert_int_equal(kills.grace_ns[i], 4 * S);
	}
	/* low and neg exit; stub ignores SIGTERM: the group lasts its whole period. */
	done(&m, "low", 0);
	done(&m, "neg", 0);
	assert_int_equal(step_at(&m, t0 + S / 2, &release), t0 + 4 * S);
	assert_int_equal(kills.n, 3);
	assert_int_equal(step_at(&m, t0 + 4 * S - 1, &release), t0 + 4 * S);
	assert_int_equal(kills.n, 3);

	/* 104 s: group 2 (mid, high), grace 3 s. */
	next = step_at(&m, t0 + 4 * S, &release);
	assert_false(release);
	assert_int_equal(next, t0 + 7 * S);
	assert_int_equal(kills.n, 5);
	assert_string_equal(kills.name[3], "mid");
	assert_string_equal(kills.name[4], "high");
	assert_int_equal(kills.at_ns[3], t0 + 4 * S);
	assert_int_equal(kills.grace_ns[3], 3 * S);
	/* stub's kill ends now (cgroup.kill): too late to count for group 2. */
	done(&m, "stub", 0);
	assert_int_equal(step_at(&m, t0 + 4 * S + 1, &release), t0 + 7 * S);
	done(&m, "high", 0);
	assert_int_equal(step_at(&m, t0 + 4 * S + 2, &release), t0 + 7 * S);

	/* 105 s: mid exits; group 2 ends early, 100000 is empty and skipped, critical starts. */
	done(&m, "mid", 0);
	next = step_at(&m, t0 + 5 * S, &release);
	assert_false(release);
	assert_int_equal(next, t0 + 7 * S);
	assert_int_equal(kills.n, 7);
	assert_string_equal(kills.name[5], "crit");
	assert_string_equal(kills.name[6], "crit2");
	assert_int_equal(kills.at_ns[5], t0 + 5 * S);
	assert_int_equal(kills.grace_ns[5], 2 * S);
	assert_int_equal(kills.grace_ns[6], 1 * S);	/* terminationGracePeriodSeconds 1 */

	/* Both exit: done, release once, end time recorded. */
	done(&m, "crit2", 0);
	done(&m, "crit", -ETIMEDOUT);	/* a failed kill still ends */
	fake_wall_ns += 5 * S;
	next = step_at(&m, t0 + 5 * S + S / 10, &release);
	assert_true(release);
	assert_int_equal(next, SHUTDOWN_NO_DEADLINE);
	assert_int_equal(m.phase, SHUTDOWN_DONE);
	assert_true(shutdown_in_progress(&m));	/* until the node is down or it is cancelled */
	assert_int_equal(m.end_time_ns, fake_wall_ns);
	assert_int_equal(step_at(&m, t0 + 6 * S, &release), SHUTDOWN_NO_DEADLINE);
	assert_false(release);
	assert_false(was_killed("evictd"));
	assert_int_equal(kills.n, 7);
	assert_true(shutdown_start_time_seconds(&m) > 1.7e9);
	assert_true(shutdown_end_time_seconds(&m) - shutdown_start_time_seconds(&m) > 4.9);
	shutdown_destroy(&m);
}

/* Timeouts all the way: no kill ever reports; each group takes its full period. */
static void test_sequence_timeouts(void **state)
{
	static const struct shutdown_plan_group groups[] = { { 0, 20 * S }, { CRITICAL, 10 * S } };
	struct shutdown_plan plan = plan_of(groups, 2);
	struct shutdown_manager m;
	bool release;

	make_pod("normal", 0, -1);
	make_pod("critical", CRITICAL, -1);
	manager_with_plan(&m, &plan, NULL);
	assert_int_equal(shutdown_begin(&m, 0, pod_ptrs, n_pool), 0);
	assert_int_equal(step_at(&m, 0, &release), 20 * S);
	assert_int_equal(step_at(&m, 20 * S, &release), 30 * S);
	assert_false(release);
	assert_int_equal(kills.at_ns[kill_index("critical")], 20 * S);
	assert_int_equal(step_at(&m, 30 * S, &release), SHUTDOWN_NO_DEADLINE);
	assert_true(release);
	/* Reports after the end change nothing. */
	done(&m, "normal", 0);
	assert_int_equal(m.phase, SHUTDOWN_DONE);
	shutdown_destroy(&m);
}

/* No pods at all, and groups whose pods cannot be killed: nothing to wait for. */
static void test_sequence_nothing_to_wait_for(void **state)
{
	static const struct shutdown_plan_group groups[] = { { 0, 20 * S }, { CRITICAL, 10 * S } };
	struct shutdown_plan plan = plan_of(groups, 2);
	struct shutdown_manager m;
	bool release;

	manager_with_plan(&m, &plan, NULL);
	assert_int_equal(shutdown_begin(&m, 0, NULL, 0), 0);
	assert_int_equal(step_at(&m, 0, &release), SHUTDOWN_NO_DEADLINE);
	assert_true(release);
	shutdown_destroy(&m);

	reset(NULL);
	make_pod("refused", 0, -1);
	make_pod("critical", CRITICAL, -1);
	kills.fail_name = "refused";
	manager_with_plan(&m, &plan, NULL);
	assert_int_equal(shutdown_begin(&m, 0, pod_ptrs, n_pool), 0);
	/* group 1's only kill failed to start: straight on to the critical group */
	assert_int_equal(step_at(&m, 0, &release), 10 * S);
	assert_false(release);
	assert_int_equal(kills.n, 1);
	assert_string_equal(kills.name[0], "critical");
	assert_int_equal(kills.at_ns[0], 0);
	shutdown_destroy(&m);
}

/* A group with a 0 s period (total=30, critical=0): its pods are killed, nobody waits. */
static void test_sequence_zero_period(void **state)
{
	struct shutdown_plan_group g[2];
	struct shutdown_plan plan;
	struct shutdown_manager m;
	bool release;

	assert_int_equal(shutdown_migrate_config(30 * S, 0, g), 2);
	plan = plan_of(g, 2);
	make_pod("normal", 0, -1);
	make_pod("critical", CRITICAL, -1);
	manager_with_plan(&m, &plan, NULL);
	assert_int_equal(shutdown_begin(&m, 0, pod_ptrs, n_pool), 0);
	assert_int_equal(step_at(&m, 0, &release), 30 * S);
	done(&m, "normal", 0);
	assert_int_equal(step_at(&m, 1 * S, &release), SHUTDOWN_NO_DEADLINE);
	assert_true(release);
	assert_int_equal(kills.grace_ns[kill_index("critical")], 0);
	assert_int_equal(kills.at_ns[kill_index("critical")], 1 * S);
	shutdown_destroy(&m);
}

/* PrepareForShutdown(false) in group 1: group 2 never starts, the end time is recorded, old
 * reports are ignored, and a new shutdown runs from the start. */
static void test_sequence_cancel(void **state)
{
	static const struct shutdown_plan_group groups[] = { { 0, 20 * S }, { CRITICAL, 10 * S } };
	struct shutdown_plan plan = plan_of(groups, 2);
	struct shutdown_manager m;
	uint64_t old_token;
	int64_t end;
	bool release;

	make_pod("stub", 0, -1);
	make_pod("crit", CRITICAL, -1);
	manager_with_plan(&m, &plan, NULL);
	assert_false(shutdown_cancel(&m, 0));	/* nothing running */
	assert_int_equal(m.end_time_ns, 0);

	assert_int_equal(shutdown_begin(&m, 0, pod_ptrs, n_pool), 0);
	assert_int_equal(step_at(&m, 0, &release), 20 * S);
	old_token = kills.token[kill_index("stub")];
	fake_wall_ns += 4 * S;
	assert_true(shutdown_cancel(&m, 4 * S));
	assert_int_equal(m.phase, SHUTDOWN_CANCELLED);
	assert_false(shutdown_in_progress(&m));
	assert_int_equal(m.end_time_ns, fake_wall_ns);
	assert_int_equal(m.end_time_ns - m.start_time_ns, 4 * S);
	/* Nothing more happens, whatever the clock says. */
	assert_int_equal(step_at(&m, 60 * S, &release), SHUTDOWN_NO_DEADLINE);
	assert_false(release);
	assert_false(was_killed("crit"));
	shutdown_kill_done(&m, old_token, 0);
	assert_false(was_killed("crit"));

	/* A second shutdown: both groups again; the first sequence's report does not count. */
	assert_int_equal(shutdown_begin(&m, 100 * S, pod_ptrs, n_pool), 0);
	assert_int_equal(m.end_time_ns, 0);
	assert_int_equal(step_at(&m, 100 * S, &release), 120 * S);
	assert_int_equal(kills.n, 2);
	assert_string_equal(kills.name[1], "stub");
	shutdown_kill_done(&m, old_token, 0);
	assert_int_equal(step_at(&m, 101 * S, &release), 120 * S);
	shutdown_kill_done(&m, kills.token[1], 0);
	assert_int_equal(step_at(&m, 102 * S, &release), 112 * S);	/* crit's group */
	assert_string_equal(kills.name[2], "crit");
	assert_int_equal(kills.at_ns[2], 102 * S);

	/* Cancelled after the end: the phase changes, the times stay. */
	assert_int_equal(step_at(&m, 112 * S, &release), SHUTDOWN_NO_DEADLINE);
	assert_true(release);
	end = m.end_time_ns;
	fake_wall_ns += 60 * S;
	assert_false(shutdown_cancel(&m, 200 * S));
	assert_int_equal(m.phase, SHUTDOWN_CANCELLED);
	assert_int_equal(m.end_time_ns, end);
	shutdown_destroy(&m);
}

/* ---- persisted state ----------------------------------------------------------------------- */

static void test_time_format_and_parse(void **state)
{
	static const char *const bad[] = {
		"", "2026-01-02", "2026-01-02 03:04:05Z", "2026-01-02T03:04:05", "2026-13-02T03:04:05Z",
		"2026-01-02T03:04:05.Z", "2026-01-02T03:04:05+0100", "2026-01-02T03:04:05Zjunk",
		"2026-01-02T24:00:00Z",
	};
	char buf[64];
	int64_t ns;

	shutdown_format_time(1767319445500000000ll, buf, sizeof(buf));
	assert_string_equal(buf, "2026-01-02T02:04:05.5Z");
	shutdown_format_time(1767319445000000001ll, buf, sizeof(buf));
	assert_string_equal(buf, "2026-01-02T02:04:05.000000001Z");
	shutdown_format_time(1767319445ll * S, buf, sizeof(buf));
	assert_string_equal(buf, "2026-01-02T02:04:05Z");
	shutdown_format_time(0, buf, sizeof(buf));
	assert_string_equal(buf, "0001-01-01T00:00:00Z");

	/* What the kubelet writes: Go's RFC3339Nano in local time. */
	assert_int_equal(shutdown_parse_time("2026-01-02T03:04:05.5+01:00", &ns), 0);
	assert_int_equal(ns, 1767319445500000000ll);
	assert_int_equal(shutdown_parse_time("2026-01-01T21:04:05.123456789-05:00", &ns), 0);
	assert_int_equal(ns, 1767319445123456789ll);
	assert_int_equal(shutdown_parse_time("2026-01-02T02:04:05.1234567891Z", &ns), 0);
	assert_int_equal(ns, 1767319445123456789ll);
	assert_int_equal(shutdown_parse_time("0001-01-01T00:00:00Z", &ns), 0);
	assert_int_equal(ns, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (shutdown_parse_time(bad[i], &ns) != -EINVAL)
			fail_msg("\"%s\" parsed", bad[i]);
}

static size_t count_entries(const char *dir)
{
	struct dirent *entry;
	size_t n = 0;
	DIR *d = opendir(dir);

	assert_non_null(d);
	while ((entry = readdir(d)))
		if (strcmp(entry->d_name, ".") && strcmp(entry->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void test_state_round_trip(void **state)
{
	char dir[PATH_MAX], sub[PATH_MAX], path[PATH_MAX + 64], text[256];
	int64_t start, end;
	FILE *f;

	fixture_tmpdir(dir, "shutdown");
	PATHF(sub, sizeof(sub), "%s/var/lib/evictd", dir);	/* created on the way */
	PATHF(path, sizeof(path), "%s/%s", sub, SHUTDOWN_STATE_FILE);

	assert_int_equal(shutdown_state_load(path, &start, &end), -ENOENT);
	assert_int_equal(shutdown_state_save(path, 1767319445500000000ll, 0), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(text, sizeof(text), f));
	fclose(f);
	assert_string_equal(text, "{\"startTime\":\"2026-01-02T02:04:05.5Z\",\"endTime\":\"0001-01-01T00:00:00Z\"}");
	assert_int_equal(shutdown_state_load(path, &start, &end), 0);
	assert_int_equal(start, 1767319445500000000ll);
	assert_int_equal(end, 0);

	assert_int_equal(shutdown_state_save(path, 1767319445500000000ll, 1767319475000000123ll), 0);
	assert_int_equal(shutdown_state_load(path, &start, &end), 0);
	assert_int_equal(start, 1767319445500000000ll);
	assert_int_equal(end, 1767319475000000123ll);
	assert_int_equal(count_entries(sub), 1);	/* no temp file left behind */

	/* The kubelet's own file reads the same. */
	fixture_write(sub, SHUTDOWN_STATE_FILE,
		      "{\"startTime\":\"2026-01-02T03:04:05.5+01:00\",\"endTime\":\"2026-01-02T02:04:35Z\"}\n");
	assert_int_equal(shutdown_state_load(path, &start, &end), 0);
	assert_int_equal(start, 1767319445500000000ll);
	assert_int_equal(end, 1767319475ll * S);
	/* Missing members are Go's zero time; wrong ones are errors. */
	fixture_write(sub, SHUTDOWN_STATE_FILE, "{\"startTime\":\"2026-01-02T02:04:05Z\"}");
	assert_int_equal(shutdown_state_load(path, &start, &end), 0);
	assert_int_equal(end, 0);
	fixture_write(sub, SHUTDOWN_STATE_FILE, "{\"startTime\":1767319445}");
	assert_int_equal(shutdown_state_load(path, &start, &end), -EINVAL);
	fixture_write(sub, SHUTDOWN_STATE_FILE, "not json");
	assert_int_equal(shutdown_state_load(path, &start, &end), -EINVAL);
	fixture_rm_rf(dir);
}

/* The manager persists at begin and at the end, and the next start (after the reboot) reports
 * the same times. */
static void test_manager_persists_across_restart(void **state)
{
	static const struct shutdown_plan_group groups[] = { { 0, 20 * S } };
	struct shutdown_plan plan = plan_of(groups, 1);
	struct shutdown_manager m, after;
	char dir[PATH_MAX];
	int64_t start, end;
	bool release;

	fixture_tmpdir(dir, "shutdown");
	make_pod("a", 0, -1);
	manager_with_plan(&m, &plan, dir);
	assert_int_equal(m.start_time_ns, 0);	/* nothing persisted yet */
	assert_int_equal(shutdown_begin(&m, 0, pod_ptrs, n_pool), 0);
	assert_int_equal(shutdown_state_load(m.state_path, &start, &end), 0);
	assert_int_equal(start, fake_wall_ns);
	assert_int_equal(end, 0);
	step_at(&m, 0, &release);
	done(&m, "a", 0);
	fake_wall_ns += 3 * S + 250000000;
	step_at(&m, 3 * S, &release);
	assert_true(release);
	assert_int_equal(shutdown_state_load(m.state_path, &start, &end), 0);
	assert_int_equal(end, fake_wall_ns);

	manager_with_plan(&after, &plan, dir);
	assert_int_equal(after.start_time_ns, start);
	assert_int_equal(after.end_time_ns, end);
	assert_true(shutdown_end_time_seconds(&after) - shutdown_start_time_seconds(&after) > 3.24);
	assert_int_equal(after.phase, SHUTDOWN_IDLE);
	shutdown_destroy(&m);
	shutdown_destroy(&after);
	fixture_rm_rf(dir);
}

/* ---- the logind drop-in ------------------------------------------------------------------------- */

static void test_logind_dropin(void **state)
{
	char dir[PATH_MAX], sub[PATH_MAX], path[PATH_MAX + 64], text[512] = "";
	size_t n;
	FILE *f;

	fixture_tmpdir(dir, "logind");
	PATHF(sub, sizeof(sub), "%s/etc/systemd/logind.conf.d", dir);
	PATHF(path, sizeof(path), "%s/%s", sub, LOGIND_DROPIN_NAME);
	/* 12.3 s: rounded up, logind must wait at least that long */
	assert_int_equal(logind_write_dropin(sub, 12300000000ll), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	assert_non_null(strstr(text, "\n[Login]\nInhibitDelayMaxSec=13\n"));
	assert_int_equal(logind_write_dropin(sub, 30 * S), 0);
	f = fopen(path, "r");
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	assert_non_null(strstr(text, "InhibitDelayMaxSec=30\n"));
	assert_int_equal(count_entries(sub), 1);
	fixture_rm_rf(dir);
}

/* ---- logind over a private bus: nothing waits ----------------------------------------------- */

/* A stand-in for logind on a private dbus-daemon: it owns org.freedesktop.login1 and either
 * never answers (silent) or answers Inhibit with a pipe's fd and InhibitDelayMaxUSec with 60 s. */
struct fake_logind {
	sd_bus *bus;
	bool silent;
	int inhibit_calls;
	int get_calls;
	int lock_read_fd;	/* the other end of the fd handed out */
};

static int fake_logind_filter(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct fake_logind *f = userdata;
	int fds[2];

	if (sd_bus_message_is_method_call(m, "org.freedesktop.login1.Manager", "Inhibit")) {
		f->inhibit_calls++;
		if (f->silent)
			return 1;	/* handled: sd-bus sends no reply of its own */
		assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
		assert_true(sd_bus_reply_method_return(m, "h", fds[1]) >= 0);
		close(fds[1]);
		if (f->lock_read_fd >= 0)
			close(f->lock_read_fd);
		f->lock_read_fd = fds[0];
		return 1;
	}
	if (sd_bus_message_is_method_call(m, "org.freedesktop.DBus.Properties", "Get")) {
		f->get_calls++;
		if (f->silent)
			return 1;
		assert_true(sd_bus_reply_method_return(m, "v", "t", (uint64_t)60000000) >= 0);
		return 1;
	}
	return 0;
}

static bool prepare_seen;
static void on_prepare(void *ctx, bool start)
{
	prepare_seen = start;
}

/* Run both sides for up to ms, or until done(l) is true; no logind_process() may wait for
 * logind's answer (the bound is the 300 ms call timeout a blocking call would wait out). */
static void run_bus(struct logind *l, struct fake_logind *f, int ms, bool (*done)(struct logind *l))
{
	int64_t end = (int64_t)ms * 1000000;
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		struct pollfd pfds[2] = {
			{ .fd = logind_fd(l), .events = POLLIN },
			{ .fd = sd_bus_get_fd(f->bus), .events = POLLIN },
		};
		int64_t elapsed;

		clock_gettime(CLOCK_MONOTONIC, &now);
		elapsed = (now.tv_sec - start.tv_sec) * S + (now.tv_nsec - start.tv_nsec);
		if (elapsed >= end || (done && done(l)))
			return;
		poll(pfds, 2, 20);
		while (sd_bus_process(f->bus, NULL) > 0)
			;
		if (pfds[0].revents & POLLIN) {
			struct timespec a, b;

			clock_gettime(CLOCK_MONOTONIC, &a);
			assert_int_equal(logind_process(l), 0);
			clock_gettime(CLOCK_MONOTONIC, &b);
			assert_true((b.tv_sec - a.tv_sec) * S + (b.tv_nsec - a.tv_nsec) < 300000000);
		}
	}
}

static bool holds_lock_and_delay(struct logind *l)
{
	return logind_holds_lock(l) && logind_inhibit_delay_max_ns(l) >= 0;
}

static bool saw_prepare(struct logind *l)
{
	return prepare_seen;
}

static void test_logind_never_blocks(void **state)
{
	char dir[PATH_MAX], conf[PATH_MAX + 16], sock[PATH_MAX + 16], address[PATH_MAX + 32];
	struct fake_logind f = { .silent = true, .lock_read_fd = -1 };
	struct logind *l;
	pid_t daemon_pid;
	int r;

	if (access("/usr/bin/dbus-daemon", X_OK))
		skip();
	fixture_tmpdir(dir, "logind-bus");
	PATHF(sock, sizeof(sock), "%s/bus", dir);
	PATHF(address, sizeof(address), "unix:path=%s", sock);
	fixture_write(dir, "bus.conf",
		      "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
		      " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
		      "<busconfig><type>session</type><listen>%s</listen><auth>EXTERNAL</auth>"
		      "<policy context=\"default\"><allow send_destination=\"*\" eavesdrop=\"true\"/>"
		      "<allow eavesdrop=\"true\"/><allow own=\"*\"/><allow user=\"*\"/></policy></busconfig>\n",
		      address);
	PATHF(conf, sizeof(conf), "--config-file=%s/bus.conf", dir);
	daemon_pid = fork();
	assert_true(daemon_pid >= 0);
	if (daemon_pid == 0) {
		execl("/usr/bin/dbus-daemon", "dbus-daemon", conf, "--nofork", "--nopidfile", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200 && access(sock, F_OK); i++)
		usleep(10000);
	assert_int_equal(access(sock, F_OK), 0);

	assert_true(sd_bus_new(&f.bus) >= 0);
	assert_true(sd_bus_set_address(f.bus, address) >= 0);
	assert_true(sd_bus_set_bus_client(f.bus, 1) >= 0);
	assert_true(sd_bus_start(f.bus) >= 0);
	assert_true(sd_bus_request_name(f.bus, "org.freedesktop.login1", 0) >= 0);
	assert_true(sd_bus_add_filter(f.bus, NULL, fake_logind_filter, &f) >= 0);

	/* logind takes the call and never answers: open returns at once, the call times out in
	 * the background (300 ms here), and the lock is asked for again a second later. */
	r = logind_open(&l, &(struct logind_options){
		.inhibit_delay_ns = 30 * S,
		.dropin_dir = dir,
		.bus_address = address,
		.call_timeout_ns = 300000000,
		.prepare_for_shutdown = on_prepare,
	});
	assert_int_equal(r, 0);
	assert_true(logind_connected(l));
	assert_false(logind_holds_lock(l));
	/* It did not wait for the answer (nor for the 300 ms timeout): the call is still pending. */
	assert_true(logind_call_pending(l));
	/* The call's timeout is one of the deadlines logind_fd() wakes up for. */
	assert_true(logind_timeout_ns(l) != INT64_MAX);
	run_bus(l, &f, 1800, NULL);
	assert_true(f.inhibit_calls >= 2);
	assert_false(logind_holds_lock(l));
	assert_true(logind_connected(l));
	assert_int_equal(logind_inhibit_delay_max_ns(l), -1);

	/* logind answers now: the lock, then the delay read, both through logind_process(). */
	f.silent = false;
	run_bus(l, &f, 4000, holds_lock_and_delay);
	assert_true(logind_holds_lock(l));
	assert_int_equal(logind_inhibit_delay_max_ns(l), 60 * S);
	assert_true(f.get_calls >= 1);

	/* The signal subscription (added asynchronously) works. */
	assert_true(sd_bus_emit_signal(f.bus, "/org/freedesktop/login1", "org.freedesktop.login1.Manager",
				       "PrepareForShutdown", "b", 1) >= 0);
	run_bus(l, &f, 3000, saw_prepare);
	assert_true(prepare_seen);

	/* Releasing closes our copy of the fd: logind sees its end hang up. */
	assert_int_equal(logind_release(l), 0);
	assert_false(logind_holds_lock(l));
	{
		struct pollfd pfd = { .fd = f.lock_read_fd, .events = POLLIN };

		assert_int_equal(poll(&pfd, 1, 1000), 1);
		assert_true(pfd.revents & (POLLHUP | POLLIN));
	}
	logind_close(l);
	close(f.lock_read_fd);
	sd_bus_flush_close_unref(f.bus);
	kill(daemon_pid, SIGTERM);
	waitpid(daemon_pid, NULL, 0);
	fixture_rm_rf(dir);
}

/* Only a power-off or halt may take the out-of-service taint: the names systemd gives the
 * shutdown (PrepareForShutdownWithMetadata's "type", the targets logind starts). */
static void test_shutdown_kind_names(void **state)
{
	assert_int_equal(logind_kind_from_type("poweroff"), LOGIND_SHUTDOWN_POWEROFF);
	assert_int_equal(logind_kind_from_type("halt"), LOGIND_SHUTDOWN_POWEROFF);
	assert_int_equal(logind_kind_from_type("reboot"), LOGIND_SHUTDOWN_REBOOT);
	assert_int_equal(logind_kind_from_type("kexec"), LOGIND_SHUTDOWN_REBOOT);
	assert_int_equal(logind_kind_from_type("soft-reboot"), LOGIND_SHUTDOWN_REBOOT);
	assert_int_equal(logind_kind_from_type("suspend"), LOGIND_SHUTDOWN_UNKNOWN);
	assert_int_equal(logind_kind_from_type(""), LOGIND_SHUTDOWN_UNKNOWN);
	assert_int_equal(logind_kind_from_type(NULL), LOGIND_SHUTDOWN_UNKNOWN);
	assert_int_equal(logind_kind_from_unit("poweroff.target"), LOGIND_SHUTDOWN_POWEROFF);
	assert_int_equal(logind_kind_from_unit("halt.target"), LOGIND_SHUTDOWN_POWEROFF);
	assert_int_equal(logind_kind_from_unit("reboot.target"), LOGIND_SHUTDOWN_REBOOT);
	assert_int_equal(logind_kind_from_unit("kexec.target"), LOGIND_SHUTDOWN_REBOOT);
	assert_int_equal(logind_kind_from_unit("shutdown.target"), LOGIND_SHUTDOWN_UNKNOWN);
	assert_int_equal(logind_kind_from_unit("poweroff.service"), LOGIND_SHUTDOWN_UNKNOWN);
	assert_string_equal(logind_kind_name(LOGIND_SHUTDOWN_POWEROFF), "power-off");
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup(fn, reset)
	const struct CMUnitTest tests[] = {
		T(test_migrate_config),
		T(test_plan_seed_two_periods),
		T(test_plan_seed_priority_table),
		T(test_plan_seed_reduced_table),
		T(test_group_by_priority_kubelet),
		T(test_pod_grace),
		T(test_sequence_groups),
		T(test_sequence_timeouts),
		T(test_sequence_nothing_to_wait_for),
		T(test_sequence_zero_period),
		T(test_sequence_cancel),
		T(test_time_format_and_parse),
		T(test_state_round_trip),
		T(test_manager_persists_across_restart),
		T(test_logind_dropin),
		T(test_logind_never_blocks),
		T(test_shutdown_kind_names),
	};

	return cmocka_run_group_tests_name("shutdown", tests, NULL, NULL);
}
