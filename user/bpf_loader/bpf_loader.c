// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * BPF loader: open -> choose tp_btf / raw_tp / skip per tracepoint (probe.c) -> check stale
 * pins (pins.c) -> load -> attach, teardown, the ring buffer and the attach status. The map
 * accessors are in maps.c. Only libbpf 1.1 API is used.
 */
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf_loader/internal.h"
#include "sys/clock.h"
#include "sys/log.h"

/* /proc/zoneinfo (tens of KiB of text) is read for the near hook at most this often by
 * default: the per-CPU lists follow the workload, not each step. */
#define NEAR_PCP_READ_INTERVAL_NS (1000 * 1000000LL)

/* libbpf's own chatter goes to the debug log: the loader logs the one line that matters. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[1024];
	size_t len;

	(void)level;	/* libbpf warns about probes it expects to fail: all of it is debug */
	if (log_get_level() < LOGLEVEL_DEBUG)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	len = strlen(line);
	while (len && line[len - 1] == '\n')
		line[--len] = '\0';
	log_debug("%s", line);
	return 0;
}

/* ---- open / load / attach --------------------------------------------------------------- */

static int open_and_load(struct bpf_loader *loader, const struct bpf_loader_opts *opts,
			 struct kernel_btfs *btfs, enum plan_level level)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts, .pin_root_path = loader->pin_dir);
	struct bpf_map *map;
	int err;

	if (!btfs->vmlinux) {
		btfs->vmlinux = btf__load_vmlinux_btf();
		if (!btfs->vmlinux) {
			err = -errno;
			log_warn("bpf: cannot parse kernel BTF again for a retry: %m");
			return err;
		}
	}
	loader->skel = evictd_bpf__open_opts(&open_opts);
	if (!loader->skel) {
		err = -errno;
		log_err("bpf: opening the embedded BPF object: %m");
		return err;
	}
	err = bpfl_plan_programs(loader, opts, btfs, level);
	/* libbpf parses the kernel's BTF again for the load: freeing ours first keeps one
	 * copy (several MiB) in memory at a time, which is evictd's peak RSS. */
	bpfl_kernel_btfs_free(btfs);
	if (err)
		return err;
	loader->skel->rodata->inspect_counters = opts->inspect;
	loader->skel->rodata->muted_memory_hooks = opts->muted_memory_hooks;
	loader->inspect = opts->inspect;
	if (opts->ringbuf_bytes) {
		err = bpf_map__set_max_entries(loader->skel->maps.wakeups, opts->ringbuf_bytes);
		if (err) {
			log_err("bpf: ring buffer size %zu: %s", opts->ringbuf_bytes, strerror(-err));
			return err;
		}
	}
	if (!loader->pin_dir) {
		bpf_object__for_each_map(map, loader->skel->obj)
			bpf_map__set_pin_path(map, NULL);
	} else {
		err = bpfl_check_stale_pins(loader);
		if (err)
			return err;
	}
	err = evictd_bpf__load(loader->skel);
	if (err)
		return err;
	return 0;
}

static const char *attach_label(const struct tracepoint_slot *slot)
{
	if (slot->mode == MODE_RAW_TP)
		return "raw_tp";
	return slot->fentry ? "fentry" : "tp_btf";
}

static struct tracepoint_slot *find_slot(struct bpf_loader *loader, const char *name)
{
	size_t i;

	for (i = 0; name && i < loader->nr_slots; i++)
		if (!strcmp(loader->slots[i].name, name))
			return &loader->slots[i];
	return NULL;
}

/* How many slots a standby slot waits for (0: none): attached in that order. */
static int standby_depth(struct bpf_loader *loader, const struct tracepoint_slot *slot)
{
	int depth = 0;

	while (slot && slot->standby_for && depth < 4) {
		slot = find_slot(loader, slot->standby_for);
		depth++;
	}
	return depth;
}

/* The first slot along slot's standby chain that attached, and how far along it is. */
static const struct tracepoint_slot *standby_cover(struct bpf_loader *loader,
						   const struct tracepoint_slot *slot, int *distance)
{
	const struct tracepoint_slot *target = slot;

	for (*distance = 1; *distance <= 4; (*distance)++) {
		target = find_slot(loader, target->standby_for);
		if (!target)
			return NULL;
		if (target->link)
			return target;
	}
	return NULL;
}

