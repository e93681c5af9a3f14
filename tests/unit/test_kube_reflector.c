// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The pod source as a reflector (issue 20, items 1, 2, 8): the reflector's backoff on an
 * injected clock, then against tests/cli/kube-standin.py serving lists and watches as
 * kube-apiserver does: one relist per API server restart (never a loop), Retry-After waited
 * for, a black-holed watch cut within the progress bound while /readyz says the pods are
 * stale. The stand-in tests are skipped (with the reason) without python3, openssl or curl.
 */
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "testutil.h"
#include "standin.h"

#include "kube/client_internal.h"
#include "kube/kube.h"
#include "kube/kube_report.h"
#include "ops/metrics.h"

#define NODE "node-1"
#define FLEET 4
#define FLEET_SPREAD_NS (2 * S)
#define MS (1000000ll)
#define S (1000000000ll)

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * S + ts.tv_nsec;
}

/* ---- the backoff, on an injected clock ----------------------------------------------------- */

/* client-go's reflector: 800 ms doubling to 30 s, Jitter 1.0 ([d, 2d)), and not reset by a
 * round that worked: only 2 min without a delay resets it. */
static void test_reflector_backoff(void **state)
{
	struct kube_delay d = { .initial_ns = KUBE_REFLECTOR_BACKOFF_INITIAL_NS,
				.cap_ns = KUBE_REFLECTOR_BACKOFF_CAP_NS,
				.reset_ns = KUBE_REFLECTOR_BACKOFF_RESET_NS };
	const int64_t steps[] = { 800 * MS, 1600 * MS, 3200 * MS, 6400 * MS, 12800 * MS, 25600 * MS,
				  30 * S, 30 * S };
	int64_t t = 1000 * S, delay;

	assert_int_equal(KUBE_REFLECTOR_BACKOFF_INITIAL_NS, 800 * MS);
	assert_int_equal(KUBE_REFLECTOR_BACKOFF_CAP_NS, 30 * S);
	assert_int_equal(KUBE_REFLECTOR_BACKOFF_RESET_NS, 120 * S);
	/* Jitter 1.0: the lowest random gives the step, the highest just under twice it. */
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct kube_delay copy = d;

		assert_int_equal(kube_delay_next(&copy, t, 0), steps[i]);
		copy = d;
		assert_int_equal(kube_delay_next(&copy, t, (uint64_t)steps[i] - 1), 2 * steps[i] - 1);
		delay = kube_delay_next(&d, t, 12345);
		assert_true(delay >= steps[i] && delay < 2 * steps[i]);
		t += delay + 50 * MS;	/* a list that worked, then a watch gone at once */
	}
	/* 2 min without a delay: healthy, back to 800 ms. */
	t += KUBE_REFLECTOR_BACKOFF_RESET_NS + 1;
	assert_int_equal(kube_delay_next(&d, t, 0), 800 * MS);
	/* Just under 2 min later: still growing. */
	t += KUBE_REFLECTOR_BACKOFF_RESET_NS - 1;
	assert_int_equal(kube_delay_next(&d, t, 0), 1600 * MS);
	/* Retry-After is bounded. */
	assert_int_equal(kube_retry_after_bounded(7 * S), 7 * S);
	assert_int_equal(kube_retry_after_bounded(3600 * S), KUBE_RETRY_AFTER_MAX_NS);
}

/* Retry-After plus a random extra in [0, Retry-After), on an injected random: the nodes a 429
 * refused together do not come back together (client-go waits Retry-After exactly). */
static void test_retry_after_jitter(void **state)
{
	int64_t lo = INT64_MAX, hi = 0;
	uint64_t random = 7;

	assert_int_equal(kube_retry_after_jittered(0, 12345), 0);
	assert_int_equal(kube_retry_after_jittered(4 * S, 0), 4 * S);
	assert_int_equal(kube_retry_after_jittered(4 * S, (uint64_t)(4 * S) - 1), 8 * S - 1);
	assert_int_equal(kube_retry_after_jittered(4 * S, (uint64_t)(4 * S) + 3), 4 * S + 3);
	/* Bounded first (5 min), then jittered. */
	assert_int_equal(kube_retry_after_jittered(3600 * S, 0), KUBE_RETRY_AFTER_MAX_NS);
	assert_int_equal(kube_retry_after_jittered(3600 * S, (uint64_t)KUBE_RETRY_AFTER_MAX_NS - 1),
			 2 * KUBE_RETRY_AFTER_MAX_NS - 1);
	/* 500 nodes' picks cover the range: no second of it holds more than a few percent. */
	unsigned bins[5] = { 0 };
	for (int i = 0; i < 500; i++) {
		int64_t d = kube_retry_after_jittered(5 * S, kube_next_random(&random));

		assert_true(d >= 5 * S && d < 10 * S);
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
		bins[(d - 5 * S) / S]++;
	}
	assert_true(hi - lo > 4 * S);
	for (int i = 0; i < 5; i++)
		assert_true(bins[i] > 60 && bins[i] < 140);
}

/* /readyz and evictd_kube_pods_stale_seconds from the pods' last progress. */
static void test_stale_readyz(void **state)
{
	struct metrics_kube kube = { .enabled = true, .listed = true, .watching = true,
				     .ready_grace_ns = 10 * S, .progress_ns = 100 * S,
				     .stale_after_ns = 90 * S };
	const char *why = NULL;

	assert_true(metrics_kube_ready(&kube, 190 * S, &why));
	assert_null(why);
	assert_true(metrics_kube_stale_seconds(&kube, 190 * S) == 0);
	assert_false(metrics_kube_ready(&kube, 191 * S, &why));
	assert_non_null(strstr(why, "stale"));
	assert_true(metrics_kube_stale_seconds(&kube, 191 * S) == 91);
	kube.enabled = false;
	assert_true(metrics_kube_ready(&kube, 191 * S, &why));
	assert_true(metrics_kube_stale_seconds(&kube, 191 * S) == 0);
}

