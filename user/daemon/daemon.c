// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "sys/log.h"
#include "sys/notify.h"
#include "sys/psi.h"
#include "daemon/daemon_parts.h"

int64_t daemon_monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* Consume a timerfd's expiration count so it stops being readable. */
void daemon_arm_timer_at(int fd, int64_t deadline_ns, const char *what)
{
	struct itimerspec spec = { 0 };

	if (deadline_ns != INT64_MAX) {
		spec.it_value.tv_sec = deadline_ns / 1000000000;
		spec.it_value.tv_nsec = deadline_ns % 1000000000;
		if (!spec.it_value.tv_sec && !spec.it_value.tv_nsec)
			spec.it_value.tv_nsec = 1;	/* all zero would disarm it */
	}
	if (timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, NULL))
		log_warn("%s timerfd_settime: %m", what);
}

void daemon_drain_timerfd(int fd, const char *what)
{
	uint64_t expirations;

	if (read(fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		log_warn("%s timerfd read: %m", what);
}

#define DEFAULT_KUBELET_DIR "/var/lib/kubelet"

static void setup_pods(struct daemon *daemon)
{
	struct evictd_config *config = &daemon->config;
	const char *workload_roots[CONFIG_MAX_LIST];
	struct pods_meta_source *meta = NULL;
	bool meta_from_api = false;
	size_t n_roots;
	int err;

	for (size_t i = 0; i < config->workload_roots.n; i++)
		workload_roots[i] = config->workload_roots.items[i];
	daemon_resolve_node_name(daemon);
	daemon_kube_setup(daemon);
	if (config->pods_file[0]) {
		meta = pods_file_source_new(config->pods_file, daemon->node_name);
		if (!meta)
			log_err("pods file %s: out of memory", config->pods_file);
	} else if (daemon->kube && !config->workload_roots.n) {
		meta = kube_pods_source_new(&(struct kube_pods_source_options){
			.client = daemon->kube,
			.node_name = daemon->node_name,
			.refresh_interval_ns = config->kube_pods_refresh_ns,
		});
		meta_from_api = meta != NULL;
	}
	err = pods_open(&daemon->pods, &(struct pods_options){
		.root = config->root,
		.kubelet_cgroup_root = config->kubelet_cgroup_root[0] ? config->kubelet_cgroup_root : NULL,
		.workload_roots = workload_roots,
		.n_workload_roots = config->workload_roots.n,
		.meta_source = meta,
	});
	if (err) {
		log_warn("no cgroup v2 hierarchy to evict from (%s): deciding and reporting only",
			 strerror(-err));
		daemon->pods = NULL;
		return;
	}
	/* Static pods must be known before any decision: wait a little for the first list. */
	if (meta_from_api && kube_pods_source_wait(meta, 5LL * 1000000000))
		log_warn("kubernetes API: no pod list yet; pods without metadata rank at priority 0");
	n_roots = pods_kill_roots(daemon->pods, daemon->kill_roots, DAEMON_MAX_KILL_ROOTS);
	daemon->kill = (struct kill_config){
		.root = config->root,
		.cgroup_mount = pods_cgroup_mount(daemon->pods),
		.allowed_roots = daemon->kill_roots,
		.n_allowed_roots = n_roots,
		.self_cgroup = NULL,	/* re-read before every kill: we may be moved */
		.dry_run = config->dry_run,
		.kill_timeout_ns = config->kill_timeout_ns,
	};
	for (size_t i = 0; i < config->reclaim_commands.n; i++)
		daemon->reclaim_commands[i] = config->reclaim_commands.items[i];
	reclaim_init(&daemon->reclaim, &(struct reclaim_config){
		.disk_commands = config->reclaim_commands.n ? daemon->reclaim_commands : NULL,
		.n_disk_commands = config->reclaim_commands.n,
		.dry_run = config->dry_run,
		.memory_reclaim = config->memory_reclaim_before_kill,
		.kill = &daemon->kill,
	});
	log_info("%s mode: evicting below %s%s", config->workload_roots.n ? "standalone" : "kubernetes",
		 n_roots ? daemon->kill_roots[0] : "(no roots)", n_roots > 1 ? " and others" : "");
}

int daemon_init(struct daemon *daemon, const struct evictd_config *config)
{
	char path[PATH_MAX * 2];

	struct kube_client *kube = daemon->kube;	/* outlives reloads */
	struct kube_report *kube_report = daemon->kube_report;

	memset(daemon, 0, sizeof(*daemon));
	daemon->kube = kube;
	daemon->kube_report = kube_report;
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
	daemon->epoll_fd = -1;
	daemon->shutdown_timer_fd = -1;
	daemon->grace_timer_fd = -1;
	daemon->rank_options.daemonset_last = daemon->config.daemonset_last;
	setup_pods(daemon);
	return 0;
}

void daemon_destroy(struct daemon *daemon)
{
	if (daemon->pods)
		pods_close(daemon->pods);
	daemon->pods = NULL;
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
	log_set_level(fresh.log_level);
	/* Rebuild everything from the new configuration; the thresholds' clocks start anew.
	 * The event loop and the counters carry over. */
	{
		static struct daemon saved;

		saved = *daemon;
		daemon_destroy(daemon);
		/* Keep the API client: daemon_init must not make a second one. */
		daemon->kube = saved.kube;
		daemon->kube_report = saved.kube_report;
		daemon_init(daemon, &fresh);
		daemon->argc = saved.argc;
		daemon->argv = saved.argv;
		daemon->epoll_fd = saved.epoll_fd;
		daemon->grace_timer_fd = saved.grace_timer_fd;
		daemon->pod_psi = saved.pod_psi;
		daemon->n_pod_psi = saved.n_pod_psi;
		memcpy(daemon->sources, saved.sources, sizeof(daemon->sources));
		daemon->psi_enabled = saved.psi_enabled;
		daemon->psi_wakeups = saved.psi_wakeups;
		daemon->evaluations = saved.evaluations;
		daemon->evictions = saved.evictions;
		daemon->evictions_failed = saved.evictions_failed;
		daemon->ops = saved.ops;
		daemon->bpf = saved.bpf;
		daemon->bpf_state = saved.bpf_state;
		daemon->bpf_wakeups = saved.bpf_wakeups;
		daemon->kernel_oom_kills_seen = saved.kernel_oom_kills_seen;
		/* The shutdown plan and the logind lock stay as they were until a restart. */
		daemon->shutdown = saved.shutdown;
		daemon->shutdown_ready = saved.shutdown_ready;
		daemon->shutdown_killer = saved.shutdown_killer;
		daemon->logind = saved.logind;
		daemon->shutdown_timer_fd = saved.shutdown_timer_fd;
		daemon->shutdown_all_pods_gone = saved.shutdown_all_pods_gone;
	}
	log_info("SIGHUP: configuration reloaded, %zu thresholds", fresh.n_thresholds);
	return 0;
}

static const char *victim_name(const struct pod *pod, char *buf, size_t len)
{
	if (!pod)
		snprintf(buf, len, "none");
	else if (pod->namespace_[0])
		snprintf(buf, len, "%.63s/%.255s", pod->namespace_, pod->name);
	else
		snprintf(buf, len, "%.320s", pod->name[0] ? pod->name : pod->cgroup_path);
	return buf;
}

void daemon_log_decision(struct daemon *daemon)
{
	const struct decision *decision = &daemon->decision;
	const struct threshold *threshold;
	const struct observation *observed;
	char victim[sizeof(daemon->logged_victim)];
	char candidates[512] = "";
	size_t used = 0;

	victim_name(decision->victim, victim, sizeof(victim));
	if (decision->threshold_index == daemon->logged_threshold_index &&
	    !strcmp(victim, daemon->logged_victim))
		return;
	if (decision->threshold_index < 0 && daemon->logged_threshold_index < 0)
		return;
	daemon->logged_threshold_index = decision->threshold_index;
	snprintf(daemon->logged_victim, sizeof(daemon->logged_victim), "%s", victim);
	if (decision->threshold_index < 0) {
		log_info("decision: no threshold is met any more");
		return;
	}
	for (size_t i = 0, shown = 0; i < daemon->n_candidates && shown < 5 && used < sizeof(candidates) - 1; i++) {
		const struct pod *pod = daemon->candidates[i];
		char name[330];

		if (pod_never_evict(pod) || pod->processes == 0 || pod->exited)
			continue;
		used += snprintf(candidates + used, sizeof(candidates) - used, "%s%s", shown++ ? "," : "",
				 victim_name(pod, name, sizeof(name)));
	}
	threshold = &daemon->engine.thresholds[decision->threshold_index];
	observed = &daemon->obs.signal[threshold->signal];
	log_info("decision: %s%s %s=%lld < %s (%lld) candidates=%zu [%s%s] victim=%s reason=\"%s\"",
		 decision->dry_run ? "[dry-run] " : "", threshold->hard ? "hard" : "soft",
		 signal_name(threshold->signal), (long long)observed->available, threshold->value.text,
		 (long long)daemon->eval.threshold_value[decision->threshold_index],
		 decision->n_candidates, candidates, decision->n_candidates > 5 ? ",..." : "", victim,
		 decision->reason ? decision->reason : "");
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

static void on_pod_psi(struct daemon *daemon, struct loop_source *source, uint32_t revents);

/* Keep one memory PSI trigger per pod cgroup in step with the pods just discovered. */
static void sync_pod_psi(struct daemon *daemon)
{
	struct pod **pods;
	size_t n_pods = 0;

	if (!daemon->pods || daemon->epoll_fd < 0 || daemon->config.no_psi || !daemon->psi_enabled)
		return;
	if (!daemon->pod_psi && !(daemon->pod_psi = calloc(DAEMON_MAX_POD_PSI, sizeof(*daemon->pod_psi))))
		return;
	for (size_t i = 0; i < daemon->n_pod_psi; i++)
		daemon->pod_psi[i].seen = false;
	pods = pods_list(daemon->pods, &n_pods);
	for (size_t p = 0; p < n_pods; p++) {
		const char *path = pods[p]->cgroup_path;
		struct pod_psi *entry = NULL;
		char pressure[600];
		int fd;

		for (size_t i = 0; i < daemon->n_pod_psi && !entry; i++)
			if (!strcmp(daemon->pod_psi[i].cgroup_path, path))
				entry = &daemon->pod_psi[i];
		if (entry) {
			entry->seen = true;
			continue;
		}
		if (daemon->n_pod_psi >= DAEMON_MAX_POD_PSI || strlen(path) >= sizeof(entry->cgroup_path))
			continue;
		snprintf(pressure, sizeof(pressure), "%s/memory.pressure", path);
		fd = psi_trigger_open_memory(pressure);
		if (fd < 0)
			continue;
		entry = &daemon->pod_psi[daemon->n_pod_psi];
		snprintf(entry->cgroup_path, sizeof(entry->cgroup_path), "%s", path);
		entry->seen = true;
		if (daemon_add_source(daemon, fd, EPOLLPRI, on_pod_psi, entry)) {
			close(fd);
			continue;
		}
		/* daemon_add_source put it in the first free slot; find it for removal later. */
		for (size_t i = 0; i < DAEMON_MAX_SOURCES; i++)
			if (daemon->sources[i].fd == fd && daemon->sources[i].handle == on_pod_psi)
				entry->source = &daemon->sources[i];
		daemon->n_pod_psi++;
	}
	/* Pods that are gone: close their triggers, keep the table dense. */
	for (size_t i = 0; i < daemon->n_pod_psi;) {
		struct pod_psi *entry = &daemon->pod_psi[i];

		if (entry->seen) {
			i++;
			continue;
		}
		if (entry->source) {
			int fd = entry->source->fd;

			daemon_remove_source(daemon, entry->source);
			close(fd);
		}
		*entry = daemon->pod_psi[--daemon->n_pod_psi];
		if (entry->source)
			entry->source->ctx = entry;
	}
}

static void on_pod_psi(struct daemon *daemon, struct loop_source *source, uint32_t revents)
{
	struct pod_psi *entry = source->ctx;

	if (revents & EPOLLERR) {	/* the cgroup was removed: drop the trigger now */
		int fd = source->fd;

		daemon_remove_source(daemon, source);
		close(fd);
		entry->source = NULL;
		entry->seen = false;
		return;
	}
	daemon->psi_wakeups++;
	daemon->pending_mask |= SIGNAL_MASK_MEMORY;
}

static void rank_candidates(struct daemon *daemon, enum ev_signal signal)
{
	daemon->candidates = NULL;
	daemon->n_candidates = 0;
	if (!daemon->pods)
		return;
	if (pods_refresh(daemon->pods))
		return;
	sync_pod_psi(daemon);
	/* Disk use per pod costs walks and a crictl call: only when disk is what is ranked. */
	if (signal_condition(signal) == EV_CONDITION_DISK_PRESSURE)
		pods_read_disk_usage(daemon->pods, &(struct pods_disk_options){
			.kubelet_dir = daemon->config.kubelet_dir,
		});
	daemon->candidates = pods_list(daemon->pods, &daemon->n_candidates);
	daemon->rank_options.fs_layout = daemon->obs.fs_layout;
	rank_pods(signal, &daemon->rank_options, daemon->candidates, daemon->n_candidates);
}

int daemon_evaluate(struct daemon *daemon, uint32_t mask)
{
	struct decision *decision = &daemon->decision;
	const struct threshold *threshold;
	size_t protected_running = 0;
	int err;

	err = signals_read(&daemon->source, mask, &daemon->obs);
	if (err)
		log_debug("reading signals: %s; evaluating what could be read", strerror(-err));
	engine_follow_layout(daemon);
	engine_evaluate(&daemon->engine, &daemon->obs, daemon->now_ns(), &daemon->eval);

	daemon->evaluations++;
	memset(decision, 0, sizeof(*decision));
	decision->threshold_index = daemon->eval.act_on;
	decision->dry_run = daemon->config.dry_run;
	daemon->candidates = NULL;
	daemon->n_candidates = 0;
	if (decision->threshold_index < 0)
		return 0;

	threshold = &daemon->engine.thresholds[decision->threshold_index];
	rank_candidates(daemon, threshold->signal);
	/* The never-evict set ranks last; the victim is the first one outside it. Like the
	 * kubelet's active pods, a cgroup with no task left is not a candidate: it is gone. */
	for (size_t i = 0; i < daemon->n_candidates; i++) {
		const struct pod *pod = daemon->candidates[i];

		if (pod->processes == 0 || pod->exited)
			continue;
		if (pod_never_evict(pod)) {
			protected_running++;
			continue;
		}
		decision->n_candidates++;
		if (!decision->victim)
			decision->victim = daemon->candidates[i];
	}
	if (!decision->victim)
		decision->reason = !daemon->pods ? "no cgroup v2 tree to evict from" :
				   protected_running ? "every candidate is in the never-evict set" :
							  "no pods or workloads to evict";
	else if (threshold->signal == EV_SIGNAL_OOM_GUARD)
		decision->reason = "oom-guard: the kernel's MemAvailable is below the guard, OOM is near";
	else
		decision->reason = threshold->hard ? "hard threshold met" :
						     "soft threshold met for its grace period";
	return 0;
}

bool daemon_is_disk_signal(enum ev_signal signal)
{
	return signal_condition(signal) == EV_CONDITION_DISK_PRESSURE;
}

static bool is_memory_signal(enum ev_signal signal)
{
	return signal == EV_SIGNAL_MEMORY_AVAILABLE || signal == EV_SIGNAL_OOM_GUARD;
}

/* reclaim_read_fn: re-read one signal for the reclaim steps. */
static int reread_signal(void *ctx, enum ev_signal signal, int64_t *available)
{
	struct daemon *daemon = ctx;
	int err = signals_read(&daemon->source, SIGNAL_MASK(signal), &daemon->obs);

	if (!daemon->obs.signal[signal].present)
		return err ? err : -ENODATA;
	*available = daemon->obs.signal[signal].available;
	return 0;
}

/* DESIGN.md §4: node-level reclaim before evicting. Returns true when the signal is resolved. */
static bool reclaim_first(struct daemon *daemon, const struct threshold *threshold, int64_t target)
{
	struct reclaim_report report;
	int err;

	if (daemon_is_disk_signal(threshold->signal))
		err = reclaim_disk(&daemon->reclaim, threshold->signal, target, reread_signal, daemon, &report);
	else if (is_memory_signal(threshold->signal) && daemon->config.memory_reclaim_before_kill)
		err = reclaim_memory(&daemon->reclaim, daemon->candidates, daemon->n_candidates,
				     threshold->signal, target, reread_signal, daemon, &report);
	else
		return false;
	if (err < 0 || report.n_steps == 0)
		return false;
	log_info("node-level reclaim for %s: %zu steps, available %lld -> %lld (target %lld)",
		 signal_name(threshold->signal), report.n_steps, (long long)report.available_before,
		 (long long)report.available_after, (long long)target);
	return report.available_after >= target;
}

static int daemon_handle_rounds(struct daemon *daemon, uint32_t mask);

int daemon_handle(struct daemon *daemon, uint32_t mask)
{
	int killed = daemon_handle_rounds(daemon, mask);

	/* evictd's own NoSchedule taints follow the node conditions. */
	if (daemon->kube_report)
		kube_report_conditions(daemon->kube_report, daemon->eval.conditions);
	return killed;
}

static int daemon_handle_rounds(struct daemon *daemon, uint32_t mask)
{
	int killed = 0;

	for (int round = 0; round < DAEMON_MAX_KILLS_PER_WAKE; round++) {
		const struct threshold *threshold;
		struct kill_result result;
		int64_t target, grace_ns;
		int err;

		daemon_evaluate(daemon, round ? 0 : mask);
		daemon_log_decision(daemon);
		if (daemon->decision.threshold_index < 0) {
			if (daemon->ops)
				eventlog_pressure_cleared(daemon->ops->eventlog);
			break;
		}
		threshold = &daemon->engine.thresholds[daemon->decision.threshold_index];
		target = engine_reclaim_target(&daemon->engine, (size_t)daemon->decision.threshold_index,
					       &daemon->obs);
		if (!daemon->config.dry_run && reclaim_first(daemon, threshold, target)) {
			log_info("%s resolved by node-level reclaim; no pod evicted", signal_name(threshold->signal));
			daemon_ops_record(daemon, EVENTLOG_RECLAIMED, -1, NULL);
			continue;	/* re-read and re-evaluate */
		}
		if (daemon->shutdown_ready && shutdown_in_progress(&daemon->shutdown)) {
			log_debug("node is shutting down: the shutdown sequence terminates pods, not eviction");
			break;
		}
		if (!daemon->decision.victim || !daemon->pods) {
			daemon_ops_record(daemon, EVENTLOG_NO_VICTIM, -1, NULL);
			break;
		}
		/* Hard: no grace. Soft: min(terminationGracePeriodSeconds, evictionMaxPodGracePeriod). */
		grace_ns = threshold->hard ? 0 : kill_soft_grace_ns(daemon->decision.victim,
								    daemon->config.max_pod_grace_period_s);
		err = kill_pod(&daemon->kill, daemon->decision.victim, grace_ns > 0 ? KILL_SOFT : KILL_HARD,
			       grace_ns, &result);
		daemon->last_kill = result;
		if (daemon->config.dry_run) {
			daemon_ops_record(daemon, EVENTLOG_DRY_RUN, -1, NULL);
			break;	/* nothing changed; the same decision would repeat */
		}
		if (!err && result.was_empty)
			break;	/* it ended by itself meanwhile: re-read on the next wake */
		if (err) {
			daemon->evictions_failed++;
			log_err("evicting %s failed: %s", daemon->decision.victim->cgroup_path, strerror(-err));
			daemon_ops_record(daemon, EVENTLOG_FAILED, -1, strerror(-err));
			break;
		}
		/* Detection = the kernel event that woke us (else when the crossing signal was
		 * read); done = the cgroup is empty. */
		daemon_ops_record(daemon, EVENTLOG_KILLED, daemon->now_ns() - (daemon->wake_ktime_ns ?
			   daemon->wake_ktime_ns : daemon->obs.signal[threshold->signal].read_at_ns), NULL);
		daemon->evictions++;
		killed++;
		/* The pod is gone; tell the API server so its controller replaces it (never
		 * waits: the request is queued). */
		if (daemon->kube_report && !daemon->config.workload_roots.n)
			kube_report_eviction(daemon->kube_report, &(struct kube_eviction){
				.pod = daemon->decision.victim,
				.signal = threshold->signal,
				.threshold = &threshold->value,
				.threshold_quantity = daemon->eval.threshold_value[daemon->decision.threshold_index],
				.available = daemon->obs.signal[threshold->signal].available,
			});
		log_info("evicted %s (%s) for %s: %s, empty %.3f ms after %s%s",
			 daemon->logged_victim, daemon->decision.victim->cgroup_path,
			 signal_name(threshold->signal), grace_ns ? "SIGTERM then cgroup.kill" : "cgroup.kill",
			 (double)(result.exited_in_grace ? result.sigterm_to_empty_ns : result.kill_to_empty_ns) / 1e6,
			 result.exited_in_grace ? "SIGTERM" : "the kill",
			 threshold->signal == EV_SIGNAL_OOM_GUARD ? " [oom-guard]" : "");
		/* The victim is gone: forget it so the next decision is logged afresh. */
		daemon->logged_victim[0] = '\0';
		/* Killing frees memory and PIDs at once, but disk only once the runtime has
		 * cleaned the pod up: like the kubelet (waitForPodsCleanup), evict no second pod
		 * for a disk signal until the next wake-up, when node-level reclaim runs first. */
		if (daemon_is_disk_signal(threshold->signal))
			break;
	}
	return killed;
}

int daemon_add_source(struct daemon *daemon, int fd, uint32_t events,
		      void (*handle)(struct daemon *daemon, struct loop_source *source, uint32_t revents),
		      void *ctx)
{
	struct loop_source *source = NULL;
	struct epoll_event event = { .events = events };

	for (size_t i = 0; i < DAEMON_MAX_SOURCES; i++)
		if (!daemon->sources[i].handle) {
			source = &daemon->sources[i];
			break;
		}
	if (!source) {
		log_err("event loop: more than %d sources", DAEMON_MAX_SOURCES);
		return -E2BIG;
	}
	*source = (struct loop_source){ .fd = fd, .handle = handle, .ctx = ctx };
	event.data.ptr = source;
	if (epoll_ctl(daemon->epoll_fd, EPOLL_CTL_ADD, fd, &event)) {
		int err = -errno;

		log_err("epoll_ctl add fd %d: %m", fd);
		memset(source, 0, sizeof(*source));
		return err;
	}
	return 0;
}

int daemon_add_borrowed_source(struct daemon *daemon, int fd, uint32_t events,
			       void (*handle)(struct daemon *daemon, struct loop_source *source,
					      uint32_t revents),
			       void *ctx)
{
	int err = daemon_add_source(daemon, fd, events, handle, ctx);

	for (size_t i = 0; !err && i < DAEMON_MAX_SOURCES; i++)
		if (daemon->sources[i].fd == fd && daemon->sources[i].handle == handle)
			daemon->sources[i].borrowed = true;
	return err;
}

void daemon_remove_source(struct daemon *daemon, struct loop_source *source)
{
	epoll_ctl(daemon->epoll_fd, EPOLL_CTL_DEL, source->fd, NULL);
	memset(source, 0, sizeof(*source));
}

static void on_signal(struct daemon *daemon, struct loop_source *source, uint32_t revents)
{
	struct signalfd_siginfo info;

	while (read(source->fd, &info, sizeof(info)) == sizeof(info)) {
		if (info.ssi_signo == SIGHUP) {
			notify_reloading();
			if (daemon->ops)
				eventlog_reopen(daemon->ops->eventlog);
			if (daemon_reload(daemon) == 0)
				daemon->pending_mask |= SIGNAL_MASK_ALL;
			notify_ready("reloaded: %zu thresholds", daemon->config.n_thresholds);
			continue;
		}
		log_info("received %s, exiting", strsignal((int)info.ssi_signo));
		daemon->stop = true;
	}
}

static void on_timer(struct daemon *daemon, struct loop_source *source, uint32_t revents)
{
	daemon_drain_timerfd(source->fd, "housekeeping");
	daemon->pending_mask |= SIGNAL_MASK_ALL;
	daemon->housekeeping_due = true;
}

static void on_grace_timer(struct daemon *daemon, struct loop_source *source, uint32_t revents)
{
	daemon_drain_timerfd(source->fd, "grace");
	daemon->pending_mask |= SIGNAL_MASK_ALL;
}

/* A soft threshold becomes actionable when its grace period ends, which no kernel event
 * announces: wake up exactly then instead of at the next housekeeping tick. */
static void arm_grace_timer(struct daemon *daemon)
{
	const struct eviction_engine *engine = &daemon->engine;
	int64_t earliest = INT64_MAX;

	if (daemon->grace_timer_fd < 0)
		return;
	for (size_t i = 0; i < engine->n_thresholds; i++) {
		int64_t deadline;

		if (engine->thresholds[i].hard || !daemon->eval.met[i] || daemon->eval.actionable[i] ||
		    engine->state.first_observed_ns[i] < 0)
			continue;
		deadline = engine->state.first_observed_ns[i] + engine->thresholds[i].grace_period_ns;
		if (deadline < earliest)
			earliest = deadline;
	}
	daemon_arm_timer_at(daemon->grace_timer_fd, earliest, "grace");
}

static void on_psi(struct daemon *daemon, struct loop_source *source, uint32_t revents)
{
	if (revents & EPOLLERR) {
		log_warn("PSI trigger on %s gone; relying on the other sources", PSI_MEMORY_PATH);
		daemon_remove_source(daemon, source);
		return;
	}
	daemon->psi_wakeups++;
	daemon->pending_mask |= SIGNAL_MASK_MEMORY;
}

static int setup_loop(struct daemon *daemon)
{
	int64_t interval = daemon->config.housekeeping_interval_ns;
	struct itimerspec timer = {
		.it_interval = { interval / 1000000000, interval % 1000000000 },
		.it_value = { interval / 1000000000, interval % 1000000000 },
	};
	char psi_path[PATH_MAX + 32];
	sigset_t mask;
	int fd;

	daemon->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (daemon->epoll_fd < 0) {
		log_err("epoll_create1: %m");
		return -errno;
	}

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL)) {
		log_err("sigprocmask: %m");
		return -errno;
	}
	fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0 || daemon_add_source(daemon, fd, EPOLLIN, on_signal, NULL)) {
		log_err("signalfd: %m");
		return -EIO;
	}

	/* The backstop: everything is re-read at least every housekeeping interval. */
	fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (fd < 0 || timerfd_settime(fd, 0, &timer, NULL) ||
	    daemon_add_source(daemon, fd, EPOLLIN, on_timer, NULL)) {
		log_err("timerfd: %m");
		return -EIO;
	}

	daemon->grace_timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (daemon->grace_timer_fd < 0 ||
	    daemon_add_source(daemon, daemon->grace_timer_fd, EPOLLIN, on_grace_timer, NULL)) {
		log_err("grace timerfd: %m");
		return -EIO;
	}

	/* PSI: the kernel wakes us when tasks stall on memory, i.e. near the watermarks. */
	snprintf(psi_path, sizeof(psi_path), "%s%s", daemon->config.root, PSI_MEMORY_PATH);
	fd = daemon->config.no_psi ? -ENOTSUP : psi_trigger_open_memory(psi_path);
	if (fd >= 0 && daemon_add_source(daemon, fd, EPOLLPRI, on_psi, NULL) == 0)
		daemon->psi_enabled = true;
	else if (fd >= 0)
		close(fd);

	daemon_bpf_setup(daemon);
	return 0;
}