/* Attach one slot; false (with the reason in the slot) when it is not attached. */
static bool attach_slot(struct bpf_loader *loader, size_t i)
{
	struct tracepoint_slot *slot = &loader->slots[i];
	struct bpf_loader_prog *status = &loader->progs[i];
	struct bpf_program *prog;

	status->tracepoint = slot->name;
	status->attach = NULL;
	status->skip_reason = slot->skip_reason;
	if (slot->mode == MODE_SKIP || slot->late)
		return false;
	if (slot->standby_for) {
		const struct tracepoint_slot *cover;
		int distance;

		cover = standby_cover(loader, slot, &distance);
		if (cover && slot->on_demand && distance == 1) {
			/* Attached by bpfl_near_update() near a threshold. */
			snprintf(slot->skip_reason, sizeof(slot->skip_reason),
				 "on demand beside %.40s, near a memory threshold", cover->name);
			slot->left_out = true;
			loader->near_slot = i + 1;
			return false;
		}
		if (cover) {
			snprintf(slot->skip_reason, sizeof(slot->skip_reason),
				 "standing by for %.64s", cover->name);
			slot->left_out = true;
			return false;
		}
	}
	prog = slot->mode == MODE_TP_BTF ? slot->btf_prog : slot->raw_prog;
	slot->link = bpf_program__attach(prog);
	if (!slot->link) {
		snprintf(slot->skip_reason, sizeof(slot->skip_reason), "attach failed: %s",
			 strerror(errno));
		return false;
	}
	status->attach = attach_label(slot);
	status->skip_reason = NULL;
	slot->attached_at_open = true;
	loader->nr_attached++;
	return true;
}

static void attach_programs(struct bpf_loader *loader)
{
	unsigned int by_btf = 0, by_raw = 0;
	char skipped[512] = "";
	size_t i;
	int pass;

	loader->nr_attached = 0;
	loader->near_slot = 0;
	loader->near_attached = false;
	/* Standby programs after what they stand in for: they attach only where it did not. */
	for (pass = 0; pass < 3; pass++) {
		for (i = 0; i < loader->nr_slots; i++) {
			struct tracepoint_slot *slot = &loader->slots[i];

			if (standby_depth(loader, slot) != pass)
				continue;
			if (attach_slot(loader, i)) {
				if (slot->mode == MODE_TP_BTF)
					by_btf++;
				else
					by_raw++;
				continue;
			}
			if (slot->left_out) {
				log_debug("bpf: not attaching %s: %s", slot->name, slot->skip_reason);
				continue;
			}
			log_info("bpf: skipping %s: %s", slot->name, slot->skip_reason);
			if (strlen(skipped) + strlen(slot->name) + 3 < sizeof(skipped)) {
				if (skipped[0])
					strcat(skipped, ", ");
				strcat(skipped, slot->name);
			}
		}
	}
	log_info("bpf: attached %u programs (BTF-typed %u, raw_tp %u)%s%s%s",
		 loader->nr_attached, by_btf, by_raw,
		 loader->inspect ? ", inspection counters on" : "",
		 skipped[0] ? "; skipped: " : "", skipped);
}

static int ring_sample(void *ctx, void *data, size_t size)
{
	struct bpf_loader *loader = ctx;
	struct evictd_wake wake;

	if (size < sizeof(wake) || !loader->consume_fn)
		return 0;
	memcpy(&wake, data, sizeof(wake));
	if (wake.type <= EVICTD_WAKE_OOM_KILL)
		loader->wakeups_received[wake.type]++;
	return loader->consume_fn(loader->consume_ctx, &wake);
}

/* A reused config pin holds the previous run's steps: start with none and a new baseline. */
static int reset_wake_config(struct bpf_loader *loader)
{
	int fd = bpf_map__fd(loader->skel->maps.wake_config);
	struct evictd_wake_config cfg = {};
	__u32 zero = 0;
	__u64 generation = 0;

	if (!bpf_map_lookup_elem(fd, &zero, &cfg))
		generation = cfg.generation;
	memset(&cfg, 0, sizeof(cfg));
	cfg.generation = generation + 1;
	if (bpf_map_update_elem(fd, &zero, &cfg, BPF_ANY)) {
		int err = -errno;

		log_err("bpf: writing wake_config: %m");
		return err;
	}
	return 0;
}

