/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Prometheus metrics (text exposition format 0.0.4) over HTTP with libmicrohttpd.
 *
 * Threading: the HTTP server runs in libmicrohttpd's own polling thread (one thread, epoll:
 * a slow peer costs a connection slot, never a thread), and everything it
 * serves comes from a snapshot plus counters kept here under a mutex. The daemon loop stays
 * single-threaded and never shares its live state: after each evaluation it copies what the
 * metrics need (metrics_snapshot_fill + metrics_update), and it reports each eviction with
 * metrics_record_eviction. Why a thread rather than the daemon's epoll loop: the loop blocks
 * while a kill waits for its cgroup to empty (up to --kill-timeout, or a soft grace period),
 * which is exactly when an operator scrapes; the thread keeps /metrics and /healthz answering,
 * and /healthz then tells a stalled loop from a slow one by the age of the last update.
 *
 * Endpoints: GET /metrics, GET /healthz (liveness: 200 "ok", or 503 when the daemon has not
 * updated for stale_after_ns), GET /readyz (readiness: /healthz, evictd able to evict at all
 * (metrics_set_can_evict) and the pod watch, see metrics_kube_ready), anything else 404; methods other than GET and HEAD get 405.
 */
#ifndef EVICTD_METRICS_H
#define EVICTD_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "signals/signals.h"
#include "core/thresholds.h"

#define METRICS_DEFAULT_ADDRESS "127.0.0.1:9808"

#include "version.h"	/* evictd_build_info's labels */

/* evictd_loop_iteration_max_seconds: the longest iteration in the last minute, kept as the
 * maxima of METRICS_LOOP_WINDOW_BUCKETS buckets of METRICS_LOOP_BUCKET_NS each (a stall ages
 * out, so an alert on it resolves). */
#define METRICS_LOOP_WINDOW_BUCKETS 6
#define METRICS_LOOP_BUCKET_NS (10ll * 1000000000)

/* The BPF counters exported (evictd_bpf_events_total{event}, evictd_bpf_wakeups_received_total{type}). */
#define METRICS_MAX_BPF_COUNTS 16
struct metrics_bpf_count {
	char name[24];
	uint64_t value;
};
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Upper bounds of the detection-to-kill latency histogram, in seconds (+Inf implied). */
#define METRICS_LATENCY_BUCKETS                                                                     \
	{ 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 }
#define METRICS_N_LATENCY_BUCKETS 14

enum metrics_eviction_result {
	METRICS_RESULT_KILLED,
	METRICS_RESULT_FAILED,
	METRICS_RESULT_DRY_RUN,
	METRICS_RESULT_COUNT,
};
/* "killed", "failed", "dry_run". */
const char *metrics_result_name(enum metrics_eviction_result result);

struct metrics_threshold {
	enum ev_signal signal;
	bool hard;
	int64_t value;		/* resolved against the observed capacity, in the signal's unit */
	bool met;
	/* Time to exhaustion (doc/DESIGN.md "Seeing ahead"): only when sure. */
	bool ahead_sure;
	double ahead_seconds;
};

/* What the daemon knows after one evaluation: a plain copy, no pointers. */
struct metrics_snapshot {
	bool signal_present[EV_SIGNAL_COUNT];
	int64_t signal_available[EV_SIGNAL_COUNT];
	int64_t signal_capacity[EV_SIGNAL_COUNT];
	/* memory.available by the kubelet's formula and refault-aware (-1: unknown). */
	int64_t memory_available_kubelet;
	int64_t memory_available_refault_aware;
	bool file_cache_refaulting;
	struct metrics_threshold thresholds[EV_MAX_THRESHOLDS];
	size_t n_thresholds;
	bool conditions[EV_CONDITION_COUNT];

	uint64_t evaluations;			/* since start */
	int64_t last_evaluation_unix_ns;	/* CLOCK_REALTIME; 0: none yet */
	bool dry_run;
	bool kernel_oom_kills_known;
	uint64_t kernel_oom_kills;		/* /proc/vmstat oom_kill: since boot */
	bool bpf_enabled;
	unsigned int bpf_programs_attached;
	/* The BPF programs' node counters (the pinned per-CPU node_stats map, summed), known
	 * when it could be read; and the wake-up records the daemon read, by type. */
	bool bpf_counters_known;
	uint64_t bpf_wakeups_sent, bpf_wakeups_dropped, bpf_wakeups_rate_limited;
	size_t n_bpf_events, n_bpf_wakeups_received;
	struct metrics_bpf_count bpf_events[METRICS_MAX_BPF_COUNTS];
	struct metrics_bpf_count bpf_wakeups_received[METRICS_MAX_BPF_COUNTS];
	/* The event loop: its longest iteration since start and in the last minute (filled by
	 * metrics_set_loop), its last iteration (dispatch of one batch), and the actions the
	 * executor holds. A loop that stalls shows here first. */
	int64_t loop_iteration_max_ns;
	int64_t loop_iteration_window_max_ns;
	int64_t loop_iteration_last_ns;
	uint64_t actions_in_flight;
	uint64_t evictions_refused_stale;	/* the cgroup at the path was not the one ranked */
	uint64_t evictions_unreturned;		/* completed kills that did not give back their memory */
	uint64_t escaped_processes;		/* left a victim's cgroup during its grace; killed */
	uint64_t warnings;			/* pre-kill warnings said (daemon/warn.c) */
	uint64_t pressure_workloads_above;	/* workloads whose memory.pressure is above the limit */
	uint64_t pods_memory_estimated;		/* pods whose memory.current cannot be read */
	uint64_t pods_refused;			/* pods refused alone by the pod list parser */
	/* Last graceful node shutdown, whole Unix seconds as the kubelet exports them; 0: none. */
	int64_t shutdown_start_unix_s;
	int64_t shutdown_end_unix_s;
};

