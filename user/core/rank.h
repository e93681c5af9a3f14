/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Choosing the victim (DESIGN.md §5): the kubelet's rank functions for memory, disk (three
 * filesystem layouts), inodes and PIDs, and the never-evict set. */
#ifndef EVICTD_RANK_H
#define EVICTD_RANK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/observations.h"

/* The kubelet's system-critical priority (scheduling.SystemCriticalPriority). */
#define RANK_SYSTEM_CRITICAL_PRIORITY 2000000000

enum pod_qos {
	POD_QOS_GUARANTEED,
	POD_QOS_BURSTABLE,
	POD_QOS_BESTEFFORT,
};
const char *pod_qos_name(enum pod_qos qos);

/* Per-pod disk use, split the way the kubelet's summary API splits it. */
struct pod_disk_usage {
	int64_t volumes;	/* local (non-memory) volumes: emptyDir etc. */
	int64_t logs;		/* container logs */
	int64_t writable;	/* containers' writable layers (rootfs) */
	int64_t images;		/* image storage attributed to the pod (split containerfs) */
};

/* A container as the kubelet's eviction message names it (DESIGN.md §8): from the pod's spec
 * (name, memory request) and status.containerStatuses (the runtime id). */
#define POD_MAX_NAMED_CONTAINERS 8
struct pod_container {
	char name[64];
	char id[72];		/* containerID without its "runtime://" */
	int64_t memory_request;	/* bytes; 0: none */
};

/*
 * A standalone workload's preference (doc/DESIGN.md §5, "Workload preferences"): systemd's
 * ManagedOOMPreference= (the user.oomd_avoid / user.oomd_omit xattrs) or a workloadPreferences
 * entry. Never set in Kubernetes mode. Ranks before the kubelet's keys: prefer first, avoid
 * after every other evictable one (systemd-oomd's order, src/oom/oomd-util.h
 * compare_pgscan_rate_and_memory_usage); never = never evicted (oomd_sort_cgroup_contexts
 * skips MANAGED_OOM_PREFERENCE_OMIT).
 */
enum pod_preference {
	POD_PREF_NONE = 0,
	POD_PREF_PREFER,
	POD_PREF_AVOID,
	POD_PREF_NEVER,
};

struct pod {
	char uid[64];
	char namespace_[64];
	char name[256];
	char cgroup_path[4096];	/* absolute path of the pod (or workload) cgroup */
	/* The cgroup's id (its inode number on cgroup v2) when it was discovered; 0 = unknown.
	 * A kill refuses a cgroup at cgroup_path whose id differs (doc/DESIGN.md, Killing). */
	uint64_t cgroup_id;
	enum pod_qos qos;
	int32_t priority;
	bool is_static;		/* from a manifest file (kubernetes.io/config.source != api) */
	bool is_mirror;		/* kubernetes.io/config.mirror annotation */
	bool is_daemonset;	/* owned by a DaemonSet */
	bool is_self;		/* the pod/cgroup evictd runs in */
	/* A pod cgroup no metadata source explains (API server down, 403, list lag): its
	 * priority, static-ness and owner are unknown. Fails closed (doc/DESIGN.md §5): never the
	 * victim of a kubelet threshold; only the OOM guard may pick it, by QoS from the cgroup
	 * path (BestEffort, then Burstable, never Guaranteed) and usage. Zero = known (standalone
	 * workloads and pods joined with metadata). */
	bool meta_unknown;
	int64_t termination_grace_period_s;	/* -1: unset (kubelet default 30) */

	int64_t memory_request;		/* bytes, summed as the kubelet's podRequest */
	int64_t memory_working_set;	/* bytes: usage - inactive_file */
	/* memory_working_set still holds memory.current, an upper bound: a cheap refresh left
	 * memory.stat unread (doc/DESIGN.md §5, "Ranking 1,000 pods"). */
	bool working_set_unrefined;
	int64_t ephemeral_storage_request;
	struct pod_disk_usage disk_bytes;
	struct pod_disk_usage disk_inodes;
	int64_t processes;		/* tasks (threads) in the pod's cgroups */
	/* No pids.current and the threads not counted yet: processes is 1 while the cgroup
	 * is populated, else 0 (what candidacy needs); ranking by pids counts them. */
	bool processes_unrefined;
	struct pod_container containers[POD_MAX_NAMED_CONTAINERS];	/* regular, then init */
	size_t n_containers;
	/* No usage could be read for this pod. The kubelet ranks a pod without stats first
	 * in every usage comparison (helpers.go: "prioritize evicting the pod for which no
	 * stats were found"); zero-initialised = stats present. */
	bool stats_missing;
	/* No memory.current here (a workload root without the memory controller, as on hybrid
	 * hosts): memory_working_set is the resident memory of its processes (/proc/PID/statm),
	 * an estimate, never 0 by default (doc/DESIGN.md, "Acting: one victim per need"). */
	bool memory_estimated;
	bool exited;		/* cgroup.events says populated 0: nothing left to kill (zombies
				 * may still count in pids.current) */
	enum pod_preference preference;
	char preference_from[64];	/* what set it: "user.oomd_omit", "workloadPreferences[2]" */
};

