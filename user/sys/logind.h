/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * systemd-logind over sd-bus for graceful node shutdown (DESIGN.md §7): a "delay" inhibitor lock
 * for "shutdown", InhibitDelayMaxUSec raised through a logind.conf.d drop-in when it is too
 * small, PrepareForShutdown delivered to a callback, and a reconnect every second when the
 * bus or logind goes away. Every sd-bus call of evictd is in logind.c and logind_kind.c.
 *
 * Nothing here waits for logind or systemd: every method call (Inhibit, the
 * InhibitDelayMaxUSec reads, KillUnit, AddMatch) is sent asynchronously with a reply timeout
 * (call_timeout_ns, 5 s by default, instead of sd-bus's 25 s), and its reply, error or
 * timeout is handled in a callback from logind_process(). A logind that never answers costs
 * a timeout and a retry a second later, never a stalled loop.
 *
 * Event loop: logind_fd() is one stable fd (an epoll set of the bus fd, with the poll events
 * sd_bus_get_events() asks for, and a timerfd at sd_bus_get_timeout() and our own retry and
 * re-check deadlines) that stays the same across reconnects; when it is readable (EPOLLIN),
 * call logind_process(). Register it borrowed with EPOLLIN (logind_events()); no timer is
 * needed on the caller's side. logind_timeout_ns() is there for a caller that wants to see
 * the next deadline.
 */
#ifndef EVICTD_LOGIND_H
#define EVICTD_LOGIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOGIND_DEFAULT_DROPIN_DIR "/etc/systemd/logind.conf.d"
#define LOGIND_DROPIN_NAME "99-evictd.conf"
#define LOGIND_RECONNECT_NS 1000000000ll
/* How long a method call may go unanswered (sd-bus's own default is 25 s). */
#define LOGIND_DEFAULT_CALL_TIMEOUT_NS 5000000000ll

struct logind_options {
	/* What logind must wait for: the plan's total (InhibitDelayMaxUSec >= this). */
	int64_t inhibit_delay_ns;
	/* Where the drop-in goes when logind's delay is too small; NULL = the default. */
	const char *dropin_dir;
	const char *who;	/* NULL = "evictd" */
	const char *why;	/* NULL = "evictd terminates pods gracefully before shutdown" */
	/* NULL = the system bus; else a D-Bus address (tests, a private bus). */
	const char *bus_address;
	/* A method call's reply timeout; 0 = LOGIND_DEFAULT_CALL_TIMEOUT_NS. */
	int64_t call_timeout_ns;
	/* PrepareForShutdown(start). Called from logind_process(). On start == false (shutdown
	 * cancelled) the lock is taken again by this module, right after the callback returns. */
	void (*prepare_for_shutdown)(void *ctx, bool start);
	void *ctx;
};

/* What a shutdown is for: the node goes away (power-off, halt) or comes back (reboot, kexec,
 * soft-reboot). Only a power-off or halt may take the out-of-service taint. */
enum logind_shutdown_kind {
	LOGIND_SHUTDOWN_UNKNOWN,
	LOGIND_SHUTDOWN_POWEROFF,
	LOGIND_SHUTDOWN_REBOOT,
};
/* How often ListJobs is asked while waiting for logind's job. */
#define LOGIND_JOBS_POLL_NS 100000000ll

struct logind;

/*
 * Set up and start the first connection at once: subscribe to PrepareForShutdown and to
 * login1's NameOwnerChanged and ask for the lock; once it is granted (from logind_process()),
 * check InhibitDelayMaxUSec (write the drop-in, reload logind, re-read and say whether it took
 * effect). Returns without waiting for any answer. A failed connection or call is logged and
 * retried every second from logind_process(); only resource errors fail (-ENOMEM, or the
 * epoll/timerfd errno).
 */
int logind_open(struct logind **out, const struct logind_options *options);
/* Releases the lock and closes the connection. */
void logind_close(struct logind *logind);

int logind_fd(const struct logind *logind);
uint32_t logind_events(const struct logind *logind);	/* always EPOLLIN for logind_fd() */
/* The next internal deadline, CLOCK_MONOTONIC µs; UINT64_MAX = none. */
uint64_t logind_timeout_usec(const struct logind *logind);
/* The same in ns; INT64_MAX = none. logind_fd() already becomes readable then. */
int64_t logind_timeout_ns(const struct logind *logind);
/* Dispatch bus messages and timers; reconnect or take the lock again when due. Failures are
 * logged and retried every second, so this returns 0. */
int logind_process(struct logind *logind);

/* Ask for the delay lock (no-op when held or asked for already); logind_holds_lock() once the
 * answer has come through logind_process(). Never waits. 0, or negative errno when the call
 * could not be sent (-ENOTCONN: no bus now; logged). */
int logind_inhibit(struct logind *logind);
/* Close the inhibitor fd: logind goes on with the shutdown. A lock asked for and not granted
 * yet is cancelled. Never waits. 0, or -ENOENT when none was held. */
int logind_release(struct logind *logind);
/*
 * The kind of the shutdown under way. systemd >= 255: from PrepareForShutdownWithMetadata's
 * "type", known as soon as the shutdown starts. Older systemd (Debian 12 has 252) says nothing
 * until the lock is released; then logind starts poweroff.target, halt.target or reboot.target
 * (logind-dbus.c execute_shutdown_or_sleep, StartUnit "replace-irreversibly"):
 * logind_query_shutdown_kind() asks systemd's ListJobs every LOGIND_JOBS_POLL_NS until such a
 * start job is queued or timeout_ns has passed, and calls cb(ctx, kind) once from
 * logind_process() (UNKNOWN on the timeout). Never waits.
 */
enum logind_shutdown_kind logind_shutdown_kind(const struct logind *logind);
int logind_query_shutdown_kind(struct logind *logind, int64_t timeout_ns,
			       void (*cb)(void *ctx, enum logind_shutdown_kind kind), void *ctx);
/* The mappings (pure): a PrepareForShutdownWithMetadata type, a systemd target. */
enum logind_shutdown_kind logind_kind_from_type(const char *type);
enum logind_shutdown_kind logind_kind_from_unit(const char *unit);
const char *logind_kind_name(enum logind_shutdown_kind kind);
/* A method call is waiting for its answer (tests, status). */
bool logind_call_pending(const struct logind *logind);

bool logind_connected(const struct logind *logind);
bool logind_holds_lock(const struct logind *logind);
/* InhibitDelayMaxUSec as last read, in ns; -1 = not read yet. */
int64_t logind_inhibit_delay_max_ns(const struct logind *logind);

/* The drop-in: "[Login]\nInhibitDelayMaxSec=N\n" with N = delay rounded up to whole seconds,
 * written atomically as dir/LOGIND_DROPIN_NAME (dir created when missing). 0 or negative errno
 * (logged with the path). */
int logind_write_dropin(const char *dir, int64_t delay_ns);

#endif
