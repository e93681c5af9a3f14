// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * BPF loader, feature probing: can this process use BPF at all (privilege, kernel BTF, ring
 * buffer), and for each tracepoint whether to load its tp_btf program (the kernel has BTF
 * for it, in vmlinux or a module), its raw_tp fallback (the tracepoint exists: kallsyms) or
 * neither (skipped, with the reason shown by evictctl status).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf_loader/internal.h"
#include "sys/fileio.h"
#include "sys/log.h"

/* ---- which tracepoints this kernel has -------------------------------------------------- */

void bpfl_kernel_btfs_free(struct kernel_btfs *k)
{
	size_t i;

	for (i = 0; i < k->nr_modules; i++)
		btf__free(k->modules[i]);
	free(k->modules);
	btf__free(k->vmlinux);
	memset(k, 0, sizeof(*k));
}

/* Module BTF (ext4 and xfs are modules on Debian's 6.1), loaded only when needed. */
static void load_module_btfs(struct kernel_btfs *k)
{
	__u32 id = 0;

	k->modules_loaded = true;
	while (!bpf_btf_get_next_id(id, &id)) {
		struct bpf_btf_info info = {};
		__u32 info_len = sizeof(info);
		char name[64] = "";
		struct btf **grown, *btf;
		int fd;

		fd = bpf_btf_get_fd_by_id(id);
		if (fd < 0)
			continue;
		info.name = (__u64)(unsigned long)name;
		info.name_len = sizeof(name);
		if (bpf_obj_get_info_by_fd(fd, &info, &info_len) || !info.kernel_btf ||
		    !strcmp(name, "vmlinux")) {
			close(fd);
			continue;
		}
		close(fd);
		btf = btf__load_from_kernel_by_id_split(id, k->vmlinux);
		if (!btf)
			continue;
		grown = realloc(k->modules, (k->nr_modules + 1) * sizeof(*grown));
		if (!grown) {
			btf__free(btf);
			return;
		}
		k->modules = grown;
		k->modules[k->nr_modules++] = btf;
	}
}

static bool has_btf_tracepoint(struct kernel_btfs *k, const char *tp)
{
	char name[96];
	size_t i;

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	if (btf__find_by_name_kind(k->vmlinux, name, BTF_KIND_TYPEDEF) > 0)
		return true;
	if (!k->modules_loaded)
		load_module_btfs(k);
	for (i = 0; i < k->nr_modules; i++)
		if (btf__find_by_name_kind(k->modules[i], name, BTF_KIND_TYPEDEF) > 0)
			return true;
	return false;
}

/* Without BTF for it, a tracepoint still exists when the kernel has its __traceiter_<tp>
 * function (5.10+; __tracepoint_<tp> is data, listed only with KALLSYMS_ALL), in vmlinux or
 * a loaded module: raw_tp can attach to it. One pass over kallsyms for every slot still
 * undecided (mode MODE_RAW_TP candidates are marked MODE_SKIP until found). */
static void find_raw_tracepoints(struct bpf_loader *loader, const bool *wanted)
{
	char line[512];
	FILE *kallsyms;
	size_t i;

	kallsyms = fopen("/proc/kallsyms", "re");
	if (!kallsyms) {
		log_warn("bpf: cannot read /proc/kallsyms: %m");
		return;
	}
	while (fgets(line, sizeof(line), kallsyms)) {
		char *sym = strchr(line, ' '), *name;

		if (sym)
			sym = strchr(sym + 1, ' ');
		if (!sym)
			continue;
		sym++;
		sym[strcspn(sym, " \t\n")] = '\0';
		if (!strncmp(sym, "__traceiter_", 12))
			name = sym + 12;
		else if (!strncmp(sym, "__tracepoint_", 13))
			name = sym + 13;
		else
			continue;
		for (i = 0; i < loader->nr_slots; i++)
			if (wanted[i] && !strcmp(loader->slots[i].name, name))
				loader->slots[i].mode = MODE_RAW_TP;
	}
	fclose(kallsyms);
}

