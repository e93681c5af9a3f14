// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Node-level reclaim before evicting (DESIGN.md §4). The kubelet runs its container and image
 * garbage collectors and then re-observes; evictd runs commands (crictl by default) and
 * re-reads the signal after each, so the log says what every step freed.
 */
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sys/log.h"
#include "act/reclaim.h"

/* Output kept from a command for the log: its last bytes say why it failed. */
#define OUTPUT_TAIL 1024

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bool signal_is_inodes(enum ev_signal signal)
{
	return signal == EV_SIGNAL_NODEFS_INODES_FREE || signal == EV_SIGNAL_IMAGEFS_INODES_FREE ||
	       signal == EV_SIGNAL_CONTAINERFS_INODES_FREE;
}

/* A signed amount in the signal's unit, for the log. */
static void format_amount(enum ev_signal signal, int64_t value, char *buf, size_t len)
{
	if (signal_is_inodes(signal))
		snprintf(buf, len, "%" PRId64 " inodes", value);
	else
		snprintf(buf, len, "%.1f MiB", (double)value / (1024.0 * 1024.0));
}

void reclaim_init(struct reclaim *reclaim, const struct reclaim_config *config)
{
	if (!reclaim)
		return;
	memset(reclaim, 0, sizeof(*reclaim));
	if (config)
		reclaim->config = *config;
}

bool reclaim_in_path(const char *name, const char *path_env)
{
	char candidate[PATH_MAX];
	const char *dir;

	if (!name || !name[0])
		return false;
	if (!path_env)
		path_env = getenv("PATH");
	if (!path_env)
		return false;
	for (dir = path_env; ; ) {
		const char *end = strchr(dir, ':');
		size_t len = end ? (size_t)(end - dir) : strlen(dir);

		/* An empty PATH entry means the current directory: not for a root daemon. */
		if (len && (size_t)snprintf(candidate, sizeof(candidate), "%.*s/%s", (int)len, dir,
					    name) < sizeof(candidate) &&
		    access(candidate, X_OK) == 0)
			return true;
		if (!end)
			return false;
		dir = end + 1;
	}
}

static void keep_tail(char *tail, size_t *tail_len, const char *data, size_t n)
{
	if (n >= OUTPUT_TAIL) {
		memcpy(tail, data + n - OUTPUT_TAIL, OUTPUT_TAIL);
		*tail_len = OUTPUT_TAIL;
		return;
	}
	if (*tail_len + n > OUTPUT_TAIL) {
		size_t drop = *tail_len + n - OUTPUT_TAIL;

		memmove(tail, tail + drop, *tail_len - drop);
		*tail_len -= drop;
	}
	memcpy(tail + *tail_len, data, n);
	*tail_len += n;
}

