// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Pods and workloads: cgroup discovery, usage, metadata (DESIGN.md §5, issue 4), and on demand
 * the kubelet's per-pod disk use for disk and inode ranking (pods_read_disk_usage).
 *
 * Where the kubelet puts pod cgroups (pkg/kubelet/cm/cgroup_manager_linux.go,
 * qos_container_manager_linux.go, pod_container_manager_linux.go):
 *
 *   systemd driver   kubepods.slice/kubepods-pod<uid>.slice                    Guaranteed
 *                    kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice
 *                    kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid>.slice
 *                    with '-' in the UID escaped to '_' (systemd unit names).
 *   cgroupfs driver  kubepods/pod<uid>, kubepods/burstable/pod<uid>, kubepods/besteffort/pod<uid>
 *
 * Usage is the cAdvisor view: working set = memory.current - inactive_file (memory.stat),
 * floored at 0; tasks = pids.current. It is re-read on every refresh through stack buffers;
 * metadata is re-parsed only when its source says it changed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "sys/log.h"
#include "pods/pods.h"
#include "core/quantity.h"

/* A pods file larger than this is not a node's pod list. */
#define PODS_FILE_MAX_BYTES (256u << 20)
/* cgroup.threads recursion: the kubelet's tree is 3 deep below a pod; containers may nest. */
#define THREADS_MAX_DEPTH 16
/* Remembered "logged once" keys; past this, repeats may be logged again. */
#define WARNED_MAX 4096

/* ---- small file helpers (no allocation) ------------------------------------------------ */

static bool root_is_host(const char *root)
{
	return !root || !root[0] || (root[0] == '/' && !root[1]);
}

