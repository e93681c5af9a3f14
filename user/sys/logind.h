/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * systemd-logind over sd-bus for graceful node shutdown (DESIGN.md §7): a "delay" inhibitor lock
 * for "shutdown", InhibitDelayMaxUSec raised through a logind.conf.d drop-in when it is too
 * small, PrepareForShutdown delivered to a callback, and a reconnect every second when the
 * bus or logind goes away. Every sd-bus call of evictd is in logind.c.
 *
 * Event loop: logind_fd() is one stable fd (an epoll set of the bus fd and a timer) that
 * stays the same across reconnects; when it is readable (EPOLLIN), call logind_process().
 * No timeout has to be handled by the caller: the bus's timeouts and the reconnect timer are
 * inside. logind_events() and logind_timeout_usec() are there for a caller that wants to poll
 * the bus itself.
 */
#ifndef EVICTD_LOGIND_H
#define EVICTD_LOGIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOGIND_DEFAULT_DROPIN_DIR "/etc/systemd/logind.conf.d"
#define LOGIND_DROPIN_NAME "99-evictd.conf"
#define LOGIND_RECONNECT_NS 1000000000ll

struct logind_options {
	/* What logind must wait for: the plan's total (InhibitDelayMaxUSec >= this). */
	int64_t inhibit_delay_ns;
	/* Where the drop-in goes when logind's delay is too small; NULL = the default. */
	const char *dropin_dir;
	const char *who;	/* NULL = "evictd" */
	const char *why;	/* NULL = "evictd terminates pods gracefully before shutdown" */
	/* NULL = the system bus; else a D-Bus address (tests, a private bus). */
	const char *bus_address;
	/* PrepareForShutdown(start). Called from logind_process(). On start == false (shutdown
	 * cancelled) the lock is taken again by this module, right after the callback returns. */
	void (*prepare_for_shutdown)(void *ctx, bool start);
	void *ctx;
};

struct logind;

/*
 * Set up and try the first connection at once: subscribe to PrepareForShutdown and to
 * login1's NameOwnerChanged, take the lock, then check InhibitDelayMaxUSec (write the drop-in,
 * reload logind, re-read and say whether it took effect). A failed first connection is logged
 * and retried every second from logind_process(); only resource errors fail (-ENOMEM, or the
 * epoll/timerfd errno).
 */
int logind_open(struct logind **out, const struct logind_options *options);
/* Releases the lock and closes the connection. */
void logind_close(struct logind *logind);

int logind_fd(const struct logind *logind);
uint32_t logind_events(const struct logind *logind);	/* always EPOLLIN for logind_fd() */
/* The next internal deadline, CLOCK_MONOTONIC µs; UINT64_MAX = none. */
uint64_t logind_timeout_usec(const struct logind *logind);
/* Dispatch bus messages and timers; reconnect or take the lock again when due. Failures are
 * logged and retried every second, so this returns 0. */
int logind_process(struct logind *logind);

/* Take the delay lock now (no-op when held). 0 or negative errno (logged with the bus error). */
int logind_inhibit(struct logind *logind);
/* Close the inhibitor fd: logind goes on with the shutdown. 0, or -ENOENT when none was held. */
int logind_release(struct logind *logind);

bool logind_connected(const struct logind *logind);
bool logind_holds_lock(const struct logind *logind);
/* InhibitDelayMaxUSec as last read, in ns; -1 = not read yet. */
int64_t logind_inhibit_delay_max_ns(const struct logind *logind);

/* The drop-in: "[Login]\nInhibitDelayMaxSec=N\n" with N = delay rounded up to whole seconds,
 * written atomically as dir/LOGIND_DROPIN_NAME (dir created when missing). 0 or negative errno
 * (logged with the path). */
int logind_write_dropin(const char *dir, int64_t delay_ns);

#endif
