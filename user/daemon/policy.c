// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/policy.h"
#include "kube/kube_report.h"
#include "sys/clock.h"
#include "sys/log.h"

#define DEFAULT_KUBELET_DIR "/var/lib/kubelet"

static void setup_pods(struct policy *policy, const struct policy_deps *deps)
{
	struct evictd_config *config = &policy->config;
	const char *workload_roots[CONFIG_MAX_LIST];
	struct pods_meta_source *meta = NULL;
	size_t n_roots;
	int err;

	for (size_t i = 0; i < config->workload_roots.n; i++)
		workload_roots[i] = config->workload_roots.items[i];
	if (config->pods_file[0]) {
		meta = pods_file_source_new(config->pods_file, deps->node_name);
		if (!meta)
			log_err("pods file %s: out of memory", config->pods_file);
	} else if (deps->kube && !config->workload_roots.n) {
		/* The first list arrives in the background; the loop does not wait for it. */
		meta = kube_pods_source_new(&(struct kube_pods_source_options){
			.client = deps->kube,
			.node_name = deps->node_name,
		});
		policy->api_meta = meta;
		policy->meta_deadline_ns = clock_monotonic_ns() + POLICY_META_WAIT_NS;
	}
	/* Static pods are known from the node's manifests, API server or not (pods.h), in the
	 * kubelet's staticPodPath below --root; "" (the kubelet has none): from mirror pods only. */
	if (!config->workload_roots.n && config->static_pod_path[0])
		meta = pods_static_source_new(meta, &(struct pods_static_options){
			.root = config->root,
			.manifest_dir = config->static_pod_path,
			.node_name = deps->node_name,
		});
	err = pods_open(&policy->pods, &(struct pods_options){
		.root = config->root,
		.kubelet_cgroup_root = config->kubelet_cgroup_root[0] ? config->kubelet_cgroup_root : NULL,
		.workload_roots = workload_roots,
		.n_workload_roots = config->workload_roots.n,
		.workload_prefs = &config->workload_prefs,
		.meta_source = meta,
		.cheap_usage = true,
	});
	if (err) {
		log_warn("no cgroup v2 hierarchy to evict from (%s): deciding and reporting only",
			 strerror(-err));
		policy->pods = NULL;
		policy->api_meta = NULL;	/* pods_open freed it */
		return;
	}
	n_roots = pods_kill_roots(policy->pods, policy->kill_roots, POLICY_MAX_KILL_ROOTS);
	policy->kill = (struct kill_config){
		.root = config->root,
		.cgroup_mount = pods_cgroup_mount(policy->pods),
		.allowed_roots = policy->kill_roots,
		.n_allowed_roots = n_roots,
		.self_cgroup = NULL,	/* policy_read_self_cgroup() below */
		.dry_run = config->dry_run,
		.kill_timeout_ns = config->kill_timeout_ns,
	};
	policy_read_self_cgroup(policy);
	for (size_t i = 0; i < config->reclaim_commands.n; i++)
		policy->reclaim_commands[i] = config->reclaim_commands.items[i];
	reclaim_init(&policy->reclaim, &(struct reclaim_config){
		.disk_commands = config->reclaim_commands.n ? policy->reclaim_commands : NULL,
		.n_disk_commands = config->reclaim_commands.n,
		.dry_run = config->dry_run,
		.memory_reclaim = config->memory_reclaim_before_kill,
		.kill = &policy->kill,
	});
	/* A host profile that found no units has no kubepods either: say so, not "kubernetes". */
	if (!config->workload_roots.n && config->profile_effective != PROFILE_KUBERNETES)
		log_info("standalone mode (profile %s): no workload roots, nothing to evict; signals only",
			 config_profile_name(config->profile_effective));
	else
		log_info("%s mode: evicting below %s%s", config->workload_roots.n ? "standalone" : "kubernetes",
			 n_roots ? policy->kill_roots[0] : "(no roots)", n_roots > 1 ? " and others" : "");
}

/* evictd's own cgroup, which no kill may contain: read at start, on a reload and each
 * housekeeping tick, not before each kill (a /proc read in front of the cgroup.kill write).
 * Unreadable: NULL, and kill_check_cgroup() reads it before every kill as before. */
void policy_read_self_cgroup(struct policy *policy)
{
	if (!policy->pods)
		return;
	if (pods_read_self_cgroup(policy->config.root, policy->kill.cgroup_mount, policy->self_cgroup,
				  sizeof(policy->self_cgroup))) {
		policy->kill.self_cgroup = NULL;
		return;
	}
	policy->kill.self_cgroup = policy->self_cgroup;
}

