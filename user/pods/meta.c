// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Pod metadata: one Pod object of a `kubectl get pods -o json` document (json-c) into a
 * struct pod_meta; static and mirror pods are recognised here (pods.h). podlist.c walks the
 * document and calls parse_pod per item. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/clock.h"
#include "sys/log.h"
#include "pods/internal.h"
#include "pods/podlist.h"
#include "core/quantity.h"

/* ---- PodList parsing (json-c) ------------------------------------------------------------ */

int __attribute__((format(printf, 3, 4)))
parse_fail(struct parse_ctx *ctx, const char *path, const char *fmt, ...)
{
	char detail[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	snprintf(ctx->message, sizeof(ctx->message), "%s: %s%s%s", ctx->name, path,
		 path[0] ? ": " : "", detail);
	return -EINVAL;
}

const char *json_kind(const struct json_object *obj)
{
	return obj ? json_type_to_name(json_object_get_type(obj)) : "null";
}

/* Child path "parent.key" or "parent[i]" into buf. */
static const char *path_key(char *buf, size_t len, const char *parent, const char *key)
{
	/* A path too deep for the buffer is cut; it only ever names a field in a message. */
	if (snprintf(buf, len, "%s%s%s", parent, parent[0] ? "." : "", key) >= (int)len)
		buf[len - 1] = '\0';
	return buf;
}

const char *path_index(char *buf, size_t len, const char *parent, size_t index)
{
	if (snprintf(buf, len, "%s[%zu]", parent, index) >= (int)len)
		buf[len - 1] = '\0';
	return buf;
}

/* Member `key` of obj with the wanted type. Returns 1 found, 0 absent (or JSON null),
 * negative on a wrong type (message set). */
int get_member(struct parse_ctx *ctx, struct json_object *obj, const char *path,
		      const char *key, enum json_type type, struct json_object **out)
{
	struct json_object *value;
	char child[512];

	if (!json_object_object_get_ex(obj, key, &value) || !value)
		return 0;
	if (!json_object_is_type(value, type))
		return parse_fail(ctx, path_key(child, sizeof(child), path, key),
				  "expected %s, got %s", json_type_to_name(type), json_kind(value));
	*out = value;
	return 1;
}

/* A string member copied into dst (dst_len includes the NUL). */
int get_string(struct parse_ctx *ctx, struct json_object *obj, const char *path,
		      const char *key, bool required, char *dst, size_t dst_len)
{
	struct json_object *value;
	char child[512];
	size_t len;
	int found;

	found = get_member(ctx, obj, path, key, json_type_string, &value);
	if (found < 0)
		return found;
	path_key(child, sizeof(child), path, key);
	if (!found)
		return required ? parse_fail(ctx, child, "missing") : 0;
	len = (size_t)json_object_get_string_len(value);
	if (strlen(json_object_get_string(value)) != len)
		return parse_fail(ctx, child, "contains a NUL character");
	if (len >= dst_len)
		return parse_fail(ctx, child, "too long (%zu bytes, at most %zu)", len, dst_len - 1);
	memcpy(dst, json_object_get_string(value), len + 1);
	return 1;
}

/* An integer member within [min, max]. json-c saturates what does not fit in 64 bits, so
 * the two extremes are treated as out of range too (no field here can hold them). */
static int get_integer(struct parse_ctx *ctx, struct json_object *obj, const char *path,
		       const char *key, int64_t min, int64_t max, int64_t *out)
{
	struct json_object *value;
	char child[512];
	int64_t v;
	int found;

	found = get_member(ctx, obj, path, key, json_type_int, &value);
	if (found <= 0)
		return found;
	v = json_object_get_int64(value);
	if (v == INT64_MAX || v == INT64_MIN || v < min || v > max)
		return parse_fail(ctx, path_key(child, sizeof(child), path, key),
				  "%s out of range [%" PRId64 ", %" PRId64 "]",
				  json_object_to_json_string(value), min, max);
	*out = v;
	return 1;
}

/* A resource quantity in a map (requests, overhead): a string ("128Mi") or an integer, as
 * resource.Quantity unmarshals both. Absent = 0. */
static int get_quantity(struct parse_ctx *ctx, struct json_object *map, const char *path,
			const char *key, int64_t *out)
{
	struct json_object *value;
	char child[512];
	int err;

	*out = 0;
	if (!map || !json_object_object_get_ex(map, key, &value) || !value)
		return 0;
	path_key(child, sizeof(child), path, key);
	if (json_object_is_type(value, json_type_int)) {
		int64_t v = json_object_get_int64(value);

		if (v < 0 || v == INT64_MAX)
			return parse_fail(ctx, child, "%s out of range",
					  json_object_to_json_string(value));
		*out = v;
		return 1;
	}
	if (!json_object_is_type(value, json_type_string))
		return parse_fail(ctx, child, "expected a quantity string, got %s", json_kind(value));
	err = quantity_parse(json_object_get_string(value), out);
	if (err == -ERANGE)
		return parse_fail(ctx, child, "quantity \"%s\" out of range",
				  json_object_get_string(value));
	if (err || *out < 0)
		return parse_fail(ctx, child, "\"%s\" is not a valid non-negative quantity",
				  json_object_get_string(value));
	return 1;
}

/* resources.requests[memory] and [ephemeral-storage] of a container or the pod. */
static int get_requests(struct parse_ctx *ctx, struct json_object *obj, const char *path,
			int64_t *memory, int64_t *ephemeral, bool *memory_set)
{
	struct json_object *resources = NULL, *requests = NULL;
	char resources_path[512], requests_path[512];
	int err;

	*memory = *ephemeral = 0;
	if (memory_set)
		*memory_set = false;
	err = get_member(ctx, obj, path, "resources", json_type_object, &resources);
	if (err <= 0)
		return err;
	path_key(resources_path, sizeof(resources_path), path, "resources");
	err = get_member(ctx, resources, resources_path, "requests", json_type_object, &requests);
	if (err <= 0)
		return err;
	path_key(requests_path, sizeof(requests_path), resources_path, "requests");
	err = get_quantity(ctx, requests, requests_path, "memory", memory);
	if (err < 0)
		return err;
	if (memory_set)
		*memory_set = err > 0;
	err = get_quantity(ctx, requests, requests_path, "ephemeral-storage", ephemeral);
	return err < 0 ? err : 0;
}

/* Containers (regular or init) appended to the two request arrays. */
/* The eviction message's containers (pods/containers.c): a name that fits, and its request. */
static void pod_container_named(struct pod_meta *meta, struct json_object *container, int64_t request)
{
	struct json_object *name;
	const char *text;

	if (!json_object_object_get_ex(container, "name", &name) ||
	    !json_object_is_type(name, json_type_string))
		return;
	text = json_object_get_string(name);
	if (strlen(text) >= sizeof(meta->containers[0].name))
		return;
	strcpy(meta->containers[meta->n_containers].name, text);
	meta->containers[meta->n_containers].memory_request = request;
	meta->n_containers++;
}

/* status.containerStatuses / initContainerStatuses: the runtime id of each named container.
 * Read leniently: a status the kubelet has not written yet just leaves the id empty. */
static void pod_container_ids(struct pod_meta *meta, struct json_object *status)
{
	static const char *const keys[] = { "containerStatuses", "initContainerStatuses" };

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		struct json_object *array;

		if (!json_object_object_get_ex(status, keys[k], &array) ||
		    !json_object_is_type(array, json_type_array))
			continue;
		for (size_t i = 0; i < json_object_array_length(array); i++) {
			struct json_object *entry = json_object_array_get_idx(array, i), *name, *id;
			const char *id_text, *sep;

			if (!json_object_object_get_ex(entry, "name", &name) ||
			    !json_object_object_get_ex(entry, "containerID", &id) ||
			    !json_object_is_type(id, json_type_string))
				continue;
			id_text = json_object_get_string(id);
			sep = strstr(id_text, "://");
			id_text = sep ? sep + 3 : id_text;
			for (size_t c = 0; c < meta->n_containers; c++)
				if (!strcmp(meta->containers[c].name, json_object_get_string(name)) &&
				    strlen(id_text) < sizeof(meta->containers[c].id))
					strcpy(meta->containers[c].id, id_text);
		}
	}
}

