// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The eviction manager's state machine, walked through time (DESIGN.md §2, §3; the kubelet's
 * eviction_manager.go synchronize and helpers.go). Times are seconds on an injected clock. */
#include "testutil.h"

#include <errno.h>

#include "core/thresholds.h"

#define S(x) ((int64_t)(x) * 1000000000LL)
#define MI(x) ((int64_t)(x) << 20)

static struct threshold make_threshold(enum ev_signal signal, bool hard, const char *value,
				       int64_t grace_ns, const char *min_reclaim)
{
	struct threshold threshold = { .signal = signal, .hard = hard, .grace_period_ns = grace_ns };
	bool disabled;

	assert_int_equal(threshold_value_parse(value, &threshold.value, &disabled), 0);
	assert_false(disabled);
	if (min_reclaim)
		assert_int_equal(threshold_value_parse(min_reclaim, &threshold.min_reclaim, &disabled), 0);
	return threshold;
}

static void observe(struct observations *obs, enum ev_signal signal, int64_t available, int64_t capacity)
{
	obs->signal[signal].present = true;
	obs->signal[signal].available = available;
	obs->signal[signal].capacity = capacity;
}

static void test_value_parse(void **state)
{
	struct threshold_value value;
	bool disabled;

	assert_int_equal(threshold_value_parse("100Mi", &value, &disabled), 0);
	assert_false(value.is_percentage);
	assert_int_equal(value.quantity, MI(100));
	assert_string_equal(value.text, "100Mi");

	assert_int_equal(threshold_value_parse("10%", &value, &disabled), 0);
	assert_true(value.is_percentage);
	assert_true(value.percentage == 0.1f);
	assert_false(disabled);

	assert_int_equal(threshold_value_parse("12.5%", &value, &disabled), 0);
	assert_true(value.percentage == 0.125f);

	/* The kubelet ignores 0% and 100%: no threshold. */
	assert_int_equal(threshold_value_parse("0%", &value, &disabled), 0);
	assert_true(disabled);
	assert_int_equal(threshold_value_parse("100%", &value, &disabled), 0);
	assert_true(disabled);

	assert_int_equal(threshold_value_parse("101%", &value, &disabled), -ERANGE);
	assert_int_equal(threshold_value_parse("-5%", &value, &disabled), -ERANGE);
	assert_int_equal(threshold_value_parse("-1Gi", &value, &disabled), -ERANGE);
	assert_int_equal(threshold_value_parse("%", &value, &disabled), -EINVAL);
	assert_int_equal(threshold_value_parse("abc%", &value, &disabled), -EINVAL);
	assert_int_equal(threshold_value_parse("10 %", &value, &disabled), -EINVAL);
	assert_int_equal(threshold_value_parse("", &value, &disabled), -EINVAL);
	assert_int_equal(threshold_value_parse("1Gb", &value, &disabled), -EINVAL);
}

static void test_percentage_resolves_like_the_kubelet(void **state)
{
	struct threshold_value value;
	bool disabled;

	/* int64(float64(capacity) * float64(float32(10)/100)): float32(0.1) is 0.100000001490116,
	 * so 10% of 10 GiB is 1073741840, 16 bytes more than a tenth. */
	assert_int_equal(threshold_value_parse("10%", &value, &disabled), 0);
	assert_int_equal(threshold_value_resolve(&value, 10LL << 30), 1073741840LL);
	/* 5% of 1,000,000 inodes: float32(0.05) = 0.0500000007450581 -> 50000. */
	assert_int_equal(threshold_value_parse("5%", &value, &disabled), 0);
	assert_int_equal(threshold_value_resolve(&value, 1000000), 50000);
	/* A quantity ignores capacity. */
	assert_int_equal(threshold_value_parse("1Gi", &value, &disabled), 0);
	assert_int_equal(threshold_value_resolve(&value, 1), 1LL << 30);
	/* The OOM guard's cap. */
	assert_int_equal(threshold_value_parse("10%", &value, &disabled), 0);
	value.max_quantity = 1LL << 30;
	assert_int_equal(threshold_value_resolve(&value, 64LL << 30), 1LL << 30);
	assert_int_equal(threshold_value_resolve(&value, 1LL << 30), 107374184LL);
}

