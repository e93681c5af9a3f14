/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Types shared by the BPF programs and the userspace daemon.
 * Fixed-width kernel types only and no includes: the BPF side gets __u32/__u64 from
 * vmlinux.h, userspace from <linux/types.h> included before this header. */
#ifndef EVICTD_SHARED_H
#define EVICTD_SHARED_H

/* Node-wide task accounting, one slot per CPU (summed by userspace). */
struct evictd_task_counters {
	__u64 forks;	/* sched_process_fork: new tasks (processes and threads) */
	__u64 exits;	/* sched_process_exit: tasks gone */
};

#endif /* EVICTD_SHARED_H */
