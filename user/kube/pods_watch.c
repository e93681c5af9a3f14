// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The pods source's thread: list, then watch, as client-go's reflector does
 * (staging/src/k8s.io/client-go/tools/cache/reflector.go: ListAndWatch, list, watchHandler,
 * relistResourceVersion), with its backoff (kube_delay) and a progress check it lacks. Why a thread of its own and not the client's worker: a watch is one
 * request that lasts minutes; in the worker it would hold every eviction report behind it. The
 * thread shares the pods with the loop only through the published list (pods_source.c) and
 * tells the loop through the client's eventfd. It never logs the token (kube/http.c).
 */
#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kube/pods_watch.h"
#include "sys/clock.h"
#include "sys/log.h"

#define WATCH_THREAD_NAME "evictd-watch"
/* A pod object is at most etcd's 1.5 MiB request limit; one watch event line is refused past
 * this (the watch is then restarted from the last resourceVersion). */
#define WATCH_MAX_EVENT_BYTES (8u << 20)
/* client-go: minWatchTimeout = 5 min, timeoutSeconds = minWatchTimeout * (1 + rand). */
#define WATCH_MIN_TIMEOUT_S 300
/* The request may last this much longer than timeoutSeconds before libcurl gives up. */
#define WATCH_TIMEOUT_SLACK_S 30
/* A watch that ends abnormally sooner than this counts as a failure (backoff), so a server
 * that accepts and drops at once is not hammered. */
#define WATCH_MIN_HEALTHY_NS (1000000000ll)
/* A watch that ends this much before its timeoutSeconds was ended early by the server. */
#define WATCH_EARLY_MARGIN_NS (1000000000ll)
#define SLEEP_SLICE_NS (200000000ll)

enum watch_result {
	WATCH_ENDED,	/* at its timeoutSeconds */
	WATCH_CUT,	/* ended by the server (or a proxy) before it: a restart, a cut stream */
	WATCH_GONE, WATCH_FAILED, WATCH_STALLED, WATCH_STOPPED,
	WATCH_TOO_LARGE,	/* 504 ResourceVersionTooLarge: a status or an ERROR event */
};

struct watch_ctx {
	struct kube_pods_source *s;
	char *line;
	size_t len, cap;
	char rv[64];
	bool gone;		/* an ERROR event with 410 */
	bool too_large;		/* an ERROR event with 504 ResourceVersionTooLarge */
	long error_code;	/* another ERROR event's code */
	bool bad;		/* garbage or an over-long line */
	char error[160];
	int64_t progress_ns;	/* this watch's start, last event or bookmark */
	bool stalled;		/* cut: nothing within s->progress_timeout_ns */
	uint64_t events;	/* events and bookmarks this watch brought */
	int64_t lasted_ns;	/* how long this watch lasted */
};

bool kube_pods_stopping(struct kube_pods_source *s)
{
	return atomic_load(&s->stopping) || kube_client_stopping(s->client);
}

static bool stopping(struct kube_pods_source *s)
{
	return kube_pods_stopping(s);
}

/* The watch's progress check, polled by libcurl about once a second even on a silent
 * connection: an API server sends every watch a bookmark about once a minute, so a watch
 * that brings neither an event nor a bookmark within the bound is dead (a black-holed
 * connection, a stuck server) and is cut. */
static bool watch_should_stop(void *ctx)
{
	struct watch_ctx *w = ctx;

	if (stopping(w->s))
		return true;
	/* Cut at three quarters of the bound: the list that checks a silent watch
	 * (WATCH_STALLED) then answers before the pods would count as stale. */
	if (clock_monotonic_ns() - w->progress_ns > w->s->progress_timeout_ns / 4 * 3)
		w->stalled = true;
	return w->stalled;
}

/* Sleep up to ns, in slices, waking for stop. */
static void sleep_ns(struct kube_pods_source *s, int64_t ns)
{
	int64_t end = clock_monotonic_ns() + ns;

	pthread_mutex_lock(&s->lock);
	while (!stopping(s)) {
		int64_t now = clock_monotonic_ns(), until = now + SLEEP_SLICE_NS < end ? now + SLEEP_SLICE_NS : end;
		struct timespec abs = { until / 1000000000, until % 1000000000 };

		if (now >= end)
			break;
		pthread_cond_timedwait(&s->cond, &s->lock, &abs);
	}
	pthread_mutex_unlock(&s->lock);
}

