// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What evictd sends to the API server, and the API-server pod metadata source.
 *
 * ---- Why an evicted pod is deleted (after a DisruptionTarget condition), not marked Failed --------
 *
 * evictd kills from outside the kubelet, so the question is what makes the kubelet not undo
 * the kill. A pods/status patch to phase Failed does not (this was evictd's first design):
 *  - A status-only change reaches the kubelet as a RECONCILE, which does not sync the pod
 *    (pkg/kubelet/config/config.go checkAndUpdatePod: only a spec change is an UPDATE;
 *    kubelet.go HandlePodReconcile only updates the status manager's copy). Meanwhile the
 *    PLEG sees the killed containers die and SyncPod restarts them in place (restartPolicy
 *    Always) on the same starved node.
 *  - The status manager's periodic reconcile (pkg/kubelet/status/status_manager.go
 *    needsReconcile, syncBatch) finds the API status differing from its own and writes its own
 *    back: Running again. generateAPIPodStatus keeps a terminal API phase only when it sees it
 *    in time, and then drops our reason when it changes the phase, so "Evicted" is lost.
 *  - Retrying such a patch for minutes could then fail a pod that has recovered.
 * A deletion cannot be undone: nothing clears metadata.deletionTimestamp. The kubelet sees it
 * as an UPDATE with a deletion (config.go: a DeletionTimestamp set), its pod workers mark the
 * pod terminating (pkg/kubelet/pod_workers.go UpdatePod: DeletionTimestamp != nil ->
 * terminationRequested) and never start its containers again, whatever the PLEG reported; a
 * container restarted in the window is stopped within the grace. This is what Kubernetes' own
 * components do to remove a pod from outside the kubelet: the taint manager
 * (pkg/controller/tainteviction/taint_eviction.go addConditionAndDeletePod: patch the
 * DisruptionTarget condition with utilpod.PatchPodStatus, then Delete), as the PodGC and the
 * Eviction API do. evictd follows it:
 *  1. PATCH pods/status, strategic merge, {"metadata":{"uid"}} as precondition, adding only
 *     the DisruptionTarget condition (reason TerminationByKubelet, the kubelet's eviction
 *     message), so a Job's podFailurePolicy can ignore it as it ignores kubelet evictions;
 *  2. DELETE with {"preconditions":{"uid"}} and gracePeriodSeconds = the kill's grace (at
 *     least 1: 0 would remove the object before the kubelet cleaned up volumes and sandbox).
 * Controllers replace a deleted pod at once (ReplicaSet, Job, DaemonSet; a StatefulSet waits
 * until the object is gone, i.e. until the kubelet has finished: never two pods with one
 * identity). The Eviction API (pods/eviction) is not used: it honours PodDisruptionBudgets,
 * which node-pressure eviction by design does not. The requests go out only after
 * cgroup.kill has emptied the pod. A stale report is dropped: 404 or a 409 from the uid
 * precondition (the pod is gone, or another pod has its name), and anything not delivered
 * within KUBE_EVICTION_RETRY_FOR_NS (2 min): later the kubelet may have restarted the pod and
 * a DELETE would remove a recovered pod. The Warning Event "Evicted" with the kubelet's message
 * and annotations is recorded as before.
 *
 * ---- Node shutdown --------------------------------------------------------------------------
 *
 * The kubelet's graceful shutdown sets the node NotReady ("KubeletNotReady", "node is shutting
 * down") and each pod Failed, reason "Terminated", message "Pod was terminated in response to
 * imminent node shutdown." with the DisruptionTarget condition. evictd reports the pods the
 * same way, each once its kill has ended, so controllers replace them at once instead of after
 * node-monitor-grace-period (50 s) + the 300 s not-ready toleration. It does not write the
 * Ready condition: the kubelet owns it and, still running while evictd holds the inhibitor,
 * would set it back to True within nodeStatusUpdateFrequency. Nor does it cordon
 * (spec.unschedulable is the operator's switch: evictd could not tell on the next boot whether
 * to undo it) or use node.kubernetes.io/unschedulable (the node lifecycle controller derives
 * that taint from spec.unschedulable and would remove it). It adds its own
 * evictd.io/shutdown:NoSchedule taint instead, removed on cancel and at the next start.
 *
 * ---- The out-of-service taint (opt-in) --------------------------------------------------------
 *
 * node.kubernetes.io/out-of-service=nodeshutdown:NoExecute (KEP-2268, non-graceful node
 * shutdown) makes the control plane force-delete the node's terminating pods and detach their
 * volumes without the 6-minute wait, so StatefulSet pods with volumes fail over at once. It is
 * only safe when the node is really off: a volume detached while still mounted and written to
 * can be corrupted. evictd sets it only when every pod's kill ended with an empty cgroup, after
 * sync(2), and only for a power-off or halt, never a reboot: with systemd >= 255 logind says so
 * in PrepareForShutdownWithMetadata ("type") and the taint goes out before the inhibitor is
 * released; older systemd (Debian 12: 252) says nothing, so the inhibitor is released first
 * and the taint is sent only once systemd has a poweroff.target or halt.target start job
 * queued (logind's execute_shutdown_or_sleep starts it "replace-irreversibly" then; see
 * daemon/daemon_shutdown.c). Risks that remain: in that second case the request races the
 * shutdown (evictd is being stopped; it drains its queue for 2 s), so the taint may not be
 * set at all (the safe failure); a power-off that hangs after the taint leaves a node that
 * still runs with its volumes detached; and if evictd does not come back the taint stays
 * until an operator removes it - which is the taint's documented meaning. evictd records
 * in its state dir that it set the taint and removes it at the next start only then, never
 * one an operator set.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube/report_internal.h"
