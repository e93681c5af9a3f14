/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one way evictd runs an external program (reclaim commands, hooks). fork and exec with an
 * empty signal mask and every signal at its default (main() blocks SIGTERM/SIGINT/SIGHUP and
 * ignores SIGPIPE; children must not inherit that), in its own process group, stdin from
 * /dev/null, stdout and stderr into a pipe whose last bytes are kept for the log.
 * Children die with evictd: PR_SET_PDEATHSIG(SIGKILL) for the leader (sent when the thread
 * that started it exits: the loop's, which lives as long as the process), and the group,
 * recorded in the state dir, is killed by the next start (subprocess_track).
 *
 * Its exit is a pidfd in the loop; at the deadline the group gets SIGTERM, kill_grace later
 * SIGKILL, and kill_grace after that a child that still has not exited (uninterruptible
 * sleep) is reported abandoned and never waited for: the loop never waits (doc/DESIGN.md,
 * "The loop never waits"). Reaping is waitid(WNOHANG) only. Loop thread only.
 */
#ifndef EVICTD_SYS_SUBPROCESS_H
#define EVICTD_SYS_SUBPROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct loop;
struct subprocess;

#define SUBPROCESS_OUTPUT_TAIL 1024
#define SUBPROCESS_DEFAULT_KILL_GRACE_NS (2ll * 1000000000)

struct subprocess_result {
	/* Exit code, or 128 + N when killed by signal N; -1 when abandoned (never reaped). */
	int status;
	bool timed_out;		/* the deadline passed: SIGTERM (and maybe SIGKILL) was sent */
	bool abandoned;		/* still alive kill_grace after SIGKILL: left, not waited for */
	pid_t pid;
	int64_t elapsed_ns;	/* start to exit (or to abandonment) */
	/* The last bytes of stdout+stderr, NUL-terminated. */
	char output[SUBPROCESS_OUTPUT_TAIL + 1];
	size_t output_len;
};

typedef void (*subprocess_done_fn)(void *ctx, const struct subprocess_result *result);

/* Tests replace these to simulate a child that SIGKILL does not end. */
struct subprocess_ops {
	/* Send sig to the process group pgid and to the process behind pidfd (-1: none).
	 * 0 or negative errno. */
	int (*kill_group)(pid_t pgid, int pidfd, int sig);
};

struct subprocess_options {
	/* Exactly one: argv (argv[0] looked up in PATH unless it holds a '/'), or a command
	 * for /bin/sh -c. */
	const char *const *argv;
	const char *shell_command;
	/* shell_command only: the child's whole environment ("NAME=value", NULL-terminated);
	 * NULL = evictd's own. Built before the fork: nothing is allocated in the child. */
	const char *const *envp;
	int64_t timeout_ns;		/* > 0, required: nothing evictd runs is unbounded */
	int64_t kill_grace_ns;		/* <= 0: SUBPROCESS_DEFAULT_KILL_GRACE_NS */
	subprocess_done_fn done;	/* called once, from the loop, unless cancelled */
	void *ctx;
	const struct subprocess_ops *ops;	/* NULL: the real kill(2)/pidfd_send_signal */
};

/*
 * Spawn and register in loop. On success *out (may be NULL) is valid until done has been
 * called or subprocess_cancel; the subprocess frees itself after calling done. Returns 0,
 * or negative errno (logged with the command) when it could not be started: then done is
 * never called.
 */
int subprocess_start(struct loop *loop, const struct subprocess_options *options,
		     struct subprocess **out);

/* SIGKILL the group, stop reporting (done is not called) and free now; a child that has
 * not exited yet is reaped later (WNOHANG) by a following subprocess call. NULL is fine. */
void subprocess_cancel(struct subprocess *process);

pid_t subprocess_pid(const struct subprocess *process);

/* The total time a subprocess can take before done: timeout + kill grace (SIGTERM ->
 * SIGKILL) + kill grace (SIGKILL -> abandoned). */
int64_t subprocess_bound_ns(const struct subprocess_options *options);

/*
 * For --once and tests: run on a private loop until done, which takes at most
 * subprocess_bound_ns(). Returns 0 with *result filled (whatever the status), or negative
 * errno when it could not be started. options->done is ignored.
 */
int subprocess_run_sync(const struct subprocess_options *options, struct subprocess_result *result);

/*
 * sys/subprocess_track.c. Record every started group in <dir>/children/<pgid> (the boot id,
 * pgid, session and the leader's start time) until the group is empty; but first SIGKILL
 * what a previous evictd recorded there and is still the same: a process of the recorded
 * group and session that started no earlier than its leader, the leader itself only with
 * its recorded start time; a recycled pid is never killed. Call once the instance lock is
 * held. Returns the number of processes killed or negative errno (logged; then nothing is
 * recorded). NULL or "": stop recording.
 */
int subprocess_track(const char *dir);
/* For sys/subprocess.c: a group started, a leader reaped. */
void subprocess_track_add(pid_t pgid);
void subprocess_track_forget(pid_t pgid);

#endif