/* ---- health changes ---------------------------------------------------------------------- */

struct failure {
	long status;
	int err;
};

static void set_failing(struct kube_pods_health *h, void *ctx)
{
	const struct failure *f = ctx;

	h->failing = true;
	h->resuming = false;
	h->last_status = f->status;
	h->last_err = f->err;
	h->failures++;
}

static void set_listed(struct kube_pods_health *h, void *ctx)
{
	h->progress_ns = clock_monotonic_ns();
	h->failing = false;
	h->last_status = 0;
	h->last_err = 0;
	h->lists++;
	if (ctx)
		h->relists++;
}

static void set_watching(struct kube_pods_health *h, void *ctx)
{
	h->watching = true;
	h->failing = false;
	h->resuming = false;
	h->last_status = 0;
	h->last_err = 0;
	h->watches++;
}

static void set_resuming(struct kube_pods_health *h, void *ctx)
{
	h->resuming = true;
	h->spread_ns = *(const int64_t *)ctx;
}

static void set_spread(struct kube_pods_health *h, void *ctx)
{
	h->spread_ns = *(const int64_t *)ctx;
}

static void set_delay(struct kube_pods_health *h, void *ctx)
{
	h->delay_ns = *(const int64_t *)ctx;
}

/* The list that resumes a cut watch was deferred (429, 503): counted, still resuming. */
static void set_deferred(struct kube_pods_health *h, void *ctx)
{
	const struct failure *f = ctx;

	h->resuming = true;
	h->last_status = f->status;
	h->last_err = f->err;
	h->failures++;
}

static void count_stall(struct kube_pods_health *h, void *ctx)
{
	h->stalls++;
}

static void set_not_watching(struct kube_pods_health *h, void *ctx)
{
	if (h->watching)
		h->not_watching_since_ns = clock_monotonic_ns();
	h->watching = false;
}

static void count_event(struct kube_pods_health *h, void *ctx)
{
	h->progress_ns = clock_monotonic_ns();
	if (ctx)
		h->bookmarks++;
	else
		h->watch_events++;
}

/* ---- the watch ---------------------------------------------------------------------------- */

static void take_rv(struct watch_ctx *w, struct json_object *object)
{
	struct json_object *metadata;
	const char *rv;

	if (json_object_object_get_ex(object, "metadata", &metadata) &&
	    (rv = kube_json_member_string(metadata, "resourceVersion")) && rv[0])
		snprintf(w->rv, sizeof(w->rv), "%s", rv);
}

/* One event line. false stops the watch (w says why). */
static bool apply_event(struct watch_ctx *w, const char *line, size_t len)
{
	struct kube_pods_source *s = w->s;
	struct json_object *doc = json_tokener_parse(line), *object, *metadata;
	const char *type = doc ? kube_json_member_string(doc, "type") : NULL;
	bool ok = true;

	if (!type || !json_object_object_get_ex(doc, "object", &object) ||
	    !json_object_is_type(object, json_type_object)) {
		snprintf(w->error, sizeof(w->error), "a watch event that is not {type, object}");
		w->bad = true;
		json_object_put(doc);
		return false;
	}
	if (!strcmp(type, "ERROR")) {
		struct json_object *code;
		const char *message = kube_json_member_string(object, "message");

		w->error_code = json_object_object_get_ex(object, "code", &code) ? json_object_get_int(code) : 0;
		w->gone = w->error_code == 410;
		w->too_large = kube_status_object_too_large_rv(object);
		snprintf(w->error, sizeof(w->error), "ERROR event %ld: %s", w->error_code, message ? message : "");
		json_object_put(doc);
		return false;
	}
	if (!strcmp(type, "BOOKMARK")) {
		w->events++;
		w->progress_ns = clock_monotonic_ns();
		take_rv(w, object);
		kube_pods_health_update(s, count_event, (void *)1);
		/* Once a minute or so: let the metrics show the watch is alive. */
		kube_client_post(s->client, KUBE_EVENT_HEALTH);
	} else if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED") || !strcmp(type, "DELETED")) {
		const char *uid = json_object_object_get_ex(object, "metadata", &metadata) ?
				  kube_json_member_string(metadata, "uid") : NULL;
		struct pod_meta_list one = { 0 };
		char errbuf[256];

		if (!uid) {
			log_warn("kube: pods of %s: a %s event without metadata.uid; ignored", s->node, type);
		} else if (!strcmp(type, "DELETED")) {
			kube_pods_store_delete(s, uid);
		} else {
			const char *text;

			/* Watch objects carry kind Pod; the parser wants it for a single object. */
			if (!kube_json_member_string(object, "kind"))
				json_object_object_add(object, "kind", json_object_new_string("Pod"));
			text = json_object_to_json_string_ext(object, JSON_C_TO_STRING_PLAIN);
			if (pods_parse_podlist(text, strlen(text), "apiserver watch", s->node, &one, errbuf,
					       sizeof(errbuf)) == 0) {
				if (one.n_items)
					kube_pods_store_put(s, &one.items[0]);
				else
					kube_pods_store_delete(s, uid);	/* no longer bound here */
			}
			pod_meta_list_free(&one);
		}
		w->events++;
		w->progress_ns = clock_monotonic_ns();
		take_rv(w, object);
		kube_pods_health_update(s, count_event, NULL);
	} else {
		snprintf(w->error, sizeof(w->error), "a watch event of type \"%.32s\"", type);
		w->bad = true;
		ok = false;
	}
	json_object_put(doc);
	(void)len;
	return ok;
}