static int join_path(char *buf, size_t len, const char *root, const char *path)
{
	int n = snprintf(buf, len, "%s%s", root_is_host(root) ? "" : root, path);

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* Read up to len-1 bytes of dir/name (dir may be NULL: name is a path), NUL-terminated.
 * Returns the length or negative errno; does not log (callers decide what is worth it). */
static ssize_t read_small_file(const char *dir, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t total = 0, n;
	int fd;

	if (dir) {
		if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
			return -ENAMETOOLONG;
		name = path;
	}
	fd = open(name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((size_t)total < len - 1) {
		n = read(fd, buf + total, len - 1 - total);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			close(fd);
			return n;
		}
		if (n == 0)
			break;
		total += n;
	}
	close(fd);
	buf[total] = '\0';
	return total;
}

/* A whole non-negative decimal, optionally followed by whitespace. */
static int parse_u64_text(const char *text, int64_t *value)
{
	char *end;
	unsigned long long v;

	if (*text < '0' || *text > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || v > INT64_MAX)
		return -ERANGE;
	while (*end == ' ' || *end == '\n' || *end == '\t')
		end++;
	if (*end)
		return -EINVAL;
	*value = (int64_t)v;
	return 0;
}

static int read_i64_file(const char *dir, const char *name, int64_t *value)
{
	char buf[64];
	ssize_t n = read_small_file(dir, name, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	return parse_u64_text(buf, value);
}

/* The value of `key` in a "key value\n" file held in buf; -ENOENT when absent. */
static int flat_keyed_value(const char *buf, const char *key, int64_t *value)
{
	size_t key_len = strlen(key);
	const char *line = buf;

	while (line && *line) {
		if (strncmp(line, key, key_len) == 0 && line[key_len] == ' ') {
			char *end;
			long long v;

			errno = 0;
			v = strtoll(line + key_len + 1, &end, 10);
			if (errno || end == line + key_len + 1)
				return -EINVAL;
			*value = v;
			return 0;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return -ENOENT;
}

bool pods_path_is_ancestor(const char *ancestor, const char *path)
{
	size_t len;

	if (!ancestor || !path)
		return false;
	len = strlen(ancestor);
	while (len > 1 && ancestor[len - 1] == '/')
		len--;
	if (len == 1 && ancestor[0] == '/')
		return path[0] == '/';
	return strncmp(ancestor, path, len) == 0 && (path[len] == '\0' || path[len] == '/');
}

/* ---- cgroup mount, own cgroup, usage --------------------------------------------------- */

int pods_detect_cgroup_mount(const char *root, char *buf, size_t len)
{
	static const char *const candidates[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	char probe[PATH_MAX];

	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
		if (join_path(probe, sizeof(probe), root, candidates[i]) ||
		    strlen(probe) + sizeof("/cgroup.controllers") > sizeof(probe))
			return -ENAMETOOLONG;
		strcat(probe, "/cgroup.controllers");
		if (access(probe, F_OK) == 0)
			return join_path(buf, len, root, candidates[i]);
	}
	return -ENOENT;
}

int pods_read_self_cgroup(const char *root, const char *mount, char *buf, size_t len)
{
	char path[PATH_MAX], text[4096];
	const char *line;
	ssize_t n;
	int err;

	if (!mount || !buf)
		return -EINVAL;
	err = join_path(path, sizeof(path), root, "/proc/self/cgroup");
	if (err)
		return err;
	n = read_small_file(NULL, path, text, sizeof(text));
	if (n < 0)
		return (int)n;
	/* cgroup v2's line is "0::/path"; v1 hierarchies have non-zero ids. */
	for (line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		const char *rel, *nl;
		size_t rel_len, mount_len = strlen(mount);

		if (strncmp(line, "0::", 3) != 0)
			continue;
		rel = line + 3;
		nl = strchr(rel, '\n');
		rel_len = nl ? (size_t)(nl - rel) : strlen(rel);
		/* "/" itself adds nothing: the mount is the cgroup. */
		if (rel_len == 1 && rel[0] == '/')
			rel_len = 0;
		while (mount_len > 1 && mount[mount_len - 1] == '/')
			mount_len--;
		if (mount_len + rel_len + 1 > len)
			return -ENAMETOOLONG;
		memcpy(buf, mount, mount_len);
		memcpy(buf + mount_len, rel, rel_len);
		buf[mount_len + rel_len] = '\0';
		return 0;
	}
	return -ENOENT;
}

/* Tasks in dir and every cgroup below it, from cgroup.threads (one TID per line). */
static int64_t count_threads(const char *dir, int depth)
{
	char buf[8192], child[PATH_MAX];
	int64_t count = 0;
	struct dirent *entry;
	ssize_t n;
	DIR *d;
	int fd;

	if (depth > THREADS_MAX_DEPTH)
		return 0;
	if (snprintf(child, sizeof(child), "%s/cgroup.threads", dir) >= (int)sizeof(child))
		return -ENAMETOOLONG;
	fd = open(child, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Read in chunks: a busy pod can list far more than a stack buffer holds. */
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++)
			count += buf[i] == '\n';
	}
	close(fd);

	d = opendir(dir);
	if (!d)
		return count;
	while ((entry = readdir(d))) {
		int64_t sub;

		if (entry->d_name[0] == '.' || entry->d_type != DT_DIR)
			continue;
		if (snprintf(child, sizeof(child), "%s/%s", dir, entry->d_name) >= (int)sizeof(child))
			continue;
		sub = count_threads(child, depth + 1);
		if (sub > 0)
			count += sub;
	}
	closedir(d);
	return count;
}

int pods_read_usage(struct pod *pod)
{
	char stat_buf[8192];
	int64_t current, inactive = 0, tasks;
	ssize_t n;
	int err;

	if (!pod)
		return -EINVAL;
	err = read_i64_file(pod->cgroup_path, "memory.current", &current);
	if (!err) {
		n = read_small_file(pod->cgroup_path, "memory.stat", stat_buf, sizeof(stat_buf));
		/* cAdvisor subtracts nothing when inactive_file is missing. */
		if (n < 0 || flat_keyed_value(stat_buf, "inactive_file", &inactive) < 0)
			inactive = 0;
		pod->memory_working_set = current > inactive ? current - inactive : 0;
		pod->stats_missing = false;
	} else {
		pod->memory_working_set = 0;
		pod->stats_missing = true;
	}

	/* populated 0 is the kernel's word that no live task is left; pids.current still
	 * counts zombies until they are reaped. */
	n = read_small_file(pod->cgroup_path, "cgroup.events", stat_buf, sizeof(stat_buf));
	{
		int64_t populated = 1;

		pod->exited = n >= 0 && flat_keyed_value(stat_buf, "populated", &populated) == 0 &&
			      populated == 0;
	}
	if (read_i64_file(pod->cgroup_path, "pids.current", &tasks) < 0) {
		tasks = count_threads(pod->cgroup_path, 0);
		if (tasks < 0)
			tasks = 0;
	}
	pod->processes = tasks;
	return err;
}

/* ---- PodList parsing (json-c) ------------------------------------------------------------ */

struct parse_ctx {
	const char *name;	/* file name for messages */
	char *errbuf;
	size_t errlen;
	char message[512];
};

static int __attribute__((format(printf, 3, 4)))
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

static const char *json_kind(const struct json_object *obj)
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

static const char *path_index(char *buf, size_t len, const char *parent, size_t index)
{
	if (snprintf(buf, len, "%s[%zu]", parent, index) >= (int)len)
		buf[len - 1] = '\0';
	return buf;
}

/* Member `key` of obj with the wanted type. Returns 1 found, 0 absent (or JSON null),
 * negative on a wrong type (message set). */
static int get_member(struct parse_ctx *ctx, struct json_object *obj, const char *path,
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
static int get_string(struct parse_ctx *ctx, struct json_object *obj, const char *path,
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
static int get_containers(struct parse_ctx *ctx, struct json_object *spec, const char *path,
			  const char *key, bool init, struct rank_container_request *memory,
			  struct rank_container_request *ephemeral, size_t *n)
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
	err = get_containers(ctx, spec, path, "containers", false, memory, ephemeral, &n);
	if (!err)
		err = get_containers(ctx, spec, path, "initContainers", true, memory, ephemeral, &n);
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
		meta->memory_request = rank_pod_request(memory, n, pod_memory_set ? pod_memory : -1,
							overhead_memory);
		meta->ephemeral_storage_request = rank_pod_request(ephemeral, n, -1, overhead_ephemeral);
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
static bool uid_is_valid(const char *uid)
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

static int parse_metadata(struct parse_ctx *ctx, struct json_object *pod, const char *path,
			  struct pod_meta *meta)
{
	struct json_object *metadata = NULL, *annotations = NULL, *owners = NULL;
	char metadata_path[512], annotations_path[512], owners_path[512], item_path[512];
	char source[64] = "", mirror[64] = "", hash[64] = "";
	int err, has_mirror;

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
	if (!uid_is_valid(meta->uid))
		return parse_fail(ctx, path_key(item_path, sizeof(item_path), metadata_path, "uid"),
				  "\"%s\" is not a UID", meta->uid);

	err = get_member(ctx, metadata, metadata_path, "annotations", json_type_object, &annotations);
	if (err < 0)
		return err;
	path_key(annotations_path, sizeof(annotations_path), metadata_path, "annotations");
	if (annotations) {
		if ((err = get_string(ctx, annotations, annotations_path, POD_ANNOTATION_CONFIG_SOURCE,
				      false, source, sizeof(source))) < 0 ||
		    (has_mirror = err = get_string(ctx, annotations, annotations_path,
						   POD_ANNOTATION_CONFIG_MIRROR, false, mirror,
						   sizeof(mirror))) < 0 ||
		    (err = get_string(ctx, annotations, annotations_path, POD_ANNOTATION_CONFIG_HASH,
				      false, hash, sizeof(hash))) < 0)
			return err;
		/* [pod_update.go] IsStaticPod: a source annotation other than "api";
		 * IsMirrorPod: the mirror annotation exists (whatever its value). */
		meta->is_static = source[0] && strcmp(source, "api") != 0;
		meta->is_mirror = has_mirror > 0;
	}
	/* The kubelet names a static pod's cgroup after its own UID (config.hash); the mirror
	 * pod the API server holds has another UID and carries that hash in config.mirror. */
	if (meta->is_mirror && uid_is_valid(mirror))
		strcpy(meta->cgroup_uid, mirror);
	else if (meta->is_static && uid_is_valid(hash))
		strcpy(meta->cgroup_uid, hash);
	else
		strcpy(meta->cgroup_uid, meta->uid);

	err = get_member(ctx, metadata, metadata_path, "ownerReferences", json_type_array, &owners);
	if (err < 0)
		return err;
	path_key(owners_path, sizeof(owners_path), metadata_path, "ownerReferences");
	for (size_t i = 0; owners && i < json_object_array_length(owners); i++) {
		struct json_object *owner = json_object_array_get_idx(owners, i);
		struct json_object *controller = NULL;
		char kind[64] = "";

		path_index(item_path, sizeof(item_path), owners_path, i);
		if (!json_object_is_type(owner, json_type_object))
			return parse_fail(ctx, item_path, "expected object, got %s", json_kind(owner));
		if ((err = get_string(ctx, owner, item_path, "kind", true, kind, sizeof(kind))) < 0 ||
		    (err = get_member(ctx, owner, item_path, "controller", json_type_boolean,
				      &controller)) < 0)
			return err;
		/* The kubelet's IsDaemonSetPod-like check: the controlling owner is a DaemonSet. */
		if (strcmp(kind, "DaemonSet") == 0 && controller && json_object_get_boolean(controller))
			meta->is_daemonset = true;
	}
	return 0;
}

/* One Pod object. Returns 1 to keep it, 0 to skip it (another node), negative on error. */
static int parse_pod(struct parse_ctx *ctx, struct json_object *pod, const char *path,
		     const char *node_name, struct pod_meta *meta)
{
	struct json_object *spec = NULL, *status = NULL;
	char spec_path[512], status_path[512], field[512];
	char node[256] = "", qos[32] = "", phase[32] = "";
	int64_t value;
	int err;

	if (!json_object_is_type(pod, json_type_object))
		return parse_fail(ctx, path, "expected object, got %s", json_kind(pod));
	memset(meta, 0, sizeof(*meta));
	meta->termination_grace_period_s = -1;
	err = parse_metadata(ctx, pod, path, meta);
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
	}
	if (node_name && strcmp(node, node_name) != 0)
		return 0;
	return 1;
}

static int cmp_meta_cgroup_uid(const void *a, const void *b)
{
	return strcmp(((const struct pod_meta *)a)->cgroup_uid, ((const struct pod_meta *)b)->cgroup_uid);
}

void pod_meta_list_free(struct pod_meta_list *list)
{
	if (!list)
		return;
	free(list->items);
	list->items = NULL;
	list->n_items = 0;
}

static int parse_document(struct parse_ctx *ctx, struct json_object *doc, const char *node_name,
			  struct pod_meta_list *out)
{
	struct json_object *items = NULL;
	char kind[64] = "", item_path[64];
	struct pod_meta *metas;
	size_t count, kept = 0;
	int err;

	if (!json_object_is_type(doc, json_type_object))
		return parse_fail(ctx, "", "expected a PodList object, got %s", json_kind(doc));
	err = get_string(ctx, doc, "", "kind", false, kind, sizeof(kind));
	if (err < 0)
		return err;
	if (strcmp(kind, "Pod") == 0) {
		metas = calloc(1, sizeof(*metas));
		if (!metas)
			return -ENOMEM;
		err = parse_pod(ctx, doc, "", node_name, metas);
		if (err < 0) {
			free(metas);
			return err;
		}
		out->items = metas;
		out->n_items = (size_t)err;
		return 0;
	}
	if (kind[0] && strcmp(kind, "List") != 0 && strcmp(kind, "PodList") != 0)
		return parse_fail(ctx, "kind", "\"%s\" is not List, PodList or Pod", kind);
	err = get_member(ctx, doc, "", "items", json_type_array, &items);
	if (err < 0)
		return err;
	if (err == 0)
		return parse_fail(ctx, "items", "missing");
	count = json_object_array_length(items);
	metas = calloc(count ? count : 1, sizeof(*metas));
	if (!metas)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		path_index(item_path, sizeof(item_path), "items", i);
		err = parse_pod(ctx, json_object_array_get_idx(items, i), item_path, node_name,
				&metas[kept]);
		if (err < 0) {
			free(metas);
			return err;
		}
		kept += (size_t)err;
	}
	/* Sorted by the join key: the join is a bsearch per cgroup. */
	qsort(metas, kept, sizeof(*metas), cmp_meta_cgroup_uid);
	for (size_t i = 1; i < kept; i++) {
		if (strcmp(metas[i - 1].cgroup_uid, metas[i].cgroup_uid) == 0) {
			parse_fail(ctx, "items", "two pods with UID %s", metas[i].cgroup_uid);
			free(metas);
			return -EINVAL;
		}
	}
	out->items = metas;
	out->n_items = kept;
	return 0;
}

int pods_parse_podlist(const char *json, size_t len, const char *name, const char *node_name,
		       struct pod_meta_list *list, char *errbuf, size_t errlen)
{
	struct parse_ctx ctx = { .name = name ? name : "pods", .errbuf = errbuf, .errlen = errlen };
	struct pod_meta_list parsed = { 0 };
	struct json_tokener *tok;
	struct json_object *doc;
	size_t end;
	int err;

	if (!json || !list)
		return -EINVAL;
	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (len > INT32_MAX) {
		err = parse_fail(&ctx, "", "too large (%zu bytes)", len);
		goto out;
	}
	/* kubectl output nests managedFields deeply; json-c's default depth is 32. */
	tok = json_tokener_new_ex(64);
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	doc = json_tokener_parse_ex(tok, json, (int)len);
	if (!doc) {
		enum json_tokener_error jerr = json_tokener_get_error(tok);

		/* A document cut short leaves the tokener waiting for more. */
		if (jerr == json_tokener_continue)
			parse_fail(&ctx, "", "truncated JSON at byte %zu", len);
		else
			parse_fail(&ctx, "", "malformed JSON at byte %zu: %s",
				   json_tokener_get_parse_end(tok), json_tokener_error_desc(jerr));
		json_tokener_free(tok);
		err = -EINVAL;
		goto out;
	}
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	while (end < len && (json[end] == ' ' || json[end] == '\n' || json[end] == '\r' ||
			     json[end] == '\t'))
		end++;
	if (end < len) {
		json_object_put(doc);
		err = parse_fail(&ctx, "", "trailing data at byte %zu", end);
		goto out;
	}
	err = parse_document(&ctx, doc, node_name, &parsed);
	json_object_put(doc);
	if (!err) {
		pod_meta_list_free(list);
		*list = parsed;
		return 0;
	}
out:
	if (err == -EINVAL) {
		log_err("%s", ctx.message);
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "%s", ctx.message);
	}
	return err;
}

/* ---- the pods-file source -------------------------------------------------------------- */

struct pods_file_source {
	struct pods_meta_source source;
	char path[PATH_MAX];
	char node_name[256];
	bool filter_node;
	bool have_stamp;	/* the stamp below names the last version tried */
	struct stat stamp;
	int last_err;		/* of the last version tried: 0 or negative errno */
};

static bool same_version(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static int read_whole_file(const char *path, char **data, size_t *len)
{
	struct stat st;
	size_t total = 0;
	char *buf;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		close(fd);
		return err;
	}
	if ((uint64_t)st.st_size > PODS_FILE_MAX_BYTES) {
		close(fd);
		return -EFBIG;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (total < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + total, (size_t)st.st_size - total);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			free(buf);
			close(fd);
			return err;
		}
		if (n == 0)
			break;
		total += (size_t)n;
	}
	close(fd);
	buf[total] = '\0';
	*data = buf;
	*len = total;
	return 0;
}

static int pods_file_refresh(struct pods_meta_source *source, struct pod_meta_list *list)
{
	struct pods_file_source *file = (struct pods_file_source *)source;
	struct stat st;
	char *data = NULL;
	size_t len = 0;
	int err;

	if (stat(file->path, &st)) {
		err = -errno;
		if (file->last_err != err)
			log_err("pods file %s: %m; keeping the last pod list", file->path);
		file->last_err = err;
		file->have_stamp = false;
		return err;
	}
	/* Unchanged since the last try: nothing to do, and a bad version is not re-logged. */
	if (file->have_stamp && same_version(&st, &file->stamp))
		return file->last_err ? file->last_err : 0;
	file->stamp = st;
	file->have_stamp = true;

	err = read_whole_file(file->path, &data, &len);
	if (err) {
		errno = -err;
		log_err("reading pods file %s: %m; keeping the last pod list", file->path);
		file->last_err = err;
		return err;
	}
	err = pods_parse_podlist(data, len, file->path, file->filter_node ? file->node_name : NULL,
				 list, NULL, 0);
	free(data);
	file->last_err = err;
	if (err)
		return err;
	log_info("pods file %s: %zu pods", file->path, list->n_items);
	return 1;
}

static void pods_file_destroy(struct pods_meta_source *source)
{
	free(source);
}

struct pods_meta_source *pods_file_source_new(const char *path, const char *node_name)
{
	struct pods_file_source *file;

	if (!path || strlen(path) >= sizeof(file->path) ||
	    (node_name && strlen(node_name) >= sizeof(file->node_name)))
		return NULL;
	file = calloc(1, sizeof(*file));
	if (!file)
		return NULL;
	strcpy(file->path, path);
	if (node_name) {
		strcpy(file->node_name, node_name);
		file->filter_node = true;
	}
	file->source.name = file->path;
	file->source.refresh = pods_file_refresh;
	file->source.destroy = pods_file_destroy;
	return &file->source;
}

/* ---- the table ----------------------------------------------------------------------- */

#define KUBEPODS_DIRS 2		/* kubepods.slice (systemd), kubepods (cgroupfs) */

struct pods {
	char root[PATH_MAX];
	char mount[PATH_MAX];
	char kubepods[KUBEPODS_DIRS][PATH_MAX];
	char workload_roots[PODS_MAX_WORKLOAD_ROOTS][PATH_MAX];
	size_t n_workload_roots;
	bool standalone;

	struct pods_meta_source *meta_source;
	struct pod_meta_list meta;
	bool warned_no_source;

	struct pod *items;
	struct pod **ptrs;
	size_t n_items, cap_items;

	uint64_t *warned;	/* FNV-1a of "logged once" keys */
	size_t n_warned, cap_warned;
};

static uint64_t fnv1a(const char *a, const char *b)
{
	uint64_t hash = 0xcbf29ce484222325ull;

	for (const char *p = a; *p; p++)
		hash = (hash ^ (unsigned char)*p) * 0x100000001b3ull;
	hash = (hash ^ 0xff) * 0x100000001b3ull;	/* separator: ("ab","c") != ("a","bc") */
	for (const char *p = b; p && *p; p++)
		hash = (hash ^ (unsigned char)*p) * 0x100000001b3ull;
	return hash;
}

/* true the first time (kind, key) is seen: the caller logs then. */
static bool first_time(struct pods *pods, const char *kind, const char *key)
{
	uint64_t hash = fnv1a(kind, key);

	for (size_t i = 0; i < pods->n_warned; i++) {
		if (pods->warned[i] == hash)
			return false;
	}
	if (pods->n_warned == pods->cap_warned) {
		size_t cap = pods->cap_warned ? pods->cap_warned * 2 : 64;
		uint64_t *grown;

		if (cap > WARNED_MAX)
			return true;	/* stop remembering rather than grow without bound */
		grown = realloc(pods->warned, cap * sizeof(*grown));
		if (!grown)
			return true;
		pods->warned = grown;
		pods->cap_warned = cap;
	}
	pods->warned[pods->n_warned++] = hash;
	return true;
}

static int copy_checked(char *dst, size_t len, const char *src)
{
	if (strlen(src) >= len)
		return -ENAMETOOLONG;
	strcpy(dst, src);
	return 0;
}

int pods_open(struct pods **out, const struct pods_options *options)
{
	const char *cgroup_root;
	struct pods *pods;
	char rel[PATH_MAX];
	int err;

	if (!out || !options)
		return -EINVAL;
	*out = NULL;
	pods = calloc(1, sizeof(*pods));
	if (!pods) {
		if (options->meta_source && options->meta_source->destroy)
			options->meta_source->destroy(options->meta_source);
		return -ENOMEM;
	}
	pods->meta_source = options->meta_source;
	err = copy_checked(pods->root, sizeof(pods->root), root_is_host(options->root) ? "" : options->root);
	if (err)
		goto fail;
	if (options->n_workload_roots > PODS_MAX_WORKLOAD_ROOTS) {
		log_err("pods: %zu workload roots, at most %d", options->n_workload_roots,
			PODS_MAX_WORKLOAD_ROOTS);
		err = -EINVAL;
		goto fail;
	}

	if (options->cgroup_dir && options->cgroup_dir[0])
		err = join_path(pods->mount, sizeof(pods->mount), pods->root, options->cgroup_dir);
	else
		err = pods_detect_cgroup_mount(pods->root, pods->mount, sizeof(pods->mount));
	if (err) {
		log_err("pods: no cgroup v2 mount under %s/sys/fs/cgroup: %s",
			pods->root, strerror(-err));
		goto fail;
	}

	pods->standalone = options->n_workload_roots > 0;
	for (size_t i = 0; i < options->n_workload_roots; i++) {
		const char *dir = options->workload_roots[i];

		/* Kill safety compares paths lexically: only canonical absolute paths. */
		if (!dir || dir[0] != '/' || strstr(dir, "/../") || strstr(dir, "/./") ||
		    strstr(dir, "//") || (strlen(dir) > 1 && dir[strlen(dir) - 1] == '/') ||
		    strcmp(dir, "/") == 0) {
			log_err("pods: workload root \"%s\" must be a canonical absolute path below /",
				dir ? dir : "(null)");
			err = -EINVAL;
			goto fail;
		}
		err = join_path(pods->workload_roots[i], PATH_MAX, pods->root, dir);
		if (err)
			goto fail;
	}
	pods->n_workload_roots = options->n_workload_roots;

	cgroup_root = options->kubelet_cgroup_root && options->kubelet_cgroup_root[0] ?
			      options->kubelet_cgroup_root : "/";
	while (*cgroup_root == '/')
		cgroup_root++;
	snprintf(rel, sizeof(rel), "%s%s", cgroup_root[0] ? "/" : "", cgroup_root);
	if (strlen(rel) > 1 && rel[strlen(rel) - 1] == '/')
		rel[strlen(rel) - 1] = '\0';
	if (snprintf(pods->kubepods[0], PATH_MAX, "%s%s/kubepods.slice", pods->mount, rel) >= PATH_MAX ||
	    snprintf(pods->kubepods[1], PATH_MAX, "%s%s/kubepods", pods->mount, rel) >= PATH_MAX) {
		err = -ENAMETOOLONG;
		goto fail;
	}
	*out = pods;
	return 0;
fail:
	pods_close(pods);
	return err;
}

void pods_close(struct pods *pods)
{
	if (!pods)
		return;
	if (pods->meta_source && pods->meta_source->destroy)
		pods->meta_source->destroy(pods->meta_source);
	pod_meta_list_free(&pods->meta);
	free(pods->items);
	free(pods->ptrs);
	free(pods->warned);
	free(pods);
}

static struct pod *add_pod(struct pods *pods)
{
	struct pod *pod;

	if (pods->n_items == pods->cap_items) {
		size_t cap = pods->cap_items ? pods->cap_items * 2 : 32;
		struct pod *items = realloc(pods->items, cap * sizeof(*items));
		struct pod **ptrs;

		if (!items)
			return NULL;
		pods->items = items;
		ptrs = realloc(pods->ptrs, cap * sizeof(*ptrs));
		if (!ptrs)
			return NULL;
		pods->ptrs = ptrs;
		pods->cap_items = cap;
	}
	pod = &pods->items[pods->n_items++];
	memset(pod, 0, sizeof(*pod));
	pod->termination_grace_period_s = -1;
	return pod;
}

/* A pod cgroup's directory name: prefix + UID + suffix. systemd escapes '-' as '_'. */
static bool pod_uid_from_name(const char *name, const char *prefix, const char *suffix,
			      bool systemd, char *uid, size_t uid_len)
{
	size_t name_len = strlen(name), prefix_len = strlen(prefix), suffix_len = strlen(suffix);
	size_t len;

	if (name_len <= prefix_len + suffix_len || strncmp(name, prefix, prefix_len) != 0 ||
	    strcmp(name + name_len - suffix_len, suffix) != 0)
		return false;
	len = name_len - prefix_len - suffix_len;
	if (len >= uid_len)
		return false;
	memcpy(uid, name + prefix_len, len);
	uid[len] = '\0';
	for (char *p = uid; *p; p++) {
		if (systemd && *p == '_')
			*p = '-';
		else if (systemd && *p == '-')
			return false;	/* an escaped name never holds '-' */
	}
	return uid_is_valid(uid);
}

static bool is_directory(DIR *d, const struct dirent *entry)
{
	struct stat st;

	if (entry->d_type == DT_DIR)
		return true;
	if (entry->d_type != DT_UNKNOWN)
		return false;
	return fstatat(dirfd(d), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/* Add every pod cgroup directly in dir. Returns the count added or negative errno. */
static int scan_qos_dir(struct pods *pods, const char *dir, const char *prefix, const char *suffix,
			bool systemd, enum pod_qos qos)
{
	struct dirent *entry;
	int added = 0;
	DIR *d;

	d = opendir(dir);
	if (!d) {
		if (errno != ENOENT)
			log_warn("pods: opendir %s: %m", dir);
		return errno == ENOENT ? 0 : -errno;
	}
	while ((entry = readdir(d))) {
		char uid[64];
		struct pod *pod;

		if (!pod_uid_from_name(entry->d_name, prefix, suffix, systemd, uid, sizeof(uid)) ||
		    !is_directory(d, entry))
			continue;
		pod = add_pod(pods);
		if (!pod) {
			closedir(d);
			return -ENOMEM;
		}
		if (snprintf(pod->cgroup_path, sizeof(pod->cgroup_path), "%s/%s", dir, entry->d_name) >=
		    (int)sizeof(pod->cgroup_path)) {
			pods->n_items--;
			continue;
		}
		strcpy(pod->uid, uid);
		pod->qos = qos;
		added++;
	}
	closedir(d);
	return added;
}

static int discover_kubepods(struct pods *pods)
{
	char dir[PATH_MAX];
	int err, found_tree = 0;
	struct stat st;

	/* systemd driver */
	if (stat(pods->kubepods[0], &st) == 0) {
		found_tree++;
		if ((err = scan_qos_dir(pods, pods->kubepods[0], "kubepods-pod", ".slice", true,
					POD_QOS_GUARANTEED)) < 0)
			return err;
		if (snprintf(dir, sizeof(dir), "%s/kubepods-burstable.slice", pods->kubepods[0]) >= (int)sizeof(dir))
			return -ENAMETOOLONG;
		if ((err = scan_qos_dir(pods, dir, "kubepods-burstable-pod", ".slice", true,
					POD_QOS_BURSTABLE)) < 0)
			return err;
		if (snprintf(dir, sizeof(dir), "%s/kubepods-besteffort.slice", pods->kubepods[0]) >= (int)sizeof(dir))
			return -ENAMETOOLONG;
		if ((err = scan_qos_dir(pods, dir, "kubepods-besteffort-pod", ".slice", true,
					POD_QOS_BESTEFFORT)) < 0)
			return err;
	}
	/* cgroupfs driver */
	if (stat(pods->kubepods[1], &st) == 0) {
		found_tree++;
		if ((err = scan_qos_dir(pods, pods->kubepods[1], "pod", "", false,
					POD_QOS_GUARANTEED)) < 0)
			return err;
		if (snprintf(dir, sizeof(dir), "%s/burstable", pods->kubepods[1]) >= (int)sizeof(dir))
			return -ENAMETOOLONG;
		if ((err = scan_qos_dir(pods, dir, "pod", "", false, POD_QOS_BURSTABLE)) < 0)
			return err;
		if (snprintf(dir, sizeof(dir), "%s/besteffort", pods->kubepods[1]) >= (int)sizeof(dir))
			return -ENAMETOOLONG;
		if ((err = scan_qos_dir(pods, dir, "pod", "", false, POD_QOS_BESTEFFORT)) < 0)
			return err;
	}
	if (!found_tree && first_time(pods, "no-kubepods", pods->mount))
		log_warn("pods: neither %s nor %s exists; no pods yet", pods->kubepods[0],
			 pods->kubepods[1]);
	return 0;
}

/* An xattr as a NUL-terminated string with trailing whitespace cut. 1 found, 0 absent,
 * negative errno. */
static int read_xattr(const char *path, const char *name, char *buf, size_t len)
{
	ssize_t n = getxattr(path, name, buf, len - 1);

	if (n < 0)
		return (errno == ENODATA || errno == ENOTSUP) ? 0 : -errno;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		buf[--n] = '\0';
	return 1;
}

static void workload_xattrs(struct pods *pods, struct pod *pod)
{
	char value[128], key[PATH_MAX + 160];
	int found;

	found = read_xattr(pod->cgroup_path, PODS_XATTR_PRIORITY, value, sizeof(value));
	if (found > 0) {
		char *end;
		long long priority;

		errno = 0;
		priority = strtoll(value, &end, 10);
		if (errno || end == value || *end || priority < INT32_MIN || priority > INT32_MAX) {
			snprintf(key, sizeof(key), "%s=%s", pod->cgroup_path, value);
			if (first_time(pods, "bad-priority", key))
				log_warn("workload %s: %s \"%s\" is not a 32-bit integer; using 0",
					 pod->cgroup_path, PODS_XATTR_PRIORITY, value);
		} else {
			pod->priority = (int32_t)priority;
		}
	} else if (found < 0 && first_time(pods, "xattr-error", pod->cgroup_path)) {
		errno = -found;
		log_warn("workload %s: getxattr %s: %m; using 0", pod->cgroup_path, PODS_XATTR_PRIORITY);
	}

	found = read_xattr(pod->cgroup_path, PODS_XATTR_MEMORY_REQUEST, value, sizeof(value));
	if (found > 0) {
		int64_t request;

		if (quantity_parse(value, &request) || request < 0) {
			snprintf(key, sizeof(key), "%s=%s", pod->cgroup_path, value);
			if (first_time(pods, "bad-request", key))
				log_warn("workload %s: %s \"%s\" is not a non-negative quantity; using 0",
					 pod->cgroup_path, PODS_XATTR_MEMORY_REQUEST, value);
		} else {
			pod->memory_request = request;
		}
	}
	/* No QoS exists outside Kubernetes; name the closest so reports read sensibly. */
	pod->qos = pod->memory_request > 0 ? POD_QOS_BURSTABLE : POD_QOS_BESTEFFORT;
}

static int discover_workloads(struct pods *pods)
{
	for (size_t r = 0; r < pods->n_workload_roots; r++) {
		const char *root = pods->workload_roots[r];
		struct dirent *entry;
		DIR *d = opendir(root);

		if (!d) {
			if (first_time(pods, "workload-root", root))
				log_err("workload root %s: %m", root);
			continue;
		}
		while ((entry = readdir(d))) {
			struct stat st;
			struct pod *pod;

			if (entry->d_name[0] == '.' || !is_directory(d, entry))
				continue;
			pod = add_pod(pods);
			if (!pod) {
				closedir(d);
				return -ENOMEM;
			}
			if (snprintf(pod->cgroup_path, sizeof(pod->cgroup_path), "%s/%s", root,
				     entry->d_name) >= (int)sizeof(pod->cgroup_path) ||
			    fstatat(dirfd(d), entry->d_name, &st, AT_SYMLINK_NOFOLLOW)) {
				pods->n_items--;
				continue;
			}
			/* The cgroup id (its inode) is the workload's UID: it is what the BPF side
			 * keys its counters by, and it changes when the cgroup is recreated. */
			snprintf(pod->uid, sizeof(pod->uid), "%llu", (unsigned long long)st.st_ino);
			snprintf(pod->name, sizeof(pod->name), "%s", entry->d_name);
			workload_xattrs(pods, pod);
		}
		closedir(d);
	}
	return 0;
}

static const struct pod_meta *find_meta(struct pods *pods, const char *uid)
{
	struct pod_meta key;

	if (!pods->meta.n_items)
		return NULL;
	snprintf(key.cgroup_uid, sizeof(key.cgroup_uid), "%s", uid);
	return bsearch(&key, pods->meta.items, pods->meta.n_items, sizeof(key), cmp_meta_cgroup_uid);
}

/* What the kubelet wrote into a pod cgroup about its request, for pods without metadata. */
static int64_t request_from_cgroup(const struct pod *pod)
{
	int64_t value = 0;

	switch (pod->qos) {
	case POD_QOS_GUARANTEED:
		/* Guaranteed: limits == requests, and the pod cgroup's memory.max is their sum
		 * ("max" when unlimited, which a Guaranteed pod cannot be: read fails, 0). */
		if (read_i64_file(pod->cgroup_path, "memory.max", &value))
			value = 0;
		break;
	case POD_QOS_BURSTABLE:
		/* MemoryQoS writes the request to memory.min; 0 without it. */
		if (read_i64_file(pod->cgroup_path, "memory.min", &value))
			value = 0;
		break;
	case POD_QOS_BESTEFFORT:
		break;
	}
	return value;
}

static void join_metadata(struct pods *pods)
{
	for (size_t i = 0; i < pods->meta.n_items; i++)
		pods->meta.items[i].joined = false;

	for (size_t i = 0; i < pods->n_items; i++) {
		struct pod *pod = &pods->items[i];
		struct pod_meta *meta = (struct pod_meta *)find_meta(pods, pod->uid);

		if (!meta) {
			/* Evictable at priority 0 (see pods.h): unknown pods are most likely newer
			 * than the list; refusing them would leave a runaway pod to the kernel's
			 * OOM killer, the outcome evictd exists to prevent. */
			pod->memory_request = request_from_cgroup(pod);
			snprintf(pod->name, sizeof(pod->name), "%s", strrchr(pod->cgroup_path, '/') + 1);
			if (first_time(pods, "no-meta", pod->uid))
				log_warn("pods: cgroup %s has no pod metadata%s%s; ranking it as %s "
					 "priority 0 with request %" PRId64 " bytes",
					 pod->cgroup_path, pods->meta_source ? " in " : "",
					 pods->meta_source ? pods->meta_source->name : " (no pods source)",
					 pod_qos_name(pod->qos), pod->memory_request);
			continue;
		}
		meta->joined = true;
		memcpy(pod->namespace_, meta->namespace_, sizeof(pod->namespace_));
		memcpy(pod->name, meta->name, sizeof(pod->name));
		pod->priority = meta->priority;
		pod->is_static = meta->is_static;
		pod->is_mirror = meta->is_mirror;
		pod->is_daemonset = meta->is_daemonset;
		pod->termination_grace_period_s = meta->termination_grace_period_s;
		pod->memory_request = meta->memory_request;
		pod->ephemeral_storage_request = meta->ephemeral_storage_request;
		/* The path is where the kubelet actually put the pod: it wins. */
		if (meta->qos_known && meta->qos != pod->qos && first_time(pods, "qos-mismatch", pod->uid))
			log_warn("pods: %s/%s: status.qosClass %s but its cgroup %s is %s; using %s",
				 meta->namespace_, meta->name, pod_qos_name(meta->qos),
				 pod->cgroup_path, pod_qos_name(pod->qos), pod_qos_name(pod->qos));
	}

	for (size_t i = 0; i < pods->meta.n_items; i++) {
		const struct pod_meta *meta = &pods->meta.items[i];

		if (meta->joined || !first_time(pods, "no-cgroup", meta->cgroup_uid))
			continue;
		/* Finished pods have no cgroup by design: not worth more than debug. */
		log_msg(meta->terminal ? LOGLEVEL_DEBUG : LOGLEVEL_INFO,
			"pods: %s/%s (uid %s) has no cgroup under %s or %s; skipping it",
			meta->namespace_, meta->name, meta->cgroup_uid, pods->kubepods[0],
			pods->kubepods[1]);
	}
}

static void mark_self(struct pods *pods)
{
	char self[PATH_MAX];
	int err = pods_read_self_cgroup(pods->root, pods->mount, self, sizeof(self));

	if (err) {
		if (first_time(pods, "self", ""))
			log_warn("pods: cannot tell evictd's own cgroup from %s/proc/self/cgroup: %s",
				 pods->root, strerror(-err));
		return;
	}
	/* A pod containing evictd (at any depth) is evictd's pod. */
	for (size_t i = 0; i < pods->n_items; i++)
		pods->items[i].is_self = pods_path_is_ancestor(pods->items[i].cgroup_path, self);
}

static void update_metadata(struct pods *pods)
{
	if (!pods->meta_source) {
		if (!pods->warned_no_source)
			log_warn("pods: no pod metadata source (--pods-file); every pod ranks as "
				 "priority 0 and static pods cannot be recognised");
		pods->warned_no_source = true;
		return;
	}
	/* On failure the source has logged and the last good list stays in use. */
	pods->meta_source->refresh(pods->meta_source, &pods->meta);
}

int pods_refresh(struct pods *pods)
{
	int err;

	if (!pods)
		return -EINVAL;
	pods->n_items = 0;
	if (pods->standalone) {
		err = discover_workloads(pods);
	} else {
		update_metadata(pods);
		err = discover_kubepods(pods);
	}
	if (err) {
		pods->n_items = 0;
		errno = -err;
		log_err("pods: discovery failed: %m");
		return err;
	}
	if (!pods->standalone)
		join_metadata(pods);
	for (size_t i = 0; i < pods->n_items; i++) {
		pods_read_usage(&pods->items[i]);
		pods->ptrs[i] = &pods->items[i];
	}
	mark_self(pods);
	return 0;
}

int pods_refresh_usage(struct pods *pods)
{
	if (!pods)
		return -EINVAL;
	for (size_t i = 0; i < pods->n_items; i++)
		pods_read_usage(&pods->items[i]);
	return 0;
}

struct pod **pods_list(struct pods *pods, size_t *n_pods)
{
	if (!pods || !n_pods) {
		if (n_pods)
			*n_pods = 0;
		return NULL;
	}
	*n_pods = pods->n_items;
	return pods->ptrs;
}

size_t pods_kill_roots(const struct pods *pods, const char **roots, size_t max)
{
	size_t n = 0;

	if (!pods || !roots)
		return 0;
	if (pods->standalone) {
		for (size_t i = 0; i < pods->n_workload_roots && n < max; i++)
			roots[n++] = pods->workload_roots[i];
		return n;
	}
	for (size_t i = 0; i < KUBEPODS_DIRS && n < max; i++)
		roots[n++] = pods->kubepods[i];
	return n;
}

const char *pods_cgroup_mount(const struct pods *pods)
{
	return pods ? pods->mount : NULL;
}

/* ---- disk usage (DESIGN.md §5) ----------------------------------------------------------------
 *
 * What the kubelet's rankDiskPressureFunc measures comes from the summary API: container
 * Rootfs (the runtime's writable layer) and Logs, and the VolumeStats of the pod's local
 * volumes (helpers.go podDiskUsage, containerUsage, podLocalVolumeUsage, localVolumeNames).
 * etc-hosts and the pod-level log files only enter PodStats.EphemeralStorage
 * (stats/helper.go calcEphemeralStorage), which eviction uses for ephemeral-storage limits,
 * not for ranking; they are not counted here.
 */

#define DISK_WALK_MAX_DEPTH 128

/* Memory-backed filesystems: an emptyDir with medium Memory or HugePages* is one of these,
 * and IsLocalEphemeralVolume excludes it. Values from linux/magic.h. */
#define DISK_TMPFS_MAGIC 0x01021994
#define DISK_RAMFS_MAGIC 0x858458f6
#define DISK_HUGETLBFS_MAGIC 0x958458f6

/* The volume plugins whose dirs hold IsLocalEphemeralVolume volumes (escaped plugin names:
 * '/' becomes '~'). Secrets, projected and downwardAPI volumes live on tmpfs and are not
 * local ephemeral volumes; hostPath has no dir here and reports no metrics. */
static const char *const local_volume_plugins[] = {
	"kubernetes.io~empty-dir",
	"kubernetes.io~configmap",
	"kubernetes.io~git-repo",
};

static int64_t disk_add(int64_t a, int64_t b)
{
	return b > 0 && a > INT64_MAX - b ? INT64_MAX : a + b;
}

static int64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* (dev, ino) of inodes with more than one link already counted for the pod. */
struct inode_set {
	struct { uint64_t dev, ino; } *slots;	/* ino 0 = empty */
	size_t cap, used;
};

static void inode_set_clear(struct inode_set *set)
{
	if (set->used)
		memset(set->slots, 0, set->cap * sizeof(*set->slots));
	set->used = 0;
}

static size_t inode_hash(uint64_t dev, uint64_t ino, size_t cap)
{
	uint64_t h = (ino ^ (dev * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;

	return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

/* true when (dev, ino) was not in the set (it is now, memory permitting). */
static bool inode_set_add(struct inode_set *set, uint64_t dev, uint64_t ino)
{
	size_t i;

	if (!ino)
		ino = UINT64_MAX;	/* 0 marks empty slots */
	if ((set->used + 1) * 2 > set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 256;
		__typeof__(set->slots) slots = calloc(cap, sizeof(*slots));

		if (!slots)
			return true;	/* count it again rather than fail the walk */
		for (size_t j = 0; j < set->cap; j++) {
			if (!set->slots[j].ino)
				continue;
			i = inode_hash(set->slots[j].dev, set->slots[j].ino, cap);
			while (slots[i].ino)
				i = (i + 1) & (cap - 1);
			slots[i] = set->slots[j];
		}
		free(set->slots);
		set->slots = slots;
		set->cap = cap;
	}
	for (i = inode_hash(dev, ino, set->cap); set->slots[i].ino; i = (i + 1) & (set->cap - 1)) {
		if (set->slots[i].dev == dev && set->slots[i].ino == ino)
			return false;
	}
	set->slots[i].dev = dev;
	set->slots[i].ino = ino;
	set->used++;
	return true;
}

struct disk_walk {
	dev_t dev;		/* the starting dir's filesystem */
	size_t max_entries;
	size_t entries;		/* entries examined (the cap's measure) */
	int max_depth;		/* dirs at this depth are counted but not entered */
	bool count_dirs;	/* fs.DiskUsage counts dirs; log stats count files only */
	bool capped;		/* max_entries reached: the walk stopped */
	bool too_deep;		/* dirs past DISK_WALK_MAX_DEPTH were left out */
	int64_t bytes, inodes;
	struct inode_set *links;
};

static void walk_account(struct disk_walk *walk, const struct stat *st)
{
	if (S_ISDIR(st->st_mode) && !walk->count_dirs)
		return;
	/* Dedupe what may be hard links, as fs.DiskUsage does (nlink > 1). */
	if (!S_ISDIR(st->st_mode) && st->st_nlink > 1 &&
	    !inode_set_add(walk->links, (uint64_t)st->st_dev, (uint64_t)st->st_ino))
		return;
	walk->bytes = disk_add(walk->bytes, (int64_t)st->st_blocks * 512);
	walk->inodes = disk_add(walk->inodes, 1);
}

/* Walk the open dir fd (consumed) at depth `depth` (the starting dir is 0). */
static void walk_dir(struct disk_walk *walk, int fd, int depth)
{
	struct dirent *entry;
	DIR *d = fdopendir(fd);

	if (!d) {
		close(fd);
		return;
	}
	while (!walk->capped && (entry = readdir(d))) {
		struct stat st, opened;
		int child;

		if (entry->d_name[0] == '.' && (!entry->d_name[1] ||
						 (entry->d_name[1] == '.' && !entry->d_name[2])))
			continue;
		if (walk->entries >= walk->max_entries) {
			walk->capped = true;
			break;
		}
		walk->entries++;
		/* Gone since readdir: fine, as for the kubelet. Never follow a symlink. */
		if (fstatat(dirfd(d), entry->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		/* Another filesystem mounted here: neither counted nor entered. */
		if (st.st_dev != walk->dev)
			continue;
		walk_account(walk, &st);
		if (!S_ISDIR(st.st_mode) || depth + 1 >= walk->max_depth) {
			if (S_ISDIR(st.st_mode) && walk->max_depth >= DISK_WALK_MAX_DEPTH)
				walk->too_deep = true;	/* not followed: say so */
			continue;
		}
		child = openat(dirfd(d), entry->d_name,
			       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (child < 0)
			continue;
		/* Swapped for something else since the fstatat: skip it. */
		if (fstat(child, &opened) || opened.st_dev != st.st_dev || opened.st_ino != st.st_ino) {
			close(child);
			continue;
		}
		walk_dir(walk, child, depth + 1);
	}
	closedir(d);
}

struct disk_ctx {
	struct pods *pods;
	size_t max_entries;
	struct inode_set links;		/* per pod */
	struct pods_disk_report *report;
};

/* Walk the tree at dir_fd/name. count_dirs: dirs count, the starting one too (fs.DiskUsage).
 * skip_memory: a memory-backed filesystem is skipped (returns 1). Adds to *bytes, *inodes. */
static int walk_tree(struct disk_ctx *ctx, int dir_fd, const char *name, const char *path_for_log,
		     int max_depth, bool count_dirs, bool skip_memory, int64_t *bytes, int64_t *inodes)
{
	struct disk_walk walk = {
		.max_entries = ctx->max_entries,
		.max_depth = max_depth,
		.count_dirs = count_dirs,
		.links = &ctx->links,
	};
	struct statfs sfs;
	struct stat st;
	int fd;

	fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		close(fd);
		return -errno;
	}
	if (skip_memory && fstatfs(fd, &sfs) == 0 &&
	    ((unsigned long)sfs.f_type == DISK_TMPFS_MAGIC ||
	     (unsigned long)sfs.f_type == DISK_RAMFS_MAGIC ||
	     (unsigned long)sfs.f_type == DISK_HUGETLBFS_MAGIC)) {
		close(fd);
		ctx->report->memory_volumes_skipped++;
		return 1;
	}
	walk.dev = st.st_dev;
	if (count_dirs)
		walk_account(&walk, &st);
	ctx->report->walks++;
	walk_dir(&walk, fd, 0);
	if (walk.capped || walk.too_deep) {
		ctx->report->capped_walks++;
		log_msg(first_time(ctx->pods, "disk-walk-capped", path_for_log) ? LOGLEVEL_WARN :
										  LOGLEVEL_DEBUG,
			"pods: %s: stopped counting after %zu entries (limit %zu, depth limit %d); "
			"its disk use is under-counted", path_for_log, walk.entries, walk.max_entries,
			DISK_WALK_MAX_DEPTH);
	}
	*bytes = disk_add(*bytes, walk.bytes);
	*inodes = disk_add(*inodes, walk.inodes);
	return 0;
}

/* The pod's local volumes under <kubelet>/pods/<uid>/volumes. */
static void measure_volumes(struct disk_ctx *ctx, const char *kubelet_dir, struct pod *pod)
{
	for (size_t p = 0; p < sizeof(local_volume_plugins) / sizeof(local_volume_plugins[0]); p++) {
		char dir[PATH_MAX], path[PATH_MAX];
		struct dirent *entry;
		DIR *d;
		int fd;

		if (snprintf(dir, sizeof(dir), "%s/pods/%s/volumes/%s", kubelet_dir, pod->uid,
			     local_volume_plugins[p]) >= (int)sizeof(dir))
			continue;
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;	/* the pod has no volume of this kind */
		d = fdopendir(fd);
		if (!d) {
			close(fd);
			continue;
		}
		while ((entry = readdir(d))) {
			if (entry->d_name[0] == '.' && (!entry->d_name[1] ||
							 (entry->d_name[1] == '.' && !entry->d_name[2])))
				continue;
			/* A symlink or file here is no volume: openat(O_NOFOLLOW|O_DIRECTORY) fails. */
			if (snprintf(path, sizeof(path), "%s/%s", dir, entry->d_name) >= (int)sizeof(path))
				path[sizeof(path) - 1] = '\0';	/* only names it in messages */
			walk_tree(ctx, dirfd(d), entry->d_name, path, DISK_WALK_MAX_DEPTH, true, true,
				  &pod->disk_bytes.volumes, &pod->disk_inodes.volumes);
		}
		closedir(d);
	}
}

static int cmp_pod_uid(const void *a, const void *b)
{
	return strcmp((*(struct pod *const *)a)->uid, (*(struct pod *const *)b)->uid);
}

static struct pod *find_pod_by_uid(struct pod **sorted, size_t n, const char *uid)
{
	struct pod key, *keyp = &key, **found;

	if (strlen(uid) >= sizeof(key.uid))
		return NULL;
	strcpy(key.uid, uid);
	found = bsearch(&keyp, sorted, n, sizeof(*sorted), cmp_pod_uid);
	return found ? *found : NULL;
}

/* <log_dir>/<namespace>_<name>_<uid>/: files in it and in its container dirs
 * (kuberuntime BuildPodLogsDirectory / BuildContainerLogsDirectory). */
static void measure_logs(struct disk_ctx *ctx, const char *log_dir, struct pod **sorted, size_t n)
{
	struct dirent *entry;
	DIR *d;
	int fd;

	fd = open(log_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		if (first_time(ctx->pods, "disk-log-dir", log_dir))
			log_msg(errno == ENOENT ? LOGLEVEL_INFO : LOGLEVEL_WARN,
				"pods: pod log dir %s: %m; container logs count 0 in disk ranking",
				log_dir);
		return;
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((entry = readdir(d))) {
		const char *uid = strrchr(entry->d_name, '_');
		char path[PATH_MAX];
		struct pod *pod;

		/* UIDs hold no '_'; namespaces and names cannot either (DNS labels). */
		if (!uid || uid == entry->d_name || !(pod = find_pod_by_uid(sorted, n, uid + 1)))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", log_dir, entry->d_name) >= (int)sizeof(path))
			path[sizeof(path) - 1] = '\0';	/* only names it in messages */
		inode_set_clear(&ctx->links);
		/* Depth 2: the pod dir's files, its container dirs' files; no dirs counted. */
		walk_tree(ctx, dirfd(d), entry->d_name, path, 2, false, false, &pod->disk_bytes.logs,
			  &pod->disk_inodes.logs);
	}
	closedir(d);
}

/* The absolute path of an executable `name` in $PATH (empty entries skipped: a root daemon
 * does not run things from its working dir). */
static int resolve_in_path(const char *name, char *buf, size_t len)
{
	const char *path_env = getenv("PATH"), *dir;

	if (strchr(name, '/')) {
		if (snprintf(buf, len, "%s", name) >= (int)len)
			return -ENAMETOOLONG;
		return access(buf, X_OK) ? -errno : 0;
	}
	if (!path_env)
		return -ENOENT;
	for (dir = path_env; ; ) {
		const char *end = strchr(dir, ':');
		size_t n = end ? (size_t)(end - dir) : strlen(dir);

		if (n && (size_t)snprintf(buf, len, "%.*s/%s", (int)n, dir, name) < len &&
		    access(buf, X_OK) == 0)
			return 0;
		if (!end)
			return -ENOENT;
		dir = end + 1;
	}
}

/*
 * Run argv (argv[0] an absolute path) without a shell, stdin /dev/null, in its own process
 * group; collect stdout (up to max_out bytes, NUL-terminated, caller frees) and the tail of
 * stderr. Killed (the whole group) at the deadline. Returns 0 with *status (exit code or
 * 128 + signal), -ETIMEDOUT, -E2BIG (output over max_out: killed), or negative errno.
 */
static int run_capture(char *const argv[], int64_t timeout_ns, size_t max_out, char **out,
		       size_t *out_len, char *err_tail, size_t err_len, int *status)
{
	posix_spawn_file_actions_t actions;
	posix_spawnattr_t attr;
	int out_pipe[2] = { -1, -1 }, err_pipe[2] = { -1, -1 };
	int64_t deadline = monotonic_ns() + timeout_ns;
	size_t len = 0, cap = 0, tail = 0;
	char *buf = NULL;
	int err = 0, wstatus = 0;
	bool reaped = false;
	pid_t pid;

	*out = NULL;
	*out_len = 0;
	if (err_len)
		err_tail[0] = '\0';
	if (pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC)) {
		err = -errno;
		goto close_pipes;
	}
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
	posix_spawnattr_init(&attr);
	/* Own process group: a timeout kills whatever it started too. Default signal
	 * dispositions and an empty mask, whatever the daemon blocks or ignores. */
	{
		sigset_t none, all;

		sigemptyset(&none);
		sigfillset(&all);
		posix_spawnattr_setsigmask(&attr, &none);
		posix_spawnattr_setsigdefault(&attr, &all);
	}
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
					POSIX_SPAWN_SETSIGDEF);
	err = -posix_spawn(&pid, argv[0], &actions, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	posix_spawnattr_destroy(&attr);
	if (err)
		goto close_pipes;
	close(out_pipe[1]);
	close(err_pipe[1]);
	out_pipe[1] = err_pipe[1] = -1;

	while (out_pipe[0] >= 0 || err_pipe[0] >= 0 || !reaped) {
		struct pollfd pfds[2] = {
			{ .fd = out_pipe[0], .events = POLLIN },
			{ .fd = err_pipe[0], .events = POLLIN },
		};
		int64_t remaining = deadline - monotonic_ns();
		char chunk[4096];

		if (remaining <= 0) {
			err = -ETIMEDOUT;
			break;
		}
		if (out_pipe[0] < 0 && err_pipe[0] < 0) {
			/* Both pipes closed: wait for the exit, still bounded by the deadline. */
			pid_t r = waitpid(pid, &wstatus, WNOHANG);

			if (r == pid || (r < 0 && errno != EINTR)) {
				reaped = true;
				if (r < 0)
					err = -ECHILD;
				break;
			}
			usleep(remaining > 10000000 ? 10000 : (useconds_t)(remaining / 1000 + 1));
			continue;
		}
		if (poll(pfds, 2, (int)(remaining / 1000000 + 1)) < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (pfds[0].revents) {
			ssize_t n;

			if (cap - len < sizeof(chunk) + 1) {
				size_t grown = cap ? cap * 2 : 65536;
				char *next;

				if (grown > max_out + sizeof(chunk) + 1)
					grown = max_out + sizeof(chunk) + 1;
				next = grown > cap ? realloc(buf, grown) : NULL;
				if (!next) {
					err = grown > cap ? -ENOMEM : -E2BIG;
					break;
				}
				buf = next;
				cap = grown;
			}
			n = read(out_pipe[0], buf + len, sizeof(chunk));
			if (n > 0) {
				len += (size_t)n;
				if (len > max_out) {
					err = -E2BIG;
					break;
				}
			} else if (n == 0 || errno != EINTR) {
				close(out_pipe[0]);
				out_pipe[0] = -1;
			}
		}
		if (pfds[1].revents) {
			ssize_t n = read(err_pipe[0], chunk, sizeof(chunk));

			if (n > 0 && err_len > 1) {
				/* Keep the last err_len - 1 bytes. */
				size_t keep = (size_t)n < err_len - 1 ? (size_t)n : err_len - 1;

				if (tail + keep > err_len - 1) {
					size_t drop = tail + keep - (err_len - 1);

					memmove(err_tail, err_tail + drop, tail - drop);
					tail -= drop;
				}
				memcpy(err_tail + tail, chunk + n - keep, keep);
				tail += keep;
				err_tail[tail] = '\0';
			} else if (n == 0 || (n < 0 && errno != EINTR)) {
				close(err_pipe[0]);
				err_pipe[0] = -1;
			}
		}
	}
	if (!reaped) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
			;
	}
	if (!err) {
		*status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) :
			  WIFSIGNALED(wstatus) ? 128 + WTERMSIG(wstatus) : 255;
		if (!buf)
			buf = malloc(1);
		if (!buf) {
			err = -ENOMEM;
		} else {
			buf[len] = '\0';
			*out = buf;
			*out_len = len;
			buf = NULL;
		}
	}
close_pipes:
	for (int i = 0; i < 2; i++) {
		if (out_pipe[i] >= 0)
			close(out_pipe[i]);
		if (err_pipe[i] >= 0)
			close(err_pipe[i]);
	}
	free(buf);
	return err;
}

/* A CRI UInt64Value ({"value": "123"}: protojson writes 64-bit integers as strings; older
 * jsonpb builds may write numbers). Absent = 0; anything else = -EINVAL. */
static int cri_uint64(struct json_object *parent, const char *camel, const char *snake, int64_t *out)
{
	struct json_object *wrapper = NULL, *value = NULL;

	*out = 0;
	if ((!json_object_object_get_ex(parent, camel, &wrapper) || !wrapper) &&
	    (!json_object_object_get_ex(parent, snake, &wrapper) || !wrapper))
		return 0;
	if (!json_object_is_type(wrapper, json_type_object))
		return -EINVAL;
	if (!json_object_object_get_ex(wrapper, "value", &value) || !value)
		return 0;	/* EmitDefaults of a zero wrapper: {} or value absent */
	if (json_object_is_type(value, json_type_int)) {
		int64_t v = json_object_get_int64(value);

		if (v < 0 || v == INT64_MAX)
			return -EINVAL;
		*out = v;
		return 0;
	}
	if (json_object_is_type(value, json_type_string))
		return parse_u64_text(json_object_get_string(value), out);
	return -EINVAL;
}

/* Add each container's writable layer to its pod. Returns the containers attributed, or
 * -EINVAL when the document is not a ListContainerStatsResponse. */
static int apply_crictl_stats(const char *json, size_t len, struct pod **sorted, size_t n)
{
	struct json_object *doc, *stats;
	struct json_tokener *tok;
	int attributed = 0;
	size_t end;

	if (len > INT32_MAX)
		return -EINVAL;
	tok = json_tokener_new_ex(32);
	if (!tok)
		return -ENOMEM;
	doc = json_tokener_parse_ex(tok, json, (int)len);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	while (doc && end < len && (json[end] == ' ' || json[end] == '\n' || json[end] == '\r' ||
				    json[end] == '\t'))
		end++;
	if (!doc || end < len || !json_object_is_type(doc, json_type_object)) {
		json_object_put(doc);
		return -EINVAL;
	}
	/* No container at all: {"stats": []}, or {} when nothing was emitted. */
	if (!json_object_object_get_ex(doc, "stats", &stats) || !stats) {
		json_object_put(doc);
		return 0;
	}
	if (!json_object_is_type(stats, json_type_array)) {
		json_object_put(doc);
		return -EINVAL;
	}
	for (size_t i = 0; i < json_object_array_length(stats); i++) {
		struct json_object *item = json_object_array_get_idx(stats, i);
		struct json_object *attributes, *labels, *uid, *layer = NULL;
		int64_t used, inodes;
		struct pod *pod;

		if (!json_object_is_type(item, json_type_object) ||
		    !json_object_object_get_ex(item, "attributes", &attributes) ||
		    !json_object_is_type(attributes, json_type_object) ||
		    !json_object_object_get_ex(attributes, "labels", &labels) ||
		    !json_object_is_type(labels, json_type_object) ||
		    !json_object_object_get_ex(labels, "io.kubernetes.pod.uid", &uid) ||
		    !json_object_is_type(uid, json_type_string))
			continue;	/* not a Kubernetes container */
		pod = find_pod_by_uid(sorted, n, json_object_get_string(uid));
		if (!pod)
			continue;
		if ((!json_object_object_get_ex(item, "writableLayer", &layer) || !layer) &&
		    (!json_object_object_get_ex(item, "writable_layer", &layer) || !layer)) {
			attributed++;	/* the runtime reports no layer: 0, as for the kubelet */
			continue;
		}
		if (!json_object_is_type(layer, json_type_object) ||
		    cri_uint64(layer, "usedBytes", "used_bytes", &used) ||
		    cri_uint64(layer, "inodesUsed", "inodes_used", &inodes)) {
			json_object_put(doc);
			return -EINVAL;
		}
		pod->disk_bytes.writable = disk_add(pod->disk_bytes.writable, used);
		pod->disk_inodes.writable = disk_add(pod->disk_inodes.writable, inodes);
		attributed++;
	}
	json_object_put(doc);
	return attributed;
}

static void crictl_failed(struct pods *pods, const char *what, const char *detail)
{
	char key[320];

	snprintf(key, sizeof(key), "%s|%s", what, detail);
	log_msg(first_time(pods, "crictl-failed", key) ? LOGLEVEL_WARN : LOGLEVEL_DEBUG,
		"pods: %s%s%s; containers' writable layers count 0 in disk ranking", what,
		detail[0] ? ": " : "", detail);
}

static void measure_writable(struct pods *pods, const struct pods_disk_options *options,
			     struct pod **sorted, size_t n, struct pods_disk_report *report)
{
	const char *name = options->crictl ? options->crictl : "crictl";
	char path[PATH_MAX], err_tail[256], what[PATH_MAX + 64];
	char *argv[8], *out = NULL;
	size_t argc = 0, out_len = 0;
	int status = 0, err;

	if (!name[0]) {
		report->crictl_status = -ENOENT;	/* asked not to */
		return;
	}
	err = resolve_in_path(name, path, sizeof(path));
	if (err) {
		report->crictl_status = -ENOENT;
		if (first_time(pods, "crictl-missing", name))
			log_warn("pods: %s %s; containers' writable layers count 0 in disk ranking",
				 name, strchr(name, '/') ? "is not executable" : "is not in PATH");
		return;
	}
	argv[argc++] = path;
	if (options->runtime_endpoint && options->runtime_endpoint[0]) {
		argv[argc++] = (char *)"--runtime-endpoint";
		argv[argc++] = (char *)options->runtime_endpoint;
	}
	argv[argc++] = (char *)"stats";
	argv[argc++] = (char *)"-o";
	argv[argc++] = (char *)"json";
	argv[argc] = NULL;
	snprintf(what, sizeof(what), "%s stats -o json", path);

	err = run_capture(argv, options->crictl_timeout_ns > 0 ? options->crictl_timeout_ns :
								 PODS_CRICTL_DEFAULT_TIMEOUT_NS,
			  PODS_CRICTL_MAX_OUTPUT, &out, &out_len, err_tail, sizeof(err_tail), &status);
	for (char *p = err_tail; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	for (size_t len = strlen(err_tail); len && err_tail[len - 1] == ' '; )
		err_tail[--len] = '\0';
	if (err) {
		report->crictl_status = err;
		crictl_failed(pods, what, err == -ETIMEDOUT ? "timed out and was killed" :
					   err == -E2BIG ? "output too large" : strerror(-err));
		return;
	}
	if (status) {
		char detail[320];

		report->crictl_status = status;
		snprintf(detail, sizeof(detail), "exited %d%s%s", status, err_tail[0] ? ": " : "",
			 err_tail);
		crictl_failed(pods, what, detail);
		free(out);
		return;
	}
	err = apply_crictl_stats(out, out_len, sorted, n);
	free(out);
	if (err < 0) {
		/* Half-applied sums are no use: all writable layers back to 0. */
		for (size_t i = 0; i < n; i++)
			sorted[i]->disk_bytes.writable = sorted[i]->disk_inodes.writable = 0;
		report->crictl_status = err;
		crictl_failed(pods, what, err == -EINVAL ? "output is not a container stats JSON "
							   "document" : strerror(-err));
		return;
	}
	report->crictl_status = 0;
	report->crictl_containers = (size_t)err;
}

int pods_read_disk_usage(struct pods *pods, const struct pods_disk_options *options)
{
	static const struct pods_disk_options defaults;
	struct pods_disk_report scratch;
	char kubelet_dir[PATH_MAX], log_dir[PATH_MAX];
	struct disk_ctx ctx = { 0 };
	struct pod **sorted = NULL;
	unsigned int parts;
	int64_t start = monotonic_ns();
	size_t n = 0;
	int err;

	if (!pods)
		return -EINVAL;
	if (!options)
		options = &defaults;
	ctx.pods = pods;
	ctx.report = options->report ? options->report : &scratch;
	memset(ctx.report, 0, sizeof(*ctx.report));
	ctx.report->crictl_status = 1;
	ctx.max_entries = options->max_entries ? options->max_entries : PODS_DISK_MAX_ENTRIES;
	parts = options->parts ? options->parts : PODS_DISK_ALL;

	for (size_t i = 0; i < pods->n_items; i++) {
		memset(&pods->items[i].disk_bytes, 0, sizeof(pods->items[i].disk_bytes));
		memset(&pods->items[i].disk_inodes, 0, sizeof(pods->items[i].disk_inodes));
	}
	if (pods->standalone || !pods->n_items)
		goto out;

	err = join_path(kubelet_dir, sizeof(kubelet_dir), pods->root,
			options->kubelet_dir && options->kubelet_dir[0] ? options->kubelet_dir :
									    PODS_DEFAULT_KUBELET_DIR);
	if (!err)
		err = join_path(log_dir, sizeof(log_dir), pods->root,
				options->log_dir && options->log_dir[0] ? options->log_dir :
									PODS_DEFAULT_LOG_DIR);
	if (err) {
		log_err("pods: kubelet or pod log dir path too long; disk use not measured");
		goto out;
	}
	sorted = malloc(pods->n_items * sizeof(*sorted));
	if (!sorted) {
		log_err("pods: out of memory measuring disk use");
		goto out;
	}
	for (size_t i = 0; i < pods->n_items; i++)
		sorted[n++] = &pods->items[i];
	qsort(sorted, n, sizeof(*sorted), cmp_pod_uid);
	ctx.report->pods = n;

	for (size_t i = 0; i < n && (parts & PODS_DISK_VOLUMES); i++) {
		/* Hard links are counted once per pod: a pod's volumes may share inodes. */
		inode_set_clear(&ctx.links);
		measure_volumes(&ctx, kubelet_dir, sorted[i]);
	}
	/* Log dirs are walked in directory order, each with a fresh set: a hard link between
	 * a pod's volumes and its logs would count twice (the kubelet dedupes only within
	 * one volume, and within one log file). */
	if (parts & PODS_DISK_LOGS)
		measure_logs(&ctx, log_dir, sorted, n);
	if (parts & PODS_DISK_WRITABLE)
		measure_writable(pods, options, sorted, n, ctx.report);
out:
	free(ctx.links.slots);
	free(sorted);
	ctx.report->elapsed_ns = monotonic_ns() - start;
	return 0;
}
