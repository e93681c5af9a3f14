// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * BPF loader, the memory hook's self-check (doc/DESIGN.md "The memory hook"): an attach
 * that succeeds does not prove the hook fires. fentry on page_counter_try_charge attaches
 * to the out-of-line copy even where a Clang LTO kernel inlined every call into
 * try_charge_memcg(), and then never runs. So after attaching, the pages each memory hook
 * saw (evictd_wake_pending.memory_hook_pages, counted by account_step() in
 * bpf/evictd.bpf.c) are compared with what the kernel allocated meanwhile (the pgalloc_*
 * counters of /proc/vmstat, mm/vmstat.c vmstat_text): a hook that saw nothing while the
 * kernel allocated HOOK_CHECK_PAGES is detached and the next one in the chain attached
 * (charge -> buddy -> lru insertion), with one warning line.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_loader/internal.h"
#include "sys/fileio.h"
#include "sys/log.h"

/* 128 MiB of 4 KiB pages allocated by the kernel with not one seen: far more than the pages
 * kernel threads and root-cgroup tasks (never charged) allocate before any charged task
 * refills its per-CPU charge stock (64 pages, MEMCG_CHARGE_BATCH in mm/memcontrol.c). */
#define HOOK_CHECK_PAGES 32768ULL

/* The chain, strongest first: each one stands in where the one before it does not fire. */
static const char *const hook_chain[] = {
	MEMORY_CHARGE_HOOK, MEMORY_BUDDY_HOOK, MEMORY_NEAR_HOOK, "mm_page_alloc",
};

static int hook_of(const char *name)
{
	static const enum evictd_memory_hook ids[] = {
		EVICTD_MEMORY_HOOK_CHARGE, EVICTD_MEMORY_HOOK_BUDDY, EVICTD_MEMORY_HOOK_LRU,
		EVICTD_MEMORY_HOOK_PAGE_ALLOC,
	};

	for (size_t i = 0; i < sizeof(hook_chain) / sizeof(hook_chain[0]); i++)
		if (!strcmp(name, hook_chain[i]))
			return (int)ids[i];
	return -1;
}

