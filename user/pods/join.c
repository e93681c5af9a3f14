// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The join of the discovered pod cgroups with the current metadata list (doc/DESIGN.md §5,
 * "Pods without metadata"): every metadata-derived field of a pod comes from pod_derive. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/log.h"
#include "pods/internal.h"

static const struct pod_meta *find_meta(struct pods *pods, const char *uid)
{
	struct pod_meta key;

	if (!pods->meta.n_items)
		return NULL;
	snprintf(key.cgroup_uid, sizeof(key.cgroup_uid), "%s", uid);
	return bsearch(&key, pods->meta.items, pods->meta.n_items, sizeof(key), pods_cmp_meta_cgroup_uid);
}

/*
 * What the cgroup alone says about a pod: kept across joins. Everything else in struct pod
 * comes from the metadata (or its absence) and is derived afresh by pod_derive.
 */
struct cgroup_facts {
	uint64_t cgroup_id;
	enum pod_qos qos;		/* from the path: where the kubelet actually put the pod */
	int64_t memory_working_set;
	bool working_set_unrefined;
	struct pod_disk_usage disk_bytes, disk_inodes;
	int64_t processes;
	bool processes_unrefined, stats_missing, exited, is_self;
};

/* pod_derive clears [namespace_, cgroup_path) and everything after cgroup_path: uid and
 * cgroup_path, the identity, are the only fields outside those two ranges. */
_Static_assert(offsetof(struct pod, uid) == 0 &&
	       offsetof(struct pod, namespace_) == sizeof(((struct pod *)0)->uid) &&
	       offsetof(struct pod, namespace_) < offsetof(struct pod, cgroup_path),
	       "struct pod: uid first, cgroup_path after the names (pod_derive clears around them)");

/*
 * The one place a Kubernetes pod's metadata-derived fields are set, for the discovery and the
 * in-place refresh alike (doc/DESIGN.md §5, "Pods without metadata"). The pod is first reset
 * to its cgroup facts: every field but the identity and struct cgroup_facts is zeroed, so a
 * flag of an earlier join (meta_unknown, static, mirror, DaemonSet, priority, requests,
 * names, containers, ...) can never linger, including a field added to struct pod later.
 * Then it is filled from meta, or marked meta_unknown when meta is NULL.
 */
static void pod_derive(struct pods *pods, struct pod *pod, const struct pod_meta *meta)
{
	const size_t path_end = offsetof(struct pod, cgroup_path) + sizeof(pod->cgroup_path);
	const struct cgroup_facts facts = {
		.cgroup_id = pod->cgroup_id, .qos = pod->qos,
		.memory_working_set = pod->memory_working_set,
		.working_set_unrefined = pod->working_set_unrefined,
		.disk_bytes = pod->disk_bytes, .disk_inodes = pod->disk_inodes,
		.processes = pod->processes, .processes_unrefined = pod->processes_unrefined,
		.stats_missing = pod->stats_missing, .exited = pod->exited, .is_self = pod->is_self,
	};

	memset((char *)pod + offsetof(struct pod, namespace_), 0,
	       offsetof(struct pod, cgroup_path) - offsetof(struct pod, namespace_));
	memset((char *)pod + path_end, 0, sizeof(*pod) - path_end);
	pod->cgroup_id = facts.cgroup_id;
	pod->qos = facts.qos;
	pod->memory_working_set = facts.memory_working_set;
	pod->working_set_unrefined = facts.working_set_unrefined;
	pod->disk_bytes = facts.disk_bytes;
	pod->disk_inodes = facts.disk_inodes;
	pod->processes = facts.processes;
	pod->processes_unrefined = facts.processes_unrefined;
	pod->stats_missing = facts.stats_missing;
	pod->exited = facts.exited;
	pod->is_self = facts.is_self;

	if (!meta) {
		/* Fails closed (pods.h, doc/DESIGN.md §5): only the OOM guard may take it. */
		pod->meta_unknown = true;
		pod->termination_grace_period_s = -1;
		pod->memory_request = pods_request_from_cgroup(pod);
		snprintf(pod->name, sizeof(pod->name), "%s", strrchr(pod->cgroup_path, '/') + 1);
		if (pods_first_time(pods, "no-meta", pod->uid))
			log_warn("pods: cgroup %s has no pod metadata%s%s; no kubelet threshold "
				 "evicts it, only the OOM guard (as %s, request %" PRId64 " bytes)",
				 pod->cgroup_path, pods->meta_source ? " in " : "",
				 pods->meta_source ? pods->meta_source->name : " (no pods source)",
				 pod_qos_name(pod->qos), pod->memory_request);
		return;
	}
	memcpy(pod->namespace_, meta->namespace_, sizeof(pod->namespace_));
	memcpy(pod->name, meta->name, sizeof(pod->name));
	pod->priority = meta->priority;
	pod->is_static = meta->is_static;
	pod->is_mirror = meta->is_mirror;
	pod->is_daemonset = meta->is_daemonset;
	pod->termination_grace_period_s = meta->termination_grace_period_s;
	pod->memory_request = meta->memory_request;
	pod->ephemeral_storage_request = meta->ephemeral_storage_request;
	memcpy(pod->containers, meta->containers, sizeof(pod->containers));
	pod->n_containers = meta->n_containers;
	/* The path is where the kubelet actually put the pod: it wins. */
	if (meta->qos_known && meta->qos != pod->qos && pods_first_time(pods, "qos-mismatch", pod->uid))
		log_warn("pods: %s/%s: status.qosClass %s but its cgroup %s is %s; using %s",
			 meta->namespace_, meta->name, pod_qos_name(meta->qos),
			 pod->cgroup_path, pod_qos_name(pod->qos), pod_qos_name(pod->qos));
}

/* Every pod is derived from the current list, on every refresh (rediscovery or in place): new
 * metadata is taken at the next evaluation, with or without a change in the cgroup tree. */
void pods_join_metadata(struct pods *pods)
{
	for (size_t i = 0; i < pods->meta.n_items; i++)
		pods->meta.items[i].joined = false;
	/* Pods the list refused alone (podlist.c): one line per pod while it stays refused,
	 * not one per refresh. */
	for (size_t i = 0; i < pods->meta.n_refused && i < POD_REFUSALS_KEPT; i++)
		if (pods_first_time(pods, "refused", pods->meta.refused[i].key))
			log_warn("pods: %s; the rest of the list is kept, its cgroup (if any) is "
				 "without metadata", pods->meta.refused[i].message);

	for (size_t i = 0; i < pods->n_items; i++) {
		struct pod *pod = &pods->items[i];
		struct pod_meta *meta = (struct pod_meta *)find_meta(pods, pod->uid);

		pod_derive(pods, pod, meta);
		if (meta)
			meta->joined = true;
	}

	for (size_t i = 0; i < pods->meta.n_items; i++) {
		const struct pod_meta *meta = &pods->meta.items[i];

		if (meta->joined || !pods_first_time(pods, "no-cgroup", meta->cgroup_uid))
			continue;
		/* Finished pods have no cgroup by design: not worth more than debug. */
		log_msg(meta->terminal ? LOGLEVEL_DEBUG : LOGLEVEL_INFO,
			"pods: %s/%s (uid %s) has no cgroup under %s or %s; skipping it",
			meta->namespace_, meta->name, meta->cgroup_uid, pods->kubepods[0],
			pods->kubepods[1]);
	}
}

