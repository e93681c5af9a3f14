// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The daemon's BPF side: wake-ups from the ring buffer and the steps that pace them. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon_parts.h"
#include "pods/pods.h"
#include "sys/cgroupfs.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "bpf_loader/bpf_loader.h"

static uint32_t wake_group_mask(enum evictd_wake_group group)
{
	switch (group) {
	case EVICTD_GROUP_MEMORY: return SIGNAL_MASK_MEMORY;
	case EVICTD_GROUP_PIDS: return SIGNAL_MASK_PID;
	case EVICTD_GROUP_INODES: return SIGNAL_MASK_FS;
	default: return SIGNAL_MASK_ALL;
	}
}

/* The cgroup v2 mount the victim's /proc/PID/cgroup path is under, in mount (len PATH_MAX). */
static const char *cgroup_mount(struct daemon *daemon, char *mount)
{
	const struct policy *policy = daemon->policy;
	const char *mnt = policy->pods ? pods_cgroup_mount(policy->pods) : NULL;

	if (mnt && *mnt)
		return mnt;
	if (pods_detect_cgroup_mount(policy->config.root, mount, PATH_MAX))
		return NULL;
	return mount;
}

/*
 * A kernel OOM victim's cgroup v2 directory, read now, while the victim is still there:
 * __oom_kill_process() (mm/oom_kill.c) sends SIGKILL before mark_oom_victim(), and the task
 * keeps its cgroup until it is reaped (cgroup_release() from release_task()), so its
 * /proc/PID/cgroup answers until then. -errno when it is already gone.
 */
static int victim_cgroup_path(struct daemon *daemon, pid_t pid, const char *mnt, char *path,
			      size_t len)
{
	int err;

	if (pid <= 0 || !mnt)
		return -ESRCH;
	err = pods_read_pid_cgroup(daemon->policy->config.root, mnt, pid, path, len);
	if (err)
		log_debug("OOM victim pid %d: its cgroup is gone with it: %s", (int)pid, strerror(-err));
	return err;
}

/* The cgroup id of that directory (mark_victim's TP_PROTO(int pid) on 5.14-5.15 and 6.2-6.8,
 * include/trace/events/oom.h, names the victim by pid alone). 0 when it is gone. */
static uint64_t victim_cgroup_id(const char *path, pid_t pid)
{
	uint64_t id = 0;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		log_debug("OOM victim pid %d: opening %s: %m", (int)pid, path);
		return 0;
	}
	if (cgroupfs_cgroup_id(fd, &id))
		id = 0;
	close(fd);
	return id;
}

/*
 * A kernel OOM kill: where the victim's own memory.max was reached (a container over its
 * limit, the kernel's memcg OOM, cgroupfs_memory_limit_hit) it is said as such, at info: no
 * node pressure evictd could have acted on. Otherwise the node ran out before evictd acted.
 */
static void report_oom_kill(struct daemon *daemon, const struct evictd_wake *wake)
{
	uint64_t cgroup_id = wake->cgroup_id;
	pid_t pid = (pid_t)wake->value;
	char mount[PATH_MAX], path[PATH_MAX], limited[PATH_MAX];
	const char *mnt = cgroup_mount(daemon, mount);
	bool have_path = !victim_cgroup_path(daemon, pid, mnt, path, sizeof(path));
	int64_t limit = 0;

	daemon->kernel_oom_kills_seen++;
	if (daemon->oom_pid_only)
		cgroup_id = EVICTD_CGROUP_ID_UNKNOWN;
	if (cgroup_id == EVICTD_CGROUP_ID_UNKNOWN && have_path)
		cgroup_id = victim_cgroup_id(path, pid);
	if (have_path &&
	    cgroupfs_memory_limit_hit(mnt, path, limited, sizeof(limited), &limit) == 1) {
		log_info("the kernel OOM killer chose pid %d (cgroup id %llu) within %s, which reached "
			 "its memory.max (%lld MiB): a limit of its own, not node pressure", (int)pid,
			 (unsigned long long)cgroup_id, limited, (long long)(limit >> 20));
		return;
	}
	if (cgroup_id == EVICTD_CGROUP_ID_UNKNOWN)
		log_warn("the kernel OOM killer chose pid %d (already gone: its cgroup is unknown): "
			 "evictd did not act in time", (int)pid);
	else
		log_warn("the kernel OOM killer chose pid %d (cgroup id %llu): evictd did not act in "
			 "time", (int)pid, (unsigned long long)cgroup_id);
}

