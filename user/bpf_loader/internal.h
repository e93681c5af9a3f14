/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Private to user/bpf_loader/: the loader's state and the functions its modules share.
 * The public API is bpf_loader.h; nothing outside this folder includes this header.
 *
 *	bpf_loader.c	open -> load -> attach, teardown, ring buffer, attach status
 *	probe.c		what this kernel has: BTF, tracepoints (tp_btf vs raw_tp), ring buffer
 *	pins.c		bpffs, the pin directory, stale pins left by a previous run
 *	maps.c		the map accessors: wake-up steps, cgroup/memcg/node counters
 *	hookcheck.c	the memory hook's self-check and its fallback along the chain
 */
#ifndef EVICTD_BPF_LOADER_INTERNAL_H
#define EVICTD_BPF_LOADER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf_loader/bpf_loader.h"
#include "evictd.skel.h"

#define VMLINUX_BTF_PATH "/sys/kernel/btf/vmlinux"
#define MAX_TRACEPOINTS 32
/* The default memory hook (bpf/evictd.bpf.c page_counter_try_charge_fentry). */
#define MEMORY_CHARGE_HOOK "page_counter_try_charge"
/* Its stand-in where fentry is refused, and what joins that one near a threshold. */
#define MEMORY_BUDDY_HOOK "mm_page_alloc_zone_locked"
#define MEMORY_NEAR_HOOK "mm_lru_insertion"

enum attach_mode {
	MODE_SKIP,
	MODE_TP_BTF,
	MODE_RAW_TP,
};

struct tracepoint_slot {
	char name[64];
	struct bpf_program *btf_prog;	/* SEC("tp_btf/<name>") */
	struct bpf_program *raw_prog;	/* SEC("raw_tp/<name>") */
	/* A second argument shape of the same tracepoint (programs named <tp>_pid_*): used
	 * instead of btf_prog/raw_prog when the kernel's BTF says so (mark_victim). */
	struct bpf_program *alt_btf_prog, *alt_raw_prog;
	enum attach_mode mode;		/* chosen before load */
	struct bpf_link *link;
	bool attached_at_open;		/* may be re-attached by bpf_loader_set_attached() */
	char skip_reason[96];
	bool left_out;			/* skipped by an option, not by the kernel: not logged */
	bool fentry;			/* SEC("fentry/<function>"): btf_prog only */
	/* Loaded but attached only when the slot named here did not attach, nor what that
	 * one stands by for (the memory hook fallbacks: mm_page_alloc_zone_locked for
	 * page_counter_try_charge, mm_lru_insertion for mm_page_alloc_zone_locked). */
	const char *standby_for;
	/* When standby_for did attach: attached by bpf_loader_set_steps() near a threshold. */
	bool on_demand;
	/* A filesystem module's tracepoint absent at open: its raw_tp program is loaded (it
	 * needs no target to load) and attached by bpf_loader_attach_late() once the module
	 * is loaded. */
	bool late;
};

struct bpf_loader {
	struct evictd_bpf *skel;
	struct ring_buffer *ring;
	bpf_loader_wake_fn consume_fn;	/* set for the duration of bpf_loader_consume() */
	void *consume_ctx;
	uint64_t wakeups_received[EVICTD_WAKE_OOM_KILL + 1];	/* by type, from ring_sample */
	int nr_cpus;
	char *pin_dir;			/* NULL when not pinning */
	struct bpf_loader_pin_report pins;
	struct tracepoint_slot slots[MAX_TRACEPOINTS];
	struct bpf_loader_prog progs[MAX_TRACEPOINTS];
	size_t nr_slots;
	unsigned int nr_attached;
	bool inspect;			/* bpf_loader_opts.inspect */
	bool fentry_planned;		/* the last plan loads an fentry program */
	/* The on-demand memory hook: its slot index + 1 (0: none), whether it is attached
	 * now, and the per-CPU list pages it was last compared with. */
	size_t near_slot;
	bool near_attached;
	uint64_t near_pcp_pages;
	int64_t near_pcp_read_ns;	/* when near_pcp_pages was read */
	int64_t near_pcp_max_age_ns;	/* bpf_loader_opts.zoneinfo_max_age_ns */
	bool near_read_failed, near_attach_failed;	/* warned once */
	bool detached;			/* bpf_loader_set_attached(false): attach nothing */
	uint64_t memory_step_pages;	/* the last bpf_loader_set_steps() */
	char *zoneinfo_path;
	char *vmstat_path;		/* bpf_loader_opts.vmstat_path (NULL: /proc/vmstat) */
	/* The memory hook self-check (hookcheck.c): slot index + 1 of the hook whose baseline
	 * is taken / which was seen firing (0: none), the baselines, and fallbacks made. */
	size_t hook_checked, hook_confirmed;
	uint64_t hook_kernel_base, hook_seen_base;
	uint64_t hook_free_prev, hook_buddy_drops;	/* nr_free_pages last read; its drops summed */
	bool hook_check_failed;		/* warned once */
	unsigned int hook_fallbacks;
};

/* Kernel BTF: vmlinux, and module BTF loaded on first need. */
struct kernel_btfs {
	struct btf *vmlinux;
	struct btf **modules;
	size_t nr_modules;
	bool modules_loaded;
};

/* ---- probe.c ---- */

/* What a load attempt may use: everything, then without fentry (a kernel or sandbox that
 * refuses tracing trampolines), then raw_tp alone (a kernel whose tracepoint BTF does not
 * match). */
enum plan_level {
	PLAN_ALL,
	PLAN_NO_FENTRY,
	PLAN_RAW_ONLY,
	PLAN_LEVELS,
};

/* Root/CAP_BPF, kernel BTF and a ring buffer: 0, or the negative errno bpf_loader_open()
 * returns, with one warning logged. */
int bpfl_preflight(void);
void bpfl_kernel_btfs_free(struct kernel_btfs *k);
/* Pair the object's programs by tracepoint and mark one of each pair (tp_btf unless
 * PLAN_RAW_ONLY or the kernel has no BTF for it, else raw_tp when the tracepoint exists) for
 * loading; the others are skipped with a reason. Before load. */
int bpfl_plan_programs(struct bpf_loader *loader, const struct bpf_loader_opts *opts,
		       struct kernel_btfs *btfs, enum plan_level level);

/* Pages on the per-CPU page lists now (/proc/zoneinfo or the loader's path): 0 or a
 * negative errno. */
int bpfl_read_pcp_pages(const struct bpf_loader *loader, uint64_t *pages);

/* ---- bpf_loader.c ---- */

/* Attach or detach the on-demand memory hook for this memory step (pages; 0: none). */
void bpfl_near_update(struct bpf_loader *loader, uint64_t memory_step_pages);

/* ---- pins.c ---- */

/* Mount bpffs on the pin directory's parent when it is not on one. */
int bpfl_ensure_bpffs(const char *pin_dir);
/* Create the pin directory 0700 (or fix the mode of an existing one). */
int bpfl_make_pin_dir(const char *pin_dir);
/* Before load: keep compatible pins, remove incompatible ones; fills loader->pins. */
int bpfl_check_stale_pins(struct bpf_loader *loader);
/* After load: pins are 0600. */
void bpfl_chmod_pins(struct bpf_loader *loader);

#endif
