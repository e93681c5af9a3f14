// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * BPF loader: open -> choose tp_btf / raw_tp / skip per tracepoint -> check stale pins ->
 * load -> attach, and the map accessors the daemon needs. Only libbpf 1.1 API is used.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>
#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf_loader/bpf_loader.h"
#include "evictd.skel.h"
#include "sys/log.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

#define VMLINUX_BTF_PATH "/sys/kernel/btf/vmlinux"
#define MAX_TRACEPOINTS 32

enum attach_mode {
	MODE_SKIP,
	MODE_TP_BTF,
	MODE_RAW_TP,
};

struct tracepoint_slot {
	char name[64];
	struct bpf_program *btf_prog;	/* SEC("tp_btf/<name>") */
	struct bpf_program *raw_prog;	/* SEC("raw_tp/<name>") */
	enum attach_mode mode;		/* chosen before load */
	struct bpf_link *link;
	bool attached_at_open;		/* may be re-attached by bpf_loader_set_attached() */
	char skip_reason[96];
};

struct bpf_loader {
	struct evictd_bpf *skel;
	struct ring_buffer *ring;
	bpf_loader_wake_fn consume_fn;	/* set for the duration of bpf_loader_consume() */
	void *consume_ctx;
	int nr_cpus;
	char *pin_dir;			/* NULL when not pinning */
	struct bpf_loader_pin_report pins;
	struct tracepoint_slot slots[MAX_TRACEPOINTS];
	struct bpf_loader_prog progs[MAX_TRACEPOINTS];
	size_t nr_slots;
	unsigned int nr_attached;
};

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

/* ---- bpffs and pin directory ------------------------------------------------------------ */

static int parent_dir(const char *path, char *out, size_t size)
{
	const char *slash = strrchr(path, '/');
	size_t len;

	if (!slash)
		return -EINVAL;
	len = slash == path ? 1 : (size_t)(slash - path);
	if (len >= size)
		return -ENAMETOOLONG;
	memcpy(out, path, len);
	out[len] = '\0';
	return 0;
}

/* Pins need a bpffs: mount one on the pin directory's parent when there is none (a real
 * daemon must; /sys/fs/bpf is not mounted on every host). */
static int ensure_bpffs(const char *pin_dir)
{
	char parent[PATH_MAX];
	struct statfs fs;
	int err;

	if (statfs(pin_dir, &fs) == 0 && fs.f_type == BPF_FS_MAGIC)
		return 0;
	err = parent_dir(pin_dir, parent, sizeof(parent));
	if (err) {
		log_err("bpf: pin directory '%s' must be an absolute path", pin_dir);
		return err;
	}
	if (statfs(parent, &fs) == 0 && fs.f_type == BPF_FS_MAGIC)
		return 0;
	if (mkdir(parent, 0700) && errno != EEXIST) {
		err = -errno;
		log_err("bpf: mkdir %s: %m", parent);
		return err;
	}
	if (mount("bpf", parent, "bpf", 0, "mode=0700")) {
		err = -errno;
		log_err("bpf: mounting bpffs on %s: %m", parent);
		return err;
	}
	log_info("bpf: mounted bpffs on %s", parent);
	return 0;
}

static int make_pin_dir(const char *pin_dir)
{
	struct stat st;
	int err;

	if (mkdir(pin_dir, 0700) == 0)
		return 0;
	if (errno != EEXIST) {
		err = -errno;
		log_err("bpf: mkdir %s: %m", pin_dir);
		return err;
	}
	if (stat(pin_dir, &st)) {
		err = -errno;
		log_err("bpf: stat %s: %m", pin_dir);
		return err;
	}
	if (!S_ISDIR(st.st_mode)) {
		log_err("bpf: pin path %s exists and is not a directory", pin_dir);
		return -ENOTDIR;
	}
	if ((st.st_mode & 07777) != 0700 && chmod(pin_dir, 0700)) {
		err = -errno;
		log_err("bpf: chmod 0700 %s: %m", pin_dir);
		return err;
	}
	return 0;
}

/* ---- stale pins -------------------------------------------------------------------------- */

/* Same memory layout: kinds, sizes, member names and offsets (typedefs/modifiers skipped). */
static bool btf_same_layout(const struct btf *a, __u32 a_id, const struct btf *b, __u32 b_id,
			    int depth)
{
	const struct btf_type *ta, *tb;
	int ra = btf__resolve_type(a, a_id), rb = btf__resolve_type(b, b_id);

	if (ra < 0 || rb < 0 || depth > 4)
		return false;
	ta = btf__type_by_id(a, ra);
	tb = btf__type_by_id(b, rb);
	if (!ta || !tb || btf_kind(ta) != btf_kind(tb) ||
	    btf__resolve_size(a, ra) != btf__resolve_size(b, rb))
		return false;
	if (btf_is_array(ta)) {
		const struct btf_array *aa = btf_array(ta), *ab = btf_array(tb);

		return aa->nelems == ab->nelems &&
		       btf_same_layout(a, aa->type, b, ab->type, depth + 1);
	}
	if (btf_is_composite(ta)) {
		const struct btf_member *ma = btf_members(ta), *mb = btf_members(tb);
		int i;

		if (btf_vlen(ta) != btf_vlen(tb))
			return false;
		for (i = 0; i < btf_vlen(ta); i++, ma++, mb++) {
			if (strcmp(btf__name_by_offset(a, ma->name_off),
				   btf__name_by_offset(b, mb->name_off)) ||
			    btf_member_bit_offset(ta, i) != btf_member_bit_offset(tb, i) ||
			    !btf_same_layout(a, ma->type, b, mb->type, depth + 1))
				return false;
		}
	}
	return true;
}

