// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * External programs, never waited for on the loop (doc/DESIGN.md, "The loop never waits"):
 * posix_spawn, a pidfd for the exit, the output pipe and a deadline timer as loop sources.
 * The old reclaim runner did a blocking waitpid() after SIGKILL: a child in uninterruptible
 * sleep hung the daemon. Here every wait is WNOHANG and a child SIGKILL does not end is
 * left, bounded by timeout + 2 * kill_grace.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/arith.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "sys/loop.h"
#include "sys/subprocess.h"

extern char **environ;

/* Without a pidfd (Linux < 5.3) the exit is polled this often. */
#define POLL_EXIT_NS (20ll * 1000000)
/* Reads of the output pipe per wakeup: a child that writes without pause cannot keep the
 * loop in one callback. */
#define MAX_READS 16
/* Abandoned or cancelled children not reaped yet; past this a zombie is left. */
#define MAX_REAP_LATER 32

enum phase {
	PHASE_RUNNING,
	PHASE_TERM_SENT,
	PHASE_KILL_SENT,
};

struct subprocess {
	struct loop *loop;
	const struct subprocess_ops *ops;
	subprocess_done_fn done;
	void *ctx;
	char what[160];			/* the command, for the log */
	pid_t pid;
	int pidfd;			/* -1 without pidfd_open */
	struct loop_source *exit_source;	/* the pidfd, or a poll timer */
	struct loop_source *output_source;	/* owns the pipe's read end */
	struct loop_source *timer;
	enum phase phase;
	int64_t start_ns;
	int64_t grace_ns;
	char tail[SUBPROCESS_OUTPUT_TAIL];
	size_t tail_len;
	struct subprocess_result result;
};

static struct {
	pid_t pid;
	int pidfd;
} reap_later[MAX_REAP_LATER];
static size_t n_reap_later;

static int default_kill_group(pid_t pgid, int pidfd, int sig)
{
	int err = 0;

	if (kill(-pgid, sig) && errno != ESRCH)
		err = -errno;
	/* The leader too, should it have left its group (setsid). */
	if (pidfd >= 0) {
		if (pidfd_send_signal(pidfd, sig, NULL, 0) && errno != ESRCH && !err)
			err = -errno;
	} else if (kill(pgid, sig) && errno != ESRCH && !err) {
		err = -errno;
	}
	return err;
}

static const struct subprocess_ops default_ops = { .kill_group = default_kill_group };

/* 1 reaped (status set), 0 still running, negative errno. Never blocks. */
static int reap(pid_t pid, int pidfd, int *status)
{
	siginfo_t info;

	memset(&info, 0, sizeof(info));
	if (pidfd >= 0 ? waitid(P_PIDFD, (id_t)pidfd, &info, WEXITED | WNOHANG) :
			 waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG))
		return -errno;
	if (info.si_pid == 0)
		return 0;
	*status = info.si_code == CLD_EXITED ? info.si_status : 128 + info.si_status;
	subprocess_track_forget(pid);
	return 1;
}

/* Zombies of children given up on earlier: reaped when they have exited at last. */
static void reap_leftovers(void)
{
	size_t kept = 0;

	for (size_t i = 0; i < n_reap_later; i++) {
		int status;

		if (reap(reap_later[i].pid, reap_later[i].pidfd, &status) == 0) {
			reap_later[kept++] = reap_later[i];
			continue;
		}
		if (reap_later[i].pidfd >= 0)
			close(reap_later[i].pidfd);
	}
	n_reap_later = kept;
}

static void add_reap_later(pid_t pid, int pidfd)
{
	if (n_reap_later == MAX_REAP_LATER) {
		/* The oldest stays a zombie: better than holding fds without bound. */
		if (reap_later[0].pidfd >= 0)
			close(reap_later[0].pidfd);
		memmove(&reap_later[0], &reap_later[1], sizeof(reap_later[0]) * (MAX_REAP_LATER - 1));
		n_reap_later--;
	}
	reap_later[n_reap_later].pid = pid;
	reap_later[n_reap_later].pidfd = pidfd;
	n_reap_later++;
}

