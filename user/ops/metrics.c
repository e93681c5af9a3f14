// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "sys/log.h"
#include "core/ahead.h"
#include "ops/metrics.h"
#include "ops/metrics_internal.h"
#include "sys/netaddr.h"
#include "sys/clock.h"

#define TOSTR_(x) #x
#define TOSTR(x) TOSTR_(x)

static const double latency_buckets[METRICS_N_LATENCY_BUCKETS] = METRICS_LATENCY_BUCKETS;

/* Counters only ever grow; they live here, not in the snapshot the daemon replaces. */

/* One HTTP connection, from libmicrohttpd's MHD_CONNECTION_NOTIFY_STARTED to _CLOSED. */
struct metrics_conn {
	bool used;
	bool busy;		/* a request is being answered (handler called, not yet completed) */
	bool dropped;		/* shut down by us; libmicrohttpd closes it on its next read */
	int fd;			/* open until _CLOSED has been notified (libmicrohttpd closes after) */
	int64_t since_ns;	/* accepted, or its last request answered: its request's deadline */
	int family;
	unsigned char addr[16];	/* the client's address: IPv4 or IPv6 bytes */
};

/* At most one line per METRICS_LOG_INTERVAL_NS; the others are counted. */
struct log_limit {
	pthread_mutex_t lock;
	int64_t last_ns;	/* when the last line was written; 0: never */
	uint64_t suppressed;
};

struct metrics {
	pthread_mutex_t lock;	/* guards snap, counters, updated_at_ns */
	struct metrics_snapshot snap;
	struct metrics_counters counters;
	int64_t updated_at_ns;	/* CLOCK_MONOTONIC of the last update */
	int64_t stale_after_ns;
	int64_t start_unix_s;
	char version[64];
	char commit[64];
	struct metrics_window_max loop_window;	/* under lock */

	struct MHD_Daemon *httpd;
	int listen_fd;
	int port;

	/* Only libmicrohttpd's one polling thread touches these, but its callbacks also run
	 * from MHD_stop_daemon's caller: a lock of their own, never held with another. */
	pthread_mutex_t conn_lock;
	struct metrics_conn conns[METRICS_HARD_CONNECTIONS];
	struct log_limit log_limit;
};

const char *metrics_result_name(enum metrics_eviction_result result)
{
	switch (result) {
	case METRICS_RESULT_KILLED: return "killed";
	case METRICS_RESULT_FAILED: return "failed";
	case METRICS_RESULT_DRY_RUN: return "dry_run";
	case METRICS_RESULT_COUNT: break;
	}
	return "unknown";
}

void metrics_snapshot_fill(struct metrics_snapshot *snap, const struct eviction_engine *engine,
			   const struct observations *obs, const struct evaluation *eval)
{
	for (int s = 0; s < EV_SIGNAL_COUNT; s++) {
		snap->signal_present[s] = obs->signal[s].present;
		snap->signal_available[s] = obs->signal[s].available;
		snap->signal_capacity[s] = obs->signal[s].capacity;
	}
	snap->memory_available_kubelet = obs->memory_available_kubelet_bytes;
	snap->memory_available_refault_aware = obs->memory_available_refault_aware_bytes;
	snap->file_cache_refaulting = obs->file_cache_refaulting;
	snap->n_thresholds = 0;
	for (size_t i = 0; i < engine->n_thresholds && i < EV_MAX_THRESHOLDS; i++) {
		snap->thresholds[i] = (struct metrics_threshold){
			.signal = engine->thresholds[i].signal,
			.hard = engine->thresholds[i].hard,
			.value = eval->threshold_value[i],
			.met = eval->met[i],
			.ahead_sure = eval->ahead_none[i] == AHEAD_SURE,
			.ahead_seconds = eval->ahead_seconds[i],
		};
		snap->n_thresholds++;
	}
	for (int c = 0; c < EV_CONDITION_COUNT; c++)
		snap->conditions[c] = eval->conditions[c];
}

