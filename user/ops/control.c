// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ops/control.h"
#include "sys/clock.h"
#include "sys/fileio.h"
#include "sys/log.h"
#include "ops/textsafe.h"

struct control_client {
	int fd;			/* -1: slot free */
	struct control *control;	/* for the deadline's callback; kept across closes */
	struct loop_source *deadline;	/* this slot's timer, made on first use */
	int64_t opened_ns;
	char request[CONTROL_MAX_REQUEST];
	size_t request_len;
	char *reply;		/* NULL until the request line is complete */
	size_t reply_len;
	size_t reply_sent;
};

struct control {
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int listen_fd;
	int epoll_fd;		/* the listener and every client: the one fd the daemon polls */
	dev_t socket_dev;	/* identity of the socket file we created, for unlink */
	ino_t socket_ino;
	control_view_fn view;
	void *ctx;
	struct loop *loop;	/* NULL: deadlines checked in control_handle_ready only */
	int64_t (*now_ns)(void);
	char version[64];
	struct control_client clients[CONTROL_MAX_CLIENTS];
};

/* ---- replies --------------------------------------------------------------------------- */

static struct json_object *error_reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static struct json_object *error_reply(const char *fmt, ...)
{
	struct json_object *reply = json_object_new_object();
	char message[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	json_object_object_add(reply, "ok", json_object_new_boolean(false));
	json_object_object_add(reply, "error", json_object_new_string(message));
	return reply;
}

void control_json_can_evict(struct json_object *obj, const struct metrics_can_evict *state)
{
	struct json_object *fatal, *degraded;

	if (!obj || !state || !state->known)
		return;
	fatal = json_object_new_array();
	degraded = json_object_new_array();
	for (size_t i = 0; i < state->n_reasons && i < METRICS_MAX_CAN_EVICT_REASONS; i++) {
		struct json_object *reason = json_object_new_object();

		json_object_object_add(reason, "reason", json_object_new_string(state->reasons[i].key));
		json_object_object_add(reason, "text", json_object_new_string(state->reasons[i].text));
		json_object_array_add(state->reasons[i].fatal ? fatal : degraded, reason);
	}
	json_object_object_add(obj, "can_evict", json_object_new_boolean(state->can_evict));
	json_object_object_add(obj, "cannot_evict", fatal);
	json_object_object_add(obj, "degraded", degraded);
}

static struct json_object *status_reply(struct control *control, const struct control_view *view)
{
	static const struct evaluation no_eval = { .act_on = -1 };
	static const struct decision no_decision = { .threshold_index = -1 };
	static const struct eviction_engine no_engine;
	static const struct observations no_obs;
	struct json_object *reply, *bpf, *evictions;
	char stamp[40];

	if (!view->config)
		return error_reply("the daemon has no configuration to show");
	reply = report_json(view->config, view->engine ? view->engine : &no_engine,
			    view->obs ? view->obs : &no_obs, view->eval ? view->eval : &no_eval,
			    view->decision ? view->decision : &no_decision);
	json_object_object_add(reply, "ok", json_object_new_boolean(true));
	json_object_object_add(reply, "command", json_object_new_string("status"));
	json_object_object_add(reply, "version", json_object_new_string(control->version));
	json_object_object_add(reply, "pid", json_object_new_int((int)getpid()));
	json_object_object_add(reply, "mode", json_object_new_string(view->mode ? view->mode : "unknown"));
	if (view->node_name && view->node_name[0])
		json_object_object_add(reply, "node_name", json_object_new_string(view->node_name));
	control_json_can_evict(reply, view->can_evict);
	json_object_object_add(reply, "uptime_seconds", json_object_new_int64(view->uptime_ns / 1000000000));
	json_object_object_add(reply, "evaluations", json_object_new_int64((int64_t)view->evaluations));
	if (view->last_evaluation_unix_ns > 0) {
		eventlog_format_time(view->last_evaluation_unix_ns, stamp, sizeof(stamp));
		json_object_object_add(reply, "last_evaluation", json_object_new_string(stamp));
	} else {
		json_object_object_add(reply, "last_evaluation", NULL);
	}