static void keep_tail(struct subprocess *p, const char *data, size_t n)
{
	if (n >= sizeof(p->tail)) {
		memcpy(p->tail, data + n - sizeof(p->tail), sizeof(p->tail));
		p->tail_len = sizeof(p->tail);
		return;
	}
	if (p->tail_len + n > sizeof(p->tail)) {
		size_t drop = p->tail_len + n - sizeof(p->tail);

		memmove(p->tail, p->tail + drop, p->tail_len - drop);
		p->tail_len -= drop;
	}
	memcpy(p->tail + p->tail_len, data, n);
	p->tail_len += n;
}

static void read_output(struct subprocess *p)
{
	char chunk[4096];

	for (int i = 0; p->output_source && i < MAX_READS; i++) {
		ssize_t n = read(loop_source_fd(p->output_source), chunk, sizeof(chunk));

		if (n > 0) {
			keep_tail(p, chunk, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		/* EOF: every writer (the child and anything it left behind) is gone. */
		loop_remove(p->loop, p->output_source);
		p->output_source = NULL;
	}
}

static void release(struct subprocess *p, bool keep_pidfd)
{
	loop_remove(p->loop, p->exit_source);
	loop_remove(p->loop, p->output_source);
	loop_remove(p->loop, p->timer);
	if (p->pidfd >= 0 && !keep_pidfd)
		close(p->pidfd);
	free(p);
}

/* Report and free. The child has been reaped, or is abandoned. */
static void finish(struct subprocess *p)
{
	struct subprocess_result *r = &p->result;

	read_output(p);		/* what the child wrote just before it exited */
	r->elapsed_ns = clock_monotonic_ns() - p->start_ns;
	memcpy(r->output, p->tail, p->tail_len);
	r->output[p->tail_len] = '\0';
	r->output_len = p->tail_len;
	if (r->abandoned)
		add_reap_later(p->pid, p->pidfd);
	if (p->done)
		p->done(p->ctx, r);
	release(p, r->abandoned);
	reap_leftovers();
}

/* true when the child was reaped and p is gone. */
static bool try_finish(struct subprocess *p)
{
	int ret = reap(p->pid, p->pidfd, &p->result.status);

	if (ret == 0)
		return false;
	if (ret < 0) {
		/* ECHILD: someone else reaped it (a waitpid(-1) elsewhere); its status is lost. */
		errno = -ret;
		log_err("subprocess: waitid for \"%s\" (pid %d): %m", p->what, (int)p->pid);
		p->result.status = -1;
	}
	finish(p);
	return true;
}

static void on_exit_fd(void *ctx, int fd, uint32_t revents)
{
	try_finish(ctx);
}

static void on_exit_poll(void *ctx)
{
	try_finish(ctx);
}

static void on_output(void *ctx, int fd, uint32_t revents)
{
	read_output(ctx);
}

static void send_group(struct subprocess *p, int sig)
{
	int err = p->ops->kill_group(p->pid, p->pidfd, sig);

	if (err) {
		errno = -err;
		log_err("subprocess: signal %d to the group of \"%s\" (pid %d): %m", sig, p->what,
			(int)p->pid);
	}
}

static void on_deadline(void *ctx)
{
	struct subprocess *p = ctx;
	int64_t now = clock_monotonic_ns();

	/* A pending exit event may be behind this one in the batch. */
	if (try_finish(p))
		return;
	switch (p->phase) {
	case PHASE_RUNNING:
		p->result.timed_out = true;
		log_warn("subprocess: \"%s\" (pid %d) still running after %.1f s; SIGTERM to its "
			 "process group", p->what, (int)p->pid, (double)(now - p->start_ns) / 1e9);
		send_group(p, SIGTERM);
		p->phase = PHASE_TERM_SENT;
		loop_timer_set(p->timer, sat_add_i64(now, p->grace_ns));
		break;
	case PHASE_TERM_SENT:
		log_warn("subprocess: \"%s\" (pid %d) still running %.1f s after SIGTERM; SIGKILL "
			 "to its process group", p->what, (int)p->pid, (double)p->grace_ns / 1e9);
		send_group(p, SIGKILL);
		p->phase = PHASE_KILL_SENT;
		loop_timer_set(p->timer, sat_add_i64(now, p->grace_ns));
		break;
	case PHASE_KILL_SENT:
		/* Uninterruptible sleep (a hung NFS or FUSE mount, a stuck device): nothing ends
		 * it, and waiting would stop the loop. */
		log_err("subprocess: \"%s\" (pid %d) has not exited %.1f s after SIGKILL "
			"(uninterruptible sleep?); leaving it, not waiting for it", p->what,
			(int)p->pid, (double)p->grace_ns / 1e9);
		p->result.abandoned = true;
		p->result.status = -1;
		finish(p);
		break;
	}
}

int64_t subprocess_bound_ns(const struct subprocess_options *options)
{
	int64_t grace = options->kill_grace_ns > 0 ? options->kill_grace_ns :
						     SUBPROCESS_DEFAULT_KILL_GRACE_NS;

	return sat_add_i64(options->timeout_ns, sat_mul_i64(grace, 2));
}

/* Keep the pipe off fds 0-2, which the file actions below overwrite. */
static int move_above_stdio(int fd)
{
	int moved;

	if (fd > STDERR_FILENO)
		return fd;
	moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
	close(fd);
	return moved;
}

/*
 * In the child, between fork and exec: async-signal-safe calls only (the daemon has threads).
 * Its own group, so a timeout (and the next evictd, sys/subprocess_track.c) kills the whole
 * pipeline; PR_SET_PDEATHSIG(SIGKILL) so it dies with evictd, and getppid() checked after it
 * because evictd may have died before the prctl (then nothing would ever send it). Empty mask
 * and default dispositions: the daemon's blocked SIGTERM/SIGHUP and ignored SIGPIPE must not
 * reach it. An exec failure goes back to the parent through err_fd (close-on-exec).
 */
static __attribute__((noreturn)) void child_exec(const struct subprocess_options *o, pid_t parent,
						 int out_fd, int err_fd)
{
	const char *shell_argv[] = { "sh", "-c", o->shell_command, NULL };
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t empty;
	int err, null_fd;

	setpgid(0, 0);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(127);
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL);	/* EINVAL for SIGKILL, SIGSTOP, glibc's own */
	sigemptyset(&empty);
	sigprocmask(SIG_SETMASK, &empty, NULL);
	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
	    dup2(out_fd, STDERR_FILENO) < 0) {
		err = errno;
	} else if (o->shell_command) {
		execve("/bin/sh", (char *const *)shell_argv, o->envp ? (char *const *)o->envp : environ);
		err = errno;
	} else {
		execvp(o->argv[0], (char *const *)o->argv);
		err = errno;
	}
	if (write(err_fd, &err, sizeof(err)) < 0)
		_exit(126);
	_exit(127);
}