int metrics_read_kernel_oom_kills(const char *root, uint64_t *count)
{
	char path[PATH_MAX], line[256];
	int err = -ENOENT;
	FILE *file;

	snprintf(path, sizeof(path), "%s/proc/vmstat", root && strcmp(root, "/") ? root : "");
	file = fopen(path, "re");
	if (!file) {
		err = -errno;
		log_debug("metrics: %s: %m", path);
		return err;
	}
	while (fgets(line, sizeof(line), file)) {
		unsigned long long value;

		if (sscanf(line, "oom_kill %llu", &value) == 1) {
			*count = value;
			err = 0;
			break;
		}
	}
	fclose(file);
	return err;
}

int metrics_render(struct metrics *metrics, char **text, size_t *len)
{
	struct metrics_snapshot snap;
	struct metrics_counters counters;
	FILE *out;

	/* Copy under the lock and format outside it: a slow scrape never holds up the daemon. */
	pthread_mutex_lock(&metrics->lock);
	snap = metrics->snap;
	counters = metrics->counters;
	snap.loop_iteration_window_max_ns = metrics_window_max_get(&metrics->loop_window,
								   clock_monotonic_ns());
	pthread_mutex_unlock(&metrics->lock);

	*text = NULL;
	*len = 0;
	out = open_memstream(text, len);
	if (!out)
		return -ENOMEM;
	metrics_exposition_write(out, &snap, &counters, metrics->version, metrics->commit,
				 metrics->start_unix_s);
	if (fclose(out)) {
		free(*text);
		*text = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* ---- state updates --------------------------------------------------------------------- */

void metrics_update(struct metrics *metrics, const struct metrics_snapshot *snap)
{
	if (!metrics)
		return;
	pthread_mutex_lock(&metrics->lock);
	if (snap->loop_iteration_max_ns > metrics->snap.loop_iteration_max_ns)
		metrics_window_max_observe(&metrics->loop_window, clock_monotonic_ns(),
					   snap->loop_iteration_max_ns);
	metrics->snap = *snap;
	metrics->updated_at_ns = clock_monotonic_ns();
	pthread_mutex_unlock(&metrics->lock);
}

void metrics_set_kube(struct metrics *metrics, const struct metrics_kube *kube)
{
	if (!metrics)
		return;
	pthread_mutex_lock(&metrics->lock);
	metrics->counters.kube = *kube;
	pthread_mutex_unlock(&metrics->lock);
}

void metrics_set_can_evict(struct metrics *metrics, const struct metrics_can_evict *state)
{
	if (!metrics || !state)
		return;
	pthread_mutex_lock(&metrics->lock);
	metrics->counters.can_evict = *state;
	pthread_mutex_unlock(&metrics->lock);
}

double metrics_kube_stale_seconds(const struct metrics_kube *kube, int64_t now_ns)
{
	int64_t age_ns = now_ns - kube->progress_ns;

	if (!kube->enabled || kube->stale_after_ns <= 0 || age_ns <= kube->stale_after_ns)
		return 0;
	return (double)age_ns / 1e9;
}

bool metrics_kube_ready(const struct metrics_kube *kube, int64_t now_ns, const char **why)
{
	const char *reason = NULL;

	if (!kube->enabled)
		reason = NULL;
	else if (!kube->listed)
		reason = kube->last_status != 403 ? "no pod list from the API server yet" :
			 kube->pods_client_cert ? "the API server refuses to list pods (403) to the kubelet's client "
			 "certificate: is its Node authorizer on? (else --kube-pods-client-cert=none and "
			 "tools/overlays/cluster-wide-pod-read)" :
			 "the API server refuses to list pods (403) to the service account's token: grant it list "
			 "and watch on pods (tools/overlays/cluster-wide-pod-read) or read them as the kubelet "
			 "(--kube-pods-client-cert)";
	else if (kube->failing)
		reason = kube->last_status != 403 ? "the pod watch is lost and cannot be re-established" :
			 kube->pods_client_cert ? "the API server refuses the pod watch (403) to the kubelet's client "
			 "certificate: is its Node authorizer on? (else --kube-pods-client-cert=none and "
			 "tools/overlays/cluster-wide-pod-read)" :
			 "the API server refuses the pod watch (403) to the service account's token: grant it list "
			 "and watch on pods (tools/overlays/cluster-wide-pod-read) or read them as the kubelet "
			 "(--kube-pods-client-cert)";
	else if (!kube->watching && !kube->resuming && now_ns - kube->not_watching_since_ns > kube->ready_grace_ns)
		reason = "no pod watch open";
	else if (metrics_kube_stale_seconds(kube, now_ns) > 0)
		reason = "pod metadata is stale: no watch event or bookmark within the progress bound "
			 "(see evictd_kube_pods_stale_seconds)";
	if (why)
		*why = reason;
	return !reason;
}

void metrics_set_shutdown_times(struct metrics *metrics, int64_t start_unix_s, int64_t end_unix_s)
{
	if (!metrics)
		return;
	pthread_mutex_lock(&metrics->lock);
	metrics->counters.shutdown_start_unix_s = start_unix_s;
	metrics->counters.shutdown_end_unix_s = end_unix_s;
	pthread_mutex_unlock(&metrics->lock);
}

void metrics_set_loop(struct metrics *metrics, int64_t iteration_max_ns, int64_t iteration_last_ns,
		      uint64_t actions_in_flight)
{
	int64_t now = clock_monotonic_ns();

	if (!metrics)
		return;
	pthread_mutex_lock(&metrics->lock);
	metrics_window_max_observe(&metrics->loop_window, now, iteration_last_ns);
	/* A longest iteration that grew happened since the last call (or is under way). */
	if (iteration_max_ns > metrics->snap.loop_iteration_max_ns)
		metrics_window_max_observe(&metrics->loop_window, now, iteration_max_ns);
	metrics->snap.loop_iteration_max_ns = iteration_max_ns;
	metrics->snap.loop_iteration_last_ns = iteration_last_ns;
	metrics->snap.actions_in_flight = actions_in_flight;
	pthread_mutex_unlock(&metrics->lock);
}

void metrics_record_eviction(struct metrics *metrics, enum ev_signal signal,
			     enum metrics_eviction_result result, int64_t latency_ns)
{
	double seconds;
	int bucket;

	if (!metrics || (unsigned int)signal >= EV_SIGNAL_COUNT || (unsigned int)result >= METRICS_RESULT_COUNT)
		return;
	pthread_mutex_lock(&metrics->lock);
	metrics->counters.evictions[signal][result]++;
	if (latency_ns >= 0) {
		seconds = (double)latency_ns / 1e9;
		for (bucket = 0; bucket < METRICS_N_LATENCY_BUCKETS; bucket++)
			if (seconds <= latency_buckets[bucket])
				break;
		if (bucket < METRICS_N_LATENCY_BUCKETS)
			metrics->counters.latency_bucket[bucket]++;
		metrics->counters.latency_count++;
		metrics->counters.latency_sum_s += seconds;
	}
	pthread_mutex_unlock(&metrics->lock);
}

/* ---- HTTP ------------------------------------------------------------------------------ */

/* A warning about what a peer did: every malformed request is one, so a peer sending
 * thousands must not write thousands of lines. The first in each METRICS_LOG_INTERVAL_NS is
 * logged, with the count of those suppressed since the last line. */
static void limited_warn(struct metrics *metrics, const char *message)
{
	struct log_limit *limit = &metrics->log_limit;
	int64_t now = clock_monotonic_ns();
	uint64_t suppressed;

	pthread_mutex_lock(&limit->lock);
	if (limit->last_ns && now - limit->last_ns < METRICS_LOG_INTERVAL_NS) {
		limit->suppressed++;
		pthread_mutex_unlock(&limit->lock);
		return;
	}
	limit->last_ns = now;
	suppressed = limit->suppressed;
	limit->suppressed = 0;
	pthread_mutex_unlock(&limit->lock);
	if (suppressed)
		log_warn("metrics: %s (%llu similar warnings suppressed)", message, (unsigned long long)suppressed);
	else
		log_warn("metrics: %s", message);
}

/* The count of warnings suppressed, once their interval is over, even when no warning comes
 * to carry it: called for every connection and request. */
static void limited_flush(struct metrics *metrics)
{
	struct log_limit *limit = &metrics->log_limit;
	int64_t now = clock_monotonic_ns();
	uint64_t suppressed = 0;

	pthread_mutex_lock(&limit->lock);
	if (limit->suppressed && now - limit->last_ns >= METRICS_LOG_INTERVAL_NS) {
		suppressed = limit->suppressed;
		limit->suppressed = 0;
		limit->last_ns = now;
	}
	pthread_mutex_unlock(&limit->lock);
	if (suppressed)
		log_warn("metrics: %llu similar warnings suppressed", (unsigned long long)suppressed);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char message[512];

	vsnprintf(message, sizeof(message), fmt, ap);
	message[strcspn(message, "\n")] = '\0';
	limited_warn(cls, message);
}

/* ---- connection limits (metrics.h: hostile or broken HTTP peers) ------------------------- */

static void peer_address(struct MHD_Connection *connection, struct metrics_conn *conn)
{
	const union MHD_ConnectionInfo *info =
		MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = info ? info->client_addr : NULL;

	conn->family = sa ? sa->sa_family : AF_UNSPEC;
	memset(conn->addr, 0, sizeof(conn->addr));
	if (conn->family == AF_INET)
		memcpy(conn->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	else if (conn->family == AF_INET6)
		memcpy(conn->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
}

static bool same_peer(const struct metrics_conn *a, const struct metrics_conn *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, sizeof(a->addr));
}

static bool conn_active(const struct metrics_conn *conn)
{
	return conn->used && !conn->dropped;
}

/* Shut the socket down (not close: libmicrohttpd owns the fd and closes it after
 * MHD_CONNECTION_NOTIFY_CLOSED, which frees the slot). Its next read sees the end. */
static void conn_drop(struct metrics_conn *conn)
{
	shutdown(conn->fd, SHUT_RDWR);
	conn->dropped = true;
}

/* The oldest connection (of the same client as self when per_client) with no request being
 * answered, other than self; NULL when there is none. */
static struct metrics_conn *oldest_idle(struct metrics *metrics, const struct metrics_conn *self,
					 bool per_client)
{
	struct metrics_conn *oldest = NULL;

	for (size_t i = 0; i < METRICS_HARD_CONNECTIONS; i++) {
		struct metrics_conn *conn = &metrics->conns[i];

		if (conn == self || !conn_active(conn) || conn->busy || (per_client && !same_peer(conn, self)))
			continue;
		if (!oldest || conn->since_ns < oldest->since_ns)
			oldest = conn;
	}
	return oldest;
}

/* Make room for self if its client, or everyone, is over the limit: the oldest idle
 * connection goes, or self when every other one is answering a request. */
static const char *enforce_limits(struct metrics *metrics, struct metrics_conn *self)
{
	size_t total = 0, mine = 0;
	struct metrics_conn *victim;

	for (size_t i = 0; i < METRICS_HARD_CONNECTIONS; i++) {
		if (!conn_active(&metrics->conns[i]))
			continue;
		total++;
		mine += same_peer(&metrics->conns[i], self);
	}
	if (mine > METRICS_MAX_PER_CLIENT) {
		victim = oldest_idle(metrics, self, true);
		conn_drop(victim ? victim : self);
		total--;
		if (!victim)
			return "dropped a new connection: its client has " TOSTR(METRICS_MAX_PER_CLIENT)
			       " answering already";
		if (total <= METRICS_MAX_CONNECTIONS)
			return "dropped a client's oldest idle connection: more than "
			       TOSTR(METRICS_MAX_PER_CLIENT) " open from it";
	}
	if (total > METRICS_MAX_CONNECTIONS) {
		victim = oldest_idle(metrics, self, false);
		conn_drop(victim ? victim : self);
		return victim ? "dropped the oldest idle connection: more than " TOSTR(METRICS_MAX_CONNECTIONS) " open"
			      : "dropped a new connection: " TOSTR(METRICS_MAX_CONNECTIONS) " are answering already";
	}
	return NULL;
}

static void on_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct metrics *metrics = cls;
	struct metrics_conn *conn = NULL;
	const union MHD_ConnectionInfo *info;
	const char *why = NULL;
	int64_t now = clock_monotonic_ns();

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		conn = *socket_context;
		if (conn) {
			pthread_mutex_lock(&metrics->conn_lock);
			conn->used = false;
			pthread_mutex_unlock(&metrics->conn_lock);
		}
		*socket_context = NULL;
		return;
	}
	if (code != MHD_CONNECTION_NOTIFY_STARTED)
		return;
	info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
	pthread_mutex_lock(&metrics->conn_lock);
	/* Requests past their deadline, however slowly their bytes still arrive. */
	for (size_t i = 0; i < METRICS_HARD_CONNECTIONS; i++) {
		struct metrics_conn *old = &metrics->conns[i];

		if (conn_active(old) && now - old->since_ns > METRICS_REQUEST_DEADLINE_NS) {
			conn_drop(old);
			why = "dropped a connection whose request did not arrive whole within the deadline";
		}
		if (!old->used && !conn)
			conn = old;
	}
	if (!conn) {
		/* Every slot is taken: libmicrohttpd's own limit is just above ours. */
		if (info)
			shutdown(info->connect_fd, SHUT_RDWR);
		why = "dropped a new connection: no slot left";
	} else if (info) {
		*conn = (struct metrics_conn){ .used = true, .fd = info->connect_fd, .since_ns = now };
		peer_address(connection, conn);
		*socket_context = conn;
		why = enforce_limits(metrics, conn) ?: why;
	}
	pthread_mutex_unlock(&metrics->conn_lock);
	if (why)
		limited_warn(metrics, why);
	else
		limited_flush(metrics);
}

static struct metrics_conn *connection_slot(struct MHD_Connection *connection)
{
	const union MHD_ConnectionInfo *info =
		MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return info ? info->socket_context : NULL;
}

/* A request was answered (or abandoned): the connection may wait for its next one, with a
 * new deadline. */
static void on_completed(void *cls, struct MHD_Connection *connection, void **request_state,
			 enum MHD_RequestTerminationCode code)
{
	struct metrics *metrics = cls;
	struct metrics_conn *conn = connection_slot(connection);

	if (!conn)
		return;
	pthread_mutex_lock(&metrics->conn_lock);
	conn->busy = false;
	conn->since_ns = clock_monotonic_ns();
	pthread_mutex_unlock(&metrics->conn_lock);
}

static enum MHD_Result respond(struct MHD_Connection *connection, unsigned int status,
			       const char *content_type, char *body, size_t len, bool owned)
{
	struct MHD_Response *response;
	enum MHD_Result ret;

	response = MHD_create_response_from_buffer(len, body,
						   owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!response) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	ret = MHD_queue_response(connection, status, response);
	MHD_destroy_response(response);
	return ret;
}

static enum MHD_Result handle_healthz(struct metrics *metrics, struct MHD_Connection *connection)
{
	int64_t age_ns;
	char *body = NULL;
	int len;

	pthread_mutex_lock(&metrics->lock);
	age_ns = clock_monotonic_ns() - metrics->updated_at_ns;
	pthread_mutex_unlock(&metrics->lock);
	if (metrics->stale_after_ns <= 0 || age_ns <= metrics->stale_after_ns)
		return respond(connection, MHD_HTTP_OK, "text/plain; charset=utf-8", "ok\n", 3, false);
	len = asprintf(&body, "stale: the daemon loop last reported %.1fs ago (limit %.1fs)\n",
		       (double)age_ns / 1e9, (double)metrics->stale_after_ns / 1e9);
	if (len < 0)
		return MHD_NO;
	return respond(connection, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8", body,
		       (size_t)len, true);
}

static enum MHD_Result handle_readyz(struct metrics *metrics, struct MHD_Connection *connection)
{
	struct metrics_kube kube;
	struct metrics_can_evict *can_evict;	/* 5 KiB: not on the server thread's stack */
	int64_t age_ns, now = clock_monotonic_ns();
	const char *why = NULL;
	char *body = NULL;
	size_t len = 0;
	bool cannot;
	FILE *out;

	can_evict = malloc(sizeof(*can_evict));
	if (!can_evict)
		return MHD_NO;
	pthread_mutex_lock(&metrics->lock);
	age_ns = now - metrics->updated_at_ns;
	kube = metrics->counters.kube;
	*can_evict = metrics->counters.can_evict;
	pthread_mutex_unlock(&metrics->lock);
	if (metrics->stale_after_ns > 0 && age_ns > metrics->stale_after_ns)
		why = "the daemon loop is stale (see /healthz)";
	else if ((cannot = can_evict->known && !can_evict->can_evict))
		why = "cannot evict";	/* an evictd that cannot kill protects nothing */
	else
		metrics_kube_ready(&kube, now, &why);
	if (!why) {
		free(can_evict);
		return respond(connection, MHD_HTTP_OK, "text/plain; charset=utf-8", "ok\n", 3, false);
	}
	out = open_memstream(&body, &len);
	if (!out) {
		free(can_evict);
		return MHD_NO;
	}
	fprintf(out, "not ready: %s\n", why);
	/* Every fatal reason, one line each: key and text, as evictctl status shows them. */
	for (size_t i = 0; cannot && i < can_evict->n_reasons; i++)
		if (can_evict->reasons[i].fatal)
			fprintf(out, "%s: %s\n", can_evict->reasons[i].key, can_evict->reasons[i].text);
	free(can_evict);
	if (fclose(out)) {
		free(body);
		return MHD_NO;
	}
	return respond(connection, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8", body,
		       (size_t)len, true);
}

static enum MHD_Result handle_request(void *cls, struct MHD_Connection *connection, const char *url,
				      const char *method, const char *version, const char *upload_data,
				      size_t *upload_data_size, void **request_state)
{
	static const char not_found[] = "not found: try /metrics, /healthz or /readyz\n";
	static const char bad_method[] = "method not allowed\n";
	struct metrics *metrics = cls;
	struct metrics_conn *conn = connection_slot(connection);
	char *text;
	size_t len;

	/* The request arrived whole: it is being answered, and not to be dropped for room. */
	if (conn) {
		pthread_mutex_lock(&metrics->conn_lock);
		conn->busy = true;
		pthread_mutex_unlock(&metrics->conn_lock);
	}
	limited_flush(metrics);
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return respond(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8",
			       (char *)bad_method, sizeof(bad_method) - 1, false);
	if (!strcmp(url, "/healthz"))
		return handle_healthz(metrics, connection);
	if (!strcmp(url, "/readyz"))
		return handle_readyz(metrics, connection);
	if (strcmp(url, "/metrics"))
		return respond(connection, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8",
			       (char *)not_found, sizeof(not_found) - 1, false);
	if (metrics_render(metrics, &text, &len))
		return MHD_NO;
	return respond(connection, MHD_HTTP_OK, METRICS_CONTENT_TYPE, text, len, true);
}

int metrics_parse_address(const char *text, struct sockaddr_storage *addr, socklen_t *len)
{
	return netaddr_parse_listen("metrics-address", text, addr, len);
}

static int open_listener(const char *text, const struct sockaddr_storage *addr, socklen_t len)
{
	int fd, err, one = 1;

	fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		err = -errno;
		log_err("metrics: socket for %s: %m", text);
		return err;
	}
	/* A restart must not wait for TIME_WAIT connections of the previous process. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (addr->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	/* A backlog for bursts: libmicrohttpd accepts as fast as it can and sorts out the limits. */
	if (bind(fd, (const struct sockaddr *)addr, len) || listen(fd, METRICS_HARD_CONNECTIONS)) {
		err = -errno;
		log_err("metrics: listening on %s: %m", text);
		close(fd);
		return err;
	}
	return fd;
}

