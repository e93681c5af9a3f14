// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Victim ranking (user/core/rank.c). The ordering cases are ported from the kubelet's
 * pkg/kubelet/eviction/helpers_test.go (named in each test; its lowPriority/defaultPriority/
 * highPriority are -1/0/1 from eviction_manager_test.go, and its newPodDiskStats(pod, rootfs,
 * logs, perLocalVolume) becomes writable/logs/volumes here), or built from the seeds' own
 * words (quoted). The kubelet tests call a single comparator or a chain of them; here every
 * case goes through rank_pods() with its real key chain, and the expected order is the
 * kubelet's because the cases were chosen so the earlier keys agree with it.
 */
#include "testutil.h"

#include <stdint.h>

#include "core/rank.h"

#define KI 1024LL
#define MI (1024LL * 1024)
#define GI (1024LL * 1024 * 1024)

/* helpers_test.go / eviction_manager_test.go */
#define LOW_PRIORITY (-1)
#define DEFAULT_PRIORITY 0
#define HIGH_PRIORITY 1

#define POOL_SIZE 32

static struct pod pool[POOL_SIZE];
static size_t pool_used;

static int reset_pool(void **state)
{
	memset(pool, 0, sizeof(pool));
	pool_used = 0;
	return 0;
}

static struct pod *new_pod(const char *name, int32_t priority)
{
	struct pod *pod;

	assert_true(pool_used < POOL_SIZE);
	pod = &pool[pool_used++];
	memset(pod, 0, sizeof(*pod));
	snprintf(pod->name, sizeof(pod->name), "%s", name);
	snprintf(pod->uid, sizeof(pod->uid), "%s", name);	/* newPod: name as uid */
	pod->priority = priority;
	pod->qos = POD_QOS_BESTEFFORT;
	pod->termination_grace_period_s = -1;
	return pod;
}

/* newPodMemoryStats + a memory request (0 = none). */
static struct pod *mem_pod(const char *name, int32_t priority, int64_t request, int64_t working_set)
{
	struct pod *pod = new_pod(name, priority);

	pod->memory_request = request;
	pod->memory_working_set = working_set;
	pod->qos = request ? POD_QOS_BURSTABLE : POD_QOS_BESTEFFORT;
	return pod;
}

/* newPodDiskStats(pod, rootFsUsed, logsUsed, perLocalVolumeUsed) + ephemeral-storage request;
 * the kubelet's test pods have one container and one emptyDir. */
static struct pod *disk_pod(const char *name, int32_t priority, int64_t request, int64_t rootfs,
			    int64_t logs, int64_t volume)
{
	struct pod *pod = new_pod(name, priority);

	pod->ephemeral_storage_request = request;
	pod->disk_bytes.writable = rootfs;
	pod->disk_bytes.logs = logs;
	pod->disk_bytes.volumes = volume;
	return pod;
}

/* newPodInodeStats(pod, rootFsInodesUsed, logsInodesUsed, perLocalVolumeInodesUsed) */
static struct pod *inode_pod(const char *name, int32_t priority, int64_t rootfs, int64_t logs,
			     int64_t volume)
{
	struct pod *pod = new_pod(name, priority);

	pod->disk_inodes.writable = rootfs;
	pod->disk_inodes.logs = logs;
	pod->disk_inodes.volumes = volume;
	return pod;
}

/* newPodProcessStats */
static struct pod *pid_pod(const char *name, int32_t priority, int64_t processes)
{
	struct pod *pod = new_pod(name, priority);

	pod->processes = processes;
	return pod;
}

static void assert_order_(struct pod **pods, size_t n, const char *const *expected)
{
	size_t n_expected = 0;
	bool same = true;

	while (expected[n_expected])
		n_expected++;
	assert_int_equal(n, n_expected);
	for (size_t i = 0; i < n; i++)
		same = same && strcmp(pods[i]->name, expected[i]) == 0;
	if (!same) {
		char got[2048] = "";

		for (size_t i = 0; i < n; i++) {
			strncat(got, pods[i]->name, sizeof(got) - strlen(got) - 2);
			strncat(got, " ", sizeof(got) - strlen(got) - 1);
		}
		fail_msg("unexpected order: %s", got);
	}
}

#define ASSERT_ORDER(pods, n, ...) assert_order_((pods), (n), (const char *const[]){ __VA_ARGS__, NULL })
#define N(array) (sizeof(array) / sizeof((array)[0]))

static const struct rank_options single_fs = { .fs_layout = FS_LAYOUT_SINGLE, .daemonset_last = true };
static const struct rank_options split_disk = { .fs_layout = FS_LAYOUT_SPLIT_DISK, .daemonset_last = true };
static const struct rank_options split_image = { .fs_layout = FS_LAYOUT_SPLIT_IMAGE, .daemonset_last = true };

/* ---- helpers_test.go ports ---------------------------------------------------------------- */

/* TestOrderedByExceedsRequestMemory: 101Mi over a 100Mi request beats 199Mi under 200Mi,
 * although the first has the higher priority. */
static void test_kubelet_exceeds_request_memory(void **state)
{
	struct pod *below = mem_pod("below-requests", -1, 200 * MI, 199 * MI);
	struct pod *exceeds = mem_pod("exceeds-requests", 1, 100 * MI, 101 * MI);
	struct pod *pods[] = { below, exceeds };

	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "exceeds-requests", "below-requests");
}

/* TestOrderedByExceedsRequestDisk: rootfs 90Mi + logs 11Mi over a 100Mi ephemeral-storage
 * request beats 100Mi + 99Mi under 200Mi. */
static void test_kubelet_exceeds_request_disk(void **state)
{
	struct pod *below = disk_pod("below-requests", -1, 200 * MI, 100 * MI, 99 * MI, 0);
	struct pod *exceeds = disk_pod("exceeds-requests", 1, 100 * MI, 90 * MI, 11 * MI, 0);
	struct pod *pods[] = { below, exceeds };

	rank_pods(EV_SIGNAL_NODEFS_AVAILABLE, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "exceeds-requests", "below-requests");
}

/* TestOrderedByPriority: low (-134) < medium (1) < high (12534). No pod uses anything, so
 * under memory pressure none exceeds its request and priority decides; under PID pressure
 * priority is the first key. */
static void test_kubelet_priority(void **state)
{
	static const enum ev_signal signals[] = { EV_SIGNAL_MEMORY_AVAILABLE, EV_SIGNAL_PID_AVAILABLE };

	for (size_t s = 0; s < N(signals); s++) {
		struct pod *low, *medium, *high;

		reset_pool(NULL);
		low = mem_pod("low-priority", -134, 0, 0);
		medium = mem_pod("medium-priority", 1, 100 * MI, 0);
		high = mem_pod("high-priority", 12534, 200 * MI, 0);
		high->qos = POD_QOS_GUARANTEED;

		struct pod *pods[] = { high, medium, low };

		rank_pods(signals[s], &single_fs, pods, N(pods));
		ASSERT_ORDER(pods, N(pods), "low-priority", "medium-priority", "high-priority");
	}
}

/* TestOrderedbyDisk: same priority, larger (rootfs + logs + volume) - request first. Every
 * layout and signal that measures all three parts gives the same order. */