#include "sys/clock.h"
#include "sys/log.h"

void kube_report_ref(struct kube_report *report)
{
	atomic_fetch_add(&report->refs, 1);
}

void kube_report_unref(struct kube_report *report)
{
	if (atomic_fetch_sub(&report->refs, 1) != 1)
		return;
	pthread_mutex_destroy(&report->lock);
	free(report);
}

/* Submit a request, or in a dry run say what it would have been. */
int kube_report_send(struct kube_report *report, const char *method, const char *path,
			const char *content_type, const char *body, const char *what, bool ok_if_gone)
{
	int err;

	if (report->dry_run) {
		log_info("kube: [dry-run] %s: would %s %s %s", what, method, path, body ? body : "");
		return 0;
	}
	err = kube_submit(report->client, &(struct kube_request_spec){
		.method = method,
		.path = path,
		.content_type = content_type,
		.body = body,
		.what = what,
		.ok_if_gone = ok_if_gone,
	});
	if (err && err != -ENOBUFS)	/* a full queue was logged by kube_submit */
		log_err("kube: %s: %s %s not queued: %s", what, method, path, strerror(-err));
	return err;
}

/* -- pods -- */

/* A pod the API knows, that evictd may report on. Logs why not. */
static bool reportable_pod(const struct pod *pod, const char *what)
{
	if (!pod->namespace_[0] || !pod->name[0] || !pod->uid[0]) {
		log_warn("kube: %s: the pod in %s has no API metadata (namespace/name); not reported",
			 what, pod->cgroup_path);
		return false;
	}
	if (pod->is_static || pod->is_mirror || pod->is_self) {
		log_info("kube: %s: %s/%s is a static pod or evictd itself; its status is the kubelet's",
			 what, pod->namespace_, pod->name);
		return false;
	}
	return true;
}

static int fail_pod(struct kube_report *report, const struct pod *pod, const char *reason,
		    const char *message, const char *what)
{
	char path[512];
	char *patch = kube_pod_failed_patch(pod->uid, reason, message, report->realtime_ns());
	int err;

	if (!patch)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", pod->namespace_, pod->name);
	err = kube_report_send(report, "PATCH", path, KUBE_CONTENT_STRATEGIC_PATCH, patch, what, true);
	free(patch);
	return err;
}

