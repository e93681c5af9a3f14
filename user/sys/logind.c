// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * systemd-logind through sd-bus, the way the kubelet's nodeshutdown/systemd package uses it:
 *   org.freedesktop.login1.Manager.Inhibit("shutdown", who, why, "delay") -> an fd; logind
 *     delays a shutdown until every such fd is closed or InhibitDelayMaxUSec has passed;
 *   the InhibitDelayMaxUSec property; when smaller than needed, a logind.conf.d drop-in and
 *     SIGHUP to systemd-logind.service through systemd's KillUnit (logind re-reads its
 *     configuration on SIGHUP), then the property again;
 *   the PrepareForShutdown(b) signal: true = shutdown under way, false = cancelled.
 *
 * The bus fd changes on every reconnect, so it lives in an epoll set of our own together with
 * a timerfd for the bus's timeouts and the reconnect; the caller only ever sees that set's fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include "sys/clock.h"
#include "sys/fileio.h"
#include "sys/log.h"
#include "sys/logind.h"
#include "sys/logind_internal.h"

/* An error while (re)connecting: an error the first time, debug while it keeps failing. */
#define retry_err(l, ...) log_msg((l)->failures ? LOGLEVEL_DEBUG : LOGLEVEL_ERR, __VA_ARGS__)

uint64_t logind_now_usec(void)
{
	return (uint64_t)clock_monotonic_ns() / 1000;
}

static const char *bus_error_text(const sd_bus_error *error, int r, char *buf, size_t len)
{
	if (error && sd_bus_error_is_set(error))
		snprintf(buf, len, "%s: %s", error->name, error->message ? error->message : "");
	else
		snprintf(buf, len, "%s", strerror(-r));
	return buf;
}

/* ---- the drop-in ------------------------------------------------------------------------ */

int logind_write_dropin(const char *dir, int64_t delay_ns)
{
	char path[4096], text[256];
	int64_t seconds = delay_ns <= 0 ? 0 : (delay_ns + 999999999) / 1000000000;
	int len, err;

	if (snprintf(path, sizeof(path), "%s/%s", dir, LOGIND_DROPIN_NAME) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	err = fileio_mkdir_p(dir, 0755);
	if (err) {
		log_err("logind: creating %s: %s", dir, strerror(-err));
		return err;
	}
	len = snprintf(text, sizeof(text),
		       "# Written by evictd: graceful node shutdown needs logind to wait for it.\n"
		       "[Login]\nInhibitDelayMaxSec=%" PRId64 "\n", seconds);
	err = fileio_write_atomic(path, text, (size_t)len, 0644);
	if (err) {
		log_err("logind: writing %s: %s", path, strerror(-err));
		return err;
	}
	log_info("logind: wrote %s: InhibitDelayMaxSec=%" PRId64, path, seconds);
	return 0;
}

/* ---- bus calls ------------------------------------------------------------------------------ */


/* Send a method call; its reply, an error or the timeout goes to callback from
 * sd_bus_process(). Never waits: sd-bus queues what the socket does not take at once. */
int logind_call_async(struct logind *l, sd_bus_slot **slot, const char *destination, const char *path,
		      const char *interface, const char *member, sd_bus_message_handler_t callback,
		      const char *types, ...)
{
	sd_bus_message *m = NULL;
	va_list ap;
	int r;

	if (!l->bus)
		return -ENOTCONN;
	r = sd_bus_message_new_method_call(l->bus, &m, destination, path, interface, member);
	if (r >= 0 && types) {
		va_start(ap, types);
		r = sd_bus_message_appendv(m, types, ap);
		va_end(ap);
	}
	if (r >= 0)
		r = sd_bus_call_async(l->bus, slot, m, callback, l, l->call_timeout_usec);
	sd_bus_message_unref(m);
	return r;
}

/* The error of a reply (a timeout comes as org.freedesktop.DBus.Error.Timeout or NoReply):
 * NULL when it is a plain reply. */
const char *logind_reply_error(sd_bus_message *m, char *buf, size_t len)
{
	const sd_bus_error *error = sd_bus_message_get_error(m);

	if (!error)
		return NULL;
	return bus_error_text(error, -sd_bus_message_get_errno(m), buf, len);
}

static int64_t usec_to_ns(uint64_t usec)
{
	return usec > (uint64_t)INT64_MAX / 1000 ? INT64_MAX : (int64_t)usec * 1000;
}

static void delay_too_short(struct logind *l)
{
	l->delay_state = DELAY_IDLE;
	log_err("logind: InhibitDelayMaxUSec is still %.0f s, less than the %.0f s needed (did %s/%s "
		"take effect? a later logind.conf.d file may override it): a shutdown will only wait "
		"that long for the pods", (double)l->delay_max_ns / 1e9,
		(double)l->options.inhibit_delay_ns / 1e9, l->dropin_dir, LOGIND_DROPIN_NAME);
}

static int on_delay_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);

