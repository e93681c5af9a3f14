// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bpf-overhead: what evictd's BPF programs cost, measured A/B in one run.
 *
 *   bpf-overhead [--slices N] [--slice S] [--dir DIR] [--cpu N] [--latency-samples N]
 *                [--inspect] [--no-page-cache] [--memory-hook charge|lru|page-alloc|buddy]
 *                [--memory-step-mib N] [--fifo PRIO]
 *                [fork] [read] [cached] [write] [create] [latency]
 *
 * fork:    fork + _exit + waitpid loop (sched_process_fork/exit, LRU insertions of the
 *          pages the child faults in)
 * read:    4 MiB file, POSIX_FADV_DONTNEED then read it all (filemap add/delete, LRU)
 * cached:  the same file read while it stays cached (the common page-cache read)
 * write:   write 1 MiB into a file then truncate it, no I/O (filemap add/delete, LRU, CPU
 *          bound: the worst case for the page-cache programs)
 * create:  create an empty file and unlink it (ext4/xfs inode allocation and release)
 * latency: one fork per ms with a fork step of 1; time from bpf_ktime_get_ns() in the
 *          record to CLOCK_MONOTONIC in the ring-buffer callback, over N wake-ups; with
 *          --fifo the handler runs SCHED_FIFO (the producer stays SCHED_OTHER)
 *
 * The programs are loaded once with the steps a daemon would use (so the threshold checks
 * run too); each workload then runs N slices alternately without and with them attached,
 * in ABBA order. See overhead() for the arithmetic. By default the programs are loaded as
 * the daemon loads them by default (the wake-ups only); --inspect adds the inspection-only
 * programs (evictd --bpf-inspect), --no-page-cache then leaves out the per-memcg page-cache
 * ones (--no-page-cache-bpf); --memory-hook picks what paces memory wake-ups: charge (the
 * default: memcg charge batches by fentry; where fentry is refused buddy allocations, with
 * mm_lru_insertion beside them near a threshold), lru (mm_lru_insertion), page-alloc
 * (mm_page_alloc) or buddy (mm_page_alloc_zone_locked alone), the candidates measured side
 * by side. --memory-step-mib: the memory step the programs compare against (default 1024:
 * the daemon's step is a quarter of the distance to the threshold, capped at 1 GiB, so any
 * node 4 GiB above its threshold runs with this one; a small step puts the default hook
 * "near a threshold").
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bpf_loader/bpf_loader.h"
#include "sys/log.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool no_page_cache, inspect;
static enum bpf_loader_memory_hook memory_hook = BPF_MEMORY_HOOK_CHARGE;
static int fifo_priority;	/* --fifo N: the latency handler runs SCHED_FIFO at N */
static uint64_t memory_step_mib = 1024;

static struct bpf_loader *attach(void)
{
	struct bpf_loader_opts opts = { .no_pin = true, .no_page_cache = no_page_cache,
					.inspect = inspect, .memory_hook = memory_hook };
	/* The daemon's steps far from a threshold, 100 ms between wake-ups. */
	struct bpf_loader_steps steps = {
		.memory_pages = memory_step_mib * 256,
		.pids_tasks = 1000,
		.inodes = 1000,
		.min_interval_ns = { 100000000, 100000000, 100000000 },
		.wake_on_reclaim = true,
	};
	struct bpf_loader *loader;
	int err = bpf_loader_open(&loader, &opts);

	if (err < 0) {
		fprintf(stderr, "bpf-overhead: loading the programs failed: %s\n", strerror(-err));
		exit(1);
	}
	if (bpf_loader_set_steps(loader, &steps)) {
		fprintf(stderr, "bpf-overhead: setting steps failed\n");
		exit(1);
	}
	printf("# memory hook: %s%s, memory step %llu MiB\n",
	       bpf_loader_attached(loader, "page_counter_try_charge") ?
	       "page_counter_try_charge (fentry)" :
	       bpf_loader_attached(loader, "mm_page_alloc_zone_locked") ? "mm_page_alloc_zone_locked" :
	       bpf_loader_attached(loader, "mm_page_alloc") ? "mm_page_alloc" : "mm_lru_insertion",
	       bpf_loader_attached(loader, "mm_lru_insertion") &&
	       bpf_loader_attached(loader, "mm_page_alloc_zone_locked") ?
	       " + mm_lru_insertion (near a threshold)" : "",
	       (unsigned long long)memory_step_mib);
	fflush(stdout);
	return loader;
}

static int discard(void *ctx, const struct evictd_wake *wake)
{
	return 0;
}

/* ---- workloads: one operation per call ---- */