static int on_wake(void *ctx, const struct evictd_wake *wake)
{
	struct daemon *daemon = ctx;

	daemon->bpf_wakeups++;
	daemon->prev_record_ktime_ns = daemon->record_ktime_ns;
	daemon->record_ktime_ns = (int64_t)wake->ktime_ns;
	/* bpf_ktime_get_ns() is CLOCK_MONOTONIC: the same clock as ours. */
	daemon->last_wake_latency_ns = clock_monotonic_ns() - (int64_t)wake->ktime_ns;
	if (!daemon->wake_ktime_ns || (int64_t)wake->ktime_ns < daemon->wake_ktime_ns)
		daemon->wake_ktime_ns = (int64_t)wake->ktime_ns;
	if (wake->type == EVICTD_WAKE_OOM_KILL)
		report_oom_kill(daemon, wake);
	daemon->pending_mask |= wake_group_mask(bpf_loader_wake_group(wake->type));
	return 0;
}

void daemon_bpf_log_detection(const struct daemon *daemon, int64_t killed_at_ns)
{
	const struct policy *policy = daemon->policy;

	if (!daemon->wake_ktime_ns || !daemon->batch_ns || killed_at_ns <= 0)
		return;
	log_info("kill: detection path (CLOCK_MONOTONIC ns): first_record=%lld record=%lld "
		 "previous_record=%lld handler=%lld read=%lld evaluated=%lld ranked=%lld write=%lld "
		 "kept_ranking=%d", (long long)daemon->wake_ktime_ns,
		 (long long)daemon->record_ktime_ns, (long long)daemon->prev_record_ktime_ns,
		 (long long)daemon->batch_ns, (long long)policy->read_done_ns,
		 (long long)policy->evaluated_ns, (long long)policy->ranked_ns,
		 (long long)killed_at_ns, policy->preranked);
}

static void on_bpf(void *ctx, int fd, uint32_t revents)
{
	struct daemon *daemon = ctx;
	int err;

	if (!daemon->batch_ns)
		daemon->batch_ns = clock_monotonic_ns();
	err = bpf_loader_consume(daemon->bpf, on_wake, daemon);

	if (err < 0)
		log_warn("bpf: reading wake-ups: %s", strerror(-err));
}

/* The smallest distance, in the signal's unit, from any threshold on these signals; *read_ns:
 * when the signal it was measured on was read (may be NULL). */
static int64_t margin_to_thresholds_at(const struct policy *policy, uint32_t mask, int64_t *read_ns)
{
	int64_t margin = INT64_MAX;

	for (size_t i = 0; i < policy->engine.n_thresholds; i++) {
		enum ev_signal signal = policy->engine.thresholds[i].signal;
		const struct observation *observed = &policy->obs.signal[signal];
		int64_t distance;

		if (!(mask & SIGNAL_MASK(signal)) || !observed->present)
			continue;
		distance = observed->available - policy->eval.threshold_value[i];
		if (distance < margin) {
			margin = distance;
			if (read_ns)
				*read_ns = observed->read_at_ns;
		}
	}
	return margin;
}

static int64_t margin_to_thresholds(const struct policy *policy, uint32_t mask)
{
	return margin_to_thresholds_at(policy, mask, NULL);
}

static uint64_t clamp_step(int64_t step, int64_t low, int64_t high)
{
	return (uint64_t)(step < low ? low : step > high ? high : step);
}

/*
 * Without BPF nothing says that memory is going, and PSI only speaks once tasks stall, which
 * in a small node is when the kernel OOM killer is about to act (bench/results.md: evictd
 * --no-bpf lost 20 of 20 races at 256 MiB/s with a 10 s poll). So while the OOM guard is on,
 * the memory signals are re-read adaptively as earlyoom does (earlyoom's sleep_time_ms(),
 * main.c: headroom / an assumed fill rate of 6000 KiB per ms, clamped to 100 .. 1000 ms),
 * paced by the nearest memory threshold, the guard included.
 */
#define ADAPTIVE_POLL_MIN_NS (100 * 1000000LL)
#define ADAPTIVE_POLL_MAX_NS (1000 * 1000000LL)
#define ASSUMED_FILL_BYTES_PER_MS (6000 * 1024LL)

int64_t daemon_adaptive_poll_interval_ns(int64_t margin_bytes)
{
	int64_t ms;

	if (margin_bytes <= 0)
		return ADAPTIVE_POLL_MIN_NS;
	ms = margin_bytes / ASSUMED_FILL_BYTES_PER_MS;	/* compared in ms: no overflow */
	if (ms < ADAPTIVE_POLL_MIN_NS / 1000000LL)
		return ADAPTIVE_POLL_MIN_NS;
	if (ms > ADAPTIVE_POLL_MAX_NS / 1000000LL)
		return ADAPTIVE_POLL_MAX_NS;
	return ms * 1000000LL;
}

static void on_adaptive_poll(void *ctx)
{
	struct daemon *daemon = ctx;

	daemon->pending_mask |= SIGNAL_MASK_MEMORY;
}