int reclaim_run_command(const char *command, int64_t timeout_ns, int *status, char *output,
			size_t output_len)
{
	char tail[OUTPUT_TAIL], chunk[512];
	size_t tail_len = 0;
	int64_t deadline;
	int pipe_fds[2], pidfd, wstatus = 0, err = 0;
	bool exited = false, pipe_open = true;
	pid_t pid;

	if (!command || !status)
		return -EINVAL;
	if (timeout_ns <= 0)
		timeout_ns = RECLAIM_DEFAULT_TIMEOUT_NS;
	if (pipe2(pipe_fds, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(pipe_fds[0]);
		close(pipe_fds[1]);
		return err;
	}
	if (pid == 0) {
		int null_fd = open("/dev/null", O_RDONLY);

		/* Own process group: a timeout kills the pipeline, not just the shell. */
		setpgid(0, 0);
		if (null_fd >= 0)
			dup2(null_fd, STDIN_FILENO);
		dup2(pipe_fds[1], STDOUT_FILENO);
		dup2(pipe_fds[1], STDERR_FILENO);
		execl("/bin/sh", "sh", "-c", command, (char *)NULL);
		_exit(127);
	}
	setpgid(pid, pid);	/* also from here: no race with the child's own call */
	close(pipe_fds[1]);
	pidfd = pidfd_open(pid, 0);
	deadline = now_ns() + timeout_ns;

	while (!exited) {
		struct pollfd pfds[2] = {
			{ .fd = pipe_open ? pipe_fds[0] : -1, .events = POLLIN },
			{ .fd = pidfd, .events = POLLIN },
		};
		int64_t remaining = deadline - now_ns();
		int n;

		if (remaining <= 0) {
			err = -ETIMEDOUT;
			break;
		}
		/* Without a pidfd (Linux < 5.3) poll the pipe in short steps and try waitpid. */
		n = poll(pfds, 2, pidfd >= 0 ? (int)(remaining / 1000000 + 1) : 50);
		if (n < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		if (pipe_open && (pfds[0].revents & (POLLIN | POLLHUP))) {
			ssize_t got = read(pipe_fds[0], chunk, sizeof(chunk));

			if (got > 0)
				keep_tail(tail, &tail_len, chunk, (size_t)got);
			else if (got == 0)
				pipe_open = false;
		}
		if (pidfd < 0 || (pfds[1].revents & POLLIN)) {
			if (waitpid(pid, &wstatus, WNOHANG) == pid)
				exited = true;
		}
	}
	if (!exited) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		waitpid(pid, &wstatus, 0);
	}
	/* Whatever the command left in the pipe after it exited. */
	while (pipe_open) {
		struct pollfd pfd = { .fd = pipe_fds[0], .events = POLLIN };
		ssize_t got;

		if (poll(&pfd, 1, 0) <= 0)
			break;
		got = read(pipe_fds[0], chunk, sizeof(chunk));
		if (got <= 0)
			break;
		keep_tail(tail, &tail_len, chunk, (size_t)got);
	}
	close(pipe_fds[0]);
	if (pidfd >= 0)
		close(pidfd);

	*status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) :
		  WIFSIGNALED(wstatus) ? 128 + WTERMSIG(wstatus) : -1;
	if (output && output_len) {
		size_t len = tail_len < output_len - 1 ? tail_len : output_len - 1;

		memcpy(output, tail + tail_len - len, len);
		output[len] = '\0';
	}
	return err;
}

enum disk_step {
	STEP_CONTAINERS = 1u << 0,
	STEP_IMAGES = 1u << 1,
};

static unsigned int default_steps(enum fs_layout layout, enum ev_signal signal)
{
	bool nodefs = signal == EV_SIGNAL_NODEFS_AVAILABLE || signal == EV_SIGNAL_NODEFS_INODES_FREE;
	bool imagefs = signal == EV_SIGNAL_IMAGEFS_AVAILABLE || signal == EV_SIGNAL_IMAGEFS_INODES_FREE;

	switch (layout) {
	case FS_LAYOUT_SPLIT_DISK:
		/* containerfs is imagefs here: it holds the images. */
		return nodefs ? STEP_CONTAINERS : STEP_IMAGES;
	case FS_LAYOUT_SPLIT_IMAGE:
		return imagefs ? STEP_IMAGES : STEP_CONTAINERS;
	case FS_LAYOUT_SINGLE:
		break;
	}
	return STEP_CONTAINERS | STEP_IMAGES;
}

static bool signal_is_disk(enum ev_signal signal)
{
	return signal_condition(signal) == EV_CONDITION_DISK_PRESSURE;
}

