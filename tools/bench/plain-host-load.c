/* plain-host-load - the loads and the sampler of the plain-host race
 * (tools/bench/plain-host-race.sh, guest side tools/bench/plain-host-race-guest.sh).
 * Static, no libraries.
 *
 *   plain-host-load anon NAME RATE_MIBPS MAX_MIB
 *       Allocate anonymous memory at RATE MiB/s (0 = as fast as it can) up to MAX MiB, then hold.
 *       Each page is half pseudo-random, half zero: it compresses about 2:1 in zram, like
 *       ordinary heap (all-zero or one-byte pages would cost zram nothing and never fill it).
 *   plain-host-load tmpfs NAME RATE_MIBPS MAX_MIB DIR
 *       Write DIR/fill-N files (1 MiB writes, same content as anon) at RATE up to MAX, then hold.
 *   plain-host-load thrash NAME SIZE_MIB
 *       Allocate SIZE MiB as fast as it can, then write one byte of every page, pass after pass,
 *       forever: a working set that does not fit in RAM keeps swapping in and out.
 *   plain-host-load sample OUT MAX_S INTERVAL_MS
 *       Every INTERVAL_MS until MAX_S: "t_ms memavail_kib swapfree_kib psi_full_us psi_some_us"
 *       (CLOCK_MONOTONIC ms; /proc/meminfo, /proc/pressure/memory) to OUT, line-buffered.
 *       mlockall and SCHED_FIFO, so the instrument is neither swapped out nor starved.
 *
 * Every load sets its comm to NAME (the race's trace names victims by comm) and raises a
 * negative oom_score_adj to 0 (it may be started from the driver, which runs at -1000); prints
 * "NAME pid=N" first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define MiB (1024L * 1024)

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *what)
{
	fprintf(stderr, "plain-host-load: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* half a page of xorshift64 output, the other half zero: ~2:1 for lzo-rle/zstd */
static void fill_page(char *p, long page)
{
	uint64_t *q = (uint64_t *)p;

	for (long i = 0; i < page / 16; i++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		q[i] = rng;
	}
	memset(p + page / 2, 0, (size_t)(page / 2));
}

static void become(const char *name)
{
	char adj[16] = "";
	int fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);

	/* raise a negative value inherited from the driver to 0; keep a positive one (the user
	 * manager gives its units 100, and lowering it needs CAP_SYS_RESOURCE) */
	if (fd < 0 || read(fd, adj, sizeof(adj) - 1) < 0)
		die("/proc/self/oom_score_adj");
	if (atoi(adj) < 0 && pwrite(fd, "0", 1, 0) != 1)
		die("/proc/self/oom_score_adj");
	close(fd);
	prctl(PR_SET_NAME, name);
	rng ^= (uint64_t)getpid() << 32;
	printf("%s pid=%d\n", name, (int)getpid());
	fflush(stdout);
}

static void pace(int64_t t0, double rate, long mib)
{
	if (rate <= 0)
		return;
	int64_t d = t0 + (int64_t)((double)(mib + 1) / rate * 1000) - now_ms();
	if (d > 0) {
		struct timespec ts = { d / 1000, (d % 1000) * 1000000 };
		nanosleep(&ts, NULL);
	}
}

static char *map(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

static _Noreturn void cmd_anon(const char *name, double rate, long max)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = map((size_t)max * MiB);
	int64_t t0 = now_ms();

	become(name);
	for (long mib = 0; mib < max; mib++) {
		pace(t0, rate, mib);
		for (long off = 0; off < MiB; off += page)
			fill_page(p + mib * MiB + off, page);
	}
	for (;;)
		pause();
}

static _Noreturn void cmd_tmpfs(const char *name, double rate, long max, const char *dir)
{
	long page = sysconf(_SC_PAGESIZE);
	char *buf = map(MiB), path[4096];
	int64_t t0 = now_ms();
	int fd = -1;

	become(name);
	for (long mib = 0; mib < max; mib++) {
		if (mib % 64 == 0) {	/* a new file every 64 MiB */
			if (fd >= 0)
				close(fd);
			snprintf(path, sizeof(path), "%s/fill-%ld", dir, mib / 64);
			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
			if (fd < 0)
				die(path);
		}
		pace(t0, rate, mib);
		for (long off = 0; off < MiB; off += page)
			fill_page(buf + off, page);
		if (write(fd, buf, MiB) != MiB) {
			fprintf(stderr, "%s: write %s: %s (at %ld MiB; holding)\n", name, path, strerror(errno), mib);
			break;
		}
	}
	for (;;)
		pause();
}

static _Noreturn void cmd_thrash(const char *name, long size)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = map((size_t)size * MiB);

	become(name);
	for (long off = 0; off < size * MiB; off += page)
		fill_page(p + off, page);
	for (unsigned pass = 1;; pass++)
		for (long off = 0; off < size * MiB; off += page)
			p[off] = (char)pass;
}

static long long field(const char *text, const char *key)
{
	const char *s = strstr(text, key);

	return s ? strtoll(s + strlen(key), NULL, 10) : -1;
}

static int cmd_sample(const char *out, int max_s, int interval_ms)
{
	char mem[8192], psi[512];
	struct sched_param sp = { .sched_priority = 50 };
	FILE *f = fopen(out, "w");
	int fm = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
	int fp = open("/proc/pressure/memory", O_RDONLY | O_CLOEXEC);

	if (!f || fm < 0 || fp < 0)
		die(out);
	setvbuf(f, NULL, _IOLBF, 0);
	if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
		fprintf(stderr, "plain-host-load sample: mlockall: %s\n", strerror(errno));
	if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
		fprintf(stderr, "plain-host-load sample: SCHED_FIFO: %s\n", strerror(errno));
	int64_t t0 = now_ms();
	for (int64_t tick = t0; tick - t0 <= (int64_t)max_s * 1000; tick += interval_ms) {
		ssize_t n = pread(fm, mem, sizeof(mem) - 1, 0);
		ssize_t m = pread(fp, psi, sizeof(psi) - 1, 0);

		if (n < 0 || m < 0)
			die("pread");
		mem[n] = psi[m] = '\0';
		const char *full = strstr(psi, "full");
		fprintf(f, "%lld %lld %lld %lld %lld\n", (long long)now_ms(), field(mem, "MemAvailable:"),
			field(mem, "SwapFree:"), full ? field(full, "total=") : -1, field(psi, "total="));
		int64_t d = tick + interval_ms - now_ms();
		if (d > 0) {
			struct timespec ts = { d / 1000, (d % 1000) * 1000000 };
			nanosleep(&ts, NULL);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "anon"))
		cmd_anon(argv[2], atof(argv[3]), atol(argv[4]));
	if (argc == 6 && !strcmp(argv[1], "tmpfs"))
		cmd_tmpfs(argv[2], atof(argv[3]), atol(argv[4]), argv[5]);
	if (argc == 4 && !strcmp(argv[1], "thrash"))
		cmd_thrash(argv[2], atol(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "sample"))
		return cmd_sample(argv[2], atoi(argv[3]), atoi(argv[4]));
	fprintf(stderr, "usage: plain-host-load anon|tmpfs|thrash|sample ... (see the source)\n");
	return 2;
}