static bool on_watch_data(const char *data, size_t len, void *ctx)
{
	struct watch_ctx *w = ctx;

	for (size_t i = 0; i < len; i++) {
		if (data[i] != '\n') {
			if (w->len + 2 > w->cap) {
				size_t cap = w->cap ? w->cap * 2 : 65536;
				char *line;

				if (cap > WATCH_MAX_EVENT_BYTES) {
					snprintf(w->error, sizeof(w->error), "a watch event larger than %u bytes",
						 WATCH_MAX_EVENT_BYTES);
					w->bad = true;
					return false;
				}
				line = realloc(w->line, cap);
				if (!line)
					return false;
				w->line = line;
				w->cap = cap;
			}
			w->line[w->len++] = data[i];
			continue;
		}
		if (!w->len)
			continue;
		w->line[w->len] = '\0';
		if (!apply_event(w, w->line, w->len))
			return false;
		w->len = 0;
	}
	/* A chunk of events applied: one list for the loop. */
	kube_pods_store_publish(w->s);
	return true;
}

static void on_watch_open(long status, void *ctx)
{
	struct watch_ctx *w = ctx;

	if (status == 200)
		kube_pods_health_update(w->s, set_watching, NULL);
}

static enum watch_result watch_once(struct kube_pods_source *s, struct kube_conn *conn, struct watch_ctx *w,
				    int64_t timeout_s, long *status, int64_t *retry_after_ns, char *error,
				    size_t error_len)
{
	const struct kube_stream_ops ops = {
		.on_data = on_watch_data, .on_open = on_watch_open, .should_stop = watch_should_stop, .ctx = w,
		/* libcurl's own backstop, a little later than the progress check. */
		.idle_timeout_ns = s->progress_timeout_ns + 10ll * 1000000000,
	};
	struct kube_response response;
	char node[800], rv[200], path[1400];
	int64_t started = clock_monotonic_ns();
	int err;

	kube_escape(s->node, node, sizeof(node));
	kube_escape(w->rv, rv, sizeof(rv));
	snprintf(path, sizeof(path), "/api/v1/pods?allowWatchBookmarks=true&fieldSelector=spec.nodeName%%3D%s"
		 "&resourceVersion=%s&timeoutSeconds=%lld&watch=true", node, rv, (long long)timeout_s);
	w->gone = w->bad = w->stalled = w->too_large = false;
	w->progress_ns = started;
	w->error_code = 0;
	w->events = 0;
	w->len = 0;
	w->error[0] = '\0';
	err = kube_conn_request(s->client, conn, "GET", path, NULL, NULL,
				(timeout_s + WATCH_TIMEOUT_SLACK_S) * 1000000000ll, &ops, &response);
	w->lasted_ns = clock_monotonic_ns() - started;
	kube_pods_health_update(s, set_not_watching, NULL);
	kube_pods_store_publish(s);
	*status = response.status;
	*retry_after_ns = response.retry_after_ns;
	snprintf(error, error_len, "%s", w->error[0] ? w->error : response.error);
	if (response.status != 200 && kube_status_too_large_rv(response.body))
		w->too_large = true;
	kube_response_free(&response);
	if (stopping(s))
		return WATCH_STOPPED;
	if (w->stalled)
		return WATCH_STALLED;
	if (w->too_large)
		return WATCH_TOO_LARGE;
	if (w->gone || *status == 410)
		return WATCH_GONE;
	if (w->bad || w->error_code) {
		if (w->error_code)
			*status = w->error_code;
		return WATCH_FAILED;
	}
	if (*status == 200 && (!err || clock_monotonic_ns() - started >= WATCH_MIN_HEALTHY_NS))
		return clock_monotonic_ns() - started >= timeout_s * 1000000000ll - WATCH_EARLY_MARGIN_NS ?
		       WATCH_ENDED : WATCH_CUT;
	return WATCH_FAILED;
}

