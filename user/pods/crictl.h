/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* crictl for the pods modules: run a program with bounds on time and output, and read a
 * ListContainerStatsResponse (`crictl stats -o json`). Nothing here logs: the callers run in
 * a worker thread (disk.c) and report through their caller. */
#ifndef EVICTD_PODS_CRICTL_H
#define EVICTD_PODS_CRICTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* How long a killed child gets to die before it is left behind (never waited for longer:
 * a child stuck in D state would hang the caller). */
#define PODS_CRICTL_REAP_NS (1000ll * 1000000)

/* The absolute path of an executable `name` in $PATH (empty entries skipped: a root daemon
 * does not run things from its working dir), or name itself when it holds a '/'.
 * 0, -ENOENT (or access(2)'s error), -ENAMETOOLONG. */
int pods_crictl_resolve(const char *name, char *buf, size_t len);

/*
 * Run argv (argv[0] an absolute path) without a shell, stdin /dev/null, in its own process
 * group; collect stdout (up to max_out bytes, NUL-terminated, caller frees) and the tail of
 * stderr. Killed (the whole group) at the deadline. Returns 0 with *status (exit code or
 * 128 + signal), -ETIMEDOUT, -E2BIG (output over max_out: killed), -ECANCELED (*stop
 * became non-zero: killed; stop may be NULL), or negative errno.
 * Never blocks past timeout_ns + PODS_CRICTL_REAP_NS: a child that does not die of SIGKILL
 * by then is left unreaped and its pid stored in *unreaped (else 0) for the caller to log.
 */
int pods_run_capture(char *const argv[], int64_t timeout_ns, size_t max_out, const int *stop,
		     char **out, size_t *out_len, char *err_tail, size_t err_len, int *status,
		     pid_t *unreaped);

/* Called per Kubernetes container (label io.kubernetes.pod.uid) with its writable layer
 * (0, 0 when the runtime reports none); returns true when the UID is one of ours. */
typedef bool (*pods_crictl_add_fn)(void *ctx, const char *pod_uid, int64_t used_bytes,
				   int64_t inodes_used);

/* Parse a ListContainerStatsResponse and hand every container to add(). Returns the
 * containers add() accepted, -EINVAL when the document is not a ListContainerStatsResponse
 * (add() may have been called before: the caller drops the sums), or -ENOMEM. */
int pods_crictl_parse_stats(const char *json, size_t len, pods_crictl_add_fn add, void *ctx);

#endif
