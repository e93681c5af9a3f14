// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The node's taints: the out-of-service record in the state dir and the reconciler, a task
 * in the client's worker (read the node, merge-patch with its resourceVersion, again on 409). */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube/report_internal.h"
#include "sys/clock.h"
#include "sys/fileio.h"
#include "sys/log.h"

/* -- the out-of-service record -- */

static int write_record(const char *path, const char *node, int64_t now_unix_ns)
{
	char dir[PATH_MAX], text[512], when[32];
	char *slash;
	int err, n;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = '\0';
	err = fileio_mkdir_p(dir, 0755);
	if (err) {
		log_err("kube: creating state dir %s: %s", dir, strerror(-err));
		return err;
	}
	kube_format_time(now_unix_ns, when, sizeof(when));
	n = snprintf(text, sizeof(text), "{\"node\":\"%s\",\"taint\":\"%s\",\"time\":\"%s\"}\n", node,
		     kube_taint_name(KUBE_TAINT_OUT_OF_SERVICE), when);
	/* Atomic and fsync'd, directory included: the record must survive the power-off that
	 * follows. */
	err = fileio_write_atomic(path, text, (size_t)n, 0644);
	if (err)
		log_err("kube: writing %s: %s", path, strerror(-err));
	return err;
}

/* Whether the record says evictd set the out-of-service taint on this node. */
bool kube_report_read_record(const char *path, const char *node)
{
	struct json_object *doc = json_object_from_file(path);
	const char *recorded = kube_json_member_string(doc, "node");
	bool ours = recorded && !strcmp(recorded, node);

	if (access(path, F_OK) == 0 && !ours)
		log_warn("kube: %s is not a record for node %s; ignoring it", path, node);
	json_object_put(doc);
	return ours;
}

/* -- the taint reconciler (a task in the worker) -- */

#define PRESSURE_TAINTS (KUBE_TAINT_BIT(KUBE_TAINT_MEMORY_PRESSURE) | KUBE_TAINT_BIT(KUBE_TAINT_DISK_PRESSURE) | \
			 KUBE_TAINT_BIT(KUBE_TAINT_PID_PRESSURE))

static void log_taint_changes(struct kube_report *report, uint32_t before, uint32_t after)
{
	for (int t = 0; t < KUBE_TAINT_COUNT; t++) {
		uint32_t bit = KUBE_TAINT_BIT(t);

		if ((after & bit) && !(before & bit))
			log_info("kube: node %s: %stainted %s", report->node, report->dry_run ? "[dry-run] would be " : "",
				 kube_taint_name(t));
		else if ((before & bit) && !(after & bit))
			log_info("kube: node %s: %staint %s removed", report->node,
				 report->dry_run ? "[dry-run] would have " : "", kube_taint_name(t));
	}
}

/* One try at making the node's taints match want. 0, KUBE_JOB_RETRY (conflict: again now),
 * or negative errno (backoff). *before and *after: our taints on the node before and after. */
static int reconcile_taints(struct kube_client *client, struct kube_report *report, uint32_t want,
			    uint32_t managed, uint32_t *before, uint32_t *after)
{
	struct kube_response response;
	char path[512], url[1024];
	uint32_t present;
	char *patch = NULL;
	int err;

	snprintf(path, sizeof(path), "/api/v1/nodes/%s", report->node);
	kube_url(client, path, url, sizeof(url));
	err = kube_request(client, "GET", path, NULL, NULL, &response);
	if (err || response.status != 200) {
		if (!report->taint_warned)
			log_warn("kube: node taints: GET %s: %s; retrying with backoff", url, response.error);
		report->taint_warned = true;
		kube_response_free(&response);
		return err ? err : -EIO;
	}
	err = kube_node_taint_patch(response.body, want, managed, report->realtime_ns(), &patch, &present);
	kube_response_free(&response);
	if (err) {
		log_err("kube: node taints: GET %s: not a Node with metadata.resourceVersion", url);
		return err;
	}
	*before = present;
	*after = (present & ~managed) | (want & managed);
	if (!patch) {
		*after = present;
		return 0;
	}
	if (report->dry_run) {
		log_info("kube: [dry-run] node taints: would PATCH %s %s", url, patch);
		free(patch);
		log_taint_changes(report, present, *after);
		return 0;
	}
	err = kube_request(client, "PATCH", path, KUBE_CONTENT_MERGE_PATCH, patch, &response);
	free(patch);
	if (!err && response.status == 409) {
		/* Someone else changed the node since our GET: read it again. */
		log_debug("kube: node taints: PATCH %s: conflict, reading the node again", url);
		kube_response_free(&response);
		return KUBE_JOB_RETRY;
	}
	if (err || response.status < 200 || response.status > 299) {
		if (!report->taint_warned)
			log_warn("kube: node taints: PATCH %s: %s; retrying with backoff", url, response.error);
		report->taint_warned = true;
		kube_response_free(&response);
		return err ? err : -EIO;
	}
	kube_response_free(&response);
	log_taint_changes(report, present, *after);
	return 0;
}

