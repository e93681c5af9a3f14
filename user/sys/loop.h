/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The event loop: one epoll set, fds and deadlines as sources, each with a callback and a
 * context. It knows nothing of the daemon; every part that waits for something (the action
 * executor, subprocesses, the API client, logind, the control socket) registers a source
 * and returns. A callback never blocks (doc/DESIGN.md, "The loop never waits").
 *
 * Sources may be added and removed from inside a callback; a removed source's pending event
 * in the same batch is dropped, and its memory is freed after the batch.
 */
#ifndef EVICTD_SYS_LOOP_H
#define EVICTD_SYS_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOOP_NO_DEADLINE INT64_MAX

struct loop;
struct loop_source;

typedef void (*loop_fd_fn)(void *ctx, int fd, uint32_t revents);
typedef void (*loop_timer_fn)(void *ctx);

int loop_new(struct loop **out);
/* Removes every source (closing the fds the loop owns) and frees the loop. NULL is fine. */
void loop_free(struct loop *loop);

/* Watch fd for events (EPOLLIN, EPOLLPRI, ...). owned: the loop closes fd when the source is
 * removed. Returns the source, or NULL with errno set (logged). */
struct loop_source *loop_add_fd(struct loop *loop, int fd, uint32_t events, bool owned,
				loop_fd_fn fn, void *ctx);
/* A one-shot timer at an absolute CLOCK_MONOTONIC deadline; LOOP_NO_DEADLINE = disarmed. */
struct loop_source *loop_add_timer(struct loop *loop, int64_t deadline_ns, loop_timer_fn fn,
				   void *ctx);
/* A timer every interval_ns, first after one interval. */
struct loop_source *loop_add_periodic(struct loop *loop, int64_t interval_ns, loop_timer_fn fn,
				      void *ctx);
/* Re-arm a timer source at an absolute deadline (LOOP_NO_DEADLINE disarms it). */
void loop_timer_set(struct loop_source *timer, int64_t deadline_ns);
/* Remove a source (NULL is fine); an owned fd is closed now. */
void loop_remove(struct loop *loop, struct loop_source *source);
/* Remove source and hand its fd to the caller, open (for closes that must not happen on the
 * loop: see psi_triggers_close). -1 if source is NULL or already removed. */
int loop_detach_fd(struct loop *loop, struct loop_source *source);
/* The source's fd (the timerfd for timers). */
int loop_source_fd(const struct loop_source *source);

/*
 * Wait for and dispatch one batch of events, then call after_batch(ctx) when given.
 * timeout_ms < 0 waits indefinitely. Returns the number of events dispatched (0 on timeout or
 * EINTR) or negative errno from epoll_wait.
 */
int loop_run_once(struct loop *loop, int timeout_ms, void (*after_batch)(void *ctx), void *ctx);

/* How long the longest iteration (dispatch of a batch plus after_batch) took, in ns, since
 * the loop was made; and the last one. The daemon exports them: a loop that stalls shows. */
int64_t loop_longest_iteration_ns(const struct loop *loop);
int64_t loop_last_iteration_ns(const struct loop *loop);
size_t loop_n_sources(const struct loop *loop);

#endif