static void arm_adaptive_poll(struct daemon *daemon)
{
	int64_t margin = margin_to_thresholds(daemon->policy, SIGNAL_MASK_MEMORY);

	if (!daemon->adaptive_poll)
		return;
	if (margin == INT64_MAX || !daemon->policy->config.oom_guard) {
		/* Off after a reload that turned the guard off: the housekeeping poll remains. */
		daemon->adaptive_poll_interval_ns = 0;
		loop_timer_set(daemon->adaptive_poll, LOOP_NO_DEADLINE);
		return;
	}
	daemon->adaptive_poll_interval_ns = daemon_adaptive_poll_interval_ns(margin);
	loop_timer_set(daemon->adaptive_poll, clock_monotonic_ns() + daemon->adaptive_poll_interval_ns);
}

/* Tell the BPF programs how much may happen before we must look again: for memory, the step
 * and rate limit of core/pacing.c (denser as a threshold approaches); for pids and inodes a
 * quarter of the margin. */
void daemon_bpf_update_steps(struct daemon *daemon)
{
	const struct policy *policy = daemon->policy;
	int64_t memory_read_ns = 0;
	int64_t memory = margin_to_thresholds_at(policy, SIGNAL_MASK_MEMORY, &memory_read_ns);
	int64_t pids = margin_to_thresholds(policy, SIGNAL_MASK_PID);
	int64_t inodes = margin_to_thresholds(policy, SIGNAL_MASK(EV_SIGNAL_NODEFS_INODES_FREE) |
							SIGNAL_MASK(EV_SIGNAL_IMAGEFS_INODES_FREE) |
							SIGNAL_MASK(EV_SIGNAL_CONTAINERFS_INODES_FREE));
	struct pacing_memory paced = pacing_memory(&daemon->memory_pacing, memory, memory_read_ns,
						   sysconf(_SC_PAGESIZE));
	struct bpf_loader_steps steps = {
		.memory_pages = paced.step_pages,
		/* The caps keep a step short when a limit changes under us (pid_max,
		 * threads-max, hotplug), which is no event of its own. */
		.pids_tasks = pids == INT64_MAX ? 0 : clamp_step(pids / 4, 1, 256),
		.inodes = inodes == INT64_MAX ? 0 : clamp_step(inodes / 4, 1, 16384),
		.min_interval_ns = { paced.min_interval_ns, 5000000, 5000000 },
		.wake_on_reclaim = true,
	};

	if (!daemon->bpf) {
		arm_adaptive_poll(daemon);
		return;
	}
	if (bpf_loader_set_steps(daemon->bpf, &steps))
		log_warn("bpf: cannot update the wake-up steps; the poll and PSI remain");
}

/* BPF off or unavailable: the adaptive memory poll stands in (see above). */
static void setup_adaptive_poll(struct daemon *daemon)
{
	daemon->adaptive_poll = loop_add_timer(daemon->loop, LOOP_NO_DEADLINE, on_adaptive_poll,
					       daemon);
	if (!daemon->adaptive_poll) {
		log_warn("cannot arm the adaptive memory poll; the housekeeping poll and PSI remain");
		return;
	}
	if (daemon->policy->config.oom_guard)
		log_info("without BPF the memory signals are re-read every 100 ms to 1 s, the "
			 "nearer a threshold the sooner");
}

/* The memory hook's self-check (bpf_loader_check_memory_hook): once a second, two small
 * reads, until the hook attached is seen firing; a silent one is replaced there. */
#define HOOK_CHECK_INTERVAL_NS (1000 * 1000000LL)

static void on_hook_check(void *ctx)
{
	struct daemon *daemon = ctx;
	enum bpf_loader_hook_check verdict = bpf_loader_check_memory_hook(daemon->bpf);

	/* Another hook paces memory from now: look once (an evaluation, which also
	 * publishes the fallback in /metrics). */
	if (verdict == BPF_HOOK_CHECK_FELL_BACK)
		daemon->pending_mask |= SIGNAL_MASK_MEMORY;
	if (verdict == BPF_HOOK_CHECK_CONFIRMED || verdict == BPF_HOOK_CHECK_NONE) {
		loop_timer_set(daemon->bpf_hook_check, LOOP_NO_DEADLINE);
		return;
	}
	loop_timer_set(daemon->bpf_hook_check, clock_monotonic_ns() + HOOK_CHECK_INTERVAL_NS);
}

/* Filesystem modules loaded after start (ext4, xfs): their inode tracepoints are tried
 * every few seconds until they attach (bpf_loader_attach_late). Polled rather than told:
 * a BPF program on module:module_load would itself be one more tracepoint on every kernel
 * and the attach attempt is one syscall per missing tracepoint. */
