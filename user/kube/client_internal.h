/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Inside the Kubernetes API client: shared by kube/config.c, kube/http.c and kube/client.c,
 * never included from outside user/kube/. */
#ifndef EVICTD_KUBE_CLIENT_INTERNAL_H
#define EVICTD_KUBE_CLIENT_INTERNAL_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "kube/kube.h"

#define KUBE_TOKEN_MAX_BYTES 65536
/* A client certificate PEM (certificate chain and key) read to check it holds both. */
#define KUBE_CLIENT_CERT_MAX_BYTES (256u << 10)
#define KUBE_WHAT_LEN 192

struct kube_job {
	struct kube_job *next;
	const struct kube_job_ops *ops;
	void *ctx;
	char what[KUBE_WHAT_LEN];
	unsigned attempt;
	int64_t first_ns;
	int64_t due_ns;
};

struct kube_task {
	struct kube_task *next;
	struct kube_client *client;
	const struct kube_task_ops *ops;
	void *ctx;
	int64_t due_ns;
	bool woken;
	bool first;	/* woken by kube_task_wake_first: runs before queued jobs */
	bool running;
};

/* The token as last read, and the file identity it was read at. */
struct kube_token {
	char *value;		/* NULL: none read (or no token configured) */
	bool loaded;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

/* One connection's own libcurl handle and token: the worker's (client->conn), and each
 * long-lived stream's (a watch runs in its own thread). */
struct kube_conn {
	CURL *curl;
	struct kube_token token;
	/* Set by the owner after kube_conn_init: a PEM file (certificate and key) presented
	 * instead of the token (kube_config.pods_client_cert); NULL: the token. libcurl reads it
	 * on every new connection, so a rotated file is used from the next TLS handshake on. */
	const char *client_cert;
};

/* A streamed response (a watch): the 2xx body goes to on_data as it arrives instead of
 * being buffered; a non-2xx body is buffered as usual, for its Status message. on_data
 * returns false to abort the transfer; should_stop is polled about once a second and while
 * data flows, true aborts too. Either abort ends the request with -ECANCELED. */
struct kube_stream_ops {
	/* NULL: the body is buffered as without a stream (should_stop still applies). */
	bool (*on_data)(const char *data, size_t len, void *ctx);
	/* Optional: the headers are in (status), before any of the body. */
	void (*on_open)(long status, void *ctx);
	bool (*should_stop)(void *ctx);
	void *ctx;
	/* > 0: libcurl's low-speed limit (under 1 byte/s for this long ends the request). */
	int64_t idle_timeout_ns;
};

/* TCP keepalive on stream connections (seconds): the first probe after this much silence,
 * then one every KEEPINTVL; the kernel's tcp_keepalive_probes (9) end a dead connection. */
#define KUBE_STREAM_KEEPIDLE_S 30L
#define KUBE_STREAM_KEEPINTVL_S 10L
/* Retry-After from a 429 or 503 is honoured up to this (client-go's rest/with_retry.go
 * checkWait reads it on 429 and 5xx; a bound keeps a bad header from parking us for hours). */
#define KUBE_RETRY_AFTER_MAX_NS (300ll * 1000000000)
int64_t kube_retry_after_bounded(int64_t retry_after_ns);
/* Retry-After (bounded) plus a random extra in [0, it): [RA, 2 RA); 0 without one. */
int64_t kube_retry_after_jittered(int64_t retry_after_ns, uint64_t random_value);

/* client-go's reflector backoff: tools/cache/reflector.go NewReflectorWithOptions builds
 * wait.Backoff{Duration: 800 ms, Factor: 2, Jitter: 1.0, Cap: 30 s} with DelayWithReset(clock,
 * 2 min) (k8s.io/apimachinery/pkg/util/wait/backoff.go, backoffManager.Step), and takes a delay
 * between every two ListAndWatch rounds (RunWithContext: delayHandler.Until). One difference:
 * backoffManager.Step resets 2 min after its last reset even in the middle of an outage; this
 * resets only after reset_ns without any delay taken (2 min of health). */
#define KUBE_REFLECTOR_BACKOFF_INITIAL_NS (800ll * 1000000)
#define KUBE_REFLECTOR_BACKOFF_CAP_NS (30ll * 1000000000)
#define KUBE_REFLECTOR_BACKOFF_RESET_NS (120ll * 1000000000)
struct kube_delay {
	int64_t initial_ns, cap_ns, reset_ns;
	int64_t next_ns;	/* the next step before jitter; 0: initial */
	int64_t last_ns;	/* when the last delay was taken; 0: never */
};
/* The next delay, in [step, 2 * step) (Jitter 1.0); step doubles to cap_ns. */
int64_t kube_delay_next(struct kube_delay *d, int64_t now_ns, uint64_t random_value);

/* A Status (the body of a refused request, or a watch's ERROR event object) that says the
 * resourceVersion asked for is newer than the API server's watch cache has (504 Timeout with
 * details.causes[].reason ResourceVersionTooLarge: apiserver pkg/storage/errors.go
 * NewTooLargeResourceVersionError), as client-go's reflector isTooLargeResourceVersionError
 * reads it, older servers' message forms included. */
bool kube_status_too_large_rv(const char *body);
struct json_object;
bool kube_status_object_too_large_rv(struct json_object *status);

/* EVICTD_KUBE_HTTP_VERSION (doc/evictd.8 ENVIRONMENT, for troubleshooting proxies): "1.1"
 * CURL_HTTP_VERSION_1_1, "2" CURL_HTTP_VERSION_2TLS (h2 by ALPN, else HTTP/1.1), unset:
 * CURL_HTTP_VERSION_NONE, libcurl's default (the same as "2" for https since 7.62). Another
 * value is logged and ignored. kube_http_version_from_env reads the variable, logging what it
 * sets. */
long kube_http_version_parse(const char *text);
long kube_http_version_from_env(void);

int kube_conn_init(struct kube_conn *conn);
void kube_conn_cleanup(struct kube_conn *conn);
/* kube_request() on conn, with its own timeout (0 = the client's request timeout) and,
 * when stream is non-NULL, the body streamed (kube_stream_ops). Any thread that owns conn. */
int kube_conn_request(struct kube_client *client, struct kube_conn *conn, const char *method,
		      const char *path, const char *content_type, const char *body, int64_t timeout_ns,
		      const struct kube_stream_ops *stream, struct kube_response *response);

struct kube_client {
	struct kube_config config;
	int64_t request_timeout_ns;
	int64_t backoff_initial_ns;
	int64_t backoff_max_ns;
	int64_t retry_for_ns;
	size_t queue_max;
	char user_agent[64];
	long http_version;		/* CURLOPT_HTTP_VERSION; CURL_HTTP_VERSION_NONE: libcurl's */
	int64_t (*now_ns)(void);