static int read_delay_max(struct logind *l)
{
	char text[512];
	int r;

	l->delay_slot = sd_bus_slot_unref(l->delay_slot);
	r = logind_call_async(l, &l->delay_slot, LOGIN1_SERVICE, LOGIN1_PATH, "org.freedesktop.DBus.Properties",
		       "Get", on_delay_reply, "ss", LOGIN1_MANAGER, "InhibitDelayMaxUSec");
	if (r < 0)
		log_err("logind: reading InhibitDelayMaxUSec: %s", bus_error_text(NULL, r, text, sizeof(text)));
	return r;
}

static int on_kill_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct logind *l = userdata;
	char text[512];
	const char *error = logind_reply_error(m, text, sizeof(text));

	l->delay_slot = sd_bus_slot_unref(l->delay_slot);
	if (error) {
		log_err("logind: KillUnit(%s, main, SIGHUP) to reload logind: %s", LOGIND_UNIT, error);
		delay_too_short(l);
		return 0;
	}
	l->recheck_tries = 0;
	l->recheck_at_usec = logind_now_usec() + RELOAD_CHECK_INTERVAL_USEC;
	l->delay_state = DELAY_WAIT_RECHECK;
	return 0;
}

/* SIGHUP to logind's main process through systemd, as the kubelet's ReloadLogindConf does:
 * logind re-reads logind.conf.d on SIGHUP, and systemd-logind.service has no ExecReload= (on
 * Debian 12's systemd 252), so ReloadUnit would be refused. */
static int reload_logind(struct logind *l)
{
	char text[512];
	int r;

	l->delay_slot = sd_bus_slot_unref(l->delay_slot);
	r = logind_call_async(l, &l->delay_slot, SYSTEMD1_SERVICE, SYSTEMD1_PATH, SYSTEMD1_MANAGER, "KillUnit",
		       on_kill_reply, "ssi", LOGIND_UNIT, "main", (int32_t)SIGHUP);
	if (r < 0)
		log_err("logind: KillUnit(%s, main, SIGHUP) to reload logind: %s", LOGIND_UNIT,
			bus_error_text(NULL, r, text, sizeof(text)));
	return r;
}

/* InhibitDelayMaxUSec >= what we need, raising it when not: read it; when too small write the
 * drop-in, reload logind, and read it again every 100 ms until it shows or 20 tries have
 * passed. Never fails the connection: a lock with a short delay still gives the pods that
 * long. */
static int on_delay_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct logind *l = userdata;
	int64_t need = l->options.inhibit_delay_ns;
	bool recheck = l->delay_state == DELAY_RECHECKING;
	char text[512];
	const char *error = logind_reply_error(m, text, sizeof(text));
	uint64_t usec;
	int r;

	l->delay_slot = sd_bus_slot_unref(l->delay_slot);
	if (error) {
		log_err("logind: reading InhibitDelayMaxUSec: %s", error);
		if (recheck)
			delay_too_short(l);
		l->delay_state = DELAY_IDLE;
		return 0;
	}
	r = sd_bus_message_read(m, "v", "t", &usec);
	if (r < 0) {
		log_err("logind: InhibitDelayMaxUSec: unexpected reply: %s", strerror(-r));
		l->delay_state = DELAY_IDLE;
		return 0;
	}
	l->delay_max_ns = usec_to_ns(usec);
	if (recheck) {
		if (l->delay_max_ns >= need) {
			log_info("logind: InhibitDelayMaxUSec is now %.0f s: the drop-in took effect",
				 (double)l->delay_max_ns / 1e9);
			l->delay_state = DELAY_IDLE;
		} else if (++l->recheck_tries >= RELOAD_CHECK_TRIES) {
			delay_too_short(l);
		} else {
			l->recheck_at_usec = logind_now_usec() + RELOAD_CHECK_INTERVAL_USEC;
			l->delay_state = DELAY_WAIT_RECHECK;
		}
		return 0;
	}
	if (l->delay_max_ns >= need) {
		log_info("logind: InhibitDelayMaxUSec is %.0f s, enough for the %.0f s needed",
			 (double)l->delay_max_ns / 1e9, (double)need / 1e9);
		l->delay_state = DELAY_IDLE;
		return 0;
	}
	log_info("logind: InhibitDelayMaxUSec is %.0f s, less than the %.0f s needed; raising it",
		 (double)l->delay_max_ns / 1e9, (double)need / 1e9);
	if (logind_write_dropin(l->dropin_dir, need) || reload_logind(l) < 0) {
		delay_too_short(l);
		return 0;
	}
	l->delay_state = DELAY_RELOADING;
	return 0;
}