/* Tracepoints of filesystem modules (ext4, xfs: modules on Debian): loaded after evictd
 * started, they still get their programs (bpf_loader_attach_late). */
static bool is_module_tracepoint(const char *tp)
{
	return !strncmp(tp, "ext4_", 5) || !strncmp(tp, "xfs_", 4);
}

/* The per-memcg page-cache programs, left out with opts->no_page_cache. */
static bool is_page_cache_tracepoint(const char *tp)
{
	return !strcmp(tp, "mm_filemap_add_to_page_cache") ||
	       !strcmp(tp, "mm_filemap_delete_from_page_cache") ||
	       !strcmp(tp, "mm_lru_activate");
}

/* Programs that only feed the inspection maps: attached with opts->inspect alone. */
static bool is_inspect_tracepoint(const char *tp)
{
	static const char *const inspect_only[] = {
		"mm_vmscan_direct_reclaim_end", "mm_vmscan_memcg_reclaim_end",
		"mm_lru_activate", "mm_filemap_add_to_page_cache",
		"mm_filemap_delete_from_page_cache", "mm_vmscan_lru_shrink_inactive",
		"sched_process_exit", "ext4_free_inode", "xfs_remove",
	};
	size_t i;

	for (i = 0; i < sizeof(inspect_only) / sizeof(inspect_only[0]); i++)
		if (!strcmp(tp, inspect_only[i]))
			return true;
	return false;
}

/* Why a tracepoint is left out by the options, or NULL when it is wanted. */
static const char *left_out_by_options(const char *tp, const struct bpf_loader_opts *opts)
{
	enum bpf_loader_memory_hook hook = opts->memory_hook;

	if (!strcmp(tp, "mm_page_alloc") && hook != BPF_MEMORY_HOOK_PAGE_ALLOC)
		return "not the memory hook";
	if (!strcmp(tp, MEMORY_NEAR_HOOK) &&
	    hook != BPF_MEMORY_HOOK_CHARGE && hook != BPF_MEMORY_HOOK_LRU_INSERTION)
		return "not the memory hook";
	if (!strcmp(tp, MEMORY_BUDDY_HOOK) &&
	    hook != BPF_MEMORY_HOOK_CHARGE && hook != BPF_MEMORY_HOOK_BUDDY)
		return "not the memory hook";
	if (!strcmp(tp, MEMORY_CHARGE_HOOK) && hook != BPF_MEMORY_HOOK_CHARGE)
		return "not the memory hook";
	if (!opts->inspect && is_inspect_tracepoint(tp))
		return "inspection only (--bpf-inspect)";
	if (opts->no_page_cache && is_page_cache_tracepoint(tp))
		return "page-cache accounting disabled";
	return NULL;
}

/* Is the memory controller enabled (/proc/cgroups)? Without it nothing is charged. */
static bool memory_controller_enabled(void)
{
	char line[256], name[64];
	unsigned int hierarchy, groups, enabled;
	bool found = false;
	FILE *f = fopen("/proc/cgroups", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %u %u %u", name, &hierarchy, &groups, &enabled) == 4 &&
		    !strcmp(name, "memory"))
			found = enabled == 1;
	fclose(f);
	return found;
}

/* ---- mark_victim's argument shape ------------------------------------------------------ */

static const struct btf_type *skip_mods_typedefs(const struct btf *btf, __u32 *id)
{
	const struct btf_type *t = btf__type_by_id(btf, *id);

	while (t && (btf_is_mod(t) || btf_is_typedef(t))) {
		*id = t->type;
		t = btf__type_by_id(btf, *id);
	}
	return t;
}

enum bpf_loader_mark_victim_shape bpf_loader_mark_victim_shape(const struct btf *btf)
{
	const struct btf_type *t, *arg;
	const struct btf_param *params;
	const char *name;
	__s32 typedef_id;
	__u32 id;

