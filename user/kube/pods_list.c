// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The pods source's list (kube/pods_watch.c runs it): this node's pods, page by page, into the
 * store, as client-go's reflector lists (staging/src/k8s.io/client-go/tools/cache/reflector.go
 * list, with tools/pager), and what a refused list says: 410 Expired, or 504 with the cause
 * ResourceVersionTooLarge (both relisted from resourceVersion "" by the caller).
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/pods_watch.h"

static bool list_should_stop(void *ctx)
{
	return kube_pods_stopping(ctx);
}

struct page {
	struct pod_meta_list pods;
	char rv[64];
	char next[4096];
};

static int list_page(struct kube_pods_source *s, struct kube_conn *conn, const char *path, struct page *page,
		     struct kube_response *response)
{
	const struct kube_stream_ops stop_only = { .should_stop = list_should_stop, .ctx = s };
	struct json_object *doc, *metadata;
	char errbuf[256];
	const char *text;
	int err;

	err = kube_conn_request(s->client, conn, "GET", path, NULL, NULL, 0, &stop_only, response);
	if (err || response->status != 200)
		return err ? err : -EIO;
	doc = json_tokener_parse(response->body ? response->body : "");
	if (!doc || !json_object_object_get_ex(doc, "metadata", &metadata)) {
		json_object_put(doc);
		snprintf(response->error, sizeof(response->error), "not a PodList");
		return -EINVAL;
	}
	text = kube_json_member_string(metadata, "resourceVersion");
	snprintf(page->rv, sizeof(page->rv), "%s", text ? text : "");
	text = kube_json_member_string(metadata, "continue");
	snprintf(page->next, sizeof(page->next), "%s", text ? text : "");
	json_object_put(doc);
	err = pods_parse_podlist(response->body, response->body_len, "apiserver", s->node, &page->pods, errbuf,
				 sizeof(errbuf));
	if (err)
		snprintf(response->error, sizeof(response->error), "%s", errbuf);
	return err;
}

int kube_pods_list(struct kube_pods_source *s, struct kube_conn *conn, enum list_rv mode, char *rv, size_t rv_len,
		   struct kube_list_result *result)
{
	char node[800], token[4200] = "", path[6000], rv_param[300] = "", escaped_rv[200];
	struct pod_meta *all = NULL;
	size_t n_all = 0;
	int err = 0;

	memset(result, 0, sizeof(*result));
	kube_escape(s->node, node, sizeof(node));
	if (mode == LIST_RV_LAST && rv[0] && kube_escape(rv, escaped_rv, sizeof(escaped_rv)) >= 0)
		snprintf(rv_param, sizeof(rv_param), "&resourceVersion=%s&resourceVersionMatch=NotOlderThan",
			 escaped_rv);
	else if (mode == LIST_RV_ZERO)
		snprintf(rv_param, sizeof(rv_param), "&limit=%u&resourceVersion=0", s->page_limit);
	else
		snprintf(rv_param, sizeof(rv_param), "&limit=%u", s->page_limit);
	for (;;) {
		struct kube_response response;
		struct page page = { 0 };
		struct pod_meta *grown;

		/* fieldSelector=spec.nodeName=<node>, escaped as client-go does; a continue token
		 * carries its own resourceVersion, which must not be sent with it. */
		if (token[0])
			snprintf(path, sizeof(path), "/api/v1/pods?fieldSelector=spec.nodeName%%3D%s&limit=%u&continue=%s",
				 node, s->page_limit, token);
		else
			snprintf(path, sizeof(path), "/api/v1/pods?fieldSelector=spec.nodeName%%3D%s%s", node, rv_param);
		err = list_page(s, conn, path, &page, &response);
		result->status = response.status;
		result->retry_after_ns = response.retry_after_ns;
		result->too_large = response.status != 200 && kube_status_too_large_rv(response.body);
		snprintf(result->error, sizeof(result->error), "%s", response.error);
		kube_response_free(&response);
		if (err) {
			pod_meta_list_free(&page.pods);
			break;
		}
		grown = realloc(all, (n_all + page.pods.n_items + 1) * sizeof(*all));
		if (!grown) {
			pod_meta_list_free(&page.pods);
			err = -ENOMEM;
			break;
		}
		all = grown;
		if (page.pods.n_items)	/* an empty page has no items array: memcpy(NULL) is UB */
			memcpy(all + n_all, page.pods.items, page.pods.n_items * sizeof(*all));
		n_all += page.pods.n_items;
		pod_meta_list_free(&page.pods);
		if (!page.next[0]) {
			snprintf(rv, rv_len, "%s", page.rv);
			break;
		}
		if (kube_escape(page.next, token, sizeof(token)) < 0) {
			snprintf(result->error, sizeof(result->error), "continue token too long");
			err = -ENAMETOOLONG;
			break;
		}
	}
	if (!err) {
		kube_pods_store_clear(s);
		for (size_t i = 0; i < n_all && !err; i++)
			err = kube_pods_store_put(s, &all[i]);
	}
	free(all);
	return err;
}