static int spawn(const struct subprocess_options *o, const char *what, int out_fd, pid_t *pid)
{
	pid_t parent = getpid(), child;
	int err_pipe[2], err = 0;
	ssize_t n;

	if (pipe2(err_pipe, O_CLOEXEC))
		return -errno;
	child = fork();
	if (child == 0)
		child_exec(o, parent, out_fd, err_pipe[1]);
	if (child < 0) {
		err = errno;
	} else {
		/* The same in the parent: its group exists before anyone signals it. */
		setpgid(child, child);
		close(err_pipe[1]);
		err_pipe[1] = -1;
		/* EOF at the exec (close-on-exec), an errno when it failed: as posix_spawn's. */
		do
			n = read(err_pipe[0], &err, sizeof(err));
		while (n < 0 && errno == EINTR);
		if (n != sizeof(err))
			err = 0;
		if (err)
			waitpid(child, NULL, 0);	/* it is at _exit already */
	}
	close(err_pipe[0]);
	if (err_pipe[1] >= 0)
		close(err_pipe[1]);
	if (err) {
		errno = err;
		log_err("subprocess: spawning \"%s\": %m", what);
		return -err;
	}
	*pid = child;
	subprocess_track_add(child);
	return 0;
}

int subprocess_start(struct loop *loop, const struct subprocess_options *o,
		     struct subprocess **out)
{
	struct subprocess *p;
	int pipe_fds[2], err;

	if (out)
		*out = NULL;
	if (!loop || !o || !o->done || o->timeout_ns <= 0 ||
	    !o->shell_command == !(o->argv && o->argv[0]))
		return -EINVAL;
	reap_leftovers();
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->loop = loop;
	p->ops = o->ops && o->ops->kill_group ? o->ops : &default_ops;
	p->done = o->done;
	p->ctx = o->ctx;
	p->pidfd = -1;
	p->grace_ns = o->kill_grace_ns > 0 ? o->kill_grace_ns : SUBPROCESS_DEFAULT_KILL_GRACE_NS;
	snprintf(p->what, sizeof(p->what), "%s", o->shell_command ? o->shell_command : o->argv[0]);