/* ---- the stand-in -------------------------------------------------------------------------- */

static const char PODS[] =
	"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":["
	"{\"metadata\":{\"name\":\"web-1\",\"namespace\":\"default\",\"uid\":\"0a1b2c3d-0000-4000-8000-000000000001\"},"
	" \"spec\":{\"nodeName\":\"" NODE "\",\"priority\":0},\"status\":{\"phase\":\"Running\"}},"
	"{\"metadata\":{\"name\":\"db-0\",\"namespace\":\"prod\",\"uid\":\"0a1b2c3d-0000-4000-8000-000000000002\"},"
	" \"spec\":{\"nodeName\":\"" NODE "\",\"priority\":1000},\"status\":{\"phase\":\"Running\"}}]}";

static void standin_start(struct standin *s, const char *faults)
{
	standin_launch(s, &(struct standin_options){
		.tag = "kube-reflector", .pods = PODS, .faults = faults,
		.args = (const char *const[]){ "--bookmark-seconds", "0.3", "--log-time", NULL } });
	assert_int_equal(kube_client_new(&s->client, &(struct kube_client_options){
		.config = &s->config, .request_timeout_ns = 3 * S }), 0);
}

/* A pod source, with a fast reflector backoff (20 ms doubling to 200 ms). */
static struct pods_meta_source *new_source(struct standin *s, const char *node, int64_t progress_timeout_ns,
					   int64_t spread_ns, uint64_t seed)
{
	struct pods_meta_source *source = kube_pods_source_new(&(struct kube_pods_source_options){
		.client = s->client, .node_name = node, .watch_timeout_s = 30,
		.backoff_initial_ns = 20 * MS, .backoff_cap_ns = 200 * MS,
		.progress_timeout_ns = progress_timeout_ns, .relist_spread_ns = spread_ns, .random_seed = seed });

	assert_non_null(source);
	return source;
}

static void standin_source(struct standin *s, int64_t progress_timeout_ns)
{
	s->source = new_source(s, NODE, progress_timeout_ns, -1, 0);
}

/* Pod lists (watches false) or watches (true) of node (NULL: any) that arrived at or after
 * since_ns (CLOCK_MONOTONIC, the stand-in's --log-time); the first one's arrival into *first_ns,
 * the last one's query into last. */
static size_t count_node_requests(struct standin *s, const char *node, bool watches, int64_t since_ns,
				  int64_t *first_ns, char *last, size_t last_len)
{
	char line[1 << 16], selector[128];
	size_t n = 0;
	FILE *f = fopen(s->log, "r");

	snprintf(selector, sizeof(selector), "fieldSelector=spec.nodeName%%3D%s&", node ? node : "");
	while (f && fgets(line, sizeof(line), f)) {
		struct json_object *entry = json_tokener_parse(line), *path, *query, *time;
		const char *q;
		int64_t at;

		assert_non_null(entry);
		assert_true(json_object_object_get_ex(entry, "path", &path));
		assert_true(json_object_object_get_ex(entry, "query", &query));
		assert_true(json_object_object_get_ex(entry, "time", &time));
		q = json_object_get_string(query);
		at = (int64_t)(json_object_get_double(time) * 1e9);
		if (!strcmp(json_object_get_string(path), "/api/v1/pods") && at >= since_ns &&
		    (!node || strstr(q, selector)) && (strstr(q, "watch=true") != NULL) == watches) {
			if (!n && first_ns)
				*first_ns = at;
			n++;
			if (last)
				snprintf(last, last_len, "%s", q);
		}
		json_object_put(entry);
	}
	if (f)
		fclose(f);
	return n;
}

/* Pod lists (watches false) or watches (true) in the stand-in's log; the last one's query into last. */
static size_t count_requests(struct standin *s, bool watches, char *last, size_t last_len)
{
	return count_node_requests(s, NULL, watches, INT64_MIN, NULL, last, last_len);
}

static struct kube_pods_health health(struct standin *s)
{
	struct kube_pods_health h;

	kube_pods_source_health(s->source, &h);
	return h;
}

/* Poll (dispatching the client's events, as the daemon's loop does) until cond holds. */
#define WAIT_UNTIL(s, cond, timeout_ms)                                                 \
	({                                                                              \
		int64_t end_ = now_ns() + (int64_t)(timeout_ms) * MS;                   \
		bool ok_;                                                               \
		while (!(ok_ = (cond)) && now_ns() < end_) {                            \
			struct pollfd pfd_ = { .fd = kube_client_event_fd((s)->client), \
					       .events = POLLIN };                      \
			if (poll(&pfd_, 1, 20) == 1)                                    \
				kube_client_dispatch((s)->client);                      \
		}                                                                       \
		ok_;                                                                    \
	})

/* The view the daemon gives /readyz (daemon_kube_update_metrics). */
static struct metrics_kube readyz_view(const struct kube_pods_health *h)
{
	return (struct metrics_kube){
		.enabled = true, .listed = h->listed, .watching = h->watching, .failing = h->failing,
		.resuming = h->resuming,
		.last_status = h->last_status, .not_watching_since_ns = h->not_watching_since_ns,
		.ready_grace_ns = KUBE_WATCH_READY_GRACE_NS, .progress_ns = h->progress_ns,
		.stale_after_ns = h->progress_timeout_ns,
	};
}

/* "At once" below: within 2 s of the hook's call (a curl started meanwhile, a sanitizer build
 * on 2 loaded cores), well apart from the spread and the backoff it replaces. */

/* An API server restart cuts the watch and starts a new, empty watch cache. evictd watches
 * again at once from the last resourceVersion (client-go's reflector does), the new cache
 * answers 410, and evictd lists once, served from the new cache (NotOlderThan, no limit), and
 * watches from that list: two watches (one 410) and one list per restart, not a loop. */
static void test_restart_relists_once(void **state)
{
	static struct standin s;
	char query[4096], before[4096];
	struct kube_pods_health h;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL);
	standin_source(&s, 0);
	assert_true(WAIT_UNTIL(&s, health(&s).listed && health(&s).watching, 10000));
	assert_int_equal(count_requests(&s, false, query, sizeof(query)), 1);
	for (int restart = 1; restart <= 2; restart++) {
		int64_t t0, first = 0;

		usleep(1200000);
		count_requests(&s, true, before, sizeof(before));
		t0 = now_ns();
		standin_hook(&s, "restart", NULL);
		if (!WAIT_UNTIL(&s, (h = health(&s)).lists >= (uint64_t)restart + 1 && h.watching, 10000))
			fail_msg("restart %d: not watching again after 10 s: %zu lists, %llu relists", restart,
				 count_requests(&s, false, NULL, 0), (unsigned long long)h.relists);
		/* Time for a loop to show: many delays of the 20-200 ms backoff. */
		usleep(1500000);
		h = health(&s);
		if (count_requests(&s, false, NULL, 0) != (size_t)restart + 1)
			fail_msg("restart %d: %zu lists, %llu relists (a relist loop)", restart,
				 count_requests(&s, false, NULL, 0), (unsigned long long)h.relists);
		/* The watch made again at once from the last resourceVersion (410 from the new
		 * cache), then the one from the list. */
		if (count_node_requests(&s, NULL, true, t0, &first, query, sizeof(query)) != 2)
			fail_msg("restart %d: %zu watches after it (want the one that got 410 and the one from the list)",
				 restart, count_node_requests(&s, NULL, true, t0, NULL, NULL, 0));
		if (first - t0 > 2 * S)
			fail_msg("restart %d: watched again %.3f s after the cut, not at once", restart,
				 (double)(first - t0) / S);
		assert_int_equal(h.relists, restart);	/* the 410 */
		assert_true(h.watching);
		assert_false(h.failing);
		assert_false(h.resuming);
		/* Served from the watch cache: the last resourceVersion, NotOlderThan, no paging. */
		count_requests(&s, false, query, sizeof(query));
		assert_non_null(strstr(query, "&resourceVersionMatch=NotOlderThan"));
		assert_null(strstr(query, "limit="));
		assert_null(strstr(query, "continue="));
	}
	assert_int_equal(count_requests(&s, true, NULL, 0), 5);
	standin_stop(&s);
}

