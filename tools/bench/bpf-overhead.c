// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bpf-overhead: what evictd's BPF programs cost, measured A/B in one run.
 *
 *   bpf-overhead [--rounds N] [--seconds S] [--dir DIR] [--cpu N] [--latency-samples N]
 *                [fork] [read] [write] [latency]
 *
 * fork:    fork + _exit + waitpid loop (sched_process_fork/exit programs)
 * read:    4 MiB file, POSIX_FADV_DONTNEED then read it all (filemap add/delete, LRU)
 * write:   write 1 MiB into a file then truncate it, no I/O (filemap add/delete, LRU, CPU
 *          bound: the worst case for the page-cache programs)
 * latency: one fork per ms with a fork step of 1; time from bpf_ktime_get_ns() in the
 *          record to CLOCK_MONOTONIC in the ring-buffer callback, over N wake-ups
 *
 * Each round runs every workload once without and once with the programs attached, the
 * order alternating between rounds (ABBA) so drift cancels; the overhead printed is the
 * median over rounds of rate_without / rate_with - 1. Programs are attached with the
 * steps a daemon would use, so the threshold-check code runs too.
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bpf_loader.h"
#include "log.h"

#define MAX_ROUNDS 64

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

static struct bpf_loader *attach(void)
{
	struct bpf_loader_opts opts = { .no_pin = true };
	/* Realistic steps: well away from a threshold, 100 ms between wake-ups. */
	struct bpf_loader_steps steps = {
		.memory_pages = 25600,
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
	return loader;
}

static int discard(void *ctx, const struct evictd_wake *wake)
{
	return 0;
}

/* ---- workloads: run for `seconds`, return operations per second ---- */

struct workload {
	const char *name;
	const char *unit;
	double (*run)(double seconds);
};

static const char *bench_dir = "/var/tmp";

static double run_fork(double seconds)
{
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9), ops = 0, start = now_ns();

	while (now_ns() < end) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(0);
		if (pid < 0 || waitpid(pid, NULL, 0) != pid) {
			perror("bpf-overhead: fork");
			exit(1);
		}
		ops++;
	}
	return ops / ((now_ns() - start) / 1e9);
}

static char io_buf[1 << 20];

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

/* Cold-cache reads: the pages are re-added (and removed) every iteration. */
static double run_read(double seconds)
{
	const size_t size = 4 << 20;
	int fd = bench_file("read", size);
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9), start = now_ns();
	double mib = 0;

	while (now_ns() < end) {
		size_t off;

		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		for (off = 0; off < size; off += sizeof(io_buf))
			if (pread(fd, io_buf, sizeof(io_buf), (off_t)off) <= 0) {
				perror("bpf-overhead: read");
				exit(1);
			}
		mib += size / 1048576.0;
	}
	close(fd);
	return mib / ((now_ns() - start) / 1e9);
}

/* Page-cache churn without I/O: delalloc pages written then truncated before writeback. */
static double run_write(double seconds)
{
	int fd = bench_file("write", 0);
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9), start = now_ns();
	double mib = 0;

	while (now_ns() < end) {
		if (pwrite(fd, io_buf, sizeof(io_buf), 0) != (ssize_t)sizeof(io_buf) ||
		    ftruncate(fd, 0)) {
			perror("bpf-overhead: write/truncate");
			exit(1);
		}
		mib += 1;
	}
	close(fd);
	return mib / ((now_ns() - start) / 1e9);
}

static const struct workload workloads[] = {
	{ "fork", "forks/s", run_fork },
	{ "read", "MiB/s", run_read },
	{ "write", "MiB/s", run_write },
};

static void overhead(const struct workload *w, int rounds, double seconds)
{
	double ratios[MAX_ROUNDS], off_sum = 0, on_sum = 0;
	int r;

	for (r = 0; r < rounds; r++) {
		double off, on;
		struct bpf_loader *loader;

		/* ABBA: even rounds measure without first, odd rounds with first. */
		if (r % 2 == 0) {
			off = w->run(seconds);
			loader = attach();
			on = w->run(seconds);
			bpf_loader_consume(loader, discard, NULL);
			bpf_loader_destroy(loader, true);
		} else {
			loader = attach();
			on = w->run(seconds);
			bpf_loader_consume(loader, discard, NULL);
			bpf_loader_destroy(loader, true);
			off = w->run(seconds);
		}
		ratios[r] = off / on;
		off_sum += off;
		on_sum += on;
		fprintf(stderr, "bpf-overhead: %s round %d: without %.1f, with %.1f %s (%+.2f%%)\n",
			w->name, r + 1, off, on, w->unit, (off / on - 1) * 100);
	}
	qsort(ratios, rounds, sizeof(ratios[0]), cmp_double);
	printf("overhead %-7s without %10.1f %-8s with %10.1f %-8s median overhead %+.2f%% "
	       "(min %+.2f%%, max %+.2f%%, %d rounds of %.1f s)\n",
	       w->name, off_sum / rounds, w->unit, on_sum / rounds, w->unit,
	       (ratios[rounds / 2] - 1) * 100, (ratios[0] - 1) * 100,
	       (ratios[rounds - 1] - 1) * 100, rounds, seconds);
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
	printf("latency event->handler over %zu wake-ups: p50 %.1f us, p90 %.1f us, p99 %.1f us, "
	       "max %.1f us\n", lat.count, lat.samples[lat.count / 2] / 1000.0,
	       lat.samples[lat.count * 90 / 100] / 1000.0,
	       lat.samples[lat.count * 99 / 100] / 1000.0, lat.samples[lat.count - 1] / 1000.0);
	free(lat.samples);
}

static void usage(FILE *out)
{
	fprintf(out, "usage: bpf-overhead [--rounds N] [--seconds S] [--dir DIR] [--cpu N] "
		     "[--latency-samples N] [fork] [read] [write] [latency]\n");
}

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "seconds", required_argument, NULL, 's' },
		{ "dir", required_argument, NULL, 'd' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "latency-samples", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	cpu_set_t all_cpus;
	size_t latency_samples = 2000;
	double seconds = 2.0;
	int rounds = 6, cpu = -1, opt, i;
	bool all;

	while ((opt = getopt_long(argc, argv, "r:s:d:c:l:h", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'r': rounds = atoi(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'd': bench_dir = optarg; break;
		case 'c': cpu = atoi(optarg); break;
		case 'l': latency_samples = strtoul(optarg, NULL, 10); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (rounds < 1 || rounds > MAX_ROUNDS || seconds <= 0 || !latency_samples) {
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
	for (i = 0; i < (int)(sizeof(workloads) / sizeof(workloads[0])); i++) {
		bool wanted = all;
		int a;

		for (a = optind; a < argc; a++)
			wanted |= !strcmp(argv[a], workloads[i].name);
		if (wanted)
			overhead(&workloads[i], rounds, seconds);
	}
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