static int get_containers(struct parse_ctx *ctx, struct json_object *spec, const char *path,
			  const char *key, bool init, struct rank_container_request *memory,
			  struct rank_container_request *ephemeral, size_t *n, struct pod_meta *meta)
{
	struct json_object *array = NULL;
	char array_path[512], item_path[512];
	size_t count;
	int err;

	err = get_member(ctx, spec, path, key, json_type_array, &array);
	if (err <= 0)
		return err;
	path_key(array_path, sizeof(array_path), path, key);
	count = json_object_array_length(array);
	for (size_t i = 0; i < count; i++) {
		struct json_object *container = json_object_array_get_idx(array, i);
		char restart_policy[32] = "";
		int64_t mem, eph;

		path_index(item_path, sizeof(item_path), array_path, i);
		if (!json_object_is_type(container, json_type_object))
			return parse_fail(ctx, item_path, "expected object, got %s", json_kind(container));
		err = get_requests(ctx, container, item_path, &mem, &eph, NULL);
		if (err < 0)
			return err;
		if (init) {
			err = get_string(ctx, container, item_path, "restartPolicy", false,
					 restart_policy, sizeof(restart_policy));
			if (err < 0)
				return err;
		}
		if (meta && meta->n_containers < POD_MAX_NAMED_CONTAINERS)
			pod_container_named(meta, container, mem);
		memory[*n] = (struct rank_container_request){
			.request = mem, .init = init,
			.restartable = init && strcmp(restart_policy, "Always") == 0,
		};
		ephemeral[*n] = memory[*n];
		ephemeral[*n].request = eph;
		(*n)++;
	}
	return 0;
}

