/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Folio (or head page) reads shared by bpf/evictd.bpf.c and its shape test object
 * (bpf/shapes_test.bpf.c, tests/bpf/test_bpf_shapes.c): flags and the number of pages, on
 * every layout the supported kernels have, chosen by CO-RE against the running kernel's BTF:
 *  - flags: an unsigned long in struct folio (5.16 .. 6.16), memdesc_flags_t (6.17+), or
 *    struct page's flags where there is no struct folio (5.14, 5.15);
 *  - pages: struct folio's _nr_pages (6.14+), _folio_nr_pages (6.1 .. 6.13), _folio_order,
 *    the low byte of _flags_1, else the first tail page's compound_nr / compound_order
 *    (5.14 .. 6.0), for a large folio (PG_head) only.
 * Include after vmlinux.h and the libbpf headers.
 */
#ifndef EVICTD_BPF_FOLIO_H
#define EVICTD_BPF_FOLIO_H

/* ---- CO-RE flavours for fields that moved between kernels ------------------------------ */

struct folio___flags_word {		/* up to 6.16: unsigned long flags */
	unsigned long flags;
} __attribute__((preserve_access_index));

struct folio___flags_memdesc {		/* 6.17+: memdesc_flags_t { unsigned long f; } */
	struct {
		unsigned long f;
	} flags;
} __attribute__((preserve_access_index));

struct folio___nr_pages {		/* 6.14+ */
	unsigned int _nr_pages;
} __attribute__((preserve_access_index));

struct folio___folio_nr_pages {		/* 5.18 .. 6.13, 64-bit */
	unsigned int _folio_nr_pages;
} __attribute__((preserve_access_index));

struct folio___folio_order {		/* 5.18 .. 6.5 */
	unsigned char _folio_order;
} __attribute__((preserve_access_index));

struct folio___flags_1 {		/* order in the low byte of the second page's flags */
	unsigned long _flags_1;
} __attribute__((preserve_access_index));

/* struct page, where the tracepoints pass one (no struct folio: 5.14, 5.15) or where struct
 * folio does not hold the size (5.16 .. 6.0). */
struct page___flags_word {
	unsigned long flags;
} __attribute__((preserve_access_index));

struct page___compound_nr {		/* 5.9 .. 6.2, 64-bit: in the first tail page */
	unsigned int compound_nr;
} __attribute__((preserve_access_index));

struct page___compound_order {		/* up to 6.2: in the first tail page */
	unsigned char compound_order;
} __attribute__((preserve_access_index));


/* ---- reads ---- */

/*
 * Folio fields are read on the page-cache hot path. tp_btf programs (direct = true) load
 * them straight from the BTF-typed argument, a plain load the verifier allows; raw_tp
 * programs must go through bpf_probe_read_kernel(). `direct` is a constant per program, so
 * each program keeps one of the two.
 */
#define FOLIO_READ(direct, folio, flavour, field)					\
	((direct) ? ((flavour *)(folio))->field : BPF_CORE_READ((flavour *)(folio), field))

static __always_inline unsigned long folio_flags(struct folio *folio, bool direct)
{
	/* CO-RE will not match a struct field with an integer one: one flavour each. */
	if (bpf_core_field_exists(((struct folio___flags_word *)0)->flags))
		return FOLIO_READ(direct, folio, struct folio___flags_word, flags);
	if (bpf_core_field_exists(((struct folio___flags_memdesc *)0)->flags))
		return FOLIO_READ(direct, folio, struct folio___flags_memdesc, flags.f);
	/* No struct folio (5.14, 5.15): the tracepoints pass the head struct page. */
	if (bpf_core_field_exists(((struct page___flags_word *)0)->flags))
		return FOLIO_READ(direct, folio, struct page___flags_word, flags);
	return 0;
}

static __always_inline bool folio_flag(unsigned long flags, bool known, unsigned int bit)
{
	return known && bit < 64 && (flags & (1UL << bit));
}

/*
 * A compound page's size where struct folio holds none of it (5.14 .. 6.0: no struct folio
 * before 5.16, a one-page struct folio until 6.1): in the first tail page, compound_nr
 * (64-bit, 5.9+) or compound_order (compound_nr() and compound_order() in
 * include/linux/mm.h). The tail page lies beyond the BTF type of the argument, so it is
 * always a probe read, at one CO-RE-relocated struct page size past the head.
 */
static __always_inline __u64 compound_pages(void *head)
{
	void *tail = head + bpf_core_type_size(struct page);

	if (bpf_core_field_exists(((struct page___compound_nr *)0)->compound_nr))
		return BPF_CORE_READ((struct page___compound_nr *)tail, compound_nr);
	if (bpf_core_field_exists(((struct page___compound_order *)0)->compound_order))
		return 1ULL << (BPF_CORE_READ((struct page___compound_order *)tail,
					      compound_order) & 31);
	return 1;
}

/* folio_nr_pages(): 1 unless PG_head, then whichever field this kernel keeps the size in. */
static __always_inline __u64 folio_pages(struct folio *folio, unsigned long flags, bool direct)
{
	bool head_known = bpf_core_enum_value_exists(enum pageflags, PG_head);
	unsigned int head_bit = head_known ? bpf_core_enum_value(enum pageflags, PG_head) : 0;
	__u64 pages = 1;

	if (!folio_flag(flags, head_known, head_bit))
		return 1;
	if (bpf_core_field_exists(((struct folio___nr_pages *)0)->_nr_pages))
		pages = FOLIO_READ(direct, folio, struct folio___nr_pages, _nr_pages);
	else if (bpf_core_field_exists(((struct folio___folio_nr_pages *)0)->_folio_nr_pages))
		pages = FOLIO_READ(direct, folio, struct folio___folio_nr_pages, _folio_nr_pages);
	else if (bpf_core_field_exists(((struct folio___folio_order *)0)->_folio_order))
		pages = 1ULL << (FOLIO_READ(direct, folio, struct folio___folio_order,
					    _folio_order) & 31);
	else if (bpf_core_field_exists(((struct folio___flags_1 *)0)->_flags_1))
		pages = 1ULL << (FOLIO_READ(direct, folio, struct folio___flags_1, _flags_1) & 31);
	else
		pages = compound_pages(folio);
	/* A torn read of a folio being split must not count millions of pages. */
	if (pages == 0 || pages > (1U << 18))
		pages = 1;
	return pages;
}

static __always_inline bool folio_swap_backed(unsigned long flags)
{
	bool known = bpf_core_enum_value_exists(enum pageflags, PG_swapbacked);
	unsigned int bit = known ? bpf_core_enum_value(enum pageflags, PG_swapbacked) : 0;

	return folio_flag(flags, known, bit);
}

#endif