/* The resourceVersion=N of a query, or -1. */
static long long query_rv(const char *query)
{
	const char *rv = strstr(query, "resourceVersion=");

	return rv ? strtoll(rv + strlen("resourceVersion="), NULL, 10) : -1;
}

/* A watch the server (or a proxy) ends before its timeoutSeconds, the API server still up: it
 * is made again at once from the last resourceVersion, as client-go's reflector does; nothing
 * is listed, no spread is waited, the source never fails. */
static void test_cut_rewatches_at_once(void **state)
{
	static struct standin s;
	char before[4096], after[4096];
	struct kube_pods_health h;
	int64_t t0, first = 0;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL);
	/* A spread long enough to see that it is not waited. */
	s.source = new_source(&s, NODE, 0, 20 * S, 3);
	assert_true(WAIT_UNTIL(&s, (h = health(&s)).watching && h.bookmarks >= 2, 10000));
	usleep(1200000);
	count_requests(&s, true, before, sizeof(before));
	t0 = now_ns();
	standin_hook(&s, "drop-watches", NULL);
	assert_true(WAIT_UNTIL(&s, (h = health(&s)).watches >= 2 && h.watching, 5000));
	assert_int_equal(count_node_requests(&s, NODE, true, t0, &first, after, sizeof(after)), 1);
	if (first - t0 > 2 * S)
		fail_msg("watched again %.3f s after the cut, not at once", (double)(first - t0) / S);
	/* From where the cut watch was (its bookmarks moved it), not older. */
	assert_true(query_rv(after) >= query_rv(before));
	assert_int_equal(count_requests(&s, false, NULL, 0), 1);	/* no list */
	assert_false(h.failing);
	assert_int_equal(h.failures, 0);
	assert_int_equal(h.relists, 0);
	standin_stop(&s);
}

/* A second early end in quick succession: the watch made again at once is itself ended within
 * 1 s with nothing on it (a proxy that cuts every stream at once), or refused by a server that
 * is going away (503): then the source waits its random spread, resuming (ready, not failing),
 * and lists from the watch cache, so such a proxy is not hammered. */
