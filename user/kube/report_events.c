// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Events on pods and the node: core/v1 Events, repeats counted on the existing object as
 * client-go's EventCorrelator does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/client_internal.h"
#include "kube/report_internal.h"
#include "sys/clock.h"
#include "sys/log.h"

/* -- events -- */

struct event_job {
	struct kube_report *report;
	uint64_t key;
	char namespace_[64];
	char kind[16];
	char object_namespace[64];
	char object_name[256];
	char object_uid[256];
	char type[16];
	char reason[64];
	char *message;
	char annotations[3][2][256];
	size_t n_annotations;
	int64_t when_unix_ns;
	int64_t retry_for_ns;	/* > 0: given up this long after the first attempt */
	int64_t first_ns;	/* the client's clock, at the first attempt */
	/* Decided at the first run. */
	bool decided;
	bool patching;
	char name[320];
	int32_t count;
	int64_t first_unix_ns;
	bool warned;
};

uint64_t kube_fnv1a(uint64_t hash, const char *text)
{
	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		hash = (hash ^ *p) * 0x100000001b3ull;
	return (hash ^ 0xff) * 0x100000001b3ull;	/* a separator between fields */
}

static struct event_cache_entry *event_cache_find(struct kube_report *report, uint64_t key, int64_t now_ns)
{
	for (size_t i = 0; i < EVENT_CACHE_SIZE; i++) {
		struct event_cache_entry *entry = &report->events[i];

		if (entry->key == key && now_ns - entry->last_seen_ns < EVENT_CACHE_TTL_NS)
			return entry;
	}
	return NULL;
}

static void event_cache_store(struct kube_report *report, const struct event_job *job, int64_t now_ns)
{
	struct event_cache_entry *slot = event_cache_find(report, job->key, now_ns);

	/* Else the least recently used slot (empty ones first: last_seen_ns 0), as client-go's
	 * bounded event cache. */
	if (!slot) {
		slot = &report->events[0];
		for (size_t i = 1; i < EVENT_CACHE_SIZE; i++)
			if (report->events[i].last_seen_ns < slot->last_seen_ns)
				slot = &report->events[i];
	}
	slot->key = job->key;
	snprintf(slot->namespace_, sizeof(slot->namespace_), "%s", job->namespace_);
	snprintf(slot->name, sizeof(slot->name), "%s", job->name);
	slot->count = job->count;
	slot->first_unix_ns = job->first_unix_ns;
	slot->last_seen_ns = now_ns;
}

static int event_job_result(struct event_job *job, const char *method, const char *url, int err,
			    const struct kube_response *response)
{
	if (kube_should_retry(err, response->status)) {
		if (!job->warned)
			log_warn("kube: event %s on %s %s: %s %s: %s; retrying with backoff", job->reason,
				 job->kind, job->object_name, method, url, response->error);
		job->warned = true;
		return KUBE_JOB_RETRY;
	}
	log_err("kube: event %s on %s %s: %s %s: %s; not retried", job->reason, job->kind,
		job->object_name, method, url, response->error);
	return err ? err : -EPROTO;
}

static int event_job_run(struct kube_client *client, void *ctx, unsigned attempt)
{
	struct event_job *job = ctx;
	struct kube_report *report = job->report;
	struct kube_response response;
	char path[512], url[1024];
	char *body;
	int err;

	/* An eviction's Event lives as long as the eviction (KUBE_EVICTION_RETRY_FOR_NS), not
	 * the client's whole retry window. */
	if (!attempt)
		job->first_ns = client->now_ns();
	else if (job->retry_for_ns > 0 && client->now_ns() - job->first_ns >= job->retry_for_ns) {
		log_warn("kube: event %s on %s %s: not delivered within %llds; dropped", job->reason,
			 job->kind, job->object_name, (long long)(job->retry_for_ns / 1000000000));
		return -ETIMEDOUT;
	}
	if (!job->decided) {
		struct event_cache_entry *entry = event_cache_find(report, job->key, clock_monotonic_ns());

		job->decided = true;
		if (entry) {
			/* The same event again: count it on the existing one (client-go's
			 * EventCorrelator), instead of a new object per occurrence. */
			job->patching = true;
			snprintf(job->name, sizeof(job->name), "%s", entry->name);
			job->count = entry->count + 1;
			job->first_unix_ns = entry->first_unix_ns;
		} else {
			if (kube_event_name(job->object_name, job->when_unix_ns, job->name, sizeof(job->name)) < 0)
				return -ENOSPC;
			job->count = 1;
			job->first_unix_ns = job->when_unix_ns;
		}
	}

	if (job->patching) {
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events/%s", job->namespace_, job->name);
		body = kube_event_count_patch(job->count, job->when_unix_ns, job->message);
		if (!body)
			return KUBE_JOB_RETRY;
		err = kube_request(client, "PATCH", path, KUBE_CONTENT_STRATEGIC_PATCH, body, &response);
		free(body);
		kube_url(client, path, url, sizeof(url));
		if (!err && response.status >= 200 && response.status <= 299) {
			event_cache_store(report, job, clock_monotonic_ns());
			kube_response_free(&response);
			return 0;
		}
		if (err || response.status != 404) {
			err = event_job_result(job, "PATCH", url, err, &response);
			kube_response_free(&response);
			return err;
		}
		/* Expired meanwhile (TTL): create it again, with the count it has reached. */
		kube_response_free(&response);
		job->patching = false;
	}

	{
		const char *annotations[6];
		struct kube_event event = {
			.namespace_ = job->namespace_,
			.name = job->name,
			.kind = job->kind,
			.object_namespace = job->object_namespace,
			.object_name = job->object_name,
			.object_uid = job->object_uid,
			.type = job->type,
			.reason = job->reason,
			.message = job->message,
			.component = report->component,
			.host = report->node,
			.count = job->count,
			.first_unix_ns = job->first_unix_ns,
			.last_unix_ns = job->when_unix_ns,
			.annotations = annotations,
			.n_annotations = job->n_annotations,
		};

		for (size_t i = 0; i < job->n_annotations; i++) {
			annotations[2 * i] = job->annotations[i][0];
			annotations[2 * i + 1] = job->annotations[i][1];
		}
		body = kube_event_body(&event);
	}
	if (!body)
		return KUBE_JOB_RETRY;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", job->namespace_);
	err = kube_request(client, "POST", path, KUBE_CONTENT_JSON, body, &response);
	free(body);
	kube_url(client, path, url, sizeof(url));
	/* 409 AlreadyExists: an earlier attempt got through but its answer was lost. */
	if (!err && ((response.status >= 200 && response.status <= 299) || response.status == 409)) {
		event_cache_store(report, job, clock_monotonic_ns());
		kube_response_free(&response);
		return 0;
	}
	err = event_job_result(job, "POST", url, err, &response);
	kube_response_free(&response);
	return err;
}

