/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The policy: everything derived from one configuration — the configuration itself, the
 * signal source, the eviction engine and its last evaluation, the pods table and its ranking,
 * the kill rules and the reclaim settings. It is built and validated whole (at start, and on
 * SIGHUP beside the running one), then swapped in; the old one is freed when its last
 * reference goes (an eviction in flight holds one). Long-lived state lives in struct daemon.
 */
#ifndef EVICTD_DAEMON_POLICY_H
#define EVICTD_DAEMON_POLICY_H

#include "act/kill.h"
#include "act/reclaim.h"
#include "config/config.h"
#include "core/ahead.h"
#include "core/rank.h"
#include "core/thresholds.h"
#include "ops/report.h"
#include "pods/pods.h"
#include "signals/pressure_watch.h"
#include "signals/signals.h"

#define POLICY_MAX_KILL_ROOTS 32

struct kube_client;

struct policy {
	int refs;
	struct evictd_config config;
	struct signal_source source;
	struct eviction_engine engine;
	enum fs_layout engine_layout;	/* layout the engine's containerfs thresholds follow */
	bool engine_ready;
	/* The running engine this policy replaces on a reload: what it observed is carried over
	 * when this policy's engine is first built (engine_carry_state). */
	struct eviction_engine inherited;
	bool has_inherited;
	struct observations obs;
	struct evaluation eval;
	/* The last decision. decision.victim and candidates point into the pods table and are
	 * valid until its next refresh: policy_refresh_pods() clears them. */
	struct decision decision;
	struct pod **candidates;	/* ranked for decision.threshold_index */
	size_t n_candidates;
	/* candidates[0 .. n_settled) are in their final order with exact usage; the rest are
	 * ranked by upper bounds (pods_options.cheap_usage; policy_rank_settle()). */
	size_t n_settled;
	enum ev_signal ranked_for;
	int64_t prerank_at_ns;		/* when prerank() ranked them near a threshold; 0: none */
	bool preranked;			/* the decision used the ranking kept near a threshold */
	/* When the last evaluation had read, evaluated and ranked (CLOCK_MONOTONIC, for the
	 * detection path's log line). */
	int64_t read_done_ns, evaluated_ns, ranked_ns;
	int64_t (*now_ns)(void);	/* monotonic clock; injectable */

	/* NULL when no cgroup v2 tree was found (decisions only). */
	struct pods *pods;
	/* Pod metadata from the API server (owned by pods); NULL for a file or none. Evictions
	 * wait for its first list until meta_deadline_ns, so that static pods are known. */
	struct pods_meta_source *api_meta;
	int64_t meta_deadline_ns;
	struct rank_options rank_options;
	struct kill_config kill;
	char self_cgroup[PATH_MAX];	/* kill.self_cgroup when it could be read */
	const char *kill_roots[POLICY_MAX_KILL_ROOTS];
	const char *reclaim_commands[CONFIG_MAX_LIST];
	struct reclaim reclaim;
	/* The memory pressure criterion's clocks: the daemon's (they outlive a reload), else
	 * own_pressure (--once, tests). */
	struct pressure_watch *pressure;
	struct pressure_watch own_pressure;
	/* Each signal's recent readings, for its time to exhaustion (doc/DESIGN.md "Seeing
	 * ahead"; kept across a reload), and the decision's reason when it acts ahead. */
	struct ahead_series ahead[EV_SIGNAL_COUNT];
	char ahead_reason[224];
};

/* What the policy takes from the runtime: the API client for pod metadata (NULL = none). */
struct policy_deps {
	struct kube_client *kube;
	const char *node_name;
	struct pressure_watch *pressure;	/* NULL: the policy keeps its own */
};

/* Build from a validated configuration. A missing cgroup v2 tree is not fatal: the policy then
 * decides and reports but has nothing to kill. 0 or -ENOMEM. One reference. */
int policy_new(struct policy **out, const struct evictd_config *config, const struct policy_deps *deps);
struct policy *policy_ref(struct policy *policy);
void policy_unref(struct policy *policy);

/* Re-read the signals in mask (0 = all), evaluate, rank, fill policy->decision: the victim is
 * the first ranked pod_is_candidate(). (The act path then passes over pods already in flight.) */
int policy_evaluate(struct policy *policy, uint32_t mask);
/* Refresh the pods table (and forget the pointers into the old one); rank for signal. */
int policy_refresh_pods(struct policy *policy);
void policy_rank(struct policy *policy, enum ev_signal signal);
/* Make candidates[0 .. upto] exact: refine the usage a cheap refresh left as an upper bound
 * and move each refined pod to its place, until the first upto + 1 are settled (SIZE_MAX:
 * every pod, re-ranked from scratch). policy_evaluate() settles POLICY_RANK_SETTLED. */
void policy_rank_settle(struct policy *policy, size_t upto);
/* Settled by every evaluation: the victim, the log line and the event log's candidates. */
#define POLICY_RANK_SETTLED 16
const struct threshold *policy_threshold(const struct policy *policy);
/* The workload an eviction for signal would take now: the decision's victim, or with none the
 * first candidate of a fresh ranking (doc/DESIGN.md "Profiles": `make run` shows it). NULL:
 * nothing evictable. Valid until the next refresh. */
const struct pod *policy_first_in_line(struct policy *policy, enum ev_signal signal);
/* Within this of a memory threshold not met yet, a ranking is kept at most this old, and a
 * crossing uses it instead of ranking anew (policy.c prerank; doc/DESIGN.md "Acting"). */
#define POLICY_PRERANK_NEAR_BYTES (16LL << 20)
#define POLICY_PRERANK_MAX_AGE_NS (100LL * 1000000)
/* Seeing ahead (policy_ahead.c, doc/DESIGN.md "Seeing ahead"). Feed this evaluation's readings
 * to the series and fill the evaluation's time to exhaustion of every threshold. */
void policy_ahead_update(struct policy *policy);
/* --act-ahead: the hard threshold not met yet that is sure to be reached within the duration
 * (the soonest), or -1. */
int policy_ahead_pick(const struct policy *policy);
/* The reason of a decision to act ahead, naming the estimate (in policy->ahead_reason). */
const char *policy_ahead_reason(struct policy *policy);
/* Whether a time to exhaustion is kept for signal (not the gates, not memory.pressure). */
bool policy_ahead_applies(enum ev_signal signal);

/* Re-read evictd's own cgroup for the kill rules (at start, reloads, housekeeping). */
void policy_read_self_cgroup(struct policy *policy);
/* false while the first pod list from the API server is awaited (at most 5 s after start). */
bool policy_metadata_ready(const struct policy *policy);

#define POLICY_META_WAIT_NS (5LL * 1000000000)

/* How long a threshold's eviction waits for a pod list being read when a pod without metadata
 * is on the node (pods_meta_settling), re-deciding every POLICY_META_SETTLE_STEP_NS; then it
 * goes on with what is known (doc/DESIGN.md §5 "Pods without metadata"). */
#define POLICY_META_SETTLE_NS (2LL * 1000000000)
#define POLICY_META_SETTLE_STEP_NS (10LL * 1000000)

#endif