/* The pod metadata list-then-watch (kube_pods_health, kept here as plain fields: ops does
 * not depend on kube). */
struct metrics_kube {
	bool enabled;			/* pod metadata comes from the API server */
	bool pods_client_cert;		/* listed and watched as the kubelet's certificate */
	bool listed;
	bool watching;
	bool failing;
	bool resuming;			/* the server ended the watch early: the source waits out
					 * its spread (kube_report.h), still ready */
	long last_status;		/* of the failing attempt: 403 ...; 0 transport */
	int64_t not_watching_since_ns;	/* CLOCK_MONOTONIC */
	int64_t ready_grace_ns;		/* a watch closed this long still counts as ready */
	int64_t progress_ns;		/* CLOCK_MONOTONIC: the last list, watch event or bookmark */
	int64_t stale_after_ns;		/* no progress this long: the pods are stale (0: never) */
	uint64_t lists, relists, watches, watch_events, bookmarks, failures;
	uint64_t taint_lifts;		/* pressure taints lifted for a DaemonSet's pod */
	unsigned http_version;		/* of the API server's last answer: 11, 20; 0 none yet */
};

/* Whether evictd can kill at all (act/can_evict.h, kept here as plain fields: ops does not
 * depend on act). doc/DESIGN.md, "Cannot act". */
#define METRICS_MAX_CAN_EVICT_REASONS 8
struct metrics_can_evict {
	bool known;			/* checked at least once */
	bool can_evict;
	size_t n_reasons;
	struct metrics_can_evict_reason {
		char key[32];		/* the reason label */
		char text[600];
		bool fatal;		/* false: degraded, evictd still kills */
	} reasons[METRICS_MAX_CAN_EVICT_REASONS];
};

/* Fill the signal, threshold and condition parts of snap from one evaluation. The other
 * fields are left as they are. */
void metrics_snapshot_fill(struct metrics_snapshot *snap, const struct eviction_engine *engine,
			   const struct observations *obs, const struct evaluation *eval);

/* The kernel's OOM-kill count since boot (the oom_kill line of <root>/proc/vmstat, Linux
 * >= 4.13). 0, -ENOENT when the line is missing, or the read error (logged). */
int metrics_read_kernel_oom_kills(const char *root, uint64_t *count);

/*
 * Hostile or broken HTTP peers (a slowloris holding connections open with a header sent a
 * byte at a time, a flood of requests, malformed requests) must not keep /healthz from
 * answering: the shipped DaemonSet restarts evictd when its liveness probe fails.
 *
 * - At most METRICS_MAX_PER_CLIENT connections per client address and METRICS_MAX_CONNECTIONS
 *   in all. A connection over either limit does not get refused: the oldest connection of
 *   that client (or of anyone, for the total) that has no request being answered is shut
 *   down to make room. A slow client therefore only ever displaces itself, and a probe
 *   that sends its request at once always gets a slot.
 * - A request must arrive whole within METRICS_REQUEST_DEADLINE_NS of the connection being
 *   accepted (or of its previous answer); however slowly its bytes trickle in, it is shut
 *   down after that (checked whenever a connection arrives). Idle connections close after
 *   METRICS_IDLE_TIMEOUT_S (libmicrohttpd's MHD_OPTION_CONNECTION_TIMEOUT).
 * - libmicrohttpd's own limits (METRICS_HARD_CONNECTIONS, half of it per address) stay above
 *   these, as a backstop while connections that were shut down are being closed.
 * - libmicrohttpd's warnings (one per malformed request) and ours are logged at most once per
 *   METRICS_LOG_INTERVAL_NS, with the number of those suppressed in between.
 */
#define METRICS_MAX_CONNECTIONS 64
#define METRICS_MAX_PER_CLIENT 16
#define METRICS_HARD_CONNECTIONS 128
#define METRICS_IDLE_TIMEOUT_S 5
#define METRICS_REQUEST_DEADLINE_NS (5ll * 1000000000)
#define METRICS_LOG_INTERVAL_NS 1000000000ll

