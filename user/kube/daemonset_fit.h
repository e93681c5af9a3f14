/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Whether the DaemonSet controller would create a DaemonSet's pod on a Node, and whether only
 * evictd's pressure taints stop it (doc/DESIGN.md §8 "Pressure taints"). Pure: JSON in, an
 * answer out, no I/O.
 *
 * A port of kubernetes pkg/controller/daemon/daemon_controller.go NodeShouldRunDaemonPod
 * (shouldRun) with its predicates and NewPod: the template's spec.nodeName; the required node
 * affinity of k8s.io/component-helpers/scheduling/corev1/nodeaffinity GetRequiredNodeAffinity
 * (spec.nodeSelector ANDed with requiredDuringSchedulingIgnoredDuringExecution, whose
 * nodeSelectorTerms are ORed, a term ANDing its matchExpressions on labels and matchFields on
 * metadata.name; an empty or invalid term matches nothing); and the Node's NoSchedule and
 * NoExecute taints against the template's tolerations plus those the controller adds
 * (pkg/controller/daemon/util/daemonset_util.go AddOrUpdateDaemonPodTolerations), matched as
 * k8s.io/api/core/v1/toleration.go ToleratesTaint does (component-helpers
 * scheduling/corev1 FindMatchingUntoleratedTaint).
 */
#ifndef EVICTD_KUBE_DAEMONSET_FIT_H
#define EVICTD_KUBE_DAEMONSET_FIT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

enum daemonset_fit {
	DAEMONSET_RUNS,		/* shouldRun with every taint the Node carries */
	DAEMONSET_EXCLUDED,	/* not here whatever evictd does: name, affinity, another taint */
	DAEMONSET_BLOCKED,	/* shouldRun only without evictd's taints (the ignored keys) */
};

/*
 * ds: an apps/v1 DaemonSet; node: a v1 Node. ours: the NoSchedule taint keys evictd holds or
 * is about to set: "with" them is as if the Node carried each, "without" as if it carried
 * none, whatever its spec.taints say of them now. A malformed object is DAEMONSET_EXCLUDED (evictd then
 * never lifts a taint for it).
 */
enum daemonset_fit daemonset_fit(struct json_object *ds, struct json_object *node, const char *const *ours,
				 size_t n_ours);

struct daemonset_blocked {
	char uid[64];		/* metadata.uid: the pods' controller ownerReference */
	char name[320];		/* namespace/name, for the log */
};

/*
 * The DaemonSets of a DaemonSetList (JSON) that are DAEMONSET_BLOCKED on the Node (JSON): at
 * most max into out, *n gets how many were found (maybe more than max). Returns 0, or -EINVAL
 * when either document is not what it should be.
 */
int daemonset_blocked_list(const char *list_json, const char *node_json, const char *const *ours, size_t n_ours,
			   struct daemonset_blocked *out, size_t max, size_t *n);

#endif