/* ---- the thread ---------------------------------------------------------------------------- */


struct loop_state {
	bool warned;
	bool stall_warned;
	bool spread_taken;	/* the list and watch now under way came after a spread */
	bool rewatch;		/* the watch now under way was made at once after a cut */
	bool too_large_relist;	/* the list before it was a consistent one after a 504
				 * ResourceVersionTooLarge to a watch; no watch since brought anything */
	uint64_t random;
};

static int64_t pick_spread(struct kube_pods_source *s, struct loop_state *st)
{
	return s->relist_spread_ns > 0 ? (int64_t)(kube_next_random(&st->random) % (uint64_t)s->relist_spread_ns) :
	       0;
}

/* The reflector's delay between two rounds (kube_delay: never reset by a list that worked,
 * only by 2 min without a delay), or the server's Retry-After (429 from API Priority and
 * Fairness, 503), bounded and jittered (kube_retry_after_jittered), when longer. */
static void back_off(struct kube_pods_source *s, struct loop_state *st, int64_t retry_after_ns)
{
	int64_t delay = kube_delay_next(&s->delay, clock_monotonic_ns(), kube_next_random(&st->random));
	int64_t asked = kube_retry_after_jittered(retry_after_ns, kube_next_random(&st->random));

	if (asked > delay)
		delay = asked;
	kube_pods_health_update(s, set_delay, &delay);
	sleep_ns(s, delay);
}

static void failed(struct kube_pods_source *s, struct loop_state *st, const char *what, long status, int err,
		   const char *error, int64_t retry_after_ns)
{
	struct failure f = { .status = status, .err = err ? err : -EIO };

	kube_pods_health_update(s, set_failing, &f);
	if (!st->warned)
		log_warn("kube: pods of %s: %s: %s; retrying with backoff%s", s->node, what,
			 error[0] ? error : strerror(-f.err),
			 status != 403 ? "" : kube_client_config(s->client)->pods_client_cert[0] ?
			 " (as the kubelet's client certificate: the API server's Node authorizer lets a node list "
			 "and watch its own pods, --authorization-mode=Node; or --kube-pods-client-cert=none with "
			 "tools/overlays/cluster-wide-pod-read)" :
			 " (with the token: evictd's service account needs list and watch on pods, "
			 "tools/overlays/cluster-wide-pod-read, or --kube-pods-client-cert with the kubelet's certificate)");
	if (retry_after_ns > 0 && (status == 429 || status == 503))
		log_debug("kube: pods of %s: %s: Retry-After %llds", s->node, what,
			  (long long)(retry_after_ns / 1000000000));
	st->warned = true;
	back_off(s, st, status == 429 || status == 503 ? retry_after_ns : 0);
}

/* The list that resumes a cut watch got 429 or 503: the server is alive and overloaded, most
 * likely by the whole fleet that its restart or a proxy cut at once. Every node it refused
 * would come back within Retry-After plus its jitter of the overload's end, two requests each
 * (list, watch): on 500 nodes and Retry-After 5 s, 115 requests a second (bench/results.md
 * "Fleet", storm). So the extra beyond Retry-After is a new random part of the spread, not of
 * Retry-After, and the node stays resuming, not failing: its pods are as old as the cut, and
 * their age still counts towards the progress bound. */