static void test_format(void **state)
{
	struct threshold hard = make_threshold(EV_SIGNAL_MEMORY_AVAILABLE, true, "100Mi", 0, NULL);
	struct threshold soft = make_threshold(EV_SIGNAL_MEMORY_AVAILABLE, false, "1.5Gi", S(90), NULL);
	char buf[128];

	assert_true(threshold_format(&hard, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "hard memory.available<100Mi");
	assert_true(threshold_format(&soft, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "soft memory.available<1.5Gi grace=1m30s");
	assert_int_equal(threshold_format(&soft, buf, 8), -ENOSPC);
}

static void test_hard_acts_at_once(void **state)
{
	struct threshold threshold = make_threshold(EV_SIGNAL_MEMORY_AVAILABLE, true, "100Mi", 0, NULL);
	struct eviction_engine engine;
	struct observations obs = { 0 };
	struct evaluation eval;

	assert_int_equal(engine_init(&engine, &threshold, 1, S(300)), 0);
	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, MI(200), MI(1024));
	engine_evaluate(&engine, &obs, S(0), &eval);
	assert_false(eval.met[0]);
	assert_int_equal(eval.act_on, -1);
	assert_false(eval.conditions[EV_CONDITION_MEMORY_PRESSURE]);

	/* Equal is not met: the operator is "<" (threshold > available). */
	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, MI(100), MI(1024));
	engine_evaluate(&engine, &obs, S(1), &eval);
	assert_false(eval.met[0]);

	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, MI(100) - 1, MI(1024));
	engine_evaluate(&engine, &obs, S(2), &eval);
	assert_true(eval.met[0]);
	assert_true(eval.actionable[0]);
	assert_int_equal(eval.act_on, 0);
	assert_int_equal(eval.threshold_value[0], MI(100));
	assert_true(eval.conditions[EV_CONDITION_MEMORY_PRESSURE]);
	assert_false(eval.conditions[EV_CONDITION_DISK_PRESSURE]);
}

static void test_soft_waits_for_its_grace_period(void **state)
{
	struct threshold threshold = make_threshold(EV_SIGNAL_MEMORY_AVAILABLE, false, "1Gi", S(90), NULL);
	struct eviction_engine engine;
	struct observations obs = { 0 };
	struct evaluation eval;

	engine_init(&engine, &threshold, 1, S(300));
	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, MI(900), MI(4096));
	engine_evaluate(&engine, &obs, S(10), &eval);
	/* Met, so the condition is true at once, whatever the grace period (DESIGN.md §3)... */
	assert_true(eval.met[0]);
	assert_true(eval.conditions[EV_CONDITION_MEMORY_PRESSURE]);
	/* ...but no action before 90 s have passed. */
	assert_false(eval.actionable[0]);
	assert_int_equal(eval.act_on, -1);
	engine_evaluate(&engine, &obs, S(99), &eval);
	assert_false(eval.actionable[0]);
	engine_evaluate(&engine, &obs, S(100), &eval);
	assert_true(eval.actionable[0]);
	assert_int_equal(eval.act_on, 0);
}

/* A reload (SIGHUP) builds a new engine: the same soft threshold keeps its first observation,
 * so reloads every 200 ms cannot postpone it for ever; a changed one starts afresh. */
static void test_reload_keeps_the_grace_period(void **state)
{
	struct threshold soft = make_threshold(EV_SIGNAL_MEMORY_AVAILABLE, false, "1Gi", S(90), NULL);
	struct threshold other = make_threshold(EV_SIGNAL_MEMORY_AVAILABLE, false, "2Gi", S(90), NULL);
	struct eviction_engine running, reloaded, changed;
	struct observations obs = { 0 };
	struct evaluation eval;

	engine_init(&running, &soft, 1, S(300));
	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, MI(900), MI(4096));
	engine_evaluate(&running, &obs, S(10), &eval);
	for (int t = 11; t < 100; t++) {	/* a reload every second */
		engine_init(&reloaded, &soft, 1, S(300));
		engine_carry_state(&reloaded, &running);
		running = reloaded;
		engine_evaluate(&running, &obs, S(t), &eval);
	}
	assert_false(eval.actionable[0]);
	engine_evaluate(&running, &obs, S(100), &eval);
	assert_true(eval.actionable[0]);
	/* The node's MemoryPressure transition is carried too. */
	assert_true(running.state.condition_last_observed_ns[EV_CONDITION_MEMORY_PRESSURE] >= 0);
	engine_init(&changed, &other, 1, S(300));
	engine_carry_state(&changed, &running);
	assert_int_equal(changed.state.first_observed_ns[0], -1);
	assert_int_equal(changed.state.condition_last_observed_ns[EV_CONDITION_MEMORY_PRESSURE],
			 running.state.condition_last_observed_ns[EV_CONDITION_MEMORY_PRESSURE]);
	engine_evaluate(&changed, &obs, S(101), &eval);
	assert_false(eval.actionable[0]);
}