	bpf = json_object_new_object();
	json_object_object_add(bpf, "enabled", json_object_new_boolean(view->bpf.enabled));
	json_object_object_add(bpf, "programs_attached", json_object_new_int((int)view->bpf.programs_attached));
	json_object_object_add(bpf, "pin_dir", view->bpf.pin_dir ? json_object_new_string(view->bpf.pin_dir) : NULL);
	if (!view->bpf.enabled)
		json_object_object_add(bpf, "reason", json_object_new_string(view->bpf.reason ? view->bpf.reason
											       : "disabled"));
	json_object_object_add(reply, "bpf", bpf);

	evictions = json_object_new_object();
	json_object_object_add(evictions, "killed", json_object_new_int64((int64_t)view->evictions));
	json_object_object_add(evictions, "failed", json_object_new_int64((int64_t)view->evictions_failed));
	json_object_object_add(evictions, "refused_stale", json_object_new_int64((int64_t)view->evictions_stale));
	json_object_object_add(evictions, "in_flight", json_object_new_int64((int64_t)view->actions_in_flight));
	json_object_object_add(reply, "evictions", evictions);
	json_object_object_add(reply, "loop_iteration_max_ns", json_object_new_int64(view->loop_iteration_max_ns));
	json_object_object_add(reply, "events_kept", json_object_new_int64((int64_t)eventlog_count(view->eventlog)));
	return reply;
}

/* The signal `evictctl pods` ranks for when none is asked: the one being acted on, else the
 * first met threshold's (memory first, as the engine orders them), else memory. */
static enum ev_signal pressing_signal(const struct control_view *view, const char **why)
{
	const struct eviction_engine *engine = view->engine;

	if (engine && view->decision && view->decision->threshold_index >= 0 &&
	    (size_t)view->decision->threshold_index < engine->n_thresholds) {
		const struct threshold *threshold = &engine->thresholds[view->decision->threshold_index];

		*why = threshold->hard ? "acting on it: hard threshold met" :
					 "acting on it: soft threshold met for its grace period";
		return threshold->signal;
	}
	for (size_t i = 0; engine && view->eval && i < engine->n_thresholds; i++) {
		if (view->eval->met[i]) {
			*why = "threshold met, not yet actionable (grace period running)";
			return engine->thresholds[i].signal;
		}
	}
	*why = "no threshold met; showing the memory ranking";
	return EV_SIGNAL_MEMORY_AVAILABLE;
}

static struct json_object *pod_entry(const struct control_view *view, enum ev_signal signal,
				     const struct pod *pod, size_t rank, bool victim)
{
	struct json_object *entry = json_object_new_object();
	int64_t usage = rank_usage(signal, view->rank_options, pod);
	int64_t request = rank_request(signal, pod);
	char reason[512];

	eventlog_rank_reason(signal, view->rank_options, pod, reason, sizeof(reason));
	json_object_object_add(entry, "rank", json_object_new_int64((int64_t)rank));
	json_object_object_add(entry, "namespace", json_object_new_string(pod->namespace_));
	json_object_object_add(entry, "name", json_object_new_string(pod->name));
	json_object_object_add(entry, "uid", json_object_new_string(pod->uid));
	json_object_object_add(entry, "cgroup", json_object_new_string(pod->cgroup_path));
	json_object_object_add(entry, "qos", json_object_new_string(pod_qos_name(pod->qos)));
	json_object_object_add(entry, "priority", json_object_new_int(pod->priority));
	json_object_object_add(entry, "usage", json_object_new_int64(usage));
	json_object_object_add(entry, "request", json_object_new_int64(request));
	json_object_object_add(entry, "exceeds_request", json_object_new_boolean(!pod->stats_missing && usage > request));
	json_object_object_add(entry, "processes", json_object_new_int64(pod->processes));
	json_object_object_add(entry, "stats_missing", json_object_new_boolean(pod->stats_missing));
	json_object_object_add(entry, "never_evict", json_object_new_boolean(pod_never_evict(pod)));
	json_object_object_add(entry, "daemonset", json_object_new_boolean(pod->is_daemonset));
	json_object_object_add(entry, "victim", json_object_new_boolean(victim));
	json_object_object_add(entry, "reason", json_object_new_string(reason));
	return entry;
}

static struct json_object *pods_reply(const struct control_view *view, const char *requested)
{
	struct json_object *reply, *list;
	enum ev_signal signal;
	const char *why = "requested";
	struct pod **ranked = NULL;
	bool victim_found = false;

