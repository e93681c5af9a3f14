/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What evictd tells the API server (issue 6), and the API-server pod metadata source.
 *
 *  - An eviction, at the decision and before the kill, as the kubelet's eviction manager
 *    writes it: a pods/status patch (metadata.uid as precondition) to phase Failed, reason
 *    Evicted, the kubelet's message and the DisruptionTarget condition (reason
 *    TerminationByKubelet), and a Warning Event "Evicted" on the pod (core/v1, repeats
 *    counted). A soft kill is held for the patch at most KUBE_EVICTION_STATUS_WAIT_NS. No DELETE:
 *    why, see the comment block at the top of kube/report.c.
 *  - Pressure: while MemoryPressure, DiskPressure or PIDPressure holds (the engine's
 *    conditions, which already include evictionPressureTransitionPeriod), the node carries
 *    evictd's own NoSchedule taint evictd.io/{memory,disk,pid}-pressure. The kubelet owns
 *    the node conditions; evictd does not touch them.
 *  - Node shutdown: on PrepareForShutdown, taint evictd.io/shutdown:NoSchedule and a Normal
 *    Event "Shutdown" on the node; each pod, once its kill has ended, Failed with reason
 *    Terminated and the kubelet's message; opt-in, once every pod is gone, the taint
 *    node.kubernetes.io/out-of-service=nodeshutdown:NoExecute, recorded in the state dir and
 *    removed at the next start.
 *
 * Every call from the daemon is non-blocking: the requests go to the kube client's queue
 * and its worker (kube.h). The node's taints are reconciled by a task in that worker:
 * read the node, compute the new list leaving other taints alone, merge-patch it with the
 * resourceVersion just read, and read again on 409 Conflict.
 */
#ifndef EVICTD_KUBE_REPORT_H
#define EVICTD_KUBE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kube/kube.h"
#include "pods/pods.h"
#include "core/rank.h"
#include "signals/signals.h"
#include "core/thresholds.h"

#define KUBE_REPORT_COMPONENT "evictd"
#define KUBE_REPORT_DEFAULT_STATE_DIR "/var/lib/evictd"
/* In the state dir: present while evictd owns an out-of-service taint on the node. */
#define KUBE_OUT_OF_SERVICE_RECORD "out-of-service-taint"

/* The kubelet's strings (pkg/kubelet/eviction, pkg/kubelet/nodeshutdown). */
#define KUBE_REASON_EVICTED "Evicted"
#define KUBE_REASON_SHUTDOWN_TERMINATED "Terminated"
#define KUBE_MESSAGE_SHUTDOWN "Pod was terminated in response to imminent node shutdown."
#define KUBE_CONDITION_DISRUPTION_TARGET "DisruptionTarget"
#define KUBE_REASON_TERMINATION_BY_KUBELET "TerminationByKubelet"
/* Set on the pod (the time of the patch) in the same pods/status patch as the terminal phase:
 * a change of metadata makes it an UPDATE for the kubelet's pod config
 * (pkg/kubelet/config/config.go checkAndUpdatePod, podsDifferSemantically compares
 * annotations, not status), so its pod worker sees the API's Failed phase at once and tears
 * the pod down (pkg/kubelet/pod_workers.go UpdatePod: "Pod is in a terminal phase"). A
 * status-only change is a reconcile: the status manager writes its cached Running back within
 * ~10 s and the pod restarts in place (doc/DESIGN.md §8, seen on a real kubelet). */
#define KUBE_ANNOTATION_FAILED_AT "evictd.io/failed-at"

#define KUBE_TAINT_KEY_MEMORY_PRESSURE "evictd.io/memory-pressure"
#define KUBE_TAINT_KEY_DISK_PRESSURE "evictd.io/disk-pressure"
#define KUBE_TAINT_KEY_PID_PRESSURE "evictd.io/pid-pressure"
#define KUBE_TAINT_KEY_SHUTDOWN "evictd.io/shutdown"
#define KUBE_TAINT_KEY_OUT_OF_SERVICE "node.kubernetes.io/out-of-service"
#define KUBE_TAINT_VALUE_OUT_OF_SERVICE "nodeshutdown"

/* ---- formatting (pure) ------------------------------------------------------------------ */

