// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What a shutdown is for (logind.h): PrepareForShutdownWithMetadata (systemd >= 255), else the
 * job logind queues once the lock is released (systemd's ListJobs); and the names systemd
 * gives them. */
#include <errno.h>
#include <string.h>

#include "sys/log.h"
#include "sys/logind_internal.h"

enum logind_shutdown_kind logind_kind_from_type(const char *type)
{
	if (!type)
		return LOGIND_SHUTDOWN_UNKNOWN;
	/* systemd's handle_action_to_string(): "poweroff", "halt", "reboot", "kexec",
	 * "soft-reboot" (and the spellings of the matching targets). */
	if (!strcmp(type, "poweroff") || !strcmp(type, "power-off") || !strcmp(type, "halt"))
		return LOGIND_SHUTDOWN_POWEROFF;
	if (!strcmp(type, "reboot") || !strcmp(type, "kexec") || !strcmp(type, "soft-reboot"))
		return LOGIND_SHUTDOWN_REBOOT;
	return LOGIND_SHUTDOWN_UNKNOWN;
}

enum logind_shutdown_kind logind_kind_from_unit(const char *unit)
{
	/* The targets logind's execute_shutdown_or_sleep starts (handle_action_to_unit). */
	if (!unit)
		return LOGIND_SHUTDOWN_UNKNOWN;
	if (!strcmp(unit, "poweroff.target") || !strcmp(unit, "halt.target"))
		return LOGIND_SHUTDOWN_POWEROFF;
	if (!strcmp(unit, "reboot.target") || !strcmp(unit, "kexec.target") || !strcmp(unit, "soft-reboot.target"))
		return LOGIND_SHUTDOWN_REBOOT;
	return LOGIND_SHUTDOWN_UNKNOWN;
}

const char *logind_kind_name(enum logind_shutdown_kind kind)
{
	switch (kind) {
	case LOGIND_SHUTDOWN_POWEROFF: return "power-off";
	case LOGIND_SHUTDOWN_REBOOT: return "reboot";
	case LOGIND_SHUTDOWN_UNKNOWN: break;
	}
	return "unknown";
}

/* systemd >= 255: PrepareForShutdownWithMetadata(b active, a{sv} metadata), metadata "type"
 * the action (logind-dbus.c send_prepare_for). It follows the plain signal. */
static int on_prepare_for_shutdown_metadata(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct logind *l = userdata;
	const char *type = NULL;
	int start, r;

	r = sd_bus_message_read(m, "b", &start);
	if (r >= 0)
		r = sd_bus_message_enter_container(m, 'a', "{sv}");
	while (r > 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
		const char *key;

		r = sd_bus_message_read(m, "s", &key);
		if (r >= 0 && !strcmp(key, "type"))
			r = sd_bus_message_read(m, "v", "s", &type);
		else if (r >= 0)
			r = sd_bus_message_skip(m, "v");
		if (r >= 0)
			r = sd_bus_message_exit_container(m);
		if (r >= 0)
			r = 1;
	}
	if (r < 0) {
		log_err("logind: PrepareForShutdownWithMetadata: bad arguments: %s", strerror(-r));
		return 0;
	}
	l->kind = start ? logind_kind_from_type(type) : LOGIND_SHUTDOWN_UNKNOWN;
	if (start)
		log_info("logind: the shutdown is a %s (type \"%s\")", logind_kind_name(l->kind), type ? type : "");
	return 0;
}

static int on_jobs_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct logind *l = userdata;
	enum logind_shutdown_kind kind = LOGIND_SHUTDOWN_UNKNOWN;
	char text[512];
	const char *unit, *type;
	int r;

	l->jobs_slot = sd_bus_slot_unref(l->jobs_slot);
	if (logind_reply_error(m, text, sizeof(text))) {
		log_warn("logind: systemd ListJobs: %s", text);
	} else {
		r = sd_bus_message_enter_container(m, 'a', "(usssoo)");
		while (r > 0 && kind == LOGIND_SHUTDOWN_UNKNOWN &&
		       (r = sd_bus_message_read(m, "(usssoo)", NULL, &unit, &type, NULL, NULL, NULL)) > 0)
			if (!strcmp(type, "start"))
				kind = logind_kind_from_unit(unit);
		if (r < 0)
			log_warn("logind: systemd ListJobs: bad reply: %s", strerror(-r));
	}
	if (kind != LOGIND_SHUTDOWN_UNKNOWN || logind_now_usec() >= l->jobs_until_usec) {
		l->jobs_until_usec = l->jobs_at_usec = 0;
		if (kind != LOGIND_SHUTDOWN_UNKNOWN)
			log_info("logind: systemd has a %s job queued: the shutdown is a %s",
				 kind == LOGIND_SHUTDOWN_POWEROFF ? "power-off/halt" : "reboot", logind_kind_name(kind));
		else
			log_warn("logind: no power-off, halt or reboot job queued in systemd; the kind of "
				 "shutdown stays unknown");
		l->kind = kind;
		if (l->kind_cb)
			l->kind_cb(l->kind_ctx, kind);
		return 0;
	}
	l->jobs_at_usec = logind_now_usec() + LOGIND_JOBS_POLL_NS / 1000;
	return 0;
}

static void ask_jobs(struct logind *l)
{
	int r;

	l->jobs_at_usec = 0;
	r = logind_call_async(l, &l->jobs_slot, SYSTEMD1_SERVICE, SYSTEMD1_PATH,
		       SYSTEMD1_MANAGER, "ListJobs", on_jobs_reply, NULL);
	if (r < 0) {
		log_warn("logind: asking systemd for its jobs: %s", strerror(-r));
		l->jobs_at_usec = logind_now_usec() + LOGIND_JOBS_POLL_NS / 1000;
	}
}

enum logind_shutdown_kind logind_shutdown_kind(const struct logind *l)
{
	return l->kind;
}

int logind_query_shutdown_kind(struct logind *l, int64_t timeout_ns,
			       void (*cb)(void *ctx, enum logind_shutdown_kind kind), void *ctx)
{
	l->kind_cb = cb;
	l->kind_ctx = ctx;
	l->jobs_until_usec = logind_now_usec() + (uint64_t)timeout_ns / 1000;
	ask_jobs(l);
	logind_rearm(l);
	return 0;
}

int logind_kind_subscribe(struct logind *l)
{
	/* systemd >= 255 says which shutdown it is; an older logind never sends it. */
	return sd_bus_match_signal_async(l->bus, &l->pfs_meta_slot, LOGIN1_SERVICE, LOGIN1_PATH, LOGIN1_MANAGER,
					 "PrepareForShutdownWithMetadata", on_prepare_for_shutdown_metadata, NULL, l);
}

void logind_kind_process(struct logind *l)
{
	if (l->bus && l->jobs_at_usec && logind_now_usec() >= l->jobs_at_usec)
		ask_jobs(l);
}

void logind_kind_reset(struct logind *l)
{
	l->kind = LOGIND_SHUTDOWN_UNKNOWN;
	l->jobs_until_usec = l->jobs_at_usec = 0;
}