	if (requested) {
		if (signal_lookup(requested, &signal))
			return error_reply("unknown signal \"%s\"; expected one of %s, oom.guard", requested,
					   signal_valid_names());
	} else {
		signal = pressing_signal(view, &why);
	}
	if (view->n_pods) {
		/* Rank a copy: the daemon's own array is ordered for its decision. */
		ranked = malloc(view->n_pods * sizeof(*ranked));
		if (!ranked)
			return error_reply("out of memory");
		memcpy(ranked, view->pods, view->n_pods * sizeof(*ranked));
		rank_pods(signal, view->rank_options, ranked, view->n_pods);
	}
	reply = json_object_new_object();
	json_object_object_add(reply, "ok", json_object_new_boolean(true));
	json_object_object_add(reply, "command", json_object_new_string("pods"));
	json_object_object_add(reply, "signal", json_object_new_string(signal_name(signal)));
	json_object_object_add(reply, "signal_reason", json_object_new_string(why));
	json_object_object_add(reply, "unit", json_object_new_string(eventlog_signal_unit(signal)));
	json_object_object_add(reply, "mode", json_object_new_string(view->mode ? view->mode : "unknown"));
	json_object_object_add(reply, "cgroup_tree", json_object_new_boolean(view->cgroup_tree));
	list = json_object_new_array();
	for (size_t i = 0; i < view->n_pods; i++) {
		/* The same predicate as the daemon's decision: pod_is_candidate_for(). */
		bool victim = !victim_found && pod_is_candidate_for(ranked[i], signal);

		victim_found |= victim;
		json_object_array_add(list, pod_entry(view, signal, ranked[i], i + 1, victim));
	}
	json_object_object_add(reply, "pods", list);
	free(ranked);
	return reply;
}

static struct json_object *events_reply(const struct control_view *view)
{
	struct json_object *reply = json_object_new_object();

