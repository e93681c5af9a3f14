// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * logind-probe: the graceful-shutdown half of evictd on its own, for checking logind.c and
 * shutdown.c against a real systemd-logind before the daemon is wired (and the reference for
 * that wiring). It takes evictd's command line (config_parse_args) plus --state-dir=DIR and
 * --logind-dropin-dir=DIR, discovers pods or --workload-root workloads, holds the inhibitor,
 * and on PrepareForShutdown runs the kill sequence with real kills; SIGTERM/SIGINT end it.
 *
 * Not built by tests/vm/progs/Makefile (it needs libsystemd and the evictd library):
 *   make build/libevictd.a && gcc -std=gnu11 -D_GNU_SOURCE -Iuser -Ibpf -Ibuild \
 *       tests/vm/progs/logind-probe.c build/libevictd.a \
 *       $(pkg-config --cflags --libs libbpf yaml-0.1 json-c libsystemd libmicrohttpd libcurl) \
 *       -lelf -lz -lm -o build/logind-probe
 * Copied into a guest as /usr/bin/evictd it runs tests/vm/systemd-scenarios/1*-shutdown-*.sh.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "kill.h"
#include "log.h"
#include "logind.h"
#include "pods.h"
#include "shutdown.h"

struct probe {
	struct evictd_config config;
	struct pods *pods;
	struct kill_config kill;
	const char *kill_roots[32];
	struct shutdown_killer *killer;
	struct shutdown_manager shutdown;
	struct logind *logind;
	int timer_fd;
};

static int64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Advance the sequence; release the lock when it says so; arm the timer for its next deadline. */
static void step(struct probe *p)
{
	struct itimerspec spec = { 0 };
	bool release = false;
	int64_t next = shutdown_step(&p->shutdown, monotonic_ns(), &release);

	if (release)
		logind_release(p->logind);
	if (next != SHUTDOWN_NO_DEADLINE) {
		spec.it_value.tv_sec = next / 1000000000;
		spec.it_value.tv_nsec = next % 1000000000;
		if (!spec.it_value.tv_sec && !spec.it_value.tv_nsec)
			spec.it_value.tv_nsec = 1;
	}
	if (timerfd_settime(p->timer_fd, TFD_TIMER_ABSTIME, &spec, NULL))
		log_err("timerfd_settime: %m");
}

static void on_prepare_for_shutdown(void *ctx, bool start)
{
	struct probe *p = ctx;
	struct pod **pods = NULL;
	size_t n = 0;

	if (!start) {
		shutdown_cancel(&p->shutdown, monotonic_ns());
		step(p);
		return;
	}
	if (p->pods && pods_refresh(p->pods) == 0)
		pods = pods_list(p->pods, &n);
	if (shutdown_begin(&p->shutdown, monotonic_ns(), pods, n) == -ENOMEM)
		logind_release(p->logind);	/* nothing we can do: do not hold the node up */
	step(p);
}

/* Pull our own options out; the rest is evictd's command line. */
static int split_args(int argc, char **argv, char **out, const char **state_dir, const char **dropin_dir)
{
	int n = 0;

	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "--state-dir=", 12))
			*state_dir = argv[i] + 12;
		else if (!strncmp(argv[i], "--logind-dropin-dir=", 20))
			*dropin_dir = argv[i] + 20;
		else
			out[n++] = argv[i];
	}
	out[n] = NULL;
	return n;
}