/* resource.Quantity's formats, for printing as Quantity.String() does. */
enum kube_quantity_format {
	KUBE_QUANTITY_BINARY_SI,	/* 100Mi; |v| < 1024 prints as decimal SI */
	KUBE_QUANTITY_DECIMAL_SI,	/* 1k, 5M */
	KUBE_QUANTITY_DECIMAL_EXPONENT,	/* 1e9 */
};

/* Quantity.String() of an integer value in a format ("98036Ki", "1536", "1k", "0").
 * Returns the length or -ENOSPC. */
int kube_quantity_string(int64_t value, enum kube_quantity_format format, char *buf, size_t len);

/* The format a configured quantity keeps ("100Mi" binary, "500M" and "10k" decimal, "1e9"
 * exponent); a percentage threshold resolves in binary SI (GetThresholdQuantity). */
enum kube_quantity_format kube_threshold_format(const struct threshold_value *value);

/* The kubelet's signalToResource: "memory", "ephemeral-storage", "inodes", "pids". */
const char *kube_signal_resource(enum ev_signal signal);

/* One container's usage of the starved resource, when the caller knows it. */
struct kube_container_usage {
	const char *name;
	int64_t usage;		/* bytes */
	int64_t request;	/* bytes; 0 = none */
};

struct kube_eviction {
	const struct pod *pod;
	enum ev_signal signal;
	const struct threshold_value *threshold;	/* as configured (for its format) */
	int64_t threshold_quantity;	/* resolved against the capacity */
	int64_t available;		/* the observation that crossed it */
	/* Optional: the containers, for the kubelet's "Container x was using ..." sentences
	 * (only memory and ephemeral-storage, only those above their request). */
	const struct kube_container_usage *containers;
	size_t n_containers;
	/* Not NULL: *status_wait gets a handle on the status patch's first answer (NULL when
	 * nothing was queued), so that the caller's loop can hold the kill for it. */
	struct kube_status_wait **status_wait;
};
/* The most the API may delay a soft kill (--kube-eviction-status-wait): the kubelet's kill
 * never waits for the API at all (its status manager writes asynchronously,
 * pkg/kubelet/status/status_manager.go SetPodStatus), but evictd is not the kubelet: the
 * terminal phase must land first for the kubelet to stop the pod itself (preStop,
 * STOPSIGNAL) rather than restart it; a soft threshold is not urgent (a hard one cuts the hold
 * short), and a loaded API server answered in 2 s (doc/DESIGN.md §8). */
#define KUBE_EVICTION_STATUS_WAIT_NS (5000ll * 1000000)

/* The first answer to an eviction's status patch, as an event source. Any thread. */
struct kube_status_wait;
/* An eventfd, readable (EPOLLIN) once the patch has its first answer; owned by the handle
 * (watch it borrowed, never read or close it). */
int kube_status_wait_fd(const struct kube_status_wait *wait);
/* 1: no answer yet; 0: the status landed; -ESTALE: the pod is gone or another one; -EAGAIN:
 * a retryable failure (the patch is retried in the background); -ECANCELED: dropped
 * unsent; another negative errno: refused. */
int kube_status_wait_result(struct kube_status_wait *wait);
/* The caller's reference; the job keeps its own. NULL is a no-op. */
void kube_status_wait_free(struct kube_status_wait *wait);

/*
 * The kubelet's evictionMessage: "The node was low on resource: memory. Threshold quantity:
 * 100Mi, available: 50Mi. " plus "Container x was using 120Mi, request is 100Mi, has larger
 * consumption of memory. " per container; the OOM guard adds "evictd's OOM guard acted: the
 * kernel's MemAvailable was below it. ". Each sentence ends in ". " as the kubelet's do.
 * Returns the length, or -ENOSPC (buf truncated).
 */
int kube_eviction_message(const struct kube_eviction *eviction, char *buf, size_t len);

/* RFC 3339 UTC with whole seconds (metav1.Time). */
void kube_format_time(int64_t unix_ns, char *buf, size_t len);