int policy_new(struct policy **out, const struct evictd_config *config, const struct policy_deps *deps)
{
	struct policy *policy = calloc(1, sizeof(*policy));
	char path[PATH_MAX * 2];

	if (!policy)
		return -ENOMEM;
	policy->refs = 1;
	policy->config = *config;
	/* A host without a kubelet (standalone use) still has a root filesystem to guard. */
	snprintf(path, sizeof(path), "%s%s", config->root, config->kubelet_dir);
	if (!strcmp(config->kubelet_dir, DEFAULT_KUBELET_DIR) && access(path, F_OK) && errno == ENOENT) {
		log_info("%s does not exist: nodefs is the root filesystem (set --root-dir to change)", path);
		strcpy(policy->config.kubelet_dir, "/");
	}
	policy->source = (struct signal_source){
		.root = policy->config.root,
		.kubelet_dir = policy->config.kubelet_dir,
		.imagefs_dir = policy->config.imagefs_dir,
		.containerfs_dir = policy->config.containerfs_dir,
		.kubelet_cgroup_root = policy->config.kubelet_cgroup_root,
		.memory_refault_aware = policy->config.memory_refault_aware,
	};
	policy->now_ns = clock_monotonic_ns;
	pressure_watch_init(&policy->own_pressure);
	policy->pressure = deps->pressure ? deps->pressure : &policy->own_pressure;
	policy->decision.threshold_index = -1;
	policy->rank_options.daemonset_last = policy->config.daemonset_last;
	setup_pods(policy, deps);
	*out = policy;
	return 0;
}

struct policy *policy_ref(struct policy *policy)
{
	policy->refs++;
	return policy;
}

void policy_unref(struct policy *policy)
{
	if (!policy || --policy->refs > 0)
		return;
	reclaim_cancel(&policy->reclaim);
	if (policy->pods)
		pods_close(policy->pods);
	pressure_watch_free(&policy->own_pressure);
	free(policy);
}

bool policy_metadata_ready(const struct policy *policy)
{
	return !policy->api_meta || kube_pods_source_ready(policy->api_meta) ||
	       clock_monotonic_ns() >= policy->meta_deadline_ns;
}

const struct threshold *policy_threshold(const struct policy *policy)
{
	if (policy->decision.threshold_index < 0)
		return NULL;
	return &policy->engine.thresholds[policy->decision.threshold_index];
}

const struct pod *policy_first_in_line(struct policy *policy, enum ev_signal signal)
{
	if (policy->decision.threshold_index >= 0)
		return policy->decision.victim;
	policy_rank(policy, signal);
	for (size_t i = 0; i < policy->n_candidates; i++) {
		policy_rank_settle(policy, i);
		if (pod_is_candidate_for(policy->candidates[i], signal))
			return policy->candidates[i];
	}
	return NULL;
}

/* containerfs thresholds follow the filesystem layout, which is only known after a read. */
static void engine_follow_layout(struct policy *policy)
{
	struct threshold effective[EV_MAX_THRESHOLDS];
	size_t n;

	if (policy->engine_ready && policy->engine_layout == policy->obs.fs_layout)
		return;
	n = config_effective_thresholds(&policy->config, policy->obs.fs_layout, effective, EV_MAX_THRESHOLDS);
	/* What was observed so far survives a layout change and a reload (doc/DESIGN.md, "Runtime
	 * and policy; reload"). */
	if (policy->engine_ready) {
		policy->inherited = policy->engine;
		policy->has_inherited = true;
	}
	engine_init(&policy->engine, effective, n, policy->config.pressure_transition_period_ns);
	if (policy->has_inherited) {
		engine_carry_state(&policy->engine, &policy->inherited);
		policy->has_inherited = false;
	}
	if (policy->engine_ready)
		log_info("filesystem layout is now %s; containerfs thresholds follow it",
			 fs_layout_name(policy->obs.fs_layout));
	policy->engine_layout = policy->obs.fs_layout;
	policy->engine_ready = true;
}

int policy_refresh_pods(struct policy *policy)
{
	/* Every pointer into the table goes with the refresh. */
	policy->candidates = NULL;
	policy->n_candidates = 0;
	policy->n_settled = 0;
	policy->prerank_at_ns = 0;
	policy->decision.victim = NULL;
	if (!policy->pods)
		return -ENOENT;
	return pods_refresh(policy->pods);
}

