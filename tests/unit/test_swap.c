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
	struct swap_room room = { 0 };

	assert_int_equal(signals_read_swap_meminfo(HOST_ZRAM, &room), 0);
	assert_int_equal(room.swap_total, 4194300LL * 1024);
	assert_int_equal(room.swap_free, 3145724LL * 1024);
	assert_int_equal(room.mem_available, 2874512LL * 1024);
	/* node-v2 has no swap: 0 of 0, not an error. */
	assert_int_equal(signals_read_swap_meminfo(FIXTURES_DIR "/node-v2", &room), 0);
	assert_int_equal(room.swap_total, 0);
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
	struct swap_room room = { 0 };

	assert_int_equal(signals_read_zram(HOST_ZRAM, &room), 0);
	assert_int_equal(room.zram_devices, 2);	/* sda is no zram device */
	/* zram0: 2 GiB disksize - 272 MiB used; zram1: 144 MiB limit - 136 MiB used. */
	assert_int_equal(room.zram_room, GI(2) - MI(272) + MI(8));
	assert_int_equal(room.zram_limit, GI(2) + MI(144));
	assert_int_equal(room.zram_orig, GI(1) + MI(512));
	assert_int_equal(room.zram_compr, MI(256) + MI(128));
	/* No /sys/block at all: no device, no error. */
	assert_int_equal(signals_read_zram(FIXTURES_DIR "/node-v2", &room), 0);
	assert_int_equal(room.zram_devices, 0);
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