/* component-helpers resource IsPodLevelResourcesSet: spec.resources requests or limits name
 * a supported pod-level resource (cpu, memory). */
static bool pod_level_resources_set(struct json_object *spec)
{
	static const char *const lists[] = { "requests", "limits" };
	struct json_object *resources, *list, *unused;

	if (!json_object_object_get_ex(spec, "resources", &resources) ||
	    !json_object_is_type(resources, json_type_object))
		return false;
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		if (json_object_object_get_ex(resources, lists[i], &list) &&
		    json_object_is_type(list, json_type_object) &&
		    (json_object_object_get_ex(list, "cpu", &unused) ||
		     json_object_object_get_ex(list, "memory", &unused)))
			return true;
	return false;
}

static size_t array_len_or_zero(struct json_object *obj, const char *key)
{
	struct json_object *array;

	if (!json_object_object_get_ex(obj, key, &array) || !json_object_is_type(array, json_type_array))
		return 0;
	return json_object_array_length(array);
}

static int pod_requests(struct parse_ctx *ctx, struct json_object *spec, const char *path,
			struct pod_meta *meta)
{
	struct rank_container_request *memory, *ephemeral;
	struct json_object *overhead = NULL;
	int64_t pod_memory, pod_ephemeral, overhead_memory, overhead_ephemeral;
	size_t max = array_len_or_zero(spec, "containers") + array_len_or_zero(spec, "initContainers");
	char overhead_path[512];
	bool pod_memory_set;
	size_t n = 0;
	int err;

	memory = calloc(max ? max : 1, sizeof(*memory));
	ephemeral = calloc(max ? max : 1, sizeof(*ephemeral));
	if (!memory || !ephemeral) {
		free(memory);
		free(ephemeral);
		return -ENOMEM;
	}
	/* Regular containers first, then init containers in spec order: rank_pod_request
	 * wants sidecars in the order they start. */
	err = get_containers(ctx, spec, path, "containers", false, memory, ephemeral, &n, meta);
	if (!err)
		err = get_containers(ctx, spec, path, "initContainers", true, memory, ephemeral, &n, meta);
	/* Pod-level resources (PodLevelResources) replace the containers' sum for memory. */
	if (!err)
		err = get_requests(ctx, spec, path, &pod_memory, &pod_ephemeral, &pod_memory_set);
	if (!err)
		err = get_member(ctx, spec, path, "overhead", json_type_object, &overhead) < 0 ? -EINVAL : 0;
	path_key(overhead_path, sizeof(overhead_path), path, "overhead");
	if (!err)
		err = get_quantity(ctx, overhead, overhead_path, "memory", &overhead_memory) < 0 ? -EINVAL : 0;
	if (!err)
		err = get_quantity(ctx, overhead, overhead_path, "ephemeral-storage",
				   &overhead_ephemeral) < 0 ? -EINVAL : 0;
	if (!err) {
		bool pod_level = pod_level_resources_set(spec);

		/* GetResourceRequestQuantity: with pod-level resources the containers' requests
		 * are skipped; a pod-level memory request (or 0) stands in their place. */
		meta->memory_request = rank_pod_request(memory, n, pod_level ? (pod_memory_set ?
							pod_memory : 0) : -1, overhead_memory);
		/* pkg/api/v1/resource GetResourceRequestQuantity: with pod-level resources the
		 * container-level requests are skipped (SkipContainerLevelResources), and
		 * ephemeral-storage is no pod-level resource, so it is 0. */
		meta->ephemeral_storage_request = rank_pod_request(ephemeral, pod_level ? 0 : n, -1,
								   overhead_ephemeral);
	}
	free(memory);
	free(ephemeral);
	return err;
}

