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
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sys/clock.h"
#include "sys/log.h"
#include "sys/loop.h"
#include "sys/subprocess.h"
#include "act/reclaim.h"

static bool signal_is_inodes(enum ev_signal signal)
{
	return signal_meta(signal)->unit == SIGNAL_UNIT_INODES;
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

int reclaim_run_command(const char *command, int64_t timeout_ns, int *status, char *output,
			size_t output_len)
{
	struct subprocess_options options = {
		.shell_command = command,
		.timeout_ns = timeout_ns > 0 ? timeout_ns : RECLAIM_DEFAULT_TIMEOUT_NS,
	};
	struct subprocess_result *result;
	int err;

	if (!command || !status)
		return -EINVAL;
	/* The result holds the output tail: 1 KiB is too much for the stack of a callback. */
	result = malloc(sizeof(*result));
	if (!result)
		return -ENOMEM;
	err = subprocess_run_sync(&options, result);
	if (!err) {
		*status = result->status;
		if (output && output_len) {
			size_t len = result->output_len < output_len - 1 ? result->output_len :
									   output_len - 1;

			memcpy(output, result->output + result->output_len - len, len);
			output[len] = '\0';
		}
		if (result->timed_out)
			err = -ETIMEDOUT;
	}
	free(result);
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


/* ---- the reclaim job ------------------------------------------------------------------- */

/* What a memory step needs of a candidate, copied: the pods may be refreshed meanwhile. */
struct mem_target {
	char cgroup_path[sizeof(((struct pod *)0)->cgroup_path)];
	char namespace_[sizeof(((struct pod *)0)->namespace_)];
	char name[sizeof(((struct pod *)0)->name)];
};

/* One memory.reclaim write in flight, shared by the worker thread and the loop: whichever
 * lets go last closes the fds and frees it, so a cancelled job never waits for the kernel. */
struct mem_work {
	int refs;
	int event_fd;
	int dir_fd;
	int64_t bytes;
	int err;
	int64_t elapsed_ns;
};

struct reclaim_job {
	struct reclaim *reclaim;
	struct loop *loop;
	enum reclaim_kind kind;
	enum ev_signal signal;
	int64_t target;
	reclaim_read_fn read_signal;
	void *read_ctx;
	reclaim_done_fn done;
	void *done_ctx;
	struct reclaim_report report;
	int64_t available;
	struct loop_source *kick;	/* the first step runs from the loop, not from start */
	int early_result;		/* finish_now's answer: memory reclaim off or unsupported */
	size_t next;
	/* disk */
	const char *commands[RECLAIM_MAX_STEPS];
	size_t n_commands;
	struct subprocess *process;
	/* memory */
	struct mem_target *targets;
	size_t n_targets;
	size_t max_pods;
	size_t tried;
	struct mem_work *work;
	struct loop_source *work_source;
	struct reclaim_step *step;	/* the step in flight */
	const struct mem_target *step_target;
	int64_t step_need;
	int64_t step_current;
};

static void work_put(struct mem_work *work)
{
	if (__atomic_sub_fetch(&work->refs, 1, __ATOMIC_ACQ_REL))
		return;
	close(work->event_fd);
	close(work->dir_fd);
	free(work);
}

static void job_free(struct reclaim_job *job)
{
	loop_remove(job->loop, job->kick);
	subprocess_cancel(job->process);
	if (job->work) {
		loop_remove(job->loop, job->work_source);
		work_put(job->work);
	}
	free(job->targets);
	free(job);
}

static void job_finish(struct reclaim_job *job, int result)
{
	job->report.available_after = job->available;
	/* Detached first: done may start the next job. */
	job->reclaim->job = NULL;
	job->done(job->done_ctx, &job->report, result);
	job_free(job);
}

static void newlines_to_spaces(char *text)
{
	for (char *p = text; *p; p++)
		if (*p == '\n')
			*p = ' ';
}

/* ---- disk: one command after another through sys/subprocess ---- */

static void disk_run(struct reclaim_job *job);

/* Re-read the signal after step i and log what it freed. 0, or the read error (the job is
 * finished then). */
static int disk_after_step(struct reclaim_job *job, struct reclaim_step *step, char *output)
{
	char before_text[48], after_text[48], freed_text[48];
	size_t i = job->next, n = job->n_commands;
	const char *command = job->commands[i];
	enum ev_signal signal = job->signal;
	int64_t after;
	int err;

	/* Re-read even after a failure: a step can free something and still fail. */
	err = job->read_signal(job->read_ctx, signal, &after);
	if (err) {
		log_err("reclaim: re-reading %s after \"%s\": %s", signal_name(signal), command,
			strerror(-err));
		job_finish(job, err);
		return err;
	}
	step->freed = after - job->available;
	format_amount(signal, job->available, before_text, sizeof(before_text));
	format_amount(signal, after, after_text, sizeof(after_text));
	format_amount(signal, step->freed, freed_text, sizeof(freed_text));
	newlines_to_spaces(output);
	if (step->timed_out)
		log_err("reclaim: step %zu/%zu \"%s\" timed out after %.1f s and %s; freed %s "
			"(%s %s -> %s)%s%s", i + 1, n, command, (double)step->elapsed_ns / 1e9,
			step->status == -1 ? "could not be killed (left running)" : "was killed",
			freed_text, signal_name(signal), before_text, after_text,
			output[0] ? "; output: " : "", output);
	else
		log_msg(step->status == 0 ? LOGLEVEL_INFO : LOGLEVEL_WARN,
			"reclaim: step %zu/%zu \"%s\" exited %d in %.1f s; freed %s (%s %s -> "
			"%s)%s%s", i + 1, n, command, step->status, (double)step->elapsed_ns / 1e9,
			freed_text, signal_name(signal), before_text, after_text,
			step->status && output[0] ? "; output: " : "", step->status ? output : "");
	job->available = after;
	job->next++;
	return 0;
}

static void disk_step_done(void *ctx, const struct subprocess_result *result)
{
	struct reclaim_job *job = ctx;
	struct reclaim_step *step = &job->report.steps[job->report.n_steps - 1];
	char output[256];
	size_t len = result->output_len < sizeof(output) - 1 ? result->output_len :
							       sizeof(output) - 1;

	job->process = NULL;	/* it frees itself after this call */
	step->status = result->status;
	step->timed_out = result->timed_out;
	step->elapsed_ns = result->elapsed_ns;
	memcpy(output, result->output + result->output_len - len, len);
	output[len] = '\0';
	if (disk_after_step(job, step, output))
		return;
	disk_run(job);
}

static void disk_run(struct reclaim_job *job)
{
	const struct reclaim_config *config = &job->reclaim->config;

	while (job->next < job->n_commands) {
		size_t i = job->next, n = job->n_commands;
		struct reclaim_step *step = &job->report.steps[job->report.n_steps++];
		struct subprocess_options options = {
			.shell_command = job->commands[i],
			.timeout_ns = config->command_timeout_ns > 0 ? config->command_timeout_ns :
								       RECLAIM_DEFAULT_TIMEOUT_NS,
			.done = disk_step_done,
			.ctx = job,
		};
		char output[1] = "";
		int err;

		if (snprintf(step->what, sizeof(step->what), "%s", job->commands[i]) >=
		    (int)sizeof(step->what))
			step->what[sizeof(step->what) - 1] = '\0';
		if (config->dry_run) {
			log_info("reclaim: dry-run: %s: would run step %zu/%zu: %s",
				 signal_name(job->signal), i + 1, n, job->commands[i]);
			step->status = -ECANCELED;
			job->next++;
			continue;
		}
		err = subprocess_start(job->loop, &options, &job->process);
		if (!err)
			return;		/* disk_step_done goes on */
		step->status = err;
		log_err("reclaim: step %zu/%zu: starting \"%s\": %s", i + 1, n, job->commands[i],
			strerror(-err));
		if (disk_after_step(job, step, output))
			return;
	}
	job_finish(job, job->available >= job->target ? 1 : 0);
}

/* The commands for this signal; false when none (logged once when crictl is missing). */
static void disk_commands(struct reclaim *reclaim, struct reclaim_job *job)
{
	const struct reclaim_config *config = &reclaim->config;

	if (config->disk_commands) {
		for (size_t i = 0; i < config->n_disk_commands && job->n_commands < RECLAIM_MAX_STEPS; i++) {
			if (config->disk_commands[i] && config->disk_commands[i][0])
				job->commands[job->n_commands++] = config->disk_commands[i];
		}
		return;
	}
	unsigned int steps = default_steps(config->fs_layout, job->signal);

	if (!reclaim->crictl_checked) {
		reclaim->crictl_found = reclaim_in_path("crictl", NULL);
		reclaim->crictl_checked = true;
		if (!reclaim->crictl_found)
			log_warn("reclaim: crictl is not in PATH and no disk reclaim commands are "
				 "configured; DiskPressure goes straight to eviction");
	}
	if (reclaim->crictl_found && (steps & STEP_CONTAINERS))
		job->commands[job->n_commands++] = RECLAIM_CRICTL_RM_EXITED;
	if (reclaim->crictl_found && (steps & STEP_IMAGES))
		job->commands[job->n_commands++] = RECLAIM_CRICTL_PRUNE_IMAGES;
}

/* ---- memory: memory.reclaim writes in a worker thread ---- */

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

static void *mem_worker(void *opaque)
{
	struct mem_work *work = opaque;
	int64_t start = clock_monotonic_ns();
	uint64_t one = 1;
	int err;

	err = write_reclaim(work->dir_fd, work->bytes);
	__atomic_store_n(&work->elapsed_ns, clock_monotonic_ns() - start, __ATOMIC_RELAXED);
	__atomic_store_n(&work->err, err, __ATOMIC_RELEASE);
	/* An eventfd write of 1 cannot fail short of a bad fd, which refs rule out. */
	if (write(work->event_fd, &one, sizeof(one)) != sizeof(one))
		log_err("reclaim: signalling the loop after memory.reclaim: %m");
	work_put(work);
	return NULL;
}

/* Start the write in a thread with every signal blocked (they are the loop's). 0 or -errno. */
static int mem_start_work(struct reclaim_job *job, int dir_fd, int64_t bytes);
static void mem_run(struct reclaim_job *job);

static void mem_work_done(void *ctx, int fd, uint32_t revents)
{
	struct reclaim_job *job = ctx;
	struct mem_work *work = job->work;
	struct reclaim_step *step = job->step;
	const struct mem_target *t = job->step_target;
	int64_t current_after = 0, after;
	uint64_t count;
	int err;

	if (read(fd, &count, sizeof(count)) != sizeof(count))
		return;		/* spurious */
	loop_remove(job->loop, job->work_source);
	job->work_source = NULL;
	job->work = NULL;
	err = __atomic_load_n(&work->err, __ATOMIC_ACQUIRE);
	step->elapsed_ns = __atomic_load_n(&work->elapsed_ns, __ATOMIC_RELAXED);
	step->status = err;
	if (err == -ENOENT || err == -EINVAL || err == -EOPNOTSUPP) {
		work_put(work);
		job->reclaim->memory_reclaim_unsupported = true;
		errno = -err;
		log_warn("reclaim: write %s/memory.reclaim: %m; memory.reclaim is not supported "
			 "here (needs cgroup v2 with the memory controller, Linux >= 5.19); not "
			 "trying it again", t->cgroup_path);
		job_finish(job, -EOPNOTSUPP);
		return;
	}
	/* EAGAIN: the kernel reclaimed less than asked; what it got still counts. */
	if (err && err != -EAGAIN) {
		errno = -err;
		log_warn("reclaim: write %s/memory.reclaim: %m", t->cgroup_path);
	}
	if (read_memory_current(work->dir_fd, &current_after) == 0)
		step->cgroup_freed = job->step_current - current_after;
	work_put(work);
	err = job->read_signal(job->read_ctx, job->signal, &after);
	if (err) {
		log_err("reclaim: re-reading %s: %s", signal_name(job->signal), strerror(-err));
		job_finish(job, err);
		return;
	}
	step->freed = after - job->available;
	log_info("reclaim: memory.reclaim %.1f MiB from %s/%s: the cgroup gave back %.1f MiB "
		 "in %.1f ms; %s %+.1f MiB", (double)job->step_need / 1048576.0, t->namespace_,
		 t->name, (double)step->cgroup_freed / 1048576.0, (double)step->elapsed_ns / 1e6,
		 signal_name(job->signal), (double)step->freed / 1048576.0);
	job->available = after;
	mem_run(job);
}

static int mem_start_work(struct reclaim_job *job, int dir_fd, int64_t bytes)
{
	struct mem_work *work;
	pthread_attr_t attr;
	sigset_t all, saved;
	pthread_t thread;
	int err;

	work = calloc(1, sizeof(*work));
	if (!work)
		return -ENOMEM;
	work->dir_fd = dir_fd;
	work->bytes = bytes;
	work->refs = 2;		/* the loop's and the thread's */
	work->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (work->event_fd < 0) {
		err = -errno;
		log_err("reclaim: eventfd for memory.reclaim: %m");
		free(work);
		return err;
	}
	/* Not owned: the fd lives as long as the work, which the thread may outlive us with. */
	job->work_source = loop_add_fd(job->loop, work->event_fd, EPOLLIN, false, mem_work_done, job);
	if (!job->work_source) {
		err = -errno;
		close(work->event_fd);
		free(work);
		return err;
	}
	sigfillset(&all);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	err = -pthread_create(&thread, &attr, mem_worker, work);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	pthread_attr_destroy(&attr);
	if (err) {
		errno = -err;
		log_err("reclaim: starting the memory.reclaim thread: %m");
		loop_remove(job->loop, job->work_source);
		job->work_source = NULL;
		close(work->event_fd);
		free(work);
		return err;
	}
	job->work = work;
	return 0;
}

static void mem_run(struct reclaim_job *job)
{
	const struct reclaim_config *config = &job->reclaim->config;

	while (job->next < job->n_targets && job->tried < job->max_pods &&
	       job->report.n_steps < RECLAIM_MAX_STEPS) {
		const struct mem_target *t = &job->targets[job->next++];
		int64_t need = job->target - job->available, current = 0;
		struct reclaim_step *step;
		int dir_fd, err;

		if (need <= 0)
			break;
		/* Same path rules as a kill: memory.reclaim is a write into a cgroup. */
		if (kill_check_cgroup(config->kill, t->cgroup_path, &dir_fd))
			continue;
		job->tried++;
		step = &job->report.steps[job->report.n_steps++];
		/* A label for reports: a cut-off path is fine here. */
		if (snprintf(step->what, sizeof(step->what), "%s/memory.reclaim", t->cgroup_path) >=
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
				 need, t->cgroup_path);
			step->status = -ECANCELED;
			close(dir_fd);
			continue;
		}
		job->step = step;
		job->step_target = t;
		job->step_need = need;
		job->step_current = current;
		err = mem_start_work(job, dir_fd, need);
		if (!err)
			return;		/* mem_work_done goes on */
		step->status = err;
		close(dir_fd);
	}
	job_finish(job, job->available >= job->target ? 1 : 0);
}

/* ---- start, cancel, and the synchronous calls on top ---- */

static void kick(void *ctx)
{
	struct reclaim_job *job = ctx;

	loop_remove(job->loop, job->kick);
	job->kick = NULL;
	if (job->kind == RECLAIM_DISK)
		disk_run(job);
	else
		mem_run(job);
}

static void finish_now(void *ctx)
{
	struct reclaim_job *job = ctx;

	job_finish(job, job->early_result);
}

int reclaim_start(struct reclaim *reclaim, struct loop *loop, const struct reclaim_request *req,
		  reclaim_done_fn done, void *ctx)
{
	const struct reclaim_config *config;
	struct reclaim_job *job;
	loop_timer_fn first = kick;
	int err;

	if (!reclaim || !loop || !req || !req->read_signal || !done ||
	    (req->n_candidates && !req->candidates))
		return -EINVAL;
	if (reclaim->job)
		return -EBUSY;
	config = &reclaim->config;
	if (req->kind == RECLAIM_DISK && !signal_is_disk(req->signal)) {
		log_err("reclaim: %s is not a disk signal", signal_name(req->signal));
		return -EINVAL;
	}
	if (req->kind == RECLAIM_MEMORY && config->memory_reclaim &&
	    !reclaim->memory_reclaim_unsupported && !config->kill) {
		log_err("reclaim: memory.reclaim needs the kill path rules; not configured");
		return -EINVAL;
	}
	job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	job->reclaim = reclaim;
	job->loop = loop;
	job->kind = req->kind;
	job->signal = req->signal;
	job->target = req->target_available;
	job->read_signal = req->read_signal;
	job->read_ctx = req->read_ctx;
	job->done = done;
	job->done_ctx = ctx;

	if (req->kind == RECLAIM_MEMORY && (!config->memory_reclaim || reclaim->memory_reclaim_unsupported)) {
		/* Off (0) or known unsupported: the answer comes from the loop all the same. */
		job->early_result = config->memory_reclaim ? -EOPNOTSUPP : 0;
		first = finish_now;
		goto arm;
	}
	if (req->kind == RECLAIM_DISK) {
		disk_commands(reclaim, job);
	} else {
		job->max_pods = config->memory_reclaim_max_pods ? config->memory_reclaim_max_pods :
								  RECLAIM_DEFAULT_MEMORY_PODS;
		job->targets = calloc(req->n_candidates ? req->n_candidates : 1, sizeof(*job->targets));
		if (!job->targets) {
			free(job);
			return -ENOMEM;
		}
		for (size_t i = 0; i < req->n_candidates; i++) {
			const struct pod *pod = req->candidates[i];
			struct mem_target *t = &job->targets[job->n_targets];

			if (!pod || pod_never_evict(pod))
				continue;
			memcpy(t->cgroup_path, pod->cgroup_path, sizeof(t->cgroup_path));
			memcpy(t->namespace_, pod->namespace_, sizeof(t->namespace_));
			memcpy(t->name, pod->name, sizeof(t->name));
			t->cgroup_path[sizeof(t->cgroup_path) - 1] = '\0';
			t->namespace_[sizeof(t->namespace_) - 1] = '\0';
			t->name[sizeof(t->name) - 1] = '\0';
			job->n_targets++;
		}
	}
	err = req->read_signal(req->read_ctx, req->signal, &job->available);
	if (err) {
		log_err("reclaim: reading %s: %s", signal_name(req->signal), strerror(-err));
		free(job->targets);
		free(job);
		return err;
	}
	job->report.available_before = job->report.available_after = job->available;
arm:
	job->kick = loop_add_timer(loop, 0, first, job);
	if (!job->kick) {
		err = -errno;
		free(job->targets);
		free(job);
		return err;
	}
	reclaim->job = job;
	return 0;
}

bool reclaim_busy(const struct reclaim *reclaim)
{
	return reclaim && reclaim->job;
}

void reclaim_cancel(struct reclaim *reclaim)
{
	struct reclaim_job *job = reclaim ? reclaim->job : NULL;

	if (!job)
		return;
	log_info("reclaim: cancelling the %s reclaim for %s", job->kind == RECLAIM_DISK ? "disk" :
		 "memory", signal_name(job->signal));
	reclaim->job = NULL;
	job_free(job);
}

struct sync_run {
	bool done;
	int result;
	struct reclaim_report *report;
};

static void sync_done(void *ctx, const struct reclaim_report *report, int result)
{
	struct sync_run *run = ctx;

	*run->report = *report;
	run->result = result;
	run->done = true;
}

static int run_sync(struct reclaim *reclaim, const struct reclaim_request *req,
		    struct reclaim_report *report)
{
	struct reclaim_report local;
	struct sync_run run = { .report = report ? report : &local };
	struct loop *loop;
	int err;

	memset(run.report, 0, sizeof(*run.report));
	if (!reclaim)
		return -EINVAL;
	err = loop_new(&loop);
	if (err)
		return err;
	err = reclaim_start(reclaim, loop, req, sync_done, &run);
	/* Every step is bounded (subprocess) but a memory.reclaim write, which --once waits for. */
	while (!err && !run.done) {
		int n = loop_run_once(loop, -1, NULL, NULL);

		if (n < 0) {
			reclaim_cancel(reclaim);
			err = n;
		}
	}
	loop_free(loop);
	return err ? err : run.result;
}

int reclaim_disk(struct reclaim *reclaim, enum ev_signal signal, int64_t target_available,
		 reclaim_read_fn read_signal, void *ctx, struct reclaim_report *report)
{
	struct reclaim_request req = {
		.kind = RECLAIM_DISK, .signal = signal, .target_available = target_available,
		.read_signal = read_signal, .read_ctx = ctx,
	};

	return run_sync(reclaim, &req, report);
}

int reclaim_memory(struct reclaim *reclaim, struct pod *const *candidates, size_t n_candidates,
		   enum ev_signal signal, int64_t target_available, reclaim_read_fn read_signal,
		   void *ctx, struct reclaim_report *report)
{
	struct reclaim_request req = {
		.kind = RECLAIM_MEMORY, .signal = signal, .target_available = target_available,
		.read_signal = read_signal, .read_ctx = ctx, .candidates = candidates,
		.n_candidates = n_candidates,
	};

	return run_sync(reclaim, &req, report);
}
