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
/* The thread (kube/pods_watch.c): start takes a reference; stop only asks it to end (it never
 * waits: the loop calls it on a reload) and it drops its reference when it has. */
int kube_pods_watch_start(struct kube_pods_source *s);
void kube_pods_watch_stop(struct kube_pods_source *s);

#endif
