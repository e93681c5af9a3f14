// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The event loop (sys/loop.h): one epoll set; timers are timerfds in the same set. Sources are
 * heap-allocated and listed in the loop; a source removed while a batch is dispatched is
 * marked dead, its later events in the batch are skipped, and it is freed after the batch.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "sys/clock.h"
#include "sys/log.h"
#include "sys/loop.h"

#define LOOP_MAX_EVENTS 64

struct loop_source {
	struct loop *loop;
	struct loop_source *prev, *next;	/* live sources, or the dead list (next only) */
	int fd;
	bool owned;
	bool is_timer;
	bool dead;
	loop_fd_fn fd_fn;
	loop_timer_fn timer_fn;
	void *ctx;
};

struct loop {
	int epoll_fd;
	struct loop_source *sources;
	struct loop_source *dead;
	size_t n_sources;
	bool dispatching;
	int64_t longest_ns;
	int64_t last_ns;
};

int loop_new(struct loop **out)
{
	struct loop *loop = calloc(1, sizeof(*loop));
	int err;

	if (!loop)
		return -ENOMEM;
	loop->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epoll_fd < 0) {
		err = -errno;
		log_err("loop: epoll_create1: %m");
		free(loop);
		return err;
	}
	*out = loop;
	return 0;
}

static void free_dead(struct loop *loop)
{
	while (loop->dead) {
		struct loop_source *source = loop->dead;

		loop->dead = source->next;
		free(source);
	}
}

void loop_free(struct loop *loop)
{
	if (!loop)
		return;
	while (loop->sources)
		loop_remove(loop, loop->sources);
	free_dead(loop);
	close(loop->epoll_fd);
	free(loop);
}

static struct loop_source *add_source(struct loop *loop, int fd, uint32_t events, bool owned)
{
	struct epoll_event event = { .events = events };
	struct loop_source *source;

	source = calloc(1, sizeof(*source));
	if (!source) {
		errno = ENOMEM;
		log_err("loop: adding fd %d: %m", fd);
		return NULL;
	}
	source->loop = loop;
	source->fd = fd;
	source->owned = owned;
	event.data.ptr = source;
	if (epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, fd, &event)) {
		int err = errno;

		log_err("loop: epoll_ctl ADD fd %d: %m", fd);
		free(source);
		errno = err;
		return NULL;
	}
	source->next = loop->sources;
	if (loop->sources)
		loop->sources->prev = source;
	loop->sources = source;
	loop->n_sources++;
	return source;
}

struct loop_source *loop_add_fd(struct loop *loop, int fd, uint32_t events, bool owned,
				loop_fd_fn fn, void *ctx)
{
	struct loop_source *source;

	if (!loop || fd < 0 || !fn) {
		errno = EINVAL;
		return NULL;
	}
	source = add_source(loop, fd, events, owned);
	if (source) {
		source->fd_fn = fn;
		source->ctx = ctx;
	}
	return source;
}

static void arm(int fd, int64_t deadline_ns, int64_t interval_ns)
{
	struct itimerspec spec = { 0 };

	if (deadline_ns != LOOP_NO_DEADLINE) {
		/* An all-zero it_value disarms: a deadline at or before 0 means "now". */
		if (deadline_ns < 1)
			deadline_ns = 1;
		spec.it_value.tv_sec = deadline_ns / 1000000000;
		spec.it_value.tv_nsec = deadline_ns % 1000000000;
		spec.it_interval.tv_sec = interval_ns / 1000000000;
		spec.it_interval.tv_nsec = interval_ns % 1000000000;
	}
	if (timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, NULL))
		log_err("loop: timerfd_settime: %m");
}

static struct loop_source *add_timer(struct loop *loop, int64_t deadline_ns, int64_t interval_ns,
				     loop_timer_fn fn, void *ctx)
{
	struct loop_source *source;
	int fd, err;

	if (!loop || !fn) {
		errno = EINVAL;
		return NULL;
	}
	fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (fd < 0) {
		log_err("loop: timerfd_create: %m");
		return NULL;
	}
	source = add_source(loop, fd, EPOLLIN, true);
	if (!source) {
		err = errno;
		close(fd);
		errno = err;
		return NULL;
	}
	source->is_timer = true;
	source->timer_fn = fn;
	source->ctx = ctx;
	arm(fd, deadline_ns, interval_ns);
	return source;
}

struct loop_source *loop_add_timer(struct loop *loop, int64_t deadline_ns, loop_timer_fn fn,
				   void *ctx)
{
	return add_timer(loop, deadline_ns, 0, fn, ctx);
}

struct loop_source *loop_add_periodic(struct loop *loop, int64_t interval_ns, loop_timer_fn fn,
				      void *ctx)
{
	if (interval_ns <= 0) {
		errno = EINVAL;
		return NULL;
	}
	return add_timer(loop, clock_monotonic_ns() + interval_ns, interval_ns, fn, ctx);
}

void loop_timer_set(struct loop_source *timer, int64_t deadline_ns)
{
	if (!timer || !timer->is_timer || timer->dead)
		return;
	arm(timer->fd, deadline_ns, 0);
}

void loop_remove(struct loop *loop, struct loop_source *source)
{
	if (!loop || !source || source->dead)
		return;
	/* A fd the caller closed already is gone from the set: EBADF is fine. */
	epoll_ctl(loop->epoll_fd, EPOLL_CTL_DEL, source->fd, NULL);
	if (source->owned)
		close(source->fd);
	source->fd = -1;
	source->dead = true;
	if (source->prev)
		source->prev->next = source->next;
	else
		loop->sources = source->next;
	if (source->next)
		source->next->prev = source->prev;
	loop->n_sources--;
	if (loop->dispatching) {
		/* The batch may still hold a pointer to it. */
		source->next = loop->dead;
		loop->dead = source;
	} else {
		free(source);
	}
}

int loop_source_fd(const struct loop_source *source)
{
	return source ? source->fd : -1;
}

int loop_run_once(struct loop *loop, int timeout_ms, void (*after_batch)(void *ctx), void *ctx)
{
	struct epoll_event events[LOOP_MAX_EVENTS];
	int64_t start, took;
	int n, dispatched = 0;

	n = epoll_wait(loop->epoll_fd, events, LOOP_MAX_EVENTS, timeout_ms);
	if (n < 0) {
		if (errno == EINTR)
			return 0;
		n = -errno;
		log_err("loop: epoll_wait: %m");
		return n;
	}
	start = clock_monotonic_ns();
	loop->dispatching = true;
	for (int i = 0; i < n; i++) {
		struct loop_source *source = events[i].data.ptr;

		if (source->dead)
			continue;
		if (source->is_timer) {
			uint64_t expirations;

			/* Nothing to read: re-armed meanwhile; not due. */
			if (read(source->fd, &expirations, sizeof(expirations)) != sizeof(expirations))
				continue;
			source->timer_fn(source->ctx);
		} else {
			source->fd_fn(source->ctx, source->fd, events[i].events);
		}
		dispatched++;
	}
	if (after_batch)
		after_batch(ctx);
	loop->dispatching = false;
	free_dead(loop);
	took = clock_monotonic_ns() - start;
	loop->last_ns = took;
	if (took > loop->longest_ns)
		loop->longest_ns = took;
	return dispatched;
}

int64_t loop_longest_iteration_ns(const struct loop *loop)
{
	return loop ? loop->longest_ns : 0;
}

int64_t loop_last_iteration_ns(const struct loop *loop)
{
	return loop ? loop->last_ns : 0;
}

size_t loop_n_sources(const struct loop *loop)
{
	return loop ? loop->n_sources : 0;
}