static void event_job_release(void *ctx)
{
	struct event_job *job = ctx;

	kube_report_unref(job->report);
	free(job->message);
	free(job);
}

static const struct kube_job_ops event_job_ops = {
	.run = event_job_run,
	.release = event_job_release,
};

/* annotations: n pairs. Any thread. */
int kube_report_emit_event(struct kube_report *report, const char *kind, const char *object_namespace,
		      const char *object_name, const char *object_uid, const char *type, const char *reason,
		      const char *message, const char *const annotations[][2], size_t n_annotations,
		      int64_t retry_for_ns)
{
	struct event_job *job;
	char what[400];

	if (report->dry_run) {
		log_info("kube: [dry-run] would record %s event %s on %s %s%s%s: %s", type, reason, kind,
			 object_namespace[0] ? object_namespace : "", object_namespace[0] ? "/" : "",
			 object_name, message);
		return 0;
	}
	job = calloc(1, sizeof(*job));
	if (!job || !(job->message = strdup(message))) {
		free(job);
		return -ENOMEM;
	}
	snprintf(job->namespace_, sizeof(job->namespace_), "%s", object_namespace[0] ? object_namespace : "default");
	snprintf(job->kind, sizeof(job->kind), "%s", kind);
	snprintf(job->object_namespace, sizeof(job->object_namespace), "%s", object_namespace);
	snprintf(job->object_name, sizeof(job->object_name), "%s", object_name);
	snprintf(job->object_uid, sizeof(job->object_uid), "%s", object_uid);
	snprintf(job->type, sizeof(job->type), "%s", type);
	snprintf(job->reason, sizeof(job->reason), "%s", reason);
	for (size_t i = 0; i < n_annotations && i < 3; i++) {
		snprintf(job->annotations[i][0], sizeof(job->annotations[i][0]), "%s", annotations[i][0]);
		snprintf(job->annotations[i][1], sizeof(job->annotations[i][1]), "%s", annotations[i][1]);
		job->n_annotations = i + 1;
	}
	job->when_unix_ns = report->realtime_ns();
	job->retry_for_ns = retry_for_ns;
	/* What makes two events "the same" for counting: client-go's aggregate key. */
	job->key = 0xcbf29ce484222325ull;
	job->key = kube_fnv1a(job->key, report->component);
	job->key = kube_fnv1a(job->key, report->node);
	job->key = kube_fnv1a(job->key, kind);
	job->key = kube_fnv1a(job->key, object_namespace);
	job->key = kube_fnv1a(job->key, object_name);
	job->key = kube_fnv1a(job->key, object_uid);
	job->key = kube_fnv1a(job->key, type);
	job->key = kube_fnv1a(job->key, reason);
	job->key = kube_fnv1a(job->key, message);
	job->key |= 1;	/* never 0, the empty slot */
	job->report = report;
	kube_report_ref(report);
	snprintf(what, sizeof(what), "event %s on %s %s", reason, kind, object_name);
	return kube_submit_job(report->client, &event_job_ops, job, what);
}

void kube_report_node_event(struct kube_report *report, const char *type, const char *reason, const char *message)
{
	/* The kubelet's nodeRef uses the node name as UID. */
	kube_report_emit_event(report, "Node", "", report->node, report->node, type, reason, message, NULL, 0, 0);
}
