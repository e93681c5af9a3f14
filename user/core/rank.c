// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Choosing the victim (DESIGN.md §5): a port of the kubelet's eviction ordering. Each rule names
 * the kubelet file it comes from (kubernetes master):
 *
 *   [helpers.go]   pkg/kubelet/eviction/helpers.go: rankMemoryPressure, rankPIDPressure,
 *                  rankDiskPressureFunc, buildSignalToRankFunc, exceedMemoryRequests,
 *                  exceedDiskRequests, priority, memory, process, disk, podDiskUsage,
 *                  containerUsage, cmpBool, orderedBy/multiSorter
 *   [pod_update.go] pkg/kubelet/types/pod_update.go: IsCriticalPod, IsStaticPod,
 *                  IsCriticalPodBasedOnPriority
 *   [eviction_manager.go] pkg/kubelet/eviction/eviction_manager.go: evictPod refuses
 *                  IsCriticalPod pods
 *   [policy.go]    pkg/kubelet/qos/policy.go: GetContainerOOMScoreAdjust
 *   [resource]     pkg/api/v1/resource/helpers.go GetResourceRequestQuantity and
 *                  staging/src/k8s.io/component-helpers/resource/helpers.go PodRequests
 *
 * Rules that are evictd's own, not the kubelet's, say "evictd".
 */
#include <stdlib.h>
#include <string.h>

#include "core/rank.h"

/* [policy.go] guaranteedOOMScoreAdj, besteffortOOMScoreAdj */
#define GUARANTEED_OOM_SCORE_ADJ (-997)
#define BURSTABLE_MIN_OOM_SCORE_ADJ 2
#define BESTEFFORT_OOM_SCORE_ADJ 1000

/* Below this many pods a run is insertion-sorted; merge sort above it. */
#define RANK_INSERTION_SORT_MAX 16

const char *pod_qos_name(enum pod_qos qos)
{
	switch (qos) {
	case POD_QOS_GUARANTEED:
		return "Guaranteed";
	case POD_QOS_BURSTABLE:
		return "Burstable";
	case POD_QOS_BESTEFFORT:
		return "BestEffort";
	}
	return "Unknown";
}

bool pod_never_evict(const struct pod *pod)
{
	/* [pod_update.go] IsCriticalPod: IsStaticPod || IsMirrorPod ||
	 * IsCriticalPodBasedOnPriority (priority >= scheduling.SystemCriticalPriority).
	 * evictd: never itself. */
	return pod_never_evict_reason(pod) != NULL;
}

const char *pod_never_evict_reason(const struct pod *pod)
{
	if (pod->is_self)
		return "evictd itself";
	if (pod->is_mirror)
		return "mirror pod (static pod of the kubelet)";
	if (pod->is_static)
		return "static pod";
	if (pod->priority >= RANK_SYSTEM_CRITICAL_PRIORITY)
		return "system-critical priority (>= 2000000000)";
	if (pod->preference == POD_PREF_NEVER)
		return pod->preference_from[0] ? pod->preference_from : "never (workload preference)";
	return NULL;
}

bool pod_is_candidate(const struct pod *pod)
{
	return !pod_never_evict(pod) && !pod->meta_unknown && pod->processes > 0 && !pod->exited;
}

/*
 * evictd (doc/DESIGN.md §5, pods without metadata): a pod whose metadata is unknown may be a
 * static pod ([pod_update.go] IsStaticPod: etcd, kube-apiserver of the very API server that
 * is unreachable) or a system-critical one; the kubelet never evicts those, so a kubelet
 * threshold never takes it. The OOM guard acts where the kernel's OOM killer would act next
 * and would pick by oom_score_adj ([policy.go]: BestEffort 1000, Burstable 2..999,
 * Guaranteed -997): it may take such a pod in that order, never a Guaranteed one.
 */
