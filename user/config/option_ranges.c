// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The accepted range of every duration, seconds and count option (doc/DESIGN.md §9: a bad
 * value is one line and exit 2), by the field it sets. Split from options.c, the table. */
#include <stddef.h>

#include "config/options.h"

/* The range of each duration and seconds option, by field (doc/evictd.8 lists the same). */
static const struct {
	size_t offset;
	struct option_range range;
} option_ranges[] = {
	{ offsetof(struct evictd_config, eviction_soft_grace_period),
	  { 0, DAY_NS, false, "a duration from 0s to 24h" } },
	{ offsetof(struct evictd_config, max_pod_grace_period_s),
	  { 0, DAY_S, false, "0 to 86400 seconds (24h)" } },
	{ offsetof(struct evictd_config, hard_eviction_grace_ns),
	  { 0, DAY_NS, false, "a duration from 0s to 24h" } },
	{ offsetof(struct evictd_config, pressure_transition_period_ns),
	  { 0, DAY_NS, false, "a duration from 0s to 24h" } },
	{ offsetof(struct evictd_config, housekeeping_interval_ns),
	  { 100 * NS_PER_MS, DAY_NS, false, "a duration from 100ms to 24h" } },
	/* pkg/kubelet/apis/config/validation ValidateKubeletConfiguration: "shutdownGracePeriod %v
	 * must be either zero or otherwise >= 1 sec", the same for the critical pods' part. */
	{ offsetof(struct evictd_config, shutdown_grace_period_ns),
	  { NS_PER_S, DAY_NS, true, "0, or a duration from 1s to 24h" } },
	{ offsetof(struct evictd_config, shutdown_grace_period_critical_pods_ns),
	  { NS_PER_S, DAY_NS, true, "0, or a duration from 1s to 24h" } },
	{ offsetof(struct evictd_config, shutdown_groups),
	  { 0, DAY_S, false, "0 to 86400 seconds (24h) per priority" } },
	{ offsetof(struct evictd_config, kill_timeout_ns),
	  { 100 * NS_PER_MS, DAY_NS, false, "a duration from 100ms to 24h" } },
	{ offsetof(struct evictd_config, on_evict_timeout_ns),
	  { 100 * NS_PER_MS, 10 * 60 * NS_PER_S, false, "a duration from 100ms to 10m" } },
	{ offsetof(struct evictd_config, warn_interval_ns),
	  { NS_PER_S, DAY_NS, false, "a duration from 1s to 24h" } },
	/* More than a minute ahead, a rate measured over AHEAD_WINDOW_NS (10 s) says little. */
	{ offsetof(struct evictd_config, warn_ahead_ns),
	  { 100 * NS_PER_MS, 60 * 60 * NS_PER_S, true, "0 (off), or a duration from 100ms to 1h" } },
	{ offsetof(struct evictd_config, act_ahead_ns),
	  { 100 * NS_PER_MS, 60 * NS_PER_S, true, "0 (off), or a duration from 100ms to 1m" } },
	{ offsetof(struct evictd_config, kube_pods_refresh_ns),
	  { NS_PER_S, DAY_NS, false, "a duration from 1s to 24h" } },
	{ offsetof(struct evictd_config, kube_eviction_status_wait_ns),
	  { 0, 30 * NS_PER_S, false, "a duration from 0s to 30s" } },
	{ offsetof(struct evictd_config, kube_hard_eviction_status_wait_ns),
	  { 0, 30 * NS_PER_S, false, "a duration from 0s to 30s" } },
	{ offsetof(struct evictd_config, event_log_max_size),
	  { 4096, 1LL << 40, true, "0 (no cap) or 4Ki to 1Ti" } },
	{ offsetof(struct evictd_config, event_log_max_files),
	  { 0, 100, false, "0 to 100" } },
	/* sched_get_priority_max(SCHED_FIFO) is 99 on Linux (kernel/sched/syscalls.c). */
	{ offsetof(struct evictd_config, realtime_priority),
	  { 0, 99, false, "0 (off) to 99" } },
};

const struct option_range *option_range_of(const struct option_spec *spec)
{
	for (size_t i = 0; i < sizeof(option_ranges) / sizeof(option_ranges[0]); i++)
		if (spec->size && option_ranges[i].offset == spec->offset)
			return &option_ranges[i].range;
	return NULL;
}