static void test_cut_again_spreads(void **state)
{
	static const char *const faults[] = {
		"[{\"method\":\"GET\",\"path\":\"/api/v1/pods\",\"query\":\"watch=true\",\"cut_after\":0.1,\"times\":1}]",
		"[{\"method\":\"GET\",\"path\":\"/api/v1/pods\",\"query\":\"watch=true\",\"status\":503,\"times\":1}]",
	};
	static struct standin s;
	struct kube_pods_health h;
	struct metrics_kube view;
	const char *why = NULL;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL);
	s.source = new_source(&s, NODE, 0, FLEET_SPREAD_NS, 9);
	assert_true(WAIT_UNTIL(&s, health(&s).watching, 10000));
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
		uint64_t lists = health(&s).lists, watches = health(&s).watches;
		int64_t t0, listed = 0;
		bool seen = false;

		usleep(1200000);
		fixture_write(s.dir, "faults.json", "%s", faults[i]);
		t0 = now_ns();
		standin_hook(&s, "drop-watches", NULL);
		/* Waiting its spread: resuming, ready past the watch grace, not failing. */
		for (int64_t end = now_ns() + 5 * S; !seen && now_ns() < end; usleep(5000)) {
			h = health(&s);
			seen = h.resuming && !h.watching && h.lists == lists;
		}
		if (!seen)
			fail_msg("case %zu: the source was not seen waiting a spread", i);
		assert_false(h.failing);
		view = readyz_view(&h);
		assert_true(metrics_kube_ready(&view, h.not_watching_since_ns + KUBE_WATCH_READY_GRACE_NS + S, &why));
		if (!WAIT_UNTIL(&s, (h = health(&s)).lists == lists + 1 && h.watching, 10000))
			fail_msg("case %zu: not listed and watching again", i);
		assert_false(h.resuming);
		assert_int_equal(h.relists, 0);
		/* The watch made again at once, then the one from the list: two; one list. */
		assert_int_equal(h.watches, watches + (i == 0 ? 2 : 1));
		assert_int_equal(count_node_requests(&s, NODE, false, t0, &listed, NULL, 0), 1);
		if (listed - t0 < h.spread_ns)
			fail_msg("case %zu: listed %.3f s after the cut, before its %.3f s spread", i,
				 (double)(listed - t0) / S, (double)h.spread_ns / S);
		fixture_write(s.dir, "faults.json", "[]");
	}
	standin_stop(&s);
}

/* A fleet through an API server restart: every source watches again at once (the new cache
 * answers 410), then waits its own random spread (an injected seed each), lists
 * (NotOlderThan) and watches: 3 requests a node, the list not before its spread, the spreads
 * apart; while a source waits, /readyz stays ready past the watch grace (it is resuming, not
 * failing), and still fails once the pods are older than the progress bound. */
static void test_restart_spread(void **state)
{
	static struct standin s;
	static const uint64_t seeds[FLEET] = { 11, 22, 33, 44 };
	struct pods_meta_source *fleet[FLEET];
	struct kube_pods_health h[FLEET], waiting = { 0 };
	char nodes[FLEET][32], query[4096];
	int64_t t0, lo = INT64_MAX, hi = 0;
	struct metrics_kube view;
	const char *why = NULL;
	bool caught = false;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL);
	for (int i = 0; i < FLEET; i++) {
		snprintf(nodes[i], sizeof(nodes[i]), "fleet-%d", i);
		fleet[i] = new_source(&s, nodes[i], 0, FLEET_SPREAD_NS, seeds[i]);
	}
	for (int i = 0; i < FLEET; i++)
		assert_true(WAIT_UNTIL(&s, (kube_pods_source_health(fleet[i], &h[i]), h[i].watching), 10000));
	usleep(1200000);
	t0 = now_ns();
	standin_hook(&s, "restart", NULL);
	/* Catch the source with the longest wait during it. */
	for (int64_t end = now_ns() + 5 * S; !caught && now_ns() < end; usleep(10000))
		for (int i = 0; i < FLEET && !caught; i++) {
			kube_pods_source_health(fleet[i], &waiting);
			caught = waiting.resuming && waiting.spread_ns >= FLEET_SPREAD_NS / 4 && !waiting.watching;
		}
	if (!caught)
		fail_msg("no source was seen waiting a spread after the restart");
	assert_false(waiting.failing);
	view = readyz_view(&waiting);
	/* Past the 10 s grace of a closed watch (an injected now), within the progress bound. */
	assert_true(metrics_kube_ready(&view, waiting.not_watching_since_ns + KUBE_WATCH_READY_GRACE_NS + S, &why));
	/* The data's age still counts: stale beyond the bound. */
	assert_false(metrics_kube_ready(&view, waiting.progress_ns + waiting.progress_timeout_ns + S, &why));
	assert_non_null(why);
	assert_non_null(strstr(why, "stale"));
	for (int i = 0; i < FLEET; i++) {
		int64_t first = 0, rewatch = 0;

		if (!WAIT_UNTIL(&s, (kube_pods_source_health(fleet[i], &h[i]), h[i].watching && h[i].lists >= 2), 10000))
			fail_msg("%s: not watching again after the restart", nodes[i]);
		assert_true(h[i].spread_ns >= 0 && h[i].spread_ns < FLEET_SPREAD_NS);
		lo = h[i].spread_ns < lo ? h[i].spread_ns : lo;
		hi = h[i].spread_ns > hi ? h[i].spread_ns : hi;
		/* The watch at once (410), one list (from the watch cache) and one watch. */
		if (count_node_requests(&s, nodes[i], false, t0, &first, query, sizeof(query)) != 1 ||
		    count_node_requests(&s, nodes[i], true, t0, &rewatch, NULL, 0) != 2)
			fail_msg("%s: %zu lists and %zu watches after the restart (want 1 and 2)", nodes[i],
				 count_node_requests(&s, nodes[i], false, t0, NULL, NULL, 0),
				 count_node_requests(&s, nodes[i], true, t0, NULL, NULL, 0));
		assert_non_null(strstr(query, "&resourceVersionMatch=NotOlderThan"));
		if (rewatch - t0 > 2 * S)
			fail_msg("%s: watched again %.3f s after the restart, not at once", nodes[i],
				 (double)(rewatch - t0) / S);
		/* The list not before its spread. */
		if (first - t0 < h[i].spread_ns)
			fail_msg("%s: listed %.3f s after the restart, before its %.3f s spread", nodes[i],
				 (double)(first - t0) / S, (double)h[i].spread_ns / S);
		assert_false(h[i].resuming);
		assert_int_equal(h[i].relists, 1);
	}
	/* The seeds' spreads are apart, not one instant for all. */
	if (hi - lo < FLEET_SPREAD_NS / 4)
		fail_msg("spreads within %.3f s of each other", (double)(hi - lo) / S);
	for (int i = 0; i < FLEET; i++)
		fleet[i]->destroy(fleet[i]);
	standin_stop(&s);
}