static void test_soft_oscillation_restarts_the_grace_period(void **state)
{
	struct threshold threshold = make_threshold(EV_SIGNAL_MEMORY_AVAILABLE, false, "1Gi", S(60), NULL);
	struct eviction_engine engine;
	struct observations obs = { 0 };
	struct evaluation eval;

	engine_init(&engine, &threshold, 1, S(300));
	for (int t = 0; t <= 50; t += 10) {	/* below, above, below, ... never 60 s in a row */
		observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, (t / 10) % 2 ? MI(2048) : MI(512), MI(4096));
		engine_evaluate(&engine, &obs, S(t), &eval);
		assert_false(eval.actionable[0]);
		/* The condition does not flap: it holds through the transition period. */
		assert_true(eval.conditions[EV_CONDITION_MEMORY_PRESSURE]);
	}
	/* t=50 was above; below again from t=60, so the 60 s count starts there. */
	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, MI(512), MI(4096));
	engine_evaluate(&engine, &obs, S(60), &eval);
	engine_evaluate(&engine, &obs, S(119), &eval);
	assert_false(eval.actionable[0]);
	engine_evaluate(&engine, &obs, S(120), &eval);
	assert_true(eval.actionable[0]);
}

static void test_pressure_transition_period(void **state)
{
	struct threshold threshold = make_threshold(EV_SIGNAL_PID_AVAILABLE, true, "1000", 0, NULL);
	struct eviction_engine engine;
	struct observations obs = { 0 };
	struct evaluation eval;

	engine_init(&engine, &threshold, 1, S(300));
	observe(&obs, EV_SIGNAL_PID_AVAILABLE, 500, 32768);
	engine_evaluate(&engine, &obs, S(0), &eval);
	assert_true(eval.conditions[EV_CONDITION_PID_PRESSURE]);

	observe(&obs, EV_SIGNAL_PID_AVAILABLE, 30000, 32768);
	engine_evaluate(&engine, &obs, S(10), &eval);
	assert_false(eval.met[0]);
	assert_int_equal(eval.act_on, -1);
	/* Still reported: last observed at 0, within 5 minutes. */
	assert_true(eval.conditions[EV_CONDITION_PID_PRESSURE]);
	engine_evaluate(&engine, &obs, S(299), &eval);
	assert_true(eval.conditions[EV_CONDITION_PID_PRESSURE]);
	engine_evaluate(&engine, &obs, S(300), &eval);
	assert_false(eval.conditions[EV_CONDITION_PID_PRESSURE]);

	/* A new crossing restarts the window from its own time. */
	observe(&obs, EV_SIGNAL_PID_AVAILABLE, 10, 32768);
	engine_evaluate(&engine, &obs, S(400), &eval);
	observe(&obs, EV_SIGNAL_PID_AVAILABLE, 30000, 32768);
	engine_evaluate(&engine, &obs, S(699), &eval);
	assert_true(eval.conditions[EV_CONDITION_PID_PRESSURE]);
	engine_evaluate(&engine, &obs, S(700), &eval);
	assert_false(eval.conditions[EV_CONDITION_PID_PRESSURE]);
}

static void test_zero_transition_period_reports_only_while_met(void **state)
{
	struct threshold threshold = make_threshold(EV_SIGNAL_MEMORY_AVAILABLE, true, "100Mi", 0, NULL);
	struct eviction_engine engine;
	struct observations obs = { 0 };
	struct evaluation eval;

	engine_init(&engine, &threshold, 1, 0);
	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, MI(50), MI(1024));
	engine_evaluate(&engine, &obs, S(0), &eval);
	assert_true(eval.conditions[EV_CONDITION_MEMORY_PRESSURE]);
	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, MI(500), MI(1024));
	engine_evaluate(&engine, &obs, S(0) + 1, &eval);
	assert_false(eval.conditions[EV_CONDITION_MEMORY_PRESSURE]);
}

/* Seed example: nodefs.available<1Gi with minimum reclaim 500Mi keeps reclaiming until the
 * signal reaches 1Gi + 500Mi (the seed rounds it to "1.5GiB"). */
