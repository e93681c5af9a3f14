/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The daemon's parts, one file each (daemon.c: evaluate, act, loop; daemon_bpf.c,
 * daemon_ops.c, daemon_shutdown.c, daemon_kube.c), and what they share. Private to them. */
#ifndef EVICTD_DAEMON_PARTS_H
#define EVICTD_DAEMON_PARTS_H

#include "daemon/daemon.h"
#include "ops/eventlog.h"

/* daemon.c */
void daemon_drain_timerfd(int fd, const char *what);
/* Arm a one-shot timerfd at an absolute CLOCK_MONOTONIC time; INT64_MAX disarms it. */
void daemon_arm_timer_at(int fd, int64_t deadline_ns, const char *what);
bool daemon_is_disk_signal(enum ev_signal signal);

/* daemon_bpf.c: load and attach (or say why not), pace the wake-ups by the margins. */
void daemon_bpf_setup(struct daemon *daemon);
void daemon_bpf_update_steps(struct daemon *daemon);

/* daemon_ops.c */
int daemon_ops_open(struct daemon *daemon);
void daemon_ops_close(struct daemon *daemon);
void daemon_ops_record(struct daemon *daemon, enum eventlog_action action, int64_t latency_ns,
		       const char *error);
void daemon_ops_update_metrics(struct daemon *daemon);

/* daemon_shutdown.c */
void daemon_shutdown_setup(struct daemon *daemon);
void daemon_shutdown_teardown(struct daemon *daemon);

/* daemon_kube.c */
void daemon_resolve_node_name(struct daemon *daemon);
void daemon_kube_setup(struct daemon *daemon);
void daemon_kube_teardown(struct daemon *daemon);

#endif