/* The TCP listening socket systemd passed (evictd.socket, sd_listen_fds(3)), or -1: the
 * service may run with PrivateNetwork=yes, where a socket it binds is unreachable from the
 * host (doc/DESIGN.md "The systemd unit"). sd_listen_fds(0) checks LISTEN_PID == getpid()
 * and leaves the environment alone; only the first TCP socket is taken. */
static int passed_listener(void)
{
	int n = sd_listen_fds(0), fd, flags;

	if (n < 0)
		log_warn("metrics: LISTEN_FDS: %s", strerror(-n));
	for (fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + n; fd++) {
		if (sd_is_socket_inet(fd, AF_UNSPEC, SOCK_STREAM, 1, 0) <= 0)
			continue;
		/* libmicrohttpd's polling thread must never block in accept(). */
		flags = fcntl(fd, F_GETFL);
		if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
		    fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
			log_err("metrics: passed socket fd %d: %m", fd);
			return -1;
		}
		return fd;
	}
	return -1;
}

static int bound_port(int fd)
{
	struct sockaddr_storage addr;
	socklen_t len = sizeof(addr);

	if (getsockname(fd, (struct sockaddr *)&addr, &len))
		return 0;
	if (addr.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&addr)->sin6_port);
	return ntohs(((struct sockaddr_in *)&addr)->sin_port);
}