bool pod_is_candidate_for(const struct pod *pod, enum ev_signal signal)
{
	if (!pod->meta_unknown)
		return pod_is_candidate(pod);
	if (signal != EV_SIGNAL_OOM_GUARD || pod->qos == POD_QOS_GUARANTEED)
		return false;
	return !pod_never_evict(pod) && pod->processes > 0 && !pod->exited;
}

static int64_t add_saturating(int64_t a, int64_t b)
{
	int64_t sum;

	if (!__builtin_add_overflow(a, b, &sum))
		return sum;
	return b > 0 ? INT64_MAX : INT64_MIN;
}

static const struct rank_options rank_defaults = {
	.fs_layout = FS_LAYOUT_SINGLE,
	.daemonset_last = true,
};

static const struct rank_options *options_or_defaults(const struct rank_options *options)
{
	return options ? options : &rank_defaults;
}

/* Which rank function the kubelet's buildSignalToRankFunc maps a signal to. */
enum rank_kind {
	RANK_KIND_NONE,
	RANK_KIND_MEMORY,	/* rankMemoryPressure */
	RANK_KIND_PID,		/* rankPIDPressure */
	RANK_KIND_DISK_BYTES,	/* rankDiskPressureFunc(..., v1.ResourceEphemeralStorage) */
	RANK_KIND_DISK_INODES,	/* rankDiskPressureFunc(..., resourceInodes) */
};

static enum rank_kind signal_rank_kind(enum ev_signal signal)
{
	switch (signal) {
	case EV_SIGNAL_MEMORY_AVAILABLE:
	case EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE:
	case EV_SIGNAL_OOM_GUARD:	/* evictd: the guard ranks as memory pressure */
	case EV_SIGNAL_MEMORY_PRESSURE:	/* the node's PSI: evictd's memory ranking */
		return RANK_KIND_MEMORY;
	case EV_SIGNAL_PID_AVAILABLE:
		return RANK_KIND_PID;
	case EV_SIGNAL_NODEFS_AVAILABLE:
	case EV_SIGNAL_IMAGEFS_AVAILABLE:
	case EV_SIGNAL_CONTAINERFS_AVAILABLE:
		return RANK_KIND_DISK_BYTES;
	case EV_SIGNAL_NODEFS_INODES_FREE:
	case EV_SIGNAL_IMAGEFS_INODES_FREE:
	case EV_SIGNAL_CONTAINERFS_INODES_FREE:
		return RANK_KIND_DISK_INODES;
	case EV_SIGNAL_SWAP_AVAILABLE:	/* gates: never the threshold acted on */
	case EV_SIGNAL_ZRAM_AVAILABLE:
	case EV_SIGNAL_COUNT:
		break;
	}
	return RANK_KIND_NONE;
}

/* [helpers.go] fsStatsType: the parts of a pod's disk use podDiskUsage adds up. */
enum {
	FS_STATS_LOCAL_VOLUMES = 1u << 0,	/* fsStatsLocalVolumeSource */
	FS_STATS_LOGS = 1u << 1,		/* fsStatsLogs */
	FS_STATS_ROOT = 1u << 2,		/* fsStatsRoot: writable layers */
	FS_STATS_IMAGES = 1u << 3,		/* fsStatsImages */
};

static bool signal_is_nodefs(enum ev_signal signal)
{
	return signal == EV_SIGNAL_NODEFS_AVAILABLE || signal == EV_SIGNAL_NODEFS_INODES_FREE;
}

static bool signal_is_imagefs(enum ev_signal signal)
{
	return signal == EV_SIGNAL_IMAGEFS_AVAILABLE || signal == EV_SIGNAL_IMAGEFS_INODES_FREE;
}

/*
 * [helpers.go] buildSignalToRankFunc(withImageFs, imageContainerSplitFs). The kubelet also
 * lists fsStatsImages for the single-filesystem case and for imagefs with SPLIT_DISK, but
 * containerUsage/podDiskUsage only ever add Rootfs, Logs and local volumes, so images count
 * nowhere; the masks below leave it out except where the option asks for it.
 */
