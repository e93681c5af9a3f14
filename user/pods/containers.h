/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Per-container memory use from the container cgroups below a pod cgroup, for the kubelet's
 * eviction message sentences ("Container x was using ...", DESIGN.md §8) and its
 * offending_containers annotations. */
#ifndef EVICTD_PODS_CONTAINERS_H
#define EVICTD_PODS_CONTAINERS_H

#include <stddef.h>
#include <stdint.h>

#include "core/rank.h"

#define POD_MAX_CONTAINERS 32

struct container_usage {
	char id[80];		/* the runtime's container id, from the cgroup name */
	int64_t working_set;	/* bytes: memory.current - inactive_file, floored at 0 */
};

/* What the pod metadata says of one container: its name, the runtime id from
 * status.containerStatuses[].containerID ("containerd://<id>" or just "<id>") and its memory
 * request (0: none). */
struct container_spec {
	const char *name;
	const char *container_id;
	int64_t memory_request;
};

/* Runtime id of a container cgroup name: "cri-containerd-<id>.scope", "crio-<id>.scope",
 * "docker-<id>.scope" (systemd driver) or "<id>" (cgroupfs driver). Returns 0 and writes
 * the id, or -EINVAL for a name that is no container's ("crio-conmon-<id>.scope", empty). */
int container_id_from_cgroup(const char *name, char *id, size_t len);

/* The memory working set of every container cgroup directly below the pod cgroup at
 * pod_dir_fd (a child directory with memory.current). Returns the count (<= max) or -errno.
 * Children that vanish while read are skipped. */
int pod_containers_read_at(int pod_dir_fd, struct container_usage *out, size_t max);

/* Match usages to specs by id (a containerID's "runtime://" prefix ignored), as the kubelet
 * matches podStats.Containers to pod.Spec.Containers by name. For each match, in spec
 * order, *out_name/out_usage/out_request are filled. Returns the number matched (<= max). */
size_t containers_match(const struct container_usage *usages, size_t n_usages,
			const struct container_spec *specs, size_t n_specs,
			const char **out_name, int64_t *out_usage, int64_t *out_request, size_t max);

/* The working set of each of pod's named containers (pod->containers) that has a cgroup
 * below pod->cgroup_path, in spec order: names point into pod. Returns the count (<= max);
 * 0 when the pod's directory cannot be read (logged at debug). */
size_t pod_container_usage(const struct pod *pod, const char **names, int64_t *usage,
			   int64_t *request, size_t max);

#endif
