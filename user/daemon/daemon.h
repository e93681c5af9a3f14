/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The daemon's runtime: everything that lives as long as the process — the event loop, the
 * action executor, BPF, metrics, decision log and control socket, the API client, logind and
 * the shutdown sequence, the counters — and the current policy (daemon/policy.h), which a
 * SIGHUP replaces whole. See doc/DESIGN.md for the data flow.
 */
#ifndef EVICTD_DAEMON_H
#define EVICTD_DAEMON_H

#include "act/executor.h"
#include "act/grace_store.h"
#include "act/shutdown.h"
#include "bpf_loader/bpf_loader.h"
#include "core/kill_ledger.h"
#include "core/pacing.h"
#include "daemon/policy.h"
#include "daemon/warn.h"
#include "sys/loop.h"

/* Evictions in flight at once (doc/DESIGN.md, "Acting"): each further one must be needed even
 * counting what those in flight will free. */
#define DAEMON_MAX_EVICTIONS_IN_FLIGHT 8
#define DAEMON_MAX_POD_PSI 256
/* exec_request.kind of the daemon's actions. */
enum { DAEMON_ACTION_EVICTION = 1, DAEMON_ACTION_SHUTDOWN };
#define PSI_MEMORY_PATH "/proc/pressure/memory"
#define SIGNAL_MASK_ALL ((1u << EV_SIGNAL_COUNT) - 1)

struct can_evict_state;
struct can_evict_tracker;
struct metrics_can_evict;
struct daemon_ops;
struct kube_client;
struct kube_report;
struct logind;

struct daemon {
	struct policy *policy;		/* the current one; reloads swap it */
	int argc;			/* the command line a reload re-reads */
	char **argv;

	struct loop *loop;
	struct executor *executor;
	struct notify_hook *notify;	/* --on-evict, --dbus-signal (ops/notify_hook.h) */
	struct grace_store *grace_store;	/* soft graces across restarts; NULL: none */
	struct loop_source *grace_timer;	/* the end of a met soft threshold's grace period */
	uint32_t pending_mask;		/* signals to re-read after this batch of wake-ups */
	bool housekeeping_due;
	bool stop;
	bool psi_enabled;
	uint64_t psi_wakeups;
	/* A PSI trigger on each pod's memory.pressure: a pod stalling in its own limit. */
	struct pod_psi {
		char cgroup_path[512];
		uint64_t cgroup_id;		/* compared first: 1,000 pods x 256 paths */
		struct loop_source *source;	/* NULL once its cgroup went away */
		int gone_fd;			/* then: the fd, closed with the next batch */
		bool seen;
	} *pod_psi;
	size_t n_pod_psi;
	/* The memory pressure criterion's clocks, across reloads (signals/pressure_watch.h). */
	struct pressure_watch pressure;
	struct loop_source *pressure_timer;	/* re-reads it each second while a clock runs */
	/* The pre-kill warning (daemon/warn.c): when it was last said. */
	struct warn_state warn;
	struct warn_state warn_ahead;	/* --warn-ahead's (doc/DESIGN.md "Seeing ahead") */
	uint64_t warnings;		/* said, evictd_warnings_total */
	char first_in_line_said[600];	/* dry run: the would-be victim last logged */

	/* Counters, across reloads. */
	uint64_t evaluations;
	uint64_t evictions;
	uint64_t evictions_failed;
	uint64_t evictions_stale;	/* refused: the cgroup was not the one ranked (-ESTALE) */
	uint64_t evictions_unreturned;	/* completed kills that did not give back what they held */
	uint64_t escaped_processes;	/* left a victim's cgroup during its grace; killed by pidfd */
	/* What evictions of each resource freed, still owe or failed to return (act.c). */
	struct kill_ledger ledger;
	enum ev_signal ledger_signal[LEDGER_RESOURCES];	/* the signal of the last completed kill */
	bool ledger_said_hold[LEDGER_RESOURCES], ledger_said_backoff[LEDGER_RESOURCES];
	int64_t meta_settle_since_ns;		/* 0: not waiting for a pod list being read */
	struct loop_source *retry_timer;	/* the end of a hold or a failure's backoff */
	/* The last disk eviction's pod, whose volumes the kubelet is still tearing down: the next
	 * disk eviction waits for them (act.c disk_cleanup_pending). */
	char disk_cleanup_uid[64];
	int64_t disk_cleanup_until_ns;
	bool disk_cleanup_said;
	/* --dry-run: the would-be eviction last reported, so a held decision is reported once. */
	bool dry_run_reported;
	uint64_t dry_run_cgroup_id;
	int dry_run_threshold_index;
	/* Pods whose memory usage could not be read (no memory controller there), last said. */
	size_t usage_estimated_said;
	struct kill_result last_kill;
	/* What the last logged decision was, so each decision is logged once. */
	int logged_threshold_index;
	char logged_victim[4096];
	/* Node-level reclaim (doc/DESIGN.md §4): the signal whose reclaim ran and did not resolve
	 * it, so the next decision for it evicts instead of reclaiming again. */
	bool reclaim_tried[EV_SIGNAL_COUNT];
	enum ev_signal reclaim_signal;	/* what the running reclaim job is for */
	/* Per-pod disk usage, measured in a worker (daemon/disk_usage.c). */
	struct pods_disk_job *disk_job;
	struct loop_source *disk_source;
	int64_t disk_usage_at_ns;	/* when the last measurement was applied; 0: never */