static int setup(struct probe *p, const char *state_dir, const char *dropin_dir)
{
	const char *roots[CONFIG_MAX_LIST];
	size_t n_roots;
	int err;

	for (size_t i = 0; i < p->config.workload_roots.n; i++)
		roots[i] = p->config.workload_roots.items[i];
	err = pods_open(&p->pods, &(struct pods_options){
		.root = p->config.root,
		.workload_roots = roots,
		.n_workload_roots = p->config.workload_roots.n,
	});
	if (err) {
		log_err("pods_open: %s", strerror(-err));
		return err;
	}
	n_roots = pods_kill_roots(p->pods, p->kill_roots, 32);
	p->kill = (struct kill_config){
		.root = p->config.root,
		.cgroup_mount = pods_cgroup_mount(p->pods),
		.allowed_roots = p->kill_roots,
		.n_allowed_roots = n_roots,
		.dry_run = p->config.dry_run,
		.kill_timeout_ns = p->config.kill_timeout_ns,
	};
	err = shutdown_killer_new(&p->killer, &p->kill);
	if (err)
		return err;
	err = shutdown_init(&p->shutdown, &(struct shutdown_options){
		.config = &p->config,
		.ops = &shutdown_killer_ops,
		.ops_ctx = p->killer,
		.state_dir = state_dir,
	});
	if (err)
		return err;
	if (!shutdown_enabled(&p->shutdown)) {
		log_err("graceful node shutdown is not configured");
		return -EINVAL;
	}
	for (size_t g = 0; g < p->shutdown.plan.n_groups; g++)
		log_info("shutdown: group %zu: priority >= %d, %lld s", g + 1,
			 p->shutdown.plan.groups[g].priority,
			 (long long)(p->shutdown.plan.groups[g].period_ns / 1000000000));
	p->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (p->timer_fd < 0) {
		log_err("timerfd_create: %m");
		return -errno;
	}
	return logind_open(&p->logind, &(struct logind_options){
		.inhibit_delay_ns = p->shutdown.plan.total_ns,
		.dropin_dir = dropin_dir,
		.prepare_for_shutdown = on_prepare_for_shutdown,
		.ctx = p,
	});
}

static int add_fd(int epoll_fd, int fd, uint32_t events, uint64_t tag)
{
	struct epoll_event event = { .events = events, .data.u64 = tag };

	if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event)) {
		log_err("epoll_ctl add fd %d: %m", fd);
		return -errno;
	}
	return 0;
}

enum { TAG_SIGNAL, TAG_LOGIND, TAG_KILLER, TAG_TIMER };

int main(int argc, char **argv)
{
	static struct probe p;
	const char *state_dir = NULL, *dropin_dir = NULL;
	char **args = calloc((size_t)argc + 1, sizeof(*args));
	int epoll_fd, signal_fd, n_args, err;
	sigset_t mask;
	bool stop = false;

	if (!args)
		return 1;
	n_args = split_args(argc, argv, args, &state_dir, &dropin_dir);
	config_init_defaults(&p.config);
	err = config_parse_args(&p.config, n_args, args);
	if (err > 0)
		return 0;
	if (config_finalize(&p.config) || err) {
		log_err("invalid configuration");
		return 2;
	}
	log_set_level(p.config.log_level);

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (signal_fd < 0 || epoll_fd < 0 || setup(&p, state_dir, dropin_dir))
		return 1;
	if (add_fd(epoll_fd, signal_fd, EPOLLIN, TAG_SIGNAL) ||
	    add_fd(epoll_fd, logind_fd(p.logind), logind_events(p.logind), TAG_LOGIND) ||
	    add_fd(epoll_fd, shutdown_killer_fd(p.killer), EPOLLIN, TAG_KILLER) ||
	    add_fd(epoll_fd, p.timer_fd, EPOLLIN, TAG_TIMER))
		return 1;
	log_info("logind-probe: running (state in %s)", p.shutdown.state_path[0] ? p.shutdown.state_path : "nowhere");

	while (!stop) {
		struct epoll_event events[8];
		int n = epoll_wait(epoll_fd, events, 8, -1);

		if (n < 0 && errno != EINTR) {
			log_err("epoll_wait: %m");
			break;
		}
		for (int i = 0; i < n; i++) {
			switch (events[i].data.u64) {
			case TAG_SIGNAL: {
				struct signalfd_siginfo info;

				while (read(signal_fd, &info, sizeof(info)) == sizeof(info))
					stop = true;
				break;
			}
			case TAG_LOGIND:
				logind_process(p.logind);
				break;
			case TAG_KILLER:
				shutdown_killer_dispatch(p.killer, &p.shutdown);
				step(&p);
				break;
			case TAG_TIMER: {
				uint64_t expirations;

				if (read(p.timer_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
					log_err("timerfd read: %m");
				step(&p);
				break;
			}
			}
		}
	}
	log_info("logind-probe: exiting (shutdown %s)", shutdown_phase_name(p.shutdown.phase));
	logind_close(p.logind);
	shutdown_destroy(&p.shutdown);
	shutdown_killer_free(p.killer);
	pods_close(p.pods);
	free(args);
	return 0;
}