static void test_kubelet_orderedby_disk(void **state)
{
	static const struct {
		const struct rank_options *options;
		enum ev_signal signal;
	} cases[] = {
		{ &single_fs, EV_SIGNAL_NODEFS_AVAILABLE },
		{ &single_fs, EV_SIGNAL_IMAGEFS_AVAILABLE },
		{ &single_fs, EV_SIGNAL_CONTAINERFS_AVAILABLE },
		{ &split_image, EV_SIGNAL_NODEFS_AVAILABLE },
		{ &split_image, EV_SIGNAL_CONTAINERFS_AVAILABLE },
	};

	for (size_t c = 0; c < N(cases); c++) {
		reset_pool(NULL);
		struct pod *pods[] = {
			disk_pod("best-effort-high", DEFAULT_PRIORITY, 0, 50 * MI, 100 * MI, 150 * MI),	/* 300 - 0 */
			disk_pod("best-effort-low", DEFAULT_PRIORITY, 0, 25 * MI, 25 * MI, 50 * MI),	/* 100 - 0 */
			disk_pod("burstable-high", DEFAULT_PRIORITY, 100 * MI, 150 * MI, 150 * MI, 50 * MI),	/* 350 - 100 */
			disk_pod("burstable-low", DEFAULT_PRIORITY, 100 * MI, 25 * MI, 35 * MI, 50 * MI),	/* 110 - 100 */
			disk_pod("guaranteed-high", DEFAULT_PRIORITY, 400 * MI, 225 * MI, 100 * MI, 50 * MI),	/* 375 - 400 */
			disk_pod("guaranteed-low", DEFAULT_PRIORITY, 400 * MI, 25 * MI, 45 * MI, 50 * MI),	/* 120 - 400 */
		};

		rank_pods(cases[c].signal, cases[c].options, pods, N(pods));
		ASSERT_ORDER(pods, N(pods), "best-effort-high", "burstable-high", "best-effort-low",
			     "burstable-low", "guaranteed-high", "guaranteed-low");
	}
}

/* TestOrderedbyInodes: same priority, more inodes first. */
static void test_kubelet_orderedby_inodes(void **state)
{
	struct pod *low = inode_pod("low", DEFAULT_PRIORITY, 50000, 100000, 50000);		/* 200000 */
	struct pod *medium = inode_pod("medium", DEFAULT_PRIORITY, 100000, 150000, 50000);	/* 300000 */
	struct pod *high = inode_pod("high", DEFAULT_PRIORITY, 200000, 150000, 50000);		/* 400000 */
	struct pod *pods[] = { low, medium, high };

	rank_pods(EV_SIGNAL_NODEFS_INODES_FREE, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "high", "medium", "low");
}

/* TestOrderedByPriorityDisk: exceeds request, then priority, then usage - request. */
static void test_kubelet_priority_disk(void **state)
{
	struct pod *pod1 = disk_pod("above-requests-low-priority-high-usage", LOW_PRIORITY, 0, 200 * MI, 100 * MI, 200 * MI);
	struct pod *pod2 = disk_pod("above-requests-low-priority-low-usage", LOW_PRIORITY, 0, 10 * MI, 10 * MI, 30 * MI);
	struct pod *pod3 = disk_pod("above-requests-high-priority-high-usage", HIGH_PRIORITY, 100 * MI, 200 * MI, 150 * MI, 250 * MI);
	struct pod *pod4 = disk_pod("above-requests-high-priority-low-usage", HIGH_PRIORITY, 100 * MI, 90 * MI, 50 * MI, 10 * MI);
	struct pod *pod5 = disk_pod("below-requests-low-priority-high-usage", LOW_PRIORITY, GI, 500 * MI, 200 * MI, 100 * MI);
	struct pod *pod6 = disk_pod("below-requests-low-priority-low-usage", LOW_PRIORITY, GI, 50 * MI, 100 * MI, 50 * MI);
	struct pod *pod7 = disk_pod("below-requests-high-priority-high-usage", HIGH_PRIORITY, GI, 250 * MI, 500 * MI, 50 * MI);
	struct pod *pod8 = disk_pod("below-requests-high-priority-low-usage", HIGH_PRIORITY, GI, 100 * MI, 60 * MI, 40 * MI);
	struct pod *pods[] = { pod8, pod7, pod6, pod5, pod4, pod3, pod2, pod1 };

	rank_pods(EV_SIGNAL_NODEFS_AVAILABLE, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), pod1->name, pod2->name, pod3->name, pod4->name, pod5->name,
		     pod6->name, pod7->name, pod8->name);
}

/* TestOrderedByPriorityInodes: priority, then more inodes. */
static void test_kubelet_priority_inodes(void **state)
{
	struct pod *pod1 = inode_pod("low-priority-high-usage", LOW_PRIORITY, 50000, 100000, 250000);
	struct pod *pod2 = inode_pod("low-priority-low-usage", LOW_PRIORITY, 60000, 30000, 10000);
	struct pod *pod3 = inode_pod("high-priority-high-usage", HIGH_PRIORITY, 150000, 150000, 50000);
	struct pod *pod4 = inode_pod("high-priority-low-usage", HIGH_PRIORITY, 10000, 40000, 100000);
	struct pod *pods[] = { pod4, pod3, pod2, pod1 };

	rank_pods(EV_SIGNAL_NODEFS_INODES_FREE, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), pod1->name, pod2->name, pod3->name, pod4->name);
}

/* TestOrderedByMemory: larger working set - request first. */
static void test_kubelet_orderedby_memory(void **state)
{
	struct pod *pod1 = mem_pod("best-effort-high", DEFAULT_PRIORITY, 0, 500 * MI);		/* 500 */
	struct pod *pod2 = mem_pod("best-effort-low", DEFAULT_PRIORITY, 0, 300 * MI);		/* 300 */
	struct pod *pod3 = mem_pod("burstable-high", DEFAULT_PRIORITY, 100 * MI, 800 * MI);	/* 700 */
	struct pod *pod4 = mem_pod("burstable-low", DEFAULT_PRIORITY, 100 * MI, 300 * MI);	/* 200 */
	struct pod *pod5 = mem_pod("guaranteed-high", DEFAULT_PRIORITY, GI, 800 * MI);		/* -224 */
	struct pod *pod6 = mem_pod("guaranteed-low", DEFAULT_PRIORITY, GI, 200 * MI);		/* -824 */
	struct pod *pods[] = { pod1, pod2, pod3, pod4, pod5, pod6 };

	pod5->qos = pod6->qos = POD_QOS_GUARANTEED;
	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "burstable-high", "best-effort-high", "best-effort-low",
		     "burstable-low", "guaranteed-high", "guaranteed-low");
}

