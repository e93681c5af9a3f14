// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Page counts of large folios on every struct folio / struct page layout evictd supports,
 * including kernels this host is not (root only: it loads BPF). bpf/folio.h picks its reads
 * by CO-RE; here the BTF it relocates against is synthesized with libbpf's BTF writer (as
 * tests/unit/test_bpf_variant.c builds the mark_victim shapes) and handed to libbpf as
 * btf_custom_path, and the reads run on a fake folio in a map (bpf/shapes_test.bpf.c, run
 * with BPF_PROG_TEST_RUN). Shapes, from include/linux/mm_types.h of each kernel:
 *  - 5.14/5.15: no struct folio; a compound page's size in the first tail page,
 *    compound_nr (64-bit) or compound_order alone (32-bit);
 *  - 5.16 .. 6.0: struct folio of one page (flags ... memcg_data), the size still in the
 *    tail page;
 *  - 6.1: _folio_order and _folio_nr_pages in struct folio;
 *  - 6.6 32-bit: the order in the low byte of _flags_1;
 *  - 6.18: flags a memdesc_flags_t, the size in _nr_pages.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpftest.h"
#include "shapes_test.skel.h"

#define PAGE_STRUCT_SIZE 64
/* PG_head / PG_swapbacked differ between kernels; CO-RE relocates the enum values. */
#define PG_HEAD 16
#define PG_SWAPBACKED 19

struct field {
	const char *name;
	unsigned int offset;		/* bytes */
	int size;			/* 1, 4 or 8; 0: memdesc_flags_t (a struct of one long) */
};

struct shape {
	const char *name;
	struct field page[4];		/* struct page fields (size PAGE_STRUCT_SIZE) */
	bool folio;			/* has struct folio */
	unsigned int folio_size;
	struct field folio_fields[4];
};

static const struct shape shapes[] = {
	{ "5.15 (no struct folio, compound_nr)",
	  { { "flags", 0, 8 }, { "compound_order", 17, 1 }, { "compound_nr", 24, 4 } },
	  false, 0, {} },
	{ "5.14 without compound_nr (no struct folio, compound_order only)",
	  { { "flags", 0, 8 }, { "compound_order", 17, 1 } }, false, 0, {} },
	{ "5.16 .. 6.0 (one-page struct folio, size in the tail page)",
	  { { "flags", 0, 8 }, { "compound_order", 17, 1 }, { "compound_nr", 24, 4 } },
	  true, 64, { { "flags", 0, 8 } } },
	{ "6.1 (_folio_nr_pages)",
	  { { "flags", 0, 8 }, { "compound_order", 17, 1 }, { "compound_nr", 24, 4 } },
	  true, 128, { { "flags", 0, 8 }, { "_flags_1", 64, 8 }, { "_folio_order", 81, 1 },
		       { "_folio_nr_pages", 88, 4 } } },
	{ "6.6 32-bit style (order in _flags_1)",
	  { { "flags", 0, 8 } },
	  true, 128, { { "flags", 0, 8 }, { "_flags_1", 64, 8 } } },
	{ "6.18 (memdesc_flags_t, _nr_pages)",
	  { { "flags", 0, 0 } },
	  true, 256, { { "flags", 0, 0 }, { "_flags_1", 64, 8 }, { "_nr_pages", 120, 4 } } },
};

/* Integer type ids by size (1, 4, 8), added before any struct: btf__add_field() must follow
 * its struct directly. */
static int ints[9];

static void add_ints(struct btf *btf)
{
	ints[1] = btf__add_int(btf, "unsigned char", 1, 0);
	ints[4] = btf__add_int(btf, "unsigned int", 4, 0);
	ints[8] = btf__add_int(btf, "long unsigned int", 8, 0);
	assert_true(ints[1] > 0 && ints[4] > 0 && ints[8] > 0);
}

static void add_fields(struct btf *btf, const struct field *fields, size_t n, int memdesc)
{
	for (size_t i = 0; i < n && fields[i].name; i++) {
		int type = fields[i].size ? ints[fields[i].size] : memdesc;

		assert_int_equal(btf__add_field(btf, fields[i].name, type, fields[i].offset * 8, 0), 0);
	}
}

