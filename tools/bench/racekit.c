/* racekit - the guest side of the memory race benchmark (tools/bench/memory-race.sh).
 * Static, no libraries: it runs in the busybox guest.
 *
 * Global option, first: --v1 DIR reads memory.available from a cgroup v1 memory hierarchy (DIR,
 * e.g. /sys/fs/cgroup/memory: usage_in_bytes - total_inactive_file) instead of the v2 root.
 *
 *   racekit avail
 *       print "avail=B memavail=B memtotal=B": the kubelet's memory.available (DESIGN.md §1:
 *       MemTotal - (anon + file - inactive_file) of the root memory.stat) and MemAvailable.
 *
 *   racekit sample --cgroup POD [--interval-us 1000] [--max-s 60] [--tail-ms 300]
 *                  [--thr BYTES] [--thr-memavail BYTES] [--disk DEV --offset BYTES --size BYTES]
 *                  [--fifo PRIO]
 *       Sample memory.available and MemAvailable every interval (CLOCK_MONOTONIC, absolute
 *       ticks) and whether POD is populated (cgroup.events). Stops --tail-ms after POD went
 *       from populated to empty, or after --max-s. Prints one summary line (key=value, times
 *       in CLOCK_MONOTONIC ns) on stdout:
 *         n= interval_med_us= interval_max_us= t_first= t_pop= t_empty= avail_first=
 *         t_cross= t_below= cross_interp= t_cross_ma= min_avail= t_min= min_memavail=
 *         min_memfree= memfree_below= ...
 *       t_cross is the crossing of memory.available below --thr, linearly interpolated between
 *       the last sample above and the first below (t_below is that first sample); t_cross_ma
 *       the same for MemAvailable below --thr-memavail; -1 = did not happen. min_memfree is the
 *       lowest MemFree sampled (free memory, the scale of the kernel's min watermark: in a run a
 *       contender won, the free memory the node came down to), memfree_below MemFree at t_below.
 *       With --disk the series ("t_us avail_KiB memavail_KiB populated" lines, decimated to fit
 *       --size) is written with O_DIRECT at --offset of the raw disk DEV: no page cache, so the
 *       recording itself does not take memory from the race. --fifo: sample as SCHED_FIFO PRIO,
 *       so that the instrument's own scheduling delay does not land in what it times.
 *
 *   racekit hog --cgroup DIR [--rate MIBPS] [--max MIB] [--oom-score-adj N] [--threads N]
 *       Join DIR (cgroup.procs), set oom_score_adj, rename itself "hog", then allocate and touch
 *       anonymous memory at MIBPS (0 = as fast as it can), paced per MiB, until --max MiB
 *       (then hold it) or until killed. Prints "hog pid=N t0=NS" first. --threads N: N
 *       threads of the one process allocate, each MIBPS/N up to MIB/N (a hog on every CPU).
 *
 *   racekit churn --cgroup DIR [--v1-cgroup DIR] --size MIB [--seconds S]
 *       Join DIR (and a cgroup v1 memory cgroup), then for S seconds (10) map SIZE MiB, touch
 *       every page, unmap it, again and
 *       again as fast as it can: memory use swings by SIZE MiB at GiB/s (near-threshold churn,
 *       tools/bench/host-race.sh). Prints "churn cycles=N mib_per_s=R" at the end.
 *
 *   racekit spawn --cgroup DIR --oom-score-adj N -- CMD [ARG...]
 *       Join DIR, set oom_score_adj, exec CMD (for the contenders and bystanders).
 *
 *   racekit pause
 *       Sleep until killed (a minimal process for tools/bench/scale-bench kill --child).
 *
 *   racekit sleep-random MAX_MS
 *       Sleep a uniformly random time in [0, MAX_MS) ms (so a poller's tick phase is random
 *       relative to the next run); prints the time slept in ms.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define MiB (1024L * 1024)

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "racekit: %s: %s\n", what, strerror(errno));
	exit(1);
}

static ssize_t pread_all(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);

	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* "key value" lines: the value of key (the first line starting with "key "). */