	/* Operations (metrics, decision log, control socket). */
	struct daemon_ops *ops;
	/* Whether evictd can kill at all (act/can_evict.h); checked at start, on reload, each
	 * housekeeping tick and after a kill refused for lack of permission. */
	struct can_evict_tracker *can_evict;

	/* BPF data plane; NULL when off (--no-bpf) or unavailable (then polling and PSI). */
	struct bpf_loader *bpf;
	const char *bpf_state;		/* "on", "off (--no-bpf)", "unavailable (...)" */
	uint64_t bpf_wakeups;
	uint64_t kernel_oom_kills_seen;	/* mark_victim records */
	bool oom_pid_only;		/* tests: records as the int-pid mark_victim sends them */
	int64_t wake_ktime_ns;		/* kernel time of the wake-up being handled; 0: none */
	/* The detection path's stamps (CLOCK_MONOTONIC), logged with a kill a wake-up started
	 * (act.c): the last two records' kernel times, and when the batch's handler ran. */
	int64_t record_ktime_ns, prev_record_ktime_ns;
	int64_t batch_ns;
	int64_t last_wake_latency_ns;	/* kernel event -> our handler, last wake-up */
	struct loop_source *bpf_hook_check;	/* the memory hook self-check timer */
	struct loop_source *bpf_late_modules;	/* retries module tracepoints (ext4, xfs) */
	struct pacing memory_pacing;	/* the memory step and rate limit (core/pacing.c) */
	/* Without BPF: the memory signals re-read every 100 ms .. 1 s, the nearer a memory
	 * threshold the sooner (daemon_bpf.c); NULL with BPF or without the OOM guard. */
	struct loop_source *adaptive_poll;
	int64_t adaptive_poll_interval_ns;	/* the interval last armed */

	/* Graceful node shutdown (doc/DESIGN.md §7); kept as started until a restart. */
	struct shutdown_manager shutdown;
	bool shutdown_ready;
	struct logind *logind;
	struct loop_source *logind_source;
	struct loop_source *shutdown_timer;
	bool shutdown_all_pods_gone;	/* every termination of this sequence emptied its cgroup */

	/* Kubernetes API reporting; NULL when off. Created once, kept across reloads. */
	struct kube_client *kube;
	struct kube_report *kube_report;
	struct loop_source *kube_source;	/* the client's event fd */
	struct loop_source *meta_timer;		/* the first pod list's deadline */
	/* Graceful shutdown ended: the inhibitor goes once the reports are out or at a deadline. */
	bool release_pending;
	/* The out-of-service decision waits for the kind of shutdown (systemd < 255: asked
	 * after the release). */
	bool shutdown_kind_pending;
	struct loop_source *release_timer;
	char node_name[256];
};

/* Set up the runtime and the first policy from a validated configuration. 0 or negative errno. */
int daemon_init(struct daemon *daemon, const struct evictd_config *config, int argc, char **argv);
void daemon_destroy(struct daemon *daemon);
/* --once: evaluate, act (waiting for the kill to finish), report. Returns the exit status. */
int daemon_once(struct daemon *daemon);
/* Check whether evictd can evict with the current policy (logged when it changes) and show
 * it in the metrics and /readyz; the state. NULL only when out of memory. */
const struct can_evict_state *daemon_can_evict_check(struct daemon *daemon);
/* The last state as metrics and the control socket show it (known false before a check). */
void daemon_can_evict_view(const struct daemon *daemon, struct metrics_can_evict *out);
/* For act.c: a kill ended with err (0 success; -EACCES, -EPERM, -EROFS make evictd check
 * again at once and say it cannot evict until a kill works). cgroup_path may be NULL. */
void daemon_can_evict_note_kill_error(struct daemon *daemon, int err, const char *cgroup_path);
/* Who an eviction would take now and why (the decision's victim, else the first of the
 * memory ranking): "build.service (/sys/fs/cgroup/system.slice/build.service): usage 900Mi;
 * ...". false with "nothing evictable: REASON" when there is none. For `make run`, --once
 * and dry-run daemons (doc/DESIGN.md "Profiles"). */
bool daemon_first_in_line(struct daemon *daemon, enum ev_signal *signal, char *buf, size_t len);
/* Run until SIGTERM/SIGINT; returns the exit status. */
int daemon_run(struct daemon *daemon);

#endif