/* The shape as a kernel BTF file; returns its path (static buffer). */
static const char *write_btf(const struct shape *shape)
{
	static char path[] = "/tmp/evictd-shape-btf-XXXXXX";
	struct btf *btf = btf__new_empty();
	int memdesc, fd, e;
	const void *raw;
	__u32 size;

	assert_non_null(btf);
	add_ints(btf);
	memdesc = btf__add_struct(btf, "memdesc_flags_t", 8);
	assert_true(memdesc > 0);
	assert_int_equal(btf__add_field(btf, "f", ints[8], 0, 0), 0);
	e = btf__add_enum(btf, "pageflags", 4);
	assert_true(e > 0);
	assert_int_equal(btf__add_enum_value(btf, "PG_locked", 0), 0);
	assert_int_equal(btf__add_enum_value(btf, "PG_head", PG_HEAD), 0);
	assert_int_equal(btf__add_enum_value(btf, "PG_swapbacked", PG_SWAPBACKED), 0);
	assert_true(btf__add_struct(btf, "page", PAGE_STRUCT_SIZE) > 0);
	add_fields(btf, shape->page, 4, memdesc);
	if (shape->folio) {
		assert_true(btf__add_struct(btf, "folio", shape->folio_size) > 0);
		add_fields(btf, shape->folio_fields, 4, memdesc);
	}
	raw = btf__raw_data(btf, &size);
	assert_non_null(raw);
	strcpy(path, "/tmp/evictd-shape-btf-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, raw, size), (ssize_t)size);
	close(fd);
	btf__free(btf);
	return path;
}

static void put(uint8_t *bytes, unsigned int offset, int size, uint64_t value)
{
	memcpy(bytes + offset, &value, size ? (size_t)size : 8);	/* little-endian hosts */
}

static const struct field *find(const struct field *fields, const char *name)
{
	for (size_t i = 0; i < 4 && fields[i].name; i++)
		if (!strcmp(fields[i].name, name))
			return &fields[i];
	return NULL;
}

struct result {
	uint64_t flags, pages, swap_backed, runs;
};

/* Load against the shape's BTF, lay out a folio of 2^order pages (head: PG_head set), run. */
static struct result run_shape(const struct shape *shape, unsigned int order, bool head,
			       bool swap_backed)
{
	uint8_t fake[1024] = {};
	const char *btf_path = write_btf(shape);
	LIBBPF_OPTS(bpf_object_open_opts, open_opts, .btf_custom_path = btf_path);
	LIBBPF_OPTS(bpf_test_run_opts, run);
	uint64_t args[1] = {};
	struct shapes_test_bpf *skel;
	struct result result = {};
	const struct field *f;
	uint64_t flags = (head ? 1ULL << PG_HEAD : 0) | (swap_backed ? 1ULL << PG_SWAPBACKED : 0);
	__u32 zero = 0;

	put(fake, 0, 8, flags);		/* flags (or memdesc_flags_t.f) at offset 0 on all */
	/* The size where each layout keeps it, and garbage where it does not. */
	if ((f = find(shape->page, "compound_order")))
		put(fake, PAGE_STRUCT_SIZE + f->offset, 1, order);
	if ((f = find(shape->page, "compound_nr")))
		put(fake, PAGE_STRUCT_SIZE + f->offset, 4, 1U << order);
	if ((f = find(shape->folio_fields, "_flags_1")))
		put(fake, f->offset, 8, 0xab00 | order);
	if ((f = find(shape->folio_fields, "_folio_order")))
		put(fake, f->offset, 1, order);
	if ((f = find(shape->folio_fields, "_folio_nr_pages")))
		put(fake, f->offset, 4, 1U << order);
	if ((f = find(shape->folio_fields, "_nr_pages")))
		put(fake, f->offset, 4, 1U << order);

	skel = shapes_test_bpf__open_opts(&open_opts);
	assert_non_null(skel);
	if (shapes_test_bpf__load(skel))
		fail_msg("%s: loading against the synthesized BTF: %s", shape->name, strerror(errno));
	assert_int_equal(bpf_map_update_elem(bpf_map__fd(skel->maps.fake_folio), &zero, fake, 0), 0);
	run.ctx_in = args;
	run.ctx_size_in = sizeof(args);
	assert_int_equal(bpf_prog_test_run_opts(bpf_program__fd(skel->progs.read_fake_folio), &run), 0);
	assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(skel->maps.shape_result), &zero, &result), 0);
	shapes_test_bpf__destroy(skel);
	unlink(btf_path);
	assert_int_equal(result.runs, 1);
	return result;
}

static void need_root(void)
{
	if (geteuid() != 0) {
		print_message("# skip: needs root (BPF)\n");
		skip();
	}
}

/* A THP (order 9: 512 pages) and a 16 KiB folio count all their pages on every shape. */
static void test_large_folio_pages(void **state)
{
	need_root();
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		struct result thp = run_shape(&shapes[i], 9, true, false);
		struct result small = run_shape(&shapes[i], 2, true, true);

		print_message("# %s: THP %llu pages, order-2 folio %llu pages\n", shapes[i].name,
			      (unsigned long long)thp.pages, (unsigned long long)small.pages);
		assert_int_equal(thp.flags, 1ULL << PG_HEAD);
		assert_int_equal(thp.pages, 512);
		assert_int_equal(small.pages, 4);
		assert_int_equal(small.swap_backed, 1);
		assert_int_equal(thp.swap_backed, 0);
	}
}

/* Without PG_head a folio is one page, whatever the size fields hold. */
static void test_small_folio_is_one_page(void **state)
{
	need_root();
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		struct result r = run_shape(&shapes[i], 9, false, false);

		assert_int_equal(r.pages, 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_large_folio_pages),
		cmocka_unit_test(test_small_folio_is_one_page),
	};

	if (!getenv("EVICTD_TEST_DEBUG"))
		libbpf_set_print(NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