static int64_t taint_task_run(struct kube_client *client, void *ctx, int64_t now_ns)
{
	const uint32_t out_of_service = KUBE_TAINT_BIT(KUBE_TAINT_OUT_OF_SERVICE);
	struct kube_report *report = ctx;
	uint32_t want, managed, before = 0, after = 0;
	int64_t next_ns;
	uint64_t generation;
	bool again;
	int err;

	pthread_mutex_lock(&report->lock);
	if (report->closed) {
		pthread_mutex_unlock(&report->lock);
		return KUBE_TASK_REMOVE;
	}
	if (!report->want_known) {
		/* Reconcile at start, not remove-then-add: wait for what the node should carry. */
		pthread_mutex_unlock(&report->lock);
		return KUBE_TASK_IDLE;
	}
	want = report->want;
	managed = report->managed;
	generation = report->generation;
	pthread_mutex_unlock(&report->lock);
	/* A DaemonSet the pressure taints keep off may have them lifted for a while
	 * (kube/report_holes.c): the node then carries want without them. A new want goes on
	 * the node first and the DaemonSets (a GET and a list) are looked at on the run right
	 * after: the taint must be there before the eviction's status patch (§8). */
	if (generation != report->reconciled_generation)
		next_ns = now_ns;
	else
		next_ns = kube_report_holes_step(client, report, want & managed & PRESSURE_TAINTS, now_ns);
	want &= ~report->lifted;
	if (generation == report->reconciled_generation && report->lifted == report->reconciled_lifted)
		return next_ns;

	if ((want & out_of_service) && !report->synced && !report->dry_run) {
		/* Volumes may be detached right after the taint: flush what the pods wrote, and
		 * record the taint first, so that a crash can never leave one we forget. */
		report->sync_filesystems();
		report->synced = true;
		if (!report->record_path[0] || write_record(report->record_path, report->node, report->realtime_ns())) {
			log_err("kube: no record of the out-of-service taint can be kept; not setting it");
			pthread_mutex_lock(&report->lock);
			report->want &= ~out_of_service;
			pthread_mutex_unlock(&report->lock);
			want &= ~out_of_service;
		}
	}

	err = reconcile_taints(client, report, want, managed, &before, &after);
	if (err == KUBE_JOB_RETRY) {
		if (++report->taint_conflicts < TAINT_CONFLICT_RETRIES)
			return now_ns;
		err = -EAGAIN;
		log_warn("kube: node %s: %u conflicts in a row updating taints; backing off", report->node,
			 report->taint_conflicts);
	}
	report->taint_conflicts = 0;
	if (err) {
		report->taint_attempt++;
		/* From the answer, as a queued job's retry: Retry-After counts from the 429. */
		return kube_client_now_ns(client) + kube_client_backoff_ns(client, report->taint_attempt);
	}
	if (report->taint_attempt)
		log_info("kube: node %s: taints up to date after %u attempts", report->node,
			 report->taint_attempt + 1);
	report->taint_attempt = 0;
	report->taint_warned = false;
	report->reconciled_generation = generation;
	report->reconciled_lifted = report->lifted;

	if (!report->dry_run && (managed & out_of_service)) {
		if ((after & out_of_service) && !(before & out_of_service))
			kube_report_node_event(report, "Warning", "OutOfService",
				   "evictd tainted the node " KUBE_TAINT_KEY_OUT_OF_SERVICE "="
				   KUBE_TAINT_VALUE_OUT_OF_SERVICE ":NoExecute: every pod is gone and it is "
				   "shutting down; its volumes may be detached at once");
		if ((before & out_of_service) && !(after & out_of_service))
			kube_report_node_event(report, "Normal", "OutOfServiceRemoved",
				   "evictd removed the " KUBE_TAINT_KEY_OUT_OF_SERVICE " taint it had set");
		/* Gone from the node and not wanted: the record has served its purpose. */
		if (!(want & out_of_service) && !(after & out_of_service)) {
			if (report->record_path[0] && unlink(report->record_path) && errno != ENOENT)
				log_warn("kube: removing %s: %m", report->record_path);
			pthread_mutex_lock(&report->lock);
			if (!(report->want & out_of_service))
				report->managed &= ~out_of_service;
			pthread_mutex_unlock(&report->lock);
			report->synced = false;
		}
	}

	pthread_mutex_lock(&report->lock);
	again = report->generation != generation;
	pthread_mutex_unlock(&report->lock);
	return again ? now_ns : next_ns;
}

static void taint_task_release(void *ctx)
{
	struct kube_report *report = ctx;

	pthread_mutex_lock(&report->lock);
	report->task = NULL;
	pthread_mutex_unlock(&report->lock);
	kube_report_unref(report);
}

const struct kube_task_ops kube_report_taint_task_ops = {
	.run = taint_task_run,
	.release = taint_task_release,
};

/* Change what the node should carry and let the reconciler know. Any thread. */
void kube_report_set_want(struct kube_report *report, uint32_t set, uint32_t clear)
{
	uint32_t before;

	pthread_mutex_lock(&report->lock);
	before = report->want;
	report->want = (report->want | set) & ~clear;
	report->managed |= set;
	if (report->want != before || !report->want_known) {
		report->want_known = true;
		report->generation++;
		/* A pressure taint newly wanted goes before the eviction queued next: the
		 * replacement pod its status patch brings must meet the taint (§8). */
		if (report->task && (report->want & ~before & PRESSURE_TAINTS))
			kube_task_wake_first(report->task);
		else if (report->task)
			kube_task_wake(report->task);
	}
	pthread_mutex_unlock(&report->lock);
}