	if (!btf)
		return BPF_MARK_VICTIM_UNKNOWN;
	typedef_id = btf__find_by_name_kind(btf, "btf_trace_mark_victim", BTF_KIND_TYPEDEF);
	if (typedef_id <= 0)
		return BPF_MARK_VICTIM_UNKNOWN;
	/* typedef void (*btf_trace_mark_victim)(void *__data, <TP_PROTO args>) */
	t = btf__type_by_id(btf, typedef_id);
	id = t->type;
	t = skip_mods_typedefs(btf, &id);
	if (!t || !btf_is_ptr(t))
		return BPF_MARK_VICTIM_UNKNOWN;
	id = t->type;
	t = skip_mods_typedefs(btf, &id);
	if (!t || !btf_is_func_proto(t) || btf_vlen(t) < 2)
		return BPF_MARK_VICTIM_UNKNOWN;
	params = btf_params(t);
	id = params[1].type;
	arg = skip_mods_typedefs(btf, &id);
	if (!arg)
		return BPF_MARK_VICTIM_UNKNOWN;
	if (btf_is_int(arg) && arg->size == 4)
		return BPF_MARK_VICTIM_PID;
	if (!btf_is_ptr(arg))
		return BPF_MARK_VICTIM_UNKNOWN;
	id = arg->type;
	arg = skip_mods_typedefs(btf, &id);
	if (!arg || !btf_is_struct(arg))
		return BPF_MARK_VICTIM_UNKNOWN;
	name = btf__name_by_offset(btf, arg->name_off);
	return name && !strcmp(name, "task_struct") ? BPF_MARK_VICTIM_TASK
						    : BPF_MARK_VICTIM_UNKNOWN;
}

const char *bpf_loader_mark_victim_shape_name(enum bpf_loader_mark_victim_shape shape)
{
	switch (shape) {
	case BPF_MARK_VICTIM_TASK: return "task_struct *";
	case BPF_MARK_VICTIM_PID: return "int pid";
	default: return "unknown";
	}
}

/* Point the slot at the programs for this kernel's argument shape; false: skip it. */
static bool choose_variant(struct tracepoint_slot *slot, struct kernel_btfs *btfs,
			   const struct bpf_loader_opts *opts)
{
	enum bpf_loader_mark_victim_shape shape;

	if (strcmp(slot->name, "mark_victim"))
		return true;
	shape = opts->force_mark_victim_shape ? (enum bpf_loader_mark_victim_shape)opts->force_mark_victim_shape
					      : bpf_loader_mark_victim_shape(btfs->vmlinux);
	log_debug("bpf: mark_victim passes %s", bpf_loader_mark_victim_shape_name(shape));
	if (shape == BPF_MARK_VICTIM_PID) {
		slot->btf_prog = slot->alt_btf_prog;
		slot->raw_prog = slot->alt_raw_prog;
	} else if (shape != BPF_MARK_VICTIM_TASK) {
		snprintf(slot->skip_reason, sizeof(slot->skip_reason),
			 "argument shape unknown (no btf_trace_mark_victim in kernel BTF)");
		return false;
	}
	return true;
}

static struct tracepoint_slot *slot_for(struct bpf_loader *loader, const char *tp)
{
	struct tracepoint_slot *slot;
	size_t i;

	for (i = 0; i < loader->nr_slots; i++)
		if (!strcmp(loader->slots[i].name, tp))
			return &loader->slots[i];
	if (loader->nr_slots == MAX_TRACEPOINTS)
		return NULL;
	slot = &loader->slots[loader->nr_slots++];
	memset(slot, 0, sizeof(*slot));
	snprintf(slot->name, sizeof(slot->name), "%s", tp);
	return slot;
}

/* Pair programs by tracepoint and keep one of each pair (or none) for loading. */
int bpfl_plan_programs(struct bpf_loader *loader, const struct bpf_loader_opts *opts,
			 struct kernel_btfs *btfs, enum plan_level level)
{
	bool need_raw[MAX_TRACEPOINTS] = {}, any_raw = false, raw_only = level == PLAN_RAW_ONLY;
	struct bpf_program *prog;
	size_t i;

