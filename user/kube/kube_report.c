// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What evictd sends to the API server, and the API-server pod metadata source.
 *
 * ---- Why an evicted pod's status is patched to Failed, not deleted --------------------------
 *
 * The kubelet's eviction manager (pkg/kubelet/eviction, evictPod) does not delete a pod: it
 * records a Warning Event "Evicted" and kills the pod with a status function that sets phase
 * Failed, reason "Evicted", the evictionMessage text and a DisruptionTarget condition (reason
 * TerminationByKubelet); the status manager sends that through the pods/status subresource as
 * a strategic-merge patch carrying metadata.uid as a precondition. evictd does the same, for
 * these reasons:
 *  - The API server lets any client with pods/status patch set phase Failed: the status
 *    update validation (ValidatePodStatusUpdate) restricts nodeName and container-state
 *    transitions, not the phase; the PodGC and taint-eviction controllers set Failed with a
 *    DisruptionTarget condition the same way. NodeRestriction only limits kubelets.
 *  - The kubelet keeps a terminal phase it finds in the API: generateAPIPodStatus "API phase
 *    was terminal, updating phase to match" keeps Failed and, having no reason of its own,
 *    our reason and message; SyncPod then sees a terminal pod and stops it instead of
 *    restarting its containers in place - exactly what a kill alone would get (restartPolicy
 *    Always restarts them on the same, starved node).
 *  - Controllers replace a Failed pod at once: ReplicaSet (so Deployment) and Job count only
 *    active pods (FilterActivePods drops Failed); StatefulSet deletes a Failed replica and
 *    recreates it under the same name; DaemonSet deletes failed daemon pods and recreates
 *    them. A Job with a podFailurePolicy can match the DisruptionTarget condition to not
 *    count the eviction against backoffLimit, as with kubelet evictions. A bare pod stays
 *    Failed, as the kubelet leaves it.
 *  - A deletion would need the "delete" verb, would lose the record of why (kubectl get pods
 *    shows "Evicted" for the status), and for a StatefulSet would let the replacement start
 *    while the kubelet still considers the old one terminating. The Eviction API
 *    (pods/eviction) is wrong here: it honours PodDisruptionBudgets, which node-pressure
 *    eviction by design does not.
 * The patch is sent only after cgroup.kill has emptied the pod: a Failed phase while
 * containers still run would let a StatefulSet start a second pod with the same identity.
 * The uid precondition turns a pod replaced meanwhile under the same name into a 409, which
 * is treated as "nothing to do".
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
 * sync(2), and just before it releases the shutdown inhibitor. Risks that remain: logind's
 * PrepareForShutdown does not say whether this is a power-off or a reboot (systemd 252 has no
 * shutdown type on it), so a reboot fails workloads over too; if the shutdown stalls or is
 * cancelled after the lock is released the node keeps running with the taint (evictd removes
 * it on cancel while it still can); and if evictd does not come back on the next boot the taint
 * stays until an operator removes it - which is the taint's documented meaning. evictd records
 * in its state dir that it set the taint and removes it at the next start only then, never
 * one an operator set.
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kube/kube_report.h"
#include "sys/log.h"

#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
#define EVENT_CACHE_SIZE 128
/* The API server's default event TTL: an older event may be gone, so start a new one. */
#define EVENT_CACHE_TTL_NS (3600ll * 1000000000)
#define TAINT_CONFLICT_RETRIES 5

/* ---- quantities -------------------------------------------------------------------------- */

