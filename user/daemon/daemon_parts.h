/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The daemon's parts, one file each, and what they share. Private to user/daemon/.
 *   daemon.c    set-up, the loop's sources (signals, timers, PSI), run and exit
 *   pod_psi.c   a PSI trigger per pod cgroup
 *   disk_usage.c per-pod disk usage measured off the loop
 *   act.c       act on a decision: choose and start evictions, their ends
 *   act_reclaim.c  node-level reclaim before evicting
 *   reload.c    SIGHUP: a new policy built whole, swapped in
 *   daemon_bpf.c, daemon_ops.c, daemon_shutdown.c, daemon_kube.c: the other event sources */
#ifndef EVICTD_DAEMON_PARTS_H
#define EVICTD_DAEMON_PARTS_H

#include "daemon/daemon.h"
#include "ops/eventlog.h"

/* act.c */
/* Evaluate the signals in mask (0 = all) and act on the decision without waiting. */
void daemon_handle(struct daemon *daemon, uint32_t mask);
bool daemon_is_disk_signal(enum ev_signal signal);
bool daemon_is_memory_signal(enum ev_signal signal);
/* act_reclaim.c: true while node-level reclaim is what is done about this threshold (started
 * now or still running), false when it is time to evict. */
bool daemon_reclaim_first(struct daemon *daemon, const struct threshold *threshold, int64_t target);
/* act_reclaim.c: true while the last disk eviction's pod still has volumes on the node (the
 * kubelet tears them down after its cgroup emptied), at most DAEMON_DISK_CLEANUP_WAIT_NS after
 * that eviction: the next disk eviction waits (a retry is armed). */
#define DAEMON_DISK_CLEANUP_WAIT_NS (30ll * 1000000000)
bool daemon_disk_cleanup_pending(struct daemon *daemon, int64_t now);
/* act.c: decide again at at_ns (a hold or a backoff ends, which no kernel event announces). */
void daemon_arm_retry(struct daemon *daemon, int64_t at_ns);
/* decision_log.c: the decision line, once per decision; "namespace/name", else the pod's name
 * or cgroup path, "none" for NULL. */
void daemon_log_decision(struct daemon *daemon);
const char *daemon_victim_name(const struct pod *pod, char *buf, size_t len);

/* disk_usage.c: true when the pods' disk numbers are recent enough to rank by; else a
 * measurement is started (or running) and a re-evaluation follows when it ends. */
bool daemon_disk_usage_ready(struct daemon *daemon);
void daemon_disk_usage_cancel(struct daemon *daemon);

/* pod_psi.c: keep the per-pod PSI triggers in step with the pods table. */
void daemon_sync_pod_psi(struct daemon *daemon);
void daemon_pod_psi_close(struct daemon *daemon);

/* reload.c */
/* Re-read the configuration from argv; on any error keep the running policy and say why.
 * Returns 0 when the new configuration is in force. */
int daemon_reload(struct daemon *daemon);

/* daemon_bpf.c: load and attach (or say why not), pace the wake-ups by the margins. */
void daemon_bpf_setup(struct daemon *daemon);
void daemon_bpf_update_steps(struct daemon *daemon);
/* A kill a wake-up started: when each step from its ring-buffer record to the cgroup.kill
 * write at killed_at_ns ended, one line (tools/bench/host-race.sh reads it into its stage
 * table). Nothing without a BPF wake-up. */
void daemon_bpf_log_detection(const struct daemon *daemon, int64_t killed_at_ns);
/* Without BPF: how long the memory signals may go unread, margin_bytes from the nearest
 * memory threshold (earlyoom's pacing: 100 ms .. 1 s). */
int64_t daemon_adaptive_poll_interval_ns(int64_t margin_bytes);

/* daemon_ops.c */
int daemon_ops_open(struct daemon *daemon);
void daemon_ops_close(struct daemon *daemon);
/* A decision's entry in the decision log and the metrics. */
void daemon_ops_record(struct daemon *daemon, const struct eventlog_decision *entry);
/* The entry for the current decision of the current policy. */
struct eventlog_decision daemon_ops_decision_entry(struct daemon *daemon, enum eventlog_action action,
						   int64_t latency_ns, const char *error);
void daemon_ops_update_metrics(struct daemon *daemon);
struct eventlog *daemon_ops_eventlog(struct daemon *daemon);
/* Re-read each second while a memory pressure clock runs (daemon/pod_psi.c). */
void daemon_pressure_poll(struct daemon *daemon);
/* The pre-kill warning, when due (daemon/warn.c). */
void daemon_warn(struct daemon *daemon);	/* NULL before open */
void daemon_warn_ahead(struct daemon *daemon);	/* --warn-ahead (daemon/warn.c) */
struct metrics *daemon_ops_metrics(struct daemon *daemon);
/* A kill was refused for lack of permission since the last check (daemon_can_evict_check). */
bool daemon_can_evict_recheck_due(const struct daemon *daemon);

/* daemon_shutdown.c */
int daemon_shutdown_setup(struct daemon *daemon);
/* The sequence has ended and its reports are out (or their deadline passed): let logind go on. */
void daemon_shutdown_release_now(struct daemon *daemon);
void daemon_shutdown_teardown(struct daemon *daemon);

/* daemon_kube.c */
void daemon_resolve_node_name(struct daemon *daemon, const struct evictd_config *config);
void daemon_kube_setup(struct daemon *daemon, const struct evictd_config *config);
void daemon_kube_teardown(struct daemon *daemon);
/* Arm the deadline for the current policy's first pod list (after start and each reload). */
void daemon_kube_watch_policy(struct daemon *daemon);
/* The pod watch's health to the metrics server (/readyz, evictd_kube_*). */
void daemon_kube_update_metrics(struct daemon *daemon);

#endif
