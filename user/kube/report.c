// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What evictd sends to the API server, and the API-server pod metadata source.
 *
 * ---- An eviction as the kubelet writes it (doc/DESIGN.md §8) --------------------------------
 *
 * The kubelet (pkg/kubelet/eviction/eviction_manager.go evictPod) records the Warning Event
 * "Evicted" first, then calls killPodFunc (pkg/kubelet/pod_workers.go killPodNow: UpdatePod
 * with KillPodOptions and a PodStatusFunc setting phase Failed, reason Evicted, the message and
 * the DisruptionTarget condition, reason TerminationByKubelet). The pod worker applies that
 * status in SyncTerminatingPod (pkg/kubelet/kubelet.go: podStatusFn, then
 * statusManager.SetPodStatus) BEFORE killPod, so from then on the kubelet holds the pod
 * terminal: its containers are never restarted and a Job container that exits 0 on SIGTERM
 * does not make it Succeeded. evictd kills from outside the kubelet and has no such local
 * state: the only terminal state the kubelet will respect is the API's. generateAPIPodStatus
 * (pkg/kubelet/kubelet_pods.go) forces a terminal API phase back ("pods are not allowed to
 * transition out of terminal phases") and keeps the API's reason and message when its own are
 * empty, and SyncPod stops at a terminal phase (no container is started again). So evictd
 * writes the kubelet's status itself, in one pods/status strategic-merge patch with
 * metadata.uid as precondition, BEFORE the kill; a soft kill is held (in the loop, as an event
 * source: act/executor.c) until its first answer, at most KUBE_EVICTION_STATUS_WAIT_NS
 * (100 ms); a hard kill is not held: the kubelet's own kill never waits for the API (its
 * status manager writes asynchronously). A patch still
 * unanswered then is sent anyway and lands during the kill; a pod killed first can then end
 * Succeeded (restartPolicy Never, exit 0 on SIGTERM) or be restarted in place - the residual
 * race, bounded by the API's latency. The kubelet's status manager does delay the
 * DisruptionTarget condition and the terminal phase until the containers are gone
 * (status_manager.go mergePodStatus, delayTransitioningToTerminal): it can, because its pod
 * worker already holds the pod; evictd writes them early, and a pod it acted on is killed
 * within the grace, so the window in which the API says Failed while a container runs is
 * the grace period at most.
 *
 * No DELETE. The kubelet never deletes an evicted pod: its status manager deletes only pods
 * whose deletion was requested already (status_manager.go syncPod -> canBeDeleted:
 * DeletionTimestamp == nil -> false; then grace 0 and a uid precondition). The pod stays
 * Failed/Evicted - what `kubectl get pods`, kube-state-metrics' kube_pod_status_reason and the
 * descheduler read - until the PodGC (terminated-pod-gc-threshold) or an operator removes it.
 * Controllers replace it at once all the same: a Failed pod is not active (ReplicaSet
 * controller.FilterActivePods, the Job controller counts it failed and its podFailurePolicy
 * matches DisruptionTarget, the DaemonSet controller deletes failed daemon pods, the
 * StatefulSet controller deletes and recreates a failed member). The Eviction API
 * (pods/eviction) is not used: it honours PodDisruptionBudgets, which node-pressure eviction by
 * design does not. A report is stale and dropped when the pod is gone (404), another pod has
 * its name (422: metadata.uid is immutable; 409 from older servers), or it was not delivered
 * within KUBE_EVICTION_RETRY_FOR_NS (2 min), and so is its Event.
 *
 * ---- Node shutdown --------------------------------------------------------------------------
 *
 * The kubelet's graceful shutdown sets the node NotReady ("KubeletNotReady", "node is shutting
 * down") and each pod Failed, reason "Terminated", message "Pod was terminated in response to
 * imminent node shutdown." with the DisruptionTarget condition. evictd reports the pods the
 * same way, each as its termination begins, before its SIGTERM (as an eviction: the kubelet's
 * pod worker then stops the pod, preStop and STOPSIGNAL, instead of restarting in place a pod
 * whose sandbox died while the API said Running; daemon/daemon_shutdown.c start_kill), so
 * controllers replace them at once instead of after node-monitor-grace-period (50 s) + the
 * 300 s not-ready toleration. It does not write the
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
	kube_report_holes_release(report);
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
	/* The status first: a soft kill is held for it (bounded), the Event does not matter to it. */
	err = kube_report_evict_pod(report, pod, KUBE_REASON_EVICTED, message, eviction->status_wait, what);
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
					     KUBE_REASON_EVICTED, message, annotations, 3,
					     KUBE_EVICTION_RETRY_FOR_NS);
	}
	if (err && err != -ENOBUFS)
		log_err("kube: event Evicted on %s/%s not queued: %s", pod->namespace_, pod->name, strerror(-err));
	return 0;
}

int kube_report_shutdown_pod(struct kube_report *report, const struct pod *pod,
			     struct kube_status_wait **wait)
{
	char what[400];

	if (wait)
		*wait = NULL;
	if (!reportable_pod(pod, "shutdown"))
		return -ENODATA;
	snprintf(what, sizeof(what), "shutdown status of %s/%s", pod->namespace_, pod->name);
	return kube_report_evict_pod(report, pod, KUBE_REASON_SHUTDOWN_TERMINATED, KUBE_MESSAGE_SHUTDOWN,
				     wait, what);
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
	report->daemonset_check_ns = options->daemonset_check_ns > 0 ? options->daemonset_check_ns
								     : KUBE_DAEMONSET_CHECK_NS;
	report->hole_ns = options->hole_ns > 0 ? options->hole_ns : KUBE_TAINT_HOLE_NS;
	report->hole_retry_ns = report->hole_ns;
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

/*
 * evictd's own evictd.io/<resource>-pressure key, never node.kubernetes.io/<resource>-pressure:
 * the node lifecycle controller removes that one at the next Node update while the kubelet's
 * condition is False (pkg/controller/nodelifecycle/node_lifecycle_controller.go
 * doNoScheduleTaintingPass), and the kubelet rewrites the condition itself every status update
 * (pkg/kubelet/nodestatus/setters.go MemoryPressureCondition). The conditions here include
 * evictionPressureTransitionPeriod, so the taint lasts that long after evictd last acted.
 * doc/DESIGN.md §8 "Pressure taints".
 */
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