static int64_t keyed(const char *buf, const char *key)
{
	size_t klen = strlen(key);
	const char *p = buf;

	while (p && *p) {
		if (!strncmp(p, key, klen) && (p[klen] == ' ' || p[klen] == ':')) {
			p += klen + 1;
			while (*p == ' ')
				p++;
			return strtoll(p, NULL, 10);
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -1;
}

struct mem_fds {
	int stat_fd, meminfo_fd, usage_fd;	/* usage_fd: v1 memory.usage_in_bytes, else -1 */
	int64_t memtotal;
};

/* cgroup v1 memory hierarchy (--v1 DIR): usage = memory.usage_in_bytes, working set = usage -
 * total_inactive_file, as evictd (and cAdvisor) read a v1 node. NULL: the v2 root. */
static const char *v1_dir;

static void mem_open(struct mem_fds *m)
{
	char buf[8192], path[4096];

	m->usage_fd = -1;
	if (v1_dir) {
		snprintf(path, sizeof(path), "%s/memory.usage_in_bytes", v1_dir);
		m->usage_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (m->usage_fd < 0)
			die(path);
	}
	snprintf(path, sizeof(path), "%s/memory.stat", v1_dir ? v1_dir : "/sys/fs/cgroup");
	m->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (m->stat_fd < 0)
		die(path);
	m->meminfo_fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
	if (m->meminfo_fd < 0)
		die("/proc/meminfo");
	if (pread_all(m->meminfo_fd, buf, sizeof(buf)) < 0)
		die("read /proc/meminfo");
	m->memtotal = keyed(buf, "MemTotal") * 1024;
}

/* memory.available as the kubelet (and evictd) compute it, MemAvailable and, when memfree is
 * not NULL, MemFree, in bytes. */
static void mem_read(struct mem_fds *m, int64_t *avail, int64_t *memavail, int64_t *memfree)
{
	char buf[8192];
	int64_t anon, file, inactive, ws;

	if (pread_all(m->stat_fd, buf, sizeof(buf)) < 0)
		die("read memory.stat");
	if (m->usage_fd >= 0) {
		inactive = keyed(buf, "total_inactive_file");
		if (pread_all(m->usage_fd, buf, sizeof(buf)) < 0)
			die("read memory.usage_in_bytes");
		ws = strtoll(buf, NULL, 10) - inactive;
	} else {
		anon = keyed(buf, "anon");
		file = keyed(buf, "file");
		inactive = keyed(buf, "inactive_file");
		ws = anon + file - inactive;
	}
	if (ws < 0)
		ws = 0;
	*avail = m->memtotal - ws;
	if (pread_all(m->meminfo_fd, buf, sizeof(buf)) < 0)
		die("read /proc/meminfo");
	*memavail = keyed(buf, "MemAvailable") * 1024;
	if (memfree)
		*memfree = keyed(buf, "MemFree") * 1024;
}

static int cmd_avail(void)
{
	struct mem_fds m;
	int64_t a, ma;

	mem_open(&m);
	mem_read(&m, &a, &ma, NULL);
	printf("avail=%lld memavail=%lld memtotal=%lld\n", (long long)a, (long long)ma,
	       (long long)m.memtotal);
	return 0;
}

struct sample {
	int64_t t;
	int32_t avail_kib, memavail_kib, memfree_kib;
	int8_t populated;
};

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* The first crossing below thr in one series (after index from): interpolated time, or -1. */
static int64_t crossing(const struct sample *s, size_t n, int64_t thr, int which, int64_t *t_below)
{
	for (size_t i = 0; i < n; i++) {
		int64_t v = (which ? s[i].memavail_kib : s[i].avail_kib) * 1024LL;

		if (v >= thr)
			continue;
		*t_below = s[i].t;
		if (i == 0)
			return s[i].t;
		int64_t pv = (which ? s[i - 1].memavail_kib : s[i - 1].avail_kib) * 1024LL;
		if (pv <= v)
			return s[i].t;
		return s[i - 1].t + (int64_t)((double)(s[i].t - s[i - 1].t) * (double)(pv - thr) / (double)(pv - v));
	}
	*t_below = -1;
	return -1;
}

static int populated(int fd)
{
	char buf[256];

	if (pread_all(fd, buf, sizeof(buf)) < 0)
		return -1;
	return keyed(buf, "populated") == 1;
}

static int cmd_sample(int argc, char **argv)
{
	const char *cgroup = NULL, *disk = NULL;
	long interval_us = 1000, tail_ms = 300;
	double max_s = 60;
	int64_t thr = 0, thr_ma = 0, offset = 0, size = 0;
	struct mem_fds m;
	char path[4096];
	int ev_fd, fifo = 0;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v) {
			fprintf(stderr, "racekit sample: %s needs a value\n", a);
			return 2;
		}
		if (!strcmp(a, "--cgroup"))
			cgroup = v;
		else if (!strcmp(a, "--interval-us"))
			interval_us = atol(v);
		else if (!strcmp(a, "--max-s"))
			max_s = atof(v);
		else if (!strcmp(a, "--tail-ms"))
			tail_ms = atol(v);
		else if (!strcmp(a, "--thr"))
			thr = atoll(v);
		else if (!strcmp(a, "--thr-memavail"))
			thr_ma = atoll(v);
		else if (!strcmp(a, "--disk"))
			disk = v;
		else if (!strcmp(a, "--offset"))
			offset = atoll(v);
		else if (!strcmp(a, "--size"))
			size = atoll(v);
		else if (!strcmp(a, "--fifo"))
			fifo = atoi(v);
		else {
			fprintf(stderr, "racekit sample: unknown option %s\n", a);
			return 2;
		}
		i++;
	}
	if (!cgroup || interval_us <= 0) {
		fprintf(stderr, "racekit sample: --cgroup is required\n");
		return 2;
	}
	if (fifo > 0) {
		struct sched_param param = { .sched_priority = fifo };

		if (sched_setscheduler(0, SCHED_FIFO, &param))
			die("sched_setscheduler");
	}
	mem_open(&m);
	snprintf(path, sizeof(path), "%s/cgroup.events", cgroup);
	ev_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (ev_fd < 0)
		die(path);

	size_t cap = (size_t)(max_s * 1e6 / interval_us) + 16;
	struct sample *s = mmap(NULL, cap * sizeof(*s), PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (s == MAP_FAILED)
		die("mmap");
	memset(s, 0, cap * sizeof(*s));	/* charged now, not during the race */

	size_t n = 0;
	int64_t start = now_ns(), next = start, t_pop = -1, t_empty = -1;
	int64_t deadline = start + (int64_t)(max_s * 1e9);
	struct timespec ts;

	while (n < cap) {
		int64_t a, ma, mf, t;
		int p;

		t = now_ns();
		mem_read(&m, &a, &ma, &mf);
		p = populated(ev_fd);
		s[n++] = (struct sample){ t, (int32_t)(a / 1024), (int32_t)(ma / 1024), (int32_t)(mf / 1024),
					  (int8_t)p };
		if (p == 1 && t_pop < 0)
			t_pop = t;
		if (p == 0 && t_pop >= 0 && t_empty < 0)
			t_empty = t;
		if (t_empty >= 0 && t - t_empty >= tail_ms * 1000000LL)
			break;
		if (t >= deadline)
			break;
		next += interval_us * 1000LL;
		if (next < t)	/* fell behind: do not try to catch up in a burst */
			next = t + interval_us * 500LL;
		ts.tv_sec = next / 1000000000;
		ts.tv_nsec = next % 1000000000;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}

	/* Summary. */
	int64_t min_a = INT64_MAX, t_min = -1, min_ma = INT64_MAX, t_below = -1, t_below_ma = -1;
	int64_t min_mf = INT64_MAX, mf_below = -1;
	int64_t *gaps = calloc(n ? n : 1, sizeof(*gaps)), gap_max = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i].avail_kib * 1024LL < min_a) {
			min_a = s[i].avail_kib * 1024LL;
			t_min = s[i].t;
		}
		if (s[i].memavail_kib * 1024LL < min_ma)
			min_ma = s[i].memavail_kib * 1024LL;
		if (s[i].memfree_kib * 1024LL < min_mf)
			min_mf = s[i].memfree_kib * 1024LL;
		if (i) {
			gaps[i - 1] = s[i].t - s[i - 1].t;
			if (gaps[i - 1] > gap_max)
				gap_max = gaps[i - 1];
		}
	}
	int64_t gap_med = 0;
	if (n > 1) {
		qsort(gaps, n - 1, sizeof(*gaps), cmp_i64);
		gap_med = gaps[(n - 1) / 2];
	}
	int64_t t_cross = thr > 0 ? crossing(s, n, thr, 0, &t_below) : -1;
	int64_t t_cross_ma = thr_ma > 0 ? crossing(s, n, thr_ma, 1, &t_below_ma) : -1;
	for (size_t i = 0; i < n && t_below >= 0; i++)
		if (s[i].t == t_below) {
			mf_below = s[i].memfree_kib * 1024LL;
			break;
		}
	printf("n=%zu interval_med_us=%lld interval_max_us=%lld t_first=%lld t_last=%lld t_pop=%lld "
	       "t_empty=%lld avail_first=%lld memavail_first=%lld t_cross=%lld t_below=%lld "
	       "t_cross_ma=%lld t_below_ma=%lld min_avail=%lld t_min=%lld min_memavail=%lld "
	       "min_memfree=%lld memfree_below=%lld\n",
	       n, (long long)gap_med / 1000, (long long)gap_max / 1000, (long long)s[0].t,
	       (long long)s[n - 1].t, (long long)t_pop, (long long)t_empty,
	       (long long)s[0].avail_kib * 1024, (long long)s[0].memavail_kib * 1024,
	       (long long)t_cross, (long long)t_below, (long long)t_cross_ma, (long long)t_below_ma,
	       (long long)min_a, (long long)t_min, (long long)min_ma, (long long)min_mf,
	       (long long)mf_below);
	fflush(stdout);

	if (disk && size > 0) {
		/* Text series, decimated to fit, padded to the O_DIRECT block size. */
		size_t per_line = 48, room = (size_t)size - 4096;
		size_t step = 1;
		while (n / step * per_line > room)
			step++;
		char *buf = aligned_alloc(4096, (size_t)size);
		if (!buf)
			die("aligned_alloc");
		memset(buf, 0, (size_t)size);
		size_t off = 0;
		for (size_t i = 0; i < n && off + per_line < (size_t)size; i += step)
			off += (size_t)snprintf(buf + off, per_line, "%lld %d %d %d\n",
						(long long)(s[i].t / 1000), s[i].avail_kib,
						s[i].memavail_kib, s[i].populated);
		size_t len = (off + 4095) / 4096 * 4096;
		int fd = open(disk, O_WRONLY | O_DIRECT | O_CLOEXEC);
		if (fd < 0)
			die(disk);
		if (pwrite(fd, buf, len, offset) != (ssize_t)len)
			die("pwrite series");
		close(fd);
	}
	return 0;
}