/* The list that resumes after a restart (its watch made again got 410) gets 429 (the fleet
 * it was spread from overloads the server): the source waits Retry-After plus a new random
 * part of the spread and stays resuming (ready, not failing) meanwhile; then it lists and
 * watches. */
static void test_resume_deferred(void **state)
{
	static struct standin s;
	struct kube_pods_health h;
	struct metrics_kube view;
	int64_t t0, first = 0, second = 0;
	const char *why = NULL;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, "[{\"method\":\"GET\",\"path\":\"/api/v1/pods\",\"query\":\"NotOlderThan\",\"status\":429,"
			  "\"retry_after\":1,\"times\":1}]");
	s.source = new_source(&s, NODE, 0, FLEET_SPREAD_NS, 5);
	assert_true(WAIT_UNTIL(&s, health(&s).watching, 10000));
	usleep(1200000);
	t0 = now_ns();
	standin_hook(&s, "restart", NULL);
	assert_true(WAIT_UNTIL(&s, health(&s).failures == 1, 10000));
	h = health(&s);
	assert_int_equal(h.last_status, 429);
	assert_true(h.resuming);
	assert_false(h.failing);
	assert_true(h.spread_ns >= 0 && h.spread_ns < FLEET_SPREAD_NS);
	assert_true(h.delay_ns >= 1 * S + h.spread_ns);
	view = readyz_view(&h);
	assert_true(metrics_kube_ready(&view, h.not_watching_since_ns + KUBE_WATCH_READY_GRACE_NS + S, &why));
	assert_true(WAIT_UNTIL(&s, (h = health(&s)).watching && h.lists == 2, 10000));
	assert_false(h.resuming);
	assert_false(h.failing);
	/* The refused list, then the one after the wait; no watch in between. */
	assert_int_equal(count_node_requests(&s, NODE, false, t0, &first, NULL, 0), 2);
	count_node_requests(&s, NODE, false, first + 1, &second, NULL, 0);
	if (second - first < 1 * S + health(&s).spread_ns)
		fail_msg("listed again %.3f s after the 429, before Retry-After and its spread", (double)(second - first) / S);
	/* The watch at once (410), then the one from the list. */
	assert_int_equal(count_node_requests(&s, NODE, true, t0, NULL, NULL, 0), 2);
	assert_int_equal(count_node_requests(&s, NODE, true, first, NULL, NULL, 0), 1);
	standin_stop(&s);
}

/* What kube-apiserver answers a list whose resourceVersion its watch cache has not reached
 * within 3 s (apiserver pkg/storage/cacher/watch_cache.go waitUntilFreshAndBlock ->
 * pkg/storage/errors.go NewTooLargeResourceVersionError, written by
 * endpoints/handlers/responsewriters ErrorNegotiated with Retry-After: 1). */
#define TOO_LARGE_STATUS                                                                                        \
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","                    \
	"\"message\":\"Timeout: Too large resource version: 1012, current: 1008\",\"reason\":\"Timeout\","     \
	"\"details\":{\"causes\":[{\"reason\":\"ResourceVersionTooLarge\",\"message\":\"Too large resource version\"}]," \
	"\"retryAfterSeconds\":1},\"code\":504}"

/* client-go's isTooLargeResourceVersionError on the forms API servers have sent. */
static void test_too_large_status(void **state)
{
	assert_true(kube_status_too_large_rv(TOO_LARGE_STATUS));
	/* HasStatusCause alone (any code). */
	assert_true(kube_status_too_large_rv("{\"kind\":\"Status\",\"code\":500,\"details\":{\"causes\":"
					     "[{\"reason\":\"ResourceVersionTooLarge\"}]}}"));
	/* 1.17.0-1.18.5: the cause's message, with reason Timeout. */
	assert_true(kube_status_too_large_rv("{\"reason\":\"Timeout\",\"code\":504,\"details\":{\"causes\":"
					     "[{\"message\":\"Too large resource version\"}]}}"));
	/* Before 1.17: the message, with reason Timeout. */
	assert_true(kube_status_too_large_rv("{\"reason\":\"Timeout\",\"code\":504,"
					     "\"message\":\"Timeout: Too large resource version: 7, current: 5\"}"));
	assert_false(kube_status_too_large_rv("{\"reason\":\"InternalError\",\"code\":500,"
					      "\"message\":\"Too large resource version\"}"));
	assert_false(kube_status_too_large_rv("{\"reason\":\"Timeout\",\"code\":504,\"message\":\"request timed out\"}"));
	assert_false(kube_status_too_large_rv("{\"reason\":\"Expired\",\"code\":410,\"message\":\"too old resource version\"}"));
	assert_false(kube_status_too_large_rv("<html>504 Gateway Timeout</html>"));
	assert_false(kube_status_too_large_rv(NULL));
}

