// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Per-container memory use for the eviction message (helpers.go evictionMessage): the
 * kubelet compares each container's working set (podStats.Containers[].Memory
 * .WorkingSetBytes, cAdvisor: usage - inactive_file) with its memory request and names the
 * ones above it. The container cgroups are the children of the pod cgroup; their names carry
 * the runtime's container id (containerd/CRI-O/docker with the systemd driver:
 * "<runtime>-<id>.scope"; the cgroupfs driver: "<id>").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pods/containers.h"
#include "pods/internal.h"
#include "sys/cgroupfs.h"
#include "sys/fileio.h"
#include "sys/log.h"

int container_id_from_cgroup(const char *name, char *id, size_t len)
{
	static const char *const prefixes[] = { "cri-containerd-", "crio-", "docker-", "libpod-" };
	size_t name_len = strlen(name), start = 0, end = name_len;

	if (!name_len)
		return -EINVAL;
	if (name_len > 6 && !strcmp(name + name_len - 6, ".scope")) {
		end = name_len - 6;
		for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
			if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
				start = strlen(prefixes[i]);
		/* CRI-O's conmon scope is the monitor, not a container. */
		if (!start || !strncmp(name, "crio-conmon-", 12))
			return -EINVAL;
	}
	if (end <= start || end - start >= len)
		return -EINVAL;
	memcpy(id, name + start, end - start);
	id[end - start] = '\0';
	return 0;
}

static int read_working_set_at(int dir_fd, int64_t *working_set)
{
	char stat_buf[8192];
	int64_t current, inactive = 0;
	ssize_t n;
	int err;

	err = cgroupfs_read_i64_at(dir_fd, "memory.current", &current);
	if (err)
		return err;
	n = fileio_read_at(dir_fd, "memory.stat", stat_buf, sizeof(stat_buf));
	/* cAdvisor subtracts nothing when inactive_file is missing. */
	if (n < 0 || cgroupfs_keyed_value(stat_buf, "inactive_file", &inactive) < 0)
		inactive = 0;
	*working_set = current > inactive ? current - inactive : 0;
	return 0;
}

int pod_containers_read_at(int pod_dir_fd, struct container_usage *out, size_t max)
{
	int fd = openat(pod_dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *entry;
	size_t n = 0;
	DIR *dir;

	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		int err = -errno;

		close(fd);
		return err;
	}
	while (n < max && (entry = readdir(dir))) {
		struct container_usage *usage = &out[n];
		int child;

		if (entry->d_type != DT_DIR && entry->d_type != DT_UNKNOWN)
			continue;
		if (entry->d_name[0] == '.' ||
		    container_id_from_cgroup(entry->d_name, usage->id, sizeof(usage->id)))
			continue;
		child = openat(dirfd(dir), entry->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (child < 0)
			continue;	/* gone meanwhile, or not a directory */
		if (!read_working_set_at(child, &usage->working_set))
			n++;
		close(child);
	}
	closedir(dir);
	return (int)n;
}

/* "containerd://abc" -> "abc"; "abc" -> "abc". */
static const char *bare_id(const char *container_id)
{
	const char *sep = container_id ? strstr(container_id, "://") : NULL;

	return sep ? sep + 3 : container_id;
}

size_t containers_match(const struct container_usage *usages, size_t n_usages,
			const struct container_spec *specs, size_t n_specs,
			const char **out_name, int64_t *out_usage, int64_t *out_request, size_t max)
{
	size_t n = 0;

	for (size_t s = 0; s < n_specs && n < max; s++) {
		const char *id = bare_id(specs[s].container_id);

		if (!id || !*id || !specs[s].name)
			continue;
		for (size_t u = 0; u < n_usages; u++) {
			if (strcmp(usages[u].id, id))
				continue;
			out_name[n] = specs[s].name;
			out_usage[n] = usages[u].working_set;
			out_request[n] = specs[s].memory_request;
			n++;
			break;
		}
	}
	return n;
}

size_t pod_container_usage(const struct pod *pod, const char **names, int64_t *usage,
			   int64_t *request, size_t max)
{
	struct container_usage usages[POD_MAX_CONTAINERS];
	struct container_spec specs[POD_MAX_NAMED_CONTAINERS];
	int fd, n;

	if (!pod || !pod->n_containers)
		return 0;
	fd = open(pod->cgroup_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		log_debug("containers of %s: %m", pod->cgroup_path);
		return 0;
	}
	n = pod_containers_read_at(fd, usages, POD_MAX_CONTAINERS);
	close(fd);
	if (n <= 0)
		return 0;
	for (size_t i = 0; i < pod->n_containers && i < POD_MAX_NAMED_CONTAINERS; i++)
		specs[i] = (struct container_spec){ .name = pod->containers[i].name,
						    .container_id = pod->containers[i].id,
						    .memory_request = pod->containers[i].memory_request };
	return containers_match(usages, (size_t)n, specs, pod->n_containers, names, usage, request, max);
}
