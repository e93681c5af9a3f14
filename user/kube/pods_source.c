// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The API-server pod metadata source (kube_report.h): the node's pods from a list-then-watch
 * in a thread of its own, handed to the pods table without the loop ever waiting.
 *
 * This file: the source as the pods table and the daemon see it (refresh, health, the
 * published list, the store of pods the watch keeps up to date). kube/pods_watch.c: the
 * thread (list, watch, relist on 410, backoff).
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/pods_watch.h"
#include "sys/clock.h"
#include "sys/log.h"

void kube_pods_source_unref(struct kube_pods_source *s)
{
	if (atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	pod_meta_list_free(&s->fresh);
	free(s->daemonset_uids);
	free(s->store);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void kube_pods_source_ref(struct kube_pods_source *s)
{
	atomic_fetch_add(&s->refs, 1);
}

/* ---- the store (watch thread only) ----------------------------------------------------------- */

static struct pod_meta *store_find(struct kube_pods_source *s, const char *uid)
{
	for (size_t i = 0; i < s->n_store; i++)
		if (!strcmp(s->store[i].uid, uid))
			return &s->store[i];
	return NULL;
}

void kube_pods_store_clear(struct kube_pods_source *s)
{
	s->n_store = 0;
	s->dirty = true;
}

int kube_pods_store_put(struct kube_pods_source *s, const struct pod_meta *meta)
{
	struct pod_meta *slot = store_find(s, meta->uid);

	if (!slot) {
		if (s->n_store == s->cap_store) {
			size_t cap = s->cap_store ? s->cap_store * 2 : 64;
			struct pod_meta *store = realloc(s->store, cap * sizeof(*store));

			if (!store)
				return -ENOMEM;
			s->store = store;
			s->cap_store = cap;
		}
		slot = &s->store[s->n_store++];
	}
	*slot = *meta;
	s->dirty = true;
	return 0;
}

void kube_pods_store_delete(struct kube_pods_source *s, const char *uid)
{
	struct pod_meta *slot = store_find(s, uid);

	if (!slot)
		return;
	*slot = s->store[--s->n_store];
	s->dirty = true;
}

static int cmp_cgroup_uid(const void *a, const void *b)
{
	return strcmp(((const struct pod_meta *)a)->cgroup_uid, ((const struct pod_meta *)b)->cgroup_uid);
}

/* Hand the store to refresh() as a list sorted for the join; tell the daemon's loop. */
void kube_pods_store_publish(struct kube_pods_source *s)
{
	struct pod_meta_list list = { 0 };
	char (*ds_uids)[64];
	size_t kept = 0, n_ds = 0;

	if (!s->dirty)
		return;
	list.items = malloc((s->n_store ? s->n_store : 1) * sizeof(*list.items));
	ds_uids = malloc((s->n_store ? s->n_store : 1) * sizeof(*ds_uids));
	if (!list.items || !ds_uids) {
		free(list.items);
		free(ds_uids);
		return;	/* stays dirty: the next event publishes */
	}
	for (size_t i = 0; i < s->n_store; i++)
		if (s->store[i].daemonset_uid[0] && !s->store[i].terminal)
			memcpy(ds_uids[n_ds++], s->store[i].daemonset_uid, sizeof(ds_uids[0]));
	if (s->n_store)	/* an empty store may have no array: memcpy(NULL, 0) is UB */
		memcpy(list.items, s->store, s->n_store * sizeof(*list.items));
	qsort(list.items, s->n_store, sizeof(*list.items), cmp_cgroup_uid);
	/* pods.c joins by bsearch on cgroup_uid: one entry per cgroup. */
	for (size_t i = 0; i < s->n_store; i++) {
		if (kept && !strcmp(list.items[kept - 1].cgroup_uid, list.items[i].cgroup_uid))
			continue;
		list.items[kept++] = list.items[i];
	}
	list.n_items = kept;
	s->dirty = false;
	pthread_mutex_lock(&s->lock);
	pod_meta_list_free(&s->fresh);
	s->fresh = list;
	s->fresh_ready = true;
	free(s->daemonset_uids);
	s->daemonset_uids = ds_uids;
	s->n_daemonset_uids = n_ds;
	s->health.listed = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	kube_client_post(s->client, KUBE_EVENT_PODS);
}

bool kube_pods_source_has_daemonset_pod(const struct pods_meta_source *source, const char *daemonset_uid)
{
	struct kube_pods_source *s = (struct kube_pods_source *)source;
	bool found = false;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->n_daemonset_uids && !found; i++)
		found = !strcmp(s->daemonset_uids[i], daemonset_uid);
	pthread_mutex_unlock(&s->lock);
	return found;
}

/* ---- health (any thread) ---------------------------------------------------------------------- */

void kube_pods_health_update(struct kube_pods_source *s, void (*change)(struct kube_pods_health *, void *),
			     void *ctx)
{
	struct kube_pods_health before;

	pthread_mutex_lock(&s->lock);
	before = s->health;
	change(&s->health, ctx);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (before.listed != s->health.listed || before.watching != s->health.watching ||
	    before.failing != s->health.failing || before.last_status != s->health.last_status)
		kube_client_post(s->client, KUBE_EVENT_HEALTH);
}

void kube_pods_source_health(const struct pods_meta_source *source, struct kube_pods_health *health)
{
	struct kube_pods_source *s = (struct kube_pods_source *)source;

	pthread_mutex_lock(&s->lock);
	*health = s->health;
	pthread_mutex_unlock(&s->lock);
}

/* ---- the source ----------------------------------------------------------------------------- */

static int pods_source_refresh(struct pods_meta_source *source, struct pod_meta_list *list)
{
	struct kube_pods_source *s = (struct kube_pods_source *)source;
	int result = 0;

	pthread_mutex_lock(&s->lock);
	if (s->fresh_ready) {
		pod_meta_list_free(list);
		*list = s->fresh;
		memset(&s->fresh, 0, sizeof(s->fresh));
		s->fresh_ready = false;
		result = 1;
	} else if (s->health.failing) {
		result = s->health.last_err ? s->health.last_err : -EIO;	/* the thread logged it */
	}
	pthread_mutex_unlock(&s->lock);
	return result;
}

static void pods_source_destroy(struct pods_meta_source *source)
{
	struct kube_pods_source *s = (struct kube_pods_source *)source;

	kube_pods_watch_stop(s);
	kube_pods_source_unref(s);
}

/* A test's shortening of a fleet's timing, from the environment, in ms (0-3600000):
 * EVICTD_TEST_KUBE_RELIST_SPREAD_MS (the 50 s spread: tests/cli/test_kube.sh's readiness
 * checks take seconds) and EVICTD_TEST_KUBE_PROGRESS_TIMEOUT_MS (the 90 s progress bound:
 * tests/cluster/test_pods_watch.sh's quiet cluster), doc/DESIGN.md §8. Not options: a fleet
 * must not be configured out of them. fallback_ns when unset or invalid. */
static int64_t test_env_ns(const char *name, int64_t fallback_ns)
{
	const char *text = getenv(name);
	char *end;
	long long ms;

	if (!text || !text[0])
		return fallback_ns;
	errno = 0;
	ms = strtoll(text, &end, 10);
	if (errno || *end || ms < 0 || ms > 3600000) {
		log_warn("kube: %s=%s is not 0-3600000 ms; it stays %llds", name, text,
			 (long long)(fallback_ns / 1000000000));
		return fallback_ns;
	}
	log_warn("kube: %s=%lld: shortened (tests only)", name, ms);
	return ms * 1000000;
}

struct pods_meta_source *kube_pods_source_new(const struct kube_pods_source_options *options)
{
	struct kube_pods_source *s;
	pthread_condattr_t attr;

	if (!options || !options->client || !options->node_name || !options->node_name[0] ||
	    strlen(options->node_name) >= sizeof(s->node))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	atomic_init(&s->refs, 1);
	s->client = options->client;
	snprintf(s->node, sizeof(s->node), "%s", options->node_name);
	s->page_limit = options->page_limit ? options->page_limit : KUBE_PODS_DEFAULT_PAGE_LIMIT;
	s->watch_timeout_s = options->watch_timeout_s;
	s->progress_timeout_ns = options->progress_timeout_ns > 0 ? options->progress_timeout_ns :
				 test_env_ns("EVICTD_TEST_KUBE_PROGRESS_TIMEOUT_MS", KUBE_WATCH_PROGRESS_TIMEOUT_NS);
	if (s->progress_timeout_ns <= 0)
		s->progress_timeout_ns = KUBE_WATCH_PROGRESS_TIMEOUT_NS;
	s->delay = (struct kube_delay){
		.initial_ns = options->backoff_initial_ns > 0 ? options->backoff_initial_ns :
				KUBE_REFLECTOR_BACKOFF_INITIAL_NS,
		.cap_ns = options->backoff_cap_ns > 0 ? options->backoff_cap_ns : KUBE_REFLECTOR_BACKOFF_CAP_NS,
		.reset_ns = options->backoff_reset_ns > 0 ? options->backoff_reset_ns :
			    KUBE_REFLECTOR_BACKOFF_RESET_NS,
	};
	s->relist_spread_ns = options->relist_spread_ns < 0 ? 0 :
			      options->relist_spread_ns ? options->relist_spread_ns :
			      test_env_ns("EVICTD_TEST_KUBE_RELIST_SPREAD_MS", KUBE_RELIST_SPREAD_NS);
	s->random_seed = options->random_seed;
	s->source.name = "apiserver";
	s->source.refresh = pods_source_refresh;
	s->source.destroy = pods_source_destroy;
	s->health.not_watching_since_ns = clock_monotonic_ns();
	s->health.progress_ns = s->health.not_watching_since_ns;	/* stale from the start */
	s->health.progress_timeout_ns = s->progress_timeout_ns;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &attr);
	pthread_condattr_destroy(&attr);
	if (kube_pods_watch_start(s)) {
		kube_pods_source_unref(s);
		return NULL;
	}
	return &s->source;
}

int kube_pods_source_wait(struct pods_meta_source *source, int64_t timeout_ns)
{
	struct kube_pods_source *s = (struct kube_pods_source *)source;
	int64_t deadline = clock_monotonic_ns() + timeout_ns;
	struct timespec abs = { deadline / 1000000000, deadline % 1000000000 };
	int err = 0;

	pthread_mutex_lock(&s->lock);
	while (!s->health.listed && !err)
		if (pthread_cond_timedwait(&s->cond, &s->lock, &abs) == ETIMEDOUT)
			err = s->health.last_err ? s->health.last_err : -ETIMEDOUT;
	pthread_mutex_unlock(&s->lock);
	return err;
}

bool kube_pods_source_ready(const struct pods_meta_source *source)
{
	struct kube_pods_health health;

	kube_pods_source_health(source, &health);
	return health.listed;
}

int kube_pods_source_error(const struct pods_meta_source *source)
{
	struct kube_pods_health health;

	kube_pods_source_health(source, &health);
	return health.failing ? (health.last_err ? health.last_err : -EIO) : 0;
}