static void join_cgroup(const char *dir, int oom_adj, int set_adj)
{
	char path[4096], text[32];
	int fd;

	if (dir) {
		snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, "0", 1) != 1)
			die(path);
		close(fd);
	}
	if (set_adj) {
		fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
		snprintf(text, sizeof(text), "%d", oom_adj);
		if (fd < 0 || write(fd, text, strlen(text)) < 0)
			die("/proc/self/oom_score_adj");
		close(fd);
	}
}

/* One allocating thread of the hog: RATE MiB/s (0: as fast as it can) up to MAX MiB (0: no
 * limit), in 64 MiB regions touched 1 MiB at a time; then it holds what it has. */
struct hog_thread {
	double rate, max;
	int64_t t0;
};

static void *hog_alloc(void *arg)
{
	const struct hog_thread *h = arg;
	const size_t region = 64 * MiB;
	long page = sysconf(_SC_PAGESIZE);
	char *p = NULL;
	size_t used = region;
	long mib = 0;

	for (;;) {
		if (h->max > 0 && mib >= (long)h->max)
			break;
		if (used == region) {
			p = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			if (p == MAP_FAILED)
				die("mmap");
			used = 0;
		}
		if (h->rate > 0) {
			int64_t due = h->t0 + (int64_t)((mib + 1) / h->rate * 1e9);
			int64_t d = due - now_ns();
			if (d > 0) {
				struct timespec ts = { d / 1000000000, d % 1000000000 };
				nanosleep(&ts, NULL);
			}
		}
		for (size_t off = 0; off < (size_t)MiB; off += page)
			p[used + off] = 1;
		used += MiB;
		mib++;
	}
	return NULL;
}

