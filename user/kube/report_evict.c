// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * An eviction as the kubelet writes it (doc/DESIGN.md §8): one pods/status patch, phase
 * Failed, reason Evicted, the kubelet's message and the DisruptionTarget condition
 * (kubernetes pkg/kubelet/eviction/eviction_manager.go synchronize and evictPod's status
 * function), sent at the decision, before the kill, with metadata.uid as precondition.
 *
 * One job per eviction in the client's worker. The caller may ask for a handle whose eventfd
 * becomes readable at the patch's first answer; the daemon's loop holds the kill for it at
 * most a bound (KUBE_EVICTION_STATUS_WAIT_NS, act/executor.c), and never waits itself.
 * 404, 409 or 422 (a uid mismatch in the body of a status patch is Invalid, not Conflict:
 * apiserver staging/src/k8s.io/apiserver/pkg/registry/rest/update.go BeforeUpdate ->
 * ValidateObjectMetaUpdate, metadata.uid "field is immutable"): the pod is gone or is
 * another one of the same name: stale, dropped, never retried. Retryable failures back off
 * for KUBE_EVICTION_RETRY_FOR_NS only. No DELETE follows: the kubelet deletes only a pod
 * whose deletion was already requested (pkg/kubelet/status/status_manager.go canBeDeleted:
 * DeletionTimestamp == nil -> false), never an evicted one.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "kube/client_internal.h"
#include "kube/report_internal.h"
#include "sys/log.h"

/* The caller's side of the first answer; shared by the job and the caller's handle. The
 * eventfd becomes readable at the first answer: the daemon's loop watches it (the executor's
 * hold, act/executor.c), so nothing ever waits on it. */
struct kube_status_wait {
	atomic_int refs;
	pthread_mutex_t lock;
	bool answered;
	int result;	/* 0 landed, EVICT_STALE, KUBE_JOB_RETRY, negative errno */
	int fd;		/* eventfd */
};

struct evict_job {
	struct kube_report *report;
	struct kube_status_wait *wait;	/* NULL: nobody waits */
	char status_path[512];
	char what[400];
	char *patch;
	bool warned;
	int64_t first_ns;
};

static void wait_unref(struct kube_status_wait *wait)
{
	if (!wait || atomic_fetch_sub(&wait->refs, 1) != 1)
		return;
	close(wait->fd);
	pthread_mutex_destroy(&wait->lock);
	free(wait);
}

static void wait_answer(struct kube_status_wait *wait, int result)
{
	uint64_t one = 1;

	if (!wait)
		return;
	pthread_mutex_lock(&wait->lock);
	if (!wait->answered) {
		wait->answered = true;
		wait->result = result;
		/* A write of 1 to a fresh eventfd cannot fail short of a bad fd, which refs rule out. */
		if (write(wait->fd, &one, sizeof(one)) != sizeof(one))
			log_warn("kube: eventfd write: %m");
	}
	pthread_mutex_unlock(&wait->lock);
}

static void evict_job_release(void *ctx)
{
	struct evict_job *job = ctx;

	wait_answer(job->wait, -ECANCELED);	/* dropped before it ran */
	wait_unref(job->wait);
	free(job->patch);
	kube_report_unref(job->report);
	free(job);
}

/* The pod is gone or another one: the report is stale. */
#define EVICT_STALE 2

/* 0 done, EVICT_STALE (drop the job), KUBE_JOB_RETRY, negative errno. */
static int evict_patch(struct kube_client *client, struct evict_job *job)
{
	struct kube_response response;
	char url[1024];
	int err;

	err = kube_request(client, "PATCH", job->status_path, KUBE_CONTENT_STRATEGIC_PATCH, job->patch, &response);
	kube_url(client, job->status_path, url, sizeof(url));
	if (!err && response.status >= 200 && response.status <= 299) {
		kube_response_free(&response);
		return 0;
	}
	if (!err && (response.status == 404 || response.status == 409 || response.status == 422)) {
		log_info("kube: %s: PATCH %s: %s; the pod is gone or replaced, the report is stale: dropped",
			 job->what, url, response.error);
		kube_response_free(&response);
		return EVICT_STALE;
	}
	if (kube_should_retry(err, response.status)) {
		if (!job->warned)
			log_warn("kube: %s: PATCH %s: %s; retrying with backoff for at most %llds", job->what,
				 url, response.error, KUBE_EVICTION_RETRY_FOR_NS / 1000000000);
		job->warned = true;
		kube_response_free(&response);
		return KUBE_JOB_RETRY;
	}
	log_err("kube: %s: PATCH %s: %s; not retried", job->what, url, response.error);
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
		log_warn("kube: %s: not delivered within %llds; dropped", job->what,
			 KUBE_EVICTION_RETRY_FOR_NS / 1000000000);
		return -ETIMEDOUT;
	}
	result = evict_patch(client, job);
	/* The first answer, whatever it is, ends the caller's wait: the kill does not wait for
	 * a backoff. */
	wait_answer(job->wait, result);
	if (result == 0 && attempt)
		log_info("kube: %s: done after %u attempts", job->what, attempt + 1);
	return result == EVICT_STALE ? 0 : result;
}

static const struct kube_job_ops evict_job_ops = {
	.run = evict_job_run,
	.release = evict_job_release,
};

int kube_status_wait_fd(const struct kube_status_wait *wait)
{
	return wait ? wait->fd : -1;
}

int kube_status_wait_result(struct kube_status_wait *wait)
{
	int result;

	if (!wait)
		return -EINVAL;
	pthread_mutex_lock(&wait->lock);
	result = !wait->answered ? 1 : wait->result == EVICT_STALE ? -ESTALE :
		 wait->result == KUBE_JOB_RETRY ? -EAGAIN : wait->result;
	pthread_mutex_unlock(&wait->lock);
	return result;
}

void kube_status_wait_free(struct kube_status_wait *wait)
{
	wait_unref(wait);
}

static struct kube_status_wait *wait_new(void)
{
	struct kube_status_wait *wait = calloc(1, sizeof(*wait));

	if (!wait)
		return NULL;
	wait->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wait->fd < 0) {
		log_warn("kube: eventfd for a status patch's answer: %m; the kill will not wait for it");
		free(wait);
		return NULL;
	}
	atomic_init(&wait->refs, 2);	/* the job and the caller */
	pthread_mutex_init(&wait->lock, NULL);
	return wait;
}

int kube_report_evict_pod(struct kube_report *report, const struct pod *pod, const char *reason,
			  const char *message, struct kube_status_wait **wait_out, const char *what)
{
	struct kube_status_wait *wait = NULL;
	struct evict_job *job;
	int err;

	if (wait_out)
		*wait_out = NULL;
	job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	snprintf(job->status_path, sizeof(job->status_path), "/api/v1/namespaces/%s/pods/%s/status",
		 pod->namespace_, pod->name);
	snprintf(job->what, sizeof(job->what), "%s", what);
	job->patch = kube_pod_failed_patch(pod->uid, reason, message, report->realtime_ns());
	if (!job->patch) {
		free(job);
		return -ENOMEM;
	}
	if (report->dry_run) {
		log_info("kube: [dry-run] %s: would PATCH %s %s", what, job->status_path, job->patch);
		free(job->patch);
		free(job);
		return 0;
	}
	if (wait_out)
		wait = wait_new();
	job->wait = wait;
	job->report = report;
	kube_report_ref(report);
	err = kube_submit_job(report->client, &evict_job_ops, job, what);	/* releases on failure */
	if (err || !wait_out)
		wait_unref(wait);
	else
		*wait_out = wait;
	return err;
}
