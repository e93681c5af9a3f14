/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The daemon: read signals, run the engine, rank, decide, act; the event loop around it. */
#ifndef EVICTD_DAEMON_H
#define EVICTD_DAEMON_H

#include "bpf_loader/bpf_loader.h"
#include "config/config.h"
#include "ops/control.h"
#include "ops/eventlog.h"
#include "ops/metrics.h"
#include "act/kill.h"
#include "kube/kube.h"
#include "kube/kube_report.h"
#include "sys/logind.h"
#include "pods/pods.h"
#include "core/rank.h"
#include "act/reclaim.h"
#include "act/shutdown.h"
#include "ops/report.h"
#include "signals/signals.h"
#include "core/thresholds.h"

#define DAEMON_MAX_KILL_ROOTS 32
/* Kills in one burst before yielding to the loop again (each re-reads the signals). */
#define DAEMON_MAX_KILLS_PER_WAKE 16
#define DAEMON_MAX_SOURCES 320
#define DAEMON_MAX_POD_PSI 256
#define PSI_MEMORY_PATH "/proc/pressure/memory"
#define SIGNAL_MASK_ALL ((1u << EV_SIGNAL_COUNT) - 1)

struct daemon;
/* One fd in the event loop and what to do when it is ready. */
struct loop_source {
	int fd;
	void (*handle)(struct daemon *daemon, struct loop_source *source, uint32_t revents);
	void *ctx;
	bool borrowed;		/* the fd belongs to another module, which closes it */
};

struct daemon {
	struct evictd_config config;
	struct signal_source source;
	struct eviction_engine engine;
	enum fs_layout engine_layout;	/* layout the engine's containerfs thresholds follow */
	bool engine_ready;
	struct observations obs;
	struct evaluation eval;
	struct decision decision;
	int64_t (*now_ns)(void);	/* monotonic clock; injectable */

	/* Candidates: NULL when no cgroup v2 tree was found (decisions only). */
	struct pods *pods;
	struct pod **candidates;	/* ranked for decision.threshold_index */
	size_t n_candidates;
	struct rank_options rank_options;
	struct kill_config kill;
	const char *kill_roots[DAEMON_MAX_KILL_ROOTS];
	const char *reclaim_commands[CONFIG_MAX_LIST];
	struct reclaim reclaim;
	struct kill_result last_kill;
	uint64_t evictions;
	uint64_t evictions_failed;

	/* For SIGHUP: the command line the configuration came from. */
	int argc;
	char **argv;
	/* What the last logged decision was, so each decision is logged once. */
	int logged_threshold_index;
	char logged_victim[4096];
	uint64_t evaluations;

	/* Event loop. */
	int epoll_fd;
	struct loop_source sources[DAEMON_MAX_SOURCES];
	uint32_t pending_mask;		/* signals to re-read after this batch of wake-ups */
	bool housekeeping_due;
	int grace_timer_fd;		/* fires when a met soft threshold's grace period ends */
	bool stop;
	bool psi_enabled;
	uint64_t psi_wakeups;
	/* A PSI trigger on each pod's memory.pressure: a pod stalling in its own limit. */
	struct pod_psi {
		char cgroup_path[512];
		struct loop_source *source;
		bool seen;
	} *pod_psi;
	size_t n_pod_psi;

	/* Operations (metrics, decision log, control socket): carried over by daemon_reload. */
	struct daemon_ops *ops;

	/* BPF data plane; NULL when off (--no-bpf) or unavailable (then polling and PSI). */
	struct bpf_loader *bpf;
	const char *bpf_state;		/* "on", "off (--no-bpf)", "unavailable (...)" */
	uint64_t bpf_wakeups;
	uint64_t kernel_oom_kills_seen;	/* mark_victim records */
	int64_t wake_ktime_ns;		/* kernel time of the wake-up being handled; 0: none */
	int64_t last_wake_latency_ns;	/* kernel event -> our handler, last wake-up */

	/* Graceful node shutdown (DESIGN.md §7); logind NULL when not configured. */
	struct shutdown_manager shutdown;
	bool shutdown_ready;
	struct shutdown_killer *shutdown_killer;
	struct logind *logind;
	int shutdown_timer_fd;
	bool shutdown_all_pods_gone;	/* every termination of this sequence emptied its cgroup */

	/* Kubernetes API reporting; NULL when off. Created once, kept across reloads. */
	struct kube_client *kube;
	struct kube_report *kube_report;
	char node_name[256];
};

struct daemon_ops {
	struct metrics *metrics;
	struct eventlog *eventlog;
	struct control *control;
	struct metrics_snapshot snapshot;
	int64_t started_ns;
	int64_t last_evaluation_unix_ns;
};

int64_t daemon_monotonic_ns(void);
/* Set up from a validated configuration: signal sources, pods, kill rules. A missing cgroup
 * v2 tree is not fatal: evictd then decides and reports but has nothing to kill. */
int daemon_init(struct daemon *daemon, const struct evictd_config *config);
void daemon_destroy(struct daemon *daemon);
/* Re-read the configuration from daemon->argv; on any error keep the old one and say why.
 * Returns 0 when the new configuration is in force. */
int daemon_reload(struct daemon *daemon);
/* Re-read the signals in mask (0 = all), evaluate, rank, fill daemon->decision. */
int daemon_evaluate(struct daemon *daemon, uint32_t mask);
/* Evaluate and act on the decision: node-level reclaim first, then one kill, re-read, and
 * again while a threshold is still met (at most DAEMON_MAX_KILLS_PER_WAKE). Returns the
 * number of pods killed. */
int daemon_handle(struct daemon *daemon, uint32_t mask);
/* Log the current decision if it differs from the last one logged. */
void daemon_log_decision(struct daemon *daemon);
/* Register fd with the event loop (after daemon_run has set it up, or from its setup). */
int daemon_add_source(struct daemon *daemon, int fd, uint32_t events,
		      void (*handle)(struct daemon *daemon, struct loop_source *source, uint32_t revents),
		      void *ctx);
/* The same for an fd another module owns and closes (ring buffer, sockets, the bus). */
int daemon_add_borrowed_source(struct daemon *daemon, int fd, uint32_t events,
			       void (*handle)(struct daemon *daemon, struct loop_source *source,
					      uint32_t revents),
			       void *ctx);
void daemon_remove_source(struct daemon *daemon, struct loop_source *source);
/* Run until SIGTERM/SIGINT; returns the exit status. */
int daemon_run(struct daemon *daemon);

#endif
