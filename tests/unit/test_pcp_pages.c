// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bpf_loader_pcp_pages (user/bpf_loader/probe.c): the pages on the per-CPU page lists, read
 * from /proc/zoneinfo, which the buddy memory hook does not see being handed out; near a
 * threshold the loader attaches mm_lru_insertion beside it (doc/DESIGN.md "The memory
 * hook"). An undercount would attach it too late, so anything unparsable is an error.
 */
#include "testutil.h"

#include "bpf_loader/bpf_loader.h"
#include "sys/fileio.h"

/* Linux 6.1's shape (mm/vmstat.c zoneinfo_show_print, before high_min/high_max): two zones,
 * two CPUs; the "count" under "pages free" is not a pageset's. */
static const char zoneinfo_6_1[] =
	"Node 0, zone    DMA32\n"
	"  pages free     200\n"
	"        min      10\n"
	"        count:   999999\n"
	"  pagesets\n"
	"    cpu: 0\n"
	"              count: 10\n"
	"              high:  378\n"
	"              batch: 63\n"
	"  vm stats threshold: 8\n"
	"    cpu: 1\n"
	"              count: 20\n"
	"              high:  378\n"
	"              batch: 63\n"
	"  vm stats threshold: 8\n"
	"  node_unreclaimable:  0\n"
	"  start_pfn:           4096\n"
	"Node 0, zone   Normal\n"
	"  pages free     5000\n"
	"        count:   777777\n"
	"  pagesets\n"
	"    cpu: 0\n"
	"              count: 300\n"
	"              high:  2000\n"
	"              batch: 63\n"
	"  vm stats threshold: 24\n"
	"    cpu: 1\n"
	"              count: 4000\n"
	"              high:  2000\n"
	"              batch: 63\n"
	"  vm stats threshold: 24\n";

static void test_pcp_pages_6_1_shape(void **state)
{
	uint64_t pages = 1;

	assert_int_equal(bpf_loader_pcp_pages(zoneinfo_6_1, &pages), 0);
	assert_int_equal(pages, 10 + 20 + 300 + 4000);
}

/* A real 6.18 /proc/zoneinfo (2 CPUs, high_min/high_max lines): 4189 pages in its count lines. */
static void test_pcp_pages_6_18_fixture(void **state)
{
	static char text[65536];
	uint64_t pages = 0;

	assert_true(fileio_read_at(AT_FDCWD, FIXTURES_DIR "/zoneinfo/linux-6.18-2cpu.txt", text,
				   sizeof(text)) > 0);
	assert_int_equal(bpf_loader_pcp_pages(text, &pages), 0);
	assert_int_equal(pages, 4189);
}

/* Nothing to count, or a count that is not a plain decimal: an error, never a low number. */
static void test_pcp_pages_refuses(void **state)
{
	static const char *const bad[] = {
		"",
		"Node 0, zone Normal\n  pages free 5\n",
		"Node 0, zone Normal\n  pagesets\n    cpu: 0\n      count: -1\n",
		"Node 0, zone Normal\n  pagesets\n    cpu: 0\n      count: x\n",
		"Node 0, zone Normal\n  pagesets\n    cpu: 0\n      count: 12x\n",
		"Node 0, zone Normal\n  pagesets\n    cpu: 0\n      count:\n",
		"Node 0, zone Normal\n  pagesets\n    cpu: 0\n      count: 99999999999999999999\n",
		"Node 0, zone Normal\n  pagesets\n    cpu: 0\n      count: 18446744073709551615\n"
		"    cpu: 1\n      count: 1\n",
	};
	uint64_t pages;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pages = 7;
		if (bpf_loader_pcp_pages(bad[i], &pages) != -EINVAL)
			fail_msg("accepted case %zu", i);
		assert_int_equal(pages, 0);
	}
}

/* The last line may lack its newline; a zone with empty lists counts 0. */
static void test_pcp_pages_edges(void **state)
{
	uint64_t pages = 1;

	assert_int_equal(bpf_loader_pcp_pages("Node 0, zone Normal\n  pagesets\n    cpu: 0\n"
					      "      count: 0\n    cpu: 1\n      count: 5", &pages), 0);
	assert_int_equal(pages, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pcp_pages_6_1_shape),
		cmocka_unit_test(test_pcp_pages_6_18_fixture),
		cmocka_unit_test(test_pcp_pages_refuses),
		cmocka_unit_test(test_pcp_pages_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