/*
 * The pods/status strategic-merge patch that fails a pod:
 * {"metadata":{"uid":UID},"status":{"phase":"Failed","reason":R,"message":M,"conditions":[
 * {"type":"DisruptionTarget","status":"True","lastTransitionTime":T,
 * "reason":"TerminationByKubelet","message":M}]}}. Returns a malloc'd string or NULL.
 */
char *kube_pod_failed_patch(const char *uid, const char *reason, const char *message, int64_t now_unix_ns);

/* An eviction's status patch and its Event are given up after this long: the eviction is
 * over by then (the kill ledger forgets it at 2 min too); a report minutes later would
 * describe a pod that may have been replaced. */
#define KUBE_EVICTION_RETRY_FOR_NS (120ll * 1000000000)

/* The longest Event name evictd makes. */
#define KUBE_EVENT_NAME_MAX 200
/*
 * An Event's name as client-go's recorder makes it (tools/record/event.go makeEvent:
 * "<object>.<hex unix ns>"), the object's name cut so that the whole is at most
 * KUBE_EVENT_NAME_MAX and stays a DNS-1123 subdomain (apimachinery
 * pkg/util/validation/validation.go IsDNS1123Subdomain: every label ends alphanumeric), so
 * the cut never leaves a '-' or '.' before the dot. Returns the length or -ENOSPC.
 */
int kube_event_name(const char *object_name, int64_t unix_ns, char *buf, size_t len);

/* A core/v1 Event. */
struct kube_event {
	const char *namespace_;		/* the event's: the object's, "default" for a node */
	const char *name;		/* "<object>.<hex unix ns>" as client-go names them */
	const char *kind;		/* "Pod", "Node" */
	const char *object_namespace;	/* "" for a node */
	const char *object_name;
	const char *object_uid;		/* a node's UID is its name, as the kubelet's nodeRef */
	const char *type;		/* "Normal", "Warning" */
	const char *reason;
	const char *message;
	const char *component;		/* source.component, reportingComponent */
	const char *host;		/* source.host, reportingInstance */
	int32_t count;
	int64_t first_unix_ns;
	int64_t last_unix_ns;
	const char *const *annotations;	/* key, value, key, value ... */
	size_t n_annotations;		/* pairs */
};
/* The POST body. malloc'd or NULL. */
char *kube_event_body(const struct kube_event *event);
/* The strategic-merge patch for a repeat: {"count":N,"lastTimestamp":T,"message":M}. */
char *kube_event_count_patch(int32_t count, int64_t last_unix_ns, const char *message);

/* evictd's taints. */
enum kube_taint {
	KUBE_TAINT_MEMORY_PRESSURE,
	KUBE_TAINT_DISK_PRESSURE,
	KUBE_TAINT_PID_PRESSURE,
	KUBE_TAINT_SHUTDOWN,
	KUBE_TAINT_OUT_OF_SERVICE,
	KUBE_TAINT_COUNT,
};
#define KUBE_TAINT_BIT(t) (1u << (t))
#define KUBE_TAINTS_EVICTD_OWNED (KUBE_TAINT_BIT(KUBE_TAINT_MEMORY_PRESSURE) | \
				  KUBE_TAINT_BIT(KUBE_TAINT_DISK_PRESSURE) | \
				  KUBE_TAINT_BIT(KUBE_TAINT_PID_PRESSURE) | \
				  KUBE_TAINT_BIT(KUBE_TAINT_SHUTDOWN))
/* "evictd.io/memory-pressure:NoSchedule", "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute" */
const char *kube_taint_name(enum kube_taint taint);
/* The taint for a pressure condition. */
enum kube_taint kube_taint_for_condition(enum node_condition condition);

/*
 * From a Node object (JSON), the merge patch that makes the taints in `managed` present
 * exactly when set in `want`, every other taint kept as it is and in its order:
 * {"metadata":{"resourceVersion":RV},"spec":{"taints":[...]}} (null for none). A managed
 * taint matches by key and effect (and value, for out-of-service: one an operator set with
 * another value is left alone). *patch = NULL when nothing needs to change. *present gets
 * the managed taints the node carries now. Returns 0, -EINVAL (not a Node) or -ENOMEM.
 */
int kube_node_taint_patch(const char *node_json, uint32_t want, uint32_t managed, int64_t now_unix_ns,
			  char **patch, uint32_t *present);