/* TestOrderedByPriorityMemory: exceeds request, then priority, then working set - request. */
static void test_kubelet_priority_memory(void **state)
{
	struct pod *pod1 = mem_pod("above-requests-low-priority-high-usage", LOW_PRIORITY, 0, 500 * MI);
	struct pod *pod2 = mem_pod("above-requests-low-priority-low-usage", LOW_PRIORITY, 0, 50 * MI);
	struct pod *pod3 = mem_pod("above-requests-high-priority-high-usage", HIGH_PRIORITY, 100 * MI, 600 * MI);
	struct pod *pod4 = mem_pod("above-requests-high-priority-low-usage", HIGH_PRIORITY, 100 * MI, 150 * MI);
	struct pod *pod5 = mem_pod("below-requests-low-priority-high-usage", LOW_PRIORITY, GI, 800 * MI);
	struct pod *pod6 = mem_pod("below-requests-low-priority-low-usage", LOW_PRIORITY, GI, 200 * MI);
	struct pod *pod7 = mem_pod("below-requests-high-priority-high-usage", HIGH_PRIORITY, GI, 800 * MI);
	struct pod *pod8 = mem_pod("below-requests-high-priority-low-usage", HIGH_PRIORITY, GI, 200 * MI);
	struct pod *pods[] = { pod8, pod7, pod6, pod5, pod4, pod3, pod2, pod1 };

	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), pod1->name, pod2->name, pod3->name, pod4->name, pod5->name,
		     pod6->name, pod7->name, pod8->name);
}

/* TestOrderedByPriorityProcess: priority, then more processes. */
static void test_kubelet_priority_process(void **state)
{
	struct pod *pod1 = pid_pod("low-priority-high-usage", LOW_PRIORITY, 20);
	struct pod *pod2 = pid_pod("low-priority-low-usage", LOW_PRIORITY, 6);
	struct pod *pod3 = pid_pod("high-priority-high-usage", HIGH_PRIORITY, 20);
	struct pod *pod4 = pid_pod("high-priority-low-usage", HIGH_PRIORITY, 5);
	struct pod *pods[] = { pod4, pod3, pod2, pod1 };

	rank_pods(EV_SIGNAL_PID_AVAILABLE, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), pod1->name, pod2->name, pod3->name, pod4->name);
}

/* ---- exact comparisons ----------------------------------------------------------------- */

/* helpers.go exceedMemoryRequests: memory.Cmp(request) == 1, strictly above. A pod exactly at
 * its request does not exceed it, and BestEffort using nothing does not exceed 0. */
static void test_exceeds_is_strict(void **state)
{
	struct pod *at_request = mem_pod("at-request", -5, 100 * MI, 100 * MI);
	struct pod *one_over = mem_pod("one-byte-over", 5, 10 * MI, 10 * MI + 1);
	struct pod *idle_besteffort = mem_pod("idle-besteffort", -10, 0, 0);
	struct pod *pods[] = { at_request, idle_besteffort, one_over };

	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "one-byte-over", "idle-besteffort", "at-request");
}

/* The same strictness for ephemeral storage (exceedDiskRequests). */
static void test_exceeds_disk_is_strict(void **state)
{
	struct pod *at_request = disk_pod("at-request", -5, 100 * MI, 50 * MI, 25 * MI, 25 * MI);
	struct pod *one_over = disk_pod("one-byte-over", 5, 100 * MI, 50 * MI, 25 * MI, 25 * MI + 1);
	struct pod *pods[] = { at_request, one_over };

	rank_pods(EV_SIGNAL_NODEFS_AVAILABLE, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "one-byte-over", "at-request");
}

/* helpers.go: every stats comparator first puts "the pod for which no stats were found".
 * For memory that is the first key, so it goes before everything evictable... */
static void test_stats_missing_memory(void **state)
{
	struct pod *hog = mem_pod("hog", -100, 0, 10 * GI);
	struct pod *unknown = mem_pod("no-stats", 100, GI, 0);
	struct pod *pods[] = { hog, unknown };

	unknown->stats_missing = true;
	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "no-stats", "hog");
}

/* ...while for PIDs priority comes first and the missing stats only win within a priority. */
static void test_stats_missing_pid(void **state)
{
	struct pod *low_hog = pid_pod("low-priority-hog", -1, 5000);
	struct pod *high_hog = pid_pod("high-priority-hog", 1, 5000);
	struct pod *high_unknown = pid_pod("high-priority-no-stats", 1, 0);
	struct pod *pods[] = { high_hog, high_unknown, low_hog };

	high_unknown->stats_missing = true;
	rank_pods(EV_SIGNAL_PID_AVAILABLE, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "low-priority-hog", "high-priority-no-stats", "high-priority-hog");
}

/* ---- the seeds' words -------------------------------------------------------------------- */

/* node-pressure-eviction (zh): "首先考虑资源使用量超过其请求的 BestEffort、Burstable Pod。这些
 * Pod 会根据它们的优先级以及它们的资源使用级别超过其请求的程度被逐出" and "资源使用量少于请求量的
 * Guaranteed Pod 和 Burstable Pod 根据其优先级被最后驱逐". */
static void test_seed_over_request_first_then_priority(void **state)
{
	struct pod *besteffort = mem_pod("besteffort-prio-1000", 1000, 0, 10 * MI);
	struct pod *burstable_over = mem_pod("burstable-over-prio-0", 0, 200 * MI, 300 * MI);
	struct pod *burstable_under = mem_pod("burstable-under-prio-minus-10", -10, 200 * MI, 100 * MI);
	struct pod *guaranteed = mem_pod("guaranteed-prio-minus-5", -5, 100 * MI, 100 * MI);
	struct pod *pods[] = { guaranteed, burstable_under, besteffort, burstable_over };

	guaranteed->qos = POD_QOS_GUARANTEED;
	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "burstable-over-prio-0", "besteffort-prio-1000",
		     "burstable-under-prio-minus-10", "guaranteed-prio-minus-5");
}

/* out-of-resource (en): "BestEffort pods that consume the most of the starved resource are
 * failed first." */
static void test_seed_besteffort_largest_consumer_first(void **state)
{
	struct pod *small = mem_pod("besteffort-small", 0, 0, 10 * MI);
	struct pod *large = mem_pod("besteffort-large", 0, 0, 900 * MI);
	struct pod *medium = mem_pod("besteffort-medium", 0, 0, 300 * MI);
	struct pod *pods[] = { small, large, medium };

	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "besteffort-large", "besteffort-medium", "besteffort-small");
}

/* out-of-resource (en): "Burstable pods that consume the greatest amount of the starved
 * resource relative to their request for that resource are killed first" (helpers.go
 * memory/disk: usage - request). 1000Mi against a 900Mi request is 100Mi over; a BestEffort
 * pod using 500Mi is 500Mi over and goes first, for memory and for ephemeral storage. */
static void test_seed_relative_to_request(void **state)
{
	struct pod *burstable = mem_pod("burstable-1000-of-900", 0, 900 * MI, 1000 * MI);
	struct pod *besteffort = mem_pod("besteffort-500", 0, 0, 500 * MI);
	struct pod *pods[] = { burstable, besteffort };
	struct pod *disk_burstable = disk_pod("disk-1000-of-900", 0, 900 * MI, 1000 * MI, 0, 0);
	struct pod *disk_besteffort = disk_pod("disk-500", 0, 0, 500 * MI, 0, 0);
	struct pod *disk_pods[] = { disk_burstable, disk_besteffort };

	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "besteffort-500", "burstable-1000-of-900");
	rank_pods(EV_SIGNAL_CONTAINERFS_AVAILABLE, &split_disk, disk_pods, N(disk_pods));
	ASSERT_ORDER(disk_pods, N(disk_pods), "disk-500", "disk-1000-of-900");
}

