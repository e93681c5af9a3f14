// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The Kubernetes API client's worker thread, its queue of jobs and its tasks. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "kube/client_internal.h"
#include "sys/clock.h"
#include "sys/log.h"

/* ---- the worker ------------------------------------------------------------------------- */

static void job_free(struct kube_job *job)
{
	if (job->ops->release)
		job->ops->release(job->ctx);
	free(job);
}

/* The first job due by now, in queue order (FIFO among the ready ones), unlinked. */
static struct kube_job *take_ready_job(struct kube_client *client, int64_t now_ns)
{
	struct kube_job *prev = NULL;

	for (struct kube_job *job = client->head; job; prev = job, job = job->next) {
		if (job->due_ns > now_ns)
			continue;
		if (prev)
			prev->next = job->next;
		else
			client->head = job->next;
		if (client->tail == job)
			client->tail = prev;
		job->next = NULL;
		client->n_queued--;
		return job;
	}
	return NULL;
}

static void append_job(struct kube_client *client, struct kube_job *job)
{
	job->next = NULL;
	if (client->tail)
		client->tail->next = job;
	else
		client->head = job;
	client->tail = job;
	client->n_queued++;
}

/* A task woken to run before the queued jobs (kube_task_wake_first), or NULL. */
static struct kube_task *take_first_task(struct kube_client *client)
{
	for (struct kube_task *task = client->tasks; task; task = task->next)
		if (!task->running && task->woken && task->first)
			return task;
	return NULL;
}

static struct kube_task *take_due_task(struct kube_client *client, int64_t now_ns)
{
	for (struct kube_task *task = client->tasks; task; task = task->next)
		if (!task->running && (task->woken || task->due_ns <= now_ns))
			return task;
	return NULL;
}

static void unlink_task(struct kube_client *client, struct kube_task *task)
{
	for (struct kube_task **p = &client->tasks; *p; p = &(*p)->next)
		if (*p == task) {
			*p = task->next;
			return;
		}
}

static int64_t next_deadline(struct kube_client *client)
{
	int64_t deadline = INT64_MAX;

	for (struct kube_job *job = client->head; job; job = job->next)
		if (job->due_ns < deadline)
			deadline = job->due_ns;
	for (struct kube_task *task = client->tasks; task; task = task->next)
		if (!task->running && task->due_ns < deadline)
			deadline = task->due_ns;
	return deadline;
}

/* Wait on the worker's condition until deadline (monotonic ns of client->now_ns). */
static void wait_until(struct kube_client *client, int64_t deadline)
{
	struct timespec abs;
	int64_t wait_ns, target;

	if (deadline == INT64_MAX) {
		pthread_cond_wait(&client->wake, &client->lock);
		return;
	}
	wait_ns = deadline - client->now_ns();
	if (wait_ns <= 0)
		return;
	/* The condition variable runs on CLOCK_MONOTONIC (set at init); client->now_ns may be
	 * an injected clock, so only the difference is used. */
	target = clock_monotonic_ns() + wait_ns;
	abs.tv_sec = target / 1000000000;
	abs.tv_nsec = target % 1000000000;
	pthread_cond_timedwait(&client->wake, &client->lock, &abs);
}

static void run_job(struct kube_client *client, struct kube_job *job)
{
	int result;
	int64_t now, delay;

	pthread_mutex_unlock(&client->lock);
	result = job->ops->run(client, job->ctx, job->attempt);
	now = client->now_ns();
	pthread_mutex_lock(&client->lock);
	if (result != KUBE_JOB_RETRY || client->stop) {
		if (result < 0 || result == KUBE_JOB_RETRY)
			client->stats.dropped++;
		pthread_mutex_unlock(&client->lock);
		job_free(job);
		pthread_mutex_lock(&client->lock);
		return;
	}
	if (now - job->first_ns >= client->retry_for_ns) {
		client->stats.dropped++;
		pthread_mutex_unlock(&client->lock);
		log_err("kube: %s: giving up after %u attempts over %llds", job->what, job->attempt + 1,
			(long long)((now - job->first_ns) / 1000000000));
		job_free(job);
		pthread_mutex_lock(&client->lock);
		return;
	}
	job->attempt++;
	delay = kube_client_backoff_ns(client, job->attempt);
	job->due_ns = now + delay;
	client->stats.retries++;
	append_job(client, job);
}