/* ---- the reporter ----------------------------------------------------------------------- */

struct kube_report_options {
	struct kube_client *client;	/* required; must outlive every call but _free */
	const char *node_name;		/* required */
	const char *component;		/* NULL = KUBE_REPORT_COMPONENT */
	/* Where KUBE_OUT_OF_SERVICE_RECORD lives; NULL = KUBE_REPORT_DEFAULT_STATE_DIR. */
	const char *state_dir;
	bool dry_run;			/* log every write, send none (reads still happen) */
	bool no_pressure_taints;	/* --no-kube-pressure-taints */
	bool taint_out_of_service_on_shutdown;	/* --taint-out-of-service-on-shutdown */
	int64_t (*realtime_ns)(void);	/* event and condition times; NULL = the real clock */
	/* The hole punch (doc/DESIGN.md §8 "Pressure taints"): 0 = the defaults below. */
	int64_t daemonset_check_ns;	/* KUBE_DAEMONSET_CHECK_NS */
	int64_t hole_ns;		/* KUBE_TAINT_HOLE_NS, also the least time between lifts */
	/* Before the out-of-service taint (volumes may be detached right after); NULL = sync(2). */
	void (*sync_filesystems)(void);
};

struct kube_report;

/*
 * Start reporting: registers the taint reconciler. It reconciles rather than resets: nothing
 * is sent until the first kube_report_conditions() (or a shutdown) says what the node should
 * carry; then one pass keeps the evictd.io taints that still hold (a restart under pressure
 * does not flap them), removes those that no longer do, and the out-of-service taint when
 * the state dir records that evictd set it. Returns 0, -EINVAL or -ENOMEM.
 */
int kube_report_new(struct kube_report **out, const struct kube_report_options *options);
/* Detach from the client (queued requests still go out); NULL is a no-op. Either order
 * with kube_client_free is safe. */
void kube_report_free(struct kube_report *report);

/*
 * A pod chosen for eviction, before its kill: queues the status patch (Failed, Evicted) and
 * the Event, and returns at once (eviction->status_wait: a handle on the patch's answer). Pods
 * without API metadata (no namespace/name), static and mirror pods are skipped with a log
 * line. Returns 0, -ENODATA (skipped), -ENOBUFS/-ENOMEM (not queued; logged).
 */
int kube_report_eviction(struct kube_report *report, const struct kube_eviction *eviction);

/* The engine's node conditions after an evaluation; cheap when nothing changed. Changes
 * add or remove the pressure taints. */
void kube_report_conditions(struct kube_report *report, const bool conditions[EV_CONDITION_COUNT]);

/* PrepareForShutdown(true): the shutdown taint and a node Event. */
void kube_report_shutdown_begin(struct kube_report *report);
/* One pod's shutdown termination begins: Failed, reason Terminated, before its SIGTERM (as
 * an eviction's: the kubelet then stops the pod itself instead of restarting it in place);
 * *wait (NULL: not asked for) gets a handle on the patch's first answer. Same returns as
 * kube_report_eviction. */
int kube_report_shutdown_pod(struct kube_report *report, const struct pod *pod,
			     struct kube_status_wait **wait);
/* Whether the node comes back after this shutdown (logind.h's shutdown kind). */
enum kube_node_fate {
	KUBE_NODE_FATE_UNKNOWN,		/* not known (yet): never out-of-service */
	KUBE_NODE_GOING_AWAY,		/* power-off, halt */
	KUBE_NODE_COMING_BACK,		/* reboot, kexec, soft-reboot */
};
/* Every group is done. all_pods_gone: each kill ended with an empty cgroup. With
 * --taint-out-of-service-on-shutdown, all_pods_gone and a node going away (never a reboot,
 * never when unknown): sync, record, taint out-of-service. */
void kube_report_shutdown_end(struct kube_report *report, bool all_pods_gone, enum kube_node_fate fate);
/* PrepareForShutdown(false): the shutdown and out-of-service taints go. */
void kube_report_shutdown_cancel(struct kube_report *report);