static void test_minimum_reclaim_keeps_reclaiming(void **state)
{
	struct threshold threshold = make_threshold(EV_SIGNAL_NODEFS_AVAILABLE, true, "1Gi", 0, "500Mi");
	struct eviction_engine engine;
	struct observations obs = { 0 };
	struct evaluation eval;

	engine_init(&engine, &threshold, 1, S(300));
	/* Between 1Gi and 1.5Gi before any crossing: not met (min reclaim is not a threshold). */
	observe(&obs, EV_SIGNAL_NODEFS_AVAILABLE, MI(1200), 100LL << 30);
	engine_evaluate(&engine, &obs, S(0), &eval);
	assert_false(eval.met[0]);

	observe(&obs, EV_SIGNAL_NODEFS_AVAILABLE, MI(900), 100LL << 30);
	engine_evaluate(&engine, &obs, S(10), &eval);
	assert_true(eval.actionable[0]);
	/* Back above 1Gi but below 1.5Gi: keep going. */
	observe(&obs, EV_SIGNAL_NODEFS_AVAILABLE, MI(1200), 100LL << 30);
	engine_evaluate(&engine, &obs, S(20), &eval);
	assert_true(eval.met[0]);
	assert_true(eval.actionable[0]);
	assert_int_equal(eval.act_on, 0);
	assert_int_equal(engine_reclaim_target(&engine, 0, &obs), MI(1524));
	/* One byte short of 1Gi + 500Mi: still met; exactly at it: resolved (> is strict). */
	observe(&obs, EV_SIGNAL_NODEFS_AVAILABLE, MI(1524) - 1, 100LL << 30);
	engine_evaluate(&engine, &obs, S(25), &eval);
	assert_true(eval.met[0]);
	observe(&obs, EV_SIGNAL_NODEFS_AVAILABLE, MI(1524), 100LL << 30);
	engine_evaluate(&engine, &obs, S(30), &eval);
	assert_false(eval.met[0]);
	/* Once resolved, the band no longer counts. */
	observe(&obs, EV_SIGNAL_NODEFS_AVAILABLE, MI(1200), 100LL << 30);
	engine_evaluate(&engine, &obs, S(40), &eval);
	assert_false(eval.met[0]);
}

/* m.thresholdsMet holds only thresholds past their grace: a soft threshold still inside its
 * grace period gets no min-reclaim band. */
static void test_minimum_reclaim_needs_a_prior_action(void **state)
{
	struct threshold threshold = make_threshold(EV_SIGNAL_MEMORY_AVAILABLE, false, "1Gi", S(60), "1Gi");
	struct eviction_engine engine;
	struct observations obs = { 0 };
	struct evaluation eval;

	engine_init(&engine, &threshold, 1, S(300));
	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, MI(900), 16LL << 30);
	engine_evaluate(&engine, &obs, S(0), &eval);
	assert_false(eval.actionable[0]);
	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, MI(1500), 16LL << 30);
	engine_evaluate(&engine, &obs, S(30), &eval);
	assert_false(eval.met[0]);
}

static void test_memory_is_reclaimed_first(void **state)
{
	struct threshold thresholds[] = {
		make_threshold(EV_SIGNAL_NODEFS_AVAILABLE, true, "10%", 0, NULL),
		make_threshold(EV_SIGNAL_PID_AVAILABLE, true, "100", 0, NULL),
		make_threshold(EV_SIGNAL_MEMORY_AVAILABLE, true, "100Mi", 0, NULL),
	};
	struct eviction_engine engine;
	struct observations obs = { 0 };
	struct evaluation eval;

	engine_init(&engine, thresholds, 3, S(300));
	assert_int_equal(engine.thresholds[0].signal, EV_SIGNAL_MEMORY_AVAILABLE);
	assert_int_equal(engine.thresholds[1].signal, EV_SIGNAL_NODEFS_AVAILABLE);
	assert_int_equal(engine.thresholds[2].signal, EV_SIGNAL_PID_AVAILABLE);

	observe(&obs, EV_SIGNAL_NODEFS_AVAILABLE, 1, 1000);
	observe(&obs, EV_SIGNAL_PID_AVAILABLE, 5, 32768);
	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, MI(500), MI(1024));
	engine_evaluate(&engine, &obs, S(0), &eval);
	assert_int_equal(eval.act_on, 1);	/* nodefs before pid: config order */
	assert_true(eval.conditions[EV_CONDITION_DISK_PRESSURE]);
	assert_true(eval.conditions[EV_CONDITION_PID_PRESSURE]);
	assert_false(eval.conditions[EV_CONDITION_MEMORY_PRESSURE]);

	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, MI(50), MI(1024));
	engine_evaluate(&engine, &obs, S(1), &eval);
	assert_int_equal(eval.act_on, 0);
}

