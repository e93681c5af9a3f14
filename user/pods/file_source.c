// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The --pods-file metadata source: read and parsed off the loop (meta.c parses). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/clock.h"
#include "sys/log.h"
#include "pods/internal.h"
#include "sys/fileio.h"

/* How long a refresh waits for a new version's parse before it goes on without it. */
#define PODS_FILE_INLINE_WAIT_NS (50LL * 1000000)

/* ---- the pods-file source -------------------------------------------------------------- */

/*
 * The file is read and parsed in a worker thread, never on the daemon's loop (doc/DESIGN.md,
 * "The loop never waits": a 53 MB list took 4.9 s to parse). The loop's refresh only stats the
 * path; when the version changed it starts a job on its own copy of the path, and a later
 * refresh swaps the finished list in. Until then the previous list stays in force.
 *
 * A job is shared by the source and its worker (refs under lock): the source may be
 * destroyed while the worker runs, and the last one out frees it.
 */
struct file_job {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int refs;		/* under lock */
	bool done;		/* under lock; the results below are the worker's until then */
	char path[PATH_MAX];
	char node_name[256];
	bool filter_node;
	/* Results. */
	struct pod_meta_list list;
	int err;
	char message[PATH_MAX + 256];	/* what to log for err, or "" for "<path>: %m" */
};

struct pods_file_source {
	struct pods_meta_source source;
	char path[PATH_MAX];
	char node_name[256];
	bool filter_node;
	bool have_stamp;	/* the stamp below names the last version tried */
	struct stat stamp;
	int last_err;		/* of the last version tried: 0 or negative errno */
	bool settled;		/* a version was tried to the end: a list or an error is known */
	struct file_job *job;	/* the version being read, or NULL */
};

static bool same_version(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static void file_job_unref(struct file_job *job)
{
	bool last;

	pthread_mutex_lock(&job->lock);
	last = --job->refs == 0;
	pthread_mutex_unlock(&job->lock);
	if (!last)
		return;
	pod_meta_list_free(&job->list);
	pthread_cond_destroy(&job->cond);
	pthread_mutex_destroy(&job->lock);
	free(job);
}

static bool file_job_done(struct file_job *job)
{
	bool done;

	pthread_mutex_lock(&job->lock);
	done = job->done;
	pthread_mutex_unlock(&job->lock);
	return done;
}

/*
 * The whole file into a NUL-terminated buffer. O_NONBLOCK and fstat on the open fd: a FIFO
 * (or a device) put where the file was after the loop's stat must neither hang open() nor be
 * read; only a regular file of at most PODS_FILE_MAX_BYTES is (sys/fileio.h does the same for
 * the small files). Reads one byte past the cap, so a file that grew meanwhile is refused too.
 */
static int read_pods_file(struct file_job *job, char **data, size_t *len)
{
	struct stat st;
	size_t total = 0, cap;
	char *buf;
	int fd, err;

	fd = fileio_open_regular(job->path, O_RDONLY | O_NOCTTY, 0, &st);
	if (fd == -EINVAL)
		snprintf(job->message, sizeof(job->message),
			 "pods file %s: not a regular file; keeping the last pod list", job->path);
	if (fd < 0)
		return fd;
	if ((uint64_t)st.st_size > PODS_FILE_MAX_BYTES)
		goto too_big;
	cap = (size_t)st.st_size + 1;
	buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n;

		if (total == cap) {
			/* It grew since the fstat: take more, up to one byte past the cap. */
			size_t grown_cap = cap * 2 > PODS_FILE_MAX_BYTES + 1 ? PODS_FILE_MAX_BYTES + 1 : cap * 2;
			char *grown;

			if (grown_cap <= cap) {
				free(buf);
				goto too_big;
			}
			grown = realloc(buf, grown_cap + 1);
			if (!grown) {
				free(buf);
				close(fd);
				return -ENOMEM;
			}
			buf = grown;
			cap = grown_cap;
		}
		n = read(fd, buf + total, cap - total);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			free(buf);
			close(fd);
			return err;
		}
		if (n == 0)
			break;
		total += (size_t)n;
	}
	close(fd);
	if (total > PODS_FILE_MAX_BYTES) {
		free(buf);
		fd = -1;
		goto too_big;
	}
	buf[total] = '\0';
	*data = buf;
	*len = total;
	return 0;