static void run_task(struct kube_client *client, struct kube_task *task)
{
	int64_t next;

	task->running = true;
	task->woken = false;
	task->first = false;
	pthread_mutex_unlock(&client->lock);
	next = task->ops->run(client, task->ctx, client->now_ns());
	pthread_mutex_lock(&client->lock);
	task->running = false;
	if (next == KUBE_TASK_REMOVE) {
		unlink_task(client, task);
		pthread_mutex_unlock(&client->lock);
		if (task->ops->release)
			task->ops->release(task->ctx);
		free(task);
		pthread_mutex_lock(&client->lock);
		return;
	}
	task->due_ns = next;
}

/* Queued or running work, or a task woken and not yet run. Under client->lock. */
static bool busy_locked(const struct kube_client *client)
{
	if (client->head || client->job_running)
		return true;
	for (const struct kube_task *task = client->tasks; task; task = task->next)
		if (task->woken || task->running)
			return true;
	return false;
}

/* Under client->lock. The eventfd counter only makes the fd readable; what happened is in
 * client->events, so a write never fails for the counter's sake (it saturates at 2^64-2). */
static void post_locked(struct kube_client *client, uint32_t events)
{
	uint64_t one = 1;

	if (!events)
		return;
	if (!client->events && client->event_fd >= 0 &&
	    write(client->event_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("kube: eventfd write: %m");
	client->events |= events;
}

void kube_client_post(struct kube_client *client, uint32_t events)
{
	pthread_mutex_lock(&client->lock);
	post_locked(client, events);
	pthread_mutex_unlock(&client->lock);
}

/* The daemon asked to hear when the queue is empty: tell it now if it is. */
static void check_idle_locked(struct kube_client *client)
{
	if (client->idle_notify && !busy_locked(client)) {
		client->idle_notify = false;
		post_locked(client, KUBE_EVENT_IDLE);
	}
}

static void *worker_main(void *arg)
{
	struct kube_client *client = arg;

	pthread_mutex_lock(&client->lock);
	while (!client->stop) {
		int64_t now = client->now_ns();
		struct kube_task *task = take_first_task(client);
		struct kube_job *job;

		if (task) {
			run_task(client, task);
			check_idle_locked(client);
			pthread_cond_broadcast(&client->idle);
			continue;
		}
		job = take_ready_job(client, now);
		if (job) {
			client->job_running = true;
			run_job(client, job);
			client->job_running = false;
			check_idle_locked(client);
			pthread_cond_broadcast(&client->idle);
			continue;
		}
		task = take_due_task(client, now);
		if (task) {
			run_task(client, task);
			check_idle_locked(client);
			pthread_cond_broadcast(&client->idle);
			continue;
		}
		check_idle_locked(client);
		pthread_cond_broadcast(&client->idle);
		wait_until(client, next_deadline(client));
	}
	pthread_mutex_unlock(&client->lock);
	return NULL;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

/* curl_global_init is not thread-safe: once, before any worker exists. */
static void curl_init_once(void)
{
	curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int kube_client_new(struct kube_client **out, const struct kube_client_options *options)
{
	struct kube_client *client;
	pthread_condattr_t attr;
	sigset_t all, saved;
	int err;

	*out = NULL;
	if (!options || !options->config || !options->config->server[0])
		return -EINVAL;
	pthread_once(&curl_once, curl_init_once);
	if (curl_init_result != CURLE_OK) {
		log_err("kube: curl_global_init: %s", curl_easy_strerror(curl_init_result));
		return -EIO;
	}
	client = calloc(1, sizeof(*client));
	if (!client)
		return -ENOMEM;
	client->config = *options->config;
	client->request_timeout_ns = options->request_timeout_ns > 0 ? options->request_timeout_ns :
				     KUBE_DEFAULT_REQUEST_TIMEOUT_NS;
	client->backoff_initial_ns = options->backoff_initial_ns > 0 ? options->backoff_initial_ns :
				     KUBE_DEFAULT_BACKOFF_INITIAL_NS;
	client->backoff_max_ns = options->backoff_max_ns > 0 ? options->backoff_max_ns :
				 KUBE_DEFAULT_BACKOFF_MAX_NS;
	if (client->backoff_max_ns < client->backoff_initial_ns)
		client->backoff_max_ns = client->backoff_initial_ns;
	client->retry_for_ns = options->retry_for_ns > 0 ? options->retry_for_ns : KUBE_DEFAULT_RETRY_FOR_NS;
	client->queue_max = options->queue_max ? options->queue_max : KUBE_DEFAULT_QUEUE_MAX;
	snprintf(client->user_agent, sizeof(client->user_agent), "%s",
		 options->user_agent ? options->user_agent : "evictd");
	client->now_ns = options->now_ns ? options->now_ns : clock_monotonic_ns;
	client->random_state = (uint64_t)clock_monotonic_ns() ^ ((uint64_t)getpid() << 32);
	client->http_version = kube_http_version_from_env();

	if (kube_conn_init(&client->conn)) {
		free(client);
		return -ENOMEM;
	}
	client->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (client->event_fd < 0) {
		err = -errno;
		log_err("kube: eventfd: %m");
		kube_conn_cleanup(&client->conn);
		free(client);
		return err;
	}
	pthread_mutex_init(&client->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&client->wake, &attr);
	pthread_cond_init(&client->idle, &attr);
	pthread_condattr_destroy(&attr);
	/* The worker inherits the creating thread's mask: block everything there, whatever the
	 * caller did, so that SIGHUP, SIGTERM and SIGINT go to the main thread (signalfd) and
	 * never take their default action in the worker (a SIGHUP there killed the process with
	 * status 129). Faults (SIGSEGV, SIGBUS ...) are still delivered: the kernel forces them. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	err = pthread_create(&client->thread, NULL, worker_main, client);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (!err)
		pthread_setname_np(client->thread, KUBE_WORKER_THREAD_NAME);
	if (err) {
		log_err("kube: starting the API worker thread: %s", strerror(err));
		kube_client_free(client);
		return -err;
	}
	client->thread_started = true;
	*out = client;
	return 0;
}

void kube_client_free(struct kube_client *client)
{
	struct kube_job *job;
	struct kube_task *task;
	size_t dropped = 0;

	if (!client)
		return;
	pthread_mutex_lock(&client->lock);
	client->stop = true;
	pthread_cond_broadcast(&client->wake);
	pthread_mutex_unlock(&client->lock);
	if (client->thread_started)
		pthread_join(client->thread, NULL);
	/* Pod watches see client->stop within a second (their progress callback, their
	 * backoff sleeps) and end. */
	pthread_mutex_lock(&client->lock);
	while (client->streams)
		pthread_cond_wait(&client->idle, &client->lock);
	pthread_mutex_unlock(&client->lock);

	while ((job = client->head)) {
		client->head = job->next;
		dropped++;
		job_free(job);
	}
	if (dropped)
		log_warn("kube: stopping with %zu API requests still queued; they are dropped", dropped);
	while ((task = client->tasks)) {
		client->tasks = task->next;
		if (task->ops->release)
			task->ops->release(task->ctx);
		free(task);
	}
	kube_conn_cleanup(&client->conn);
	pthread_cond_destroy(&client->wake);
	pthread_cond_destroy(&client->idle);
	pthread_mutex_destroy(&client->lock);
	if (client->event_fd >= 0)
		close(client->event_fd);
	free(client);
}

int kube_client_drain(struct kube_client *client, int64_t timeout_ns)
{
	int64_t deadline = clock_monotonic_ns() + timeout_ns;
	int err = 0;

	pthread_mutex_lock(&client->lock);
	while (busy_locked(client) && !client->stop) {
		struct timespec abs;
		/* Wake at least every 50 ms: a retrying job sits in the queue while waiting. */
		int64_t now = clock_monotonic_ns(), until = now + 50000000 < deadline ? now + 50000000 : deadline;

		if (now >= deadline) {
			err = -ETIMEDOUT;
			break;
		}
		abs.tv_sec = until / 1000000000;
		abs.tv_nsec = until % 1000000000;
		pthread_cond_timedwait(&client->idle, &client->lock, &abs);
	}
	pthread_mutex_unlock(&client->lock);
	return err;
}

/* ---- the daemon's loop -------------------------------------------------------------------- */

int kube_client_event_fd(const struct kube_client *client)
{
	return client->event_fd;
}

uint32_t kube_client_dispatch(struct kube_client *client)
{
	uint64_t counter;
	uint32_t events;

	pthread_mutex_lock(&client->lock);
	/* Read under the lock: a post between the read and the reset could otherwise leave
	 * events set with the fd no longer readable. */
	if (read(client->event_fd, &counter, sizeof(counter)) < 0 && errno != EAGAIN)
		log_warn("kube: eventfd read: %m");
	events = client->events;
	client->events = 0;
	pthread_mutex_unlock(&client->lock);
	return events;
}

bool kube_client_idle(const struct kube_client *client)
{
	struct kube_client *c = (struct kube_client *)client;	/* the lock only */
	bool idle;

	pthread_mutex_lock(&c->lock);
	idle = !busy_locked(c);
	pthread_mutex_unlock(&c->lock);
	return idle;
}

void kube_client_request_idle_notify(struct kube_client *client)
{
	pthread_mutex_lock(&client->lock);
	client->idle_notify = true;
	check_idle_locked(client);
	pthread_mutex_unlock(&client->lock);
}

void kube_client_cancel_idle_notify(struct kube_client *client)
{
	pthread_mutex_lock(&client->lock);
	client->idle_notify = false;
	client->events &= ~KUBE_EVENT_IDLE;
	pthread_mutex_unlock(&client->lock);
}

int kube_submit_job(struct kube_client *client, const struct kube_job_ops *ops, void *ctx,
		    const char *what)
{
	struct kube_job *job = calloc(1, sizeof(*job));
	int err = 0;

	if (!job) {
		if (ops->release)
			ops->release(ctx);
		return -ENOMEM;
	}
	job->ops = ops;
	job->ctx = ctx;
	snprintf(job->what, sizeof(job->what), "%s", what ? what : "request");
	job->first_ns = job->due_ns = client->now_ns();

	pthread_mutex_lock(&client->lock);
	if (client->stop)
		err = -ESHUTDOWN;
	else if (client->n_queued >= client->queue_max)
		err = -ENOBUFS;
	if (err) {
		client->stats.dropped++;
	} else {
		append_job(client, job);
		pthread_cond_signal(&client->wake);
	}
	pthread_mutex_unlock(&client->lock);
	if (err) {
		if (err == -ENOBUFS)
			log_err("kube: %s: dropped, %zu API requests are already queued (is the API "
				"server reachable?)", job->what, client->queue_max);
		job_free(job);
	}
	return err;
}

/* ---- the plain request job --------------------------------------------------------------- */

struct request_job {
	char method[8];
	char *path;
	char *content_type;
	char *body;
	char *what;
	bool ok_if_gone;
	bool warned;
};

static void request_job_release(void *ctx)
{
	struct request_job *job = ctx;

	free(job->path);
	free(job->content_type);
	free(job->body);
	free(job->what);
	free(job);
}

static int request_job_run(struct kube_client *client, void *ctx, unsigned attempt)
{
	struct request_job *job = ctx;
	struct kube_response response;
	char url[sizeof(client->config.server) + 256];
	int err;

	err = kube_request(client, job->method, job->path, job->content_type, job->body, &response);
	kube_url(client, job->path, url, sizeof(url));
	if (!err && response.status >= 200 && response.status <= 299) {
		if (attempt)
			log_info("kube: %s: %s %s done after %u attempts", job->what, job->method, url,
				 attempt + 1);
		kube_response_free(&response);
		return 0;
	}
	if (!err && (response.status == 404 || response.status == 409) && job->ok_if_gone) {
		log_info("kube: %s: %s %s: %s (gone or replaced meanwhile); nothing to do", job->what,
			 job->method, url, response.error);
		kube_response_free(&response);
		return 0;
	}
	if (kube_should_retry(err, response.status)) {
		/* Once per job at warning level; the retries themselves at debug. */
		if (!job->warned)
			log_warn("kube: %s: %s %s: %s; retrying with backoff", job->what, job->method, url,
				 response.error);
		job->warned = true;
		kube_response_free(&response);
		return KUBE_JOB_RETRY;
	}
	log_err("kube: %s: %s %s: %s; not retried", job->what, job->method, url, response.error);
	kube_response_free(&response);
	return err ? err : -EPROTO;
}

static const struct kube_job_ops request_job_ops = {
	.run = request_job_run,
	.release = request_job_release,
};

int kube_submit(struct kube_client *client, const struct kube_request_spec *spec)
{
	struct request_job *job = calloc(1, sizeof(*job));

	if (!job)
		return -ENOMEM;
	snprintf(job->method, sizeof(job->method), "%s", spec->method);
	job->path = strdup(spec->path);
	job->content_type = spec->content_type ? strdup(spec->content_type) : NULL;
	job->body = spec->body ? strdup(spec->body) : NULL;
	job->what = strdup(spec->what ? spec->what : spec->path);
	job->ok_if_gone = spec->ok_if_gone;
	if (!job->path || !job->what || (spec->content_type && !job->content_type) ||
	    (spec->body && !job->body)) {
		request_job_release(job);
		return -ENOMEM;
	}
	return kube_submit_job(client, &request_job_ops, job, job->what);
}

/* ---- tasks ----------------------------------------------------------------------------- */

struct kube_task *kube_task_add(struct kube_client *client, const struct kube_task_ops *ops, void *ctx)
{
	struct kube_task *task = calloc(1, sizeof(*task));

	if (!task) {
		if (ops->release)
			ops->release(ctx);
		return NULL;
	}
	task->client = client;
	task->ops = ops;
	task->ctx = ctx;
	task->woken = true;
	pthread_mutex_lock(&client->lock);
	task->next = client->tasks;
	client->tasks = task;
	pthread_cond_signal(&client->wake);
	pthread_mutex_unlock(&client->lock);
	return task;
}

static void task_wake(struct kube_task *task, bool first)
{
	struct kube_client *client = task->client;

	pthread_mutex_lock(&client->lock);
	task->woken = true;
	task->first |= first;
	pthread_cond_signal(&client->wake);
	pthread_mutex_unlock(&client->lock);
}

void kube_task_wake(struct kube_task *task)
{
	task_wake(task, false);
}

void kube_task_wake_first(struct kube_task *task)
{
	task_wake(task, true);
}

/* ---- streams: threads of their own ------------------------------------------------------- */

int kube_client_stream_begin(struct kube_client *client)
{
	int err = 0;

	pthread_mutex_lock(&client->lock);
	if (client->stop)
		err = -ESHUTDOWN;
	else
		client->streams++;
	pthread_mutex_unlock(&client->lock);
	return err;
}

void kube_client_stream_end(struct kube_client *client)
{
	pthread_mutex_lock(&client->lock);
	client->streams--;
	pthread_cond_broadcast(&client->idle);
	pthread_mutex_unlock(&client->lock);
}

bool kube_client_stopping(struct kube_client *client)
{
	bool stop;

	pthread_mutex_lock(&client->lock);
	stop = client->stop;
	pthread_mutex_unlock(&client->lock);
	return stop;
}