int kube_quantity_string(int64_t value, enum kube_quantity_format format, char *buf, size_t len)
{
	static const char *const binary[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
	static const char *const decimal[] = { "", "k", "M", "G", "T", "P", "E" };
	bool negative = value < 0;
	uint64_t amount = negative ? (uint64_t)0 - (uint64_t)value : (uint64_t)value;
	char suffix[16] = "";
	unsigned exponent = 0;
	int n;

	if (format == KUBE_QUANTITY_BINARY_SI && amount < 1024)
		format = KUBE_QUANTITY_DECIMAL_SI;	/* Quantity.CanonicalizeBytes does this */
	if (amount == 0) {
		n = snprintf(buf, len, "0");
		return n < 0 || (size_t)n >= len ? -ENOSPC : n;
	}
	if (format == KUBE_QUANTITY_BINARY_SI) {
		while (amount >= 1024 && amount % 1024 == 0 && exponent < 6) {
			amount /= 1024;
			exponent++;
		}
		snprintf(suffix, sizeof(suffix), "%s", binary[exponent]);
	} else {
		while (amount >= 10 && amount % 10 == 0) {
			amount /= 10;
			exponent++;
		}
		/* The exponent must be a multiple of 3 (AsCanonicalBytes). */
		for (; exponent % 3; exponent--)
			amount *= 10;
		if (format == KUBE_QUANTITY_DECIMAL_SI)
			snprintf(suffix, sizeof(suffix), "%s", decimal[exponent / 3]);
		else if (exponent)
			snprintf(suffix, sizeof(suffix), "e%u", exponent);
	}
	n = snprintf(buf, len, "%s%llu%s", negative ? "-" : "", (unsigned long long)amount, suffix);
	if (n < 0 || (size_t)n >= len) {
		if (len)
			buf[0] = '\0';
		return -ENOSPC;
	}
	return n;
}

enum kube_quantity_format kube_threshold_format(const struct threshold_value *value)
{
	const char *p = value->text;
	const char *exponent;

	if (value->is_percentage)
		return KUBE_QUANTITY_BINARY_SI;
	while (*p == '+' || *p == '-' || *p == '.' || (*p >= '0' && *p <= '9'))
		p++;
	if (!*p)
		return KUBE_QUANTITY_DECIMAL_SI;
	if (p[strlen(p) - 1] == 'i')
		return KUBE_QUANTITY_BINARY_SI;
	/* "1e9", "1E3": an exponent; "1E" alone is the exa suffix. */
	if (*p == 'e' || *p == 'E') {
		exponent = p + 1 + (p[1] == '+' || p[1] == '-');
		if (*exponent && strspn(exponent, "0123456789") == strlen(exponent))
			return KUBE_QUANTITY_DECIMAL_EXPONENT;
	}
	return KUBE_QUANTITY_DECIMAL_SI;
}

const char *kube_signal_resource(enum ev_signal signal)
{
	switch (signal) {
	case EV_SIGNAL_MEMORY_AVAILABLE:
	case EV_SIGNAL_OOM_GUARD:
		return "memory";
	case EV_SIGNAL_NODEFS_AVAILABLE:
	case EV_SIGNAL_IMAGEFS_AVAILABLE:
	case EV_SIGNAL_CONTAINERFS_AVAILABLE:
		return "ephemeral-storage";
	case EV_SIGNAL_NODEFS_INODES_FREE:
	case EV_SIGNAL_IMAGEFS_INODES_FREE:
	case EV_SIGNAL_CONTAINERFS_INODES_FREE:
		return "inodes";
	case EV_SIGNAL_PID_AVAILABLE:
		return "pids";
	default:
		return "unknown";
	}
}

/* makeSignalObservations: bytes as binary SI, inode and PID counts as decimal SI. */
static enum kube_quantity_format available_format(enum ev_signal signal)
{
	const char *resource = kube_signal_resource(signal);

	return !strcmp(resource, "inodes") || !strcmp(resource, "pids") ? KUBE_QUANTITY_DECIMAL_SI :
									      KUBE_QUANTITY_BINARY_SI;
}

int kube_eviction_message(const struct kube_eviction *eviction, char *buf, size_t len)
{
	const char *resource = kube_signal_resource(eviction->signal);
	char threshold[40], available[40];
	size_t used = 0;
	int n;

#define APPEND(...)                                                                   \
	do {                                                                          \
		n = snprintf(buf + used, len > used ? len - used : 0, __VA_ARGS__); \
		if (n < 0 || used + (size_t)n >= len)                                 \
			return -ENOSPC;                                               \
		used += (size_t)n;                                                    \
	} while (0)

	if (!len)
		return -ENOSPC;
	buf[0] = '\0';
	APPEND("The node was low on resource: %s. ", resource);
	if (eviction->threshold) {
		kube_quantity_string(eviction->threshold_quantity, kube_threshold_format(eviction->threshold),
				     threshold, sizeof(threshold));
		kube_quantity_string(eviction->available, available_format(eviction->signal), available,
				     sizeof(available));
		APPEND("Threshold quantity: %s, available: %s. ", threshold, available);
	}
	/* The kubelet names containers only for memory and ephemeral-storage. */
	if (!strcmp(resource, "memory") || !strcmp(resource, "ephemeral-storage")) {
		for (size_t i = 0; i < eviction->n_containers; i++) {
			const struct kube_container_usage *c = &eviction->containers[i];
			char usage[40], request[40];

			if (c->usage <= c->request)
				continue;
			kube_quantity_string(c->usage, KUBE_QUANTITY_BINARY_SI, usage, sizeof(usage));
			kube_quantity_string(c->request, KUBE_QUANTITY_BINARY_SI, request, sizeof(request));
			APPEND("Container %s was using %s, request is %s, has larger consumption of %s. ",
			       c->name, usage, request, resource);
		}
	}
	if (eviction->signal == EV_SIGNAL_OOM_GUARD)
		APPEND("evictd's OOM guard acted: the kernel's MemAvailable was below it. ");
#undef APPEND
	return (int)used;
}

void kube_format_time(int64_t unix_ns, char *buf, size_t len)
{
	time_t seconds = (time_t)(unix_ns / 1000000000);
	struct tm tm;

	gmtime_r(&seconds, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- request bodies ------------------------------------------------------------------------ */

static char *json_take(struct json_object *doc)
{
	char *text = doc ? strdup(json_object_to_json_string_ext(doc, JSON_FLAGS)) : NULL;

	json_object_put(doc);
	return text;
}

static void add_string(struct json_object *obj, const char *key, const char *value)
{
	json_object_object_add(obj, key, json_object_new_string(value ? value : ""));
}

static void add_time(struct json_object *obj, const char *key, int64_t unix_ns)
{
	char text[32];

	kube_format_time(unix_ns, text, sizeof(text));
	add_string(obj, key, text);
}

char *kube_pod_failed_patch(const char *uid, const char *reason, const char *message, int64_t now_unix_ns)
{
	struct json_object *doc = json_object_new_object();
	struct json_object *metadata = json_object_new_object();
	struct json_object *status = json_object_new_object();
	struct json_object *conditions = json_object_new_array();
	struct json_object *condition = json_object_new_object();

	if (!doc || !metadata || !status || !conditions || !condition) {
		json_object_put(doc);
		json_object_put(metadata);
		json_object_put(status);
		json_object_put(conditions);
		json_object_put(condition);
		return NULL;
	}
	/* A precondition: the API server answers 409 when the pod of this name is another one. */
	add_string(metadata, "uid", uid);
	json_object_object_add(doc, "metadata", metadata);
	add_string(status, "phase", "Failed");
	add_string(status, "reason", reason);
	add_string(status, "message", message);
	/* conditions merge by type in a strategic-merge patch: the others are kept. */
	add_string(condition, "type", KUBE_CONDITION_DISRUPTION_TARGET);
	add_string(condition, "status", "True");
	add_time(condition, "lastTransitionTime", now_unix_ns);
	add_string(condition, "reason", KUBE_REASON_TERMINATION_BY_KUBELET);
	add_string(condition, "message", message);
	json_object_array_add(conditions, condition);
	json_object_object_add(status, "conditions", conditions);
	json_object_object_add(doc, "status", status);
	return json_take(doc);
}

char *kube_event_body(const struct kube_event *event)
{
	struct json_object *doc = json_object_new_object();
	struct json_object *metadata = json_object_new_object();
	struct json_object *object = json_object_new_object();
	struct json_object *source = json_object_new_object();

	if (!doc || !metadata || !object || !source) {
		json_object_put(doc);
		json_object_put(metadata);
		json_object_put(object);
		json_object_put(source);
		return NULL;
	}
	add_string(doc, "apiVersion", "v1");
	add_string(doc, "kind", "Event");
	add_string(metadata, "name", event->name);
	add_string(metadata, "namespace", event->namespace_);
	if (event->n_annotations) {
		struct json_object *annotations = json_object_new_object();

		for (size_t i = 0; annotations && i < event->n_annotations; i++)
			add_string(annotations, event->annotations[2 * i], event->annotations[2 * i + 1]);
		json_object_object_add(metadata, "annotations", annotations);
	}
	json_object_object_add(doc, "metadata", metadata);
	add_string(object, "apiVersion", "v1");
	add_string(object, "kind", event->kind);
	if (event->object_namespace && event->object_namespace[0])
		add_string(object, "namespace", event->object_namespace);
	add_string(object, "name", event->object_name);
	add_string(object, "uid", event->object_uid);
	json_object_object_add(doc, "involvedObject", object);
	add_string(doc, "type", event->type);
	add_string(doc, "reason", event->reason);
	add_string(doc, "message", event->message);
	add_string(source, "component", event->component);
	add_string(source, "host", event->host);
	json_object_object_add(doc, "source", source);
	add_time(doc, "firstTimestamp", event->first_unix_ns);
	add_time(doc, "lastTimestamp", event->last_unix_ns);
	json_object_object_add(doc, "count", json_object_new_int(event->count));
	add_string(doc, "reportingComponent", event->component);
	add_string(doc, "reportingInstance", event->host);
	return json_take(doc);
}

char *kube_event_count_patch(int32_t count, int64_t last_unix_ns, const char *message)
{
	struct json_object *doc = json_object_new_object();

	if (!doc)
		return NULL;
	json_object_object_add(doc, "count", json_object_new_int(count));
	add_time(doc, "lastTimestamp", last_unix_ns);
	add_string(doc, "message", message);
	return json_take(doc);
}

/* ---- taints -------------------------------------------------------------------------------- */

static const struct {
	const char *key;
	const char *value;	/* NULL: none, and any value matches */
	const char *effect;
	const char *name;
} taints[KUBE_TAINT_COUNT] = {
	[KUBE_TAINT_MEMORY_PRESSURE] = { KUBE_TAINT_KEY_MEMORY_PRESSURE, NULL, "NoSchedule",
					 KUBE_TAINT_KEY_MEMORY_PRESSURE ":NoSchedule" },
	[KUBE_TAINT_DISK_PRESSURE] = { KUBE_TAINT_KEY_DISK_PRESSURE, NULL, "NoSchedule",
				       KUBE_TAINT_KEY_DISK_PRESSURE ":NoSchedule" },
	[KUBE_TAINT_PID_PRESSURE] = { KUBE_TAINT_KEY_PID_PRESSURE, NULL, "NoSchedule",
				      KUBE_TAINT_KEY_PID_PRESSURE ":NoSchedule" },
	[KUBE_TAINT_SHUTDOWN] = { KUBE_TAINT_KEY_SHUTDOWN, NULL, "NoSchedule",
				  KUBE_TAINT_KEY_SHUTDOWN ":NoSchedule" },
	[KUBE_TAINT_OUT_OF_SERVICE] = { KUBE_TAINT_KEY_OUT_OF_SERVICE, KUBE_TAINT_VALUE_OUT_OF_SERVICE,
					"NoExecute", KUBE_TAINT_KEY_OUT_OF_SERVICE "="
					KUBE_TAINT_VALUE_OUT_OF_SERVICE ":NoExecute" },
};

const char *kube_taint_name(enum kube_taint taint)
{
	return (unsigned)taint < KUBE_TAINT_COUNT ? taints[taint].name : "?";
}

enum kube_taint kube_taint_for_condition(enum node_condition condition)
{
	switch (condition) {
	case EV_CONDITION_MEMORY_PRESSURE: return KUBE_TAINT_MEMORY_PRESSURE;
	case EV_CONDITION_DISK_PRESSURE: return KUBE_TAINT_DISK_PRESSURE;
	default: return KUBE_TAINT_PID_PRESSURE;
	}
}

static const char *member_string(struct json_object *obj, const char *key)
{
	struct json_object *value;

	if (!obj || !json_object_object_get_ex(obj, key, &value) || !json_object_is_type(value, json_type_string))
		return NULL;
	return json_object_get_string(value);
}

/* Which of our taints an entry of spec.taints is, or -1. */
static int match_taint(struct json_object *entry)
{
	const char *key = member_string(entry, "key");
	const char *value = member_string(entry, "value");
	const char *effect = member_string(entry, "effect");

	if (!key || !effect)
		return -1;
	for (int t = 0; t < KUBE_TAINT_COUNT; t++) {
		if (strcmp(key, taints[t].key) || strcmp(effect, taints[t].effect))
			continue;
		if (taints[t].value && (!value || strcmp(value, taints[t].value)))
			continue;
		return t;
	}
	return -1;
}

static struct json_object *new_taint(enum kube_taint t, int64_t now_unix_ns)
{
	struct json_object *taint = json_object_new_object();

	if (!taint)
		return NULL;
	add_string(taint, "key", taints[t].key);
	if (taints[t].value)
		add_string(taint, "value", taints[t].value);
	add_string(taint, "effect", taints[t].effect);
	/* Like kubectl taint: NoExecute taints carry the time the tolerationSeconds run from. */
	if (!strcmp(taints[t].effect, "NoExecute"))
		add_time(taint, "timeAdded", now_unix_ns);
	return taint;
}

int kube_node_taint_patch(const char *node_json, uint32_t want, uint32_t managed, int64_t now_unix_ns,
			  char **patch, uint32_t *present)
{
	struct json_object *node = json_tokener_parse(node_json ? node_json : "");
	struct json_object *metadata, *spec, *existing = NULL, *result, *doc, *patch_meta, *patch_spec;
	const char *resource_version;
	bool changed = false;
	uint32_t seen = 0;

	*patch = NULL;
	*present = 0;
	if (!node || !json_object_is_type(node, json_type_object) ||
	    !json_object_object_get_ex(node, "metadata", &metadata) ||
	    !(resource_version = member_string(metadata, "resourceVersion"))) {
		json_object_put(node);
		return -EINVAL;
	}
	if (json_object_object_get_ex(node, "spec", &spec))
		json_object_object_get_ex(spec, "taints", &existing);
	if (existing && !json_object_is_type(existing, json_type_array))
		existing = NULL;

	result = json_object_new_array();
	if (!result) {
		json_object_put(node);
		return -ENOMEM;
	}
	for (size_t i = 0; existing && i < json_object_array_length(existing); i++) {
		struct json_object *entry = json_object_array_get_idx(existing, i);
		int t = match_taint(entry);

		if (t >= 0 && (managed & KUBE_TAINT_BIT(t))) {
			*present |= KUBE_TAINT_BIT(t);
			/* Ours and unwanted, or a duplicate of ours: drop it. */
			if (!(want & KUBE_TAINT_BIT(t)) || (seen & KUBE_TAINT_BIT(t))) {
				changed = true;
				continue;
			}
			seen |= KUBE_TAINT_BIT(t);
		}
		json_object_array_add(result, json_object_get(entry));
	}
	for (int t = 0; t < KUBE_TAINT_COUNT; t++) {
		if (!(managed & want & KUBE_TAINT_BIT(t)) || (seen & KUBE_TAINT_BIT(t)))
			continue;
		json_object_array_add(result, new_taint(t, now_unix_ns));
		changed = true;
	}
	if (!changed) {
		json_object_put(result);
		json_object_put(node);
		return 0;
	}
	doc = json_object_new_object();
	patch_meta = json_object_new_object();
	patch_spec = json_object_new_object();
	if (!doc || !patch_meta || !patch_spec) {
		json_object_put(doc);
		json_object_put(patch_meta);
		json_object_put(patch_spec);
		json_object_put(result);
		json_object_put(node);
		return -ENOMEM;
	}
	/* The resourceVersion makes the patch a compare-and-swap: 409 if the node changed. */
	add_string(patch_meta, "resourceVersion", resource_version);
	json_object_object_add(doc, "metadata", patch_meta);
	if (json_object_array_length(result) == 0) {
		json_object_put(result);
		result = NULL;	/* JSON null: no taints left */
	}
	/* A merge patch replaces the whole list: hence the read-modify-write above. */
	json_object_object_add(patch_spec, "taints", result);
	json_object_object_add(doc, "spec", patch_spec);
	json_object_put(node);
	*patch = json_take(doc);
	return *patch ? 0 : -ENOMEM;
}

/* ---- the reporter ---------------------------------------------------------------------------- */

struct event_cache_entry {
	uint64_t key;		/* 0: empty */
	char namespace_[64];
	char name[320];
	int32_t count;
	int64_t first_unix_ns;
	int64_t last_seen_ns;	/* monotonic */
};

struct kube_report {
	atomic_int refs;	/* the owner, the taint task, each queued event */
	struct kube_client *client;
	char node[256];
	char component[64];
	char record_path[PATH_MAX];	/* "" = no state dir */
	bool dry_run;
	bool pressure_taints;
	bool out_of_service_on_shutdown;
	int64_t (*realtime_ns)(void);
	void (*sync_filesystems)(void);

	pthread_mutex_t lock;	/* guards task, closed, want, managed, generation */
	struct kube_task *task;	/* NULL once the client released it */
	bool closed;
	uint32_t want;
	uint32_t managed;
	uint64_t generation;

	/* Caller's thread only. */
	bool conditions[EV_CONDITION_COUNT];

	/* Worker only. */
	struct event_cache_entry events[EVENT_CACHE_SIZE];
	unsigned taint_attempt;
	unsigned taint_conflicts;
	bool taint_warned;
	bool synced;
};

static int64_t realtime_now(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static int64_t monotonic_now(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static void report_ref(struct kube_report *report)
{
	atomic_fetch_add(&report->refs, 1);
}

static void report_unref(struct kube_report *report)
{
	if (atomic_fetch_sub(&report->refs, 1) != 1)
		return;
	pthread_mutex_destroy(&report->lock);
	free(report);
}

/* Submit a request, or in a dry run say what it would have been. */
static int send_request(struct kube_report *report, const char *method, const char *path,
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
	/* Decided at the first run. */
	bool decided;
	bool patching;
	char name[320];
	int32_t count;
	int64_t first_unix_ns;
	bool warned;
};

static uint64_t fnv1a(uint64_t hash, const char *text)
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

	if (!job->decided) {
		struct event_cache_entry *entry = event_cache_find(report, job->key, monotonic_now());

		job->decided = true;
		if (entry) {
			/* The same event again: count it on the existing one (client-go's
			 * EventCorrelator), instead of a new object per occurrence. */
			job->patching = true;
			snprintf(job->name, sizeof(job->name), "%s", entry->name);
			job->count = entry->count + 1;
			job->first_unix_ns = entry->first_unix_ns;
		} else {
			snprintf(job->name, sizeof(job->name), "%.200s.%llx", job->object_name,
				 (unsigned long long)job->when_unix_ns);
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
			event_cache_store(report, job, monotonic_now());
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
		event_cache_store(report, job, monotonic_now());
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

	report_unref(job->report);
	free(job->message);
	free(job);
}

static const struct kube_job_ops event_job_ops = {
	.run = event_job_run,
	.release = event_job_release,
};

/* annotations: n pairs. Any thread. */
static int emit_event(struct kube_report *report, const char *kind, const char *object_namespace,
		      const char *object_name, const char *object_uid, const char *type, const char *reason,
		      const char *message, const char *const annotations[][2], size_t n_annotations)
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
	/* What makes two events "the same" for counting: client-go's aggregate key. */
	job->key = 0xcbf29ce484222325ull;
	job->key = fnv1a(job->key, report->component);
	job->key = fnv1a(job->key, report->node);
	job->key = fnv1a(job->key, kind);
	job->key = fnv1a(job->key, object_namespace);
	job->key = fnv1a(job->key, object_name);
	job->key = fnv1a(job->key, object_uid);
	job->key = fnv1a(job->key, type);
	job->key = fnv1a(job->key, reason);
	job->key = fnv1a(job->key, message);
	job->key |= 1;	/* never 0, the empty slot */
	job->report = report;
	report_ref(report);
	snprintf(what, sizeof(what), "event %s on %s %s", reason, kind, object_name);
	return kube_submit_job(report->client, &event_job_ops, job, what);
}

static void node_event(struct kube_report *report, const char *type, const char *reason, const char *message)
{
	/* The kubelet's nodeRef uses the node name as UID. */
	emit_event(report, "Node", "", report->node, report->node, type, reason, message, NULL, 0);
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
	err = send_request(report, "PATCH", path, KUBE_CONTENT_STRATEGIC_PATCH, patch, what, true);
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
	snprintf(what, sizeof(what), "eviction status of %s/%s", pod->namespace_, pod->name);
	err = fail_pod(report, pod, KUBE_REASON_EVICTED, message, what);
	if (err)
		return err;

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

		err = emit_event(report, "Pod", pod->namespace_, pod->name, pod->uid, "Warning",
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

/* -- the out-of-service record -- */

static int write_record(const char *path, const char *node, int64_t now_unix_ns)
{
	char tmp[PATH_MAX + 8], dir[PATH_MAX], text[512], when[32];
	char *slash;
	int fd, err = 0, n;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = '\0';
	if (mkdir(dir, 0755) && errno != EEXIST) {
		err = -errno;
		log_err("kube: creating state dir %s: %s", dir, strerror(-err));
		return err;
	}
	kube_format_time(now_unix_ns, when, sizeof(when));
	n = snprintf(text, sizeof(text), "{\"node\":\"%s\",\"taint\":\"%s\",\"time\":\"%s\"}\n", node,
		     kube_taint_name(KUBE_TAINT_OUT_OF_SERVICE), when);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		log_err("kube: %s: %s", tmp, strerror(-err));
		return err;
	}
	if (write(fd, text, (size_t)n) != n || fsync(fd))
		err = errno ? -errno : -EIO;
	close(fd);
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		log_err("kube: writing %s: %s", path, strerror(-err));
		unlink(tmp);
		return err;
	}
	/* The rename must survive the power-off that follows. */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	return 0;
}

/* Whether the record says evictd set the out-of-service taint on this node. */
static bool read_record(const char *path, const char *node)
{
	struct json_object *doc = json_object_from_file(path);
	const char *recorded = member_string(doc, "node");
	bool ours = recorded && !strcmp(recorded, node);

	if (access(path, F_OK) == 0 && !ours)
		log_warn("kube: %s is not a record for node %s; ignoring it", path, node);
	json_object_put(doc);
	return ours;
}

/* -- the taint reconciler (a task in the worker) -- */

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
	uint64_t generation;
	bool again;
	int err;

	pthread_mutex_lock(&report->lock);
	if (report->closed) {
		pthread_mutex_unlock(&report->lock);
		return KUBE_TASK_REMOVE;
	}
	want = report->want;
	managed = report->managed;
	generation = report->generation;
	pthread_mutex_unlock(&report->lock);

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
		return now_ns + kube_client_backoff_ns(client, report->taint_attempt);
	}
	if (report->taint_attempt)
		log_info("kube: node %s: taints up to date after %u attempts", report->node,
			 report->taint_attempt + 1);
	report->taint_attempt = 0;
	report->taint_warned = false;

	if (!report->dry_run && (managed & out_of_service)) {
		if ((after & out_of_service) && !(before & out_of_service))
			node_event(report, "Warning", "OutOfService",
				   "evictd tainted the node " KUBE_TAINT_KEY_OUT_OF_SERVICE "="
				   KUBE_TAINT_VALUE_OUT_OF_SERVICE ":NoExecute: every pod is gone and it is "
				   "shutting down; its volumes may be detached at once");
		if ((before & out_of_service) && !(after & out_of_service))
			node_event(report, "Normal", "OutOfServiceRemoved",
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
	return again ? now_ns : KUBE_TASK_IDLE;
}

static void taint_task_release(void *ctx)
{
	struct kube_report *report = ctx;

	pthread_mutex_lock(&report->lock);
	report->task = NULL;
	pthread_mutex_unlock(&report->lock);
	report_unref(report);
}

static const struct kube_task_ops taint_task_ops = {
	.run = taint_task_run,
	.release = taint_task_release,
};

/* Change what the node should carry and let the reconciler know. Any thread. */
static void set_want(struct kube_report *report, uint32_t set, uint32_t clear)
{
	uint32_t before;

	pthread_mutex_lock(&report->lock);
	before = report->want;
	report->want = (report->want | set) & ~clear;
	report->managed |= set;
	if (report->want != before) {
		report->generation++;
		if (report->task)
			kube_task_wake(report->task);
	}
	pthread_mutex_unlock(&report->lock);
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
	report->realtime_ns = options->realtime_ns ? options->realtime_ns : realtime_now;
	report->sync_filesystems = options->sync_filesystems ? options->sync_filesystems : sync_all;
	pthread_mutex_init(&report->lock, NULL);

	/* What an earlier run may have left: our own taints always; out-of-service only with
	 * the record saying we set it. want is empty, so the first run removes them. */
	report->managed = KUBE_TAINTS_EVICTD_OWNED;
	if (report->record_path[0] && read_record(report->record_path, report->node)) {
		log_info("kube: %s says evictd set %s before the last shutdown; removing it",
			 report->record_path, kube_taint_name(KUBE_TAINT_OUT_OF_SERVICE));
		report->managed |= KUBE_TAINT_BIT(KUBE_TAINT_OUT_OF_SERVICE);
	}
	/* Not under report->lock: on failure kube_task_add calls the release, which takes it. */
	task = kube_task_add(report->client, &taint_task_ops, report);
	if (!task) {
		report_unref(report);	/* the task's reference went with the release */
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
	report_unref(report);
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
	if (changed)
		set_want(report, set, clear);
}

/* The Event goes first: jobs run before tasks, so the order of the requests is fixed. */
void kube_report_shutdown_begin(struct kube_report *report)
{
	log_info("kube: node %s is shutting down: tainting it %s", report->node,
		 kube_taint_name(KUBE_TAINT_SHUTDOWN));
	node_event(report, "Normal", "Shutdown", "evictd detected a shutdown event: terminating pods by priority");
	set_want(report, KUBE_TAINT_BIT(KUBE_TAINT_SHUTDOWN), 0);
}

void kube_report_shutdown_end(struct kube_report *report, bool all_pods_gone)
{
	if (!report->out_of_service_on_shutdown)
		return;
	if (!all_pods_gone) {
		log_warn("kube: not tainting node %s out-of-service: not every pod's kill ended with an "
			 "empty cgroup, and its volumes could still be in use", report->node);
		return;
	}
	log_info("kube: every pod on %s is gone: tainting it %s", report->node,
		 kube_taint_name(KUBE_TAINT_OUT_OF_SERVICE));
	set_want(report, KUBE_TAINT_BIT(KUBE_TAINT_OUT_OF_SERVICE), 0);
}

void kube_report_shutdown_cancel(struct kube_report *report)
{
	log_info("kube: shutdown of %s cancelled: removing the shutdown taints", report->node);
	node_event(report, "Normal", "Shutdown", "evictd detected a shutdown cancellation");
	set_want(report, 0, KUBE_TAINT_BIT(KUBE_TAINT_SHUTDOWN) | KUBE_TAINT_BIT(KUBE_TAINT_OUT_OF_SERVICE));
}

/* ---- the API-server pod metadata source ---------------------------------------------------- */

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
	next = member_string(metadata, "continue");
	snprintf(next_token, token_len, "%s", next ? next : "");
	/* The pods' identities and versions: equal means nothing to re-join. */
	if (json_object_object_get_ex(doc, "items", &items) && json_object_is_type(items, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(items); i++) {
			struct json_object *item_meta;
			struct json_object *item = json_object_array_get_idx(items, i);
			const char *uid = NULL, *version = NULL;

			if (json_object_object_get_ex(item, "metadata", &item_meta)) {
				uid = member_string(item_meta, "uid");
				version = member_string(item_meta, "resourceVersion");
			}
			*fingerprint = fnv1a(fnv1a(*fingerprint, uid ? uid : ""), version ? version : "");
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
	int64_t deadline = monotonic_now() + timeout_ns;
	struct timespec abs = { deadline / 1000000000, deadline % 1000000000 };
	int err = 0;

	pthread_mutex_lock(&s->lock);
	while (!s->ever_listed && !err)
		if (pthread_cond_timedwait(&s->listed, &s->lock, &abs) == ETIMEDOUT)
			err = s->last_err ? s->last_err : -ETIMEDOUT;
	pthread_mutex_unlock(&s->lock);
	return err;
}