static int cmp_table_order(const void *a, const void *b)
{
	uintptr_t pa = (uintptr_t)*(struct pod *const *)a, pb = (uintptr_t)*(struct pod *const *)b;

	return pa < pb ? -1 : pa > pb;
}

/* Every pod's usage exact, ranked from the table's order (as a fresh rank_pods() is). */
static void rank_settled(struct policy *policy)
{
	for (size_t i = 0; i < policy->n_candidates; i++) {
		pods_refine_usage(policy->pods, policy->candidates[i]);
		policy->candidates[i]->working_set_unrefined = false;
		policy->candidates[i]->processes_unrefined = false;
	}
	/* An empty table has no array: qsort(NULL, 0) is UB all the same (nonnull). */
	if (policy->n_candidates > 1)
		qsort(policy->candidates, policy->n_candidates, sizeof(*policy->candidates),
		      cmp_table_order);
	rank_pods(policy->ranked_for, &policy->rank_options, policy->candidates, policy->n_candidates);
	policy->n_settled = policy->n_candidates;
}

void policy_rank(struct policy *policy, enum ev_signal signal)
{
	if (policy_refresh_pods(policy))
		return;
	/* Disk ranking uses the per-pod disk numbers the daemon measures off the loop
	 * (daemon/disk_usage.c); the refresh keeps them for cgroups that are unchanged. */
	policy->candidates = pods_list(policy->pods, &policy->n_candidates);
	policy->rank_options.fs_layout = policy->obs.fs_layout;
	policy->ranked_for = signal;
	if (!rank_by_working_set(signal)) {
		/* Only the working set is refined lazily; the others rank by exact numbers
		 * (pids: every pod's task count, cgroup.threads walked where pids.current is
		 * missing). */
		rank_settled(policy);
		return;
	}
	rank_pods(signal, &policy->rank_options, policy->candidates, policy->n_candidates);
}

/*
 * doc/DESIGN.md §5, "Ranking 1,000 pods": the cheap refresh ranks by memory.current, an upper
 * bound of the working set. Refining a pod lowers its usage, which every key ranks no earlier
 * (rank_resettle), so once the pod at position i is exact, no pod behind it can overtake it:
 * positions 0..i are final after at most one memory.stat read per pod passed over.
 */
void policy_rank_settle(struct policy *policy, size_t upto)
{
	size_t i = policy->n_settled;

	if (!policy->pods || i >= policy->n_candidates || upto < i)
		return;
	if (upto == SIZE_MAX) {
		rank_settled(policy);
		return;
	}
	while (i <= upto && i < policy->n_candidates) {
		struct pod *pod = policy->candidates[i];

		if (pod->working_set_unrefined || pod->processes_unrefined) {
			pods_refine_usage(policy->pods, pod);
			/* Exact now, or as exact as it can be read: never refined twice. */
			pod->working_set_unrefined = pod->processes_unrefined = false;
			rank_resettle(policy->ranked_for, &policy->rank_options, policy->candidates,
				      policy->n_candidates, i);
			continue;	/* position i now holds the next pod in line */
		}
		i++;
	}
	policy->n_settled = i;
}

/*
 * The threshold to act on: the kubelet's choice (memory first, then in order: eval.act_on),
 * except that an actionable hard threshold, the OOM guard included, goes before a soft one
 * (doc/DESIGN.md, "Acting": a soft eviction may be in its grace for minutes, and a hard
 * threshold on another signal must not wait behind it).
 */
static int pick_threshold(const struct policy *policy)
{
	const struct eviction_engine *engine = &policy->engine;
	int chosen = policy->eval.act_on;

	if (chosen < 0 || engine->thresholds[chosen].hard)
		return chosen;
	for (size_t i = 0; i < engine->n_thresholds; i++)
		if (policy->eval.actionable[i] && engine->thresholds[i].hard)
			return (int)i;
	return chosen;
}

/*
 * The memory pressure criterion (DESIGN.md §1 "Memory pressure"), standalone only: the node's
 * and every workload's PSI, read on each evaluation into the memory.pressure observation,
 * which crosses its hard threshold only once a verdict holds (signals/pressure_watch.c).
 */
