// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "sys/clock.h"
#include "sys/log.h"
#include "sys/notify.h"

bool notify_enabled(void)
{
	const char *socket = getenv("NOTIFY_SOCKET");

	return socket && socket[0];
}

/* One failing notification is logged; repeats (every watchdog ping) are not. */
static int send_state(const char *state)
{
	static int last_logged_err;
	int ret;

	if (!notify_enabled())
		return 0;
	ret = sd_notify(0, state);
	if (ret < 0) {
		if (ret != last_logged_err)
			log_warn("sd_notify(%.*s): %s", (int)strcspn(state, "\n"), state, strerror(-ret));
		last_logged_err = ret;
		return ret;
	}
	last_logged_err = 0;
	return 0;
}

/* "PREFIX" + "STATUS=<fmt>"; a status with a newline would end the assignment early, so
 * newlines become spaces. */
static int send_with_status(const char *prefix, const char *fmt, va_list ap)
{
	char state[1024];
	int used;

	used = snprintf(state, sizeof(state), "%s", prefix);
	if (fmt) {
		used += snprintf(state + used, sizeof(state) - (size_t)used, "STATUS=");
		vsnprintf(state + used, sizeof(state) - (size_t)used, fmt, ap);
		for (char *p = state + used; *p; p++)
			if (*p == '\n')
				*p = ' ';
	}
	return send_state(state);
}

int notify_ready(const char *status_fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, status_fmt);
	ret = send_with_status("READY=1\n", status_fmt, ap);
	va_end(ap);
	return ret;
}

int notify_status(const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = send_with_status("", fmt, ap);
	va_end(ap);
	return ret;
}

int notify_watchdog(void)
{
	return send_state("WATCHDOG=1");
}

int notify_reloading(void)
{
	char state[96];

	snprintf(state, sizeof(state), "RELOADING=1\nMONOTONIC_USEC=%llu",
		 (unsigned long long)(clock_monotonic_ns() / 1000));
	return send_state(state);
}

int notify_stopping(void)
{
	return send_state("STOPPING=1");
}

int64_t notify_watchdog_interval_ns(void)
{
	uint64_t usec = 0;
	int ret;

	/* unset_environment=0: a re-exec after SIGHUP keeps the watchdog. */
	ret = sd_watchdog_enabled(0, &usec);
	if (ret < 0) {
		log_warn("sd_watchdog_enabled: %s; not pinging the watchdog", strerror(-ret));
		return 0;
	}
	if (ret == 0 || usec == 0)
		return 0;
	return (int64_t)(usec / 2) * 1000;
}
