// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The API-server pod metadata source (pods.h): the node's pods listed page by page in the
 * client's worker, handed to the pods table without ever waiting for the network. */
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/client_internal.h"
#include "kube/report_internal.h"
#include "sys/clock.h"
#include "sys/log.h"

struct kube_pods_source {
	struct pods_meta_source source;		/* first: pods.c hands us back this pointer */
	atomic_int refs;			/* the pods table and the task */
	struct kube_client *client;
	char node[256];
	int64_t interval_ns;
	unsigned page_limit;

	pthread_mutex_t lock;			/* guards everything below but "worker only" */
	pthread_cond_t listed;
	struct kube_task *task;
	bool closed;
	struct pod_meta_list fresh;		/* a list refresh() has not taken yet */
	bool fresh_ready;
	bool ever_listed;
	int last_err;

	/* Worker only. */
	uint64_t fingerprint;
	bool have_fingerprint;
	unsigned attempt;
	bool warned;
};

static void pods_source_unref(struct kube_pods_source *s)
{
	if (atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	pod_meta_list_free(&s->fresh);
	pthread_cond_destroy(&s->listed);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static int cmp_cgroup_uid(const void *a, const void *b)
{
	return strcmp(((const struct pod_meta *)a)->cgroup_uid, ((const struct pod_meta *)b)->cgroup_uid);
}

static int append_list(struct pod_meta_list *all, struct pod_meta_list *page)
{
	struct pod_meta *items;

	if (!page->n_items)
		return 0;
	items = realloc(all->items, (all->n_items + page->n_items) * sizeof(*items));
	if (!items)
		return -ENOMEM;
	memcpy(items + all->n_items, page->items, page->n_items * sizeof(*items));
	all->items = items;
	all->n_items += page->n_items;
	return 0;
}

/* One page: the pods parsed, the continue token, the fingerprint advanced. */
static int list_page(struct kube_pods_source *s, const char *continue_token, struct pod_meta_list *all,
		     char *next_token, size_t token_len, uint64_t *fingerprint, long *status, char *error,
		     size_t error_len)
{
	char node_escaped[800], token_escaped[4096] = "", path[5200], errbuf[256];
	struct pod_meta_list page = { 0 };
	struct json_object *doc, *metadata, *items;
	struct kube_response response;
	const char *next;
	int err;

	kube_escape(s->node, node_escaped, sizeof(node_escaped));
	if (continue_token[0] && kube_escape(continue_token, token_escaped, sizeof(token_escaped)) < 0)
		return -ENAMETOOLONG;
	/* fieldSelector=spec.nodeName=<node>, escaped as client-go does. */
	snprintf(path, sizeof(path), "/api/v1/pods?fieldSelector=spec.nodeName%%3D%s&limit=%u%s%s", node_escaped,
		 s->page_limit, token_escaped[0] ? "&continue=" : "", token_escaped);
	err = kube_request(s->client, "GET", path, NULL, NULL, &response);
	*status = response.status;
	snprintf(error, error_len, "%s", response.error);
	if (err || response.status != 200) {
		kube_response_free(&response);
		return err ? err : -EIO;
	}
	doc = json_tokener_parse(response.body ? response.body : "");
	if (!doc || !json_object_object_get_ex(doc, "metadata", &metadata)) {
		json_object_put(doc);
		kube_response_free(&response);
		snprintf(error, error_len, "not a PodList");
		return -EINVAL;
	}
	next = kube_json_member_string(metadata, "continue");
	snprintf(next_token, token_len, "%s", next ? next : "");
	/* The pods' identities and versions: equal means nothing to re-join. */
	if (json_object_object_get_ex(doc, "items", &items) && json_object_is_type(items, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(items); i++) {
			struct json_object *item_meta;
			struct json_object *item = json_object_array_get_idx(items, i);
			const char *uid = NULL, *version = NULL;

			if (json_object_object_get_ex(item, "metadata", &item_meta)) {
				uid = kube_json_member_string(item_meta, "uid");
				version = kube_json_member_string(item_meta, "resourceVersion");
			}
			*fingerprint = kube_fnv1a(kube_fnv1a(*fingerprint, uid ? uid : ""), version ? version : "");
		}
	}
	json_object_put(doc);
	err = pods_parse_podlist(response.body, response.body_len, "apiserver", s->node, &page, errbuf,
				 sizeof(errbuf));
	kube_response_free(&response);
	if (err) {
		snprintf(error, error_len, "%s", errbuf);
		return err;
	}
	err = append_list(all, &page);
	pod_meta_list_free(&page);
	return err;
}

/* The whole list, page by page. 1 changed (*out set), 0 unchanged, negative errno. */
static int list_pods(struct kube_pods_source *s, struct pod_meta_list *out, char *error, size_t error_len)
{
	char token[4096] = "", next[4096];
	uint64_t fingerprint = 0xcbf29ce484222325ull;
	bool restarted = false;
	long status;
	int err;

	memset(out, 0, sizeof(*out));
	for (;;) {
		err = list_page(s, token, out, next, sizeof(next), &fingerprint, &status, error, error_len);
		if (err == -EIO && status == 410 && token[0] && !restarted) {
			/* The continue token expired (410 Gone): start over, once. */
			log_info("kube: pods of %s: the list's continue token expired; listing again", s->node);
			pod_meta_list_free(out);
			fingerprint = 0xcbf29ce484222325ull;
			token[0] = '\0';
			restarted = true;
			continue;
		}
		if (err) {
			pod_meta_list_free(out);
			return err;
		}
		if (!next[0])
			break;
		snprintf(token, sizeof(token), "%s", next);
	}
	if (s->have_fingerprint && fingerprint == s->fingerprint) {
		pod_meta_list_free(out);
		return 0;
	}
	/* pods.c joins by bsearch on cgroup_uid: the pages are sorted each, not together. */
	qsort(out->items, out->n_items, sizeof(*out->items), cmp_cgroup_uid);
	for (size_t i = 1; i < out->n_items; i++) {
		if (!strcmp(out->items[i - 1].cgroup_uid, out->items[i].cgroup_uid)) {
			snprintf(error, error_len, "two pods with UID %s across pages", out->items[i].cgroup_uid);
			pod_meta_list_free(out);
			return -EINVAL;
		}
	}
	s->fingerprint = fingerprint;
	s->have_fingerprint = true;
	return 1;
}

static int64_t pods_task_run(struct kube_client *client, void *ctx, int64_t now_ns)
{
	struct kube_pods_source *s = ctx;
	struct pod_meta_list list;
	char error[320] = "", url[1024];
	int result;

	pthread_mutex_lock(&s->lock);
	if (s->closed) {
		pthread_mutex_unlock(&s->lock);
		return KUBE_TASK_REMOVE;
	}
	pthread_mutex_unlock(&s->lock);

	result = list_pods(s, &list, error, sizeof(error));
	if (result < 0) {
		kube_url(client, "/api/v1/pods", url, sizeof(url));
		if (!s->warned)
			log_warn("kube: listing the pods of %s: GET %s: %s; keeping the last list, retrying "
				 "with backoff", s->node, url, error[0] ? error : strerror(-result));
		s->warned = true;
		pthread_mutex_lock(&s->lock);
		s->last_err = result;
		pthread_cond_broadcast(&s->listed);
		pthread_mutex_unlock(&s->lock);
		s->attempt++;
		return now_ns + kube_client_backoff_ns(client, s->attempt);
	}
	if (s->warned)
		log_info("kube: listing the pods of %s works again", s->node);
	s->warned = false;
	s->attempt = 0;
	pthread_mutex_lock(&s->lock);
	if (result == 1) {
		if (!s->ever_listed)
			log_info("kube: %zu pods on %s from the API server", list.n_items, s->node);
		else
			log_debug("kube: pods of %s changed: %zu pods", s->node, list.n_items);
		pod_meta_list_free(&s->fresh);
		s->fresh = list;
		s->fresh_ready = true;
	}
	/* Tell the daemon's loop: it takes the list with pods_refresh() (never waits). */
	if (result == 1 || !s->ever_listed)
		kube_client_post(client, KUBE_EVENT_PODS);
	s->ever_listed = true;
	s->last_err = 0;
	pthread_cond_broadcast(&s->listed);
	pthread_mutex_unlock(&s->lock);
	return now_ns + s->interval_ns;
}

static void pods_task_release(void *ctx)
{
	struct kube_pods_source *s = ctx;

	pthread_mutex_lock(&s->lock);
	s->task = NULL;
	pthread_mutex_unlock(&s->lock);
	pods_source_unref(s);
}

static const struct kube_task_ops pods_task_ops = {
	.run = pods_task_run,
	.release = pods_task_release,
};

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
	} else if (s->last_err) {
		result = s->last_err;	/* the worker logged it; the last list stays */
	}
	pthread_mutex_unlock(&s->lock);
	return result;
}