int kube_report_eviction(struct kube_report *report, const struct kube_eviction *eviction)
{
	const struct pod *pod = eviction->pod;
	char message[1024], what[400], offending[512] = "", usage[512] = "";
	size_t used_names = 0, used_usage = 0;
	int err;

	if (!reportable_pod(pod, "eviction"))
		return -ENODATA;
	if (kube_eviction_message(eviction, message, sizeof(message)) < 0)
		log_debug("kube: eviction message of %s/%s truncated", pod->namespace_, pod->name);
	snprintf(what, sizeof(what), "eviction of %s/%s", pod->namespace_, pod->name);
	err = kube_report_evict_pod(report, pod, message, eviction->grace_period_s, what);
	if (err) {
		if (err != -ENOBUFS)	/* a full queue was logged by kube_submit_job */
			log_err("kube: %s not queued: %s", what, strerror(-err));
		return err;
	}

	/* The kubelet's event annotations (helpers.go: OffendingContainersKey ...). */
	for (size_t i = 0; i < eviction->n_containers; i++) {
		const struct kube_container_usage *c = &eviction->containers[i];
		char quantity[40];

		if (c->usage <= c->request)
			continue;
		kube_quantity_string(c->usage, KUBE_QUANTITY_BINARY_SI, quantity, sizeof(quantity));
		used_names += (size_t)snprintf(offending + used_names, used_names < sizeof(offending) ?
					       sizeof(offending) - used_names : 0, "%s%s",
					       used_names ? "," : "", c->name);
		used_usage += (size_t)snprintf(usage + used_usage, used_usage < sizeof(usage) ?
					       sizeof(usage) - used_usage : 0, "%s%s",
					       used_usage ? "," : "", quantity);
	}
	{
		const char *annotations[3][2] = {
			{ "offending_containers", offending },
			{ "offending_containers_usage", usage },
			{ "starved_resource", kube_signal_resource(eviction->signal) },
		};

		err = kube_report_emit_event(report, "Pod", pod->namespace_, pod->name, pod->uid, "Warning",
				 KUBE_REASON_EVICTED, message, annotations, 3);
	}
	if (err && err != -ENOBUFS)
		log_err("kube: event Evicted on %s/%s not queued: %s", pod->namespace_, pod->name, strerror(-err));
	return 0;
}

int kube_report_shutdown_pod(struct kube_report *report, const struct pod *pod)
{
	char what[400];

	if (!reportable_pod(pod, "shutdown"))
		return -ENODATA;
	snprintf(what, sizeof(what), "shutdown status of %s/%s", pod->namespace_, pod->name);
	return fail_pod(report, pod, KUBE_REASON_SHUTDOWN_TERMINATED, KUBE_MESSAGE_SHUTDOWN, what);
}

static void sync_all(void)
{
	sync();
}

int kube_report_new(struct kube_report **out, const struct kube_report_options *options)
{
	struct kube_report *report;
	struct kube_task *task;
	const char *state_dir;

	*out = NULL;
	if (!options || !options->client || !options->node_name || !options->node_name[0] ||
	    strlen(options->node_name) >= sizeof(report->node))
		return -EINVAL;
	report = calloc(1, sizeof(*report));
	if (!report)
		return -ENOMEM;
	atomic_init(&report->refs, 2);	/* the owner and the taint task */
	report->client = options->client;
	snprintf(report->node, sizeof(report->node), "%s", options->node_name);
	snprintf(report->component, sizeof(report->component), "%s",
		 options->component ? options->component : KUBE_REPORT_COMPONENT);
	state_dir = options->state_dir ? options->state_dir : KUBE_REPORT_DEFAULT_STATE_DIR;
	if (state_dir[0])
		snprintf(report->record_path, sizeof(report->record_path), "%s/%s", state_dir,
			 KUBE_OUT_OF_SERVICE_RECORD);
	report->dry_run = options->dry_run;
	report->pressure_taints = !options->no_pressure_taints;
	report->out_of_service_on_shutdown = options->taint_out_of_service_on_shutdown;
	report->realtime_ns = options->realtime_ns ? options->realtime_ns : clock_realtime_ns;
	report->sync_filesystems = options->sync_filesystems ? options->sync_filesystems : sync_all;
	pthread_mutex_init(&report->lock, NULL);

	/* What an earlier run may have left: our own taints always; out-of-service only with
	 * the record saying we set it. want is empty, so the first run removes them. */
	report->managed = KUBE_TAINTS_EVICTD_OWNED;
	if (report->record_path[0] && kube_report_read_record(report->record_path, report->node)) {
		log_info("kube: %s says evictd set %s before the last shutdown; removing it",
			 report->record_path, kube_taint_name(KUBE_TAINT_OUT_OF_SERVICE));
		report->managed |= KUBE_TAINT_BIT(KUBE_TAINT_OUT_OF_SERVICE);
	}
	/* Not under report->lock: on failure kube_task_add calls the release, which takes it. */
	task = kube_task_add(report->client, &kube_report_taint_task_ops, report);
	if (!task) {
		kube_report_unref(report);	/* the task's reference went with the release */
		return -ENOMEM;
	}
	pthread_mutex_lock(&report->lock);
	report->task = task;
	pthread_mutex_unlock(&report->lock);
	*out = report;
	return 0;
}