/* Start the check unless one is under way. */
static void ensure_delay(struct logind *l)
{
	if (l->delay_state != DELAY_IDLE)
		return;
	if (read_delay_max(l) >= 0)
		l->delay_state = DELAY_READING;
}

/* Take the lock again in a second. */
static void schedule_relock(struct logind *l)
{
	if (!l->failures)
		log_info("logind: retrying every second");
	l->failures++;
	l->relock_pending = true;
	l->retry_at_usec = logind_now_usec() + LOGIND_RECONNECT_NS / 1000;
}

static int on_inhibit_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct logind *l = userdata;
	char text[512];
	const char *error = logind_reply_error(m, text, sizeof(text));
	int fd, new_fd, r;

	l->inhibit_slot = sd_bus_slot_unref(l->inhibit_slot);
	if (error) {
		retry_err(l, "logind: Inhibit(shutdown, delay): %s", error);
		schedule_relock(l);
		return 0;
	}
	if (l->shutting_down) {
		/* PrepareForShutdown(true) came while the call was in flight: a new delay lock
		 * would hold the shutdown up once more. The reply's fd closes with it. */
		log_info("logind: not keeping the new lock: a shutdown is under way");
		return 0;
	}
	r = sd_bus_message_read(m, "h", &fd);
	if (r < 0) {
		log_err("logind: Inhibit reply: %s", strerror(-r));
		schedule_relock(l);
		return 0;
	}
	/* The reply owns fd: keep a copy of our own. */
	new_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (new_fd < 0) {
		log_err("logind: dup of the inhibitor fd: %m");
		schedule_relock(l);
		return 0;
	}
	if (l->inhibit_fd >= 0)
		close(l->inhibit_fd);
	l->inhibit_fd = new_fd;
	l->failures = 0;
	log_info("logind: holding a delay inhibitor lock for shutdown (who=\"%s\")", l->who);
	ensure_delay(l);
	return 0;
}

/* Ask logind for a delay lock. replace: also when one is held, closing the old one only once
 * the new one is ours, so that there is no moment without a lock. The answer comes to
 * on_inhibit_reply(). */
static int take_lock(struct logind *l, bool replace)
{
	char text[512];
	int r;

	if (l->inhibit_fd >= 0 && !replace)
		return 0;
	if (l->inhibit_slot)
		return 0;	/* asked already */
	if (!l->bus)
		return -ENOTCONN;
	r = logind_call_async(l, &l->inhibit_slot, LOGIN1_SERVICE, LOGIN1_PATH, LOGIN1_MANAGER, "Inhibit",
		       on_inhibit_reply, "ssss", "shutdown", l->who, l->why, "delay");
	if (r < 0)
		retry_err(l, "logind: Inhibit(shutdown, delay): %s", bus_error_text(NULL, r, text, sizeof(text)));
	return r;
}

int logind_inhibit(struct logind *l)
{
	int r = take_lock(l, false);

	logind_rearm(l);
	return r;
}