int bpf_loader_open(struct bpf_loader **out, const struct bpf_loader_opts *opts)
{
	static const struct bpf_loader_opts no_opts;
	struct kernel_btfs btfs = {};
	struct bpf_loader *loader;
	struct bpf_loader_pin_report pins_found = {};
	bool first_attempt = true;
	enum plan_level level;
	int err;

	*out = NULL;
	if (!opts)
		opts = &no_opts;
	libbpf_set_print(libbpf_print);
	err = bpfl_preflight();
	if (err)
		return err;

	loader = calloc(1, sizeof(*loader));
	if (!loader)
		return -ENOMEM;
	loader->nr_cpus = libbpf_num_possible_cpus();
	if (loader->nr_cpus <= 0) {
		err = loader->nr_cpus ? loader->nr_cpus : -EINVAL;
		log_err("bpf: counting possible CPUs: %s", strerror(-err));
		goto cleanup;
	}
	if (!opts->no_pin) {
		loader->pin_dir = strdup(opts->pin_dir ? opts->pin_dir : EVICTD_PIN_DIR_DEFAULT);
		if (!loader->pin_dir) {
			err = -ENOMEM;
			goto cleanup;
		}
		err = bpfl_ensure_bpffs(loader->pin_dir);
		if (err)
			goto cleanup;
		err = bpfl_make_pin_dir(loader->pin_dir);
		if (err)
			goto cleanup;
	}
	loader->near_pcp_max_age_ns = opts->zoneinfo_max_age_ns ? opts->zoneinfo_max_age_ns :
				      NEAR_PCP_READ_INTERVAL_NS;
	if (opts->zoneinfo_path) {
		loader->zoneinfo_path = strdup(opts->zoneinfo_path);
		if (!loader->zoneinfo_path) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	if (opts->vmstat_path) {
		loader->vmstat_path = strdup(opts->vmstat_path);
		if (!loader->vmstat_path) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	btfs.vmlinux = btf__load_vmlinux_btf();
	if (!btfs.vmlinux) {
		err = -errno;
		log_warn("bpf: unavailable: cannot parse kernel BTF: %m; using polling and PSI");
		goto cleanup;
	}
	/* Everything first; if the kernel refuses the fentry program (no trampolines, or a
	 * sandbox that allows tracepoints only), the same without it (buddy allocations pace
	 * memory instead); if the verifier rejects the tp_btf object (tracepoint BTF that does
	 * not match), the same bodies as raw_tp, which depend on nothing but CO-RE. */
	for (level = opts->force_raw_tp ? PLAN_RAW_ONLY : PLAN_ALL; level < PLAN_LEVELS; level++) {
		bool had_fentry;

		err = open_and_load(loader, opts, &btfs, level);
		if (first_attempt) {
			/* A retry finds the pins this attempt made: report what was there before. */
			pins_found = loader->pins;
			first_attempt = false;
		}
		loader->pins = pins_found;
		if (!err)
			break;
		had_fentry = loader->fentry_planned;
		evictd_bpf__destroy(loader->skel);
		loader->skel = NULL;
		if (level == PLAN_ALL && !had_fentry)
			level = PLAN_NO_FENTRY;	/* the same plan again would fail the same way */
		if ((err == -EPERM || err == -EACCES) && !had_fentry) {
			errno = -err;
			log_warn("bpf: unavailable: loading programs: %m (needs root or "
				 "CAP_BPF+CAP_PERFMON); using polling and PSI");
			err = -EPERM;
			goto cleanup;
		}
		if (level == PLAN_ALL)
			log_info("bpf: the fentry memory hook failed to load (%s), using "
				 MEMORY_BUDDY_HOOK, strerror(-err));
		else if (level == PLAN_NO_FENTRY)
			log_info("bpf: tp_btf programs failed to load (%s), retrying as raw_tp",
				 strerror(-err));
	}
	if (err) {
		errno = -err;
		log_warn("bpf: unavailable: loading programs: %m (run with --log-level debug for "
			 "the verifier log); using polling and PSI");
		goto cleanup;
	}
	if (loader->pin_dir)
		bpfl_chmod_pins(loader);
	err = reset_wake_config(loader);
	if (err)
		goto cleanup;

	attach_programs(loader);
	if (!loader->nr_attached) {
		log_warn("bpf: unavailable: no tracepoint could be attached; using polling and PSI");
		err = -ENOENT;
		goto cleanup;
	}
	loader->ring = ring_buffer__new(bpf_map__fd(loader->skel->maps.wakeups), ring_sample,
					loader, NULL);
	if (!loader->ring) {
		err = -errno;
		log_err("bpf: ring buffer setup: %m");
		goto cleanup;
	}
	bpfl_kernel_btfs_free(&btfs);
	/* The parsed BTF is gone; give its pages back rather than keep them as free heap. */
	malloc_trim(0);
	*out = loader;
	return (int)loader->nr_attached;

cleanup:
	bpfl_kernel_btfs_free(&btfs);
	/* Pins made by this failed attempt would only confuse the next run. */
	bpf_loader_destroy(loader, loader->pins.reused == 0);
	return err;
}

void bpf_loader_destroy(struct bpf_loader *loader, bool unpin)
{
	size_t i;

	if (!loader)
		return;
	ring_buffer__free(loader->ring);
	for (i = 0; i < loader->nr_slots; i++)
		bpf_link__destroy(loader->slots[i].link);
	if (loader->skel && unpin && loader->pin_dir) {
		struct bpf_map *map;

		bpf_object__for_each_map(map, loader->skel->obj) {
			if (bpf_map__is_pinned(map) && bpf_map__unpin(map, NULL))
				log_warn("bpf: unpinning %s: %s", bpf_map__pin_path(map),
					 strerror(errno));
		}
		if (rmdir(loader->pin_dir) && errno != ENOENT)
			log_warn("bpf: removing %s: %m", loader->pin_dir);
	}
	evictd_bpf__destroy(loader->skel);
	free(loader->pin_dir);
	free(loader->zoneinfo_path);
	free(loader->vmstat_path);
	free(loader);
}

/* ---- runtime API ------------------------------------------------------------------------ */

int bpf_loader_set_attached(struct bpf_loader *loader, bool attached)
{
	unsigned int count = 0;
	int err = 0;
	size_t i;

	if (!loader)
		return -EINVAL;
	/* Detached means nothing runs; re-attached, the on-demand hook follows the last step. */
	loader->detached = !attached;
	if (!attached)
		bpfl_near_update(loader, 0);
	for (i = 0; i < loader->nr_slots; i++) {
		struct tracepoint_slot *slot = &loader->slots[i];
		struct bpf_loader_prog *status = &loader->progs[i];
		struct bpf_program *prog;

		if (!slot->attached_at_open)
			continue;
		if (!attached) {
			bpf_link__destroy(slot->link);
			slot->link = NULL;
			status->attach = NULL;
			status->skip_reason = "detached";
			continue;
		}
		if (!slot->link) {
			prog = slot->mode == MODE_TP_BTF ? slot->btf_prog : slot->raw_prog;
			slot->link = bpf_program__attach(prog);
			if (!slot->link) {
				err = -errno;
				snprintf(slot->skip_reason, sizeof(slot->skip_reason),
					 "re-attach failed: %s", strerror(-err));
				status->skip_reason = slot->skip_reason;
				log_warn("bpf: re-attaching %s: %s", slot->name, strerror(-err));
				continue;
			}
			status->attach = attach_label(slot);
			status->skip_reason = NULL;
		}
		count++;
	}
	loader->nr_attached = count + (loader->near_attached ? 1 : 0);
	if (attached)
		bpfl_near_update(loader, loader->memory_step_pages);
	return err ? err : (int)loader->nr_attached;
}

void bpfl_near_update(struct bpf_loader *loader, uint64_t memory_step_pages)
{
	struct tracepoint_slot *slot;
	struct bpf_loader_prog *status;
	struct bpf_program *prog;
	uint64_t pcp_pages = 0;
	bool near = false;
	int err;

	if (!loader->near_slot)
		return;
	slot = &loader->slots[loader->near_slot - 1];
	status = &loader->progs[loader->near_slot - 1];
	if (memory_step_pages && !loader->detached) {
		/* The buddy hook does not see pages handed out from the per-CPU lists: a step
		 * may be crossed that much late. Within twice that of a step, see every folio. */
		int64_t now = clock_monotonic_ns();

		if (!loader->near_pcp_read_ns || now - loader->near_pcp_read_ns >= loader->near_pcp_max_age_ns) {
			err = bpfl_read_pcp_pages(loader, &pcp_pages);
			loader->near_pcp_read_ns = now;
			if (err && !loader->near_read_failed)
				log_warn("bpf: reading the per-CPU page lists from %s: %s; attaching %s "
					 "whenever a memory threshold is set",
					 loader->zoneinfo_path ? loader->zoneinfo_path : "/proc/zoneinfo",
					 strerror(-err), slot->name);
			loader->near_read_failed = err != 0;
			loader->near_pcp_pages = pcp_pages;
		}
		pcp_pages = loader->near_pcp_pages;
		/* 2 * pcp_pages >= step, without overflow; empty lists hide nothing. */
		near = loader->near_read_failed ||
		       (pcp_pages && pcp_pages >= memory_step_pages / 2 + memory_step_pages % 2);
	}
	if (near == loader->near_attached)
		return;
	if (!near) {
		bpf_link__destroy(slot->link);
		slot->link = NULL;
		status->attach = NULL;
		status->skip_reason = slot->skip_reason;
		loader->near_attached = false;
		loader->nr_attached--;
		log_debug("bpf: %s detached: memory step %llu pages, per-CPU lists %llu pages",
			  slot->name, (unsigned long long)memory_step_pages,
			  (unsigned long long)pcp_pages);
		return;
	}
	prog = slot->mode == MODE_TP_BTF ? slot->btf_prog : slot->raw_prog;
	slot->link = bpf_program__attach(prog);
	if (!slot->link) {
		err = -errno;
		if (!loader->near_attach_failed)
			log_warn("bpf: attaching %s near a memory threshold: %s; the memory step "
				 "may be crossed up to %llu pages late", slot->name, strerror(-err),
				 (unsigned long long)pcp_pages);
		loader->near_attach_failed = true;
		return;
	}
	loader->near_attach_failed = false;
	status->attach = attach_label(slot);
	status->skip_reason = NULL;
	loader->near_attached = true;
	loader->nr_attached++;
	log_debug("bpf: %s attached: memory step %llu pages, per-CPU lists %llu pages", slot->name,
		  (unsigned long long)memory_step_pages, (unsigned long long)pcp_pages);
}

unsigned int bpf_loader_late_pending(const struct bpf_loader *loader)
{
	unsigned int pending = 0;

	for (size_t i = 0; loader && i < loader->nr_slots; i++)
		pending += loader->slots[i].late;
	return pending;
}

int bpf_loader_attach_late(struct bpf_loader *loader)
{
	int attached = 0;

	if (!loader || loader->detached)
		return 0;
	for (size_t i = 0; i < loader->nr_slots; i++) {
		struct tracepoint_slot *slot = &loader->slots[i];

		if (!slot->late)
			continue;
		/* ENOENT until the module is loaded: bpf_raw_tracepoint_open() looks the name up
		 * in vmlinux and in every loaded module (bpf_get_raw_tracepoint(),
		 * kernel/trace/bpf_trace.c). One syscall per missing tracepoint and call. */
		slot->link = bpf_program__attach(slot->raw_prog);
		if (!slot->link) {
			if (errno != ENOENT)
				log_debug("bpf: attaching %s: %m", slot->name);
			continue;
		}
		slot->late = false;
		slot->attached_at_open = true;
		loader->progs[i].attach = attach_label(slot);
		loader->progs[i].skip_reason = NULL;
		loader->nr_attached++;
		attached++;
		log_info("bpf: %s appeared (a module loaded after start): attached as raw_tp, "
			 "%u programs attached", slot->name, loader->nr_attached);
	}
	return attached;
}

int bpf_loader_ring_fd(const struct bpf_loader *loader)
{
	return loader ? bpf_map__fd(loader->skel->maps.wakeups) : -EINVAL;
}

int bpf_loader_consume(struct bpf_loader *loader, bpf_loader_wake_fn fn, void *ctx)
{
	int ret;

	if (!loader || !fn)
		return -EINVAL;
	loader->consume_fn = fn;
	loader->consume_ctx = ctx;
	ret = ring_buffer__consume(loader->ring);
	loader->consume_fn = NULL;
	loader->consume_ctx = NULL;
	return ret;
}

const struct bpf_loader_prog *bpf_loader_progs(const struct bpf_loader *loader, size_t *count)
{
	*count = loader ? loader->nr_slots : 0;
	return loader ? loader->progs : NULL;
}

unsigned int bpf_loader_attached_count(const struct bpf_loader *loader)
{
	return loader ? loader->nr_attached : 0;
}

bool bpf_loader_attached(const struct bpf_loader *loader, const char *tracepoint)
{
	size_t i;

	for (i = 0; loader && i < loader->nr_slots; i++)
		if (!strcmp(loader->progs[i].tracepoint, tracepoint))
			return loader->progs[i].attach != NULL;
	return false;
}
