// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Killing through cgroup v2 (DESIGN.md §6).
 *
 * cgroup.kill (Linux 5.14) SIGKILLs every task of the cgroup and its descendants atomically
 * with respect to fork, so nothing escapes by forking during the kill. cgroup.events then
 * flips to "populated 0" once the last task has exited, and kernfs wakes POLLPRI (and
 * POLLERR) pollers of that file: after each read, poll(POLLPRI) sleeps until the next
 * change. No pid is ever resolved twice for the hard kill; only the soft path's SIGTERM
 * goes through pids read from cgroup.procs (see sigterm_one).
 *
 * Safety: a target is checked lexically (canonical, not /, not the mount root, below an
 * allowed root, not evictd's own cgroup or an ancestor), then opened component by component
 * with O_NOFOLLOW so no symlink can redirect the write, and every later file is opened
 * relative to that directory fd.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "act/kill.h"
#include "sys/cgroupfs.h"
#include "sys/fileio.h"
#include "sys/log.h"
#include "pods/pods.h"


/* Without cgroup.kill (< 5.14): re-send SIGKILL this often until the cgroup is empty. */
#define FALLBACK_ROUND_MS 100

/* ---- the real calls ------------------------------------------------------------------ */

static int real_signal_pid(pid_t pid, int sig)
{
	return kill(pid, sig) ? -errno : 0;
}

static int real_wait_change(int events_fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = events_fd, .events = POLLPRI };
	int n = poll(&pfd, 1, timeout_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	return n > 0 && (pfd.revents & (POLLPRI | POLLERR)) ? 1 : 0;
}


static int64_t real_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void resolve_ops(const struct kill_config *config, struct kill_ops *ops)
{
	const struct kill_ops *given = config->ops;

	ops->write_file = given && given->write_file ? given->write_file : fileio_write_at;
	ops->signal_pid = given && given->signal_pid ? given->signal_pid : real_signal_pid;
	ops->wait_change = given && given->wait_change ? given->wait_change : real_wait_change;
	ops->check_cgroupfs = given && given->check_cgroupfs ? given->check_cgroupfs : cgroupfs_check_v2;
	ops->now_ns = given && given->now_ns ? given->now_ns : real_now_ns;
}

static int64_t add_ns(int64_t a, int64_t b)
{
	int64_t sum;

	return __builtin_add_overflow(a, b, &sum) ? INT64_MAX : sum;
}

static double ms(int64_t ns)
{
	return (double)ns / 1e6;
}

/* ---- the never-kill rules -------------------------------------------------------------- */


static bool is_strictly_below(const char *ancestor, const char *path)
{
	return strcmp(ancestor, path) != 0 && pods_path_is_ancestor(ancestor, path);
}

/* Open path one component at a time, refusing symlinks. */
static int open_without_symlinks(const char *path, int *out_fd)
{
	char copy[PATH_MAX], *component, *save = NULL;
	int fd, err;

	if (strlen(path) >= sizeof(copy))
		return -ENAMETOOLONG;
	strcpy(copy, path);
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (component = strtok_r(copy, "/", &save); component;
	     component = strtok_r(NULL, "/", &save)) {
		struct stat st;
		int next;

		/* O_PATH|O_NOFOLLOW opens a symlink itself rather than failing: fstat tells. */
		next = openat(fd, component, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			err = -errno;
			/* A cgroup that is gone has ended by itself: not a refusal. */
			if (err == -ENOENT)
				log_info("kill: %s is gone (no \"%s\"): nothing to kill", path, component);
			else
				log_err("kill: refusing %s: open component \"%s\": %m", path, component);
			close(fd);
			return err;
		}
		close(fd);
		fd = next;
		if (fstat(fd, &st)) {
			err = -errno;
			log_err("kill: refusing %s: fstat \"%s\": %m", path, component);
			close(fd);
			return err;
		}
		if (S_ISLNK(st.st_mode)) {
			log_err("kill: refusing %s: component \"%s\" is a symlink", path, component);
			close(fd);
			return -ELOOP;
		}
		if (!S_ISDIR(st.st_mode)) {
			log_err("kill: refusing %s: component \"%s\" is not a directory", path, component);
			close(fd);
			return -ENOTDIR;
		}
	}
	*out_fd = fd;
	return 0;
}

int kill_check_cgroup(const struct kill_config *config, const char *path, int *dir_fd)
{
	char self_buf[PATH_MAX];
	const char *self;
	struct kill_ops ops;
	bool allowed = false;
	int fd = -1, err;

	if (dir_fd)
		*dir_fd = -1;
	if (!config || !path || !path[0]) {
		log_err("kill: refusing an empty cgroup path");
		return -EINVAL;
	}
	if (strcmp(path, "/") == 0) {
		log_err("kill: refusing to kill /");
		return -EPERM;
	}
	if (!cgroupfs_path_is_canonical(path)) {
		log_err("kill: refusing %s: not a canonical absolute path", path);
		return -EINVAL;
	}
	if (!config->cgroup_mount || !cgroupfs_path_is_canonical(config->cgroup_mount)) {
		log_err("kill: refusing %s: no valid cgroup mount configured", path);
		return -EPERM;
	}
	if (strcmp(path, config->cgroup_mount) == 0) {
		log_err("kill: refusing %s: it is the cgroup root", path);
		return -EPERM;
	}
	if (!is_strictly_below(config->cgroup_mount, path)) {
		log_err("kill: refusing %s: not below the cgroup v2 mount %s", path, config->cgroup_mount);
		return -EPERM;
	}
	for (size_t i = 0; i < config->n_allowed_roots && config->allowed_roots; i++) {
		const char *root = config->allowed_roots[i];

		/* A root that is not canonical, or "/", could match anything: it allows nothing. */
		if (!root || !cgroupfs_path_is_canonical(root) || strcmp(root, "/") == 0)
			continue;
		if (is_strictly_below(root, path)) {
			allowed = true;
			break;
		}
	}
	if (!allowed) {
		log_err("kill: refusing %s: not below an allowed root (%zu configured: the kubepods "
			"tree or the workload roots)", path, config->n_allowed_roots);
		return -EPERM;
	}

	self = config->self_cgroup;
	if (!self) {
		err = pods_read_self_cgroup(config->root, config->cgroup_mount, self_buf, sizeof(self_buf));
		if (err) {
			log_err("kill: refusing %s: cannot read evictd's own cgroup: %s", path, strerror(-err));
			return -EPERM;
		}
		self = self_buf;
	}
	if (pods_path_is_ancestor(path, self)) {
		log_err("kill: refusing %s: it %s evictd's own cgroup %s", path,
			strcmp(path, self) == 0 ? "is" : "contains", self);
		return -EPERM;
	}

	err = open_without_symlinks(path, &fd);
	if (err)
		return err;
	resolve_ops(config, &ops);
	err = ops.check_cgroupfs(fd);
	if (err) {
		log_err("kill: refusing %s: not a cgroup v2 directory: %s", path, strerror(-err));
		close(fd);
		return err;
	}
	if (dir_fd)
		*dir_fd = fd;
	else
		close(fd);
	return 0;
}

/* ---- cgroup.events and cgroup.procs --------------------------------------------------- */

/* Wait for populated 0 until deadline. 1 emptied, 0 deadline passed, negative errno. */
static int wait_empty(const struct kill_ops *ops, int events_fd, int64_t deadline_ns)
{
	for (;;) {
		int64_t remaining;
		int populated, err;

		/* Read before polling: kernfs arms the next POLLPRI on read. */
		populated = cgroupfs_read_populated(events_fd);
		if (populated <= 0)
			return populated == 0 ? 1 : populated;
		remaining = deadline_ns - ops->now_ns();
		if (remaining <= 0)
			return 0;
		err = ops->wait_change(events_fd, (int)(remaining / 1000000 >= INT_MAX ?
							  INT_MAX : remaining / 1000000 + 1));
		if (err < 0)
			return err;
	}
}

int64_t kill_count_procs(int dir_fd)
{
	return cgroupfs_for_each_pid(dir_fd, NULL, NULL);
}

struct signal_ctx {
	const struct kill_ops *ops;
	int sig;
	pid_t self;
	size_t sent;
	struct kill_tracked *tracked;	/* NULL: keep no pidfd */
};

/* A pidfd of the process before it is signalled: then the one signalled is the one held. */
static void track(struct kill_tracked *tracked, pid_t pid)
{
	int fd;

	if (tracked->n == KILL_TRACK_MAX) {
		tracked->truncated = true;
		return;
	}
	if (!tracked->pidfds) {
		tracked->pidfds = calloc(KILL_TRACK_MAX, sizeof(*tracked->pidfds));
		tracked->pids = calloc(KILL_TRACK_MAX, sizeof(*tracked->pids));
		if (!tracked->pidfds || !tracked->pids) {
			free(tracked->pidfds);
			free(tracked->pids);
			tracked->pidfds = NULL;
			tracked->pids = NULL;
			tracked->truncated = true;
			return;
		}
	}
	fd = pidfd_open(pid, 0);
	if (fd < 0) {
		if (errno != ESRCH)
			tracked->truncated = true;	/* no pidfd_open (< 5.3), out of fds */
		return;
	}
	tracked->pidfds[tracked->n] = fd;
	tracked->pids[tracked->n++] = pid;
}

/* The pid was listed in cgroup.procs microseconds ago; for it to name another process now
 * it would have to exit and pid_max wrap meanwhile. The hard kill that follows needs no pid. */
static int signal_one(pid_t pid, void *opaque)
{
	struct signal_ctx *ctx = opaque;
	int err;

	if (pid == ctx->self)
		return 0;	/* kill_check_cgroup already keeps evictd out; belt and braces */
	if (ctx->tracked)
		track(ctx->tracked, pid);
	err = ctx->ops->signal_pid(pid, ctx->sig);
	if (!err)
		ctx->sent++;
	else if (err != -ESRCH)
		log_warn("kill: signal %d to pid %d: %s", ctx->sig, (int)pid, strerror(-err));
	return err;
}

/* Linux < 5.14: SIGKILL every process until the cgroup is empty or the deadline passes. */
static int kill_without_cgroup_kill(const struct kill_ops *ops, int dir_fd, int events_fd,
				    const char *path, int64_t deadline_ns)
{
	static bool warned;
	struct signal_ctx ctx = { .ops = ops, .sig = SIGKILL, .self = getpid() };

	if (!warned)
		log_warn("kill: %s/cgroup.kill is missing (Linux < 5.14); sending SIGKILL to each "
			 "process instead, which a forking process can outrun", path);
	warned = true;
	for (;;) {
		int64_t round_end = ops->now_ns() + FALLBACK_ROUND_MS * 1000000ll;
		int done;

		cgroupfs_for_each_pid(dir_fd, signal_one, &ctx);
		done = wait_empty(ops, events_fd, round_end < deadline_ns ? round_end : deadline_ns);
		if (done != 0 || ops->now_ns() >= deadline_ns)
			return done;
	}
}

/* ---- the steps of a kill, for the asynchronous executor ------------------------------------ */

/* The cgroup is still the one that was discovered: on cgroup v2 its id is the directory's
 * inode number, and a cgroup removed and made again at the same path gets a new one. */
static int check_identity(int dir_fd, const char *path, uint64_t expected_id)
{
	struct stat st;

	if (!expected_id)
		return 0;
	if (fstat(dir_fd, &st))
		return -errno;
	if ((uint64_t)st.st_ino != expected_id) {
		log_err("kill: refusing %s: it is not the cgroup that was ranked (id %llu, now %llu): "
			"it was removed and created again", path, (unsigned long long)expected_id,
			(unsigned long long)st.st_ino);
		return -ESTALE;
	}
	return 0;
}

int kill_open_target(const struct kill_config *config, const char *path, uint64_t expected_id,
		     struct kill_target *target)
{
	int err, populated;

	*target = (struct kill_target){ .dir_fd = -1, .events_fd = -1 };
	err = kill_check_cgroup(config, path, &target->dir_fd);
	if (err)
		return err;
	err = check_identity(target->dir_fd, path, expected_id);
	if (err)
		goto fail;
	/* The root cgroup has no cgroup.events: a second guard against killing everything. */
	target->events_fd = openat(target->dir_fd, "cgroup.events", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (target->events_fd < 0) {
		err = -errno;
		log_err("kill: refusing %s: open %s/cgroup.events: %m", path, path);
		err = err == -ENOENT ? -ENOTDIR : err;
		goto fail;
	}
	populated = cgroupfs_read_populated(target->events_fd);
	if (populated < 0) {
		err = populated;
		log_err("kill: %s/cgroup.events: no \"populated\" line: %s", path, strerror(-err));
		goto fail;
	}
	return populated;
fail:
	kill_close_target(target);
	return err;
}

void kill_close_target(struct kill_target *target)
{
	if (target->events_fd >= 0)
		close(target->events_fd);
	if (target->dir_fd >= 0)
		close(target->dir_fd);
	target->dir_fd = target->events_fd = -1;
	for (size_t i = 0; i < target->tracked.n; i++)
		close(target->tracked.pidfds[i]);
	free(target->tracked.pidfds);
	free(target->tracked.pids);
	target->tracked = (struct kill_tracked){ 0 };
}

int kill_target_populated(const struct kill_target *target)
{
	return cgroupfs_read_populated(target->events_fd);
}

int64_t kill_target_signal(const struct kill_config *config, const struct kill_target *target, int sig)
{
	struct kill_ops ops;
	struct signal_ctx ctx = { .ops = &ops, .sig = sig, .self = getpid() };
	int64_t seen;

	resolve_ops(config, &ops);
	seen = cgroupfs_for_each_pid(target->dir_fd, signal_one, &ctx);
	return seen < 0 ? seen : (int64_t)ctx.sent;
}

int64_t kill_target_signal_tracked(const struct kill_config *config, struct kill_target *target, int sig)
{
	struct kill_ops ops;
	struct signal_ctx ctx = { .ops = &ops, .sig = sig, .self = getpid(), .tracked = &target->tracked };
	int64_t seen;

	resolve_ops(config, &ops);
	seen = cgroupfs_for_each_pid(target->dir_fd, signal_one, &ctx);
	return seen < 0 ? seen : (int64_t)ctx.sent;
}

int kill_target_cgroup_kill(const struct kill_config *config, const struct kill_target *target)
{
	struct kill_ops ops;

	resolve_ops(config, &ops);
	return ops.write_file(target->dir_fd, "cgroup.kill", "1");
}

void kill_result_init(struct kill_result *result)
{
	memset(result, 0, sizeof(*result));
	result->memory_left_bytes = result->shmem_left_bytes = result->tasks_left = -1;
	result->sigterm_to_empty_ns = -1;
	result->kill_to_empty_ns = -1;
	result->total_ns = -1;
}

static int kill_cgroup_id(const struct kill_config *config, const char *path, uint64_t expected_id,
			  enum kill_mode mode, int64_t grace_ns, struct kill_result *result)
{
	struct kill_result local;
	struct kill_ops ops;
	int64_t start, kill_start, timeout_ns;
	int dir_fd, events_fd, populated, err;

	if (!result)
		result = &local;
	kill_result_init(result);
	if (!config)
		return -EINVAL;
	err = kill_check_cgroup(config, path, &dir_fd);
	if (err)
		return err;
	err = check_identity(dir_fd, path, expected_id);
	if (err) {
		close(dir_fd);
		return err;
	}
	resolve_ops(config, &ops);
	timeout_ns = config->kill_timeout_ns > 0 ? config->kill_timeout_ns : KILL_DEFAULT_TIMEOUT_NS;
	if (mode == KILL_SOFT && grace_ns <= 0)
		mode = KILL_HARD;
	result->grace_ns = mode == KILL_SOFT ? grace_ns : 0;

	/* The root cgroup has no cgroup.events: a second guard against killing everything. */
	events_fd = openat(dir_fd, "cgroup.events", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (events_fd < 0) {
		err = -errno;
		log_err("kill: refusing %s: open %s/cgroup.events: %m", path, path);
		close(dir_fd);
		return err == -ENOENT ? -ENOTDIR : err;
	}
	populated = cgroupfs_read_populated(events_fd);
	if (populated < 0) {
		err = populated;
		log_err("kill: %s/cgroup.events: no \"populated\" line: %s", path, strerror(-err));
		goto out;
	}

	if (config->dry_run) {
		int64_t procs = kill_count_procs(dir_fd);

		result->dry_run = true;
		result->was_empty = !populated;
		if (mode == KILL_SOFT)
			log_info("kill: dry-run: would send SIGTERM to the %" PRId64 " processes in %s, "
				 "wait up to %.0f ms for it to empty, then write 1 to %s/cgroup.kill",
				 procs, path, ms(grace_ns), path);
		else
			log_info("kill: dry-run: would write 1 to %s/cgroup.kill (%" PRId64
				 " processes) and wait up to %.0f ms for populated 0",
				 path, procs, ms(timeout_ns));
		err = 0;
		goto out;
	}
	if (!populated) {
		result->was_empty = true;
		log_info("kill: %s is already empty; nothing to kill", path);
		err = 0;
		goto out;
	}

	start = ops.now_ns();
	if (mode == KILL_SOFT) {
		struct signal_ctx ctx = { .ops = &ops, .sig = SIGTERM, .self = getpid() };
		int64_t seen = cgroupfs_for_each_pid(dir_fd, signal_one, &ctx);

		if (seen < 0) {
			err = (int)seen;
			log_err("kill: reading %s/cgroup.procs: %s", path, strerror(-err));
			goto out;
		}
		result->n_sigterm = ctx.sent;
		log_info("kill: sent SIGTERM to %zu processes in %s; grace %.0f ms", ctx.sent, path,
			 ms(grace_ns));
		err = wait_empty(&ops, events_fd, add_ns(start, grace_ns));
		if (err < 0) {
			log_err("kill: waiting on %s/cgroup.events: %s", path, strerror(-err));
			goto out;
		}
		if (err == 1) {
			result->exited_in_grace = true;
			result->sigterm_to_empty_ns = ops.now_ns() - start;
			result->total_ns = result->sigterm_to_empty_ns;
			log_info("kill: %s emptied %.1f ms after SIGTERM, within its grace", path,
				 ms(result->sigterm_to_empty_ns));
			err = 0;
			goto out;
		}
		log_info("kill: %s still populated at the end of its %.0f ms grace; cgroup.kill",
			 path, ms(grace_ns));
	}

	kill_start = ops.now_ns();
	err = ops.write_file(dir_fd, "cgroup.kill", "1");
	if (err == -ENOENT) {
		err = kill_without_cgroup_kill(&ops, dir_fd, events_fd, path, add_ns(kill_start, timeout_ns));
	} else if (err) {
		errno = -err;
		log_err("kill: write 1 to %s/cgroup.kill: %m", path);
		goto out;
	} else {
		result->used_cgroup_kill = true;
		kill_target_mrelease(config, dir_fd);
		err = wait_empty(&ops, events_fd, add_ns(kill_start, timeout_ns));
	}
	if (err < 0) {
		log_err("kill: waiting on %s/cgroup.events: %s", path, strerror(-err));
		goto out;
	}
	if (err == 0) {
		log_err("kill: %s still populated %.0f ms after the kill; giving up (tasks stuck in "
			"uninterruptible sleep?)", path, ms(ops.now_ns() - kill_start));
		err = -ETIMEDOUT;
		goto out;
	}
	result->kill_to_empty_ns = ops.now_ns() - kill_start;
	result->total_ns = ops.now_ns() - start;
	log_info("kill: %s empty %.1f ms after the kill (%.1f ms in all)", path,
		 ms(result->kill_to_empty_ns), ms(result->total_ns));
	err = 0;
out:
	close(events_fd);
	close(dir_fd);
	return err;
}

int kill_cgroup(const struct kill_config *config, const char *path, enum kill_mode mode,
		int64_t grace_ns, struct kill_result *result)
{
	return kill_cgroup_id(config, path, 0, mode, grace_ns, result);
}

int kill_pod_check(const struct kill_config *config, const struct pod *pod)
{
	if (!config || !pod) {
		log_err("kill: refusing: no pod given");
		return -EINVAL;
	}
	if (pod_never_evict(pod)) {
		log_err("kill: refusing pod %s/%s (%s): %s", pod->namespace_, pod->name,
			pod->cgroup_path, pod_never_evict_reason(pod));
		return -EPERM;
	}
	return 0;
}

void kill_pod_log(const struct kill_config *config, const struct pod *pod, enum kill_mode mode,
		  int64_t grace_ns)
{
	log_info("kill: %s pod %s/%s (uid %s, %s, priority %d) in %s%s",
		 mode == KILL_SOFT && grace_ns > 0 ? "soft-killing" : "killing", pod->namespace_,
		 pod->name, pod->uid, pod_qos_name(pod->qos), pod->priority, pod->cgroup_path,
		 config->dry_run ? " (dry-run)" : "");
}

int kill_pod_announce(const struct kill_config *config, const struct pod *pod, enum kill_mode mode,
		      int64_t grace_ns)
{
	int err = kill_pod_check(config, pod);

	if (!err)
		kill_pod_log(config, pod, mode, grace_ns);
	return err;
}

int kill_pod(const struct kill_config *config, const struct pod *pod, enum kill_mode mode,
	     int64_t grace_ns, struct kill_result *result)
{
	int err;

	if (result)
		kill_result_init(result);
	err = kill_pod_announce(config, pod, mode, grace_ns);
	if (err)
		return err;
	return kill_cgroup_id(config, pod->cgroup_path, pod->cgroup_id, mode, grace_ns, result);
}

int64_t kill_soft_grace_ns(const struct pod *pod, int64_t max_pod_grace_s)
{
	int64_t pod_grace_s;

	if (!pod || max_pod_grace_s <= 0)
		return 0;
	/* The API server defaults terminationGracePeriodSeconds to 30. */
	pod_grace_s = pod->termination_grace_period_s >= 0 ? pod->termination_grace_period_s : 30;
	if (pod_grace_s > max_pod_grace_s)
		pod_grace_s = max_pod_grace_s;
	if (pod_grace_s > INT64_MAX / 1000000000)
		return INT64_MAX;
	return pod_grace_s * 1000000000;
}