	pthread_mutex_t lock;		/* everything below until "worker only" */
	pthread_cond_t wake;		/* work for the worker, or stop */
	pthread_cond_t idle;		/* the worker finished something */
	struct kube_job *head, *tail;
	size_t n_queued;
	bool job_running;
	struct kube_task *tasks;
	bool stop;
	struct kube_client_stats stats;
	uint32_t events;		/* KUBE_EVENT_* posted, not yet dispatched */
	bool idle_notify;		/* post KUBE_EVENT_IDLE once nothing is left to do */
	unsigned streams;		/* threads of their own using the client (pod watches) */

	/* Set at creation. */
	int event_fd;			/* eventfd: readable while events is not 0 */

	/* Worker only. */
	pthread_t thread;
	bool thread_started;
	struct kube_conn conn;
	uint64_t random_state;
	int64_t retry_after_ns;		/* the last answer's Retry-After, for the next backoff */
};

/* Read a small file whole, trailing whitespace trimmed (the token, the namespace). 0 or
 * negative errno. */
int kube_read_trimmed(const char *path, char *buf, size_t len);
/* One counter of client->stats, under the lock. */
void kube_client_count(struct kube_client *client, uint64_t *counter);
/* Forget the token, wiping it from memory. */
void kube_token_clear(struct kube_token *token);
/* Post events (KUBE_EVENT_*) for the daemon's loop: they accumulate until
 * kube_client_dispatch(). Any thread; takes client->lock. */
void kube_client_post(struct kube_client *client, uint32_t events);
/* A thread of its own (a pod watch) starts and ends using the client: kube_client_free()
 * waits for every stream to end, and kube_client_stopping() tells them to. */
int kube_client_stream_begin(struct kube_client *client);
void kube_client_stream_end(struct kube_client *client);
bool kube_client_stopping(struct kube_client *client);
/* splitmix64: jitter needs spread, not secrecy. */
uint64_t kube_next_random(uint64_t *state);

#endif