void kube_report_free(struct kube_report *report)
{
	if (!report)
		return;
	pthread_mutex_lock(&report->lock);
	report->closed = true;
	if (report->task)
		kube_task_wake(report->task);	/* it returns KUBE_TASK_REMOVE */
	pthread_mutex_unlock(&report->lock);
	kube_report_unref(report);
}

void kube_report_conditions(struct kube_report *report, const bool conditions[EV_CONDITION_COUNT])
{
	uint32_t set = 0, clear = 0;
	bool changed = false;

	for (int c = 0; c < EV_CONDITION_COUNT; c++) {
		changed |= conditions[c] != report->conditions[c];
		report->conditions[c] = conditions[c];
		if (conditions[c] && report->pressure_taints)
			set |= KUBE_TAINT_BIT(kube_taint_for_condition(c));
		else
			clear |= KUBE_TAINT_BIT(kube_taint_for_condition(c));
	}
	/* The first evaluation sets what the node should carry, whatever it carries now: the
	 * reconciler's first pass then keeps a taint that still holds (no flapping on restart)
	 * and removes what an earlier run left that no longer does. */
	if (changed || !report->conditions_known)
		kube_report_set_want(report, set, clear);
	report->conditions_known = true;
}

/* The Event goes first: jobs run before tasks, so the order of the requests is fixed. */
void kube_report_shutdown_begin(struct kube_report *report)
{
	log_info("kube: node %s is shutting down: tainting it %s", report->node,
		 kube_taint_name(KUBE_TAINT_SHUTDOWN));
	kube_report_node_event(report, "Normal", "Shutdown", "evictd detected a shutdown event: terminating pods by priority");
	kube_report_set_want(report, KUBE_TAINT_BIT(KUBE_TAINT_SHUTDOWN), 0);
}

void kube_report_shutdown_end(struct kube_report *report, bool all_pods_gone, enum kube_node_fate fate)
{
	if (!report->out_of_service_on_shutdown)
		return;
	if (fate == KUBE_NODE_COMING_BACK) {
		log_info("kube: not tainting node %s out-of-service: it is rebooting, its volumes stay "
			 "where they are", report->node);
		return;
	}
	if (fate != KUBE_NODE_GOING_AWAY) {
		log_warn("kube: not tainting node %s out-of-service: a power-off cannot be told from a "
			 "reboot", report->node);
		return;
	}
	if (!all_pods_gone) {
		log_warn("kube: not tainting node %s out-of-service: not every pod's kill ended with an "
			 "empty cgroup, and its volumes could still be in use", report->node);
		return;
	}
	log_info("kube: every pod on %s is gone: tainting it %s", report->node,
		 kube_taint_name(KUBE_TAINT_OUT_OF_SERVICE));
	kube_report_set_want(report, KUBE_TAINT_BIT(KUBE_TAINT_OUT_OF_SERVICE), 0);
}

void kube_report_shutdown_cancel(struct kube_report *report)
{
	log_info("kube: shutdown of %s cancelled: removing the shutdown taints", report->node);
	kube_report_node_event(report, "Normal", "Shutdown", "evictd detected a shutdown cancellation");
	kube_report_set_want(report, 0, KUBE_TAINT_BIT(KUBE_TAINT_SHUTDOWN) | KUBE_TAINT_BIT(KUBE_TAINT_OUT_OF_SERVICE));
}