static void read_pressure(struct policy *policy)
{
	struct pressure_watch *watch = policy->pressure;
	struct pressure_workload *workloads = NULL;
	int64_t now = policy->now_ns();
	size_t n = 0;

	watch->criterion = policy->config.memory_pressure;
	if (!config_memory_pressure_applies(&policy->config)) {
		watch->criterion.on = false;
		memset(&policy->obs.signal[EV_SIGNAL_MEMORY_PRESSURE], 0, sizeof(policy->obs.signal[0]));
		return;
	}
	if (policy->pods && !policy_refresh_pods(policy)) {
		struct pod **pods = pods_list(policy->pods, &n);

		workloads = n ? calloc(n, sizeof(*workloads)) : NULL;
		if (!workloads)
			n = 0;
		for (size_t i = 0; i < n; i++)
			workloads[i] = (struct pressure_workload){
				.cgroup_id = pods[i]->cgroup_id,
				.cgroup_path = pods[i]->cgroup_path,
				.candidate = pod_is_candidate(pods[i]),
			};
	}
	if (pressure_watch_update(watch, policy->config.root, workloads, n, now))
		log_warn("memory pressure criterion: out of memory; judging the node alone");
	free(workloads);
	pressure_watch_observe(watch, &policy->obs.signal[EV_SIGNAL_MEMORY_PRESSURE], now);
}

/* The workload whose own pressure held is its own victim (oomd kills within the limited
 * cgroup): first in line, the others after it in the ranking's order. */
static void pressure_victim_first(struct policy *policy)
{
	uint64_t id = policy->pressure->victim_cgroup_id;

	if (!id)
		return;
	for (size_t i = 0; i < policy->n_candidates; i++) {
		struct pod *pod = policy->candidates[i];

		if (pod->cgroup_id != id)
			continue;
		if (!i)
			return;
		pods_refine_usage(policy->pods, pod);
		pod->working_set_unrefined = pod->processes_unrefined = false;
		memmove(policy->candidates + 1, policy->candidates, i * sizeof(*policy->candidates));
		policy->candidates[0] = pod;
		if (policy->n_settled < i + 1)
			policy->n_settled = 1;
		return;
	}
}

/* A ranking for signal that prerank() made at most POLICY_PRERANK_MAX_AGE_NS ago. */
static bool ranking_fresh(const struct policy *policy, enum ev_signal signal)
{
	return policy->prerank_at_ns && policy->candidates && policy->ranked_for == signal &&
	       policy->now_ns() - policy->prerank_at_ns <= POLICY_PRERANK_MAX_AGE_NS;
}

/*
 * No threshold is met. Within POLICY_PRERANK_NEAR_BYTES of a memory threshold, keep a ranking
 * for it at most POLICY_PRERANK_MAX_AGE_NS old, so that the crossing goes straight to the kill
 * (the pods refresh and the settle were 94 us of the crossing's 1 ms on the bench host,
 * bench/results.md "Detection latency (issue 24)"). Elsewhere there is no ranking, as before.
 */
static void prerank(struct policy *policy)
{
	const struct eviction_engine *engine = &policy->engine;
	int64_t margin = INT64_MAX;
	int nearest = -1;

	for (size_t i = 0; i < engine->n_thresholds; i++) {
		enum ev_signal signal = engine->thresholds[i].signal;
		const struct observation *observed = &policy->obs.signal[signal];
		int64_t distance;

		if (!(SIGNAL_MASK(signal) & SIGNAL_MASK_MEMORY) || !observed->present)
			continue;
		distance = observed->available - policy->eval.threshold_value[i];
		if (distance >= 0 && distance < margin) {
			margin = distance;
			nearest = (int)i;
		}
	}
	if (nearest < 0 || margin > POLICY_PRERANK_NEAR_BYTES || !policy->pods) {
		policy->candidates = NULL;
		policy->n_candidates = 0;
		policy->prerank_at_ns = 0;
		return;
	}
	if (ranking_fresh(policy, engine->thresholds[nearest].signal))
		return;
	policy_rank(policy, engine->thresholds[nearest].signal);
	policy_rank_settle(policy, POLICY_RANK_SETTLED - 1);
	policy->prerank_at_ns = policy->candidates ? policy->now_ns() : 0;
}