	if (pipe2(pipe_fds, O_CLOEXEC)) {
		err = -errno;
		log_err("subprocess: pipe for \"%s\": %m", p->what);
		free(p);
		return err;
	}
	pipe_fds[0] = move_above_stdio(pipe_fds[0]);
	pipe_fds[1] = move_above_stdio(pipe_fds[1]);
	if (pipe_fds[0] < 0 || pipe_fds[1] < 0) {
		err = -EMFILE;
		goto fail_pipe;
	}
	p->start_ns = clock_monotonic_ns();
	err = spawn(o, p->what, pipe_fds[1], &p->pid);
	close(pipe_fds[1]);
	pipe_fds[1] = -1;
	if (err)
		goto fail_pipe;
	p->result.pid = p->pid;
	fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);

	p->pidfd = pidfd_open(p->pid, 0);
	if (p->pidfd < 0 && errno != ENOSYS)
		log_warn("subprocess: pidfd_open for \"%s\" (pid %d): %m; polling for its exit",
			 p->what, (int)p->pid);
	p->output_source = loop_add_fd(loop, pipe_fds[0], EPOLLIN, true, on_output, p);
	if (!p->output_source) {
		close(pipe_fds[0]);
		goto fail_spawned;
	}
	if (p->pidfd >= 0)
		p->exit_source = loop_add_fd(loop, p->pidfd, EPOLLIN, false, on_exit_fd, p);
	else
		p->exit_source = loop_add_periodic(loop, POLL_EXIT_NS, on_exit_poll, p);
	p->timer = loop_add_timer(loop, sat_add_i64(p->start_ns, o->timeout_ns), on_deadline, p);
	if (!p->exit_source || !p->timer)
		goto fail_spawned;
	if (out)
		*out = p;
	return 0;

fail_pipe:
	if (pipe_fds[0] >= 0)
		close(pipe_fds[0]);
	if (pipe_fds[1] >= 0)
		close(pipe_fds[1]);
	free(p);
	return err;
fail_spawned:
	/* Running, but not watched: it must not outlive this call unreaped-for. */
	err = errno ? -errno : -ENOMEM;
	p->done = NULL;
	subprocess_cancel(p);
	return err;
}

void subprocess_cancel(struct subprocess *p)
{
	int status;

	if (!p)
		return;
	p->ops->kill_group(p->pid, p->pidfd, SIGKILL);
	if (reap(p->pid, p->pidfd, &status) == 0) {
		/* SIGKILL takes a moment: reaped by a later call, never waited for here. */
		add_reap_later(p->pid, p->pidfd);
		release(p, true);
		return;
	}
	release(p, false);
}

pid_t subprocess_pid(const struct subprocess *p)
{
	return p ? p->pid : -1;
}

struct sync_state {
	bool done;
	struct subprocess_result *result;
};

static void sync_done(void *ctx, const struct subprocess_result *result)
{
	struct sync_state *state = ctx;

	*state->result = *result;
	state->done = true;
}

int subprocess_run_sync(const struct subprocess_options *options, struct subprocess_result *result)
{
	struct subprocess_options o;
	struct sync_state state = { .result = result };
	struct subprocess *p;
	struct loop *loop;
	int64_t hard_deadline;
	int err;

	if (!options || !result)
		return -EINVAL;
	memset(result, 0, sizeof(*result));
	o = *options;
	o.done = sync_done;
	o.ctx = &state;
	err = loop_new(&loop);
	if (err)
		return err;
	err = subprocess_start(loop, &o, &p);
	if (err) {
		loop_free(loop);
		return err;
	}
	/* The timers end it by construction; this is a second bound that cannot fail. */
	hard_deadline = sat_add_i64(clock_monotonic_ns(),
				    sat_add_i64(subprocess_bound_ns(&o), 1000000000ll));
	while (!state.done) {
		int64_t remaining = hard_deadline - clock_monotonic_ns();

		if (remaining <= 0) {
			log_err("subprocess: \"%s\": no report by its deadline; giving up on it",
				p->what);
			result->pid = p->pid;
			result->status = -1;
			result->timed_out = result->abandoned = true;
			subprocess_cancel(p);
			break;
		}
		remaining = remaining / 1000000 + 1;
		loop_run_once(loop, remaining > INT_MAX ? INT_MAX : (int)remaining, NULL, NULL);
	}
	loop_free(loop);
	return 0;
}