static void resume_deferred(struct kube_pods_source *s, struct loop_state *st, long status, int err,
			    const char *error, int64_t retry_after_ns)
{
	struct failure f = { .status = status, .err = err ? err : -EIO };
	int64_t delay = kube_delay_next(&s->delay, clock_monotonic_ns(), kube_next_random(&st->random));
	int64_t spread = pick_spread(s, st), asked = kube_retry_after_bounded(retry_after_ns) + spread;

	if (asked > delay)
		delay = asked;
	if (!st->warned)
		log_warn("kube: pods of %s: list: %s; resuming in %.1fs", s->node, error[0] ? error : strerror(-f.err),
			 (double)delay / 1e9);
	st->warned = true;
	/* The wait first, then the failure it is for: whoever sees the count sees the wait. */
	kube_pods_health_update(s, set_spread, &spread);
	kube_pods_health_update(s, set_delay, &delay);
	kube_pods_health_update(s, set_deferred, &f);
	sleep_ns(s, delay);
}

/* Wait a random part of the spread (KUBE_RELIST_SPREAD_NS), "resuming" meanwhile, before the
 * list from the watch cache (LIST_RV_LAST) that resumes the watch: the pods are only as old as
 * the cut, /readyz stays ready and their age still counts towards the progress bound. */
static void resume_after_spread(struct kube_pods_source *s, struct loop_state *st, const char *why)
{
	int64_t spread = pick_spread(s, st);

	log_info("kube: pods of %s: %s; listing from the watch cache in %.1fs", s->node, why, (double)spread / 1e9);
	kube_pods_health_update(s, set_resuming, &spread);
	sleep_ns(s, spread);
	st->spread_taken = true;
}

/* How a restarting API server, or the load balancer in front of it, answers the watch made at
 * once after its cut: no connection, a broken stream, 429 from a watch cache still
 * initialising (apiserver pkg/storage/cacher/cacher.go Watch: ResilientWatchCacheInitialization,
 * "storage is (re)initializing"), 5xx. A 401, 403 or other 4xx is an answer of its own. */
static bool server_going(long status)
{
	return status < 400 || status == 429 || status >= 500;
}

