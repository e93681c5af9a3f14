/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Inside the API-server pods source: shared by kube/pods_source.c and kube/pods_watch.c,
 * never included from outside user/kube/. */
#ifndef EVICTD_KUBE_PODS_WATCH_H
#define EVICTD_KUBE_PODS_WATCH_H

#include <pthread.h>
#include <stdatomic.h>

#include "kube/client_internal.h"
#include "kube/report_internal.h"

struct kube_pods_source {
	struct pods_meta_source source;		/* first: pods.c hands us back this pointer */
	atomic_int refs;			/* the pods table and the watch thread */
	struct kube_client *client;
	char node[256];
	unsigned page_limit;
	int64_t watch_timeout_s;		/* 0: random in [300, 600) */
	int64_t progress_timeout_ns;		/* no event nor bookmark this long: cut the watch */
	struct kube_delay delay;		/* the reflector's backoff (watch thread only) */
	int64_t relist_spread_ns;		/* 0: none (kube_report.h KUBE_RELIST_SPREAD_NS) */
	uint64_t random_seed;			/* 0: from the clock */
	atomic_bool stopping;

	pthread_mutex_t lock;			/* guards fresh, health; cond signals both */
	pthread_cond_t cond;
	struct pod_meta_list fresh;		/* a list refresh() has not taken yet */
	bool fresh_ready;
	struct kube_pods_health health;
	/* The controller DaemonSet uids of the non-terminal pods last published, for the
	 * pressure taints' hole punch (kube/report_holes.c). */
	char (*daemonset_uids)[64];
	size_t n_daemonset_uids;

	/* Watch thread only. */
	struct pod_meta *store;			/* the pods as the list and the watch say */
	size_t n_store, cap_store;
	bool dirty;				/* changed since the last publish */
};

void kube_pods_source_unref(struct kube_pods_source *s);
void kube_pods_source_ref(struct kube_pods_source *s);
/* The store (watch thread). */
void kube_pods_store_clear(struct kube_pods_source *s);
int kube_pods_store_put(struct kube_pods_source *s, const struct pod_meta *meta);
void kube_pods_store_delete(struct kube_pods_source *s, const char *uid);
void kube_pods_store_publish(struct kube_pods_source *s);
/* Change the health under the lock; posts KUBE_EVENT_HEALTH when it changed. */
void kube_pods_health_update(struct kube_pods_source *s, void (*change)(struct kube_pods_health *, void *),
			     void *ctx);
/* Which list, and where the API server serves it from (apiserver
 * staging/src/k8s.io/apiserver/pkg/storage/cacher/delegator.go shouldDelegateList, mirrored in
 * pkg/util/flowcontrol/request/list_work_estimator.go shouldListFromStorage). */
enum list_rv {
	/* "0" with limit: the watch cache (it ignores limit at "0"), the first list. */
	LIST_RV_ZERO,
	/* The last synced resourceVersion with resourceVersionMatch=NotOlderThan and NO limit:
	 * the watch cache, at its newest revision, after a watch's 410. With a limit and no
	 * match it would be the "legacy exact match": a read from etcd AT that old revision,
	 * whose resourceVersion the new watch cache of a restarted server refuses at once (410)
	 * -- a relist loop. client-go's reflector list() turns paging off for this reason. */
	LIST_RV_LAST,
	/* none: a consistent (paged) read, after a list's own 410 or a 504 ResourceVersionTooLarge
	 * (the reflector's relistResourceVersion "": setIsLastSyncResourceVersionUnavailable). */
	LIST_RV_CONSISTENT,
};

/* What a list that failed said (kube/pods_list.c). */
struct kube_list_result {
	long status;			/* the last page's HTTP status; 0: no answer */
	int64_t retry_after_ns;
	bool too_large;			/* 504 ResourceVersionTooLarge (kube_status_too_large_rv) */
	char error[320];
};
/* The node's pods, every page, into the store (cleared first when the whole list came); rv
 * gives LIST_RV_LAST's resourceVersion and gets the list's. 0 or negative errno with result
 * filled in. Watch thread. */
int kube_pods_list(struct kube_pods_source *s, struct kube_conn *conn, enum list_rv mode, char *rv, size_t rv_len,
		   struct kube_list_result *result);
/* The source or its client is stopping. */
bool kube_pods_stopping(struct kube_pods_source *s);
/* The thread (kube/pods_watch.c): start takes a reference; stop only asks it to end (it never
 * waits: the loop calls it on a reload) and it drops its reference when it has. */
int kube_pods_watch_start(struct kube_pods_source *s);
void kube_pods_watch_stop(struct kube_pods_source *s);

#endif
