// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * BPF loader, feature probing: can this process use BPF at all (privilege, kernel BTF, ring
 * buffer), and for each tracepoint whether to load its tp_btf program (the kernel has BTF
 * for it, in vmlinux or a module), its raw_tp fallback (the tracepoint exists: kallsyms) or
 * neither (skipped, with the reason shown by evictctl status).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf_loader/internal.h"
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

/* The per-memcg page-cache programs, left out with opts->no_page_cache. */
static bool is_page_cache_tracepoint(const char *tp)
{
	return !strcmp(tp, "mm_filemap_add_to_page_cache") ||
	       !strcmp(tp, "mm_filemap_delete_from_page_cache") ||
	       !strcmp(tp, "mm_lru_activate");
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
			 struct kernel_btfs *btfs, bool raw_only)
{
	bool need_raw[MAX_TRACEPOINTS] = {}, any_raw = false;
	struct bpf_program *prog;
	size_t i;

	loader->nr_slots = 0;
	bpf_object__for_each_program(prog, loader->skel->obj) {
		const char *sec = bpf_program__section_name(prog);
		struct tracepoint_slot *slot;
		bool btf_kind = !strncmp(sec, "tp_btf/", 7);

		if (!btf_kind && strncmp(sec, "raw_tp/", 7))
			continue;
		slot = slot_for(loader, sec + 7);
		if (!slot) {
			log_err("bpf: more than %d tracepoints in the object", MAX_TRACEPOINTS);
			return -E2BIG;
		}
		if (btf_kind)
			slot->btf_prog = prog;
		else
			slot->raw_prog = prog;
		bpf_program__set_autoload(prog, false);
	}

	for (i = 0; i < loader->nr_slots; i++) {
		struct tracepoint_slot *slot = &loader->slots[i];

		slot->mode = MODE_SKIP;
		if (opts->no_page_cache && is_page_cache_tracepoint(slot->name)) {
			snprintf(slot->skip_reason, sizeof(slot->skip_reason),
				 "page-cache accounting disabled");
			continue;
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