	loader->nr_slots = 0;
	loader->fentry_planned = false;
	bpf_object__for_each_program(prog, loader->skel->obj) {
		const char *sec = bpf_program__section_name(prog);
		struct tracepoint_slot *slot;
		bool fentry = !strncmp(sec, "fentry/", 7);
		bool btf_kind = fentry || !strncmp(sec, "tp_btf/", 7);

		if (!btf_kind && strncmp(sec, "raw_tp/", 7))
			continue;
		slot = slot_for(loader, sec + 7);
		if (!slot) {
			log_err("bpf: more than %d tracepoints in the object", MAX_TRACEPOINTS);
			return -E2BIG;
		}
		if (strstr(bpf_program__name(prog), "_pid_")) {
			if (btf_kind)
				slot->alt_btf_prog = prog;
			else
				slot->alt_raw_prog = prog;
		} else if (btf_kind) {
			slot->btf_prog = prog;
			slot->fentry = fentry;
		} else {
			slot->raw_prog = prog;
		}
		bpf_program__set_autoload(prog, false);
	}

	for (i = 0; i < loader->nr_slots; i++) {
		struct tracepoint_slot *slot = &loader->slots[i];

		const char *left_out = left_out_by_options(slot->name, opts);

		slot->mode = MODE_SKIP;
		slot->left_out = left_out != NULL;
		if (left_out) {
			snprintf(slot->skip_reason, sizeof(slot->skip_reason), "%s", left_out);
			continue;
		}
		if (!choose_variant(slot, btfs, opts))
			continue;
		if (slot->fentry) {
			if (level != PLAN_ALL)
				snprintf(slot->skip_reason, sizeof(slot->skip_reason),
					 "fentry refused by this kernel, or raw_tp fallback in use");
			else if (btf__find_by_name_kind(btfs->vmlinux, slot->name, BTF_KIND_FUNC) <= 0)
				snprintf(slot->skip_reason, sizeof(slot->skip_reason),
					 "function not in this kernel's BTF");
			else if (!strcmp(slot->name, MEMORY_CHARGE_HOOK) &&
				 !memory_controller_enabled())
				snprintf(slot->skip_reason, sizeof(slot->skip_reason),
					 "memory controller disabled: nothing is charged");
			else
				loader->fentry_planned = true, slot->mode = MODE_TP_BTF;
			continue;
		}
		/* The memory hook's fallbacks (doc/DESIGN.md "The memory hook"). */
		slot->standby_for = NULL;
		slot->on_demand = false;
		if (opts->memory_hook == BPF_MEMORY_HOOK_CHARGE) {
			if (!strcmp(slot->name, MEMORY_BUDDY_HOOK)) {
				slot->standby_for = MEMORY_CHARGE_HOOK;
			} else if (!strcmp(slot->name, MEMORY_NEAR_HOOK)) {
				slot->standby_for = MEMORY_BUDDY_HOOK;
				slot->on_demand = true;
			}
		}
		snprintf(slot->skip_reason, sizeof(slot->skip_reason),
			 "tracepoint not in this kernel (module not loaded?)");
		if (!raw_only && slot->btf_prog && has_btf_tracepoint(btfs, slot->name))
			slot->mode = MODE_TP_BTF;
		else if (slot->raw_prog)
			any_raw = need_raw[i] = true;
	}
	if (any_raw)
		find_raw_tracepoints(loader, need_raw);
	for (i = 0; i < loader->nr_slots; i++) {
		struct tracepoint_slot *slot = &loader->slots[i];

		slot->late = false;
		if (slot->mode != MODE_SKIP || slot->left_out || !slot->raw_prog ||
		    !is_module_tracepoint(slot->name) || !need_raw[i])
			continue;
		/* A raw_tp program loads without its tracepoint (it is named at attach, by
		 * bpf_raw_tracepoint_open()), so it can wait for the module. */
		slot->mode = MODE_RAW_TP;
		slot->late = true;
		snprintf(slot->skip_reason, sizeof(slot->skip_reason),
			 "tracepoint not in this kernel yet (module not loaded): attached when it is");
	}