/* 1: the pin at path can be reused by map, 0: it cannot (why says so), <0: error. */
static int pin_compatible(const struct bpf_map *map, const struct btf *obj_btf,
			  const char *path, char *why, size_t why_len)
{
	struct bpf_map_info info = {};
	__u32 info_len = sizeof(info);
	struct btf *pinned_btf;
	int fd, ret = 0;

	fd = bpf_obj_get(path);
	if (fd < 0) {
		snprintf(why, why_len, "not a BPF map: %s", strerror(errno));
		return 0;
	}
	if (bpf_obj_get_info_by_fd(fd, &info, &info_len)) {
		ret = -errno;
		log_err("bpf: reading map info of %s: %m", path);
		goto out;
	}
	if (info.type != bpf_map__type(map) || info.key_size != bpf_map__key_size(map) ||
	    info.value_size != bpf_map__value_size(map) ||
	    info.max_entries != bpf_map__max_entries(map) ||
	    info.map_flags != bpf_map__map_flags(map)) {
		snprintf(why, why_len,
			 "type/key/value/entries/flags %u/%u/%u/%u/%#x, want %u/%u/%u/%u/%#x",
			 info.type, info.key_size, info.value_size, info.max_entries,
			 info.map_flags, bpf_map__type(map), bpf_map__key_size(map),
			 bpf_map__value_size(map), bpf_map__max_entries(map),
			 bpf_map__map_flags(map));
		goto out;
	}
	if (!info.btf_id) {
		snprintf(why, why_len, "it has no BTF");
		goto out;
	}
	pinned_btf = btf__load_from_kernel_by_id(info.btf_id);
	if (!pinned_btf) {
		snprintf(why, why_len, "its BTF %u cannot be read: %s", info.btf_id,
			 strerror(errno));
		goto out;
	}
	if (btf_same_layout(pinned_btf, info.btf_value_type_id, obj_btf,
			    bpf_map__btf_value_type_id(map), 0))
		ret = 1;
	else
		snprintf(why, why_len, "its value layout differs");
	btf__free(pinned_btf);
out:
	close(fd);
	return ret;
}

/* Before load: keep compatible pins (libbpf reuses them: counters carry over), remove
 * incompatible ones so libbpf creates fresh maps. Each outcome is logged. */
static int check_stale_pins(struct bpf_loader *loader)
{
	const struct btf *obj_btf = bpf_object__btf(loader->skel->obj);
	struct bpf_map *map;
	char why[160];

	memset(&loader->pins, 0, sizeof(loader->pins));
	bpf_object__for_each_map(map, loader->skel->obj) {
		const char *path = bpf_map__pin_path(map);
		int ret;

		if (!path)
			continue;
		if (access(path, F_OK)) {
			loader->pins.created++;
			continue;
		}
		why[0] = '\0';
		ret = pin_compatible(map, obj_btf, path, why, sizeof(why));
		if (ret < 0)
			return ret;
		if (ret) {
			loader->pins.reused++;
			log_info("bpf: carrying over counters from %s (left by a previous run)", path);
			continue;
		}
		log_warn("bpf: dropping old counters in %s: incompatible pin (%s)", path, why);
		if (unlink(path)) {
			ret = -errno;
			log_err("bpf: removing stale pin %s: %m", path);
			return ret;
		}
		loader->pins.replaced++;
	}
	return 0;
}

static void chmod_pins(struct bpf_loader *loader)
{
	struct bpf_map *map;

	bpf_object__for_each_map(map, loader->skel->obj) {
		const char *path = bpf_map__pin_path(map);

		if (path && bpf_map__is_pinned(map) && chmod(path, 0600))
			log_warn("bpf: chmod 0600 %s: %m", path);
	}
}

/* ---- which tracepoints this kernel has -------------------------------------------------- */

struct kernel_btfs {
	struct btf *vmlinux;
	struct btf **modules;
	size_t nr_modules;
	bool modules_loaded;
};