int reclaim_disk(struct reclaim *reclaim, enum ev_signal signal, int64_t target_available,
		 reclaim_read_fn read_signal, void *ctx, struct reclaim_report *report)
{
	const struct reclaim_config *config;
	const char *commands[RECLAIM_MAX_STEPS];
	struct reclaim_report local;
	char before_text[48], after_text[48], freed_text[48];
	int64_t available, after;
	size_t n_commands = 0;
	int err;

	if (!report)
		report = &local;
	memset(report, 0, sizeof(*report));
	if (!reclaim || !read_signal)
		return -EINVAL;
	config = &reclaim->config;
	if (!signal_is_disk(signal)) {
		log_err("reclaim: %s is not a disk signal", signal_name(signal));
		return -EINVAL;
	}

	if (config->disk_commands) {
		for (size_t i = 0; i < config->n_disk_commands && n_commands < RECLAIM_MAX_STEPS; i++) {
			if (config->disk_commands[i] && config->disk_commands[i][0])
				commands[n_commands++] = config->disk_commands[i];
		}
	} else {
		unsigned int steps = default_steps(config->fs_layout, signal);

		if (!reclaim->crictl_checked) {
			reclaim->crictl_found = reclaim_in_path("crictl", NULL);
			reclaim->crictl_checked = true;
			if (!reclaim->crictl_found)
				log_warn("reclaim: crictl is not in PATH and no disk reclaim commands "
					 "are configured; DiskPressure goes straight to eviction");
		}
		if (reclaim->crictl_found && (steps & STEP_CONTAINERS))
			commands[n_commands++] = RECLAIM_CRICTL_RM_EXITED;
		if (reclaim->crictl_found && (steps & STEP_IMAGES))
			commands[n_commands++] = RECLAIM_CRICTL_PRUNE_IMAGES;
	}

	err = read_signal(ctx, signal, &available);
	if (err) {
		log_err("reclaim: reading %s: %s", signal_name(signal), strerror(-err));
		return err;
	}
	report->available_before = report->available_after = available;
	if (!n_commands)
		return available >= target_available ? 1 : 0;

	for (size_t i = 0; i < n_commands; i++) {
		struct reclaim_step *step = &report->steps[report->n_steps++];
		char output[256] = "";
		int64_t start = now_ns();

		if (snprintf(step->what, sizeof(step->what), "%s", commands[i]) >= (int)sizeof(step->what))
			step->what[sizeof(step->what) - 1] = '\0';
		if (config->dry_run) {
			log_info("reclaim: dry-run: %s: would run step %zu/%zu: %s", signal_name(signal),
				 i + 1, n_commands, commands[i]);
			step->status = -ECANCELED;
			continue;
		}
		err = reclaim_run_command(commands[i], config->command_timeout_ns, &step->status,
					  output, sizeof(output));
		step->elapsed_ns = now_ns() - start;
		step->timed_out = err == -ETIMEDOUT;
		if (err && err != -ETIMEDOUT) {
			step->status = err;
			log_err("reclaim: step %zu/%zu: starting \"%s\": %s", i + 1, n_commands,
				commands[i], strerror(-err));
		}
		/* Re-read even after a failure: a step can free something and still fail. */
		err = read_signal(ctx, signal, &after);
		if (err) {
			log_err("reclaim: re-reading %s after \"%s\": %s", signal_name(signal),
				commands[i], strerror(-err));
			return err;
		}
		step->freed = after - available;
		format_amount(signal, available, before_text, sizeof(before_text));
		format_amount(signal, after, after_text, sizeof(after_text));
		format_amount(signal, step->freed, freed_text, sizeof(freed_text));
		for (char *p = output; *p; p++)
			if (*p == '\n')
				*p = ' ';
		if (step->timed_out)
			log_err("reclaim: step %zu/%zu \"%s\" timed out after %.1f s and was killed; "
				"freed %s (%s %s -> %s)%s%s", i + 1, n_commands, commands[i],
				(double)step->elapsed_ns / 1e9, freed_text, signal_name(signal),
				before_text, after_text, output[0] ? "; output: " : "", output);
		else
			log_msg(step->status == 0 ? LOGLEVEL_INFO : LOGLEVEL_WARN,
				"reclaim: step %zu/%zu \"%s\" exited %d in %.1f s; freed %s (%s %s -> "
				"%s)%s%s", i + 1, n_commands, commands[i], step->status,
				(double)step->elapsed_ns / 1e9, freed_text, signal_name(signal),
				before_text, after_text,
				step->status && output[0] ? "; output: " : "",
				step->status ? output : "");
		available = after;
	}
	report->available_after = available;
	return available >= target_available ? 1 : 0;
}