static void test_missing_observation_is_not_met(void **state)
{
	struct threshold threshold = make_threshold(EV_SIGNAL_IMAGEFS_INODES_FREE, true, "5%", 0, NULL);
	struct eviction_engine engine;
	struct observations obs = { 0 };
	struct evaluation eval;

	engine_init(&engine, &threshold, 1, S(300));
	engine_evaluate(&engine, &obs, S(0), &eval);
	assert_false(eval.met[0]);
	assert_false(eval.conditions[EV_CONDITION_DISK_PRESSURE]);
}

static void test_every_disk_signal_maps_to_disk_pressure(void **state)
{
	static const enum ev_signal disk[] = {
		EV_SIGNAL_NODEFS_AVAILABLE, EV_SIGNAL_NODEFS_INODES_FREE, EV_SIGNAL_IMAGEFS_AVAILABLE,
		EV_SIGNAL_IMAGEFS_INODES_FREE, EV_SIGNAL_CONTAINERFS_AVAILABLE,
		EV_SIGNAL_CONTAINERFS_INODES_FREE,
	};

	for (size_t i = 0; i < sizeof(disk) / sizeof(disk[0]); i++) {
		struct threshold threshold = make_threshold(disk[i], true, "5%", 0, NULL);
		struct eviction_engine engine;
		struct observations obs = { 0 };
		struct evaluation eval;

		engine_init(&engine, &threshold, 1, S(300));
		observe(&obs, disk[i], 1, 1000);
		engine_evaluate(&engine, &obs, S(0), &eval);
		assert_true(eval.conditions[EV_CONDITION_DISK_PRESSURE]);
		assert_false(eval.conditions[EV_CONDITION_MEMORY_PRESSURE]);
		assert_false(eval.conditions[EV_CONDITION_PID_PRESSURE]);
	}
}

static void test_oom_guard_acts_without_a_condition(void **state)
{
	struct threshold thresholds[] = {
		make_threshold(EV_SIGNAL_MEMORY_AVAILABLE, true, "100Mi", 0, NULL),
		make_threshold(EV_SIGNAL_OOM_GUARD, true, "10%", 0, NULL),
	};
	struct eviction_engine engine;
	struct observations obs = { 0 };
	struct evaluation eval;

	engine_init(&engine, thresholds, 2, S(300));
	/* The kubelet formula still reads 180Mi while MemAvailable is at 60Mi of 1Gi. */
	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, MI(180), MI(1024));
	observe(&obs, EV_SIGNAL_OOM_GUARD, MI(60), MI(1024));
	engine_evaluate(&engine, &obs, S(0), &eval);
	assert_false(eval.met[0]);
	assert_true(eval.actionable[1]);
	assert_int_equal(eval.act_on, 1);
	assert_int_equal(engine.thresholds[eval.act_on].signal, EV_SIGNAL_OOM_GUARD);
	assert_false(eval.conditions[EV_CONDITION_MEMORY_PRESSURE]);
}

static void test_init_rejects_too_many(void **state)
{
	struct threshold thresholds[EV_MAX_THRESHOLDS + 1] = { 0 };
	struct eviction_engine engine;

	assert_int_equal(engine_init(&engine, thresholds, EV_MAX_THRESHOLDS + 1, 0), -E2BIG);
}

/* Extreme accepted values saturate instead of wrapping (UBSan in the -san build aborts on
 * signed overflow): evictionMinimumReclaim=7Ei on top of a 7Ei threshold. */
static void test_extreme_minimum_reclaim_saturates(void **state)
{
	struct threshold threshold = make_threshold(EV_SIGNAL_MEMORY_AVAILABLE, true, "7Ei", 0, "7Ei");
	struct eviction_engine engine;
	struct observations obs = { 0 };
	struct evaluation eval;

	engine_init(&engine, &threshold, 1, S(300));
	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, 0, INT64_MAX);
	engine_evaluate(&engine, &obs, S(0), &eval);
	assert_true(eval.actionable[0]);
	assert_int_equal(engine_reclaim_target(&engine, 0, &obs), INT64_MAX);
	/* Above the threshold but within threshold + min reclaim (saturated): still met. */
	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, INT64_MAX - 1, INT64_MAX);
	engine_evaluate(&engine, &obs, S(10), &eval);
	assert_true(eval.met[0]);
	assert_int_equal(eval.threshold_value[0], 7LL << 60);
}

