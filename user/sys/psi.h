/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* PSI triggers (Documentation/accounting/psi.rst): the kernel wakes us with POLLPRI when
 * tasks stall on memory for longer than a threshold within a window. */
#ifndef EVICTD_PSI_H
#define EVICTD_PSI_H

#include <stddef.h>
#include <stdint.h>

struct psi_trigger_spec {
	const char *kind;		/* "some" or "full" */
	uint32_t stall_us;		/* e.g. 100000 */
	uint32_t window_us;		/* 500000 .. 10000000 */
};

/* Open path (a pressure file: /proc/pressure/memory or <cgroup>/memory.pressure) and arm a
 * trigger. Returns an fd to watch for EPOLLPRI (EPOLLERR: the cgroup went away), or
 * negative errno with the path logged. */
int psi_trigger_open(const char *path, const struct psi_trigger_spec *spec);

/* The memory trigger evictd arms: "some" 100 ms in 1 s, or, where the kernel takes only
 * whole 2 s windows (no CAP_SYS_RESOURCE), 200 ms in 2 s. */
int psi_trigger_open_memory(const char *path);

/* Close n trigger fds (negative entries are skipped). Closing a trigger waits for an RCU grace
 * period (psi_trigger_destroy() in kernel/sched/psi.c calls synchronize_rcu()), 10-40 ms on a
 * busy node: one after another, 250 triggers took ~6 s. Closed from up to
 * PSI_CLOSE_MAX_THREADS threads at once, the waits share grace periods. */
#define PSI_CLOSE_MAX_THREADS 32
void psi_triggers_close(const int *fds, size_t n);

/* Parse "some avg10=... total=N" content: total stall microseconds of the "some" line. */
int psi_read_total(const char *path, uint64_t *some_total_us);

#endif