static const char *bench_dir = "/var/tmp";
static char io_buf[1 << 20];
static int read_fd = -1, write_fd = -1;

static void op_fork(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	if (pid < 0 || waitpid(pid, NULL, 0) != pid) {
		perror("bpf-overhead: fork");
		exit(1);
	}
}

static int bench_file(const char *tag, size_t size)
{
	char path[4096];
	size_t off;
	int fd;

	snprintf(path, sizeof(path), "%s/bpf-overhead-%s-%d", bench_dir, tag, (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "bpf-overhead: open %s: %s\n", path, strerror(errno));
		exit(1);
	}
	unlink(path);
	memset(io_buf, 0x5a, sizeof(io_buf));
	for (off = 0; off < size; off += sizeof(io_buf))
		if (pwrite(fd, io_buf, sizeof(io_buf), (off_t)off) != (ssize_t)sizeof(io_buf)) {
			perror("bpf-overhead: write");
			exit(1);
		}
	fsync(fd);
	return fd;
}

#define READ_FILE_BYTES (4 << 20)

/* A cold-cache read of a 4 MiB file: its pages are added (and then dropped) every time. */
static void op_read(void)
{
	size_t off;

	if (read_fd < 0)
		read_fd = bench_file("read", READ_FILE_BYTES);
	posix_fadvise(read_fd, 0, 0, POSIX_FADV_DONTNEED);
	for (off = 0; off < READ_FILE_BYTES; off += sizeof(io_buf))
		if (pread(read_fd, io_buf, sizeof(io_buf), (off_t)off) <= 0) {
			perror("bpf-overhead: read");
			exit(1);
		}
}

/* The same file read while cached: the usual page-cache read, no folio events. */
static void op_read_cached(void)
{
	size_t off;

	if (read_fd < 0)
		read_fd = bench_file("read", READ_FILE_BYTES);
	for (off = 0; off < READ_FILE_BYTES; off += sizeof(io_buf))
		if (pread(read_fd, io_buf, sizeof(io_buf), (off_t)off) <= 0) {
			perror("bpf-overhead: read");
			exit(1);
		}
}

/* Page-cache churn without I/O: 1 MiB of delalloc pages written, then truncated away. */
static void op_write(void)
{
	if (write_fd < 0)
		write_fd = bench_file("write", 0);
	if (pwrite(write_fd, io_buf, sizeof(io_buf), 0) != (ssize_t)sizeof(io_buf) ||
	    ftruncate(write_fd, 0)) {
		perror("bpf-overhead: write/truncate");
		exit(1);
	}
}

/* An inode allocated and released: ext4_allocate_inode / ext4_free_inode (xfs_create /
 * xfs_remove), plus the dentry and inode work around them. */
static void op_create(void)
{
	static char path[4096];
	int fd;

	if (!path[0])
		snprintf(path, sizeof(path), "%s/bpf-overhead-create-%d", bench_dir, (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || close(fd) || unlink(path)) {
		fprintf(stderr, "bpf-overhead: create/unlink %s: %s\n", path, strerror(errno));
		exit(1);
	}
}

struct workload {
	const char *name;
	const char *unit;		/* what one operation is */
	void (*op)(void);
};

static const struct workload workloads[] = {
	{ "fork", "fork+exit+wait", op_fork },
	{ "read", "4 MiB cold read", op_read },
	{ "cached", "4 MiB cached read", op_read_cached },
	{ "write", "1 MiB write+truncate", op_write },
	{ "create", "create+unlink a file", op_create },
};

/* CPU time of this process and its reaped children: what the programs add to. Other load
 * on the host does not inflate it the way it inflates wall time. */
static double cpu_seconds(void)
{
	struct rusage self, kids;

	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	return self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec +
	       kids.ru_stime.tv_sec + (self.ru_utime.tv_usec + self.ru_stime.tv_usec +
				       kids.ru_utime.tv_usec + kids.ru_stime.tv_usec) / 1e6;
}

struct totals {
	double ops, wall, cpu;
};

static void run_slice(const struct workload *w, double seconds, struct totals *t)
{
	uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9);
	double cpu0 = cpu_seconds();

	while (now_ns() < end) {
		w->op();
		t->ops++;
	}
	t->wall += (now_ns() - start) / 1e9;
	t->cpu += cpu_seconds() - cpu0;
}

/*
 * Slices of `slice` seconds, alternately without and with the programs attached in ABBA
 * order (the loader stays loaded; only the links come and go), so drift and other load on
 * the host fall on both sides alike. Overhead = cost per operation with / without - 1,
 * in CPU time (primary) and in wall time.
 */
