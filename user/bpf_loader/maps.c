// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * BPF loader, maps: the wake-up steps the daemon writes and the counters it reads (per
 * cgroup, per memcg, node totals), and the names of wake-up record types.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_loader/internal.h"
#include "sys/log.h"

/* ---- wake-up steps ---- */

static void group_config(struct evictd_wake_group_config *group, uint64_t step,
			 uint64_t min_interval_ns, int nr_cpus)
{
	group->step = step;
	group->min_interval_ns = min_interval_ns;
	/* Unflushed per-CPU counts stay below step / 4 in total. */
	group->flush_batch = step / (4 * (uint64_t)nr_cpus);
	if (!group->flush_batch)
		group->flush_batch = 1;
}

int bpf_loader_set_steps(struct bpf_loader *loader, const struct bpf_loader_steps *steps)
{
	struct evictd_wake_config cfg = {};
	__u32 zero = 0;
	int fd, err;

	if (!loader || !steps)
		return -EINVAL;
	fd = bpf_map__fd(loader->skel->maps.wake_config);
	if (bpf_map_lookup_elem(fd, &zero, &cfg)) {
		err = -errno;
		log_err("bpf: reading wake_config: %m");
		return err;
	}
	group_config(&cfg.memory, steps->memory_pages, steps->min_interval_ns[EVICTD_GROUP_MEMORY],
		     loader->nr_cpus);
	group_config(&cfg.pids, steps->pids_tasks, steps->min_interval_ns[EVICTD_GROUP_PIDS],
		     loader->nr_cpus);
	group_config(&cfg.inodes, steps->inodes, steps->min_interval_ns[EVICTD_GROUP_INODES],
		     loader->nr_cpus);
	cfg.flags = steps->wake_on_reclaim ? EVICTD_CFG_WAKE_ON_RECLAIM : 0;
	cfg.generation++;
	if (bpf_map_update_elem(fd, &zero, &cfg, BPF_ANY)) {
		err = -errno;
		log_err("bpf: writing wake_config: %m");
		return err;
	}
	loader->memory_step_pages = steps->memory_pages;
	bpfl_near_update(loader, steps->memory_pages);
	return 0;
}

/* ---- counters ---- */

int bpf_loader_read_cgroup(const struct bpf_loader *loader, uint64_t cgroup_id,
			   struct evictd_cgroup_stats *out)
{
	__u64 key = cgroup_id;

	if (!loader || !out)
		return -EINVAL;
	if (bpf_map_lookup_elem(bpf_map__fd(loader->skel->maps.cgroup_stats), &key, out))
		return -errno;
	return 0;
}

int bpf_loader_read_memcg(const struct bpf_loader *loader, uint64_t memcg_id,
			  struct evictd_memcg_stats *out)
{
	__u64 key = memcg_id;

	if (!loader || !out)
		return -EINVAL;
	if (bpf_map_lookup_elem(bpf_map__fd(loader->skel->maps.memcg_stats), &key, out))
		return -errno;
	return 0;
}

int bpf_loader_read_node(const struct bpf_loader *loader, struct evictd_node_stats *out)
{
	/* Per-CPU values are 8-byte aligned; every field is a __u64, so summing is by index. */
	const size_t nr_fields = sizeof(*out) / sizeof(__u64);
	__u64 *sum = (__u64 *)out, *values;
	__u32 zero = 0;
	int cpu, err = 0;
	size_t i;

	if (!loader || !out)
		return -EINVAL;
	values = calloc(loader->nr_cpus, sizeof(*out));
	if (!values)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(loader->skel->maps.node_stats), &zero, values)) {
		err = -errno;
		goto out;
	}
	memset(out, 0, sizeof(*out));
	for (cpu = 0; cpu < loader->nr_cpus; cpu++)
		for (i = 0; i < nr_fields; i++)
			sum[i] += values[cpu * nr_fields + i];
out:
	free(values);
	return err;
}

int bpf_loader_for_each_cgroup(const struct bpf_loader *loader,
			       int (*fn)(void *ctx, uint64_t cgroup_id,
					 const struct evictd_cgroup_stats *stats),
			       void *ctx)
{
	__u64 key, next;
	void *prev = NULL;
	int fd, ret;

	if (!loader || !fn)
		return -EINVAL;
	fd = bpf_map__fd(loader->skel->maps.cgroup_stats);
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		struct evictd_cgroup_stats stats;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &stats))
			continue;	/* evicted meanwhile */
		ret = fn(ctx, key, &stats);
		if (ret)
			return ret;
	}
	return errno == ENOENT ? 0 : -errno;
}

/* ---- wake-up records ---- */

const char *bpf_loader_wake_type_name(uint32_t type)
{
	switch (type) {
	case EVICTD_WAKE_MEMORY_STEP: return "memory-step";
	case EVICTD_WAKE_FORK_STEP: return "fork-step";
	case EVICTD_WAKE_INODE_STEP: return "inode-step";
	case EVICTD_WAKE_DIRECT_RECLAIM: return "direct-reclaim";
	case EVICTD_WAKE_KSWAPD: return "kswapd-wake";
	case EVICTD_WAKE_MEMCG_RECLAIM: return "memcg-reclaim";
	case EVICTD_WAKE_OOM_KILL: return "oom-kill";
	default: return "unknown";
	}
}

uint64_t bpf_loader_wakeups_received(const struct bpf_loader *loader, uint32_t type)
{
	return loader && type <= EVICTD_WAKE_OOM_KILL ? loader->wakeups_received[type] : 0;
}

enum evictd_wake_group bpf_loader_wake_group(uint32_t type)
{
	switch (type) {
	case EVICTD_WAKE_MEMORY_STEP:
	case EVICTD_WAKE_DIRECT_RECLAIM:
	case EVICTD_WAKE_KSWAPD:
	case EVICTD_WAKE_MEMCG_RECLAIM:
	case EVICTD_WAKE_OOM_KILL:
		return EVICTD_GROUP_MEMORY;
	case EVICTD_WAKE_FORK_STEP:
		return EVICTD_GROUP_PIDS;
	case EVICTD_WAKE_INODE_STEP:
		return EVICTD_GROUP_INODES;
	default:
		return EVICTD_GROUP_COUNT;
	}
}