/* The kubelet's IsCriticalPod, plus evictd itself: static, mirror, priority >= 2e9, self. */
bool pod_never_evict(const struct pod *pod);
/* Why pod_never_evict() holds, for logs and refusals; NULL when it does not. */
const char *pod_never_evict_reason(const struct pod *pod);
/* The one victim predicate (daemon, decision log, evictctl): not in the never-evict set, its
 * metadata known, and like the kubelet's active pods, still running (a cgroup with no task
 * left is gone). */
bool pod_is_candidate(const struct pod *pod);
/* pod_is_candidate() for the threshold's signal: the OOM guard (EV_SIGNAL_OOM_GUARD) also
 * takes pods with meta_unknown that are not Guaranteed (doc/DESIGN.md §5, "pods without
 * metadata"). Every other signal: exactly pod_is_candidate(). */
bool pod_is_candidate_for(const struct pod *pod, enum ev_signal signal);

struct rank_options {
	enum fs_layout fs_layout;
	bool daemonset_last;	/* DaemonSet pods after all others (default true) */
	/* FS_LAYOUT_SPLIT_IMAGE, imagefs signal: false (default, the seed and DESIGN.md §5): rank by
	 * pod_disk_usage.images. true: as the kubelet's source behaves, whose podDiskUsage
	 * never counts fsStatsImages, so every pod's usage there is 0 and only priority and
	 * ephemeral-storage requests order them. */
	bool imagefs_zero_usage;
};

/* Sort pods (an array of pointers) in eviction order for the starved signal: first = the
 * victim. Never-evict pods stay in the array (for reporting) and sort last; callers skip
 * them with pod_never_evict(). Pods with meta_unknown sort after every known evictable pod,
 * among themselves BestEffort, Burstable, Guaranteed, then the larger usage first (only the
 * OOM guard takes them: pod_is_candidate_for). The sort is stable. options NULL = defaults (one filesystem,
 * DaemonSets last). Keys: never-evict last, [DaemonSet last], then the kubelet's
 * rank function for the signal (memory and the OOM guard: exceeds request, priority,
 * usage - request; pid: priority, processes; disk bytes and inodes: exceeds request,
 * priority, usage - ephemeral-storage request). */
void rank_pods(enum ev_signal signal, const struct rank_options *options, struct pod **pods,
	       size_t n_pods);
/* Does the signal rank by memory_working_set (memory signals and the OOM guard)? */
bool rank_by_working_set(enum ev_signal signal);
/* Move pods[index], whose usage has just gone down, to where rank_pods() would put it; pods
 * is otherwise in rank order and holds pointers into one table (ties: table order). */
void rank_resettle(enum ev_signal signal, const struct rank_options *options, struct pod **pods,
		   size_t n_pods, size_t index);

/* The pod's usage of the starved resource, as the ranking measures it (bytes, inodes or
 * tasks; for disk signals the parts the fs layout counts), and its request for it (0 where
 * none exists: pids, inodes). Note the kubelet's third disk key subtracts the
 * ephemeral-storage request even under inode pressure; rank_request still says 0 there. */
int64_t rank_usage(enum ev_signal signal, const struct rank_options *options, const struct pod *pod);
int64_t rank_request(enum ev_signal signal, const struct pod *pod);

/* One container's request for a resource, for rank_pod_request(). Give init containers
 * in spec order: a sidecar's request counts for the init containers after it. */
struct rank_container_request {
	int64_t request;	/* bytes; 0 when unset */
	bool init;		/* listed in spec.initContainers */
	bool restartable;	/* init container with restartPolicy: Always (a sidecar) */
};

/* The kubelet's pod request for memory or ephemeral-storage (pkg/api/v1/resource
 * GetResourceRequestQuantity over component-helpers PodRequests): max(sum of containers
 * and sidecars, each init container plus the sidecars started before it), or the
 * pod-level request when one is set (pod_level_request >= 0; memory only, PodLevelResources),
 * plus the pod overhead when the total is non-zero. */
int64_t rank_pod_request(const struct rank_container_request *containers, size_t n_containers,
			 int64_t pod_level_request, int64_t overhead);

/* The kernel OOM killer's view the kubelet configures (DESIGN.md §6):
 * Guaranteed -997, BestEffort 1000, Burstable min(max(3, 1000 - 1000*req/capacity), 999).
 * The floor is 3 = 1000 + guaranteedOOMScoreAdj in pkg/kubelet/qos/policy.go (the docs'
 * "max(2, ...)" dates from when Guaranteed was -998). The kubelet passes the container's
 * memory request, not the pod's. capacity <= 0 (unknown) gives 999 for Burstable. */
int oom_score_adj_for(enum pod_qos qos, int64_t memory_request, int64_t memory_capacity);

#endif
