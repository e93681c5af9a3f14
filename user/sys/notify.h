/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * systemd service notifications (sd_notify(3)) for Type=notify units: READY=1, STATUS=,
 * WATCHDOG=1, RELOADING=1, STOPPING=1. Every call is a no-op returning 0 when the service
 * manager did not ask for notifications (NOTIFY_SOCKET unset), so callers need no checks.
 *
 * Daemon use:
 *	int64_t ping_ns = notify_watchdog_interval_ns();	// 0: no watchdog
 *	... arm a timerfd at ping_ns, call notify_watchdog() on each expiry ...
 *	notify_ready("watching %zu thresholds", n);		// once the loop is set up
 *	notify_reloading(); ... reload ...; notify_ready("reloaded");	// SIGHUP
 *	notify_stopping();					// SIGTERM
 */
#ifndef EVICTD_NOTIFY_H
#define EVICTD_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

/* true when NOTIFY_SOCKET is set: a service manager listens. */
bool notify_enabled(void);

/* READY=1 plus STATUS=<formatted text> (status may be NULL). 0, or negative errno (logged
 * once per kind of failure). */
int notify_ready(const char *status_fmt, ...) __attribute__((format(printf, 1, 2)));
/* STATUS=<formatted text>: what `systemctl status` shows under the unit. */
int notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* WATCHDOG=1: the loop is alive. */
int notify_watchdog(void);
/* RELOADING=1 with MONOTONIC_USEC (systemd >= 253 wants it; older ones ignore it). Send
 * notify_ready() when the reload is done. */
int notify_reloading(void);
/* STOPPING=1. */
int notify_stopping(void);

/*
 * How often to send WATCHDOG=1: half of WatchdogSec (sd_watchdog_enabled(3): WATCHDOG_USEC,
 * checked against WATCHDOG_PID), so one late ping is not fatal. 0 when no watchdog is
 * configured for this process.
 */
int64_t notify_watchdog_interval_ns(void);

#endif