static void overhead(struct bpf_loader *loader, const struct workload *w, int slices,
		     double slice)
{
	struct totals with = {}, without = {}, group_with = {}, group_without = {};
	double group_pct[256], cpu_pct, wall_pct;
	int i, groups = 0;

	w->op();	/* warm up: files created, code paged in */
	for (i = 0; i < slices; i++) {
		bool attached = (i % 4 == 1 || i % 4 == 2);

		if (bpf_loader_set_attached(loader, attached) < 0) {
			fprintf(stderr, "bpf-overhead: %s the programs failed\n",
				attached ? "attaching" : "detaching");
			exit(1);
		}
		run_slice(w, slice, attached ? &group_with : &group_without);
		bpf_loader_consume(loader, discard, NULL);
		if (i % 4 == 3 && groups < 256) {
			/* One ABBA group done: its own with/without ratio, for the spread. */
			group_pct[groups++] = ((group_with.cpu / group_with.ops) /
					       (group_without.cpu / group_without.ops) - 1) * 100;
			with.ops += group_with.ops;
			with.cpu += group_with.cpu;
			with.wall += group_with.wall;
			without.ops += group_without.ops;
			without.cpu += group_without.cpu;
			without.wall += group_without.wall;
			memset(&group_with, 0, sizeof(group_with));
			memset(&group_without, 0, sizeof(group_without));
		}
	}
	bpf_loader_set_attached(loader, true);
	if (!groups || !with.ops || !without.ops) {
		fprintf(stderr, "bpf-overhead: %s: no complete ABBA group\n", w->name);
		return;
	}
	qsort(group_pct, groups, sizeof(group_pct[0]), cmp_double);
	cpu_pct = ((with.cpu / with.ops) / (without.cpu / without.ops) - 1) * 100;
	wall_pct = ((with.wall / with.ops) / (without.wall / without.ops) - 1) * 100;
	printf("overhead %-6s %-21s %7.1f -> %7.1f us cpu/op: %+6.2f%% cpu (ABBA groups: median "
	       "%+.2f%%, quartiles %+.2f%% .. %+.2f%%), %+6.2f%% wall; %.0f+%.0f ops\n",
	       w->name, w->unit, without.cpu / without.ops * 1e6, with.cpu / with.ops * 1e6,
	       cpu_pct, group_pct[groups / 2], group_pct[groups / 4], group_pct[groups * 3 / 4],
	       wall_pct, without.ops, with.ops);
}

struct latency {
	uint64_t *samples;
	size_t count, cap;
};

static int record_latency(void *ctx, const struct evictd_wake *wake)
{
	struct latency *lat = ctx;
	uint64_t now = now_ns();

	if (wake->type == EVICTD_WAKE_FORK_STEP && lat->count < lat->cap && now >= wake->ktime_ns)
		lat->samples[lat->count++] = now - wake->ktime_ns;
	return 0;
}

static void latency(size_t wanted)
{
	struct bpf_loader_steps steps = { .pids_tasks = 1 };
	struct epoll_event ev = { .events = EPOLLIN };
	struct latency lat = { .cap = wanted };
	struct bpf_loader *loader = attach();
	uint64_t deadline;
	pid_t gen;
	int ep;

	if (fifo_priority) {
		struct sched_param param = { .sched_priority = fifo_priority };

		if (sched_setscheduler(0, SCHED_FIFO, &param))
			perror("bpf-overhead: SCHED_FIFO");
	}
	lat.samples = calloc(wanted, sizeof(*lat.samples));
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!lat.samples || ep < 0 || bpf_loader_set_steps(loader, &steps) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, bpf_loader_ring_fd(loader), &ev)) {
		fprintf(stderr, "bpf-overhead: latency setup failed\n");
		exit(1);
	}
	bpf_loader_consume(loader, discard, NULL);
	gen = fork();
	if (gen == 0) {
		struct sched_param normal = { .sched_priority = 0 };

		/* The producer is an ordinary task even when the handler runs SCHED_FIFO. */
		sched_setscheduler(0, SCHED_OTHER, &normal);
		setpriority(PRIO_PROCESS, 0, 0);
		/* One fork per ms: each wake-up finds the handler waiting in epoll, like a
		 * daemon between events. */
		for (;;) {
			pid_t pid = fork();

			if (pid == 0)
				_exit(0);
			if (pid > 0)
				waitpid(pid, NULL, 0);
			usleep(1000);
		}
	}
	deadline = now_ns() + 120ULL * 1000000000ULL;
	while (lat.count < wanted && now_ns() < deadline)
		if (epoll_wait(ep, &ev, 1, 100) > 0)
			bpf_loader_consume(loader, record_latency, &lat);
	kill(gen, SIGKILL);
	waitpid(gen, NULL, 0);
	close(ep);
	bpf_loader_destroy(loader, true);
	if (!lat.count) {
		fprintf(stderr, "bpf-overhead: no wake-up received\n");
		exit(1);
	}
	qsort(lat.samples, lat.count, sizeof(*lat.samples), cmp_u64);
	printf("latency event->handler (%s) over %zu wake-ups: p50 %.1f us, p90 %.1f us, "
	       "p99 %.1f us, max %.1f us\n", fifo_priority ? "handler SCHED_FIFO" : "handler SCHED_OTHER",
	       lat.count, lat.samples[lat.count / 2] / 1000.0,
	       lat.samples[lat.count * 90 / 100] / 1000.0,
	       lat.samples[lat.count * 99 / 100] / 1000.0, lat.samples[lat.count - 1] / 1000.0);
	free(lat.samples);
}