/*
 * The pressure taints and DaemonSets (doc/DESIGN.md §8 "Pressure taints"). The DaemonSet
 * controller creates no daemon pod on a node with an untolerated NoSchedule taint
 * (pkg/controller/daemon/daemon_controller.go NodeShouldRunDaemonPod), and tolerates only the
 * node.kubernetes.io condition keys. So while evictd holds a pressure taint it lists the
 * DaemonSets (from the watch cache) when it sets it and every KUBE_DAEMONSET_CHECK_NS
 * (jittered); one that would run here but for evictd's taints and has no pod on the node
 * (the pod source's controller ownerReferences) makes evictd lift them until that pod is seen
 * or KUBE_TAINT_HOLE_NS passed, then put them back. Never more than one lift per DaemonSet per
 * KUBE_TAINT_HOLE_NS (doubling while its pod never comes).
 */
#define KUBE_DAEMONSET_CHECK_NS (30ll * 1000000000)
#define KUBE_TAINT_HOLE_NS (60ll * 1000000000)
/* The API pod source whose pods say which DaemonSets have theirs here (NULL: none; no hole is
 * then punched). The report holds a reference. Any thread. */
void kube_report_set_pods(struct kube_report *report, struct pods_meta_source *pods);
/* evictd_kube_pressure_taint_lifted_total. Any thread. */
uint64_t kube_report_taint_lifts(struct kube_report *report);

/* ---- the API-server pod metadata source (pods.h) ----------------------------------------- */

#define KUBE_PODS_DEFAULT_PAGE_LIMIT 500
/* A watch that has not been open for this long makes the source unready (/readyz). */
#define KUBE_WATCH_READY_GRACE_NS (10ll * 1000000000)

struct kube_pods_source_options {
	struct kube_client *client;
	const char *node_name;		/* required: fieldSelector=spec.nodeName=<node> */
	unsigned page_limit;		/* limit=; 0 = KUBE_PODS_DEFAULT_PAGE_LIMIT */
	/* timeoutSeconds= of each watch request; 0 = a pick in [300, 600) as client-go's
	 * reflector does (minWatchTimeout * (1 + rand)). */
	int64_t watch_timeout_s;
	/* The reflector's backoff (kube/client_internal.h): 0 = 800 ms, 30 s, reset after 2 min. */
	int64_t backoff_initial_ns, backoff_cap_ns, backoff_reset_ns;
	/* A watch that brings no event and no bookmark for this long is cut and made again, and
	 * the pods count as stale; 0 = KUBE_WATCH_PROGRESS_TIMEOUT_NS. */
	int64_t progress_timeout_ns;
	/* Before the list that resumes a watch after a 410 that no such wait preceded (a
	 * restarted server's answer to the watch made again at once after its cut), after a
	 * very short watch (ended within 1 s, nothing on it) or after a watch made again at once
	 * that failed: a random wait in [0, this), beside the backoff, then a list from the watch
	 * cache and a watch from it. 0 = KUBE_RELIST_SPREAD_NS (or
	 * EVICTD_TEST_KUBE_RELIST_SPREAD_MS, tests only), negative: none. */
	int64_t relist_spread_ns;
	/* The thread's jitter (spread, backoff, Retry-After); 0 = from the clock and the
	 * source's address. Tests inject it. */
	uint64_t random_seed;
};
/* An API server restart cuts every node's watch at once. client-go's reflector watches again
 * at once (its new cache answers 410) and relists after 0.8-1.6 s (tools/cache/reflector.go),
 * so 5,000 nodes send some 15,000 requests in two seconds, 5,000 of them lists. evictd watches
 * again at once as well (the 410 comes from the new cache, no etcd read), then waits a random
 * part of this before it lists (from the watch cache) and watches: 2 N requests over 50 s,
 * N / 25 a second on average (bench/results.md "Fleet"), every node watching again within a
 * minute. The pods keep their last metadata meanwhile. */
#define KUBE_RELIST_SPREAD_NS (50ll * 1000000000)
/* The API server sends a watch a bookmark about once a minute (apiserver cacher.go,
 * bookmarkFrequency = time.Minute): 90 s without one (or an event) is a dead watch. */
#define KUBE_WATCH_PROGRESS_TIMEOUT_NS (90ll * 1000000000)

