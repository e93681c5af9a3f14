/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Inside the reporter: shared by kube/report*.c and kube/pods_source.c, never included from
 * outside user/kube/. */
#ifndef EVICTD_KUBE_REPORT_INTERNAL_H
#define EVICTD_KUBE_REPORT_INTERNAL_H

#include <json-c/json.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "kube/kube_report.h"

#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
#define EVENT_CACHE_SIZE 128
/* The API server's default event TTL: an older event may be gone, so start a new one. */
#define EVENT_CACHE_TTL_NS (3600ll * 1000000000)
#define TAINT_CONFLICT_RETRIES 5

struct event_cache_entry {
	uint64_t key;		/* 0: empty */
	char namespace_[64];
	char name[320];
	int32_t count;
	int64_t first_unix_ns;
	int64_t last_seen_ns;	/* monotonic */
};

/* The pressure taints' hole punch (kube/report_holes.c): a DaemonSet the taints keep off. */
#define HOLE_MAX_DAEMONSETS 32
struct hole_daemonset {
	char uid[64];		/* "" = a free slot */
	char name[320];		/* namespace/name */
	int64_t next_lift_ns;	/* monotonic: no lift for it before */
	unsigned timeouts;	/* lifts in a row after which its pod did not come */
	bool waiting;		/* in the hole open now, its pod not seen yet */
	bool deferred_logged;
};

struct kube_report {
	atomic_int refs;	/* the owner, the taint task, each queued event */
	struct kube_client *client;
	char node[256];
	char component[64];
	char record_path[PATH_MAX];	/* "" = no state dir */
	bool dry_run;
	bool pressure_taints;
	bool out_of_service_on_shutdown;
	int64_t daemonset_check_ns;	/* list the DaemonSets this often while a pressure taint holds */
	int64_t hole_ns;		/* a hole lasts at most this long */
	int64_t hole_retry_ns;		/* and is made again for the same DaemonSet no sooner */
	atomic_uint_fast64_t taint_lifts;	/* evictd_kube_pressure_taint_lifted_total */
	int64_t (*realtime_ns)(void);
	void (*sync_filesystems)(void);

	pthread_mutex_t lock;	/* guards task, closed, want, managed, generation, pods */
	struct pods_meta_source *pods;	/* the API pod source (a reference held), or NULL */
	struct kube_task *task;	/* NULL once the client released it */
	bool closed;
	uint32_t want;
	uint32_t managed;
	uint64_t generation;
	/* want has been set once (the first evaluation's conditions, or a shutdown): before
	 * that the reconciler leaves the node alone, so a restart under pressure keeps the
	 * taint instead of removing and adding it again. */
	bool want_known;

	/* Caller's thread only. */
	bool conditions[EV_CONDITION_COUNT];
	bool conditions_known;

	/* Worker only. */
	/* The generation the node's taints last matched: a wake-up that finds it unchanged
	 * (woken again while it ran, for what that run already did) reads nothing. */
	uint64_t reconciled_generation;
	uint32_t lifted;		/* pressure taints held off the node for a hole */
	uint32_t reconciled_lifted;	/* lifted, when the node's taints last matched */
	int64_t check_at_ns;		/* the next DaemonSet check; 0: none planned */
	int64_t hole_until_ns;		/* 0: no hole open */
	bool check_warned;
	bool no_pods_logged;
	struct hole_daemonset holes[HOLE_MAX_DAEMONSETS];
	struct event_cache_entry events[EVENT_CACHE_SIZE];
	unsigned taint_attempt;
	unsigned taint_conflicts;
	bool taint_warned;
	bool synced;
};

/* JSON helpers (kube/report_format.c). */
char *kube_json_take(struct json_object *doc);	/* the text, malloc'd; puts doc */
void kube_json_add_string(struct json_object *obj, const char *key, const char *value);
void kube_json_add_time(struct json_object *obj, const char *key, int64_t unix_ns);
/* obj[key] when it is a string, else NULL. */
const char *kube_json_member_string(struct json_object *obj, const char *key);
/* FNV-1a of text into hash, with a field separator. */
uint64_t kube_fnv1a(uint64_t hash, const char *text);

void kube_report_ref(struct kube_report *report);
void kube_report_unref(struct kube_report *report);
/* Submit a request, or in a dry run say what it would have been (kube/report.c). */
int kube_report_send(struct kube_report *report, const char *method, const char *path,
		     const char *content_type, const char *body, const char *what, bool ok_if_gone);
/* Queue an Event; annotations: n pairs. Any thread (kube/report_events.c). */
int kube_report_emit_event(struct kube_report *report, const char *kind, const char *object_namespace,
			   const char *object_name, const char *object_uid, const char *type,
			   const char *reason, const char *message, const char *const annotations[][2],
			   size_t n_annotations, int64_t retry_for_ns);
void kube_report_node_event(struct kube_report *report, const char *type, const char *reason,
			    const char *message);
/* A pod's Failed status patch (reason: Evicted or Terminated), one job; *wait (when asked
 * for) tells its first answer (kube/report_evict.c). */
int kube_report_evict_pod(struct kube_report *report, const struct pod *pod, const char *reason,
			  const char *message, struct kube_status_wait **wait, const char *what);
/* The taint reconciler (kube/report_taints.c). */
extern const struct kube_task_ops kube_report_taint_task_ops;
bool kube_report_read_record(const char *path, const char *node);
void kube_report_set_want(struct kube_report *report, uint32_t set, uint32_t clear);
/* The hole punch, in the taint task (kube/report_holes.c): held: the pressure taints wanted on
 * the node. Updates report->lifted; returns when it wants to run again (KUBE_TASK_IDLE: not). */
int64_t kube_report_holes_step(struct kube_client *client, struct kube_report *report, uint32_t held,
			       int64_t now_ns);
/* Drop the pod source reference (the report's last unref). */
void kube_report_holes_release(struct kube_report *report);

#endif