static void *watch_main(void *arg)
{
	struct kube_pods_source *s = arg;
	struct watch_ctx w = { .s = s };
	struct loop_state st = { .random = s->random_seed ? s->random_seed :
					   (uint64_t)clock_monotonic_ns() ^ (uint64_t)(uintptr_t)s };
	enum list_rv mode = LIST_RV_ZERO;
	bool have_list = false, relisting = false, after_spread, was_rewatch, very_short;
	struct kube_conn conn;
	int64_t retry_after_ns;
	char error[320];
	long status;

	pthread_setname_np(pthread_self(), WATCH_THREAD_NAME);
	if (kube_conn_init(&conn)) {
		log_err("kube: pods of %s: out of memory; no pod metadata from the API server", s->node);
		goto out;
	}
	/* The pod list and watch only: the kubelet's identity, scoped to this node's pods by the
	 * Node authorizer, when configured (kube/config.c pods_identity). */
	if (kube_client_config(s->client)->pods_client_cert[0])
		conn.client_cert = kube_client_config(s->client)->pods_client_cert;
	while (!stopping(s)) {
		enum watch_result result;
		int64_t timeout_s;
		int err;

		if (!have_list) {
			struct kube_list_result listed;

			err = kube_pods_list(s, &conn, mode, w.rv, sizeof(w.rv), &listed);
			status = listed.status;
			retry_after_ns = listed.retry_after_ns;
			snprintf(error, sizeof(error), "%s", listed.error);
			if (stopping(s))
				break;
			if (err && (status == 410 || listed.too_large) && mode != LIST_RV_CONSISTENT) {
				/* reflector list(): isExpiredError or isTooLargeResourceVersionError ->
				 * setIsLastSyncResourceVersionUnavailable, relistResourceVersion "" at
				 * once. The 504 is a lagging API server's watch cache (an HA peer behind
				 * the one the watch was on): watch_cache.go waitUntilFreshAndBlock gave
				 * up after 3 s. A consistent read falls back to etcd when the cache is
				 * behind (cacher/delegator.go CacheDelegator.GetList), so it answers;
				 * its Retry-After (1 s) is not waited for, nor the backoff. */
				log_info("kube: pods of %s: list at resourceVersion %s %s; a consistent list", s->node,
					 mode == LIST_RV_ZERO ? "0" : w.rv, status == 410 ? "expired" :
					 "is newer than the API server's watch cache (504 ResourceVersionTooLarge)");
				mode = LIST_RV_CONSISTENT;
				continue;
			}
			if (err && st.spread_taken && (status == 429 || status == 503) && s->relist_spread_ns > 0) {
				resume_deferred(s, &st, status, err, error, retry_after_ns);
				continue;
			}
			if (err) {
				failed(s, &st, "list", status, err, error, retry_after_ns);
				continue;
			}
			have_list = true;
			kube_pods_health_update(s, set_listed, relisting ? (void *)1 : NULL);
			relisting = false;
			kube_pods_store_publish(s);
			if (st.warned)
				log_info("kube: pods of %s: listing works again", s->node);
			log_info("kube: %zu pods on %s from the API server at resourceVersion %s; watching",
				 s->n_store, s->node, w.rv);
			st.warned = false;
		}
		timeout_s = s->watch_timeout_s > 0 ? s->watch_timeout_s :
			    WATCH_MIN_TIMEOUT_S + (int64_t)(kube_next_random(&st.random) % WATCH_MIN_TIMEOUT_S);
		result = watch_once(s, &conn, &w, timeout_s, &status, &retry_after_ns, error, sizeof(error));
		after_spread = st.spread_taken;
		was_rewatch = st.rewatch;
		st.spread_taken = false;
		st.rewatch = false;
		/* client-go's handleWatch: a watch that lasted less than a second and brought no
		 * event is a VeryShortWatchError, which ends the round: the reflector lists again. */
		very_short = w.events == 0 && w.lasted_ns < WATCH_MIN_HEALTHY_NS;
		if (w.events)
			st.too_large_relist = false;
		if (result == WATCH_FAILED && was_rewatch && server_going(status)) {
			/* The watch made again at once after a cut failed as well: the server that cut
			 * it is most likely restarting, and every node it served is asking now. */
			if (st.warned)
				log_info("kube: pods of %s: watching works again", s->node);
			st.warned = false;
			log_debug("kube: pods of %s: the watch after the cut: %s", s->node, error);
			resume_after_spread(s, &st, "the watch made again after the cut failed too");
			have_list = false;
			mode = LIST_RV_LAST;
			continue;
		}
		switch (result) {
		case WATCH_STOPPED:
			break;
		case WATCH_GONE: {
			/* reflector: a 410 from the watch ends ListAndWatch; the next round, after the
			 * delay (RunWithContext: delayHandler.Until), lists at the last resourceVersion.
			 * The delay is not reset by the list that worked before: a server that answers
			 * every watch with 410 gets one list per growing delay, not a storm. */
			int64_t spread = after_spread ? 0 : pick_spread(s, &st);
			int64_t delay = kube_delay_next(&s->delay, clock_monotonic_ns(), kube_next_random(&st.random));

			log_info("kube: pods of %s: watch at resourceVersion %s is gone (410): listing again in %.1fs",
				 s->node, w.rv, (double)(spread > delay ? spread : delay) / 1e9);
			have_list = false;
			relisting = true;
			mode = LIST_RV_LAST;
			/* Not at once with every other node of the fleet (KUBE_RELIST_SPREAD_NS): a
			 * restarted API server's new watch cache answers every node's watch with 410 in
			 * the same second. Unless this node has just waited its spread (the watch from
			 * the list it made then). Resuming meanwhile, as after a cut: the pods are as old
			 * as the last event. */
			if (!after_spread && s->relist_spread_ns > 0) {
				kube_pods_health_update(s, set_resuming, &spread);
				st.spread_taken = true;
			} else {
				kube_pods_health_update(s, set_spread, &spread);
			}
			sleep_ns(s, spread > delay ? spread : delay);
			break;
		}
		case WATCH_TOO_LARGE: {
			/* The resourceVersion is newer than this API server's watch cache (an HA peer
			 * that lags the one the last watch was on). A plain watch does not get this
			 * from kube-apiserver (cacher.go Watch serves it, 200, and sends nothing until
			 * the cache catches up: the progress check cuts it); a watch-list
			 * (sendInitialEvents) gets it as an ERROR event (waitUntilFreshAndBlock ->
			 * newErrWatcher). Either way, as the reflector's watchList does
			 * (isTooLargeResourceVersionError -> setIsLastSyncResourceVersionUnavailable):
			 * a consistent list at once; after the delay when the last one was for the
			 * same reason and nothing came since, so a server that says this to every
			 * watch is not asked in a loop. */
			int64_t delay = st.too_large_relist ?
					kube_delay_next(&s->delay, clock_monotonic_ns(), kube_next_random(&st.random)) : 0;

			if (st.too_large_relist)
				log_debug("kube: pods of %s: watch at resourceVersion %s: 504 ResourceVersionTooLarge "
					  "again; a consistent list in %.1fs", s->node, w.rv, (double)delay / 1e9);
			else
				log_info("kube: pods of %s: watch at resourceVersion %s is newer than the API server's "
					 "watch cache (504 ResourceVersionTooLarge); a consistent list at once", s->node, w.rv);
			have_list = false;
			mode = LIST_RV_CONSISTENT;
			kube_pods_health_update(s, set_delay, &delay);
			sleep_ns(s, delay);
			st.too_large_relist = true;
			break;
		}
		case WATCH_CUT:
			/* The server (or a proxy) ended the stream before its timeoutSeconds. As
			 * client-go's reflector does (watch(): a closed watch is made again), watched
			 * again at once from the last resourceVersion: no pod is unknown longer than a
			 * round trip. After an API server restart its new watch cache answers that watch
			 * with 410 (watch_cache.go getAllEventsSinceLocked: "too old resource version"),
			 * and the 410 path spreads the fleet's lists (above). A very short watch (below
			 * 1 s, nothing on it), such as a proxy that cuts every stream at once, or a
			 * watch made again that fails as well (above), waits the spread and lists from
			 * the watch cache instead, so such a proxy is not hammered. */
			if (st.warned)
				log_info("kube: pods of %s: watching works again", s->node);
			st.warned = false;
			st.stall_warned = false;
			if (very_short) {
				resume_after_spread(s, &st, "the watch was ended within 1s of its start, with nothing on it");
				have_list = false;
				mode = LIST_RV_LAST;
			} else {
				log_info("kube: pods of %s: the watch was ended early; watching again from resourceVersion %s",
					 s->node, w.rv);
				st.rewatch = true;
			}
			break;
		case WATCH_STALLED:
			/* A real API server sends a watcher only bookmarks newer than what it
			 * watches from (apiserver pkg/storage/cacher cache_watcher.go process), and
			 * its pods cache moves only when some pod changes: on a quiet cluster a
			 * healthy watch brings nothing at all (tests/cluster, bench fleet). So a
			 * silent watch is checked with a list from the watch cache (this node's pods,
			 * resourceVersion NotOlderThan the last): answered, the pods are known fresh
			 * and watched again from it; unanswered, they go stale (/readyz). */
			kube_pods_health_update(s, count_stall, NULL);
			if (!st.stall_warned)
				log_info("kube: pods of %s: the watch brought no event and no bookmark for %.1fs "
					 "(a quiet cluster, or a dead connection); cutting it and listing from the "
					 "watch cache", s->node, (double)s->progress_timeout_ns / 1e9);
			st.stall_warned = true;
			have_list = false;
			mode = LIST_RV_LAST;
			break;
		case WATCH_ENDED:
			if (st.warned)
				log_info("kube: pods of %s: watching works again", s->node);
			st.warned = false;
			st.stall_warned = false;
			/* At its timeoutSeconds (each node's own pick): watched again at once from
			 * the last resourceVersion, as client-go's reflector does. */
			break;
		case WATCH_FAILED:
			failed(s, &st, "watch", status, -EIO, error, retry_after_ns);
			break;
		}
	}
	kube_conn_cleanup(&conn);
out:
	free(w.line);
	kube_client_stream_end(s->client);
	kube_pods_source_unref(s);
	return NULL;
}

int kube_pods_watch_start(struct kube_pods_source *s)
{
	sigset_t all, saved;
	pthread_attr_t attr;
	pthread_t thread;
	int err;

	err = kube_client_stream_begin(s->client);
	if (err)
		return err;
	atomic_fetch_add(&s->refs, 1);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* Every signal blocked, as the client's worker (kube/client.c): they go to the loop. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	err = pthread_create(&thread, &attr, watch_main, s);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	pthread_attr_destroy(&attr);
	if (err) {
		log_err("kube: starting the pod watch thread: %s", strerror(err));
		atomic_fetch_sub(&s->refs, 1);
		kube_client_stream_end(s->client);
		return -err;
	}
	return 0;
}

void kube_pods_watch_stop(struct kube_pods_source *s)
{
	atomic_store(&s->stopping, true);
	pthread_mutex_lock(&s->lock);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}
