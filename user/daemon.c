// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"

int64_t daemon_monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

#define DEFAULT_KUBELET_DIR "/var/lib/kubelet"

void daemon_init(struct daemon *daemon, const struct evictd_config *config)
{
	char path[PATH_MAX * 2];

	memset(daemon, 0, sizeof(*daemon));
	daemon->config = *config;
	/* A host without a kubelet (standalone use) still has a root filesystem to guard. */
	snprintf(path, sizeof(path), "%s%s", config->root, config->kubelet_dir);
	if (!strcmp(config->kubelet_dir, DEFAULT_KUBELET_DIR) && access(path, F_OK) && errno == ENOENT) {
		log_info("%s does not exist: nodefs is the root filesystem (set --root-dir to change)", path);
		strcpy(daemon->config.kubelet_dir, "/");
	}
	daemon->source = (struct signal_source){
		.root = daemon->config.root,
		.kubelet_dir = daemon->config.kubelet_dir,
		.imagefs_dir = daemon->config.imagefs_dir,
		.containerfs_dir = daemon->config.containerfs_dir,
	};
	daemon->now_ns = daemon_monotonic_ns;
	daemon->logged_threshold_index = -1;
}

int daemon_reload(struct daemon *daemon)
{
	static struct evictd_config fresh;
	int err;

	config_init_defaults(&fresh);
	err = config_parse_args(&fresh, daemon->argc, daemon->argv);
	if (config_finalize(&fresh) || err) {
		log_err("SIGHUP: the new configuration is invalid (see above); keeping the running one");
		return -EINVAL;
	}
	if (fresh.validate || fresh.once) {
		log_err("SIGHUP: --validate/--once make no sense on reload; keeping the running one");
		return -EINVAL;
	}
	/* Keep the derived paths the running daemon settled on; take everything else. */
	strcpy(fresh.kubelet_dir, daemon->config.kubelet_dir);
	daemon->config = fresh;
	daemon->engine_ready = false;	/* thresholds may have changed: start their clocks anew */
	log_set_level(fresh.log_level);
	log_info("SIGHUP: configuration reloaded, %zu thresholds", fresh.n_thresholds);
	return 0;
}

void daemon_log_decision(struct daemon *daemon)
{
	const struct decision *decision = &daemon->decision;
	const struct threshold *threshold;
	const struct observation *observed;

	if (decision->threshold_index == daemon->logged_threshold_index &&
	    decision->victim == daemon->logged_victim)
		return;
	daemon->logged_threshold_index = decision->threshold_index;
	daemon->logged_victim = decision->victim;
	if (decision->threshold_index < 0) {
		log_info("decision: no threshold met any more");
		return;
	}
	threshold = &daemon->engine.thresholds[decision->threshold_index];
	observed = &daemon->obs.signal[threshold->signal];
	log_info("decision: %s%s %s=%lld < %s (%lld) candidates=%zu victim=%s%s%s reason=\"%s\"",
		 decision->dry_run ? "[dry-run] " : "", threshold->hard ? "hard" : "soft",
		 signal_name(threshold->signal), (long long)observed->available, threshold->value.text,
		 (long long)daemon->eval.threshold_value[decision->threshold_index], decision->n_candidates,
		 decision->victim ? decision->victim->namespace_ : "none", decision->victim ? "/" : "",
		 decision->victim ? decision->victim->name : "", decision->reason ? decision->reason : "");
}

/* containerfs thresholds follow the filesystem layout, which is only known after a read. */
static void engine_follow_layout(struct daemon *daemon)
{
	struct threshold effective[EV_MAX_THRESHOLDS];
	size_t n;

	if (daemon->engine_ready && daemon->engine_layout == daemon->obs.fs_layout)
		return;
	n = config_effective_thresholds(&daemon->config, daemon->obs.fs_layout, effective, EV_MAX_THRESHOLDS);
	engine_init(&daemon->engine, effective, n, daemon->config.pressure_transition_period_ns);
	if (daemon->engine_ready)
		log_info("filesystem layout is now %s; containerfs thresholds follow it",
			 fs_layout_name(daemon->obs.fs_layout));
	daemon->engine_layout = daemon->obs.fs_layout;
	daemon->engine_ready = true;
}