static unsigned int fs_stats_to_measure(enum ev_signal signal, const struct rank_options *options)
{
	switch (options->fs_layout) {
	case FS_LAYOUT_SPLIT_DISK:
		/* withImageFs && !imageContainerSplitFs: nodefs {logs, local volumes};
		 * imagefs and containerfs {root, images}. */
		if (signal_is_nodefs(signal))
			return FS_STATS_LOGS | FS_STATS_LOCAL_VOLUMES;
		return FS_STATS_ROOT;
	case FS_LAYOUT_SPLIT_IMAGE:
		/* withImageFs && imageContainerSplitFs: nodefs and containerfs {logs, local
		 * volumes, root}; imagefs {images}, which podDiskUsage counts as 0. */
		if (signal_is_imagefs(signal))
			return options->imagefs_zero_usage ? 0 : FS_STATS_IMAGES;
		return FS_STATS_LOGS | FS_STATS_LOCAL_VOLUMES | FS_STATS_ROOT;
	case FS_LAYOUT_SINGLE:
		break;
	}
	/* No imagefs: every filesystem signal measures {images, root, logs, local volumes}. */
	return FS_STATS_ROOT | FS_STATS_LOGS | FS_STATS_LOCAL_VOLUMES;
}

/* [helpers.go] podDiskUsage: containerUsage (Rootfs, Logs) + podLocalVolumeUsage. */
static int64_t pod_disk_usage_sum(const struct pod_disk_usage *usage, unsigned int stats)
{
	int64_t sum = 0;

	if (stats & FS_STATS_ROOT)
		sum = add_saturating(sum, usage->writable);
	if (stats & FS_STATS_LOGS)
		sum = add_saturating(sum, usage->logs);
	if (stats & FS_STATS_LOCAL_VOLUMES)
		sum = add_saturating(sum, usage->volumes);
	if (stats & FS_STATS_IMAGES)
		sum = add_saturating(sum, usage->images);
	return sum;
}

static int64_t usage_for(enum ev_signal signal, const struct rank_options *options,
			 const struct pod *pod)
{
	switch (signal_rank_kind(signal)) {
	case RANK_KIND_MEMORY:
		return pod->memory_working_set;	/* [helpers.go] memoryUsage: WorkingSetBytes */
	case RANK_KIND_PID:
		return pod->processes;		/* [helpers.go] processUsage: ProcessCount */
	case RANK_KIND_DISK_BYTES:
		return pod_disk_usage_sum(&pod->disk_bytes, fs_stats_to_measure(signal, options));
	case RANK_KIND_DISK_INODES:
		return pod_disk_usage_sum(&pod->disk_inodes, fs_stats_to_measure(signal, options));
	case RANK_KIND_NONE:
		break;
	}
	return 0;
}

int64_t rank_usage(enum ev_signal signal, const struct rank_options *options, const struct pod *pod)
{
	return usage_for(signal, options_or_defaults(options), pod);
}

int64_t rank_request(enum ev_signal signal, const struct pod *pod)
{
	switch (signal_rank_kind(signal)) {
	case RANK_KIND_MEMORY:
		return pod->memory_request;
	case RANK_KIND_DISK_BYTES:
		return pod->ephemeral_storage_request;
	case RANK_KIND_DISK_INODES:
		/* [helpers.go] exceedDiskRequests asks for a request of resourceInodes, which no
		 * container can carry (not a valid resource name), so 0. */
	case RANK_KIND_PID:
	case RANK_KIND_NONE:
		break;
	}
	return 0;
}

/*
 * What the third key subtracts from usage: the request (helpers.go memory() and disk()).
 * disk() subtracts GetResourceRequestQuantity(pod, v1.ResourceEphemeralStorage) whatever
 * resource it ranks by, so an inode count has the pod's ephemeral-storage request (bytes)
 * taken off it too; the first key (exceedDiskRequests) asks for a resourceInodes request,
 * which is 0 (rank_request).
 */
