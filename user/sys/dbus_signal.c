// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The Evicted D-Bus signal (dbus_signal.h). sd-bus as in sys/logind.c. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <systemd/sd-bus.h>

#include "sys/dbus_signal.h"
#include "sys/log.h"
#include "sys/loop.h"

struct dbus_signal {
	struct loop *loop;
	char *address;
	sd_bus *bus;
	struct loop_source *source;
	bool failing;
};

static void drop(struct dbus_signal *dbus)
{
	loop_remove(dbus->loop, dbus->source);
	dbus->source = NULL;
	dbus->bus = sd_bus_close_unref(dbus->bus);
}

/* Drive sd-bus without waiting: authentication, queued writes, replies to drop. */
static void on_bus(void *ctx, int fd, uint32_t revents)
{
	struct dbus_signal *dbus = ctx;
	int r;

	(void)fd;
	(void)revents;
	while ((r = sd_bus_process(dbus->bus, NULL)) > 0)
		;
	if (r < 0) {
		log_warn("dbus: the bus connection failed: %s; reconnecting at the next signal",
			 strerror(-r));
		drop(dbus);
	}
}

static int connect_bus(struct dbus_signal *dbus)
{
	int r;

	if (!dbus->address) {
		r = sd_bus_open_system(&dbus->bus);
	} else {
		r = sd_bus_new(&dbus->bus);
		if (r >= 0)
			r = sd_bus_set_address(dbus->bus, dbus->address);
		if (r >= 0)
			r = sd_bus_set_bus_client(dbus->bus, 1);
		if (r >= 0)
			r = sd_bus_start(dbus->bus);
	}
	if (r < 0)
		goto fail;
	sd_bus_set_description(dbus->bus, "evictd-notify");
	r = sd_bus_get_fd(dbus->bus);
	if (r < 0)
		goto fail;
	/* EPOLLIN drives authentication and every write after it (sd_bus_process). */
	dbus->source = loop_add_fd(dbus->loop, r, EPOLLIN, false, on_bus, dbus);
	if (!dbus->source) {
		r = -errno;
		goto fail;
	}
	return 0;
fail:
	dbus->bus = sd_bus_unref(dbus->bus);
	return r;
}

struct dbus_signal *dbus_signal_new(struct loop *loop, const char *bus_address)
{
	struct dbus_signal *dbus = calloc(1, sizeof(*dbus));

	if (!dbus)
		return NULL;
	dbus->loop = loop;
	if (bus_address && !(dbus->address = strdup(bus_address))) {
		free(dbus);
		return NULL;
	}
	return dbus;
}

void dbus_signal_free(struct dbus_signal *dbus)
{
	if (!dbus)
		return;
	if (dbus->bus)
		drop(dbus);
	free(dbus->address);
	free(dbus);
}

int dbus_signal_emit(struct dbus_signal *dbus, const char *kind, const char *victim, const char *cgroup,
		     const char *signal, const char *threshold, int64_t observed)
{
	int r = 0;

	if (!dbus)
		return -EINVAL;
	if (!dbus->bus)
		r = connect_bus(dbus);
	if (r >= 0)
		r = sd_bus_emit_signal(dbus->bus, DBUS_SIGNAL_PATH, DBUS_SIGNAL_INTERFACE, DBUS_SIGNAL_MEMBER,
				       "sssssx", kind, victim, cgroup, signal, threshold, observed);
	if (r >= 0) {
		/* Written now when the connection is up; else queued for on_bus. */
		on_bus(dbus, -1, 0);
		dbus->failing = false;
		return 0;
	}
	if (!dbus->failing)
		log_warn("dbus: emitting %s.%s on the %s bus: %s", DBUS_SIGNAL_INTERFACE, DBUS_SIGNAL_MEMBER,
			 dbus->address ? dbus->address : "system", strerror(-r));
	dbus->failing = true;
	if (dbus->bus)
		drop(dbus);
	return r;
}
