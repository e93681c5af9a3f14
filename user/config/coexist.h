/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* evictd beside the kubelet on one node (doc/DESIGN.md §9): compare evictd's configuration
 * with the kubelet's (read-only, --kubelet-config) and say at start what would clash: both
 * running graceful shutdown, or an evictd threshold that is not above the kubelet's, so that
 * the kubelet would evict first. */
#ifndef EVICTD_CONFIG_COEXIST_H
#define EVICTD_CONFIG_COEXIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

enum coexist_kind {
	COEXIST_SHUTDOWN_BOTH,		/* both own graceful shutdown (warning) */
	COEXIST_SHUTDOWN_NEITHER,	/* neither does (info) */
	COEXIST_NOT_ABOVE,		/* the kubelet's threshold would be met first (warning) */
	COEXIST_KUBELET_ONLY,		/* evictd has no threshold on the kubelet's signal (info) */
	COEXIST_UNCOMPARABLE,		/* a quantity against a percentage, capacity unknown (info) */
};

struct coexist_finding {
	enum coexist_kind kind;
	struct threshold kubelet;	/* the kubelet's threshold (threshold kinds) */
	struct threshold evictd;	/* evictd's nearest one on that signal, when it has one */
	bool has_evictd;
};

#define COEXIST_MAX_FINDINGS (EV_MAX_THRESHOLDS + 1)

/* Pure comparison of two finalized configurations. For every kubelet threshold, evictd must
 * have one on the same signal that is met earlier and acted on no later: a higher value and a
 * grace period no longer (a hard threshold has none). capacity[signal] resolves a quantity
 * against a percentage (0: unknown). Returns the number of findings written (<= max). */
size_t coexist_compare(const struct evictd_config *evictd, const struct evictd_config *kubelet,
		       const int64_t capacity[EV_SIGNAL_COUNT], struct coexist_finding *out, size_t max);

/* One line for a finding; whether it is a warning (clash) or information. */
int coexist_format(const struct coexist_finding *finding, char *buf, size_t len);
bool coexist_is_warning(const struct coexist_finding *finding);

/* Read the kubelet's configuration file at path (read-only: KubeletConfiguration, defaults
 * as the kubelet applies them), compare, and log each finding at start. A missing file is
 * logged and skipped. Returns the number of warnings, or a negative errno when the file could
 * not be read or understood. */
int coexist_check_kubelet_file(const struct evictd_config *evictd, const char *path);

/* The kubelet's staticPodPath from its file (--kubelet-config) into config->static_pod_path,
 * when no evictd option nor the running kubelet's flags set it (doc/DESIGN.md §5, "Pod
 * identity"); its source is noted for --validate. 0, or -errno (logged) when the file could
 * not be read: the value then stays. */
int coexist_static_pod_path(struct evictd_config *config);
/* Exactly one owner of graceful node shutdown: when the kubelet's file (--kubelet-config) runs
 * it too (shutdownGracePeriod or shutdownGracePeriodByPodPriority), evictd's is turned off
 * here (logged). An unreadable file changes nothing (logged). */
int coexist_shutdown_owner(struct evictd_config *config);

#endif