static int64_t request_subtracted(enum ev_signal signal, const struct pod *pod)
{
	if (signal_rank_kind(signal) == RANK_KIND_DISK_INODES)
		return pod->ephemeral_storage_request;
	return rank_request(signal, pod);
}

struct rank_ctx {
	enum ev_signal signal;
	const struct rank_options *options;
};

/* [helpers.go] cmpFunc: <0 when a is evicted before b. */
typedef int (*rank_cmp_fn)(const struct rank_ctx *ctx, const struct pod *a, const struct pod *b);

/* [helpers.go] cmpBool: true before false. */
static int cmp_bool(bool a, bool b)
{
	if (a == b)
		return 0;
	return a ? -1 : 1;
}

static int cmp_int128_larger_first(__int128 a, __int128 b)
{
	if (a == b)
		return 0;
	return a > b ? -1 : 1;
}

/* [helpers.go] exceedMemoryRequests / exceedDiskRequests: a pod without stats first, then
 * pods whose usage is strictly above their request (usage.Cmp(request) == 1); BestEffort's
 * request is 0, so it exceeds as soon as it uses anything. */
static int cmp_exceeds_requests(const struct rank_ctx *ctx, const struct pod *a, const struct pod *b)
{
	bool a_exceeds, b_exceeds;

	if (a->stats_missing || b->stats_missing)
		return cmp_bool(a->stats_missing, b->stats_missing);
	a_exceeds = usage_for(ctx->signal, ctx->options, a) > rank_request(ctx->signal, a);
	b_exceeds = usage_for(ctx->signal, ctx->options, b) > rank_request(ctx->signal, b);
	return cmp_bool(a_exceeds, b_exceeds);
}

/* [helpers.go] priority: lower priority first (corev1helpers.PodPriority, 0 when unset). */
static int cmp_priority(const struct rank_ctx *ctx, const struct pod *a, const struct pod *b)
{
	if (a->priority == b->priority)
		return 0;
	return a->priority < b->priority ? -1 : 1;
}

/* [helpers.go] memory / disk: a pod without stats first, then the larger usage - request
 * (p2.Cmp(p1)). Computed wide so no pair of int64 inputs can overflow. */
static int cmp_usage_above_request(const struct rank_ctx *ctx, const struct pod *a,
				   const struct pod *b)
{
	__int128 a_above, b_above;

	if (a->stats_missing || b->stats_missing)
		return cmp_bool(a->stats_missing, b->stats_missing);
	a_above = (__int128)usage_for(ctx->signal, ctx->options, a) - request_subtracted(ctx->signal, a);
	b_above = (__int128)usage_for(ctx->signal, ctx->options, b) - request_subtracted(ctx->signal, b);
	return cmp_int128_larger_first(a_above, b_above);
}

/* [helpers.go] process: a pod without stats first, then more processes first. */
static int cmp_process(const struct rank_ctx *ctx, const struct pod *a, const struct pod *b)
{
	if (a->stats_missing || b->stats_missing)
		return cmp_bool(a->stats_missing, b->stats_missing);
	return cmp_int128_larger_first(a->processes, b->processes);
}

/* evictd: never-evict pods last. The kubelet ranks them like any pod and evictPod
 * ([eviction_manager.go]) refuses them, so the first evictable pod - the victim - is the
 * same; sorting them last lets callers report them after the candidates. */
static int cmp_evictable_first(const struct rank_ctx *ctx, const struct pod *a, const struct pod *b)
{
	return cmp_bool(!pod_never_evict(a), !pod_never_evict(b));
}

/* evictd (doc/DESIGN.md §5): pods whose metadata is known before those without. */
static int cmp_known_first(const struct rank_ctx *ctx, const struct pod *a, const struct pod *b)
{
	return cmp_bool(!a->meta_unknown, !b->meta_unknown);
}