too_big:
	if (fd >= 0)
		close(fd);
	snprintf(job->message, sizeof(job->message),
		 "pods file %s: larger than %u MiB, more than a node's pod list; keeping the last pod list",
		 job->path, PODS_FILE_MAX_BYTES >> 20);
	return -EFBIG;
}

static void *file_job_thread(void *arg)
{
	struct file_job *job = arg;
	char *data = NULL;
	size_t len = 0;
	int err;

	/* Nothing is logged here: refresh() logs the outcome on the loop's thread. */
	err = read_pods_file(job, &data, &len);
	if (!err) {
		err = pods_parse_podlist_quiet(data, len, job->path, job->filter_node ? job->node_name : NULL,
					       &job->list, job->message, sizeof(job->message));
		free(data);
	}
	pthread_mutex_lock(&job->lock);
	job->err = err;
	job->done = true;
	pthread_cond_broadcast(&job->cond);
	pthread_mutex_unlock(&job->lock);
	file_job_unref(job);
	return NULL;
}

/* A worker for the current version: detached, every signal blocked (doc/DESIGN.md, Signals:
 * they must only ever reach the loop's signalfd). */
static int file_job_start(struct pods_file_source *file)
{
	struct file_job *job = calloc(1, sizeof(*job));
	pthread_condattr_t cond_attr;
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t thread;
	int err;

	if (!job)
		return -ENOMEM;
	pthread_mutex_init(&job->lock, NULL);
	pthread_condattr_init(&cond_attr);
	pthread_condattr_setclock(&cond_attr, CLOCK_MONOTONIC);
	pthread_cond_init(&job->cond, &cond_attr);
	pthread_condattr_destroy(&cond_attr);
	job->refs = 2;	/* the source and the worker */
	memcpy(job->path, file->path, sizeof(job->path));
	memcpy(job->node_name, file->node_name, sizeof(job->node_name));
	job->filter_node = file->filter_node;

	sigfillset(&all);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&thread, &attr, file_job_thread, job);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err) {
		job->refs = 1;
		file_job_unref(job);
		return err;
	}
	file->job = job;
	return 0;
}

/* Take a finished job's outcome: 1 (list replaced) or its negative errno (logged). */
static int file_job_collect(struct pods_file_source *file, struct pod_meta_list *list)
{
	struct file_job *job = file->job;
	int err = job->err;

	file->job = NULL;
	file->settled = true;
	file->last_err = err;
	if (err) {
		if (job->message[0]) {
			log_err("%s", job->message);
		} else {
			errno = -err;
			log_err("reading pods file %s: %m; keeping the last pod list", file->path);
		}
		file_job_unref(job);
		return err;
	}
	pod_meta_list_free(list);
	*list = job->list;
	memset(&job->list, 0, sizeof(job->list));
	file_job_unref(job);
	log_info("pods file %s: %zu pods", file->path, list->n_items);
	return 1;
}

/* Stat the path; when it is a new version, refuse what cannot be a pod list at once (logged,
 * once per version) or start a worker on it. 0 (nothing new, or a job started) or negative
 * errno (logged). Never opens the file: stat cannot hang on a FIFO, open can. */
static int file_check(struct pods_file_source *file)
{
	struct stat st;
	int err;

	if (stat(file->path, &st)) {
		err = -errno;
		if (file->last_err != err)
			log_err("pods file %s: %m; keeping the last pod list", file->path);
		file->last_err = err;
		file->settled = true;
		file->have_stamp = false;
		return err;
	}
	/* Unchanged since the last try: nothing to do, and a bad version is not re-logged. */
	if (file->have_stamp && same_version(&st, &file->stamp))
		return 0;
	file->stamp = st;
	file->have_stamp = true;
	if (!S_ISREG(st.st_mode)) {
		log_err("pods file %s: not a regular file; keeping the last pod list", file->path);
		err = -EINVAL;
	} else if ((uint64_t)st.st_size > PODS_FILE_MAX_BYTES) {
		log_err("pods file %s: %lld bytes, more than the %u MiB a node's pod list can take; "
			"keeping the last pod list", file->path, (long long)st.st_size,
			PODS_FILE_MAX_BYTES >> 20);
		err = -EFBIG;
	} else {
		err = file_job_start(file);
		if (!err)
			return 0;
		errno = -err;
		log_err("pods file %s: starting the reader thread: %m; keeping the last pod list",
			file->path);
		file->have_stamp = false;	/* try again at the next refresh */
	}
	file->last_err = err;
	file->settled = true;
	return err;
}