/* A faults file: the first `times` requests matching query get the 504 as a status with
 * Retry-After 1 (kind "status") or, for a watch, as its ERROR event (kind "event"). */
static void write_too_large_faults(struct standin *s, const char *query, const char *kind, int times)
{
	struct json_object *rules = json_object_new_array(), *rule = json_object_new_object();

	json_object_object_add(rule, "method", json_object_new_string("GET"));
	json_object_object_add(rule, "path", json_object_new_string("/api/v1/pods"));
	json_object_object_add(rule, "query", json_object_new_string(query));
	json_object_object_add(rule, "times", json_object_new_int(times));
	if (!strcmp(kind, "event")) {
		json_object_object_add(rule, "watch_error", json_tokener_parse(TOO_LARGE_STATUS));
	} else {
		json_object_object_add(rule, "status", json_object_new_int(504));
		json_object_object_add(rule, "retry_after", json_object_new_int(1));
		json_object_object_add(rule, "body", json_object_new_string(TOO_LARGE_STATUS));
	}
	json_object_array_add(rules, rule);
	fixture_write(s->dir, "faults.json", "%s", json_object_to_json_string_ext(rules, JSON_C_TO_STRING_PLAIN));
	json_object_put(rules);
}

/* A consistent list: limit, no resourceVersion (relistResourceVersion ""). */
static bool consistent_list(const char *query)
{
	return strstr(query, "&limit=") && !strstr(query, "resourceVersion");
}

/* An HA API server whose watch cache lags the one the watch was on: the list that resumes
 * after a restart (NotOlderThan the last resourceVersion) gets 504 ResourceVersionTooLarge.
 * As client-go's reflector list(): a consistent list at once (the server falls back to etcd
 * for it), not Retry-After, not the backoff, not a failure; then a watch from that list. */
static void test_list_too_large(void **state)
{
	static struct standin s;
	struct kube_pods_health h;
	int64_t t0, refused = 0, next = 0;
	char query[4096];

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL);
	standin_source(&s, 0);
	assert_true(WAIT_UNTIL(&s, health(&s).watching, 10000));
	write_too_large_faults(&s, "NotOlderThan", "status", 1);
	usleep(1200000);
	t0 = now_ns();
	standin_hook(&s, "restart", NULL);
	assert_true(WAIT_UNTIL(&s, (h = health(&s)).lists == 2 && h.watching, 10000));
	assert_int_equal(count_node_requests(&s, NODE, false, t0, &refused, query, sizeof(query)), 2);
	assert_true(consistent_list(query));
	count_node_requests(&s, NODE, false, refused + 1, &next, NULL, 0);
	if (next - refused > 900 * MS)
		fail_msg("the consistent list came %.3f s after the 504, not at once", (double)(next - refused) / S);
	assert_int_equal(h.failures, 0);
	assert_false(h.failing);
	/* The watch from the consistent list's resourceVersion. */
	assert_int_equal(count_node_requests(&s, NODE, true, next, NULL, query, sizeof(query)), 1);
	assert_true(query_rv(query) > 0);
	standin_stop(&s);
}

/* The same 504 to a watch (kube-apiserver sends it to a watch-list as an ERROR event, and a
 * server may answer it as a status): a consistent list at once, then a watch from it; a
 * server that says it to every watch gets consistent lists after the growing delay, not a
 * loop. */
static void test_watch_too_large(void **state)
{
	static const char *const kinds[] = { "event", "status" };
	static struct standin s;
	struct kube_pods_health h;
	size_t lists;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL);
	standin_source(&s, 0);
	assert_true(WAIT_UNTIL(&s, health(&s).watching, 10000));
	for (size_t i = 0; i < 2; i++) {
		int64_t t0, first = 0;
		char query[4096];

		usleep(1200000);
		lists = count_requests(&s, false, NULL, 0);
		write_too_large_faults(&s, "watch=true", kinds[i], 1);
		t0 = now_ns();
		standin_hook(&s, "drop-watches", NULL);
		if (!WAIT_UNTIL(&s, count_requests(&s, false, NULL, 0) == lists + 1 && health(&s).watching, 10000))
			fail_msg("%s: no consistent list and watch after the 504", kinds[i]);
		count_node_requests(&s, NODE, false, t0, &first, query, sizeof(query));
		assert_true(consistent_list(query));
		if (first - t0 > 900 * MS)
			fail_msg("%s: the consistent list came %.3f s after the cut, not at once", kinds[i],
				 (double)(first - t0) / S);
		assert_int_equal(health(&s).failures, 0);
	}
	/* Every watch refused so: lists after the delay (20 ms doubling to 200 ms here). */
	usleep(1200000);
	lists = count_requests(&s, false, NULL, 0);
	write_too_large_faults(&s, "watch=true", "event", 100000);
	standin_hook(&s, "drop-watches", NULL);
	usleep(1500000);
	h = health(&s);
	if (count_requests(&s, false, NULL, 0) - lists > 15)
		fail_msg("%zu consistent lists in 1.5 s: a loop", count_requests(&s, false, NULL, 0) - lists);
	assert_true(count_requests(&s, false, NULL, 0) - lists >= 2);
	assert_true(h.delay_ns > 0);
	fixture_write(s.dir, "faults.json", "[]");
	assert_true(WAIT_UNTIL(&s, (h = health(&s)).watching, 5000));
	standin_stop(&s);
}