static void pods_source_destroy(struct pods_meta_source *source)
{
	struct kube_pods_source *s = (struct kube_pods_source *)source;

	pthread_mutex_lock(&s->lock);
	s->closed = true;
	if (s->task)
		kube_task_wake(s->task);	/* it returns KUBE_TASK_REMOVE */
	pthread_mutex_unlock(&s->lock);
	pods_source_unref(s);
}

struct pods_meta_source *kube_pods_source_new(const struct kube_pods_source_options *options)
{
	struct kube_pods_source *s;
	struct kube_task *task;
	pthread_condattr_t attr;

	if (!options || !options->client || !options->node_name || !options->node_name[0] ||
	    strlen(options->node_name) >= sizeof(s->node))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	atomic_init(&s->refs, 2);	/* the pods table and the task */
	s->client = options->client;
	snprintf(s->node, sizeof(s->node), "%s", options->node_name);
	s->interval_ns = options->refresh_interval_ns > 0 ? options->refresh_interval_ns :
			 KUBE_PODS_DEFAULT_REFRESH_NS;
	s->page_limit = options->page_limit ? options->page_limit : KUBE_PODS_DEFAULT_PAGE_LIMIT;
	s->source.name = "apiserver";
	s->source.refresh = pods_source_refresh;
	s->source.destroy = pods_source_destroy;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&s->listed, &attr);
	pthread_condattr_destroy(&attr);
	/* Not under s->lock: on failure kube_task_add calls the release, which takes it. */
	task = kube_task_add(s->client, &pods_task_ops, s);
	if (!task) {
		pods_source_unref(s);	/* the task's reference went with the release */
		return NULL;
	}
	pthread_mutex_lock(&s->lock);
	s->task = task;
	pthread_mutex_unlock(&s->lock);
	return &s->source;
}

