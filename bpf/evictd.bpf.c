// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* evictd BPF data plane. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "evictd.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct evictd_task_counters);
} task_counters SEC(".maps");

SEC("tp_btf/sched_process_fork")
int BPF_PROG(handle_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 zero = 0;
	struct evictd_task_counters *counters = bpf_map_lookup_elem(&task_counters, &zero);

	if (!counters)
		return 0;
	counters->forks++;
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(handle_exit, struct task_struct *task)
{
	__u32 zero = 0;
	struct evictd_task_counters *counters = bpf_map_lookup_elem(&task_counters, &zero);

	if (!counters)
		return 0;
	counters->exits++;
	return 0;
}