	for (i = 0; i < loader->nr_slots; i++) {
		struct tracepoint_slot *slot = &loader->slots[i];

		if (slot->mode == MODE_TP_BTF)
			bpf_program__set_autoload(slot->btf_prog, true);
		else if (slot->mode == MODE_RAW_TP)
			bpf_program__set_autoload(slot->raw_prog, true);
	}
	return 0;
}

int bpfl_preflight(void)
{
	int ret, fd;

	if (access(VMLINUX_BTF_PATH, R_OK)) {
		ret = -errno;
		log_warn("bpf: unavailable: kernel has no BTF (%s: %m); using polling and PSI",
			 VMLINUX_BTF_PATH);
		return ret == -EACCES ? -EPERM : -ENOENT;
	}
	/* Privilege first (libbpf's probes report EPERM as "not supported"), then the ring
	 * buffer, which an old kernel rejects as an unknown map type. */
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, sizeof(__u32), sizeof(__u32), 1, NULL);
	if (fd < 0) {
		ret = -errno;
		log_warn("bpf: unavailable: cannot create BPF maps: %m (needs root or "
			 "CAP_BPF+CAP_PERFMON); using polling and PSI");
		return ret == -EACCES ? -EPERM : ret;
	}
	close(fd);
	fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, NULL, 0, 0, 4096, NULL);
	if (fd < 0) {
		log_warn("bpf: unavailable: kernel has no BPF ring buffer (Linux < 5.8): %m; "
			 "using polling and PSI");
		return -EOPNOTSUPP;
	}
	close(fd);
	return 0;
}

/* ---- per-CPU page lists ---- */

int bpf_loader_pcp_pages(const char *zoneinfo, uint64_t *pages)
{
	const char *line = zoneinfo;
	bool in_pagesets = false, found = false;
	uint64_t sum = 0;

	*pages = 0;
	/* "  pagesets" opens the per-CPU part of a zone; each "    cpu: N" block there has a
	 * "count: N" (mm/vmstat.c zoneinfo_show_print); "Node N, zone X" starts the next zone. */
	while (line && *line) {
		const char *end = strchr(line, '\n');
		const char *word = line + strspn(line, " \t");
		unsigned long long count;
		char *after;

		if (!strncmp(line, "Node ", 5))
			in_pagesets = false;
		else if (!strncmp(word, "pagesets", 8))
			in_pagesets = true;
		else if (in_pagesets && !strncmp(word, "count:", 6)) {
			const char *digits = word + 6 + strspn(word + 6, " \t");

			/* strtoull would take "-1" as 2^64 - 1. */
			if (*digits < '0' || *digits > '9')
				return -EINVAL;
			errno = 0;
			count = strtoull(digits, &after, 10);
			if (errno || (*after && *after != '\n' && *after != ' ') || sum + count < sum)
				return -EINVAL;
			sum += count;
			found = true;
		}
		line = end ? end + 1 : NULL;
	}
	if (!found)
		return -EINVAL;
	*pages = sum;
	return 0;
}

int bpfl_read_pcp_pages(const struct bpf_loader *loader, uint64_t *pages)
{
	const char *path = loader->zoneinfo_path ? loader->zoneinfo_path : "/proc/zoneinfo";
	/* ~1.5 KiB per zone plus ~100 bytes per CPU and zone: grown until the text fits. */
	size_t cap = 16384;
	ssize_t len;
	int err;

	for (;;) {
		char *text = malloc(cap);

		if (!text)
			return -ENOMEM;
		len = fileio_read_at(AT_FDCWD, path, text, cap);
		if (len >= 0 && (size_t)len + 1 >= cap && cap < (16u << 20)) {
			free(text);
			cap *= 4;
			continue;
		}
		err = len < 0 ? (int)len : bpf_loader_pcp_pages(text, pages);
		free(text);
		return err;
	}
}
