// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Test-only object (never loaded by evictd): runs bpf/folio.h's reads on a fake folio held
 * in a map, so tests/bpf/test_bpf_shapes.c can load it against synthesized BTF
 * (bpf_object_open_opts.btf_custom_path: CO-RE relocates against that BTF instead of the
 * running kernel's) and check page counts on layouts this host's kernel does not have:
 * 5.14/5.15 (no struct folio), 5.16 .. 6.0, 6.1, 6.18. Run with BPF_PROG_TEST_RUN.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "folio.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Room for a head page and its tail pages on any layout. */
struct fake_folio {
	__u8 bytes[1024];
};

struct shape_result {
	__u64 flags;
	__u64 pages;
	__u64 swap_backed;
	__u64 runs;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fake_folio);
} fake_folio SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct shape_result);
} shape_result SEC(".maps");

/* raw_tp: the probe-read path, which every layout supports (tp_btf would need the
 * synthesized types in the kernel's BTF). */
SEC("raw_tp")
int read_fake_folio(void *ctx)
{
	struct shape_result *result;
	struct folio *folio;
	unsigned long flags;
	__u32 zero = 0;

	folio = bpf_map_lookup_elem(&fake_folio, &zero);
	result = bpf_map_lookup_elem(&shape_result, &zero);
	if (!folio || !result)
		return 0;
	flags = folio_flags(folio, false);
	result->flags = flags;
	result->pages = folio_pages(folio, flags, false);
	result->swap_backed = folio_swap_backed(flags);
	result->runs++;
	return 0;
}