int bpf_loader_vmstat_free(const char *vmstat, uint64_t *pages)
{
	const char *line = vmstat;
	unsigned long long n;

	*pages = 0;
	while (line && *line) {
		if (!strncmp(line, "nr_free_pages ", 14) && sscanf(line + 14, "%llu", &n) == 1) {
			*pages = n;
			return 0;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return -EINVAL;
}

int bpf_loader_vmstat_pgalloc(const char *vmstat, uint64_t *pages)
{
	const char *line = vmstat;
	bool found = false;
	uint64_t sum = 0;

	*pages = 0;
	/* "pgalloc_<zone> N": one line per zone type (dma, dma32, normal, movable, device). */
	while (line && *line) {
		unsigned long long n;

		if (!strncmp(line, "pgalloc_", 8) &&
		    sscanf(line + strcspn(line, " "), " %llu", &n) == 1) {
			sum += n;
			found = true;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	if (!found)
		return -EINVAL;
	*pages = sum;
	return 0;
}

/*
 * What the kernel did that the hook must have seen: every allocation for the charge and LRU
 * hooks (pgalloc_*); for the buddy hook only the pages that left the buddy lists, the drops
 * of nr_free_pages (per-CPU pages are not counted free: mm/page_alloc.c rmqueue_bulk()
 * subtracts them as it fills the lists). An alloc/free cycle served by the per-CPU lists never
 * takes the zone lock, and those lists hold 100+ MiB on a kernel that auto-tunes their high
 * mark (6.7+, mm/page_alloc.c decay_pcp_high()): 128 MiB of pgalloc with nothing seen is then
 * no sign of a silent hook. Sampled once a check, the drops are a lower bound.
 */
static int read_kernel_moved(struct bpf_loader *loader, bool buddy, uint64_t *pages)
{
	const char *path = loader->vmstat_path ? loader->vmstat_path : "/proc/vmstat";
	char text[16384];	/* /proc/vmstat is ~5 KiB on 6.18 */
	ssize_t len = fileio_read_at(AT_FDCWD, path, text, sizeof(text));
	uint64_t free_now;
	int err;

	if (len < 0)
		return (int)len;
	text[(size_t)len < sizeof(text) ? (size_t)len : sizeof(text) - 1] = '\0';
	if (!buddy)
		return bpf_loader_vmstat_pgalloc(text, pages);
	err = bpf_loader_vmstat_free(text, &free_now);
	if (err)
		return err;
	if (loader->hook_free_prev > free_now)
		loader->hook_buddy_drops += loader->hook_free_prev - free_now;
	loader->hook_free_prev = free_now;
	*pages = loader->hook_buddy_drops;
	return 0;
}

int bpf_loader_memory_hook_pages(const struct bpf_loader *loader, const char *hook,
				 uint64_t *pages)
{
	struct evictd_wake_pending *percpu;
	int id = hook ? hook_of(hook) : -1, fd, err = 0;
	__u32 zero = 0;

	*pages = 0;
	if (!loader || id < 0)
		return -EINVAL;
	percpu = calloc((size_t)loader->nr_cpus, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	fd = bpf_map__fd(loader->skel->maps.wake_pending);
	if (bpf_map_lookup_elem(fd, &zero, percpu)) {
		err = -errno;
		log_warn("bpf: reading wake_pending: %m");
	} else {
		for (int cpu = 0; cpu < loader->nr_cpus; cpu++)
			*pages += percpu[cpu].memory_hook_pages[id];
	}
	free(percpu);
	return err;
}

/* The slot pacing memory now: the first of the chain attached for good (the on-demand
 * companion of the buddy hook does not count). */
static struct tracepoint_slot *active_hook(struct bpf_loader *loader, size_t *index)
{
	for (size_t c = 0; c < sizeof(hook_chain) / sizeof(hook_chain[0]); c++)
		for (size_t i = 0; i < loader->nr_slots; i++) {
			struct tracepoint_slot *slot = &loader->slots[i];

			if (strcmp(slot->name, hook_chain[c]) || !slot->link ||
			    loader->near_slot == i + 1)
				continue;
			*index = i;
			return slot;
		}
	return NULL;
}

const char *bpf_loader_memory_hook(const struct bpf_loader *loader)
{
	size_t i;
	struct tracepoint_slot *slot = loader ? active_hook((struct bpf_loader *)loader, &i) : NULL;

	return slot ? slot->name : NULL;
}

unsigned int bpf_loader_memory_hook_fallbacks(const struct bpf_loader *loader)
{
	return loader ? loader->hook_fallbacks : 0;
}

/* Attach the next loaded hook after `from` in the chain; its index, or -1. */
static int attach_next(struct bpf_loader *loader, const char *from)
{
	size_t c = 0;

	while (c < sizeof(hook_chain) / sizeof(hook_chain[0]) && strcmp(hook_chain[c], from))
		c++;
	for (c++; c < sizeof(hook_chain) / sizeof(hook_chain[0]); c++) {
		for (size_t i = 0; i < loader->nr_slots; i++) {
			struct tracepoint_slot *slot = &loader->slots[i];
			struct bpf_program *prog;

			if (strcmp(slot->name, hook_chain[c]) || slot->mode == MODE_SKIP)
				continue;
			if (loader->near_slot == i + 1) {
				/* The on-demand companion becomes the hook: attached for good. */
				loader->near_slot = 0;
				if (slot->link) {
					loader->near_attached = false;
					slot->attached_at_open = true;
					return (int)i;
				}
			}
			if (!slot->link) {
				prog = slot->mode == MODE_TP_BTF ? slot->btf_prog : slot->raw_prog;
				slot->link = bpf_program__attach(prog);
				if (!slot->link) {
					log_warn("bpf: attaching %s as the memory hook: %m", slot->name);
					continue;
				}
				loader->nr_attached++;
			}
			slot->attached_at_open = true;
			slot->left_out = false;
			loader->progs[i].attach = slot->mode == MODE_RAW_TP ? "raw_tp" : "tp_btf";
			loader->progs[i].skip_reason = NULL;
			return (int)i;
		}
	}
	return -1;
}

/* The buddy hook's per-folio companion near a threshold (bpfl_near_update). */
static void arm_near_companion(struct bpf_loader *loader, size_t buddy)
{
	for (size_t i = 0; i < loader->nr_slots; i++) {
		struct tracepoint_slot *slot = &loader->slots[i];

		if (strcmp(slot->name, MEMORY_NEAR_HOOK) || slot->mode == MODE_SKIP || slot->link ||
		    !slot->standby_for || strcmp(slot->standby_for, loader->slots[buddy].name))
			continue;
		snprintf(slot->skip_reason, sizeof(slot->skip_reason),
			 "on demand beside %.40s, near a memory threshold", loader->slots[buddy].name);
		loader->near_slot = i + 1;
		loader->near_attached = false;
		bpfl_near_update(loader, loader->memory_step_pages);
	}
}

enum bpf_loader_hook_check bpf_loader_check_memory_hook(struct bpf_loader *loader)
{
	struct tracepoint_slot *slot;
	uint64_t kernel, seen, moved;
	size_t index;
	int next, err;

	if (!loader || loader->detached)
		return BPF_HOOK_CHECK_NONE;
	slot = active_hook(loader, &index);
	if (!slot)
		return BPF_HOOK_CHECK_NONE;
	if (loader->hook_confirmed == index + 1)
		return BPF_HOOK_CHECK_CONFIRMED;
	if (loader->hook_checked != index + 1) {
		/* A new hook: the buddy lists' drops count from now. */
		loader->hook_free_prev = 0;
		loader->hook_buddy_drops = 0;
	}
	err = read_kernel_moved(loader, !strcmp(slot->name, MEMORY_BUDDY_HOOK), &kernel);
	if (!err)
		err = bpf_loader_memory_hook_pages(loader, slot->name, &seen);
	if (err) {
		if (!loader->hook_check_failed)
			log_warn("bpf: cannot check that the memory hook %s fires: %s", slot->name,
				 strerror(-err));
		loader->hook_check_failed = true;
		return BPF_HOOK_CHECK_PENDING;
	}
	loader->hook_check_failed = false;
	if (loader->hook_checked != index + 1) {
		/* A new hook: its baseline is now. */
		loader->hook_checked = index + 1;
		loader->hook_kernel_base = kernel;
		loader->hook_seen_base = seen;
		return BPF_HOOK_CHECK_PENDING;
	}
	moved = kernel - loader->hook_kernel_base;
	if (seen != loader->hook_seen_base) {
		loader->hook_confirmed = index + 1;
		log_info("bpf: memory hook %s confirmed: it saw %llu pages while the kernel "
			 "allocated %llu", slot->name,
			 (unsigned long long)(seen - loader->hook_seen_base),
			 (unsigned long long)moved);
		return BPF_HOOK_CHECK_CONFIRMED;
	}
	if (moved < HOOK_CHECK_PAGES)
		return BPF_HOOK_CHECK_PENDING;

	/* Attached and silent: detach it for good, the next one paces memory. */
	bpf_link__destroy(slot->link);
	slot->link = NULL;
	slot->attached_at_open = false;
	loader->nr_attached--;
	loader->hook_fallbacks++;
	loader->hook_checked = 0;
	next = attach_next(loader, slot->name);
	snprintf(slot->skip_reason, sizeof(slot->skip_reason),
		 "attached but saw no page of %llu the kernel allocated",
		 (unsigned long long)moved);
	loader->progs[index].attach = NULL;
	loader->progs[index].skip_reason = slot->skip_reason;
	if (next < 0) {
		log_warn("bpf: memory hook %s saw no page while the kernel allocated %llu pages; "
			 "detached it, and no other memory hook could attach: memory is paced by "
			 "the poll and PSI", slot->name, (unsigned long long)moved);
		return BPF_HOOK_CHECK_FELL_BACK;
	}
	log_warn("bpf: memory hook %s saw no page while the kernel %s %llu pages; "
		 "detached it, %s paces memory instead", slot->name,
		 !strcmp(slot->name, MEMORY_BUDDY_HOOK) ? "took from the buddy lists" : "allocated",
		 (unsigned long long)moved, loader->slots[next].name);
	if (!strcmp(loader->slots[next].name, MEMORY_BUDDY_HOOK))
		arm_near_companion(loader, (size_t)next);
	return BPF_HOOK_CHECK_FELL_BACK;
}
