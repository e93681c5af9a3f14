/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The control socket `evictctl` talks to: a local UNIX stream socket (default
 * CONTROL_DEFAULT_SOCKET, mode 0600 in a 0755 directory) served from the daemon's own event
 * loop, never blocking it. Protocol: the client sends one request line, the daemon answers
 * with one JSON line and closes the connection.
 *
 * Requests: {"command":"status"} | {"command":"pods"} | {"command":"pods","signal":"nodefs.available"}
 *           | {"command":"events"}; a bare word line ("status\n") works too, for socat.
 * Replies:  {"ok":true,"command":"status",...} or {"ok":false,"error":"..."}.
 *
 * The module keeps no copy of the daemon's state: for each request it asks the daemon for
 * a view (control_view_fn) of const pointers and renders the reply at once, before the
 * daemon runs again.
 *
 * Daemon use:
 *	control_open(&ctl, &(struct control_options){ .path = ..., .view = fill_view, .ctx = d });
 *	epoll_ctl(ep, EPOLL_CTL_ADD, control_fd(ctl), EPOLLIN);
 *	... on EPOLLIN for control_fd(ctl): control_handle_ready(ctl);
 *	control_close(ctl);					// removes the socket file
 */
#ifndef EVICTD_CONTROL_H
#define EVICTD_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "ops/eventlog.h"
#include "ops/metrics.h"
#include "core/rank.h"
#include "ops/report.h"
#include "signals/signals.h"
#include "core/thresholds.h"
#include "sys/loop.h"

#define CONTROL_DEFAULT_SOCKET "/run/evictd/evictd.sock"
/* Open connections at once; the oldest is dropped to make room. */
#define CONTROL_MAX_CLIENTS 16
/* A request must arrive within this, and its reply be taken, from the connection's accept. */
#define CONTROL_CLIENT_TIMEOUT_NS (5ll * 1000000000)
#define CONTROL_MAX_REQUEST 4096

enum control_command {
	CONTROL_STATUS,
	CONTROL_PODS,
	CONTROL_EVENTS,
};

struct control_bpf_state {
	bool enabled;
	unsigned int programs_attached;
	const char *pin_dir;		/* NULL: not pinned */
	const char *reason;		/* why BPF is off (NULL when enabled) */
};

/* What the daemon shows for one request. Every pointer must stay valid until the callback
 * is called again: in particular do not pods_refresh() inside the callback, which frees
 * the pods decision->victim points to (pods_refresh_usage() is fine). */
struct control_view {
	const struct evictd_config *config;
	const struct eviction_engine *engine;
	const struct observations *obs;
	const struct evaluation *eval;
	const struct decision *decision;
	/* The pods or workloads evictd may evict, in any order (control ranks its own copy).
	 * pods == NULL: no cgroup tree (deciding and reporting only). */
	struct pod *const *pods;
	size_t n_pods;
	const struct rank_options *rank_options;
	const struct eventlog *eventlog;	/* NULL: no events */
	struct control_bpf_state bpf;
	bool cgroup_tree;		/* a cgroup v2 tree to evict from was found */
	const char *mode;		/* "kubernetes" or "standalone" */
	const char *node_name;		/* may be NULL */
	int64_t uptime_ns;
	uint64_t evaluations;
	int64_t last_evaluation_unix_ns;	/* 0: none yet */
	uint64_t evictions;		/* pods killed */
	uint64_t evictions_failed;
	uint64_t evictions_stale;	/* refused: not the cgroup that was ranked */
	int64_t loop_iteration_max_ns;	/* the event loop's longest iteration */
	uint64_t actions_in_flight;	/* kills under way */
	const struct metrics_can_evict *can_evict;	/* NULL: not checked */
};

/* Fill *view for command (zeroed beforehand). Return 0, or negative errno to answer
 * {"ok":false} with that error. */
typedef int (*control_view_fn)(void *ctx, enum control_command command, struct control_view *view);

struct control_options {
	const char *path;		/* NULL or "": CONTROL_DEFAULT_SOCKET */
	control_view_fn view;
	void *ctx;
	const char *version;		/* reported by status */
	/* Each connection's deadline is a timer on this loop, so a client that stalls is closed
	 * when its time is up, not when the next one arrives. NULL: checked only when
	 * control_handle_ready runs (tests without a loop). */
	struct loop *loop;
	/* Now on CLOCK_MONOTONIC, in ns (NULL: the real one); tests shift it. */
	int64_t (*now_ns)(void);
};

struct control;

/* "can_evict" (true/false; absent when not checked) and "cannot_evict"/"degraded" arrays of
 * {"reason", "text"} on obj: the status reply and --once's JSON. doc/DESIGN.md "Cannot act". */
void control_json_can_evict(struct json_object *obj, const struct metrics_can_evict *state);

/*
 * Create the socket (and its directory, 0755, when missing). A socket file left by a dead
 * daemon is replaced; a live one (something accepts on it) gives -EADDRINUSE, and a
 * non-socket file at the path -EEXIST, so nothing that is not ours is removed. Errors are
 * logged with the path. Returns 0 or negative errno.
 */
int control_open(struct control **out, const struct control_options *options);
/* Close every connection and remove the socket file (if it is still ours). NULL is fine. */
void control_close(struct control *control);
/* The fd for the daemon's epoll set (EPOLLIN): readable when a client needs service. */
int control_fd(const struct control *control);
/* Accept, read, answer and close whatever is ready, without blocking. Returns the number
 * of requests answered, or negative errno when the loop's fd itself failed. */
int control_handle_ready(struct control *control);

/* The reply to one request line, as sent (a JSON line ending in "\n"); malloc'd, caller
 * frees; NULL only when out of memory. For tests and for the socket handler. */
char *control_reply(struct control *control, const char *request);

#endif