static void log_round(struct daemon *daemon)
{
	if (daemon->config.dry_run || log_get_level() >= LOGLEVEL_DEBUG) {
		report_text(stdout, &daemon->engine, &daemon->obs, &daemon->eval, &daemon->decision);
		fflush(stdout);
	}
}

int daemon_run(struct daemon *daemon)
{
	int status = 0;

	if (setup_loop(daemon) || daemon_ops_open(daemon)) {
		status = 1;
		goto cleanup;
	}
	daemon_shutdown_setup(daemon);
	log_info("evictd running%s: %zu thresholds, housekeeping every %lld ms, PSI %s, BPF %s",
		 daemon->config.dry_run ? " in dry-run mode" : "", daemon->config.n_thresholds,
		 (long long)(daemon->config.housekeeping_interval_ns / 1000000),
		 daemon->psi_enabled ? "on" : "off", daemon->bpf_state);
	daemon_handle(daemon, 0);
	if (daemon->decision.threshold_index < 0)
		rank_candidates(daemon, EV_SIGNAL_MEMORY_AVAILABLE);
	daemon_bpf_update_steps(daemon);
	arm_grace_timer(daemon);
	daemon_ops_update_metrics(daemon);
	report_text(stdout, &daemon->engine, &daemon->obs, &daemon->eval, &daemon->decision);
	fflush(stdout);
	notify_ready("watching %zu thresholds%s", daemon->config.n_thresholds,
		     daemon->config.dry_run ? " (dry run)" : "");

	while (!daemon->stop) {
		struct epoll_event events[16];
		int n = epoll_wait(daemon->epoll_fd, events, 16, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_err("epoll_wait: %m");
			status = 1;
			break;
		}
		for (int i = 0; i < n; i++) {
			struct loop_source *source = events[i].data.ptr;

			if (source->handle)
				source->handle(daemon, source, events[i].events);
		}
		/* One evaluation per batch of wake-ups, reading only what they concern. */
		if (daemon->pending_mask && !daemon->stop) {
			uint32_t mask = daemon->pending_mask;

			daemon->pending_mask = 0;
			daemon_handle(daemon, mask == SIGNAL_MASK_ALL ? 0 : mask);
			daemon->wake_ktime_ns = 0;
			/* Keep the ranking evictctl shows current even without pressure. */
			if (daemon->housekeeping_due && daemon->decision.threshold_index < 0)
				rank_candidates(daemon, EV_SIGNAL_MEMORY_AVAILABLE);
			daemon_bpf_update_steps(daemon);
			arm_grace_timer(daemon);
			daemon_ops_update_metrics(daemon);
			if (daemon->housekeeping_due)
				log_round(daemon);
			daemon->housekeeping_due = false;
		}
	}
cleanup:
	notify_stopping();
	daemon_shutdown_teardown(daemon);
	daemon_kube_teardown(daemon);
	daemon_ops_close(daemon);
	/* A clean exit removes the pins; a crash leaves them for the next start to carry over. */
	bpf_loader_destroy(daemon->bpf, true);
	daemon->bpf = NULL;
	for (size_t i = 0; i < DAEMON_MAX_SOURCES; i++)
		if (daemon->sources[i].handle) {
			/* Borrowed fds (ring buffer, control socket, logind) are their owners' to close. */
			if (!daemon->sources[i].borrowed)
				close(daemon->sources[i].fd);
			memset(&daemon->sources[i], 0, sizeof(daemon->sources[i]));
		}
	if (daemon->epoll_fd >= 0)
		close(daemon->epoll_fd);
	daemon->epoll_fd = -1;
	free(daemon->pod_psi);
	daemon->pod_psi = NULL;
	daemon->n_pod_psi = 0;
	return status;
}