static int parse_qos(const char *text, enum pod_qos *qos)
{
	if (strcmp(text, "Guaranteed") == 0)
		*qos = POD_QOS_GUARANTEED;
	else if (strcmp(text, "Burstable") == 0)
		*qos = POD_QOS_BURSTABLE;
	else if (strcmp(text, "BestEffort") == 0)
		*qos = POD_QOS_BESTEFFORT;
	else
		return -EINVAL;
	return 0;
}

/* A UID as the kubelet uses it in cgroup names: letters, digits and '-' only. */
bool pods_uid_is_valid(const char *uid)
{
	if (!uid[0])
		return false;
	for (const char *p = uid; *p; p++) {
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z') || *p == '-'))
			return false;
	}
	return true;
}

/*
 * What a pod says about its own identity (doc/DESIGN.md §5, "Pod identity"). Only the
 * mirror evidence is read: the config.mirror annotation and a controller ownerReference to a
 * Node. config.source and config.hash are not read at all: any user who may create a pod
 * can write them, and the kubelet sets them only on its own in-memory pod objects, never
 * trusting them on an API pod ([pod_update.go] GetPodSource reads the annotation the kubelet's
 * config sources set, pkg/kubelet/config/common.go applyDefaults).
 */
struct identity_claim {
	bool has_mirror;		/* the config.mirror annotation is there */
	char mirror[64];		/* its value when it fits, else "" */
	bool node_owner;		/* a controller ownerReference {v1, Node, node_name} */
	char node_owner_name[256];
};

/* A string member compared against short constants only: a value too long for dst is no
 * error (it equals none of them) but "" with *long_ set. 1 found, 0 absent, negative on a
 * wrong type. */
static int get_short_string(struct parse_ctx *ctx, struct json_object *obj, const char *path,
			    const char *key, char *dst, size_t dst_len, bool *long_)
{
	struct json_object *value;
	int found = get_member(ctx, obj, path, key, json_type_string, &value);

	dst[0] = '\0';
	*long_ = false;
	if (found <= 0)
		return found;
	if ((size_t)json_object_get_string_len(value) >= dst_len ||
	    strlen(json_object_get_string(value)) != (size_t)json_object_get_string_len(value))
		*long_ = true;
	else
		memcpy(dst, json_object_get_string(value), (size_t)json_object_get_string_len(value) + 1);
	return 1;
}

static int parse_owners(struct parse_ctx *ctx, struct json_object *metadata, const char *metadata_path,
			struct pod_meta *meta, struct identity_claim *claim)
{
	struct json_object *owners = NULL;
	char owners_path[512], item_path[512];
	int err;