int metrics_open(struct metrics **out, const struct metrics_options *options)
{
	struct sockaddr_storage addr;
	sigset_t all, saved;
	struct metrics *metrics;
	const char *where = options->address;
	socklen_t addr_len = 0;
	int ret, flags;

	*out = NULL;
	ret = metrics_parse_address(options->address, &addr, &addr_len);
	if (ret < 0)
		return ret;
	metrics = calloc(1, sizeof(*metrics));
	if (!metrics)
		return -ENOMEM;
	pthread_mutex_init(&metrics->lock, NULL);
	pthread_mutex_init(&metrics->conn_lock, NULL);
	pthread_mutex_init(&metrics->log_limit.lock, NULL);
	metrics->listen_fd = -1;
	metrics->stale_after_ns = options->stale_after_ns;
	metrics->updated_at_ns = clock_monotonic_ns();
	metrics->start_unix_s = time(NULL);
	snprintf(metrics->version, sizeof(metrics->version), "%s", options->version ?: EVICTD_VERSION);
	snprintf(metrics->commit, sizeof(metrics->commit), "%s", options->commit ?: EVICTD_COMMIT);
	if (ret == 1) {
		*out = metrics;	/* no server: state only */
		return 0;
	}

	metrics->listen_fd = passed_listener();
	if (metrics->listen_fd >= 0) {
		/* The passed socket decides the address and family, --metrics-address does not. */
		addr_len = sizeof(addr);
		if (getsockname(metrics->listen_fd, (struct sockaddr *)&addr, &addr_len))
			addr.ss_family = AF_INET;
		where = "the socket systemd passed (LISTEN_FDS)";
	} else {
		metrics->listen_fd = open_listener(options->address, &addr, addr_len);
	}
	if (metrics->listen_fd < 0) {
		ret = metrics->listen_fd;
		metrics->listen_fd = -1;
		metrics_close(metrics);
		return ret;
	}
	metrics->port = bound_port(metrics->listen_fd);

	flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
	if (addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* The server thread inherits this mask: it must never take SIGTERM/SIGHUP, which the
	 * daemon blocks and reads from a signalfd. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &saved);
	/* Limits: metrics.h. One polling thread: every handler answers from memory at once, and
	 * slow peers cost a slot, not a thread; the limits keep the slots for those who ask. */
	metrics->httpd = MHD_start_daemon(flags, 0, NULL, NULL, handle_request, metrics,
					  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, metrics,
					  MHD_OPTION_LISTEN_SOCKET, metrics->listen_fd,
					  MHD_OPTION_CONNECTION_LIMIT, (unsigned int)METRICS_HARD_CONNECTIONS,
					  MHD_OPTION_PER_IP_CONNECTION_LIMIT,
					  (unsigned int)(METRICS_HARD_CONNECTIONS / 2),
					  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)METRICS_IDLE_TIMEOUT_S,
					  MHD_OPTION_NOTIFY_CONNECTION, on_connection, metrics,
					  MHD_OPTION_NOTIFY_COMPLETED, on_completed, metrics,
					  MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (!metrics->httpd) {
		log_err("metrics: starting the HTTP server on %s failed", where);
		metrics_close(metrics);
		return -EIO;
	}
	log_info("metrics: serving /metrics and /healthz on %s (port %d)", where, metrics->port);
	*out = metrics;
	return 0;
}

void metrics_close(struct metrics *metrics)
{
	if (!metrics)
		return;
	/* MHD_stop_daemon closes the listening socket it was handed; close it here only when
	 * the server never started. */
	if (metrics->httpd)
		MHD_stop_daemon(metrics->httpd);
	else if (metrics->listen_fd >= 0)
		close(metrics->listen_fd);
	if (metrics->log_limit.suppressed)
		log_warn("metrics: %llu similar warnings suppressed before closing",
			 (unsigned long long)metrics->log_limit.suppressed);
	pthread_mutex_destroy(&metrics->log_limit.lock);
	pthread_mutex_destroy(&metrics->conn_lock);
	pthread_mutex_destroy(&metrics->lock);
	free(metrics);
}

int metrics_port(const struct metrics *metrics)
{
	return metrics && metrics->httpd ? metrics->port : 0;
}
