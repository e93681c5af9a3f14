/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Inside the logind module: shared by sys/logind.c (the connection, the lock, the delay) and
 * sys/logind_kind.c (what the shutdown is for), never included from outside them. */
#ifndef EVICTD_SYS_LOGIND_INTERNAL_H
#define EVICTD_SYS_LOGIND_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "sys/logind.h"

#define LOGIN1_SERVICE "org.freedesktop.login1"
#define LOGIN1_PATH "/org/freedesktop/login1"
#define LOGIN1_MANAGER "org.freedesktop.login1.Manager"
#define SYSTEMD1_SERVICE "org.freedesktop.systemd1"
#define SYSTEMD1_PATH "/org/freedesktop/systemd1"
#define SYSTEMD1_MANAGER "org.freedesktop.systemd1.Manager"
#define LOGIND_UNIT "systemd-logind.service"

/* logind re-reads its configuration asynchronously after SIGHUP: how often and how many times
 * to read InhibitDelayMaxUSec again to see the new value. Each read is an asynchronous call
 * started from a timer: nothing here waits. */
#define RELOAD_CHECK_TRIES 20
#define RELOAD_CHECK_INTERVAL_USEC 100000ull

/* Where the InhibitDelayMaxUSec check is. */
enum delay_check {
	DELAY_IDLE,		/* nothing under way */
	DELAY_READING,		/* Get(InhibitDelayMaxUSec) sent */
	DELAY_RELOADING,	/* KillUnit(SIGHUP) sent */
	DELAY_WAIT_RECHECK,	/* the next Get at recheck_at_usec */
	DELAY_RECHECKING,	/* Get sent after the reload */
};

struct logind {
	struct logind_options options;
	char who[64];
	char why[256];
	char dropin_dir[4096];

	int epoll_fd;
	int timer_fd;
	uint64_t call_timeout_usec;	/* every method call's reply timeout */
	sd_bus *bus;
	int bus_fd;			/* registered in epoll_fd; -1 = none */
	sd_bus_slot *pfs_slot;
	sd_bus_slot *pfs_meta_slot;	/* PrepareForShutdownWithMetadata (systemd >= 255) */
	sd_bus_slot *owner_slot;
	sd_bus_slot *jobs_slot;		/* systemd's ListJobs, asked after the release */
	/* Method calls in flight: their reply (or timeout) comes to a callback from
	 * sd_bus_process(). Unref'ing a slot cancels the call. */
	sd_bus_slot *inhibit_slot;
	sd_bus_slot *delay_slot;	/* the Get or KillUnit of the delay check */
	enum delay_check delay_state;
	unsigned int recheck_tries;
	uint64_t recheck_at_usec;	/* CLOCK_MONOTONIC, DELAY_WAIT_RECHECK only */
	/* The delay lock; -1 = not held. It is logind's FIFO, not part of the bus connection: it
	 * is kept across a reconnect and closed only once a new one is held. */
	int inhibit_fd;
	int64_t delay_max_ns;		/* InhibitDelayMaxUSec as last read; -1 = unknown */
	uint64_t retry_at_usec;		/* CLOCK_MONOTONIC: reconnect or relock; 0 = none */
	uint64_t timer_at_usec;		/* what timer_fd is armed for; UINT64_MAX = disarmed */

	/* Set inside sd-bus callbacks, acted on once sd_bus_process() has returned. */
	bool relock_pending;		/* logind changed: take a new lock at retry_at_usec */
	bool inhibit_pending;		/* PrepareForShutdown(false): take the lock again now */
	/* Failed attempts in a row: only the first is logged as an error, so that a node
	 * without logind does not get a line every second. */
	unsigned int failures;
	/* PrepareForShutdown(true) seen and not cancelled: never take the lock again then, as a
	 * new delay lock would hold the shutdown up once more. */
	bool shutting_down;
	/* What the shutdown is: from PrepareForShutdownWithMetadata, else from the job logind
	 * queued once the lock went (logind_query_shutdown_kind). */
	enum logind_shutdown_kind kind;
	uint64_t jobs_until_usec;	/* ListJobs is asked again until then; 0 = not asking */
	uint64_t jobs_at_usec;		/* the next ListJobs; 0 = none due */
	void (*kind_cb)(void *ctx, enum logind_shutdown_kind kind);
	void *kind_ctx;
};

/* logind.c */
uint64_t logind_now_usec(void);
/* A method call; its reply, error or timeout goes to callback from sd_bus_process(). */
int logind_call_async(struct logind *l, sd_bus_slot **slot, const char *destination, const char *path,
		      const char *interface, const char *member, sd_bus_message_handler_t callback,
		      const char *types, ...);
/* The error text of a reply, NULL for a plain reply. */
const char *logind_reply_error(sd_bus_message *m, char *buf, size_t len);
/* Re-arm the module's timer at its earliest deadline. */
void logind_rearm(struct logind *l);

/* logind_kind.c */
/* Subscribe to PrepareForShutdownWithMetadata on a new connection. 0 or negative errno. */
int logind_kind_subscribe(struct logind *l);
/* The next ListJobs when due (from logind_process). */
void logind_kind_process(struct logind *l);
/* PrepareForShutdown(false): the kind is forgotten, the query dropped. */
void logind_kind_reset(struct logind *l);

#endif