	json_object_object_add(reply, "ok", json_object_new_boolean(true));
	json_object_object_add(reply, "command", json_object_new_string("events"));
	json_object_object_add(reply, "capacity", json_object_new_int(EVENTLOG_RING_SIZE));
	json_object_object_add(reply, "events", eventlog_events_json(view->eventlog));
	return reply;
}

/* Parse the request line into a command and an optional signal name (into buf). */
static int parse_request(const char *request, enum control_command *command, char *signal_buf,
			 size_t signal_len, char *err, size_t err_len)
{
	char word[32] = "";
	const char *name = NULL, *signal = NULL;
	struct json_object *doc = NULL, *field;

	signal_buf[0] = '\0';
	while (*request == ' ' || *request == '\t')
		request++;
	if (*request == '{') {
		doc = json_tokener_parse(request);
		if (!doc || !json_object_is_type(doc, json_type_object)) {
			snprintf(err, err_len, "the request is not a JSON object");
			json_object_put(doc);
			return -EINVAL;
		}
		if (json_object_object_get_ex(doc, "command", &field) && json_object_is_type(field, json_type_string))
			name = json_object_get_string(field);
		if (json_object_object_get_ex(doc, "signal", &field) && json_object_is_type(field, json_type_string))
			signal = json_object_get_string(field);
	} else {
		/* A bare line: "status", "pods memory.available", "events". */
		char rest[128] = "";

		if (sscanf(request, "%31s %127s", word, rest) >= 1)
			name = word;
		if (rest[0]) {
			snprintf(signal_buf, signal_len, "%s", rest);
			signal = NULL;
		}
	}
	if (!name) {
		snprintf(err, err_len, "no command; expected status, pods or events");
		json_object_put(doc);
		return -EINVAL;
	}
	if (!strcmp(name, "status")) {
		*command = CONTROL_STATUS;
	} else if (!strcmp(name, "pods")) {
		*command = CONTROL_PODS;
	} else if (!strcmp(name, "events")) {
		*command = CONTROL_EVENTS;
	} else {
		snprintf(err, err_len, "unknown command \"%.64s\"; expected status, pods or events", name);
		json_object_put(doc);
		return -EINVAL;
	}
	if (signal)
		snprintf(signal_buf, signal_len, "%s", signal);
	json_object_put(doc);
	return 0;
}

char *control_reply(struct control *control, const char *request)
{
	struct control_view view;
	enum control_command command;
	struct json_object *reply;
	char signal[64], err[160];
	const char *text;
	char *line, *safe;
	size_t len;
	int ret;

	if (parse_request(request, &command, signal, sizeof(signal), err, sizeof(err))) {
		reply = error_reply("%s", err);
	} else {
		memset(&view, 0, sizeof(view));
		ret = control->view ? control->view(control->ctx, command, &view) : -ENODATA;
		if (ret < 0)
			reply = error_reply("the daemon could not answer: %s", strerror(-ret));
		else if (command == CONTROL_STATUS)
			reply = status_reply(control, &view);
		else if (command == CONTROL_PODS)
			reply = pods_reply(&view, signal[0] ? signal : NULL);
		else
			reply = events_reply(&view);
	}
	/* Names come from outside (the API server, cgroup directories, xattrs): json-c copies
	 * their bytes as given, so invalid UTF-8 is rewritten here, at the one way out
	 * (ops/textsafe.h). */
	text = json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	safe = textsafe_json_utf8(text);
	json_object_put(reply);
	if (!safe)
		return NULL;
	len = strlen(safe);
	line = realloc(safe, len + 2);
	if (!line) {
		free(safe);
		return NULL;
	}
	line[len] = '\n';
	line[len + 1] = '\0';
	return line;
}

/* ---- socket ---------------------------------------------------------------------------- */

static int make_parent_dirs(const char *path)
{
	int err;
	char dir[PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	err = fileio_mkdir_p(dir, 0755);
	if (err)
		log_err("control socket: mkdir -p %s: %s", dir, strerror(-err));
	return err;
}

/* A socket file at path: live (someone accepts) or left by a dead daemon? */
static int clear_stale_socket(const char *path, const struct sockaddr_un *addr)
{
	struct stat st;
	int fd, err;

	if (lstat(path, &st)) {
		if (errno == ENOENT)
			return 0;
		err = -errno;
		log_err("control socket: %s: %m", path);
		return err;
	}
	if (!S_ISSOCK(st.st_mode)) {
		log_err("control socket: %s exists and is not a socket; not replacing it", path);
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) == 0) {
		close(fd);
		log_err("control socket: %s is in use: is another evictd running?", path);
		return -EADDRINUSE;
	}
	close(fd);
	if (unlink(path) && errno != ENOENT) {
		err = -errno;
		log_err("control socket: removing the stale %s: %m", path);
		return err;
	}
	log_info("control socket: replaced %s left by a previous run", path);
	return 0;
}

static int epoll_add(struct control *control, int fd, uint32_t events)
{
	struct epoll_event event = { .events = events, .data.fd = fd };

	if (epoll_ctl(control->epoll_fd, EPOLL_CTL_ADD, fd, &event))
		return -errno;
	return 0;
}

int control_open(struct control **out, const struct control_options *options)
{
	const char *path = options->path && options->path[0] ? options->path : CONTROL_DEFAULT_SOCKET;
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct control *control;
	struct stat st;
	mode_t old_umask;
	int err;

	*out = NULL;
	if (strlen(path) >= sizeof(addr.sun_path)) {
		log_err("control socket: %s: longer than the %zu bytes a UNIX socket path may have", path,
			sizeof(addr.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	strcpy(addr.sun_path, path);
	control = calloc(1, sizeof(*control));
	if (!control)
		return -ENOMEM;
	strcpy(control->path, path);
	control->listen_fd = -1;
	control->epoll_fd = -1;
	control->view = options->view;
	control->ctx = options->ctx;
	control->loop = options->loop;
	control->now_ns = options->now_ns ? options->now_ns : clock_monotonic_ns;
	snprintf(control->version, sizeof(control->version), "%s", options->version ? options->version : "unknown");
	for (size_t i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		control->clients[i].fd = -1;
		control->clients[i].control = control;
	}

	err = make_parent_dirs(path);
	if (!err)
		err = clear_stale_socket(path, &addr);
	if (err)
		goto fail;
	control->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (control->listen_fd < 0) {
		err = -errno;
		log_err("control socket: socket: %m");
		goto fail;
	}
	/* Created 0600 from the start: there is no window where others could connect. */
	old_umask = umask(0177);
	if (bind(control->listen_fd, (struct sockaddr *)&addr, sizeof(addr))) {
		err = -errno;
		umask(old_umask);
		log_err("control socket: bind %s: %m", path);
		goto fail;
	}
	umask(old_umask);
	if (stat(path, &st) == 0) {
		control->socket_dev = st.st_dev;
		control->socket_ino = st.st_ino;
	}
	if (listen(control->listen_fd, CONTROL_MAX_CLIENTS)) {
		err = -errno;
		log_err("control socket: listen %s: %m", path);
		goto fail;
	}
	control->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (control->epoll_fd < 0 || epoll_add(control, control->listen_fd, EPOLLIN)) {
		err = -errno;
		log_err("control socket: epoll: %m");
		goto fail;
	}
	log_info("control socket: listening on %s", path);
	*out = control;
	return 0;
fail:
	control_close(control);
	return err;
}

static void client_close(struct control *control, struct control_client *client)
{
	struct loop_source *deadline = client->deadline;

	if (client->fd < 0)
		return;
	epoll_ctl(control->epoll_fd, EPOLL_CTL_DEL, client->fd, NULL);
	close(client->fd);
	free(client->reply);
	loop_timer_set(deadline, LOOP_NO_DEADLINE);
	memset(client, 0, sizeof(*client));
	client->fd = -1;
	client->control = control;
	client->deadline = deadline;
}

/* The connection's time is up: it sent no whole request, or did not take its reply. */
static void client_expired(void *ctx)
{
	struct control_client *client = ctx;

	if (client->fd < 0)
		return;
	log_debug("control socket: closing a client that sent no complete request or took no "
		  "reply within %lld s", CONTROL_CLIENT_TIMEOUT_NS / 1000000000);
	client_close(client->control, client);
}

/* Arm the slot's own deadline on the loop (doc/DESIGN.md, "Hostile input"): a stalled client
 * goes when its time is up, with no other client needed to notice. Without a loop, or if the
 * timer cannot be made, control_handle_ready's sweep is the only check. */
static void client_arm_deadline(struct control *control, struct control_client *client)
{
	int64_t deadline = client->opened_ns + CONTROL_CLIENT_TIMEOUT_NS;

	if (!control->loop)
		return;
	if (client->deadline)
		loop_timer_set(client->deadline, deadline);
	else
		client->deadline = loop_add_timer(control->loop, deadline, client_expired, client);
}

void control_close(struct control *control)
{
	struct stat st;

	if (!control)
		return;
	for (size_t i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		client_close(control, &control->clients[i]);
		loop_remove(control->loop, control->clients[i].deadline);
	}
	if (control->listen_fd >= 0) {
		close(control->listen_fd);
		/* Only remove the file if it is still the one we bound (a new daemon may own it). */
		if (control->socket_ino && stat(control->path, &st) == 0 && st.st_dev == control->socket_dev &&
		    st.st_ino == control->socket_ino)
			unlink(control->path);
	}
	if (control->epoll_fd >= 0)
		close(control->epoll_fd);
	free(control);
}

int control_fd(const struct control *control)
{
	return control ? control->epoll_fd : -1;
}

static struct control_client *client_slot(struct control *control)
{
	struct control_client *oldest = &control->clients[0];

	for (size_t i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		if (control->clients[i].fd < 0)
			return &control->clients[i];
		if (control->clients[i].opened_ns < oldest->opened_ns)
			oldest = &control->clients[i];
	}
	client_close(control, oldest);
	return oldest;
}

static bool peer_allowed(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	/* The socket is 0600 already; this also holds if someone loosens its mode. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return false;
	return cred.uid == 0 || cred.uid == geteuid();
}

static void accept_clients(struct control *control)
{
	for (;;) {
		struct control_client *client;
		int fd = accept4(control->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
				log_warn("control socket: accept: %m");
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		if (!peer_allowed(fd)) {
			log_warn("control socket: refused a client that is neither root nor our user");
			close(fd);
			continue;
		}
		client = client_slot(control);
		client->fd = fd;
		client->opened_ns = control->now_ns();
		if (epoll_add(control, fd, EPOLLIN | EPOLLRDHUP)) {
			log_warn("control socket: epoll_ctl: %m");
			close(fd);
			client->fd = -1;
			continue;
		}
		client_arm_deadline(control, client);
	}
}

/* Write what the socket takes; true when the whole reply is out. */
static bool client_flush(struct control *control, struct control_client *client)
{
	while (client->reply_sent < client->reply_len) {
		ssize_t n = send(client->fd, client->reply + client->reply_sent,
				 client->reply_len - client->reply_sent, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				struct epoll_event event = { .events = EPOLLOUT, .data.fd = client->fd };

				epoll_ctl(control->epoll_fd, EPOLL_CTL_MOD, client->fd, &event);
				return false;
			}
			return true;	/* the client went away: nothing more to do */
		}
		client->reply_sent += (size_t)n;
	}
	return true;
}

/* Read what arrived; answer once the line is complete (or the client closed its side).
 * Returns 1 when a request was answered. */
static int client_readable(struct control *control, struct control_client *client)
{
	char *newline;

	for (;;) {
		ssize_t n;

		if (client->request_len >= sizeof(client->request) - 1) {
			client->reply = strdup("{\"ok\":false,\"error\":\"request too long\"}\n");
			break;
		}
		n = recv(client->fd, client->request + client->request_len,
			 sizeof(client->request) - 1 - client->request_len, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;	/* wait for the rest of the line */
			client_close(control, client);
			return 0;
		}
		client->request_len += (size_t)n;
		client->request[client->request_len] = '\0';
		newline = strchr(client->request, '\n');
		if (newline)
			*newline = '\0';
		if (newline || n == 0) {
			if (client->request_len == 0 && n == 0) {
				client_close(control, client);	/* connected and left */
				return 0;
			}
			client->reply = control_reply(control, client->request);
			break;
		}
	}
	if (!client->reply) {
		client_close(control, client);
		return 0;
	}
	client->reply_len = strlen(client->reply);
	if (client_flush(control, client))
		client_close(control, client);
	return 1;
}

int control_handle_ready(struct control *control)
{
	struct epoll_event events[CONTROL_MAX_CLIENTS + 1];
	int64_t now = control->now_ns();
	int answered = 0, n;

	/* Drop clients that sent nothing or take no reply: they must not hold a slot forever.
	 * With a loop their own timers do it on time; this catches the rest. */
	for (size_t i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		struct control_client *client = &control->clients[i];

		if (client->fd >= 0 && now - client->opened_ns > CONTROL_CLIENT_TIMEOUT_NS)
			client_close(control, client);
	}
	n = epoll_wait(control->epoll_fd, events, CONTROL_MAX_CLIENTS + 1, 0);
	if (n < 0) {
		if (errno == EINTR)
			return 0;
		log_err("control socket: epoll_wait: %m");
		return -errno;
	}
	for (int i = 0; i < n; i++) {
		struct control_client *client = NULL;
		int fd = events[i].data.fd;

		if (fd == control->listen_fd) {
			accept_clients(control);
			continue;
		}
		for (size_t c = 0; c < CONTROL_MAX_CLIENTS; c++)
			if (control->clients[c].fd == fd)
				client = &control->clients[c];
		if (!client)
			continue;	/* closed earlier in this round */
		if (client->reply) {
			if (client_flush(control, client))
				client_close(control, client);
		} else if (events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
			answered += client_readable(control, client);
		}
	}
	return answered;
}