/*
 * The node's pods by list-then-watch, as client-go's reflector (tools/cache/reflector.go
 * ListAndWatch) keeps them, in a thread of its own (a watch is a long-lived streaming
 * request; the client's worker stays free for reports):
 *  list   GET /api/v1/pods?fieldSelector=spec.nodeName%3D<node>&limit=N&resourceVersion=0
 *         (&continue=... until the last page), from the API server's watch cache;
 *  watch  GET /api/v1/pods?allowWatchBookmarks=true&fieldSelector=spec.nodeName%3D<node>
 *         &resourceVersion=<the list's, then the last event's or bookmark's>&timeoutSeconds=T
 *         &watch=true; ADDED/MODIFIED/DELETED applied as they come, BOOKMARK moves the
 *         resourceVersion. A watch that ends at its timeoutSeconds, is ended early by the
 *         server or a proxy, or is cut by the progress check, resumes from the last
 *         resourceVersion at once: nothing is listed again. A very short one (under 1 s,
 *         nothing on it), or one made again after a cut that fails too, waits a random spread
 *         (relist_spread_ns), then lists as below and watches from the list. 410 Gone (an ERROR event or
 *         the status) relists with resourceVersion=<last>&resourceVersionMatch=NotOlderThan
 *         and no limit (from the watch cache), and a list that gets 410 itself, or 504
 *         ResourceVersionTooLarge (a lagging API server's cache), with no resourceVersion (a
 *         consistent read) at once; so does a watch answered 504 ResourceVersionTooLarge. Relists and failures back off as the
 *         reflector does (options); a watch with no event nor bookmark within
 *         progress_timeout_ns is cut and made again. Nothing is listed periodically.
 * refresh() swaps in the list the thread published last (never waits). Each published list
 * posts KUBE_EVENT_PODS, each health change KUBE_EVENT_HEALTH (kube.h). Returns NULL on bad
 * options or allocation failure.
 */
struct pods_meta_source *kube_pods_source_new(const struct kube_pods_source_options *options);
/* Whether the first list has arrived (pods_refresh() will have the API's metadata). Never
 * blocks. */
bool kube_pods_source_ready(const struct pods_meta_source *source);
/* The error of the failing list or watch: 0 when it works or none was tried yet. */
int kube_pods_source_error(const struct pods_meta_source *source);
/* Wait for the first list, at most timeout_ns. 0, -ETIMEDOUT, or the last list error.
 * Blocks the calling thread: never from the event loop; for tests and tools. */
int kube_pods_source_wait(struct pods_meta_source *source, int64_t timeout_ns);

/* How the list-then-watch is doing, for /readyz and the evictd_kube_* metrics. */
struct kube_pods_health {
	bool listed;			/* a list has arrived */
	bool watching;			/* a watch stream is open now */
	bool failing;			/* the last list or watch attempt failed, not yet recovered */
	bool resuming;			/* the server ended the watch early: waiting out the
					 * spread before the list that resumes it (not failing) */
	long last_status;		/* its HTTP status (403, 500 ...); 0: transport, none */
	int last_err;			/* its error, negative errno */
	int64_t not_watching_since_ns;	/* monotonic, when no watch was open any more */
	uint64_t lists;			/* lists completed, relists included */
	uint64_t relists;		/* of them after 410 Gone */
	uint64_t watches;		/* watch streams opened */
	uint64_t watch_events;		/* ADDED, MODIFIED, DELETED applied */
	uint64_t bookmarks;
	uint64_t failures;		/* list or watch attempts that failed */
	int64_t progress_ns;		/* monotonic: the last list, watch event or bookmark */
	int64_t progress_timeout_ns;	/* older than this: the pods are stale */
	uint64_t stalls;		/* watches cut for bringing nothing within it */
	int64_t spread_ns;		/* the last random wait before resuming or relisting */
	int64_t delay_ns;		/* the last wait after a failure (backoff, Retry-After) */
};
void kube_pods_source_health(const struct pods_meta_source *source, struct kube_pods_health *health);
/* Whether a pod the watch last published (not terminal) has the DaemonSet with this uid as its
 * controller ownerReference. Any thread. */
bool kube_pods_source_has_daemonset_pod(const struct pods_meta_source *source, const char *daemonset_uid);

#endif