#define LATE_MODULE_INTERVAL_NS (5000 * 1000000LL)

static void on_late_modules(void *ctx)
{
	struct daemon *daemon = ctx;

	/* A new inode hook: re-read the inode signals once. */
	if (bpf_loader_attach_late(daemon->bpf) > 0)
		daemon->pending_mask |= SIGNAL_MASK_FS;
	loop_timer_set(daemon->bpf_late_modules, bpf_loader_late_pending(daemon->bpf) ?
			clock_monotonic_ns() + LATE_MODULE_INTERVAL_NS : LOOP_NO_DEADLINE);
}

/* Tests only: EVICTD_TEST_MUTE_MEMORY_HOOKS, a bit mask of enum evictd_memory_hook whose
 * programs attach and do nothing (tests/cli/test_memory_hook_fallback.sh). */
static uint32_t muted_memory_hooks(void)
{
	const char *text = getenv("EVICTD_TEST_MUTE_MEMORY_HOOKS");
	char *end;
	unsigned long mask;

	if (!text || !*text || !strcmp(text, "0"))
		return 0;
	mask = strtoul(text, &end, 0);
	if (*end || mask >= (1UL << EVICTD_MEMORY_HOOK_COUNT)) {
		log_warn("EVICTD_TEST_MUTE_MEMORY_HOOKS=%s: not a mask below %u; ignored", text,
			 1U << EVICTD_MEMORY_HOOK_COUNT);
		return 0;
	}
	log_warn("EVICTD_TEST_MUTE_MEMORY_HOOKS=%s: memory hooks muted (tests only)", text);
	return (uint32_t)mask;
}

/* Tests only: EVICTD_TEST_OOM_PID_ONLY=1 drops the cgroup id of every mark_victim record, as
 * the int-pid tracepoint of 5.14-5.15 and 6.2-6.8 leaves it, so that a guest without such a
 * kernel still proves the attribution from the pid at the time of the event
 * (tests/vm/scenarios/24-oom-pid.sh). */
static bool oom_pid_only(void)
{
	const char *text = getenv("EVICTD_TEST_OOM_PID_ONLY");

	if (!text || strcmp(text, "1"))
		return false;
	log_warn("EVICTD_TEST_OOM_PID_ONLY=1: OOM kill records carry the pid alone (tests only)");
	return true;
}

void daemon_bpf_setup(struct daemon *daemon)
{
	int attached;

	daemon->oom_pid_only = oom_pid_only();

	if (daemon->policy->config.no_bpf) {
		daemon->bpf_state = "off (--no-bpf)";
		log_info("BPF off (--no-bpf): running on polling and PSI alone");
		setup_adaptive_poll(daemon);
		return;
	}
	attached = bpf_loader_open(&daemon->bpf, &(struct bpf_loader_opts){
		.pin_dir = daemon->policy->config.bpf_pin_dir,
		.inspect = daemon->policy->config.bpf_inspect,
		.no_page_cache = daemon->policy->config.no_page_cache_bpf,
		.muted_memory_hooks = muted_memory_hooks(),
	});
	if (attached < 0) {
		daemon->bpf = NULL;
		daemon->bpf_state = "unavailable (polling and PSI)";
		setup_adaptive_poll(daemon);
		return;	/* the loader logged why, once */
	}
	if (!loop_add_fd(daemon->loop, bpf_loader_ring_fd(daemon->bpf), EPOLLIN, false, on_bpf, daemon)) {
		bpf_loader_destroy(daemon->bpf, true);
		daemon->bpf = NULL;
		daemon->bpf_state = "unavailable (polling and PSI)";
		setup_adaptive_poll(daemon);
		return;
	}
	daemon->bpf_state = "on";
	daemon->bpf_hook_check = loop_add_timer(daemon->loop,
						clock_monotonic_ns() + HOOK_CHECK_INTERVAL_NS,
						on_hook_check, daemon);
	if (bpf_loader_late_pending(daemon->bpf)) {
		daemon->bpf_late_modules = loop_add_timer(daemon->loop, clock_monotonic_ns() +
							  LATE_MODULE_INTERVAL_NS,
							  on_late_modules, daemon);
		if (!daemon->bpf_late_modules)
			log_warn("bpf: cannot arm the timer for modules loaded later: their "
				 "inode tracepoints stay unattached");
	}
	if (!daemon->bpf_hook_check)
		log_warn("bpf: cannot arm the memory hook's self-check: %s stays attached "
			 "unchecked", bpf_loader_memory_hook(daemon->bpf));
	log_info("BPF on: %d tracepoints attached, maps pinned under %s", attached,
		 bpf_loader_pin_dir(daemon->bpf));
}
