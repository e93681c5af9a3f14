// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What evictd sends, as text: quantities and messages as the kubelet prints them, the request
 * bodies, and the node taint patch. Pure functions. */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube/report_internal.h"
#include "sys/clock.h"
#include "sys/log.h"

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
	return signal_resource(signal);
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

char *kube_json_take(struct json_object *doc)
{
	char *text = doc ? strdup(json_object_to_json_string_ext(doc, JSON_FLAGS)) : NULL;

	json_object_put(doc);
	return text;
}

void kube_json_add_string(struct json_object *obj, const char *key, const char *value)
{
	json_object_object_add(obj, key, json_object_new_string(value ? value : ""));
}

void kube_json_add_time(struct json_object *obj, const char *key, int64_t unix_ns)
{
	char text[32];

	kube_format_time(unix_ns, text, sizeof(text));
	kube_json_add_string(obj, key, text);
}

/* The pods/status patch that fails a pod, as the kubelet's status function in evictPod sets
 * it (phase, reason, message, then podutil.UpdatePodCondition with the DisruptionTarget
 * condition), and evictd's failed-at annotation; the API server keeps the other conditions
 * (strategic merge by type) and annotations. */
char *kube_pod_failed_patch(const char *uid, const char *reason, const char *message, int64_t now_unix_ns)
{
	struct json_object *doc = json_object_new_object();
	struct json_object *metadata = json_object_new_object();
	struct json_object *status = json_object_new_object();
	struct json_object *conditions = json_object_new_array();
	struct json_object *condition = json_object_new_object();
	struct json_object *annotations = json_object_new_object();

	if (!doc || !metadata || !status || !conditions || !condition || !annotations) {
		json_object_put(doc);
		json_object_put(metadata);
		json_object_put(status);
		json_object_put(conditions);
		json_object_put(condition);
		json_object_put(annotations);
		return NULL;
	}
	/* A precondition: the API server refuses the patch (422, uid immutable) when the pod of
	 * this name is another one. */
	kube_json_add_string(metadata, "uid", uid);
	/* Metadata too, so that the kubelet takes the terminal phase as an update of the pod, not
	 * a status to reconcile away (KUBE_ANNOTATION_FAILED_AT). */
	kube_json_add_time(annotations, KUBE_ANNOTATION_FAILED_AT, now_unix_ns);
	json_object_object_add(metadata, "annotations", annotations);
	json_object_object_add(doc, "metadata", metadata);
	kube_json_add_string(status, "phase", "Failed");
	kube_json_add_string(status, "reason", reason ? reason : "");
	kube_json_add_string(status, "message", message);
	kube_json_add_string(condition, "type", KUBE_CONDITION_DISRUPTION_TARGET);
	kube_json_add_string(condition, "status", "True");
	kube_json_add_time(condition, "lastTransitionTime", now_unix_ns);
	kube_json_add_string(condition, "reason", KUBE_REASON_TERMINATION_BY_KUBELET);
	kube_json_add_string(condition, "message", message);
	json_object_array_add(conditions, condition);
	json_object_object_add(status, "conditions", conditions);
	json_object_object_add(doc, "status", status);
	return kube_json_take(doc);
}