/* out-of-resource (en): "...and the node only has Guaranteed pod(s) remaining, then the node
 * must choose to evict a Guaranteed pod"; zh: "它会选择首先驱逐最低优先级的 Pod". */
static void test_seed_only_guaranteed_left(void **state)
{
	struct pod *high = mem_pod("guaranteed-high-priority", 100, GI, GI - MI);
	struct pod *low = mem_pod("guaranteed-low-priority", 10, 100 * MI, MI);
	struct pod *pods[] = { high, low };

	high->qos = low->qos = POD_QOS_GUARANTEED;
	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "guaranteed-low-priority", "guaranteed-high-priority");
	assert_false(pod_never_evict(pods[0]));
}

/* zh: "当 kubelet 因 inode 或 进程 ID 不足而驱逐 Pod 时, 它使用 Pod 的相对优先级来确定驱逐顺序,
 * 因为 inode 和 PID 没有对应的请求字段。" A small low-priority consumer goes before a huge
 * high-priority one. */
static void test_seed_inodes_and_pids_by_priority(void **state)
{
	struct pod *pid_small = pid_pod("pid-low-priority-small", -1, 3);
	struct pod *pid_huge = pid_pod("pid-high-priority-huge", 1, 30000);
	struct pod *pid_pods[] = { pid_huge, pid_small };
	struct pod *ino_small = inode_pod("inodes-low-priority-small", -1, 10, 0, 0);
	struct pod *ino_huge = inode_pod("inodes-high-priority-huge", 1, 5000000, 0, 0);
	struct pod *ino_pods[] = { ino_huge, ino_small };

	rank_pods(EV_SIGNAL_PID_AVAILABLE, &single_fs, pid_pods, N(pid_pods));
	ASSERT_ORDER(pid_pods, N(pid_pods), "pid-low-priority-small", "pid-high-priority-huge");
	rank_pods(EV_SIGNAL_IMAGEFS_INODES_FREE, &single_fs, ino_pods, N(ino_pods));
	ASSERT_ORDER(ino_pods, N(ino_pods), "inodes-low-priority-small", "inodes-high-priority-huge");
	assert_int_equal(rank_request(EV_SIGNAL_PID_AVAILABLE, pid_small), 0);
	assert_int_equal(rank_request(EV_SIGNAL_NODEFS_INODES_FREE, ino_small), 0);
}

/* Seed: inodes have no request, so priority then consumption. (helpers.go disk() would
 * subtract the ephemeral-storage request from the inode count; we follow the seed.) */
/* helpers.go disk(): the third key subtracts GetResourceRequestQuantity(pod,
 * ResourceEphemeralStorage) whatever resource it ranks by, so for inodes a pod's
 * ephemeral-storage request (bytes) comes off its inode count; exceedDiskRequests asks for an
 * "inodes" request, which is 0. */
static void test_inodes_subtract_the_ephemeral_request(void **state)
{
	struct pod *no_request = inode_pod("few-inodes-no-request", 0, 1000, 0, 0);
	struct pod *big_request = inode_pod("many-inodes-1Mi-request", 0, 5000, 0, 0);
	struct pod *small_request = inode_pod("many-inodes-4k-request", 0, 5000, 0, 0);
	struct pod *pods[] = { big_request, no_request, small_request };

	big_request->ephemeral_storage_request = MI;
	small_request->ephemeral_storage_request = 3000;
	rank_pods(EV_SIGNAL_NODEFS_INODES_FREE, &single_fs, pods, N(pods));
	/* 5000 - 3000 = 2000, then 1000 - 0, then 5000 - 1Mi < 0. */
	ASSERT_ORDER(pods, N(pods), "many-inodes-4k-request", "few-inodes-no-request",
		     "many-inodes-1Mi-request");
	/* Both exceed their (zero) inode request: the first key does not decide. */
	assert_int_equal(rank_request(EV_SIGNAL_NODEFS_INODES_FREE, big_request), 0);
}

/* ---- filesystem layouts (seed zh "kubelet 根据节点是否具有专用的 imagefs ..."; helpers.go
 * buildSignalToRankFunc) ------------------------------------------------------------------- */

static struct pod *layout_pod(const char *name, int64_t volumes, int64_t logs, int64_t writable,
			      int64_t images)
{
	struct pod *pod = new_pod(name, 0);

	pod->disk_bytes = (struct pod_disk_usage){ volumes, logs, writable, images };
	pod->disk_inodes = (struct pod_disk_usage){ volumes / KI, logs / KI, writable / KI, images / KI };
	return pod;
}

/* "没有 imagefs ... 如果 nodefs 触发驱逐, kubelet 将根据 Pod 的总磁盘使用量 (本地卷 + 日志和所有
 * 容器的可写层) 对 Pod 进行排序". Images never count (podDiskUsage ignores fsStatsImages). */
static void test_layout_single(void **state)
{
	static const enum ev_signal signals[] = {
		EV_SIGNAL_NODEFS_AVAILABLE, EV_SIGNAL_IMAGEFS_AVAILABLE, EV_SIGNAL_CONTAINERFS_AVAILABLE,
	};
	static const enum ev_signal inode_signals[] = {
		EV_SIGNAL_NODEFS_INODES_FREE, EV_SIGNAL_IMAGEFS_INODES_FREE,
		EV_SIGNAL_CONTAINERFS_INODES_FREE,
	};
	struct pod *pod = layout_pod("p", 1 * MI, 2 * MI, 4 * MI, 8 * MI);

	for (size_t s = 0; s < N(signals); s++) {
		assert_int_equal(rank_usage(signals[s], &single_fs, pod), 7 * MI);
		assert_int_equal(rank_usage(inode_signals[s], &single_fs, pod), 7 * KI);
	}

	/* Total use decides; the image-heavy pod's images do not help it. */
	for (size_t s = 0; s < N(signals); s++) {
		reset_pool(NULL);
		struct pod *pods[] = {
			layout_pod("images-only", 0, 0, MI, 900 * MI),
			layout_pod("volume-heavy", 300 * MI, 0, 0, 0),
			layout_pod("writable-heavy", 0, 0, 200 * MI, 0),
			layout_pod("log-heavy", 0, 100 * MI, 0, 0),
		};

		rank_pods(signals[s], &single_fs, pods, N(pods));
		ASSERT_ORDER(pods, N(pods), "volume-heavy", "writable-heavy", "log-heavy", "images-only");
	}
}

/* "有 imagefs ... 如果 nodefs 触发驱逐, kubelet 将根据 nodefs 使用量 (本地卷 + 所有容器的日志)
 * 对 Pod 进行排序。如果 imagefs 触发驱逐, kubelet 将根据所有容器的可写层用量对 Pod 进行排序".
 * containerfs is imagefs here (buildSignalToRankFunc copies imagefs's rank function). */