	err = get_member(ctx, metadata, metadata_path, "ownerReferences", json_type_array, &owners);
	if (err <= 0)
		return err;
	path_key(owners_path, sizeof(owners_path), metadata_path, "ownerReferences");
	for (size_t i = 0; i < json_object_array_length(owners); i++) {
		struct json_object *owner = json_object_array_get_idx(owners, i);
		struct json_object *controller = NULL;
		char kind[64], api_version[16], name[256], uid[sizeof(meta->daemonset_uid)];
		bool long_kind, long_version, long_name, long_uid;
		bool is_controller;

		path_index(item_path, sizeof(item_path), owners_path, i);
		if (!json_object_is_type(owner, json_type_object))
			return parse_fail(ctx, item_path, "expected object, got %s", json_kind(owner));
		/* kind, apiVersion and name are only compared: a long one is just another kind. */
		if ((err = get_short_string(ctx, owner, item_path, "kind", kind, sizeof(kind), &long_kind)) < 0 ||
		    (err = get_short_string(ctx, owner, item_path, "apiVersion", api_version,
					    sizeof(api_version), &long_version)) < 0 ||
		    (err = get_short_string(ctx, owner, item_path, "name", name, sizeof(name), &long_name)) < 0 ||
		    (err = get_short_string(ctx, owner, item_path, "uid", uid, sizeof(uid), &long_uid)) < 0 ||
		    (err = get_member(ctx, owner, item_path, "controller", json_type_boolean,
				      &controller)) < 0)
			return err;
		is_controller = controller && json_object_get_boolean(controller);
		/* The kubelet's IsDaemonSetPod-like check: the controlling owner is a DaemonSet. */
		if (strcmp(kind, "DaemonSet") == 0 && is_controller) {
			meta->is_daemonset = true;
			/* Which DaemonSet: the pressure taints' hole punch waits for its pod
			 * (kube/report_holes.c). A long uid is none. */
			memcpy(meta->daemonset_uid, uid, sizeof(uid));
		}
		/* The owner the kubelet gives its mirror pods, and the only one NodeRestriction lets
		 * a node create a pod with (plugin/pkg/admission/noderestriction/admission.go
		 * admitPodCreate: one ownerReference, apiVersion v1, kind Node, its own name,
		 * controller true, the Node's UID). */
		if (!strcmp(kind, "Node") && !strcmp(api_version, "v1") && is_controller && name[0]) {
			claim->node_owner = true;
			memcpy(claim->node_owner_name, name, sizeof(name));
		}
	}
	return 0;
}

static int parse_metadata(struct parse_ctx *ctx, struct json_object *pod, const char *path,
			  struct pod_meta *meta, struct identity_claim *claim)
{
	struct json_object *metadata = NULL, *annotations = NULL;
	char metadata_path[512], annotations_path[512], item_path[512];
	bool long_mirror;
	int err;

	path_key(metadata_path, sizeof(metadata_path), path, "metadata");
	err = get_member(ctx, pod, path, "metadata", json_type_object, &metadata);
	if (err == 0)
		return parse_fail(ctx, metadata_path, "missing");
	if (err < 0)
		return err;
	if ((err = get_string(ctx, metadata, metadata_path, "uid", true, meta->uid, sizeof(meta->uid))) < 0 ||
	    (err = get_string(ctx, metadata, metadata_path, "name", true, meta->name, sizeof(meta->name))) < 0 ||
	    (err = get_string(ctx, metadata, metadata_path, "namespace", false, meta->namespace_,
			      sizeof(meta->namespace_))) < 0)
		return err;
	if (!pods_uid_is_valid(meta->uid))
		return parse_fail(ctx, path_key(item_path, sizeof(item_path), metadata_path, "uid"),
				  "\"%s\" is not a UID", meta->uid);
	strcpy(meta->cgroup_uid, meta->uid);

	err = get_member(ctx, metadata, metadata_path, "annotations", json_type_object, &annotations);
	if (err < 0)
		return err;
	path_key(annotations_path, sizeof(annotations_path), metadata_path, "annotations");
	if (annotations) {
		err = get_short_string(ctx, annotations, annotations_path, POD_ANNOTATION_CONFIG_MIRROR,
				       claim->mirror, sizeof(claim->mirror), &long_mirror);
		if (err < 0)
			return err;
		claim->has_mirror = err > 0;
	}
	return parse_owners(ctx, metadata, metadata_path, meta, claim);
}

