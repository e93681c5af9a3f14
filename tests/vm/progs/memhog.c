/* memhog - allocate and touch anonymous memory, optionally at a fixed rate.
 *
 *   memhog [--rate MIBPS] [--max MIB] [--chunk MIB] [--exit] [--quiet]
 *
 * Allocates --chunk MiB at a time (default 4) with mmap and writes every page,
 * so the memory is really charged to the caller's memory cgroup.  With --rate
 * it paces itself to that many MiB per second (default: as fast as possible).
 * With --max it stops at that many MiB and then holds the memory until killed
 * (or exits 0 with --exit); without --max it allocates until the kernel kills
 * it.  Progress lines go to stderr:
 *   memhog: pid=N allocated=M MiB rate=R MiB/s
 * Exit status: 0 on --exit at --max, 1 if mmap failed, 2 on usage errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: memhog [--rate MIBPS] [--max MIB] [--chunk MIB] [--exit] [--quiet]\n"
		   "  --rate MIBPS  allocate at most this many MiB per second (default: unlimited)\n"
		   "  --max MIB     stop after MIB MiB and hold it (default: until killed)\n"
		   "  --chunk MIB   allocation unit (default 4)\n"
		   "  --exit        exit 0 at --max instead of holding the memory\n"
		   "  --quiet       only print the first and last progress line\n");
}

static double num_arg(const char *opt, const char *v)
{
	char *end;
	double d;

	if (!v) {
		fprintf(stderr, "memhog: %s needs a value\n", opt);
		exit(2);
	}
	errno = 0;
	d = strtod(v, &end);
	if (errno || *end || d < 0) {
		fprintf(stderr, "memhog: bad value for %s: '%s'\n", opt, v);
		exit(2);
	}
	return d;
}

int main(int argc, char **argv)
{
	double rate = 0, max = 0, chunk = 4;
	int do_exit = 0, quiet = 0;
	long page = sysconf(_SC_PAGESIZE);

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rate"))
			rate = num_arg(argv[i], argv[i + 1]), i++;
		else if (!strcmp(argv[i], "--max"))
			max = num_arg(argv[i], argv[i + 1]), i++;
		else if (!strcmp(argv[i], "--chunk"))
			chunk = num_arg(argv[i], argv[i + 1]), i++;
		else if (!strcmp(argv[i], "--exit"))
			do_exit = 1;
		else if (!strcmp(argv[i], "--quiet"))
			quiet = 1;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "memhog: unknown argument '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	if (chunk <= 0) {
		fprintf(stderr, "memhog: --chunk must be > 0\n");
		return 2;
	}
	setvbuf(stderr, NULL, _IOLBF, 0);

	size_t chunk_bytes = (size_t)(chunk * 1024 * 1024);
	chunk_bytes = (chunk_bytes + page - 1) / page * page;
	double total = 0; /* MiB */
	double t0 = now();
	int first = 1;

	for (;;) {
		double want = chunk_bytes / 1048576.0;
		if (max > 0 && total + want > max)
			want = max - total;
		if (want <= 0)
			break;
		size_t bytes = (size_t)(want * 1048576.0);
		bytes = (bytes + page - 1) / page * page;

		if (rate > 0) {
			/* the time at which total+want MiB is allowed */
			double due = t0 + (total + want) / rate;
			double d = due - now();
			if (d > 0) {
				struct timespec ts = { (time_t)d, (long)((d - (time_t)d) * 1e9) };
				while (nanosleep(&ts, &ts) && errno == EINTR)
					;
			}
		}
		char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			fprintf(stderr, "memhog: pid=%d mmap of %zu bytes failed after %.0f MiB: %s\n",
				(int)getpid(), bytes, total, strerror(errno));
			return 1;
		}
		for (size_t off = 0; off < bytes; off += page)
			p[off] = (char)(off / page + 1);
		total += bytes / 1048576.0;
		double el = now() - t0;
		if (!quiet || first)
			fprintf(stderr, "memhog: pid=%d allocated=%.0f MiB rate=%.1f MiB/s\n",
				(int)getpid(), total, el > 0 ? total / el : 0.0);
		first = 0;
	}
	fprintf(stderr, "memhog: pid=%d reached max=%.0f MiB in %.2f s, %s\n",
		(int)getpid(), total, now() - t0, do_exit ? "exiting" : "holding");
	if (do_exit)
		return 0;
	for (;;)
		pause();
}