/* A 429 with Retry-After 1 s to a fleet's first lists: each waits Retry-After plus its own
 * random extra (an injected seed each), [1 s, 2 s), and lists again no sooner. */
static void test_retry_after_spread(void **state)
{
	static struct standin s;
	static const uint64_t seeds[FLEET] = { 101, 202, 303, 404 };
	struct pods_meta_source *fleet[FLEET];
	struct kube_pods_health h;
	char nodes[FLEET][32];
	int64_t lo = INT64_MAX, hi = 0;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, "[{\"method\":\"GET\",\"path\":\"/api/v1/pods\",\"query\":\"limit=\",\"status\":429,"
			  "\"retry_after\":1,\"times\":4}]");
	for (int i = 0; i < FLEET; i++) {
		snprintf(nodes[i], sizeof(nodes[i]), "fleet-%d", i);
		fleet[i] = new_source(&s, nodes[i], 0, -1, seeds[i]);
	}
	for (int i = 0; i < FLEET; i++) {
		int64_t first = 0, second = 0;

		assert_true(WAIT_UNTIL(&s, (kube_pods_source_health(fleet[i], &h), h.listed), 10000));
		assert_int_equal(h.failures, 1);
		assert_true(h.delay_ns >= 1 * S && h.delay_ns < 2 * S);
		lo = h.delay_ns < lo ? h.delay_ns : lo;
		hi = h.delay_ns > hi ? h.delay_ns : hi;
		assert_int_equal(count_node_requests(&s, nodes[i], false, 0, &first, NULL, 0), 2);
		count_node_requests(&s, nodes[i], false, first + 1, &second, NULL, 0);
		if (second - first < h.delay_ns)
			fail_msg("%s: listed again %.3f s after the 429, before its %.3f s wait", nodes[i],
				 (double)(second - first) / S, (double)h.delay_ns / S);
	}
	/* Not the same instant for all: the extra is each node's own. */
	if (hi - lo < 100 * MS)
		fail_msg("Retry-After waits within %.3f s of each other", (double)(hi - lo) / S);
	for (int i = 0; i < FLEET; i++)
		fleet[i]->destroy(fleet[i]);
	standin_stop(&s);
}

/* 429 (API Priority and Fairness) with Retry-After: the list and the watch wait for it,
 * not for the 20 ms backoff. */
static void test_retry_after(void **state)
{
	static struct standin s;
	int64_t t;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, "[{\"method\":\"GET\",\"path\":\"/api/v1/pods\",\"query\":\"limit=\",\"status\":429,"
			  "\"retry_after\":4,\"times\":1},"
			  "{\"method\":\"GET\",\"path\":\"/api/v1/pods\",\"query\":\"watch=true\",\"status\":429,"
			  "\"retry_after\":4,\"times\":1}]");
	standin_source(&s, 0);
	assert_true(WAIT_UNTIL(&s, health(&s).failures == 1, 5000));
	assert_int_equal(health(&s).last_status, 429);
	t = now_ns();
	/* A second before the server's 4 s: nothing was sent again. */
	usleep(1000000);
	if (now_ns() - t < 3 * S)	/* (a stalled machine proves nothing either way) */
		assert_int_equal(count_requests(&s, false, NULL, 0), 1);
	assert_true(WAIT_UNTIL(&s, health(&s).listed, 15000));	/* [4, 8) s: jittered */
	assert_int_equal(count_requests(&s, false, NULL, 0), 2);
	/* The first watch: 429 too. */
	assert_true(WAIT_UNTIL(&s, health(&s).failures == 2, 5000));
	t = now_ns();
	usleep(1000000);
	if (now_ns() - t < 3 * S)
		assert_int_equal(count_requests(&s, true, NULL, 0), 1);
	assert_true(WAIT_UNTIL(&s, health(&s).watching, 15000));
	assert_int_equal(count_requests(&s, true, NULL, 0), 2);
	assert_int_equal(count_requests(&s, false, NULL, 0), 2);	/* no relist for a 429 */
	standin_stop(&s);
}

/* A black-holed watch (an open socket, nothing on it, not even bookmarks) is cut within the
 * progress bound and watched again; meanwhile /readyz says the pods are stale and
 * evictd_kube_pods_stale_seconds grows; bookmarks again: ready, 0. */
