/* forkbomb - fork children that just sleep, to use up pids.
 *
 *   forkbomb [--max N] [--rate PER_SEC] [--exit-on-fail] [--quiet]
 *
 * Forks up to N children (default: unlimited) at most PER_SEC per second
 * (default: as fast as possible).  Each child blocks in pause() until killed.
 * When fork fails (EAGAIN from pids.max or the pid/thread limits) it reports
 * once and keeps retrying every 100 ms (or exits 1 with --exit-on-fail).  At
 * --max it holds its children until killed.  Children die with the parent
 * (PR_SET_PDEATHSIG), so killing forkbomb alone also cleans up.  Progress goes to stderr:
 *   forkbomb: pid=P children=N
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_s(double d)
{
	if (d <= 0)
		return;
	struct timespec ts = { (time_t)d, (long)((d - (time_t)d) * 1e9) };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: forkbomb [--max N] [--rate PER_SEC] [--exit-on-fail] [--quiet]\n"
		   "  --max N          stop at N children and hold them (default: unlimited)\n"
		   "  --rate PER_SEC   fork at most PER_SEC children per second (default: unlimited)\n"
		   "  --exit-on-fail   exit 1 when fork fails instead of retrying\n"
		   "  --quiet          print progress every 1000 children instead of every 100\n");
}

static double num_arg(const char *opt, const char *v)
{
	char *end;
	double d;

	if (!v) {
		fprintf(stderr, "forkbomb: %s needs a value\n", opt);
		exit(2);
	}
	errno = 0;
	d = strtod(v, &end);
	if (errno || *end || d < 0) {
		fprintf(stderr, "forkbomb: bad value for %s: '%s'\n", opt, v);
		exit(2);
	}
	return d;
}

int main(int argc, char **argv)
{
	double rate = 0;
	long max = 0, every = 100;
	int exit_on_fail = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--max"))
			max = (long)num_arg(argv[i], argv[i + 1]), i++;
		else if (!strcmp(argv[i], "--rate"))
			rate = num_arg(argv[i], argv[i + 1]), i++;
		else if (!strcmp(argv[i], "--exit-on-fail"))
			exit_on_fail = 1;
		else if (!strcmp(argv[i], "--quiet"))
			every = 1000;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "forkbomb: unknown argument '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	setvbuf(stderr, NULL, _IOLBF, 0);
	signal(SIGCHLD, SIG_IGN); /* killed children are reaped automatically */

	long n = 0;
	int failing = 0;
	pid_t self = getpid();
	double t0 = now();

	while (max == 0 || n < max) {
		if (rate > 0)
			sleep_s(t0 + (n + 1) / rate - now());
		pid_t pid = fork();
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != self)
				_exit(0);
			for (;;)
				pause();
		}
		if (pid < 0) {
			if (!failing)
				fprintf(stderr, "forkbomb: pid=%d fork failed after %ld children: %s\n",
					(int)getpid(), n, strerror(errno));
			if (exit_on_fail)
				return 1;
			failing = 1;
			sleep_s(0.1);
			continue;
		}
		if (failing)
			fprintf(stderr, "forkbomb: pid=%d fork works again at %ld children\n",
				(int)getpid(), n);
		failing = 0;
		n++;
		if (n % every == 0)
			fprintf(stderr, "forkbomb: pid=%d children=%ld\n", (int)getpid(), n);
	}
	fprintf(stderr, "forkbomb: pid=%d reached max=%ld children in %.2f s, holding\n",
		(int)getpid(), n, now() - t0);
	for (;;)
		pause();
}