void kube_pods_source_refresh_now(struct pods_meta_source *source)
{
	struct kube_pods_source *s = (struct kube_pods_source *)source;

	pthread_mutex_lock(&s->lock);
	if (s->task)
		kube_task_wake(s->task);
	pthread_mutex_unlock(&s->lock);
}

int kube_pods_source_wait(struct pods_meta_source *source, int64_t timeout_ns)
{
	struct kube_pods_source *s = (struct kube_pods_source *)source;
	int64_t deadline = clock_monotonic_ns() + timeout_ns;
	struct timespec abs = { deadline / 1000000000, deadline % 1000000000 };
	int err = 0;

	pthread_mutex_lock(&s->lock);
	while (!s->ever_listed && !err)
		if (pthread_cond_timedwait(&s->listed, &s->lock, &abs) == ETIMEDOUT)
			err = s->last_err ? s->last_err : -ETIMEDOUT;
	pthread_mutex_unlock(&s->lock);
	return err;
}

bool kube_pods_source_ready(const struct pods_meta_source *source)
{
	struct kube_pods_source *s = (struct kube_pods_source *)source;
	bool ready;

	pthread_mutex_lock(&s->lock);
	ready = s->ever_listed;
	pthread_mutex_unlock(&s->lock);
	return ready;
}

int kube_pods_source_error(const struct pods_meta_source *source)
{
	struct kube_pods_source *s = (struct kube_pods_source *)source;
	int err;

	pthread_mutex_lock(&s->lock);
	err = s->last_err;
	pthread_mutex_unlock(&s->lock);
	return err;
}