int logind_release(struct logind *l)
{
	/* A lock asked for and not yet granted would take over: cancel it. */
	l->inhibit_slot = sd_bus_slot_unref(l->inhibit_slot);
	if (l->inhibit_fd < 0)
		return -ENOENT;
	close(l->inhibit_fd);
	l->inhibit_fd = -1;
	log_info("logind: released the shutdown inhibitor lock");
	return 0;
}

/* ---- signals ------------------------------------------------------------------------------ */

static int on_prepare_for_shutdown(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct logind *l = userdata;
	int start, r;

	r = sd_bus_message_read(m, "b", &start);
	if (r < 0) {
		log_err("logind: PrepareForShutdown: bad arguments: %s", strerror(-r));
		return 0;
	}
	log_info("logind: PrepareForShutdown(%s)%s", start ? "true" : "false",
		 start ? ": the node is shutting down" : ": the shutdown was cancelled");
	l->shutting_down = start;
	if (!start) {
		l->inhibit_pending = true;	/* "after which you may take the lock again" */
		logind_kind_reset(l);
	}
	if (l->options.prepare_for_shutdown)
		l->options.prepare_for_shutdown(l->options.ctx, start);
	return 0;
}

static int on_name_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct logind *l = userdata;
	const char *name, *old_owner, *new_owner;

	if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0 ||
	    strcmp(name, LOGIN1_SERVICE) != 0)
		return 0;
	if (!new_owner[0])
		log_warn("logind: %s left the bus (was %s); taking the lock again once it is back, "
			 "trying every second", LOGIN1_SERVICE, old_owner);
	else
		log_info("logind: %s is now %s; taking the lock again", LOGIN1_SERVICE, new_owner);
	/* Whatever the old logind held for us may be gone with it. */
	l->relock_pending = true;
	if (!l->retry_at_usec)
		l->retry_at_usec = logind_now_usec() + LOGIND_RECONNECT_NS / 1000;
	return 0;
}

/* ---- the connection --------------------------------------------------------------------------- */

/* Drop the connection (the lock fd stays: see struct logind). */
static void teardown(struct logind *l)
{
	l->pfs_slot = sd_bus_slot_unref(l->pfs_slot);
	l->pfs_meta_slot = sd_bus_slot_unref(l->pfs_meta_slot);
	l->jobs_slot = sd_bus_slot_unref(l->jobs_slot);
	l->owner_slot = sd_bus_slot_unref(l->owner_slot);
	l->inhibit_slot = sd_bus_slot_unref(l->inhibit_slot);
	l->delay_slot = sd_bus_slot_unref(l->delay_slot);
	l->delay_state = DELAY_IDLE;
	if (l->bus_fd >= 0) {
		epoll_ctl(l->epoll_fd, EPOLL_CTL_DEL, l->bus_fd, NULL);
		l->bus_fd = -1;
	}
	/* Not sd_bus_flush_close_unref(): a flush waits for the peer to read what is queued. */
	l->bus = sd_bus_close_unref(l->bus);
	l->relock_pending = false;
	l->inhibit_pending = false;
}

static void schedule_reconnect(struct logind *l)
{
	teardown(l);
	l->retry_at_usec = logind_now_usec() + LOGIND_RECONNECT_NS / 1000;
}

static int open_bus(struct logind *l)
{
	int r;

	if (!l->options.bus_address)
		return sd_bus_open_system(&l->bus);
	r = sd_bus_new(&l->bus);
	if (r < 0)
		return r;
	r = sd_bus_set_address(l->bus, l->options.bus_address);
	if (r >= 0)
		r = sd_bus_set_bus_client(l->bus, 1);
	if (r >= 0)
		r = sd_bus_start(l->bus);
	return r;
}