/* The victim is the first candidate outside the never-evict set (which ranks last). */
static void choose_victim(struct policy *policy, const struct threshold *threshold,
			  size_t *protected_running)
{
	struct decision *decision = &policy->decision;

	decision->victim = NULL;
	decision->n_candidates = 0;
	*protected_running = 0;
	for (size_t i = 0; i < policy->n_candidates; i++) {
		const struct pod *pod;

		if (!decision->victim)
			policy_rank_settle(policy, i);
		pod = policy->candidates[i];
		if (pod_is_candidate_for(pod, threshold->signal)) {
			decision->n_candidates++;
			if (!decision->victim)
				decision->victim = pod;
		} else if (pod_never_evict(pod) && pod->processes > 0 && !pod->exited) {
			(*protected_running)++;
		}
	}
}

int policy_evaluate(struct policy *policy, uint32_t mask)
{
	struct decision *decision = &policy->decision;
	const struct threshold *threshold;
	size_t protected_running = 0;
	int err;

	/* A wake-up reads only the signals a threshold is set on (every housekeeping tick,
	 * mask 0, reads them all for the metrics and evictctl). */
	if (!mask)
		err = signals_read(&policy->source, 0, &policy->obs);
	else if (policy->engine_ready && !(mask & engine_signal_mask(&policy->engine)))
		err = 0;	/* nothing thresholded in it: the last observations stand */
	else
		err = signals_read(&policy->source, policy->engine_ready ?
				   mask & engine_signal_mask(&policy->engine) : mask, &policy->obs);
	if (err)
		log_debug("reading signals: %s; evaluating what could be read", strerror(-err));
	read_pressure(policy);
	policy->read_done_ns = clock_monotonic_ns();
	engine_follow_layout(policy);
	engine_evaluate(&policy->engine, &policy->obs, policy->now_ns(), &policy->eval);
	policy_ahead_update(policy);
	policy->evaluated_ns = clock_monotonic_ns();

	memset(decision, 0, sizeof(*decision));
	decision->threshold_index = pick_threshold(policy);
	if (decision->threshold_index < 0) {
		/* --act-ahead: the same path as a crossing, from the ranking on (doc/DESIGN.md
		 * "Seeing ahead"). */
		decision->threshold_index = policy_ahead_pick(policy);
		decision->ahead = decision->threshold_index >= 0;
	}
	decision->dry_run = policy->config.dry_run;
	policy->preranked = false;
	if (decision->threshold_index < 0) {
		prerank(policy);
		return 0;
	}

	threshold = policy_threshold(policy);
	/* The ranking kept near a memory threshold, if it is fresh: the pods it names are
	 * still checked against their cgroup ids before any kill (act/kill.c). */
	if (ranking_fresh(policy, threshold->signal) && policy->pods) {
		policy->preranked = true;
		policy->prerank_at_ns = 0;	/* used once: the next decision ranks anew */
	} else {
		policy->candidates = NULL;
		policy->n_candidates = 0;
		policy_rank(policy, threshold->signal);
	}
	policy_rank_settle(policy, POLICY_RANK_SETTLED - 1);
	if (threshold->signal == EV_SIGNAL_MEMORY_PRESSURE)
		pressure_victim_first(policy);
	choose_victim(policy, threshold, &protected_running);
	if (!decision->victim && policy->preranked) {
		/* Nothing in the kept ranking (its pods exited, or new ones came): rank now. */
		policy->preranked = false;
		policy_rank(policy, threshold->signal);
		policy_rank_settle(policy, POLICY_RANK_SETTLED - 1);
		if (threshold->signal == EV_SIGNAL_MEMORY_PRESSURE)
			pressure_victim_first(policy);
		choose_victim(policy, threshold, &protected_running);
	}
	policy->ranked_ns = clock_monotonic_ns();
	if (!decision->victim)
		decision->reason = !policy->pods ? "no cgroup v2 tree to evict from" :
				   protected_running ? "every candidate is in the never-evict set" :
							  "no pods or workloads to evict";
	else if (decision->ahead)
		decision->reason = policy_ahead_reason(policy);
	else if (threshold->signal == EV_SIGNAL_MEMORY_PRESSURE)
		decision->reason = policy->pressure->victim_cgroup_id && decision->victim->cgroup_id ==
				   policy->pressure->victim_cgroup_id ?
				   "memory pressure: the workload's own memory.pressure stayed above the limit for the duration" :
				   "memory pressure: the node's stayed above the limit for the duration; victim by ranking";
	else if (threshold->signal == EV_SIGNAL_OOM_GUARD)
		decision->reason = "oom-guard: the kernel's MemAvailable is below the guard, OOM is near";
	else
		decision->reason = threshold->hard ? "hard threshold met" :
						     "soft threshold met for its grace period";
	return 0;
}