/* evictd: among pods without metadata, the kernel OOM killer's order by QoS ([policy.go]:
 * BestEffort, then Burstable, then Guaranteed), then the larger usage first (no request
 * or priority is known to subtract or compare). 0 unless both are unknown. */
static int cmp_unknown_qos_usage(const struct rank_ctx *ctx, const struct pod *a, const struct pod *b)
{
	static const int qos_order[] = {
		[POD_QOS_BESTEFFORT] = 0, [POD_QOS_BURSTABLE] = 1, [POD_QOS_GUARANTEED] = 2,
	};

	if (!a->meta_unknown || !b->meta_unknown)
		return 0;
	if (qos_order[a->qos] != qos_order[b->qos])
		return qos_order[a->qos] < qos_order[b->qos] ? -1 : 1;
	if (a->stats_missing || b->stats_missing)
		return cmp_bool(a->stats_missing, b->stats_missing);
	return cmp_int128_larger_first(usage_for(ctx->signal, ctx->options, a),
				       usage_for(ctx->signal, ctx->options, b));
}

/* evictd (DESIGN.md §5; out-of-resource seed: "It is never desired for a kubelet to evict a pod
 * that was derived from a DaemonSet"): DaemonSet pods after all others. */
static int cmp_daemonset_last(const struct rank_ctx *ctx, const struct pod *a, const struct pod *b)
{
	return cmp_bool(!a->is_daemonset, !b->is_daemonset);
}

/* evictd (doc/DESIGN.md §5, "Workload preferences"): prefer first, avoid last, as
 * systemd-oomd puts "avoid" after every other candidate (src/oom/oomd-util.h
 * compare_pgscan_rate_and_memory_usage: CMP(preference) is its first key). Only standalone
 * workloads carry a preference. */
static int cmp_preference(const struct rank_ctx *ctx, const struct pod *a, const struct pod *b)
{
	static const int order[] = {
		[POD_PREF_PREFER] = 0, [POD_PREF_NONE] = 1, [POD_PREF_AVOID] = 2, [POD_PREF_NEVER] = 3,
	};

	if (order[a->preference] == order[b->preference])
		return 0;
	return order[a->preference] < order[b->preference] ? -1 : 1;
}

/* [helpers.go] rankMemoryPressure: orderedBy(exceedMemoryRequests, priority, memory). */
static const rank_cmp_fn rank_memory_keys[] = {
	cmp_exceeds_requests, cmp_priority, cmp_usage_above_request,
};

/* [helpers.go] rankPIDPressure: orderedBy(priority, process). */
static const rank_cmp_fn rank_pid_keys[] = {
	cmp_priority, cmp_process,
};

/* [helpers.go] rankDiskPressureFunc: orderedBy(exceedDiskRequests, priority, disk), for bytes
 * and inodes alike. */
static const rank_cmp_fn rank_disk_keys[] = {
	cmp_exceeds_requests, cmp_priority, cmp_usage_above_request,
};

#define RANK_MAX_KEYS 8

struct rank_sorter {
	struct rank_ctx ctx;
	rank_cmp_fn keys[RANK_MAX_KEYS];
	size_t n_keys;
};

/* [helpers.go] multiSorter.Less: the first key that tells the pods apart decides. */
static int rank_compare(const struct rank_sorter *sorter, const struct pod *a, const struct pod *b)
{
	for (size_t k = 0; k < sorter->n_keys; k++) {
		int result = sorter->keys[k](&sorter->ctx, a, b);

		if (result)
			return result;
	}
	return 0;
}

static void insertion_sort(const struct rank_sorter *sorter, struct pod **pods, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		struct pod *pod = pods[i];
		size_t j = i;

		/* Strictly less: an equal pod stays behind the one it followed (stable). */
		while (j > 0 && rank_compare(sorter, pod, pods[j - 1]) < 0) {
			pods[j] = pods[j - 1];
			j--;
		}
		pods[j] = pod;
	}
}