static void test_layout_split_disk(void **state)
{
	struct pod *pod = layout_pod("p", 1 * MI, 2 * MI, 4 * MI, 8 * MI);

	assert_int_equal(rank_usage(EV_SIGNAL_NODEFS_AVAILABLE, &split_disk, pod), 3 * MI);
	assert_int_equal(rank_usage(EV_SIGNAL_IMAGEFS_AVAILABLE, &split_disk, pod), 4 * MI);
	assert_int_equal(rank_usage(EV_SIGNAL_CONTAINERFS_AVAILABLE, &split_disk, pod), 4 * MI);
	assert_int_equal(rank_usage(EV_SIGNAL_NODEFS_INODES_FREE, &split_disk, pod), 3 * KI);
	assert_int_equal(rank_usage(EV_SIGNAL_IMAGEFS_INODES_FREE, &split_disk, pod), 4 * KI);
	assert_int_equal(rank_usage(EV_SIGNAL_CONTAINERFS_INODES_FREE, &split_disk, pod), 4 * KI);

	reset_pool(NULL);
	struct pod *writer = layout_pod("writable-layer-heavy", 0, 10 * MI, 500 * MI, 0);
	struct pod *logger = layout_pod("logs-and-volumes-heavy", 100 * MI, 100 * MI, 20 * MI, 0);
	struct pod *pods[] = { writer, logger };

	rank_pods(EV_SIGNAL_NODEFS_AVAILABLE, &split_disk, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "logs-and-volumes-heavy", "writable-layer-heavy");
	rank_pods(EV_SIGNAL_IMAGEFS_AVAILABLE, &split_disk, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "writable-layer-heavy", "logs-and-volumes-heavy");
	rank_pods(EV_SIGNAL_CONTAINERFS_AVAILABLE, &split_disk, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "writable-layer-heavy", "logs-and-volumes-heavy");
	rank_pods(EV_SIGNAL_NODEFS_INODES_FREE, &split_disk, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "logs-and-volumes-heavy", "writable-layer-heavy");
	rank_pods(EV_SIGNAL_IMAGEFS_INODES_FREE, &split_disk, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "writable-layer-heavy", "logs-and-volumes-heavy");
}

/* "有 imagefs 和 containerfs ... 如果 containerfs 触发驱逐, kubelet 将根据 containerfs 使用情况
 * (本地卷 + 日志和所有容器的可写层) 对 Pod 进行排序" - and nodefs too, which is the same
 * filesystem (buildSignalToRankFunc: containerfs = nodefs's rank function). */
static void test_layout_split_image_containerfs(void **state)
{
	struct pod *pod = layout_pod("p", 1 * MI, 2 * MI, 4 * MI, 8 * MI);

	assert_int_equal(rank_usage(EV_SIGNAL_NODEFS_AVAILABLE, &split_image, pod), 7 * MI);
	assert_int_equal(rank_usage(EV_SIGNAL_CONTAINERFS_AVAILABLE, &split_image, pod), 7 * MI);
	assert_int_equal(rank_usage(EV_SIGNAL_NODEFS_INODES_FREE, &split_image, pod), 7 * KI);
	assert_int_equal(rank_usage(EV_SIGNAL_CONTAINERFS_INODES_FREE, &split_image, pod), 7 * KI);

	reset_pool(NULL);
	struct pod *writer = layout_pod("writable-layer-heavy", 0, 10 * MI, 500 * MI, 0);
	struct pod *logger = layout_pod("logs-and-volumes-heavy", 100 * MI, 100 * MI, 20 * MI, 0);
	struct pod *imager = layout_pod("image-heavy", 0, 0, MI, 2 * GI);
	struct pod *pods[] = { imager, logger, writer };

	rank_pods(EV_SIGNAL_CONTAINERFS_AVAILABLE, &split_image, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "writable-layer-heavy", "logs-and-volumes-heavy", "image-heavy");
	rank_pods(EV_SIGNAL_NODEFS_AVAILABLE, &split_image, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "writable-layer-heavy", "logs-and-volumes-heavy", "image-heavy");
}

/* "如果 imagefs 触发驱逐, kubelet 将根据镜像存储用量对 Pod 进行排序": by default evictd ranks by
 * image storage as the seed says. The kubelet's source maps this to fsStatsImages, which
 * podDiskUsage never adds, so every pod's usage is 0 there: nobody exceeds a request,
 * priority decides, then 0 - ephemeral request; imagefs_zero_usage reproduces that. */
static void test_layout_split_image_imagefs(void **state)
{
	struct rank_options by_images = split_image, zero_usage = split_image;
	struct pod *small_image = layout_pod("small-image-no-request", 50 * MI, 50 * MI, 50 * MI, 10 * MI);
	struct pod *big_image = layout_pod("big-image-1Mi-request", 0, 0, 0, 900 * MI);
	struct pod *low_priority = layout_pod("no-image-low-priority", 0, 0, 0, 0);
	struct pod *pods[] = { big_image, small_image, low_priority };

	big_image->ephemeral_storage_request = MI;
	low_priority->priority = -1;
	zero_usage.imagefs_zero_usage = true;

	assert_int_equal(rank_usage(EV_SIGNAL_IMAGEFS_AVAILABLE, &zero_usage, big_image), 0);
	assert_int_equal(rank_usage(EV_SIGNAL_IMAGEFS_INODES_FREE, &zero_usage, big_image), 0);
	rank_pods(EV_SIGNAL_IMAGEFS_AVAILABLE, &zero_usage, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "no-image-low-priority", "small-image-no-request",
		     "big-image-1Mi-request");

	assert_int_equal(rank_usage(EV_SIGNAL_IMAGEFS_AVAILABLE, &by_images, big_image), 900 * MI);
	assert_int_equal(rank_usage(EV_SIGNAL_IMAGEFS_INODES_FREE, &by_images, big_image), 900 * KI);
	rank_pods(EV_SIGNAL_IMAGEFS_AVAILABLE, &by_images, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "big-image-1Mi-request", "small-image-no-request",
		     "no-image-low-priority");
	/* The option touches only the split-image imagefs signal. */
	assert_int_equal(rank_usage(EV_SIGNAL_NODEFS_AVAILABLE, &zero_usage, small_image), 150 * MI);
}

/* NULL options: the defaults, one filesystem and DaemonSets last. */
static void test_null_options(void **state)
{
	struct pod *daemon = mem_pod("daemonset-hog", -1, 0, GI);
	struct pod *plain = mem_pod("plain", 5, GI, MI);
	struct pod *pods[] = { daemon, plain };
	struct pod *layered = layout_pod("layered", 1 * MI, 2 * MI, 4 * MI, 8 * MI);

	daemon->is_daemonset = true;
	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, NULL, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "plain", "daemonset-hog");
	assert_int_equal(rank_usage(EV_SIGNAL_IMAGEFS_AVAILABLE, NULL, layered), 7 * MI);
}

/* ---- requests and usage per signal ------------------------------------------------------- */