int daemon_evaluate(struct daemon *daemon, uint32_t mask)
{
	struct decision *decision = &daemon->decision;
	int err;

	err = signals_read(&daemon->source, mask, &daemon->obs);
	if (err)
		log_warn("reading signals: %s; evaluating what could be read", strerror(-err));
	engine_follow_layout(daemon);
	engine_evaluate(&daemon->engine, &daemon->obs, daemon->now_ns(), &daemon->eval);

	daemon->evaluations++;
	memset(decision, 0, sizeof(*decision));
	decision->threshold_index = daemon->eval.act_on;
	decision->dry_run = daemon->config.dry_run;
	if (decision->threshold_index < 0)
		return 0;

	/* Candidates come from the pods source; skip the never-evict set. */
	for (size_t i = 0; i < daemon->n_candidates; i++) {
		if (pod_never_evict(daemon->candidates[i]))
			continue;
		decision->n_candidates++;
		if (!decision->victim)
			decision->victim = daemon->candidates[i];
	}
	if (!decision->victim)
		decision->reason = daemon->n_candidates ? "every candidate is in the never-evict set" :
							  "no eviction candidates (no pods source configured)";
	else
		decision->reason = daemon->engine.thresholds[decision->threshold_index].signal == EV_SIGNAL_OOM_GUARD ?
					   "oom-guard: MemAvailable below the guard" :
					   "threshold met";
	return 0;
}

static int setup_fds(struct daemon *daemon, int *epoll_fd, int *timer_fd, int *signal_fd)
{
	int64_t interval = daemon->config.housekeeping_interval_ns;
	struct itimerspec timer = {
		.it_interval = { interval / 1000000000, interval % 1000000000 },
		.it_value = { interval / 1000000000, interval % 1000000000 },
	};
	struct epoll_event event = { .events = EPOLLIN };
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL)) {
		log_err("sigprocmask: %m");
		return -errno;
	}
	*signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	*timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	*epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (*signal_fd < 0 || *timer_fd < 0 || *epoll_fd < 0) {
		log_err("creating the event loop fds: %m");
		return -errno;
	}
	if (timerfd_settime(*timer_fd, 0, &timer, NULL)) {
		log_err("timerfd_settime: %m");
		return -errno;
	}
	event.data.fd = *signal_fd;
	if (epoll_ctl(*epoll_fd, EPOLL_CTL_ADD, *signal_fd, &event))
		return -errno;
	event.data.fd = *timer_fd;
	if (epoll_ctl(*epoll_fd, EPOLL_CTL_ADD, *timer_fd, &event))
		return -errno;
	return 0;
}

static void log_round(struct daemon *daemon)
{
	daemon_log_decision(daemon);
	if (daemon->config.dry_run || log_get_level() >= LOGLEVEL_DEBUG) {
		report_text(stdout, &daemon->engine, &daemon->obs, &daemon->eval, &daemon->decision);
		fflush(stdout);
	}
}

int daemon_run(struct daemon *daemon)
{
	int epoll_fd = -1, timer_fd = -1, signal_fd = -1;
	int status = 0;

	if (setup_fds(daemon, &epoll_fd, &timer_fd, &signal_fd)) {
		status = 1;
		goto cleanup;
	}
	log_info("evictd running%s: %zu thresholds, housekeeping every %llds",
		 daemon->config.dry_run ? " in dry-run mode" : "", daemon->config.n_thresholds,
		 (long long)(daemon->config.housekeeping_interval_ns / 1000000000));
	daemon_evaluate(daemon, 0);
	report_text(stdout, &daemon->engine, &daemon->obs, &daemon->eval, &daemon->decision);
	fflush(stdout);

	for (;;) {
		struct epoll_event events[8];
		int n = epoll_wait(epoll_fd, events, 8, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_err("epoll_wait: %m");
			status = 1;
			goto cleanup;
		}
		for (int i = 0; i < n; i++) {
			int fd = events[i].data.fd;

			if (fd == signal_fd) {
				struct signalfd_siginfo info;

				if (read(signal_fd, &info, sizeof(info)) != sizeof(info))
					continue;
				if (info.ssi_signo == SIGHUP) {
					if (daemon_reload(daemon) == 0) {
						daemon_evaluate(daemon, 0);
						log_round(daemon);
					}
					continue;
				}
				log_info("received %s, exiting", strsignal((int)info.ssi_signo));
				goto cleanup;
			}
			if (fd == timer_fd) {
				uint64_t expirations;

				if (read(timer_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
					log_warn("timerfd read: %m");
				daemon_evaluate(daemon, 0);
				log_round(daemon);
			}
		}
	}
cleanup:
	if (epoll_fd >= 0)
		close(epoll_fd);
	if (timer_fd >= 0)
		close(timer_fd);
	if (signal_fd >= 0)
		close(signal_fd);
	return status;
}