static int cmd_hog(int argc, char **argv)
{
	const char *cgroup = NULL;
	double rate = 0, max = 0;
	int adj = 1000, threads = 1;

	for (int i = 0; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--cgroup"))
			cgroup = argv[i + 1];
		else if (!strcmp(argv[i], "--rate"))
			rate = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--max"))
			max = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--oom-score-adj"))
			adj = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--threads"))
			threads = atoi(argv[i + 1]);
		else {
			fprintf(stderr, "racekit hog: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (threads < 1 || threads > 64) {
		fprintf(stderr, "racekit hog: --threads %d: want 1-64\n", threads);
		return 2;
	}
	join_cgroup(cgroup, adj, 1);
	prctl(PR_SET_NAME, "hog");
	int64_t t0 = now_ns();
	printf("hog pid=%d t0=%lld\n", (int)getpid(), (long long)t0);
	fflush(stdout);

	/* One process (the OOM killer's and the contenders' victim is the hog as a whole), the rate
	 * and the limit shared among its threads, each faulting its own pages on its own CPU. */
	struct hog_thread h = { rate / threads, max / threads, t0 };
	for (int i = 1; i < threads; i++) {
		pthread_t tid;
		int err = pthread_create(&tid, NULL, hog_alloc, &h);

		if (err) {
			errno = err;
			die("pthread_create");
		}
	}
	hog_alloc(&h);
	for (;;)
		pause();
}

static int cmd_churn(int argc, char **argv)
{
	const char *cgroup = NULL, *v1_cgroup = NULL;
	double size = 0, seconds = 10;
	long page = sysconf(_SC_PAGESIZE);
	long cycles = 0;

	for (int i = 0; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--cgroup"))
			cgroup = argv[i + 1];
		else if (!strcmp(argv[i], "--v1-cgroup"))
			v1_cgroup = argv[i + 1];
		else if (!strcmp(argv[i], "--size"))
			size = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--seconds"))
			seconds = atof(argv[i + 1]);
		else {
			fprintf(stderr, "racekit churn: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (size <= 0) {
		fprintf(stderr, "racekit churn: --size MIB is required\n");
		return 2;
	}
	join_cgroup(v1_cgroup, 0, 0);
	join_cgroup(cgroup, 0, 0);
	prctl(PR_SET_NAME, "churn");
	size_t len = (size_t)(size * MiB);
	int64_t t0 = now_ns(), end = t0 + (int64_t)(seconds * 1e9);

	while (now_ns() < end) {
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			die("mmap");
		for (size_t off = 0; off < len; off += page)
			p[off] = 1;
		munmap(p, len);
		cycles++;
	}
	printf("churn cycles=%ld mib_per_s=%.0f\n", cycles,
	       cycles * size / ((now_ns() - t0) / 1e9));
	return 0;
}

static int cmd_spawn(int argc, char **argv)
{
	const char *cgroup = NULL;
	int adj = 0, set_adj = 0, i;

	for (i = 0; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--cgroup"))
			cgroup = argv[i + 1];
		else if (!strcmp(argv[i], "--oom-score-adj"))
			adj = atoi(argv[i + 1]), set_adj = 1;
		else {
			fprintf(stderr, "racekit spawn: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (i >= argc || strcmp(argv[i], "--") || i + 1 >= argc) {
		fprintf(stderr, "racekit spawn: [--cgroup DIR] [--oom-score-adj N] -- CMD [ARG...]\n");
		return 2;
	}
	join_cgroup(cgroup, adj, set_adj);
	execvp(argv[i + 1], argv + i + 1);
	die(argv[i + 1]);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "--v1")) {
		v1_dir = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc >= 3 && !strcmp(argv[1], "sleep-random")) {
		uint64_t seed = (uint64_t)now_ns() ^ ((uint64_t)getpid() << 32);
		long max_ms = atol(argv[2]);
		int64_t ns;

		seed ^= seed >> 33;
		seed *= 0xff51afd7ed558ccdULL;
		seed ^= seed >> 33;
		ns = max_ms > 0 ? (int64_t)(seed % (uint64_t)(max_ms * 1000000LL)) : 0;
		struct timespec ts = { ns / 1000000000, ns % 1000000000 };
		nanosleep(&ts, NULL);
		printf("%.0f\n", ns / 1e6);
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "pause"))
		for (;;)
			pause();
	if (argc >= 2 && !strcmp(argv[1], "avail"))
		return cmd_avail();
	if (argc >= 2 && !strcmp(argv[1], "sample"))
		return cmd_sample(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "hog"))
		return cmd_hog(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "churn"))
		return cmd_churn(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "spawn"))
		return cmd_spawn(argc - 2, argv + 2);
	fprintf(stderr, "usage: racekit avail | sample ... | hog ... | spawn ... (see the source)\n");
	return 2;
}