int kube_event_name(const char *object_name, int64_t unix_ns, char *buf, size_t len)
{
	char suffix[24];
	size_t keep = strlen(object_name);
	int n = snprintf(suffix, sizeof(suffix), ".%llx", (unsigned long long)unix_ns);

	if (n < 0 || (size_t)n >= KUBE_EVENT_NAME_MAX)
		return -ENOSPC;
	if (keep > KUBE_EVENT_NAME_MAX - (size_t)n)
		keep = KUBE_EVENT_NAME_MAX - (size_t)n;
	/* A DNS-1123 label ends alphanumeric: never "...-.17979cfe" nor "...." */
	while (keep && (object_name[keep - 1] == '-' || object_name[keep - 1] == '.'))
		keep--;
	n = snprintf(buf, len, "%.*s%s", (int)keep, object_name, suffix);
	if (n < 0 || (size_t)n >= len) {
		if (len)
			buf[0] = '\0';
		return -ENOSPC;
	}
	return n;
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
	kube_json_add_string(doc, "apiVersion", "v1");
	kube_json_add_string(doc, "kind", "Event");
	kube_json_add_string(metadata, "name", event->name);
	kube_json_add_string(metadata, "namespace", event->namespace_);
	if (event->n_annotations) {
		struct json_object *annotations = json_object_new_object();

		for (size_t i = 0; annotations && i < event->n_annotations; i++)
			kube_json_add_string(annotations, event->annotations[2 * i], event->annotations[2 * i + 1]);
		json_object_object_add(metadata, "annotations", annotations);
	}
	json_object_object_add(doc, "metadata", metadata);
	kube_json_add_string(object, "apiVersion", "v1");
	kube_json_add_string(object, "kind", event->kind);
	if (event->object_namespace && event->object_namespace[0])
		kube_json_add_string(object, "namespace", event->object_namespace);
	kube_json_add_string(object, "name", event->object_name);
	kube_json_add_string(object, "uid", event->object_uid);
	json_object_object_add(doc, "involvedObject", object);
	kube_json_add_string(doc, "type", event->type);
	kube_json_add_string(doc, "reason", event->reason);
	kube_json_add_string(doc, "message", event->message);
	kube_json_add_string(source, "component", event->component);
	kube_json_add_string(source, "host", event->host);
	json_object_object_add(doc, "source", source);
	kube_json_add_time(doc, "firstTimestamp", event->first_unix_ns);
	kube_json_add_time(doc, "lastTimestamp", event->last_unix_ns);
	json_object_object_add(doc, "count", json_object_new_int(event->count));
	kube_json_add_string(doc, "reportingComponent", event->component);
	kube_json_add_string(doc, "reportingInstance", event->host);
	return kube_json_take(doc);
}

char *kube_event_count_patch(int32_t count, int64_t last_unix_ns, const char *message)
{
	struct json_object *doc = json_object_new_object();

	if (!doc)
		return NULL;
	json_object_object_add(doc, "count", json_object_new_int(count));
	kube_json_add_time(doc, "lastTimestamp", last_unix_ns);
	kube_json_add_string(doc, "message", message);
	return kube_json_take(doc);
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

const char *kube_json_member_string(struct json_object *obj, const char *key)
{
	struct json_object *value;

	if (!obj || !json_object_object_get_ex(obj, key, &value) || !json_object_is_type(value, json_type_string))
		return NULL;
	return json_object_get_string(value);
}

/* Which of our taints an entry of spec.taints is, or -1. */
static int match_taint(struct json_object *entry)
{
	const char *key = kube_json_member_string(entry, "key");
	const char *value = kube_json_member_string(entry, "value");
	const char *effect = kube_json_member_string(entry, "effect");

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
	kube_json_add_string(taint, "key", taints[t].key);
	if (taints[t].value)
		kube_json_add_string(taint, "value", taints[t].value);
	kube_json_add_string(taint, "effect", taints[t].effect);
	/* Like kubectl taint: NoExecute taints carry the time the tolerationSeconds run from. */
	if (!strcmp(taints[t].effect, "NoExecute"))
		kube_json_add_time(taint, "timeAdded", now_unix_ns);
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
	    !(resource_version = kube_json_member_string(metadata, "resourceVersion"))) {
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
	kube_json_add_string(patch_meta, "resourceVersion", resource_version);
	json_object_object_add(doc, "metadata", patch_meta);
	if (json_object_array_length(result) == 0) {
		json_object_put(result);
		result = NULL;	/* JSON null: no taints left */
	}
	/* A merge patch replaces the whole list: hence the read-modify-write above. */
	json_object_object_add(patch_spec, "taints", result);
	json_object_object_add(doc, "spec", patch_spec);
	json_object_put(node);
	*patch = kube_json_take(doc);
	return *patch ? 0 : -ENOMEM;
}
