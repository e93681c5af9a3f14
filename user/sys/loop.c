// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "sys/clock.h"
#include "sys/log.h"
#include "sys/loop.h"

#define LOOP_BATCH 32

struct loop_source {
	struct loop *loop;
	int fd;
	bool owned;
	bool is_timer;
	bool removed;		/* freed after the current batch */
	loop_fd_fn fd_fn;
	loop_timer_fn timer_fn;
	void *ctx;
	struct loop_source *prev, *next;	/* every live source */
	struct loop_source *next_dead;
};

struct loop {
	int epoll_fd;
	size_t n_sources;
	bool dispatching;
	struct loop_source *sources;	/* live */
	struct loop_source *dead;	/* removed during a batch */
	int64_t longest_ns;
	int64_t last_ns;
};

int loop_new(struct loop **out)
{
	struct loop *loop = calloc(1, sizeof(*loop));

	if (!loop)
		return -ENOMEM;
	loop->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epoll_fd < 0) {
		int err = -errno;

		log_err("epoll_create1: %m");
		free(loop);
		return err;
	}
	*out = loop;
	return 0;
}

static struct loop_source *add(struct loop *loop, int fd, uint32_t events, bool owned)
{
	struct loop_source *source = calloc(1, sizeof(*source));
	struct epoll_event event = { .events = events };

	if (!source) {
		errno = ENOMEM;
		return NULL;
	}
	*source = (struct loop_source){ .loop = loop, .fd = fd, .owned = owned };
	event.data.ptr = source;
	if (epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, fd, &event)) {
		int err = errno;

		log_err("event loop: epoll_ctl add fd %d: %m", fd);
		free(source);
		errno = err;
		return NULL;
	}
	loop->n_sources++;
	source->next = loop->sources;
	if (loop->sources)
		loop->sources->prev = source;
	loop->sources = source;
	return source;
}

struct loop_source *loop_add_fd(struct loop *loop, int fd, uint32_t events, bool owned,
				loop_fd_fn fn, void *ctx)
{
	struct loop_source *source = add(loop, fd, events, owned);

	if (source) {
		source->fd_fn = fn;
		source->ctx = ctx;
	}
	return source;
}

void loop_timer_set(struct loop_source *timer, int64_t deadline_ns)
{
	struct itimerspec spec = { 0 };

	if (!timer)
		return;
	if (deadline_ns != LOOP_NO_DEADLINE) {
		if (deadline_ns <= 0)
			deadline_ns = 1;	/* all zero would disarm it */
		spec.it_value.tv_sec = deadline_ns / 1000000000;
		spec.it_value.tv_nsec = deadline_ns % 1000000000;
	}
	if (timerfd_settime(timer->fd, TFD_TIMER_ABSTIME, &spec, NULL))
		log_warn("event loop: timerfd_settime: %m");
}

static struct loop_source *add_timerfd(struct loop *loop, loop_timer_fn fn, void *ctx)
{
	struct loop_source *source;
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);

	if (fd < 0) {
		log_err("event loop: timerfd_create: %m");
		return NULL;
	}
	source = add(loop, fd, EPOLLIN, true);
	if (!source) {
		close(fd);
		return NULL;
	}
	source->is_timer = true;
	source->timer_fn = fn;
	source->ctx = ctx;
	return source;
}

struct loop_source *loop_add_timer(struct loop *loop, int64_t deadline_ns, loop_timer_fn fn,
				   void *ctx)
{
	struct loop_source *source = add_timerfd(loop, fn, ctx);

	loop_timer_set(source, deadline_ns);
	return source;
}

struct loop_source *loop_add_periodic(struct loop *loop, int64_t interval_ns, loop_timer_fn fn,
				      void *ctx)
{
	struct loop_source *source = add_timerfd(loop, fn, ctx);
	struct itimerspec spec = {
		.it_interval = { interval_ns / 1000000000, interval_ns % 1000000000 },
		.it_value = { interval_ns / 1000000000, interval_ns % 1000000000 },
	};

	if (source && timerfd_settime(source->fd, 0, &spec, NULL)) {
		log_err("event loop: timerfd_settime: %m");
		loop_remove(loop, source);
		return NULL;
	}
	return source;
}

static void remove_source(struct loop *loop, struct loop_source *source, bool close_fd)
{
	epoll_ctl(loop->epoll_fd, EPOLL_CTL_DEL, source->fd, NULL);
	if (close_fd)
		close(source->fd);
	source->fd = -1;
	source->removed = true;
	loop->n_sources--;
	if (source->prev)
		source->prev->next = source->next;
	else
		loop->sources = source->next;
	if (source->next)
		source->next->prev = source->prev;
	if (loop->dispatching) {
		source->next_dead = loop->dead;
		loop->dead = source;
	} else {
		free(source);
	}
}

void loop_remove(struct loop *loop, struct loop_source *source)
{
	if (!source || source->removed)
		return;
	remove_source(loop, source, source->owned);
}

int loop_detach_fd(struct loop *loop, struct loop_source *source)
{
	int fd;

	if (!source || source->removed)
		return -1;
	fd = source->fd;
	remove_source(loop, source, false);
	return fd;
}

int loop_source_fd(const struct loop_source *source)
{
	return source ? source->fd : -1;
}

static void free_dead(struct loop *loop)
{
	while (loop->dead) {
		struct loop_source *next = loop->dead->next_dead;

		free(loop->dead);
		loop->dead = next;
	}
}

int loop_run_once(struct loop *loop, int timeout_ms, void (*after_batch)(void *ctx), void *ctx)
{
	struct epoll_event events[LOOP_BATCH];
	int64_t start, took;
	int n = epoll_wait(loop->epoll_fd, events, LOOP_BATCH, timeout_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	start = clock_monotonic_ns();
	loop->dispatching = true;
	for (int i = 0; i < n; i++) {
		struct loop_source *source = events[i].data.ptr;

		if (source->removed)
			continue;	/* removed by an earlier callback of this batch */
		if (source->is_timer) {
			uint64_t expirations;

			if (read(source->fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
				log_warn("event loop: timerfd read: %m");
			if (source->timer_fn)
				source->timer_fn(source->ctx);
		} else if (source->fd_fn) {
			source->fd_fn(source->ctx, source->fd, events[i].events);
		}
	}
	if (after_batch)
		after_batch(ctx);
	loop->dispatching = false;
	free_dead(loop);
	took = clock_monotonic_ns() - start;
	loop->last_ns = took;
	if (took > loop->longest_ns)
		loop->longest_ns = took;
	return n;
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

void loop_free(struct loop *loop)
{
	if (!loop)
		return;
	/* What is still registered goes now; owned fds are closed. */
	while (loop->sources)
		loop_remove(loop, loop->sources);
	free_dead(loop);
	close(loop->epoll_fd);
	free(loop);
}