/* Stable merge sort; scratch holds at least n / 2 pointers. The kubelet's sort.Sort is not
 * stable, so its order among equal pods is arbitrary; evictd keeps the caller's order. */
static void merge_sort(const struct rank_sorter *sorter, struct pod **pods, struct pod **scratch,
		       size_t n)
{
	size_t mid = n / 2, left = 0, right = mid, out = 0;

	if (n <= RANK_INSERTION_SORT_MAX) {
		insertion_sort(sorter, pods, n);
		return;
	}
	merge_sort(sorter, pods, scratch, mid);
	merge_sort(sorter, pods + mid, scratch, n - mid);
	if (rank_compare(sorter, pods[mid - 1], pods[mid]) <= 0)
		return;

	/* Merge back in place from a copy of the left run; out never passes right. */
	memcpy(scratch, pods, mid * sizeof(*pods));
	while (left < mid && right < n) {
		if (rank_compare(sorter, pods[right], scratch[left]) < 0)
			pods[out++] = pods[right++];
		else
			pods[out++] = scratch[left++];
	}
	while (left < mid)
		pods[out++] = scratch[left++];
}

static void add_keys(struct rank_sorter *sorter, const rank_cmp_fn *keys, size_t n_keys)
{
	for (size_t k = 0; k < n_keys && sorter->n_keys < RANK_MAX_KEYS; k++)
		sorter->keys[sorter->n_keys++] = keys[k];
}

#define ADD_KEYS(sorter, keys) add_keys((sorter), (keys), sizeof(keys) / sizeof((keys)[0]))

static void sorter_init(struct rank_sorter *sorter, enum ev_signal signal,
			const struct rank_options *options)
{
	*sorter = (struct rank_sorter){
		.ctx = { .signal = signal, .options = options_or_defaults(options) },
	};
	sorter->keys[sorter->n_keys++] = cmp_evictable_first;
	sorter->keys[sorter->n_keys++] = cmp_known_first;
	sorter->keys[sorter->n_keys++] = cmp_unknown_qos_usage;
	if (sorter->ctx.options->daemonset_last)
		sorter->keys[sorter->n_keys++] = cmp_daemonset_last;
	sorter->keys[sorter->n_keys++] = cmp_preference;

	switch (signal_rank_kind(signal)) {
	case RANK_KIND_MEMORY:
		ADD_KEYS(sorter, rank_memory_keys);
		break;
	case RANK_KIND_PID:
		ADD_KEYS(sorter, rank_pid_keys);
		break;
	case RANK_KIND_DISK_BYTES:
	case RANK_KIND_DISK_INODES:
		ADD_KEYS(sorter, rank_disk_keys);
		break;
	case RANK_KIND_NONE:
		/* [helpers.go] has no rank function for it either; keep evictd's own keys
		 * (never-evict, DaemonSet). */
		break;
	}
}

bool rank_by_working_set(enum ev_signal signal)
{
	return signal_rank_kind(signal) == RANK_KIND_MEMORY;
}

void rank_pods(enum ev_signal signal, const struct rank_options *options, struct pod **pods,
	       size_t n_pods)
{
	struct rank_sorter sorter;
	struct pod **scratch;

	sorter_init(&sorter, signal, options);
	if (n_pods < 2)
		return;
	if (n_pods <= RANK_INSERTION_SORT_MAX) {
		insertion_sort(&sorter, pods, n_pods);
		return;
	}
	scratch = malloc((n_pods / 2 + 1) * sizeof(*scratch));
	if (!scratch) {
		/* Still correct and stable, only quadratic. */
		insertion_sort(&sorter, pods, n_pods);
		return;
	}
	merge_sort(&sorter, pods, scratch, n_pods);
	free(scratch);
}