static void test_usage_and_request_per_signal(void **state)
{
	struct pod *pod = new_pod("p", 0);

	pod->memory_request = 100;
	pod->memory_working_set = 150;
	pod->ephemeral_storage_request = 1000;
	pod->disk_bytes = (struct pod_disk_usage){ 1, 2, 4, 8 };
	pod->disk_inodes = (struct pod_disk_usage){ 10, 20, 40, 80 };
	pod->processes = 42;

	assert_int_equal(rank_usage(EV_SIGNAL_MEMORY_AVAILABLE, &single_fs, pod), 150);
	assert_int_equal(rank_usage(EV_SIGNAL_OOM_GUARD, &single_fs, pod), 150);
	assert_int_equal(rank_usage(EV_SIGNAL_PID_AVAILABLE, &single_fs, pod), 42);
	assert_int_equal(rank_usage(EV_SIGNAL_NODEFS_AVAILABLE, &single_fs, pod), 7);
	assert_int_equal(rank_usage(EV_SIGNAL_NODEFS_INODES_FREE, &single_fs, pod), 70);
	assert_int_equal(rank_usage(EV_SIGNAL_COUNT, &single_fs, pod), 0);

	assert_int_equal(rank_request(EV_SIGNAL_MEMORY_AVAILABLE, pod), 100);
	assert_int_equal(rank_request(EV_SIGNAL_OOM_GUARD, pod), 100);
	assert_int_equal(rank_request(EV_SIGNAL_PID_AVAILABLE, pod), 0);
	assert_int_equal(rank_request(EV_SIGNAL_NODEFS_AVAILABLE, pod), 1000);
	assert_int_equal(rank_request(EV_SIGNAL_IMAGEFS_AVAILABLE, pod), 1000);
	assert_int_equal(rank_request(EV_SIGNAL_CONTAINERFS_AVAILABLE, pod), 1000);
	assert_int_equal(rank_request(EV_SIGNAL_NODEFS_INODES_FREE, pod), 0);
	assert_int_equal(rank_request(EV_SIGNAL_CONTAINERFS_INODES_FREE, pod), 0);
}

/* The OOM guard ranks exactly like memory.available (TestOrderedByPriorityMemory's pods). */
static void test_oom_guard_ranks_as_memory(void **state)
{
	struct pod *under = mem_pod("below-requests-low-priority", LOW_PRIORITY, GI, 800 * MI);
	struct pod *over_high = mem_pod("above-requests-high-priority", HIGH_PRIORITY, 100 * MI, 600 * MI);
	struct pod *over_low = mem_pod("above-requests-low-priority", LOW_PRIORITY, 0, 50 * MI);
	struct pod *pods[] = { under, over_high, over_low };

	rank_pods(EV_SIGNAL_OOM_GUARD, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "above-requests-low-priority", "above-requests-high-priority",
		     "below-requests-low-priority");
}

/* ---- never evict ------------------------------------------------------------------------- */

/* pod_update.go IsCriticalPod: static, mirror, priority >= 2000000000; and evictd itself. */
static void test_never_evict_predicate(void **state)
{
	struct pod *plain = new_pod("plain", 1000000000);	/* HighestUserDefinablePriority */
	struct pod *below = new_pod("below-critical", RANK_SYSTEM_CRITICAL_PRIORITY - 1);
	struct pod *cluster_critical = new_pod("system-cluster-critical", 2000000000);
	struct pod *node_critical = new_pod("system-node-critical", 2000001000);
	struct pod *max = new_pod("max", INT32_MAX);
	struct pod *is_static = new_pod("static", -100);
	struct pod *mirror = new_pod("mirror", 0);
	struct pod *self = new_pod("evictd", 0);

	is_static->is_static = true;
	mirror->is_mirror = true;
	self->is_self = true;
	assert_false(pod_never_evict(plain));
	assert_false(pod_never_evict(below));
	assert_true(pod_never_evict(cluster_critical));
	assert_true(pod_never_evict(node_critical));
	assert_true(pod_never_evict(max));
	assert_true(pod_never_evict(is_static));
	assert_true(pod_never_evict(mirror));
	assert_true(pod_never_evict(self));
}

/* Never-evict pods stay in the ranking, after every evictable pod, even when the kubelet's
 * keys would put them first - under every kind of pressure. */
static void test_never_evict_sorts_last(void **state)
{
	static const enum ev_signal signals[] = {
		EV_SIGNAL_MEMORY_AVAILABLE, EV_SIGNAL_OOM_GUARD, EV_SIGNAL_PID_AVAILABLE,
		EV_SIGNAL_NODEFS_AVAILABLE, EV_SIGNAL_IMAGEFS_INODES_FREE,
	};

	for (size_t s = 0; s < N(signals); s++) {
		struct pod *is_static, *mirror, *critical, *self, *plain;

		reset_pool(NULL);
		is_static = new_pod("static", -1000);
		mirror = new_pod("mirror", -999);
		critical = new_pod("critical", RANK_SYSTEM_CRITICAL_PRIORITY);
		self = new_pod("evictd", -998);
		plain = new_pod("plain", 1000);
		for (struct pod *p = &pool[0]; p < &pool[pool_used]; p++) {
			p->memory_working_set = p == plain ? 1 : GI;
			p->processes = p == plain ? 1 : 10000;
			p->disk_bytes.writable = p == plain ? 1 : GI;
			p->disk_inodes.writable = p == plain ? 1 : 100000;
		}
		plain->memory_request = plain->ephemeral_storage_request = GI;
		is_static->is_static = true;
		mirror->is_mirror = true;
		self->is_self = true;

		struct pod *pods[] = { is_static, mirror, critical, self, plain };

		rank_pods(signals[s], &single_fs, pods, N(pods));
		/* Among themselves they keep the kubelet's order (lowest priority first). */
		ASSERT_ORDER(pods, N(pods), "plain", "static", "mirror", "evictd", "critical");
	}
}

/* ---- DaemonSets -------------------------------------------------------------------------- */

/* out-of-resource (en): "It is never desired for a kubelet to evict a pod that was derived
 * from a DaemonSet since the pod will immediately be recreated" - evictd ranks them after all
 * other pods when daemonset_last is on, and exactly like the kubelet when it is off. */
static void test_daemonset_last_on_and_off(void **state)
{
	struct rank_options off = single_fs;
	struct pod *ds_hog = mem_pod("daemonset-besteffort-hog", -10, 0, 2 * GI);
	struct pod *ds_small = mem_pod("daemonset-small", -10, 0, MI);
	struct pod *guaranteed = mem_pod("guaranteed-under-request", 100, GI, 10 * MI);
	struct pod *burstable = mem_pod("burstable-over", 50, 10 * MI, 20 * MI);
	struct pod *critical = mem_pod("critical", RANK_SYSTEM_CRITICAL_PRIORITY, 0, 4 * GI);
	struct pod *pods[] = { ds_small, guaranteed, ds_hog, critical, burstable };

	ds_hog->is_daemonset = ds_small->is_daemonset = true;
	guaranteed->qos = POD_QOS_GUARANTEED;
	off.daemonset_last = false;

	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "burstable-over", "guaranteed-under-request",
		     "daemonset-besteffort-hog", "daemonset-small", "critical");

	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, &off, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "daemonset-besteffort-hog", "daemonset-small", "burstable-over",
		     "guaranteed-under-request", "critical");
}

/* A critical DaemonSet pod (e.g. kube-proxy at system-node-critical) is still after the
 * ordinary DaemonSet pods. */