static void test_proc_swaps_parse(void **state)
{
	static const char header[] = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";
	char text[512];
	int64_t zram_free;
	unsigned n;

	/* A swap file and a zram device: only the zram area is summed. */
	snprintf(text, sizeof(text), "%s/swapfile file 1048576 0 -2\n"
		 "/dev/zram0 partition 490492 117760 100\n", header);
	assert_int_equal(signals_parse_proc_swaps(text, &zram_free, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(zram_free, (490492LL - 117760) * 1024);
	/* No swap: the header alone. A line cut short by the read buffer is left out. */
	assert_int_equal(signals_parse_proc_swaps(header, &zram_free, &n), 0);
	assert_int_equal(n, 0);
	snprintf(text, sizeof(text), "%s/dev/zram0 partition 490492 117760 100\n/dev/zr", header);
	assert_int_equal(signals_parse_proc_swaps(text, &zram_free, &n), 0);
	assert_int_equal(n, 1);
	snprintf(text, sizeof(text), "%s/dev/zram0 partition lots 0 100\n", header);
	assert_int_equal(signals_parse_proc_swaps(text, &zram_free, &n), -EINVAL);
}

/* The rule on parsed values: zram's free swap counts up to MemAvailable x its ratio. */
static void test_effective_free_rule(void **state)
{
	struct swap_room room = { .swap_total = MI(479), .swap_free = MI(364),
				  .mem_available = MI(8), .zram_swap_free = MI(364), .zram_swaps = 1,
				  .zram_orig = MI(120), .zram_compr = MI(40),
				  .zram_room = MI(429), .zram_limit = MI(479), .zram_devices = 1 };

	/* All swap on zram, ratio 3: 8 MiB of RAM holds 24 MiB of pages. */
	assert_int_equal(signals_swap_effective_free(&room), MI(24));
	assert_int_equal(signals_zram_effective_room(&room), MI(8));
	/* Plenty of RAM: free swap is the limit again. */
	room.mem_available = GI(1);
	assert_int_equal(signals_swap_effective_free(&room), MI(364));
	assert_int_equal(signals_zram_effective_room(&room), MI(429));
	/* No data yet (ratio unknown), or pages that do not compress: ratio 1. */
	room.mem_available = MI(8);
	room.zram_orig = room.zram_compr = 0;
	assert_int_equal(signals_swap_effective_free(&room), MI(8));
	room.zram_orig = MI(10);
	room.zram_compr = MI(12);
	assert_int_equal(signals_swap_effective_free(&room), MI(8));
	/* A swap file next to zram counts whole: 100 of the 364 MiB free are on disk. */
	room.zram_swap_free = MI(264);
	assert_int_equal(signals_swap_effective_free(&room), MI(100) + MI(8));
	/* Swap on disk only, or MemAvailable unknown: SwapFree as it is. */
	room.zram_swaps = 0;
	assert_int_equal(signals_swap_effective_free(&room), MI(364));
	room.zram_swaps = 1;
	room.mem_available = -1;
	assert_int_equal(signals_swap_effective_free(&room), MI(364));
	assert_int_equal(signals_zram_effective_room(&room), MI(429));
	/* A huge ratio does not overflow: all of zram's free swap counts. */
	room.mem_available = INT64_MAX / 2;
	room.zram_orig = INT64_MAX;
	room.zram_compr = 1;
	assert_int_equal(signals_swap_effective_free(&room), MI(100) + MI(264));
}

/* The server profile's gate on a host's own files: the guard, memory.available<100Mi and
 * both swap guards at 10%, MemAvailable as the guard's observation. */
static bool host_profile_acts(const char *root)
{
	static struct eviction_engine engine;
	struct threshold thresholds[] = {
		hard(EV_SIGNAL_MEMORY_AVAILABLE, "100Mi"), hard(EV_SIGNAL_OOM_GUARD, "10%"),
		hard(EV_SIGNAL_SWAP_AVAILABLE, "10%"), hard(EV_SIGNAL_ZRAM_AVAILABLE, "10%"),
	};
	struct signal_source source = { .root = root };
	struct observations obs = { 0 };
	struct swap_room room = { 0 };

	assert_int_equal(engine_init(&engine, thresholds, 4, 0), 0);
	assert_int_equal(signals_read_swap_meminfo(root, &room), 0);
	assert_int_equal(signals_read_swap(&source, &obs), 0);
	observe(&obs, EV_SIGNAL_OOM_GUARD, room.mem_available, 981384LL * 1024);
	observe(&obs, EV_SIGNAL_MEMORY_AVAILABLE, MI(40), 981384LL * 1024);
	return acts(&engine, &obs, 1);
}

/* The race's session leak (bench/results.md "Host race"): MemAvailable 8 MiB with 364 MiB of
 * zram swap free. The old rule (SwapFree >= 10%) held the guard for the whole run; zram's
 * free swap is RAM that is not there, so the gate opens. */
static void test_gate_opens_when_zram_has_no_ram(void **state)
{
	struct signal_source source = { .root = FIXTURES_DIR "/host-zram-leak" };
	struct observations obs = { 0 };

	assert_true(host_profile_acts(FIXTURES_DIR "/host-zram-leak"));
	assert_int_equal(signals_read_swap(&source, &obs), 0);
	/* 8 MiB x 115/45 of zram swap; zram's room is at most the 8 MiB. */
	assert_int_equal(obs.signal[EV_SIGNAL_SWAP_AVAILABLE].available,
			 (int64_t)((double)MI(8) * 120586240 / 47185920));
	assert_int_equal(obs.signal[EV_SIGNAL_ZRAM_AVAILABLE].available, MI(8));
}

/* Decision (DESIGN.md §1 "Swap and zram"): the same numbers with the free swap on a swap file
 * keep the gate shut, PSI or not: a page written to disk frees a whole page, and the kernel
 * does not OOM while it can still swap (mm/vmscan.c can_reclaim_anon_pages). */
static void test_gate_holds_with_disk_swap(void **state)
{
	struct signal_source source = { .root = FIXTURES_DIR "/host-disk-leak" };
	struct observations obs = { 0 };

	assert_int_equal(signals_read_swap(&source, &obs), 0);
	assert_int_equal(obs.signal[EV_SIGNAL_SWAP_AVAILABLE].available, 372732LL * 1024);
	assert_false(obs.signal[EV_SIGNAL_ZRAM_AVAILABLE].present);
	assert_false(host_profile_acts(FIXTURES_DIR "/host-disk-leak"));
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
		cmocka_unit_test(test_proc_swaps_parse),
		cmocka_unit_test(test_effective_free_rule),
		cmocka_unit_test(test_gate_opens_when_zram_has_no_ram),
		cmocka_unit_test(test_gate_holds_with_disk_swap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