/*
 * A mirror pod is one the node's kubelet created for a static pod: the config.mirror
 * annotation ([pod_update.go] IsMirrorPod) and the controller ownerReference to the Node it is
 * bound to (pkg/kubelet/pod/mirror_client.go CreateMirrorPod sets both; NodeRestriction
 * admitPodCreate holds a node to them). Only then is the kubelet's static pod behind it, and
 * its cgroup named after the static pod's UID, the annotation's value. An API pod with the
 * annotation but not that owner is an ordinary pod under its own UID: the kubelet runs no
 * API pod carrying config.mirror (pkg/kubelet/kubelet.go HandlePodAdditions hands it to
 * handleMirrorPod), so it has no cgroup to protect, and its annotation names nothing.
 * NodeRestriction restricts node users only: an ordinary user may forge both, so a mirror's
 * claim on a UID another listed pod holds is refused (podlist.c), never honoured.
 */
static void apply_identity(struct pod_meta *meta, const struct identity_claim *claim, const char *node)
{
	if (!claim->has_mirror || !claim->node_owner || !node[0] ||
	    strcmp(claim->node_owner_name, node) != 0)
		return;
	meta->is_mirror = true;
	meta->is_static = true;	/* [pod_update.go] IsCriticalPod: IsStaticPod || IsMirrorPod */
	if (pods_uid_is_valid(claim->mirror))
		strcpy(meta->cgroup_uid, claim->mirror);
}

/* One Pod object. Returns 1 to keep it, 0 to skip it (another node), negative on error. */
int parse_pod(struct parse_ctx *ctx, struct json_object *pod, const char *path,
		     const char *node_name, struct pod_meta *meta)
{
	struct json_object *spec = NULL, *status = NULL;
	char spec_path[512], status_path[512], field[512];
	char node[256] = "", qos[32] = "", phase[32] = "";
	struct identity_claim claim = { 0 };
	int64_t value;
	int err;

	if (!json_object_is_type(pod, json_type_object))
		return parse_fail(ctx, path, "expected object, got %s", json_kind(pod));
	memset(meta, 0, sizeof(*meta));
	meta->termination_grace_period_s = -1;
	err = parse_metadata(ctx, pod, path, meta, &claim);
	if (err < 0)
		return err;

	path_key(spec_path, sizeof(spec_path), path, "spec");
	path_key(status_path, sizeof(status_path), path, "status");
	if ((err = get_member(ctx, pod, path, "spec", json_type_object, &spec)) < 0 ||
	    (err = get_member(ctx, pod, path, "status", json_type_object, &status)) < 0)
		return err;
	if (spec) {
		err = get_string(ctx, spec, spec_path, "nodeName", false, node, sizeof(node));
		if (err < 0)
			return err;
		err = get_integer(ctx, spec, spec_path, "priority", INT32_MIN, INT32_MAX, &value);
		if (err < 0)
			return err;
		meta->priority = err ? (int32_t)value : 0;
		err = get_integer(ctx, spec, spec_path, "terminationGracePeriodSeconds", 0,
				  INT64_MAX - 1, &value);
		if (err < 0)
			return err;
		if (err)
			meta->termination_grace_period_s = value;
		err = pod_requests(ctx, spec, spec_path, meta);
		if (err < 0)
			return err;
	}
	if (status) {
		if ((err = get_string(ctx, status, status_path, "qosClass", false, qos, sizeof(qos))) < 0 ||
		    (err = get_string(ctx, status, status_path, "phase", false, phase, sizeof(phase))) < 0)
			return err;
		if (qos[0]) {
			if (parse_qos(qos, &meta->qos))
				return parse_fail(ctx, path_key(field, sizeof(field), status_path, "qosClass"),
						  "\"%s\" is not Guaranteed, Burstable or BestEffort", qos);
			meta->qos_known = true;
		}
		meta->terminal = strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0;
		pod_container_ids(meta, status);
	}
	apply_identity(meta, &claim, node);
	if (node_name && strcmp(node, node_name) != 0)
		return 0;
	return 1;
}

int pods_cmp_meta_cgroup_uid(const void *a, const void *b)
{
	return strcmp(((const struct pod_meta *)a)->cgroup_uid, ((const struct pod_meta *)b)->cgroup_uid);
}

void pod_meta_list_free(struct pod_meta_list *list)
{
	if (!list)
		return;
	free(list->items);
	free(list->refused);
	list->items = NULL;
	list->n_items = 0;
	list->refused = NULL;
	list->n_refused = 0;
}