struct metrics_options {
	/* "host:port", "[v6addr]:port"; host is a numeric address. NULL, "" or "off": no HTTP
	 * server (the state is still kept, metrics_render works). Port 0 picks a free port. */
	const char *address;
	const char *version;		/* evictd_build_info{version} (NULL: EVICTD_VERSION) */
	const char *commit;		/* evictd_build_info{commit} (NULL: EVICTD_COMMIT) */
	/* /healthz answers 503 once the last metrics_update (or metrics_open) is older than
	 * this; 0: always 200 while serving. */
	int64_t stale_after_ns;
};

struct metrics;

/* Parse a --metrics-address value. Returns 0 and fills addr/len, 1 for a disabled address
 * (NULL, "", "off"), or -EINVAL (logged, naming the value). */
int metrics_parse_address(const char *text, struct sockaddr_storage *addr, socklen_t *len);

/* Start serving. Returns 0, -EINVAL (bad address), -ENOMEM, or the socket/bind/listen error
 * (logged with the address and %m). A TCP listening socket passed by systemd (LISTEN_FDS,
 * LISTEN_PID) is served instead of binding the address, unless the address is "off". */
int metrics_open(struct metrics **out, const struct metrics_options *options);
/* Stops the server thread and frees. NULL is fine. */
void metrics_close(struct metrics *metrics);
/* The bound TCP port (useful with port 0), or 0 when not serving. */
int metrics_port(const struct metrics *metrics);

/* Replace the snapshot (a copy is taken) and mark the daemon alive for /healthz. */
void metrics_update(struct metrics *metrics, const struct metrics_snapshot *snap);
/* Only the graceful-shutdown times (the shutdown sequence runs outside evaluations). */
void metrics_set_shutdown_times(struct metrics *metrics, int64_t start_unix_s, int64_t end_unix_s);
/* The event loop's iteration times and the actions in flight, after every iteration (they do
 * not wait for an evaluation). The last iteration, and the since-start maximum whenever it
 * grows, also feed the one-minute window. */
void metrics_set_loop(struct metrics *metrics, int64_t iteration_max_ns, int64_t iteration_last_ns,
		      uint64_t actions_in_flight);
/* The pod watch's state, for /readyz and the evictd_kube_* metrics. */
void metrics_set_kube(struct metrics *metrics, const struct metrics_kube *kube);
/* The can-evict state, for /readyz (503 while it cannot evict, its reasons in the body),
 * evictd_can_evict and evictd_cannot_evict_reason. */
void metrics_set_can_evict(struct metrics *metrics, const struct metrics_can_evict *state);
/* /readyz: ready unless the loop is stale (as /healthz) or, with kube->enabled, the pods are
 * not listed, the last list/watch attempt failed (a 403, a lost watch) or no watch has been
 * open for ready_grace_ns. *why (may be NULL) names what is wrong, NULL when ready. */
bool metrics_kube_ready(const struct metrics_kube *kube, int64_t now_ns, const char **why);
/* How long the pod metadata has gone without a list, watch event or bookmark once that is
 * past stale_after_ns (evictd_kube_pods_stale_seconds); 0 while it is fresh. */
double metrics_kube_stale_seconds(const struct metrics_kube *kube, int64_t now_ns);
/* One eviction outcome for signal. latency_ns >= 0 is also observed in the detection-to-kill
 * histogram (pass -1 when nothing was killed). */
void metrics_record_eviction(struct metrics *metrics, enum ev_signal signal,
			     enum metrics_eviction_result result, int64_t latency_ns);

/* The exposition text as served at this moment. Returns 0 and a malloc'd NUL-terminated
 * text (caller frees), or -ENOMEM. */
int metrics_render(struct metrics *metrics, char **text, size_t *len);

/* A maximum over a sliding window of METRICS_LOOP_WINDOW_BUCKETS * METRICS_LOOP_BUCKET_NS,
 * on a clock the caller passes (CLOCK_MONOTONIC in the daemon, made up in tests). */
struct metrics_window_max {
	int64_t bucket_epoch[METRICS_LOOP_WINDOW_BUCKETS];	/* now / bucket length + 1; 0: empty */
	int64_t bucket_max[METRICS_LOOP_WINDOW_BUCKETS];
};
void metrics_window_max_observe(struct metrics_window_max *window, int64_t now_ns, int64_t value);
/* The largest value observed in the buckets not older than the window; 0 when none. */
int64_t metrics_window_max_get(const struct metrics_window_max *window, int64_t now_ns);

/* Label value escaping of the text format: backslash, double quote and newline. Returns the
 * length needed (like snprintf); the output is always NUL-terminated when len > 0. */
size_t metrics_escape_label_value(const char *value, char *buf, size_t len);

#endif