/* A job started (its list not swapped in yet), or the path changed since the last version
 * read: what the next refreshes will bring is newer than the list in force. */
static bool pods_file_pending(struct pods_meta_source *source)
{
	struct pods_file_source *file = (struct pods_file_source *)source;
	struct stat st;

	if (file->job)
		return true;
	if (stat(file->path, &st))
		return false;
	return !file->have_stamp || !same_version(&st, &file->stamp);
}

/* While a job runs: the last outcome stands, or -EINPROGRESS before there is any. */
static int file_pending(const struct pods_file_source *file)
{
	if (!file->settled)
		return -EINPROGRESS;
	return file->last_err;
}

/* Never waits: a running job is looked at, not joined (see above). */
static int pods_file_wait(struct pods_meta_source *source, int64_t timeout_ns);

static int pods_file_refresh(struct pods_meta_source *source, struct pod_meta_list *list)
{
	struct pods_file_source *file = (struct pods_file_source *)source;
	int collected = 0, err;

	if (file->job) {
		if (!file_job_done(file->job))
			return file_pending(file);
		collected = file_job_collect(file, list);
	}
	/* The file may have changed again while the job ran. */
	err = file_check(file);
	/* A pod list a node can hold parses in a millisecond or two: wait for that much, once per
	 * version, so a new pod is known when its cgroup appears; a big file goes on in the
	 * background and the loop is held at most PODS_FILE_INLINE_WAIT_NS. */
	if (!err && file->job && collected != 1) {
		pods_file_wait(source, PODS_FILE_INLINE_WAIT_NS);
		if (file_job_done(file->job))
			collected = file_job_collect(file, list);
	}
	if (collected == 1)
		return 1;
	if (err)
		return err;
	return file->job ? file_pending(file) : file->last_err;
}

static int pods_file_wait(struct pods_meta_source *source, int64_t timeout_ns)
{
	struct pods_file_source *file = (struct pods_file_source *)source;
	struct file_job *job = file->job;
	int64_t deadline = clock_monotonic_ns() + (timeout_ns > 0 ? timeout_ns : 0);
	struct timespec abs = { deadline / 1000000000, deadline % 1000000000 };
	int err = 0;

	if (!job)
		return 0;
	pthread_mutex_lock(&job->lock);
	while (!job->done && !err)
		if (pthread_cond_timedwait(&job->cond, &job->lock, &abs) == ETIMEDOUT)
			err = -ETIMEDOUT;
	pthread_mutex_unlock(&job->lock);
	return err;
}

static void pods_file_destroy(struct pods_meta_source *source)
{
	struct pods_file_source *file = (struct pods_file_source *)source;

	/* A running worker keeps its own reference and frees the job when it ends. */
	if (file->job)
		file_job_unref(file->job);
	free(file);
}

struct pods_meta_source *pods_file_source_new(const char *path, const char *node_name)
{
	struct pods_file_source *file;

	if (!path || strlen(path) >= sizeof(file->path) ||
	    (node_name && strlen(node_name) >= sizeof(file->node_name)))
		return NULL;
	file = calloc(1, sizeof(*file));
	if (!file)
		return NULL;
	strcpy(file->path, path);
	if (node_name) {
		strcpy(file->node_name, node_name);
		file->filter_node = true;
	}
	file->source.name = file->path;
	file->source.refresh = pods_file_refresh;
	file->source.pending = pods_file_pending;
	file->source.wait = pods_file_wait;
	file->source.destroy = pods_file_destroy;
	/* Start reading now: by the first pods_refresh() the list is most likely in. */
	file_check(file);
	return &file->source;
}