static void test_full_percentage_of_the_largest_capacity(void **state)
{
	struct threshold_value all = { .is_percentage = true, .percentage = 1.0f };
	struct threshold threshold = make_threshold(EV_SIGNAL_NODEFS_AVAILABLE, true, "50%", 0, NULL);
	struct eviction_engine engine;
	struct observations obs = { 0 };

	/* float64(2^63 - 1) * 1.0 is 2^63, which no int64 holds: clamp. */
	assert_int_equal(threshold_value_resolve(&all, INT64_MAX), INT64_MAX);
	assert_int_equal(threshold_value_resolve(&all, INT64_MIN), INT64_MIN);
	threshold.min_reclaim = all;
	engine_init(&engine, &threshold, 1, 0);
	observe(&obs, EV_SIGNAL_NODEFS_AVAILABLE, 0, INT64_MAX);
	assert_int_equal(engine_reclaim_target(&engine, 0, &obs), INT64_MAX);
}

/* A grace period and a transition period of the longest duration, on a clock near its end. */
static void test_longest_periods_do_not_wrap(void **state)
{
	struct threshold threshold = make_threshold(EV_SIGNAL_MEMORY_AVAILABLE, false, "1Gi",
						    INT64_MAX, NULL);
	struct eviction_engine engine;
	struct observations obs = { 0 };
	struct evaluation eval;

	engine_init(&engine, &threshold, 1, INT64_MAX);
	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, MI(1), 1LL << 40);
	engine_evaluate(&engine, &obs, INT64_MAX - S(10), &eval);
	assert_true(eval.met[0]);
	assert_false(eval.actionable[0]);
	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, 1LL << 39, 1LL << 40);
	engine_evaluate(&engine, &obs, INT64_MAX, &eval);
	assert_true(eval.conditions[EV_CONDITION_MEMORY_PRESSURE]);
	/* now - last below INT64_MIN would wrap to a large positive age and drop the
	 * condition; saturated, the age stays negative and the condition holds. */
	engine_init(&engine, &threshold, 1, S(300));
	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, MI(1), 1LL << 40);
	engine_evaluate(&engine, &obs, INT64_MAX, &eval);
	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, 1LL << 39, 1LL << 40);
	engine_evaluate(&engine, &obs, -S(1), &eval);
	assert_true(eval.conditions[EV_CONDITION_MEMORY_PRESSURE]);
}

/* The grace of an eviction: evictd's default kills a hard eviction at once and gives a soft
 * one min(terminationGracePeriodSeconds, evictionMaxPodGracePeriod), even 0; with the
 * kubelet's 1 s (immediateEvictionGracePeriodSeconds, the pod workers' floor) hard gets 1 s and
 * soft at least 1 s. */
static void test_eviction_grace(void **state)
{
	const int64_t second = 1000000000LL;

	assert_int_equal(eviction_grace_ns(true, 30 * second, 0), 0);
	assert_int_equal(eviction_grace_ns(false, 0, 0), 0);
	assert_int_equal(eviction_grace_ns(false, 30 * second, 0), 30 * second);
	assert_int_equal(eviction_grace_ns(true, 30 * second, second), second);
	assert_int_equal(eviction_grace_ns(false, 0, second), second);
	assert_int_equal(eviction_grace_ns(false, 30 * second, second), 30 * second);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_value_parse),
		cmocka_unit_test(test_percentage_resolves_like_the_kubelet),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_hard_acts_at_once),
		cmocka_unit_test(test_soft_waits_for_its_grace_period),
		cmocka_unit_test(test_reload_keeps_the_grace_period),
		cmocka_unit_test(test_soft_oscillation_restarts_the_grace_period),
		cmocka_unit_test(test_pressure_transition_period),
		cmocka_unit_test(test_zero_transition_period_reports_only_while_met),
		cmocka_unit_test(test_minimum_reclaim_keeps_reclaiming),
		cmocka_unit_test(test_minimum_reclaim_needs_a_prior_action),
		cmocka_unit_test(test_memory_is_reclaimed_first),
		cmocka_unit_test(test_missing_observation_is_not_met),
		cmocka_unit_test(test_every_disk_signal_maps_to_disk_pressure),
		cmocka_unit_test(test_oom_guard_acts_without_a_condition),
		cmocka_unit_test(test_init_rejects_too_many),
		cmocka_unit_test(test_extreme_minimum_reclaim_saturates),
		cmocka_unit_test(test_full_percentage_of_the_largest_capacity),
		cmocka_unit_test(test_longest_periods_do_not_wrap),
		cmocka_unit_test(test_eviction_grace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
