// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Swap and zram (DESIGN.md §1 "Swap and zram"): swap.available from meminfo, zram.available
 * from /sys/block/zram* (tests/fixtures/host-zram), and the swap gate on the memory
 * thresholds in the engine (earlyoom's both-below rule). */
#include "testutil.h"

#include <errno.h>

#include "core/thresholds.h"
#include "signals/signals.h"

#define HOST_ZRAM FIXTURES_DIR "/host-zram"
#define MI(x) ((int64_t)(x) << 20)
#define GI(x) ((int64_t)(x) << 30)

static void test_swap_meminfo(void **state)
{
	int64_t total, free_bytes;

	assert_int_equal(signals_read_swap_meminfo(HOST_ZRAM, &total, &free_bytes), 0);
	assert_int_equal(total, 4194300LL * 1024);
	assert_int_equal(free_bytes, 3145724LL * 1024);
	/* node-v2 has no swap: 0 of 0, not an error. */
	assert_int_equal(signals_read_swap_meminfo(FIXTURES_DIR "/node-v2", &total, &free_bytes), 0);
	assert_int_equal(total, 0);
}

static void test_mm_stat_parse(void **state)
{
	struct zram_device_stat stat = { 0 };

	/* A 6.1 line: nine fields, the first four read. */
	assert_int_equal(signals_parse_zram_mm_stat("1073741824 268435456 285212672        0 "
						    "301989888     1024      512        0        0\n",
						    &stat), 0);
	assert_int_equal(stat.orig_data_size, GI(1));
	assert_int_equal(stat.compr_data_size, MI(256));
	assert_int_equal(stat.mem_used_total, MI(272));
	assert_int_equal(stat.mem_limit, 0);
	/* No mem_limit: held to disksize. With one, to it. */
	stat.disksize = GI(2);
	assert_int_equal(signals_zram_limit(&stat), GI(2));
	stat.mem_limit = MI(144);
	assert_int_equal(signals_zram_limit(&stat), MI(144));
	/* An old 3-field line, or words, is refused. */
	assert_int_equal(signals_parse_zram_mm_stat("1 2 3\n", &stat), -EINVAL);
	assert_int_equal(signals_parse_zram_mm_stat("a b c d\n", &stat), -EINVAL);
	assert_int_equal(signals_parse_zram_mm_stat("99999999999999999999 1 1 1\n", &stat), -ERANGE);
}

static void test_zram_devices_summed(void **state)
{
	int64_t room, limit;
	unsigned n;

	assert_int_equal(signals_read_zram(HOST_ZRAM, &room, &limit, &n), 0);
	assert_int_equal(n, 2);	/* sda is no zram device */
	/* zram0: 2 GiB disksize - 272 MiB used; zram1: 144 MiB limit - 136 MiB used. */
	assert_int_equal(room, GI(2) - MI(272) + MI(8));
	assert_int_equal(limit, GI(2) + MI(144));
	/* No /sys/block at all: no device, no error. */
	assert_int_equal(signals_read_zram(FIXTURES_DIR "/node-v2", &room, &limit, &n), 0);
	assert_int_equal(n, 0);
}

static void test_read_swap_observations(void **state)
{
	struct signal_source source = { .root = HOST_ZRAM };
	struct observations obs = { 0 };

	assert_int_equal(signals_read_swap(&source, &obs), 0);
	assert_true(obs.signal[EV_SIGNAL_SWAP_AVAILABLE].present);
	assert_int_equal(obs.signal[EV_SIGNAL_SWAP_AVAILABLE].available, 3145724LL * 1024);
	assert_int_equal(obs.signal[EV_SIGNAL_SWAP_AVAILABLE].capacity, 4194300LL * 1024);
	assert_true(obs.signal[EV_SIGNAL_ZRAM_AVAILABLE].present);
	assert_int_equal(obs.signal[EV_SIGNAL_ZRAM_AVAILABLE].available, GI(2) - MI(264));
	assert_int_equal(obs.zram_devices, 2);

	source.root = FIXTURES_DIR "/node-v2";
	assert_int_equal(signals_read_swap(&source, &obs), 0);
	assert_false(obs.signal[EV_SIGNAL_SWAP_AVAILABLE].present);
	assert_false(obs.signal[EV_SIGNAL_ZRAM_AVAILABLE].present);
}

static struct threshold hard(enum ev_signal signal, const char *value)
{
	struct threshold threshold = { .signal = signal, .hard = true };
	bool disabled;

	assert_int_equal(threshold_value_parse(value, &threshold.value, &disabled), 0);
	return threshold;
}

static void observe(struct observations *obs, enum ev_signal signal, int64_t available, int64_t capacity)
{
	obs->signal[signal] = (struct observation){ .present = true, .available = available,
						    .capacity = capacity };
}

/* Memory below its thresholds (memory.available and the guard) on an 8 GiB host with 4 GiB of
 * swap on zram. */
static void low_memory(struct observations *obs)
{
	memset(obs, 0, sizeof(*obs));
	observe(obs, EV_SIGNAL_MEMORY_AVAILABLE, MI(50), GI(8));
	observe(obs, EV_SIGNAL_OOM_GUARD, MI(300), GI(8));
}

static bool acts(struct eviction_engine *engine, const struct observations *obs, int64_t now)
{
	struct evaluation eval;

	engine_evaluate(engine, obs, now, &eval);
	return eval.act_on >= 0;
}

/* The zram host: memory is low but zram still has room, so nothing is killed; when swap
 * runs out, or zram reaches its limit whatever SwapFree says, the memory thresholds act. */
static void test_gate_holds_memory_while_swap_has_room(void **state)
{
	static struct eviction_engine engine;
	struct threshold thresholds[] = {
		hard(EV_SIGNAL_MEMORY_AVAILABLE, "100Mi"), hard(EV_SIGNAL_OOM_GUARD, "10%"),
		hard(EV_SIGNAL_SWAP_AVAILABLE, "10%"), hard(EV_SIGNAL_ZRAM_AVAILABLE, "10%"),
	};
	struct observations obs;
	struct evaluation eval;

	assert_int_equal(engine_init(&engine, thresholds, 4, 0), 0);
	low_memory(&obs);
	observe(&obs, EV_SIGNAL_SWAP_AVAILABLE, GI(2), GI(4));
	observe(&obs, EV_SIGNAL_ZRAM_AVAILABLE, GI(1), GI(2));
	engine_evaluate(&engine, &obs, 1, &eval);
	assert_int_equal(eval.act_on, -1);
	assert_false(eval.swap_short);
	assert_false(eval.conditions[EV_CONDITION_MEMORY_PRESSURE]);

	/* Swap exhausted: 300 MiB of 4 GiB free. The first memory threshold acts. */
	observe(&obs, EV_SIGNAL_SWAP_AVAILABLE, MI(300), GI(4));
	engine_evaluate(&engine, &obs, 2, &eval);
	assert_true(eval.swap_short);
	assert_true(eval.act_on >= 0);
	assert_true(signal_meta(engine.thresholds[eval.act_on].signal)->swap_gated);
	assert_true(eval.conditions[EV_CONDITION_MEMORY_PRESSURE]);

	/* SwapFree shows room but zram is at its limit: swap writes fail, so act. */
	observe(&obs, EV_SIGNAL_SWAP_AVAILABLE, GI(2), GI(4));
	observe(&obs, EV_SIGNAL_ZRAM_AVAILABLE, MI(8), MI(144));
	assert_true(acts(&engine, &obs, 3));

	/* No swap on the node: nothing to wait for. */
	low_memory(&obs);
	assert_true(acts(&engine, &obs, 4));

	/* Swap short but memory fine: a gate never acts alone. */
	memset(&obs, 0, sizeof(obs));
	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, GI(4), GI(8));
	observe(&obs, EV_SIGNAL_OOM_GUARD, GI(4), GI(8));
	observe(&obs, EV_SIGNAL_SWAP_AVAILABLE, 0, GI(4));
	engine_evaluate(&engine, &obs, 5, &eval);
	assert_true(eval.swap_short);
	assert_int_equal(eval.act_on, -1);
}

/* Kubernetes mode has no gate: the kubelet's memory.available acts whatever swap holds. */
static void test_no_gate_without_swap_thresholds(void **state)
{
	static struct eviction_engine engine;
	struct threshold thresholds[] = { hard(EV_SIGNAL_MEMORY_AVAILABLE, "100Mi") };
	struct observations obs;

	assert_int_equal(engine_init(&engine, thresholds, 1, 0), 0);
	low_memory(&obs);
	observe(&obs, EV_SIGNAL_SWAP_AVAILABLE, GI(4), GI(4));
	assert_true(acts(&engine, &obs, 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_swap_meminfo),
		cmocka_unit_test(test_mm_stat_parse),
		cmocka_unit_test(test_zram_devices_summed),
		cmocka_unit_test(test_read_swap_observations),
		cmocka_unit_test(test_gate_holds_memory_while_swap_has_room),
		cmocka_unit_test(test_no_gate_without_swap_thresholds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
