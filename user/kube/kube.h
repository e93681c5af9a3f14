/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A small Kubernetes API client (issue 6): in-cluster configuration (the service-account
 * token, CA and namespace under /var/run/secrets/kubernetes.io/serviceaccount, and
 * KUBERNETES_SERVICE_HOST/PORT) or an explicit server, token file and CA file; HTTPS through
 * libcurl, always verifying the server against the CA; and one worker thread that sends
 * queued work with retries, so that no caller ever waits for the API server.
 *
 * Why a worker thread rather than curl multi in the daemon's epoll loop: what evictd sends is
 * a handful of requests per eviction, but several of them are sequences (read the node,
 * patch its taints with the resourceVersion just read, read again on 409) and every one of
 * them may sit in exponential backoff for minutes while the API server is away. In a worker
 * those are straight-line blocking code; in the event loop each would be a state machine
 * plus timers and curl socket callbacks threaded through daemon.c. The worker shares nothing
 * with the kill path but one mutex that guards the queue, held for list operations only
 * (never across I/O), so kube_submit() returns in microseconds whatever the network does.
 *
 * Threads: kube_submit(), kube_task_wake() and the event-loop calls below may be called from
 * any thread. kube_request() blocks for up to the request timeout and is meant for jobs and
 * tasks, which run in the worker. kube_client_drain() blocks too: exit paths and tests only.
 * The worker thread runs with every signal blocked, whatever the caller's mask. The token is
 * never logged.
 *
 * Event loop (the daemon's epoll loop never waits for the API server):
 *	loop_add_fd(loop, kube_client_event_fd(c), EPOLLIN, false, on_kube, ctx);
 *	on_kube: events = kube_client_dispatch(c);
 *		KUBE_EVENT_PODS: a pods source (kube_report.h) has a new list: pods_refresh();
 *		KUBE_EVENT_IDLE: asked for with kube_client_request_idle_notify(): the queue is
 *		empty and nothing is in flight.
 * Waiting for the queue with a deadline (the end of a node shutdown):
 *	kube_client_request_idle_notify(c); arm a timer at now + 5 s;
 *	whichever comes first, KUBE_EVENT_IDLE or the timer, goes on (release the inhibitor)
 *	and kube_client_cancel_idle_notify(c) / disarms the other.
 */
#ifndef EVICTD_KUBE_H
#define EVICTD_KUBE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KUBE_SERVICE_ACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define KUBE_DEFAULT_REQUEST_TIMEOUT_NS (10ll * 1000000000)
#define KUBE_DEFAULT_BACKOFF_INITIAL_NS (250ll * 1000000)
#define KUBE_DEFAULT_BACKOFF_MAX_NS (30ll * 1000000000)
/* A queued request is given up after this long (an eviction report is still worth sending
 * minutes late: until it lands, the kubelet may restart the pod in place). */
#define KUBE_DEFAULT_RETRY_FOR_NS (15ll * 60 * 1000000000)
#define KUBE_DEFAULT_QUEUE_MAX 256
/* The worker's thread name (comm), as ps and /proc/<pid>/task/<tid>/comm show it. */
#define KUBE_WORKER_THREAD_NAME "evictd-kube"
/* Larger responses are refused: a node's pod list page is a few MiB at most. */
#define KUBE_MAX_RESPONSE_BYTES (64u << 20)

#define KUBE_CONTENT_JSON "application/json"
#define KUBE_CONTENT_MERGE_PATCH "application/merge-patch+json"
#define KUBE_CONTENT_STRATEGIC_PATCH "application/strategic-merge-patch+json"

/* ---- configuration ------------------------------------------------------------------- */

struct kube_config {
	char server[512];		/* "https://host:port", no trailing slash */
	char token_path[PATH_MAX];	/* "" = no Authorization header */
	char ca_path[PATH_MAX];		/* "" = the system's CA store */
	char namespace_[64];		/* the service account's namespace, "" if unknown */
	bool in_cluster;
	/* The PEM file (certificate and key) the pod list and watch present instead of the
	 * token: the kubelet's client certificate (a node identity, system:node:<name>, which the
	 * Node authorizer lets list and watch exactly this node's pods); "" = the token. Every
	 * other request uses the token. */
	char pods_client_cert[PATH_MAX];
};

/* The kubelet's rotating client certificate and key, below its --root-dir
 * (pkg/kubelet/certificate/kubelet.go NewKubeletClientCertificateManager: pairNamePrefix
 * "kubelet-client" in <root-dir>/pki, certificate.FileStore's "-current.pem" symlink). */
#define KUBE_KUBELET_CLIENT_CERT "pki/kubelet-client-current.pem"

struct kube_config_options {
	/* Prefix of the service-account paths (tests); NULL, "" or "/" = this machine. */
	const char *root;
	/* --kube-api-server: "https://host[:port]"; NULL or "" = in-cluster. */
	const char *api_server;
	/* --kube-token-file / --kube-ca-file: override the service account's; NULL or "" = the
	 * service account's when it exists (in-cluster or not), else none / the system CAs. */
	const char *token_file;
	const char *ca_file;
	/* KUBERNETES_SERVICE_HOST / _PORT; NULL = getenv(). */
	const char *service_host;
	const char *service_port;
	/* --kube-pods-client-cert: "auto" (NULL, ""): <kubelet_root_dir>/KUBE_KUBELET_CLIENT_CERT
	 * below root when it is readable and holds a certificate and a key, else the token;
	 * "none": the token; else a PEM file with both, which must be readable. */
	const char *pods_client_cert;
	const char *kubelet_root_dir;	/* --root-dir; NULL or "" = /var/lib/kubelet */
};

/*
 * Resolve where the API server is and how to authenticate. In-cluster needs
 * KUBERNETES_SERVICE_HOST and _PORT (an IPv6 host is bracketed) and the service account's
 * token and ca.crt; the namespace file is optional. An explicit server must be https://.
 * Every failure is logged with the path or variable at fault. Returns 0, -ENOENT (not in a
 * cluster and no server given, or a named file is missing), -EINVAL (a malformed URL or
 * port) or -ENAMETOOLONG.
 */
int kube_config_load(struct kube_config *config, const struct kube_config_options *options);

/* ---- the client ---------------------------------------------------------------------- */

struct kube_client_options {
	const struct kube_config *config;	/* copied */
	int64_t request_timeout_ns;	/* one attempt; 0 = KUBE_DEFAULT_REQUEST_TIMEOUT_NS */
	int64_t backoff_initial_ns;	/* 0 = KUBE_DEFAULT_BACKOFF_INITIAL_NS */
	int64_t backoff_max_ns;		/* 0 = KUBE_DEFAULT_BACKOFF_MAX_NS */
	int64_t retry_for_ns;		/* 0 = KUBE_DEFAULT_RETRY_FOR_NS */
	size_t queue_max;		/* 0 = KUBE_DEFAULT_QUEUE_MAX */
	const char *user_agent;		/* NULL = "evictd" */
	int64_t (*now_ns)(void);	/* CLOCK_MONOTONIC; NULL = the real clock */
};

struct kube_client;

/* Start the worker. Returns 0, -ENOMEM, -EINVAL (no config) or the pthread/curl error. */
int kube_client_new(struct kube_client **out, const struct kube_client_options *options);
/*
 * Stop the worker (a request in flight ends within its timeout) and free everything: queued
 * jobs are dropped, counted in the log, and every task's release() is called. NULL is a
 * no-op.
 */
void kube_client_free(struct kube_client *client);
/*
 * Wait until no job is queued or running and no task has been woken, at most timeout_ns.
 * Blocks the calling thread: never call it from the event loop (use
 * kube_client_request_idle_notify() there). For exit paths after the loop has stopped, and
 * for tests. Returns 0 or -ETIMEDOUT.
 */
int kube_client_drain(struct kube_client *client, int64_t timeout_ns);

/* ---- the event loop ------------------------------------------------------------------- */

/* What kube_client_dispatch() reports. */
#define KUBE_EVENT_IDLE 0x1u	/* the idle notification asked for: nothing left to send */
#define KUBE_EVENT_PODS 0x2u	/* a pods source has a new (or first) pod list */
#define KUBE_EVENT_HEALTH 0x4u	/* a pods source's list/watch health changed (readiness) */

/* An eventfd, readable (EPOLLIN) while events are pending. Owned by the client: register it
 * borrowed; it stays the same for the client's life. */
int kube_client_event_fd(const struct kube_client *client);
/* Take the pending events (KUBE_EVENT_*, 0 when none) and make the fd unreadable again.
 * Never blocks. */
uint32_t kube_client_dispatch(struct kube_client *client);
/* No job queued (a job waiting out its backoff counts as queued) or running, no task woken
 * or running. Never blocks (one short mutex hold). */
bool kube_client_idle(const struct kube_client *client);
/* Post KUBE_EVENT_IDLE once the client is idle: at once (the fd becomes readable) when it is
 * already, else when the worker finishes the last piece of work. One-shot: ask again for
 * another. */
void kube_client_request_idle_notify(struct kube_client *client);
/* Forget a request_idle_notify (the deadline won) and a pending KUBE_EVENT_IDLE. */
void kube_client_cancel_idle_notify(struct kube_client *client);
const struct kube_config *kube_client_config(const struct kube_client *client);

/* Counters, for metrics and tests. */
struct kube_client_stats {
	uint64_t requests;	/* HTTP attempts made */
	uint64_t failures;	/* attempts that failed: transport errors and non-2xx */
	uint64_t retries;	/* jobs rescheduled with backoff */
	uint64_t dropped;	/* jobs refused (queue full) or given up */
	uint64_t token_reloads;	/* times the token file was (re-)read */
	/* The HTTP version of the last answer, any connection (CURLINFO_HTTP_VERSION): 11
	 * (HTTP/1.1), 20 (HTTP/2), 10; 0 before the first. */
	unsigned http_version;
	size_t queued;
};
void kube_client_get_stats(struct kube_client *client, struct kube_client_stats *stats);

/* ---- one request (worker context) ------------------------------------------------------ */

struct kube_response {
	long status;		/* HTTP status; 0 when no answer came */
	char *body;		/* NUL-terminated; NULL when empty */
	size_t body_len;
	int64_t retry_after_ns;	/* from a Retry-After header in seconds; 0 = none */
	/* What went wrong, for the caller's log line: "curl error 7: Failed to connect ..." or
	 * "HTTP 409: <the server's message>"; "" on success. Never contains the token. */
	char error[320];
};
void kube_response_free(struct kube_response *response);

/*
 * One HTTPS attempt: method, path (with query, already escaped) relative to the server,
 * optional body with its content type. The token is re-read first when its file changed
 * (projected tokens rotate), and after a 401 it is re-read and, when it changed, the request
 * is sent once more. Returns 0 when the server answered, whatever the status
 * (response->status), or negative errno for a transport failure: -ETIMEDOUT, -ECONNREFUSED,
 * -EHOSTUNREACH, -EPROTO (TLS, certificate), -EFBIG (response too large), -ENOMEM, -EIO.
 * Either way response->error says what went wrong and the attempt is logged at debug level
 * only: the caller logs once per piece of work, with the URL (kube_url()). Blocks: call it
 * from jobs and tasks.
 */
int kube_request(struct kube_client *client, const char *method, const char *path,
		 const char *content_type, const char *body, struct kube_response *response);

/* The full URL of path, for log lines. */
void kube_url(const struct kube_client *client, const char *path, char *buf, size_t len);

/* Whether a request should be tried again: transport errors, 429 and 5xx (and a 401 once
 * the token has been re-read). */
bool kube_should_retry(int err, long status);

/* "the message" of a Kubernetes Status body, at most len-1 characters; "" when there is none. */
void kube_status_message(const char *body, char *buf, size_t len);

/* The delay before attempt number `attempt` (1 = the first retry): initial * 2^(attempt-1),
 * capped at max, with "equal jitter": a uniform pick in [delay/2, delay] drawn from
 * random_value (any 64-bit value). */
int64_t kube_backoff_ns(int64_t initial_ns, int64_t max_ns, unsigned attempt, uint64_t random_value);
/* The same with the client's settings and its own random state, or the last answer's
 * Retry-After when that is longer (at most 5 minutes). Worker context. */
int64_t kube_client_backoff_ns(struct kube_client *client, unsigned attempt);
/* The client's clock (CLOCK_MONOTONIC, or a test's): a task's retry counts from now, the
 * answer's time, not from its run's start (a 429 may have been queued for seconds). */
int64_t kube_client_now_ns(const struct kube_client *client);

/* URL-escape text (RFC 3986 unreserved kept) into buf. Returns the length, or -ENOSPC. */
int kube_escape(const char *text, char *buf, size_t len);

/* ---- queued work ------------------------------------------------------------------------ */

/* A job's run() result besides 0 (done) and a negative errno (given up; run() logged why). */
#define KUBE_JOB_RETRY 1

struct kube_job_ops {
	/* Runs in the worker; attempt counts from 0. Make requests with kube_request(). Return
	 * 0 when done, KUBE_JOB_RETRY to be run again after the backoff (or the server's
	 * Retry-After), or negative errno to give up. */
	int (*run)(struct kube_client *client, void *ctx, unsigned attempt);
	/* Frees ctx: after the last run, when the job is dropped, or at kube_client_free. */
	void (*release)(void *ctx);
};

/*
 * Queue a job; never blocks (one short mutex hold). `what` names it in the log ("eviction
 * status of default/web-1"). On success the job owns ctx; on failure ctx is released before
 * returning. Returns 0, -ENOBUFS (queue full, logged), -ENOMEM or -ESHUTDOWN.
 */
int kube_submit_job(struct kube_client *client, const struct kube_job_ops *ops, void *ctx,
		    const char *what);

/* The common job: one request, retried per kube_should_retry() until it succeeds or
 * retry_for has passed. A final failure is logged with the URL, the status and the
 * server's message. */
struct kube_request_spec {
	const char *method;
	const char *path;
	const char *content_type;	/* NULL when body is NULL */
	const char *body;		/* copied */
	const char *what;		/* NULL = the path */
	/* 404, or 409 from a metadata.uid precondition: the object is gone or was replaced by
	 * another of the same name; logged at info level, not a failure. */
	bool ok_if_gone;
};
int kube_submit(struct kube_client *client, const struct kube_request_spec *spec);

/* ---- tasks: recurring work in the worker ------------------------------------------------ */

/* run()'s "no deadline: wait for kube_task_wake()" and "unregister me". */
#define KUBE_TASK_IDLE INT64_MAX
#define KUBE_TASK_REMOVE INT64_MIN

struct kube_task_ops {
	/* Runs in the worker when due or woken, after the ready jobs. Returns the monotonic time
	 * to run again, KUBE_TASK_IDLE, or KUBE_TASK_REMOVE. */
	int64_t (*run)(struct kube_client *client, void *ctx, int64_t now_ns);
	/* Called once, in the worker or in kube_client_free, when the task is gone. */
	void (*release)(void *ctx);
};

struct kube_task;

/* Register a task, due at once. Returns NULL (ctx released) on allocation failure. */
struct kube_task *kube_task_add(struct kube_client *client, const struct kube_task_ops *ops, void *ctx);
/* Run it as soon as the worker is free. Never blocks. */
void kube_task_wake(struct kube_task *task);
/* The same, and before the jobs queued meanwhile: a pressure taint newly wanted goes to the
 * API server before the eviction's status patch queued right after it (doc/DESIGN.md §8
 * "Other controllers and evictd's taints"). Never blocks. */
void kube_task_wake_first(struct kube_task *task);

#endif