static void test_critical_after_daemonset(void **state)
{
	struct pod *critical_ds = pid_pod("critical-daemonset", RANK_SYSTEM_CRITICAL_PRIORITY + 1000, 1);
	struct pod *ds = pid_pod("daemonset", 5, 1);
	struct pod *plain = pid_pod("plain", 10, 1);
	struct pod *pods[] = { critical_ds, ds, plain };

	critical_ds->is_daemonset = ds->is_daemonset = true;
	rank_pods(EV_SIGNAL_PID_AVAILABLE, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "plain", "daemonset", "critical-daemonset");
}

/* ---- stability --------------------------------------------------------------------------- */

static void test_stable_small(void **state)
{
	struct pod *pods[6];
	static const char *const names[] = { "e", "b", "f", "a", "d", "c" };

	for (size_t i = 0; i < N(pods); i++)
		pods[i] = mem_pod(names[i], 0, 0, 100 * MI);
	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "e", "b", "f", "a", "d", "c");

	/* Equal pods keep their order around a different one. */
	pods[3]->memory_working_set = 500 * MI;
	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, &single_fs, pods, N(pods));
	ASSERT_ORDER(pods, N(pods), "a", "e", "b", "f", "d", "c");
}

/* Large enough for the merge path: sorted by priority, and pods of equal priority in their
 * input order. */
static void test_stable_large(void **state)
{
	enum { COUNT = 1500 };
	struct pod *storage = calloc(COUNT, sizeof(*storage));
	struct pod **pods = calloc(COUNT, sizeof(*pods));
	uint32_t seed = 12345;

	assert_non_null(storage);
	assert_non_null(pods);
	for (size_t i = 0; i < COUNT; i++) {
		seed = seed * 1103515245u + 12345u;
		storage[i].priority = (int32_t)((seed >> 16) % 7) - 3;
		storage[i].processes = 10;
		storage[i].is_daemonset = (seed >> 8) % 5 == 0;
		pods[i] = &storage[i];
	}
	rank_pods(EV_SIGNAL_PID_AVAILABLE, &single_fs, pods, COUNT);
	for (size_t i = 1; i < COUNT; i++) {
		const struct pod *a = pods[i - 1], *b = pods[i];

		if (a->is_daemonset != b->is_daemonset) {
			assert_false(a->is_daemonset);
			continue;
		}
		assert_true(a->priority <= b->priority);
		if (a->priority == b->priority)
			assert_true(a < b);	/* storage index = input order */
	}
	free(pods);
	free(storage);
}

static void test_empty_and_single(void **state)
{
	struct pod *one = mem_pod("only", 0, 0, 1);
	struct pod *pods[] = { one };

	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, &single_fs, NULL, 0);
	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, &single_fs, pods, 1);
	assert_ptr_equal(pods[0], one);
}

/* ---- the pod's request (pkg/api/v1/resource, component-helpers PodRequests) ---------------- */

static void test_pod_request(void **state)
{
	/* Regular containers add up. */
	const struct rank_container_request regular[] = { { .request = 100 * MI }, { .request = 50 * MI } };
	/* TestPodRequests-style: an init container bigger than the sum wins ("init containers
	 * define the minimum of any resource"). */
	const struct rank_container_request big_init[] = {
		{ .request = 100 * MI }, { .request = 50 * MI }, { .request = 500 * MI, .init = true },
	};
	/* Sidecars (restartable init containers) add to the total, and an init container after
	 * one needs its own request on top of it. */
	const struct rank_container_request sidecars[] = {
		{ .request = 10 * MI, .init = true, .restartable = true },
		{ .request = 100 * MI, .init = true },
		{ .request = 20 * MI, .init = true, .restartable = true },
		{ .request = 50 * MI },
	};
	const struct rank_container_request late_big_init[] = {
		{ .request = 30 * MI, .init = true, .restartable = true },
		{ .request = 200 * MI, .init = true },
		{ .request = 10 * MI },
	};
	/* Sidecars keep running next to the regular containers: 100 + 50, more than any init
	 * container's moment (50 + 20). */
	const struct rank_container_request sidecar_sum[] = {
		{ .request = 50 * MI, .init = true, .restartable = true },
		{ .request = 20 * MI, .init = true },
		{ .request = 100 * MI },
	};
	const struct rank_container_request none[] = { { 0 }, { .request = 0, .init = true } };

	assert_int_equal(rank_pod_request(regular, N(regular), -1, 0), 150 * MI);
	assert_int_equal(rank_pod_request(big_init, N(big_init), -1, 0), 500 * MI);
	/* max(10 + 20 + 50, 10 + 100, 10 + 20) = 110 */
	assert_int_equal(rank_pod_request(sidecars, N(sidecars), -1, 0), 110 * MI);
	/* max(30 + 10, 30 + 200) = 230 */
	assert_int_equal(rank_pod_request(late_big_init, N(late_big_init), -1, 0), 230 * MI);
	assert_int_equal(rank_pod_request(sidecar_sum, N(sidecar_sum), -1, 0), 150 * MI);
	/* Overhead is added only to a non-zero request. */
	assert_int_equal(rank_pod_request(regular, N(regular), -1, 10 * MI), 160 * MI);
	assert_int_equal(rank_pod_request(none, N(none), -1, 10 * MI), 0);
	assert_int_equal(rank_pod_request(NULL, 0, -1, 10 * MI), 0);
	/* A pod-level request replaces the containers'. */
	assert_int_equal(rank_pod_request(regular, N(regular), 64 * MI, 0), 64 * MI);
	assert_int_equal(rank_pod_request(regular, N(regular), 64 * MI, MI), 65 * MI);
}

/* ---- oom_score_adj (policy.go GetContainerOOMScoreAdjust; seeds "节点内存不足行为") ----------- */