static int connect_bus(struct logind *l)
{
	struct epoll_event event = { .events = EPOLLIN };
	int r;

	l->retry_at_usec = 0;
	r = open_bus(l);
	if (r < 0) {
		retry_err(l, "logind: connecting to the %s bus: %s", l->options.bus_address ?
			  l->options.bus_address : "system", strerror(-r));
		goto fail;
	}
	sd_bus_set_description(l->bus, "evictd-logind");
	/* Subscribe before taking the lock so that no PrepareForShutdown goes unseen: the bus
	 * handles a connection's messages in order, so AddMatch is in effect before Inhibit is
	 * answered. Asynchronous: sd_bus_add_match() would wait for the bus's answer. A match
	 * that fails to install fails sd_bus_process(), and the connection is made again. */
	r = sd_bus_add_match_async(l->bus, &l->owner_slot,
				   "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
				   "interface='org.freedesktop.DBus',member='NameOwnerChanged',"
				   "arg0='" LOGIN1_SERVICE "'", on_name_owner_changed, NULL, l);
	if (r < 0) {
		retry_err(l, "logind: subscribing to NameOwnerChanged: %s", strerror(-r));
		goto fail;
	}
	r = sd_bus_match_signal_async(l->bus, &l->pfs_slot, LOGIN1_SERVICE, LOGIN1_PATH, LOGIN1_MANAGER,
				      "PrepareForShutdown", on_prepare_for_shutdown, NULL, l);
	if (r < 0) {
		retry_err(l, "logind: subscribing to PrepareForShutdown: %s", strerror(-r));
		goto fail;
	}
	r = logind_kind_subscribe(l);
	if (r < 0) {
		retry_err(l, "logind: subscribing to PrepareForShutdownWithMetadata: %s", strerror(-r));
		goto fail;
	}
	l->bus_fd = sd_bus_get_fd(l->bus);
	if (l->bus_fd < 0 || epoll_ctl(l->epoll_fd, EPOLL_CTL_ADD, l->bus_fd, &event)) {
		r = l->bus_fd < 0 ? l->bus_fd : -errno;
		log_err("logind: adding the bus fd to the event loop: %s", strerror(-r));
		l->bus_fd = -1;
		goto fail;
	}
	/* The delay check follows a granted lock (on_inhibit_reply). */
	if (!l->shutting_down) {
		r = take_lock(l, true);
		if (r < 0)
			goto fail;
	} else {
		ensure_delay(l);
	}
	log_info("logind: connected%s; %s", l->failures ? " after failing, retried every second" : "",
		 l->shutting_down ? "not taking the lock: a shutdown is under way" : "asking for the lock");
	return 0;
fail:
	if (!l->failures)
		log_info("logind: retrying every second (further failures are logged at debug level)");
	l->failures++;
	schedule_reconnect(l);
	return r;
}

/* Point the timer at the earliest of the bus's timeout and the reconnect, and the bus fd's
 * epoll events at what sd-bus waits for. */
void logind_rearm(struct logind *l)
{
	struct itimerspec spec = { 0 };
	uint64_t deadline = UINT64_MAX;

	if (l->bus && l->bus_fd >= 0) {
		struct epoll_event event = { .events = 0 };
		int events = sd_bus_get_events(l->bus);
		uint64_t bus_usec;

		if (events > 0) {
			event.events = (events & POLLIN ? EPOLLIN : 0) | (events & POLLOUT ? EPOLLOUT : 0);
			if (epoll_ctl(l->epoll_fd, EPOLL_CTL_MOD, l->bus_fd, &event))
				log_warn("logind: epoll_ctl on the bus fd: %m");
		}
		if (sd_bus_get_timeout(l->bus, &bus_usec) >= 0)
			deadline = bus_usec;
	}
	if (l->retry_at_usec && l->retry_at_usec < deadline)
		deadline = l->retry_at_usec;
	if (l->delay_state == DELAY_WAIT_RECHECK && l->recheck_at_usec < deadline)
		deadline = l->recheck_at_usec;
	if (l->jobs_at_usec && l->jobs_at_usec < deadline)
		deadline = l->jobs_at_usec;
	if (deadline == l->timer_at_usec)
		return;
	if (deadline != UINT64_MAX) {
		/* 0 = "now" for sd-bus, but it would disarm a timerfd. */
		uint64_t at = deadline ? deadline : 1;

		spec.it_value.tv_sec = (time_t)(at / 1000000);
		spec.it_value.tv_nsec = (long)(at % 1000000) * 1000;
	}
	if (timerfd_settime(l->timer_fd, TFD_TIMER_ABSTIME, &spec, NULL))
		log_warn("logind: timerfd_settime: %m");
	l->timer_at_usec = deadline;
}

/* logind came back (or changed): a new lock, then the delay check, as on a first connect. */
static void relock(struct logind *l)
{
	l->relock_pending = false;
	if (l->shutting_down)
		return;
	if (take_lock(l, true) < 0)
		schedule_relock(l);
}