static int read_memory_current(int dir_fd, int64_t *value)
{
	char buf[64];
	ssize_t n;
	int fd;

	fd = openat(dir_fd, "memory.current", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EINVAL;
	buf[n] = '\0';
	*value = strtoll(buf, NULL, 10);
	return 0;
}

static int write_reclaim(int dir_fd, int64_t bytes)
{
	char text[32];
	ssize_t n;
	int fd, err = 0;

	snprintf(text, sizeof(text), "%" PRId64, bytes);
	fd = openat(dir_fd, "memory.reclaim", O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	if (n < 0)
		err = -errno;
	close(fd);
	return err;
}

int reclaim_memory(struct reclaim *reclaim, struct pod *const *candidates, size_t n_candidates,
		   enum ev_signal signal, int64_t target_available, reclaim_read_fn read_signal,
		   void *ctx, struct reclaim_report *report)
{
	const struct reclaim_config *config;
	struct reclaim_report local;
	size_t max_pods, tried = 0;
	int64_t available;
	int err;

	if (!report)
		report = &local;
	memset(report, 0, sizeof(*report));
	if (!reclaim || !read_signal || (n_candidates && !candidates))
		return -EINVAL;
	config = &reclaim->config;
	if (!config->memory_reclaim)
		return 0;
	if (reclaim->memory_reclaim_unsupported)
		return -EOPNOTSUPP;
	if (!config->kill) {
		log_err("reclaim: memory.reclaim needs the kill path rules; not configured");
		return -EINVAL;
	}
	max_pods = config->memory_reclaim_max_pods ? config->memory_reclaim_max_pods :
						     RECLAIM_DEFAULT_MEMORY_PODS;
	err = read_signal(ctx, signal, &available);
	if (err) {
		log_err("reclaim: reading %s: %s", signal_name(signal), strerror(-err));
		return err;
	}
	report->available_before = report->available_after = available;

	for (size_t i = 0; i < n_candidates && tried < max_pods && report->n_steps < RECLAIM_MAX_STEPS; i++) {
		const struct pod *pod = candidates[i];
		struct reclaim_step *step;
		int64_t need = target_available - available, current = 0, current_after = 0, after;
		int64_t start;
		int dir_fd;

		if (need <= 0)
			break;
		if (!pod || pod_never_evict(pod))
			continue;
		/* Same path rules as a kill: memory.reclaim is a write into a cgroup. */
		if (kill_check_cgroup(config->kill, pod->cgroup_path, &dir_fd))
			continue;
		tried++;
		step = &report->steps[report->n_steps++];
		/* A label for reports: a cut-off path is fine here. */
		if (snprintf(step->what, sizeof(step->what), "%s/memory.reclaim", pod->cgroup_path) >=
		    (int)sizeof(step->what))
			step->what[sizeof(step->what) - 1] = '\0';
		if (read_memory_current(dir_fd, &current) == 0 && current < need)
			need = current;
		if (need <= 0) {
			close(dir_fd);
			continue;
		}
		if (config->dry_run) {
			log_info("reclaim: dry-run: would write %" PRId64 " to %s/memory.reclaim",
				 need, pod->cgroup_path);
			step->status = -ECANCELED;
			close(dir_fd);
			continue;
		}
		start = now_ns();
		err = write_reclaim(dir_fd, need);
		step->elapsed_ns = now_ns() - start;
		step->status = err;
		if (err == -ENOENT || err == -EINVAL || err == -EOPNOTSUPP) {
			close(dir_fd);
			reclaim->memory_reclaim_unsupported = true;
			errno = -err;
			log_warn("reclaim: write %s/memory.reclaim: %m; memory.reclaim is not supported "
				 "here (needs cgroup v2 with the memory controller, Linux >= 5.19); not "
				 "trying it again", pod->cgroup_path);
			return -EOPNOTSUPP;
		}
		/* EAGAIN: the kernel reclaimed less than asked; what it got still counts. */
		if (err && err != -EAGAIN) {
			errno = -err;
			log_warn("reclaim: write %s/memory.reclaim: %m", pod->cgroup_path);
		}
		if (read_memory_current(dir_fd, &current_after) == 0)
			step->cgroup_freed = current - current_after;
		close(dir_fd);
		err = read_signal(ctx, signal, &after);
		if (err) {
			log_err("reclaim: re-reading %s: %s", signal_name(signal), strerror(-err));
			return err;
		}
		step->freed = after - available;
		log_info("reclaim: memory.reclaim %.1f MiB from %s/%s: the cgroup gave back %.1f MiB "
			 "in %.1f ms; %s %+.1f MiB", (double)need / 1048576.0, pod->namespace_,
			 pod->name, (double)step->cgroup_freed / 1048576.0,
			 (double)step->elapsed_ns / 1e6, signal_name(signal),
			 (double)step->freed / 1048576.0);
		available = after;
	}
	report->available_after = available;
	return available >= target_available ? 1 : 0;
}