/*
 * pods[index]'s usage went down (an upper bound replaced by the exact value): every key ranks
 * a smaller usage no earlier, so it can only move towards the end. Ties keep the order
 * rank_pods() gives for input in memory order (pods_list(): one table), the earlier pod first.
 */
void rank_resettle(enum ev_signal signal, const struct rank_options *options, struct pod **pods,
		   size_t n_pods, size_t index)
{
	struct rank_sorter sorter;
	struct pod *pod;
	size_t j;

	if (index >= n_pods)
		return;
	sorter_init(&sorter, signal, options);
	pod = pods[index];
	for (j = index; j + 1 < n_pods; j++) {
		int order = rank_compare(&sorter, pods[j + 1], pod);

		if (order > 0 || (order == 0 && (uintptr_t)pods[j + 1] > (uintptr_t)pod))
			break;
		pods[j] = pods[j + 1];
	}
	pods[j] = pod;
}

int64_t rank_pod_request(const struct rank_container_request *containers, size_t n_containers,
			 int64_t pod_level_request, int64_t overhead)
{
	int64_t total = 0, sidecars = 0, init_peak = 0;

	if (pod_level_request >= 0) {
		/* [resource] PodLevelResources: the pod-level request replaces the containers'. */
		total = pod_level_request;
	} else {
		/* [resource] aggregateContainerResourcesByFn: regular containers add up... */
		for (size_t i = 0; i < n_containers; i++) {
			if (!containers[i].init)
				total = add_saturating(total, containers[i].request);
		}
		/* ...sidecars add up too and stay running, so init container i needs its own
		 * request plus every sidecar before it; the pod needs the largest of these. */
		for (size_t i = 0; i < n_containers; i++) {
			const struct rank_container_request *c = &containers[i];
			int64_t in_use;

			if (!c->init)
				continue;
			if (c->restartable) {
				total = add_saturating(total, c->request);
				sidecars = add_saturating(sidecars, c->request);
				in_use = sidecars;
			} else {
				in_use = add_saturating(c->request, sidecars);
			}
			if (in_use > init_peak)
				init_peak = in_use;
		}
		if (init_peak > total)
			total = init_peak;
	}
	/* [resource] GetResourceRequestQuantity: overhead only on a non-zero request. */
	if (total != 0 && overhead > 0)
		total = add_saturating(total, overhead);
	return total;
}

int oom_score_adj_for(enum pod_qos qos, int64_t memory_request, int64_t memory_capacity)
{
	__int128 adjust;

	switch (qos) {
	case POD_QOS_GUARANTEED:
		return GUARANTEED_OOM_SCORE_ADJ;
	case POD_QOS_BESTEFFORT:
		return BESTEFFORT_OOM_SCORE_ADJ;
	case POD_QOS_BURSTABLE:
		break;
	}

	/* The kubelet divides by the machine's capacity and would panic on 0; unknown capacity
	 * is treated like a request of 0, Burstable's most killable value. */
	if (memory_capacity <= 0)
		return BESTEFFORT_OOM_SCORE_ADJ - 1;
	if (memory_request < 0)
		memory_request = 0;
	/* [policy.go] oomScoreAdjust := 1000 - (1000*memoryRequest)/memoryCapacity, Go integer
	 * division (truncating, as C). Wide, so huge requests cannot overflow. */
	adjust = 1000 - ((__int128)1000 * memory_request) / memory_capacity;
	/* DESIGN.md §6 and the seeds: max(2, ...). (policy.go today clamps at 1000 - 997 = 3; the
	 * seed is the source, and the two differ only for requests above 99.7% of memory.) */
	if (adjust < BURSTABLE_MIN_OOM_SCORE_ADJ)
		return BURSTABLE_MIN_OOM_SCORE_ADJ;
	/* [policy.go] stay below BestEffort. */
	if (adjust == BESTEFFORT_OOM_SCORE_ADJ)
		return BESTEFFORT_OOM_SCORE_ADJ - 1;
	return (int)adjust;
}
