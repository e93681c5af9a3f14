/* mkfiles - create empty files in a directory until ENOSPC (or N files).
 *
 *   mkfiles DIR [--max N] [--prefix P] [--rate PER_SEC]
 *
 * Creates DIR/P000000000, DIR/P000000001, ... (default prefix "f") with
 * O_CREAT|O_EXCL.  Stops at N files or when the filesystem reports ENOSPC
 * (no inodes or no space left), and prints the number of files it created on
 * stdout as a single line `created=N` followed by ` enospc` if it hit ENOSPC.
 * Progress goes to stderr every 1000 files.
 * Exit status: 0 when it reached N or ENOSPC, 1 on any other error, 2 on usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	fprintf(f, "usage: mkfiles DIR [--max N] [--prefix P] [--rate PER_SEC]\n");
}

static double num_arg(const char *opt, const char *v)
{
	char *end;
	double d;

	if (!v) {
		fprintf(stderr, "mkfiles: %s needs a value\n", opt);
		exit(2);
	}
	errno = 0;
	d = strtod(v, &end);
	if (errno || *end || d < 0) {
		fprintf(stderr, "mkfiles: bad value for %s: '%s'\n", opt, v);
		exit(2);
	}
	return d;
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *prefix = "f";
	long max = 0;
	double rate = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--max"))
			max = (long)num_arg(argv[i], argv[i + 1]), i++;
		else if (!strcmp(argv[i], "--rate"))
			rate = num_arg(argv[i], argv[i + 1]), i++;
		else if (!strcmp(argv[i], "--prefix")) {
			if (!argv[i + 1]) {
				fprintf(stderr, "mkfiles: --prefix needs a value\n");
				return 2;
			}
			prefix = argv[++i];
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (argv[i][0] == '-' || dir) {
			fprintf(stderr, "mkfiles: unexpected argument '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		} else
			dir = argv[i];
	}
	if (!dir) {
		usage(stderr);
		return 2;
	}
	setvbuf(stderr, NULL, _IOLBF, 0);

	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (dfd < 0) {
		fprintf(stderr, "mkfiles: cannot open directory %s: %s\n", dir, strerror(errno));
		return 1;
	}
	long n = 0;
	double t0 = now();
	char name[256];
	for (;;) {
		if (max > 0 && n >= max)
			break;
		if (rate > 0) {
			double d = t0 + (n + 1) / rate - now();
			if (d > 0) {
				struct timespec ts = { (time_t)d, (long)((d - (time_t)d) * 1e9) };
				while (nanosleep(&ts, &ts) && errno == EINTR)
					;
			}
		}
		snprintf(name, sizeof(name), "%s%09ld", prefix, n);
		int fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0) {
			if (errno == ENOSPC) {
				fprintf(stderr, "mkfiles: ENOSPC in %s after %ld files\n", dir, n);
				printf("created=%ld enospc\n", n);
				return 0;
			}
			fprintf(stderr, "mkfiles: cannot create %s/%s: %s\n", dir, name, strerror(errno));
			printf("created=%ld\n", n);
			return 1;
		}
		close(fd);
		n++;
		if (n % 1000 == 0)
			fprintf(stderr, "mkfiles: %s: %ld files\n", dir, n);
	}
	printf("created=%ld\n", n);
	return 0;
}