static void test_blackholed_watch(void **state)
{
	static struct standin s;
	struct kube_pods_health h;
	struct metrics_kube view;
	const char *why = NULL;
	int64_t t;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL);
	standin_source(&s, 1500 * MS);
	assert_true(WAIT_UNTIL(&s, (h = health(&s)).watching && h.bookmarks >= 2, 10000));
	view = readyz_view(&h);
	assert_true(metrics_kube_ready(&view, now_ns(), &why));
	standin_hook(&s, "blackhole", NULL);
	t = now_ns();
	/* Cut at 3/4 of the bound (1.5 s, polled once a second by libcurl), checked with a list
	 * from the watch cache (a real server's quiet watch is silent too: pods_watch.c
	 * WATCH_STALLED) and watched again. */
	assert_true(WAIT_UNTIL(&s, (h = health(&s)).stalls >= 1 && h.watches >= 2, 6000));
	assert_true(now_ns() - t >= 1125 * MS);
	assert_false(h.failing);
	assert_true(WAIT_UNTIL(&s, count_requests(&s, false, NULL, 0) == 2, 3000));
	/* The list was answered: the pods are known fresh, /readyz stays ready through stalls. */
	h = health(&s);
	view = readyz_view(&h);
	assert_true(metrics_kube_ready(&view, now_ns(), &why));
	/* Lists black-holed too (the stand-in's delay fault on every GET of pods): nothing
	 * answers, the pods go stale and /readyz says so. */
	fixture_write(s.dir, "faults.json", "%s", "[{\"method\": \"GET\", \"path\": \"/api/v1/pods\", \"delay\": 30, \"times\": 100}]");
	assert_true(WAIT_UNTIL(&s, (h = health(&s), view = readyz_view(&h),
				    !metrics_kube_ready(&view, now_ns(), &why)), 8000));
	assert_non_null(why);
	assert_non_null(strstr(why, "stale"));
	assert_true(metrics_kube_stale_seconds(&view, now_ns()) > 1.5);
	fixture_write(s.dir, "faults.json", "%s", "[]");
	standin_hook(&s, "unblackhole", NULL);
	assert_true(WAIT_UNTIL(&s, (h = health(&s), view = readyz_view(&h),
				    metrics_kube_ready(&view, now_ns(), &why)), 8000));
	assert_true(metrics_kube_stale_seconds(&view, now_ns()) == 0);
	standin_stop(&s);
}

/* EVICTD_KUBE_HTTP_VERSION against a server that offers both (ALPN h2 and http/1.1): 1.1
 * keeps HTTP/1.1, 2 and unset negotiate HTTP/2, anything else is ignored; the client's stats
 * (evictd_kube_http_version) and the stand-in's log say which. */
static void test_http_version_env(void **state)
{
	static const struct { const char *value; unsigned want; } cases[] = {
		{ "1.1", 11 }, { "2", 20 }, { NULL, 20 }, { "3", 20 },
	};
	static struct standin s;

	assert_int_equal(kube_http_version_parse(NULL), CURL_HTTP_VERSION_NONE);
	assert_int_equal(kube_http_version_parse(""), CURL_HTTP_VERSION_NONE);
	assert_int_equal(kube_http_version_parse("1.1"), CURL_HTTP_VERSION_1_1);
	assert_int_equal(kube_http_version_parse("2"), CURL_HTTP_VERSION_2TLS);
	assert_true(kube_http_version_parse("2.0") < 0);
	if (!standin_http2)
		skip();
	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL);
	kube_client_free(s.client);
	s.client = NULL;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct kube_response response = { 0 };
		struct kube_client_stats stats;
		struct json_object *log;
		char http[8];

		if (cases[i].value)
			setenv("EVICTD_KUBE_HTTP_VERSION", cases[i].value, 1);
		else
			unsetenv("EVICTD_KUBE_HTTP_VERSION");
		assert_int_equal(kube_client_new(&s.client, &(struct kube_client_options){ .config = &s.config }), 0);
		kube_client_get_stats(s.client, &stats);
		assert_int_equal(stats.http_version, 0);
		assert_int_equal(kube_request(s.client, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3D" NODE,
					      NULL, NULL, &response), 0);
		assert_int_equal(response.status, 200);
		kube_response_free(&response);
		kube_client_get_stats(s.client, &stats);
		if (stats.http_version != cases[i].want)
			fail_msg("EVICTD_KUBE_HTTP_VERSION=%s: HTTP %u, want %u", cases[i].value ? cases[i].value : "(unset)",
				 stats.http_version, cases[i].want);
		log = standin_requests(&s);
		snprintf(http, sizeof(http), "%s", json_object_get_string(json_object_object_get(
			json_object_array_get_idx(log, json_object_array_length(log) - 1), "http")));
		assert_string_equal(http, cases[i].want == 11 ? "1.1" : "2");
		json_object_put(log);
		kube_client_free(s.client);
		s.client = NULL;
	}
	unsetenv("EVICTD_KUBE_HTTP_VERSION");
	standin_stop(&s);
}

int main(void)
{
#define T(f) cmocka_unit_test(f)
#define TS(f) cmocka_unit_test_teardown(f, teardown_standin)
#define STANDIN_TESTS                                                                            \
	TS(test_restart_relists_once), TS(test_cut_rewatches_at_once), TS(test_cut_again_spreads), \
	TS(test_restart_spread), TS(test_list_too_large), TS(test_watch_too_large),                \
	TS(test_resume_deferred), TS(test_retry_after_spread), TS(test_retry_after),               \
	TS(test_blackholed_watch), TS(test_http_version_env)
	const struct CMUnitTest tests[] = {
		T(test_reflector_backoff),
		T(test_stale_readyz),
		T(test_retry_after_jitter),
		T(test_too_large_status),
		STANDIN_TESTS,
	};
	const struct CMUnitTest tests_http2[] = { STANDIN_TESTS };
	int failed;

	signal(SIGPIPE, SIG_IGN);
	failed = cmocka_run_group_tests_name("the stand-in in HTTP/1.1", tests, NULL, NULL);
	/* The same against a stand-in that offers HTTP/2, which libcurl negotiates (ALPN). */
	standin_http2 = true;
	failed += cmocka_run_group_tests_name("the stand-in in HTTP/2", tests_http2, NULL, NULL);
	standin_cleanup();
	return failed;
}