static void kernel_btfs_free(struct kernel_btfs *k)
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
static int plan_programs(struct bpf_loader *loader, const struct bpf_loader_opts *opts,
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

/* ---- open / load / attach --------------------------------------------------------------- */

static int open_and_load(struct bpf_loader *loader, const struct bpf_loader_opts *opts,
			 struct kernel_btfs *btfs, bool raw_only)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts, .pin_root_path = loader->pin_dir);
	struct bpf_map *map;
	int err;

	loader->skel = evictd_bpf__open_opts(&open_opts);
	if (!loader->skel) {
		err = -errno;
		log_err("bpf: opening the embedded BPF object: %m");
		return err;
	}
	err = plan_programs(loader, opts, btfs, raw_only);
	if (err)
		return err;
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
		err = check_stale_pins(loader);
		if (err)
			return err;
	}
	err = evictd_bpf__load(loader->skel);
	if (err)
		return err;
	return 0;
}

static void attach_programs(struct bpf_loader *loader)
{
	unsigned int by_btf = 0, by_raw = 0;
	char skipped[512] = "";
	size_t i;

	loader->nr_attached = 0;
	for (i = 0; i < loader->nr_slots; i++) {
		struct tracepoint_slot *slot = &loader->slots[i];
		struct bpf_loader_prog *status = &loader->progs[i];
		struct bpf_program *prog;

		status->tracepoint = slot->name;
		status->attach = NULL;
		status->skip_reason = slot->skip_reason;
		if (slot->mode != MODE_SKIP) {
			prog = slot->mode == MODE_TP_BTF ? slot->btf_prog : slot->raw_prog;
			slot->link = bpf_program__attach(prog);
			if (slot->link) {
				status->attach = slot->mode == MODE_TP_BTF ? "tp_btf" : "raw_tp";
				status->skip_reason = NULL;
				slot->attached_at_open = true;
				loader->nr_attached++;
				if (slot->mode == MODE_TP_BTF)
					by_btf++;
				else
					by_raw++;
				continue;
			}
			snprintf(slot->skip_reason, sizeof(slot->skip_reason), "attach failed: %s",
				 strerror(errno));
		}
		log_info("bpf: skipping %s: %s", slot->name, slot->skip_reason);
		if (strlen(skipped) + strlen(slot->name) + 3 < sizeof(skipped)) {
			if (skipped[0])
				strcat(skipped, ", ");
			strcat(skipped, slot->name);
		}
	}
	log_info("bpf: attached %u of %zu tracepoints (tp_btf %u, raw_tp %u)%s%s",
		 loader->nr_attached, loader->nr_slots, by_btf, by_raw,
		 skipped[0] ? "; skipped: " : "", skipped);
}

static int ring_sample(void *ctx, void *data, size_t size)
{
	struct bpf_loader *loader = ctx;
	struct evictd_wake wake;

	if (size < sizeof(wake) || !loader->consume_fn)
		return 0;
	memcpy(&wake, data, sizeof(wake));
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

static int preflight(void)
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

int bpf_loader_open(struct bpf_loader **out, const struct bpf_loader_opts *opts)
{
	static const struct bpf_loader_opts no_opts;
	struct kernel_btfs btfs = {};
	struct bpf_loader *loader;
	int err, attempt;

	*out = NULL;
	if (!opts)
		opts = &no_opts;
	libbpf_set_print(libbpf_print);
	err = preflight();
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
		err = ensure_bpffs(loader->pin_dir);
		if (err)
			goto cleanup;
		err = make_pin_dir(loader->pin_dir);
		if (err)
			goto cleanup;
	}
	btfs.vmlinux = btf__load_vmlinux_btf();
	if (!btfs.vmlinux) {
		err = -errno;
		log_warn("bpf: unavailable: cannot parse kernel BTF: %m; using polling and PSI");
		goto cleanup;
	}

	/* tp_btf first; if the verifier rejects that object (a kernel whose tracepoint BTF does
	 * not match), the same bodies as raw_tp, which depend on nothing but CO-RE. */
	for (attempt = opts->force_raw_tp ? 1 : 0; attempt < 2; attempt++) {
		err = open_and_load(loader, opts, &btfs, attempt == 1);
		if (!err)
			break;
		evictd_bpf__destroy(loader->skel);
		loader->skel = NULL;
		if (err == -EPERM || err == -EACCES) {
			errno = -err;
			log_warn("bpf: unavailable: loading programs: %m (needs root or "
				 "CAP_BPF+CAP_PERFMON); using polling and PSI");
			err = -EPERM;
			goto cleanup;
		}
		if (attempt == 0)
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
		chmod_pins(loader);
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
	kernel_btfs_free(&btfs);
	*out = loader;
	return (int)loader->nr_attached;

cleanup:
	kernel_btfs_free(&btfs);
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
			status->attach = slot->mode == MODE_TP_BTF ? "tp_btf" : "raw_tp";
			status->skip_reason = NULL;
		}
		count++;
	}
	loader->nr_attached = count;
	return err ? err : (int)count;
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
	return 0;
}

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

const char *bpf_loader_pin_dir(const struct bpf_loader *loader)
{
	return loader ? loader->pin_dir : NULL;
}

void bpf_loader_pin_report(const struct bpf_loader *loader, struct bpf_loader_pin_report *out)
{
	if (loader)
		*out = loader->pins;
	else
		memset(out, 0, sizeof(*out));
}

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
