// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * An eviction the kubelet cannot undo (doc/DESIGN.md §8): the pattern Kubernetes' own
 * components use to remove a pod from outside the kubelet, the taint manager's
 * (pkg/controller/tainteviction/taint_eviction.go addConditionAndDeletePod): the
 * DisruptionTarget condition through a pods/status patch, then a DELETE, here with a
 * metadata.uid precondition and a grace period. The reasoning, with the kubelet functions it
 * rests on, is in kube/report.c and doc/DESIGN.md §8.
 *
 * One job per eviction in the client's worker: patch (once it succeeded it is not sent again),
 * then delete. 404 or a 409 from the uid precondition: the pod is gone or is another one of
 * the same name, and the report is stale: dropped, never retried. Retryable failures back off,
 * but only for KUBE_EVICTION_RETRY_FOR_NS: a report that cannot be delivered within that
 * window is dropped rather than deleting, minutes later, a pod the kubelet may have restarted
 * and that is healthy again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/client_internal.h"
#include "kube/report_internal.h"
#include "sys/log.h"

char *kube_pod_delete_options(const char *uid, int64_t grace_period_s)
{
	struct json_object *doc = json_object_new_object();
	struct json_object *preconditions = json_object_new_object();

	if (!doc || !preconditions) {
		json_object_put(doc);
		json_object_put(preconditions);
		return NULL;
	}
	kube_json_add_string(doc, "kind", "DeleteOptions");
	kube_json_add_string(doc, "apiVersion", "v1");
	json_object_object_add(doc, "gracePeriodSeconds", json_object_new_int64(grace_period_s));
	kube_json_add_string(preconditions, "uid", uid);
	json_object_object_add(doc, "preconditions", preconditions);
	return kube_json_take(doc);
}

struct evict_job {
	struct kube_report *report;
	char status_path[512];
	char pod_path[512];
	char what[400];
	char *patch;
	char *delete_options;
	bool patched;
	bool warned;
	int64_t first_ns;
};

static void evict_job_release(void *ctx)
{
	struct evict_job *job = ctx;

	free(job->patch);
	free(job->delete_options);
	kube_report_unref(job->report);
	free(job);
}

/* evict_step: the pod is gone or another one: the report is stale. */
#define EVICT_STALE 2

/* One request of the job: 0 done, EVICT_STALE (drop the job), KUBE_JOB_RETRY, negative errno. */
static int evict_step(struct kube_client *client, struct evict_job *job, const char *method, const char *path,
		      const char *content_type, const char *body)
{
	struct kube_response response;
	char url[1024];
	int err;

	err = kube_request(client, method, path, content_type, body, &response);
	kube_url(client, path, url, sizeof(url));
	if (!err && response.status >= 200 && response.status <= 299) {
		kube_response_free(&response);
		return 0;
	}
	if (!err && (response.status == 404 || response.status == 409)) {
		log_info("kube: %s: %s %s: %s; the pod is gone or replaced, the report is stale: dropped",
			 job->what, method, url, response.error);
		kube_response_free(&response);
		return EVICT_STALE;
	}
	if (kube_should_retry(err, response.status)) {
		if (!job->warned)
			log_warn("kube: %s: %s %s: %s; retrying with backoff for at most %llds", job->what, method,
				 url, response.error, KUBE_EVICTION_RETRY_FOR_NS / 1000000000);
		job->warned = true;
		kube_response_free(&response);
		return KUBE_JOB_RETRY;
	}
	log_err("kube: %s: %s %s: %s; not retried", job->what, method, url, response.error);
	kube_response_free(&response);
	return err ? err : -EPROTO;
}

static int evict_job_run(struct kube_client *client, void *ctx, unsigned attempt)
{
	struct evict_job *job = ctx;
	int64_t now = client->now_ns();
	int result;

	if (!attempt)
		job->first_ns = now;
	else if (now - job->first_ns >= KUBE_EVICTION_RETRY_FOR_NS) {
		log_warn("kube: %s: not delivered within %llds; dropped (the pod may run again by now)",
			 job->what, KUBE_EVICTION_RETRY_FOR_NS / 1000000000);
		return -ETIMEDOUT;
	}
	if (!job->patched) {
		result = evict_step(client, job, "PATCH", job->status_path, KUBE_CONTENT_STRATEGIC_PATCH, job->patch);
		if (result == EVICT_STALE || result == KUBE_JOB_RETRY)
			return result == EVICT_STALE ? 0 : result;
		/* A status patch refused for good (validation): the deletion still makes the
		 * eviction stick; only the condition is missing. */
		job->patched = true;
	}
	result = evict_step(client, job, "DELETE", job->pod_path, KUBE_CONTENT_JSON, job->delete_options);
	if (result == 0 && attempt)
		log_info("kube: %s: done after %u attempts", job->what, attempt + 1);
	return result == EVICT_STALE ? 0 : result;
}

static const struct kube_job_ops evict_job_ops = {
	.run = evict_job_run,
	.release = evict_job_release,
};

int kube_report_evict_pod(struct kube_report *report, const struct pod *pod, const char *message,
			  int64_t grace_period_s, const char *what)
{
	struct evict_job *job;
	/* Never 0: a pod bound to a node deleted with 0 is removed at once, before the kubelet has
	 * cleaned up (volumes, the sandbox); its processes are gone already, so the kubelet
	 * finishes within a second of seeing the deletion whatever the grace. */
	int64_t grace = grace_period_s > 0 ? grace_period_s : 1;

	job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	snprintf(job->status_path, sizeof(job->status_path), "/api/v1/namespaces/%s/pods/%s/status",
		 pod->namespace_, pod->name);
	snprintf(job->pod_path, sizeof(job->pod_path), "/api/v1/namespaces/%s/pods/%s", pod->namespace_, pod->name);
	snprintf(job->what, sizeof(job->what), "%s", what);
	job->patch = kube_pod_disruption_patch(pod->uid, message, report->realtime_ns());
	job->delete_options = kube_pod_delete_options(pod->uid, grace);
	if (!job->patch || !job->delete_options) {
		free(job->patch);
		free(job->delete_options);
		free(job);
		return -ENOMEM;
	}
	if (report->dry_run) {
		log_info("kube: [dry-run] %s: would PATCH %s %s, then DELETE %s %s", what, job->status_path,
			 job->patch, job->pod_path, job->delete_options);
		free(job->patch);
		free(job->delete_options);
		free(job);
		return 0;
	}
	job->report = report;
	kube_report_ref(report);
	return kube_submit_job(report->client, &evict_job_ops, job, what);	/* releases on failure */
}