int logind_process(struct logind *l)
{
	uint64_t expirations;
	int r;

	if (read(l->timer_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		log_warn("logind: timerfd read: %m");
	l->timer_at_usec = UINT64_MAX;	/* fired or not, rearm() decides afresh */

	if (l->retry_at_usec && logind_now_usec() >= l->retry_at_usec) {
		l->retry_at_usec = 0;
		if (!l->bus)
			connect_bus(l);
		else if (l->relock_pending)
			relock(l);
	}
	if (l->bus && l->delay_state == DELAY_WAIT_RECHECK && logind_now_usec() >= l->recheck_at_usec) {
		if (read_delay_max(l) < 0)
			delay_too_short(l);
		else
			l->delay_state = DELAY_RECHECKING;
	}
	logind_kind_process(l);
	while (l->bus) {
		r = sd_bus_process(l->bus, NULL);
		if (r < 0) {
			log_err("logind: the bus connection failed: %s; reconnecting in 1 s", strerror(-r));
			schedule_reconnect(l);
			break;
		}
		if (l->inhibit_pending) {
			l->inhibit_pending = false;
			if (!l->shutting_down && take_lock(l, false) < 0)
				schedule_relock(l);
		}
		if (r == 0)
			break;
	}
	logind_rearm(l);
	return 0;
}

int logind_open(struct logind **out, const struct logind_options *options)
{
	struct epoll_event event = { .events = EPOLLIN };
	struct logind *l;
	int err;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->options = *options;
	snprintf(l->who, sizeof(l->who), "%s", options->who ? options->who : "evictd");
	snprintf(l->why, sizeof(l->why), "%s", options->why ? options->why :
		 "evictd terminates pods gracefully before shutdown");
	snprintf(l->dropin_dir, sizeof(l->dropin_dir), "%s",
		 options->dropin_dir ? options->dropin_dir : LOGIND_DEFAULT_DROPIN_DIR);
	l->options.who = l->who;
	l->options.why = l->why;
	l->options.dropin_dir = l->dropin_dir;
	l->call_timeout_usec = (uint64_t)(options->call_timeout_ns > 0 ? options->call_timeout_ns :
					  LOGIND_DEFAULT_CALL_TIMEOUT_NS) / 1000;
	l->bus_fd = -1;
	l->inhibit_fd = -1;
	l->delay_max_ns = -1;
	l->timer_at_usec = UINT64_MAX;
	l->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	l->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (l->epoll_fd < 0 || l->timer_fd < 0 || epoll_ctl(l->epoll_fd, EPOLL_CTL_ADD, l->timer_fd, &event)) {
		err = -errno;
		log_err("logind: setting up the event fds: %m");
		if (l->epoll_fd >= 0)
			close(l->epoll_fd);
		if (l->timer_fd >= 0)
			close(l->timer_fd);
		free(l);
		return err;
	}
	connect_bus(l);
	logind_rearm(l);
	*out = l;
	return 0;
}

void logind_close(struct logind *l)
{
	if (!l)
		return;
	if (l->inhibit_fd >= 0)
		logind_release(l);
	teardown(l);
	close(l->timer_fd);
	close(l->epoll_fd);
	free(l);
}

int logind_fd(const struct logind *l)
{
	return l->epoll_fd;
}

uint32_t logind_events(const struct logind *l)
{
	return EPOLLIN;
}

uint64_t logind_timeout_usec(const struct logind *l)
{
	return l->timer_at_usec;
}

int64_t logind_timeout_ns(const struct logind *l)
{
	return l->timer_at_usec == UINT64_MAX || l->timer_at_usec > (uint64_t)INT64_MAX / 1000 ?
	       INT64_MAX : (int64_t)l->timer_at_usec * 1000;
}

bool logind_call_pending(const struct logind *l)
{
	return l->inhibit_slot || l->delay_slot;
}

bool logind_connected(const struct logind *l)
{
	return l->bus != NULL;
}

bool logind_holds_lock(const struct logind *l)
{
	return l->inhibit_fd >= 0;
}

int64_t logind_inhibit_delay_max_ns(const struct logind *l)
{
	return l->delay_max_ns;
}