static void usage(FILE *out)
{
	fprintf(out, "usage: bpf-overhead [--slices N] [--slice SECONDS] [--dir DIR] [--cpu N] "
		     "[--latency-samples N] [--inspect] [--no-page-cache] [--memory-hook charge|lru|page-alloc|buddy] "
		     "[--memory-step-mib N] [--fifo PRIO] [fork] [read] [cached] [write] [create] [latency]\n");
}

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "slices", required_argument, NULL, 'n' },
		{ "slice", required_argument, NULL, 's' },
		{ "dir", required_argument, NULL, 'd' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "latency-samples", required_argument, NULL, 'l' },
		{ "no-page-cache", no_argument, NULL, 'P' },
		{ "inspect", no_argument, NULL, 'I' },
		{ "memory-hook", required_argument, NULL, 'M' },
		{ "fifo", required_argument, NULL, 'F' },
		{ "memory-step-mib", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	cpu_set_t all_cpus;
	size_t latency_samples = 2000;
	struct bpf_loader *loader;
	double slice = 0.25;
	int slices = 48, cpu = -1, opt, i;
	bool all;

	while ((opt = getopt_long(argc, argv, "n:s:d:c:l:PIM:F:S:h", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'F': fifo_priority = atoi(optarg); break;
		case 'S':
			memory_step_mib = strtoull(optarg, NULL, 10);
			if (!memory_step_mib || memory_step_mib > (1ULL << 40)) {
				usage(stderr);
				return 2;
			}
			break;
		case 'P': no_page_cache = true; break;
		case 'I': inspect = true; break;
		case 'M':
			if (!strcmp(optarg, "charge"))
				memory_hook = BPF_MEMORY_HOOK_CHARGE;
			else if (!strcmp(optarg, "lru"))
				memory_hook = BPF_MEMORY_HOOK_LRU_INSERTION;
			else if (!strcmp(optarg, "page-alloc"))
				memory_hook = BPF_MEMORY_HOOK_PAGE_ALLOC;
			else if (!strcmp(optarg, "buddy"))
				memory_hook = BPF_MEMORY_HOOK_BUDDY;
			else {
				usage(stderr);
				return 2;
			}
			break;
		case 'n': slices = atoi(optarg); break;
		case 's': slice = atof(optarg); break;
		case 'd': bench_dir = optarg; break;
		case 'c': cpu = atoi(optarg); break;
		case 'l': latency_samples = strtoul(optarg, NULL, 10); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (slices < 4 || slice <= 0 || !latency_samples) {
		usage(stderr);
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "bpf-overhead: needs root\n");
		return 1;
	}
	log_set_level(LOGLEVEL_WARN);
	sched_getaffinity(0, sizeof(all_cpus), &all_cpus);
	if (cpu >= 0) {
		cpu_set_t set;

		/* Workload and programs on one CPU: less scheduler noise between A and B. */
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			perror("bpf-overhead: sched_setaffinity");
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	all = optind == argc;
	loader = attach();
	for (i = 0; i < (int)(sizeof(workloads) / sizeof(workloads[0])); i++) {
		bool wanted = all;
		int a;

		for (a = optind; a < argc; a++)
			wanted |= !strcmp(argv[a], workloads[i].name);
		if (wanted)
			overhead(loader, &workloads[i], slices, slice);
	}
	bpf_loader_destroy(loader, true);
	for (i = optind; i < argc || all; i++) {
		if (all || !strcmp(argv[i], "latency")) {
			/* Producer and handler on their own CPUs, as in a daemon. */
			sched_setaffinity(0, sizeof(all_cpus), &all_cpus);
			latency(latency_samples);
			break;
		}
	}
	return 0;
}