static void test_oom_score_adj(void **state)
{
	const int64_t cap = 10 * GI;

	/* Seed table: Guaranteed -997, BestEffort 1000, whatever the request. */
	assert_int_equal(oom_score_adj_for(POD_QOS_GUARANTEED, GI, cap), -997);
	assert_int_equal(oom_score_adj_for(POD_QOS_GUARANTEED, 0, 0), -997);
	assert_int_equal(oom_score_adj_for(POD_QOS_BESTEFFORT, 0, cap), 1000);
	assert_int_equal(oom_score_adj_for(POD_QOS_BESTEFFORT, GI, 0), 1000);

	/* policy.go: "A container requesting for 10% of a system's memory will have an OOM
	 * score adjust of 900." */
	assert_int_equal(oom_score_adj_for(POD_QOS_BURSTABLE, GI, cap), 900);
	assert_int_equal(oom_score_adj_for(POD_QOS_BURSTABLE, cap / 2, cap), 500);

	/* The upper clamp: 1000 - 0 = 1000 becomes 999 ("min(..., 999)"). */
	assert_int_equal(oom_score_adj_for(POD_QOS_BURSTABLE, 0, cap), 999);
	/* Integer division: 1000 * 1 / 10Gi = 0, so 1000 -> 999 too. */
	assert_int_equal(oom_score_adj_for(POD_QOS_BURSTABLE, 1, cap), 999);
	/* Exactly 0.1% of memory: 1000 - 1 = 999, no clamp needed; just above: 998. */
	assert_int_equal(oom_score_adj_for(POD_QOS_BURSTABLE, 1000, 1000000), 999);
	assert_int_equal(oom_score_adj_for(POD_QOS_BURSTABLE, 2000, 1000000), 998);
	/* Truncation, not rounding: 1000 * 1 / 3 = 333. */
	assert_int_equal(oom_score_adj_for(POD_QOS_BURSTABLE, 1, 3), 667);
	assert_int_equal(oom_score_adj_for(POD_QOS_BURSTABLE, 2, 3), 334);

	/* The lower clamp: the seeds and DESIGN.md §6 write max(2, ...) (policy.go now clamps at
	 * 1000 + guaranteedOOMScoreAdj = 3; the seed is our source). */
	assert_int_equal(oom_score_adj_for(POD_QOS_BURSTABLE, 996, 1000), 4);
	assert_int_equal(oom_score_adj_for(POD_QOS_BURSTABLE, 997, 1000), 3);
	assert_int_equal(oom_score_adj_for(POD_QOS_BURSTABLE, 998, 1000), 2);
	assert_int_equal(oom_score_adj_for(POD_QOS_BURSTABLE, 999, 1000), 2);
	assert_int_equal(oom_score_adj_for(POD_QOS_BURSTABLE, 1000, 1000), 2);
	assert_int_equal(oom_score_adj_for(POD_QOS_BURSTABLE, 2 * cap, cap), 2);
	/* No overflow on absurd requests. */
	assert_int_equal(oom_score_adj_for(POD_QOS_BURSTABLE, INT64_MAX, cap), 2);

	/* Unknown capacity (the kubelet would divide by zero): Burstable's top value. */
	assert_int_equal(oom_score_adj_for(POD_QOS_BURSTABLE, GI, 0), 999);
	assert_int_equal(oom_score_adj_for(POD_QOS_BURSTABLE, GI, -1), 999);
}

static void test_qos_names(void **state)
{
	assert_string_equal(pod_qos_name(POD_QOS_GUARANTEED), "Guaranteed");
	assert_string_equal(pod_qos_name(POD_QOS_BURSTABLE), "Burstable");
	assert_string_equal(pod_qos_name(POD_QOS_BESTEFFORT), "BestEffort");
}

#define T(fn) cmocka_unit_test_setup(fn, reset_pool)

/* ---- pods without metadata (issue 12, doc/DESIGN.md §5) -------------------------------- */

/* Known pods first for every signal; a threshold never takes an unknown pod, whatever its
 * usage; the OOM guard takes unknown ones only after the known, BestEffort then Burstable
 * then by usage, never Guaranteed. */
static void test_unknown_pods_rank_and_candidates(void **state)
{
	struct pod *known = mem_pod("known", 5000, 100, 200);
	struct pod *unknown_g = mem_pod("unknown-g", 0, 0, 900);
	struct pod *unknown_bu_small = mem_pod("unknown-bu-small", 0, 0, 100);
	struct pod *unknown_bu_big = mem_pod("unknown-bu-big", 0, 0, 700);
	struct pod *unknown_be = mem_pod("unknown-be", 0, 0, 10);
	struct pod *pods[] = { unknown_g, unknown_bu_small, unknown_be, known, unknown_bu_big };
	const size_t n = sizeof(pods) / sizeof(pods[0]);

	unknown_g->qos = POD_QOS_GUARANTEED;
	unknown_bu_small->qos = unknown_bu_big->qos = POD_QOS_BURSTABLE;
	for (size_t i = 0; i < n; i++)
		pods[i]->processes = 1;
	unknown_g->meta_unknown = unknown_bu_small->meta_unknown = unknown_bu_big->meta_unknown = true;
	unknown_be->meta_unknown = true;

	rank_pods(EV_SIGNAL_OOM_GUARD, NULL, pods, n);
	assert_string_equal(pods[0]->name, "known");
	assert_string_equal(pods[1]->name, "unknown-be");
	assert_string_equal(pods[2]->name, "unknown-bu-big");
	assert_string_equal(pods[3]->name, "unknown-bu-small");
	assert_string_equal(pods[4]->name, "unknown-g");
	assert_true(pod_is_candidate_for(unknown_be, EV_SIGNAL_OOM_GUARD));
	assert_true(pod_is_candidate_for(unknown_bu_small, EV_SIGNAL_OOM_GUARD));
	assert_false(pod_is_candidate_for(unknown_g, EV_SIGNAL_OOM_GUARD));
	for (int s = 0; s < EV_SIGNAL_COUNT; s++) {
		if (s == EV_SIGNAL_OOM_GUARD)
			continue;
		assert_false(pod_is_candidate_for(unknown_be, (enum ev_signal)s));
		assert_false(pod_is_candidate_for(unknown_bu_big, (enum ev_signal)s));
		assert_true(pod_is_candidate_for(known, (enum ev_signal)s));
	}
	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, NULL, pods, n);
	assert_string_equal(pods[0]->name, "known");
	/* A static pod is never a candidate, known or not. */
	unknown_be->is_static = true;
	assert_false(pod_is_candidate_for(unknown_be, EV_SIGNAL_OOM_GUARD));
	/* An exited unknown pod neither. */
	unknown_bu_big->exited = true;
	assert_false(pod_is_candidate_for(unknown_bu_big, EV_SIGNAL_OOM_GUARD));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_kubelet_exceeds_request_memory),
		T(test_kubelet_exceeds_request_disk),
		T(test_kubelet_priority),
		T(test_kubelet_orderedby_disk),
		T(test_kubelet_orderedby_inodes),
		T(test_kubelet_priority_disk),
		T(test_kubelet_priority_inodes),
		T(test_kubelet_orderedby_memory),
		T(test_kubelet_priority_memory),
		T(test_kubelet_priority_process),
		T(test_exceeds_is_strict),
		T(test_exceeds_disk_is_strict),
		T(test_stats_missing_memory),
		T(test_stats_missing_pid),
		T(test_seed_over_request_first_then_priority),
		T(test_seed_besteffort_largest_consumer_first),
		T(test_seed_relative_to_request),
		T(test_seed_only_guaranteed_left),
		T(test_seed_inodes_and_pids_by_priority),
		T(test_inodes_subtract_the_ephemeral_request),
		T(test_layout_single),
		T(test_layout_split_disk),
		T(test_layout_split_image_containerfs),
		T(test_layout_split_image_imagefs),
		T(test_null_options),
		T(test_usage_and_request_per_signal),
		T(test_oom_guard_ranks_as_memory),
		T(test_never_evict_predicate),
		T(test_never_evict_sorts_last),
		T(test_daemonset_last_on_and_off),
		T(test_critical_after_daemonset),
		T(test_stable_small),
		T(test_stable_large),
		T(test_empty_and_single),
		T(test_pod_request),
		T(test_oom_score_adj),
		T(test_qos_names),
		T(test_unknown_pods_rank_and_candidates),
	};

	return cmocka_run_group_tests_name("rank", tests, NULL, NULL);
}
