/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * org.evictd.Evictd1.Evicted on the system bus (doc/DESIGN.md §9, "Hooks and notifications"),
 * for desktop notifiers, as systemd-oomd emits org.freedesktop.oom1.Manager.Killed
 * (src/oom/oomd-util.c oomd_cgroup_kill). Path /org/evictd/Evictd1, signature "sssssx": kind
 * (evicted, warn), victim, cgroup, signal, threshold, observed. Never waits: the message is
 * queued with sd-bus and written as the bus fd, watched in the loop, allows; a bus that is
 * down is retried at the next emit. sd_bus_open_system honours DBUS_SYSTEM_BUS_ADDRESS (tests). tools/deploy/org.evictd.Evictd1.conf lets root send it.
 */
#ifndef EVICTD_SYS_DBUS_SIGNAL_H
#define EVICTD_SYS_DBUS_SIGNAL_H

#include <stdint.h>

struct loop;
struct dbus_signal;

#define DBUS_SIGNAL_PATH "/org/evictd/Evictd1"
#define DBUS_SIGNAL_INTERFACE "org.evictd.Evictd1"
#define DBUS_SIGNAL_MEMBER "Evicted"

/* bus_address NULL: the system bus. NULL on allocation failure. Connects at the first emit. */
struct dbus_signal *dbus_signal_new(struct loop *loop, const char *bus_address);
void dbus_signal_free(struct dbus_signal *dbus);
/* 0, or negative errno (logged once per failure streak). */
int dbus_signal_emit(struct dbus_signal *dbus, const char *kind, const char *victim, const char *cgroup,
		     const char *signal, const char *threshold, int64_t observed);

#endif
