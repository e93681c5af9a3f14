// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The Kubernetes API client: configuration, HTTPS via libcurl, the worker and its queue. */
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kube/kube.h"
#include "sys/log.h"

#define KUBE_TOKEN_MAX_BYTES 65536
#define KUBE_WHAT_LEN 192

/* ---- configuration ------------------------------------------------------------------- */

static bool root_is_host(const char *root)
{
	return !root || !root[0] || !strcmp(root, "/");
}

static int join_root(char *buf, size_t len, const char *root, const char *path)
{
	int n = snprintf(buf, len, "%s%s", root_is_host(root) ? "" : root, path);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int copy_path(char *dst, size_t len, const char *src)
{
	if (strlen(src) >= len)
		return -ENAMETOOLONG;
	strcpy(dst, src);
	return 0;
}

/* Read a small file whole, trailing whitespace trimmed. 0 or negative errno. */
static int read_small_file(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	buf[n] = '\0';
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		buf[--n] = '\0';
	return 0;
}

static bool valid_port(const char *port)
{
	char *end;
	long value;

	errno = 0;
	value = strtol(port, &end, 10);
	return port[0] && !*end && !errno && value > 0 && value < 65536;
}

static int in_cluster_server(struct kube_config *config, const struct kube_config_options *options)
{
	const char *host = options->service_host ? options->service_host : getenv("KUBERNETES_SERVICE_HOST");
	const char *port = options->service_port ? options->service_port : getenv("KUBERNETES_SERVICE_PORT");
	int n;

	if (!host || !host[0] || !port || !port[0]) {
		log_err("kube: not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
			"are not both set; give --kube-api-server");
		return -ENOENT;
	}
	if (!valid_port(port)) {
		log_err("kube: KUBERNETES_SERVICE_PORT=\"%s\" is not a port number", port);
		return -EINVAL;
	}
	/* An IPv6 literal needs brackets in a URL (client-go: net.JoinHostPort). */
	n = snprintf(config->server, sizeof(config->server), strchr(host, ':') ? "https://[%s]:%s" :
		     "https://%s:%s", host, port);
	if (n < 0 || (size_t)n >= sizeof(config->server)) {
		log_err("kube: KUBERNETES_SERVICE_HOST is too long");
		return -ENAMETOOLONG;
	}
	return 0;
}

static int explicit_server(struct kube_config *config, const char *url)
{
	size_t len = strlen(url);

	/* The token is a credential: it never travels in clear text. */
	if (strncmp(url, "https://", 8) || len == 8 || strpbrk(url + 8, " \t\n?#")) {
		log_err("kube: --kube-api-server \"%s\": expected https://host[:port][/prefix]", url);
		return -EINVAL;
	}
	while (len > 8 && url[len - 1] == '/')
		len--;
	if (len >= sizeof(config->server)) {
		log_err("kube: --kube-api-server is too long");
		return -ENAMETOOLONG;
	}
	memcpy(config->server, url, len);
	config->server[len] = '\0';
	return 0;
}

int kube_config_load(struct kube_config *config, const struct kube_config_options *options)
{
	char sa_token[PATH_MAX], sa_ca[PATH_MAX], sa_namespace[PATH_MAX];
	int err;

	memset(config, 0, sizeof(*config));
	if ((err = join_root(sa_token, sizeof(sa_token), options->root, KUBE_SERVICE_ACCOUNT_DIR "/token")) ||
	    (err = join_root(sa_ca, sizeof(sa_ca), options->root, KUBE_SERVICE_ACCOUNT_DIR "/ca.crt")) ||
	    (err = join_root(sa_namespace, sizeof(sa_namespace), options->root,
			     KUBE_SERVICE_ACCOUNT_DIR "/namespace"))) {
		log_err("kube: the service-account paths under %s are too long", options->root);
		return err;
	}

	if (options->api_server && options->api_server[0]) {
		err = explicit_server(config, options->api_server);
	} else {
		err = in_cluster_server(config, options);
		config->in_cluster = true;
	}
	if (err)
		return err;

	if (options->token_file && options->token_file[0])
		err = copy_path(config->token_path, sizeof(config->token_path), options->token_file);
	else if (config->in_cluster || access(sa_token, R_OK) == 0)
		err = copy_path(config->token_path, sizeof(config->token_path), sa_token);
	if (!err && (options->ca_file && options->ca_file[0]))
		err = copy_path(config->ca_path, sizeof(config->ca_path), options->ca_file);
	else if (!err && (config->in_cluster || access(sa_ca, R_OK) == 0))
		err = copy_path(config->ca_path, sizeof(config->ca_path), sa_ca);
	if (err) {
		log_err("kube: the token or CA file path is too long");
		return err;
	}
	if (config->token_path[0] && access(config->token_path, R_OK)) {
		err = -errno;
		log_err("kube: token file %s: %s", config->token_path, strerror(-err));
		return err;
	}
	if (config->ca_path[0] && access(config->ca_path, R_OK)) {
		err = -errno;
		log_err("kube: CA file %s: %s", config->ca_path, strerror(-err));
		return err;
	}
	/* Optional: only for messages and as a default namespace. */
	if (read_small_file(sa_namespace, config->namespace_, sizeof(config->namespace_)))
		config->namespace_[0] = '\0';
	log_info("kube: API server %s (%s), token %s, CA %s", config->server,
		 config->in_cluster ? "in-cluster" : "--kube-api-server",
		 config->token_path[0] ? config->token_path : "none",
		 config->ca_path[0] ? config->ca_path : "the system's");
	return 0;
}

/* ---- the client ---------------------------------------------------------------------- */

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

struct kube_client {
	struct kube_config config;
	int64_t request_timeout_ns;
	int64_t backoff_initial_ns;
	int64_t backoff_max_ns;
	int64_t retry_for_ns;
	size_t queue_max;
	char user_agent[64];
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

	/* Worker only. */
	pthread_t thread;
	bool thread_started;
	CURL *curl;
	struct kube_token token;
	uint64_t random_state;
	int64_t retry_after_ns;		/* the last answer's Retry-After, for the next backoff */
};

static int64_t monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

const struct kube_config *kube_client_config(const struct kube_client *client)
{
	return &client->config;
}

void kube_url(const struct kube_client *client, const char *path, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", client->config.server, path);
}

static void count(struct kube_client *client, uint64_t *counter)
{
	pthread_mutex_lock(&client->lock);
	(*counter)++;
	pthread_mutex_unlock(&client->lock);
}

void kube_client_get_stats(struct kube_client *client, struct kube_client_stats *stats)
{
	pthread_mutex_lock(&client->lock);
	*stats = client->stats;
	stats->queued = client->n_queued;
	pthread_mutex_unlock(&client->lock);
}

/* splitmix64: jitter needs spread, not secrecy. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int64_t kube_backoff_ns(int64_t initial_ns, int64_t max_ns, unsigned attempt, uint64_t random_value)
{
	int64_t delay = initial_ns > 0 ? initial_ns : 1;
	int64_t half;

	for (unsigned i = 1; i < attempt && delay < max_ns; i++)
		delay = delay > max_ns / 2 ? max_ns : delay * 2;
	if (delay > max_ns)
		delay = max_ns;
	/* Equal jitter: never less than half the delay, so a crowd of agents still spreads out
	 * without any of them hammering the server. */
	half = delay / 2;
	return delay - half + (int64_t)(random_value % (uint64_t)(half + 1));
}

/* Retry-After from a 429 or 503 wins over our own backoff when longer (at most 5 min). */
#define KUBE_RETRY_AFTER_MAX_NS (300ll * 1000000000)

int64_t kube_client_backoff_ns(struct kube_client *client, unsigned attempt)
{
	int64_t delay = kube_backoff_ns(client->backoff_initial_ns, client->backoff_max_ns, attempt,
					next_random(&client->random_state));
	int64_t asked = client->retry_after_ns < KUBE_RETRY_AFTER_MAX_NS ? client->retry_after_ns :
										 KUBE_RETRY_AFTER_MAX_NS;

	client->retry_after_ns = 0;
	return asked > delay ? asked : delay;
}

bool kube_should_retry(int err, long status)
{
	if (err < 0)
		return err != -EFBIG;
	return status == 429 || status == 401 || status >= 500;
}

void kube_status_message(const char *body, char *buf, size_t len)
{
	struct json_object *doc, *message;

	if (!len)
		return;
	buf[0] = '\0';
	if (!body)
		return;
	doc = json_tokener_parse(body);
	if (doc && json_object_object_get_ex(doc, "message", &message) &&
	    json_object_is_type(message, json_type_string))
		snprintf(buf, len, "%s", json_object_get_string(message));
	json_object_put(doc);
}

int kube_escape(const char *text, char *buf, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t used = 0;

	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		bool plain = isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~';

		if (used + (plain ? 1 : 3) >= len) {
			if (len)
				buf[0] = '\0';
			return -ENOSPC;
		}
		if (plain) {
			buf[used++] = (char)*p;
		} else {
			buf[used++] = '%';
			buf[used++] = hex[*p >> 4];
			buf[used++] = hex[*p & 15];
		}
	}
	if (used >= len)
		return -ENOSPC;
	buf[used] = '\0';
	return (int)used;
}

/* ---- the token (worker only) ------------------------------------------------------------ */

static void token_clear(struct kube_token *token)
{
	if (token->value) {
		explicit_bzero(token->value, strlen(token->value));
		free(token->value);
	}
	memset(token, 0, sizeof(*token));
}

/* Re-read the token when its file is not the one read last (a projected token is replaced
 * through a symlink swap: a new inode), or always with force. 0 or negative errno; the last
 * token stays in use when the file cannot be read. */
static int token_refresh(struct kube_client *client, bool force)
{
	struct kube_token *token = &client->token;
	struct stat st;
	char *value;
	int err;

	if (!client->config.token_path[0])
		return 0;
	if (stat(client->config.token_path, &st)) {
		err = -errno;
		log_warn("kube: token file %s: %s; keeping the last token", client->config.token_path,
			 strerror(-err));
		return err;
	}
	if (!force && token->loaded && st.st_dev == token->dev && st.st_ino == token->ino &&
	    st.st_size == token->size && st.st_mtim.tv_sec == token->mtime.tv_sec &&
	    st.st_mtim.tv_nsec == token->mtime.tv_nsec)
		return 0;
	value = malloc(KUBE_TOKEN_MAX_BYTES);
	if (!value)
		return -ENOMEM;
	err = read_small_file(client->config.token_path, value, KUBE_TOKEN_MAX_BYTES);
	if (err) {
		free(value);
		log_warn("kube: reading token file %s: %s; keeping the last token",
			 client->config.token_path, strerror(-err));
		return err;
	}
	token_clear(token);
	token->value = value;
	token->loaded = true;
	token->dev = st.st_dev;
	token->ino = st.st_ino;
	token->size = st.st_size;
	token->mtime = st.st_mtim;
	count(client, &client->stats.token_reloads);
	log_debug("kube: token read from %s (%zu bytes)", client->config.token_path, strlen(value));
	return 0;
}

/* ---- one request ------------------------------------------------------------------------- */

struct body_buffer {
	char *data;
	size_t len;
	size_t cap;
	bool too_large;
};

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct body_buffer *buffer = userdata;
	size_t n = size * nmemb;

	if (buffer->len + n > KUBE_MAX_RESPONSE_BYTES) {
		buffer->too_large = true;
		return 0;
	}
	if (buffer->len + n + 1 > buffer->cap) {
		size_t cap = buffer->cap ? buffer->cap : 16384;
		char *data;

		while (cap < buffer->len + n + 1)
			cap *= 2;
		data = realloc(buffer->data, cap);
		if (!data)
			return 0;
		buffer->data = data;
		buffer->cap = cap;
	}
	memcpy(buffer->data + buffer->len, ptr, n);
	buffer->len += n;
	buffer->data[buffer->len] = '\0';
	return n;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct kube_response *response = userdata;
	size_t n = size * nmemb;

	if (n > 12 && !strncasecmp(ptr, "Retry-After:", 12)) {
		char value[32];
		size_t len = n - 12 < sizeof(value) - 1 ? n - 12 : sizeof(value) - 1;
		char *end;
		long seconds;

		memcpy(value, ptr + 12, len);
		value[len] = '\0';
		seconds = strtol(value, &end, 10);
		/* Only the delta-seconds form; an HTTP date falls back to our own backoff. */
		if (end != value && seconds > 0)
			response->retry_after_ns = (int64_t)(seconds < 3600 ? seconds : 3600) * 1000000000;
	}
	return n;
}

static int curl_errno(CURLcode code)
{
	switch (code) {
	case CURLE_OPERATION_TIMEDOUT: return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT: return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST: return -EHOSTUNREACH;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM: return -EPROTO;
	case CURLE_OUT_OF_MEMORY: return -ENOMEM;
	default: return -EIO;
	}
}

void kube_response_free(struct kube_response *response)
{
	free(response->body);
	memset(response, 0, sizeof(*response));
}

static int request_once(struct kube_client *client, const char *method, const char *path,
			const char *content_type, const char *body, struct kube_response *response)
{
	char url[sizeof(client->config.server) + 4096];
	char curl_error[CURL_ERROR_SIZE] = "";
	struct body_buffer buffer = { 0 };
	struct curl_slist *headers = NULL;
	char *auth = NULL;
	CURL *curl = client->curl;
	CURLcode code;
	int err = 0;

	kube_response_free(response);
	if (snprintf(url, sizeof(url), "%s%s", client->config.server, path) >= (int)sizeof(url)) {
		snprintf(response->error, sizeof(response->error), "path too long");
		return -ENAMETOOLONG;
	}
	curl_easy_reset(curl);
	headers = curl_slist_append(headers, "Accept: application/json");
	if (content_type) {
		char line[128];

		snprintf(line, sizeof(line), "Content-Type: %s", content_type);
		headers = curl_slist_append(headers, line);
	}
	if (client->token.value && client->token.value[0]) {
		if (asprintf(&auth, "Authorization: Bearer %s", client->token.value) < 0)
			auth = NULL;
		if (auth)
			headers = curl_slist_append(headers, auth);
	}
	if (!headers || (client->token.value && client->token.value[0] && !auth)) {
		err = -ENOMEM;
		snprintf(response->error, sizeof(response->error), "out of memory");
		goto out;
	}
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "https");
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);	/* a thread must not get SIGALRM */
	curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
	if (client->config.ca_path[0])
		curl_easy_setopt(curl, CURLOPT_CAINFO, client->config.ca_path);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)(client->request_timeout_ns / 1000000));
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(client->request_timeout_ns / 1000000 < 5000 ? client->request_timeout_ns / 1000000 : 5000));
	curl_easy_setopt(curl, CURLOPT_USERAGENT, client->user_agent);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_error);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &buffer);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, response);
	if (strcmp(method, "GET"))
		curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
	if (body) {
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	}

	count(client, &client->stats.requests);
	code = curl_easy_perform(curl);
	if (code != CURLE_OK) {
		err = buffer.too_large ? -EFBIG : curl_errno(code);
		snprintf(response->error, sizeof(response->error), "curl error %d: %s", (int)code,
			 buffer.too_large ? "response larger than the limit" :
			 curl_error[0] ? curl_error : curl_easy_strerror(code));
		count(client, &client->stats.failures);
		log_debug("kube: %s %s: %s", method, url, response->error);
		free(buffer.data);
		goto out;
	}
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response->status);
	response->body = buffer.data;
	response->body_len = buffer.len;
	if (response->status < 200 || response->status > 299) {
		char message[256];

		kube_status_message(response->body, message, sizeof(message));
		snprintf(response->error, sizeof(response->error), "HTTP %ld%s%s", response->status,
			 message[0] ? ": " : "", message);
		count(client, &client->stats.failures);
		log_debug("kube: %s %s: %s", method, url, response->error);
	}
out:
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(headers);
	if (auth) {
		explicit_bzero(auth, strlen(auth));
		free(auth);
	}
	return err;
}

int kube_request(struct kube_client *client, const char *method, const char *path,
		 const char *content_type, const char *body, struct kube_response *response)
{
	struct kube_token before;
	int err;

	memset(response, 0, sizeof(*response));
	token_refresh(client, false);
	err = request_once(client, method, path, content_type, body, response);
	client->retry_after_ns = response->retry_after_ns;
	if (err || response->status != 401 || !client->config.token_path[0])
		return err;
	/* A 401 just as the kubelet rotates the token: read the file again and, when it is a
	 * new file, send once more at once; otherwise the caller's backoff applies. */
	before = client->token;
	if (token_refresh(client, true) == 0 &&
	    (client->token.ino != before.ino || client->token.dev != before.dev ||
	     client->token.size != before.size || client->token.mtime.tv_sec != before.mtime.tv_sec ||
	     client->token.mtime.tv_nsec != before.mtime.tv_nsec)) {
		log_info("kube: %s %s: 401 with a token that has since been replaced; retrying with the new one",
			 method, path);
		err = request_once(client, method, path, content_type, body, response);
	}
	return err;
}

/* ---- the worker ------------------------------------------------------------------------- */

static void job_free(struct kube_job *job)
{
	if (job->ops->release)
		job->ops->release(job->ctx);
	free(job);
}

/* The first job due by now, in queue order (FIFO among the ready ones), unlinked. */
static struct kube_job *take_ready_job(struct kube_client *client, int64_t now_ns)
{
	struct kube_job *prev = NULL;

	for (struct kube_job *job = client->head; job; prev = job, job = job->next) {
		if (job->due_ns > now_ns)
			continue;
		if (prev)
			prev->next = job->next;
		else
			client->head = job->next;
		if (client->tail == job)
			client->tail = prev;
		job->next = NULL;
		client->n_queued--;
		return job;
	}
	return NULL;
}

static void append_job(struct kube_client *client, struct kube_job *job)
{
	job->next = NULL;
	if (client->tail)
		client->tail->next = job;
	else
		client->head = job;
	client->tail = job;
	client->n_queued++;
}

static struct kube_task *take_due_task(struct kube_client *client, int64_t now_ns)
{
	for (struct kube_task *task = client->tasks; task; task = task->next)
		if (!task->running && (task->woken || task->due_ns <= now_ns))
			return task;
	return NULL;
}

static void unlink_task(struct kube_client *client, struct kube_task *task)
{
	for (struct kube_task **p = &client->tasks; *p; p = &(*p)->next)
		if (*p == task) {
			*p = task->next;
			return;
		}
}

static int64_t next_deadline(struct kube_client *client)
{
	int64_t deadline = INT64_MAX;

	for (struct kube_job *job = client->head; job; job = job->next)
		if (job->due_ns < deadline)
			deadline = job->due_ns;
	for (struct kube_task *task = client->tasks; task; task = task->next)
		if (!task->running && task->due_ns < deadline)
			deadline = task->due_ns;
	return deadline;
}

/* Wait on the worker's condition until deadline (monotonic ns of client->now_ns). */
static void wait_until(struct kube_client *client, int64_t deadline)
{
	struct timespec abs;
	int64_t wait_ns, target;

	if (deadline == INT64_MAX) {
		pthread_cond_wait(&client->wake, &client->lock);
		return;
	}
	wait_ns = deadline - client->now_ns();
	if (wait_ns <= 0)
		return;
	/* The condition variable runs on CLOCK_MONOTONIC (set at init); client->now_ns may be
	 * an injected clock, so only the difference is used. */
	target = monotonic_ns() + wait_ns;
	abs.tv_sec = target / 1000000000;
	abs.tv_nsec = target % 1000000000;
	pthread_cond_timedwait(&client->wake, &client->lock, &abs);
}

static void run_job(struct kube_client *client, struct kube_job *job)
{
	int result;
	int64_t now, delay;

	pthread_mutex_unlock(&client->lock);
	result = job->ops->run(client, job->ctx, job->attempt);
	now = client->now_ns();
	pthread_mutex_lock(&client->lock);
	if (result != KUBE_JOB_RETRY || client->stop) {
		if (result < 0 || result == KUBE_JOB_RETRY)
			client->stats.dropped++;
		pthread_mutex_unlock(&client->lock);
		job_free(job);
		pthread_mutex_lock(&client->lock);
		return;
	}
	if (now - job->first_ns >= client->retry_for_ns) {
		client->stats.dropped++;
		pthread_mutex_unlock(&client->lock);
		log_err("kube: %s: giving up after %u attempts over %llds", job->what, job->attempt + 1,
			(long long)((now - job->first_ns) / 1000000000));
		job_free(job);
		pthread_mutex_lock(&client->lock);
		return;
	}
	job->attempt++;
	delay = kube_client_backoff_ns(client, job->attempt);
	job->due_ns = now + delay;
	client->stats.retries++;
	append_job(client, job);
}

static void run_task(struct kube_client *client, struct kube_task *task)
{
	int64_t next;

	task->running = true;
	task->woken = false;
	pthread_mutex_unlock(&client->lock);
	next = task->ops->run(client, task->ctx, client->now_ns());
	pthread_mutex_lock(&client->lock);
	task->running = false;
	if (next == KUBE_TASK_REMOVE) {
		unlink_task(client, task);
		pthread_mutex_unlock(&client->lock);
		if (task->ops->release)
			task->ops->release(task->ctx);
		free(task);
		pthread_mutex_lock(&client->lock);
		return;
	}
	task->due_ns = next;
}

static void *worker_main(void *arg)
{
	struct kube_client *client = arg;

	pthread_mutex_lock(&client->lock);
	while (!client->stop) {
		int64_t now = client->now_ns();
		struct kube_job *job = take_ready_job(client, now);
		struct kube_task *task;

		if (job) {
			client->job_running = true;
			run_job(client, job);
			client->job_running = false;
			pthread_cond_broadcast(&client->idle);
			continue;
		}
		task = take_due_task(client, now);
		if (task) {
			run_task(client, task);
			pthread_cond_broadcast(&client->idle);
			continue;
		}
		pthread_cond_broadcast(&client->idle);
		wait_until(client, next_deadline(client));
	}
	pthread_mutex_unlock(&client->lock);
	return NULL;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

/* curl_global_init is not thread-safe: once, before any worker exists. */
static void curl_init_once(void)
{
	curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int kube_client_new(struct kube_client **out, const struct kube_client_options *options)
{
	struct kube_client *client;
	pthread_condattr_t attr;
	int err;

	*out = NULL;
	if (!options || !options->config || !options->config->server[0])
		return -EINVAL;
	pthread_once(&curl_once, curl_init_once);
	if (curl_init_result != CURLE_OK) {
		log_err("kube: curl_global_init: %s", curl_easy_strerror(curl_init_result));
		return -EIO;
	}
	client = calloc(1, sizeof(*client));
	if (!client)
		return -ENOMEM;
	client->config = *options->config;
	client->request_timeout_ns = options->request_timeout_ns > 0 ? options->request_timeout_ns :
				     KUBE_DEFAULT_REQUEST_TIMEOUT_NS;
	client->backoff_initial_ns = options->backoff_initial_ns > 0 ? options->backoff_initial_ns :
				     KUBE_DEFAULT_BACKOFF_INITIAL_NS;
	client->backoff_max_ns = options->backoff_max_ns > 0 ? options->backoff_max_ns :
				 KUBE_DEFAULT_BACKOFF_MAX_NS;
	if (client->backoff_max_ns < client->backoff_initial_ns)
		client->backoff_max_ns = client->backoff_initial_ns;
	client->retry_for_ns = options->retry_for_ns > 0 ? options->retry_for_ns : KUBE_DEFAULT_RETRY_FOR_NS;
	client->queue_max = options->queue_max ? options->queue_max : KUBE_DEFAULT_QUEUE_MAX;
	snprintf(client->user_agent, sizeof(client->user_agent), "%s",
		 options->user_agent ? options->user_agent : "evictd");
	client->now_ns = options->now_ns ? options->now_ns : monotonic_ns;
	client->random_state = (uint64_t)monotonic_ns() ^ ((uint64_t)getpid() << 32);

	client->curl = curl_easy_init();
	if (!client->curl) {
		free(client);
		return -ENOMEM;
	}
	pthread_mutex_init(&client->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&client->wake, &attr);
	pthread_cond_init(&client->idle, &attr);
	pthread_condattr_destroy(&attr);
	err = pthread_create(&client->thread, NULL, worker_main, client);
	if (err) {
		log_err("kube: starting the API worker thread: %s", strerror(err));
		kube_client_free(client);
		return -err;
	}
	client->thread_started = true;
	*out = client;
	return 0;
}

void kube_client_free(struct kube_client *client)
{
	struct kube_job *job;
	struct kube_task *task;
	size_t dropped = 0;

	if (!client)
		return;
	pthread_mutex_lock(&client->lock);
	client->stop = true;
	pthread_cond_broadcast(&client->wake);
	pthread_mutex_unlock(&client->lock);
	if (client->thread_started)
		pthread_join(client->thread, NULL);

	while ((job = client->head)) {
		client->head = job->next;
		dropped++;
		job_free(job);
	}
	if (dropped)
		log_warn("kube: stopping with %zu API requests still queued; they are dropped", dropped);
	while ((task = client->tasks)) {
		client->tasks = task->next;
		if (task->ops->release)
			task->ops->release(task->ctx);
		free(task);
	}
	token_clear(&client->token);
	if (client->curl)
		curl_easy_cleanup(client->curl);
	pthread_cond_destroy(&client->wake);
	pthread_cond_destroy(&client->idle);
	pthread_mutex_destroy(&client->lock);
	free(client);
}

int kube_client_drain(struct kube_client *client, int64_t timeout_ns)
{
	int64_t deadline = monotonic_ns() + timeout_ns;
	int err = 0;

	pthread_mutex_lock(&client->lock);
	for (;;) {
		bool busy = client->head || client->job_running;

		for (struct kube_task *task = client->tasks; task && !busy; task = task->next)
			busy = task->woken || task->running;
		if (!busy || client->stop)
			break;
		if (monotonic_ns() >= deadline) {
			err = -ETIMEDOUT;
			break;
		}
		{
			struct timespec abs = { deadline / 1000000000, deadline % 1000000000 };
			/* Wake at least every 50 ms: a retrying job sits in the queue while waiting. */
			int64_t soon = monotonic_ns() + 50000000;

			if (soon < deadline) {
				abs.tv_sec = soon / 1000000000;
				abs.tv_nsec = soon % 1000000000;
			}
			pthread_cond_timedwait(&client->idle, &client->lock, &abs);
		}
	}
	pthread_mutex_unlock(&client->lock);
	return err;
}

int kube_submit_job(struct kube_client *client, const struct kube_job_ops *ops, void *ctx,
		    const char *what)
{
	struct kube_job *job = calloc(1, sizeof(*job));
	int err = 0;

	if (!job) {
		if (ops->release)
			ops->release(ctx);
		return -ENOMEM;
	}
	job->ops = ops;
	job->ctx = ctx;
	snprintf(job->what, sizeof(job->what), "%s", what ? what : "request");
	job->first_ns = job->due_ns = client->now_ns();

	pthread_mutex_lock(&client->lock);
	if (client->stop)
		err = -ESHUTDOWN;
	else if (client->n_queued >= client->queue_max)
		err = -ENOBUFS;
	if (err) {
		client->stats.dropped++;
	} else {
		append_job(client, job);
		pthread_cond_signal(&client->wake);
	}
	pthread_mutex_unlock(&client->lock);
	if (err) {
		if (err == -ENOBUFS)
			log_err("kube: %s: dropped, %zu API requests are already queued (is the API "
				"server reachable?)", job->what, client->queue_max);
		job_free(job);
	}
	return err;
}

/* ---- the plain request job --------------------------------------------------------------- */

struct request_job {
	char method[8];
	char *path;
	char *content_type;
	char *body;
	char *what;
	bool ok_if_gone;
	bool warned;
};

static void request_job_release(void *ctx)
{
	struct request_job *job = ctx;

	free(job->path);
	free(job->content_type);
	free(job->body);
	free(job->what);
	free(job);
}

static int request_job_run(struct kube_client *client, void *ctx, unsigned attempt)
{
	struct request_job *job = ctx;
	struct kube_response response;
	char url[sizeof(client->config.server) + 256];
	int err;

	err = kube_request(client, job->method, job->path, job->content_type, job->body, &response);
	kube_url(client, job->path, url, sizeof(url));
	if (!err && response.status >= 200 && response.status <= 299) {
		if (attempt)
			log_info("kube: %s: %s %s done after %u attempts", job->what, job->method, url,
				 attempt + 1);
		kube_response_free(&response);
		return 0;
	}
	if (!err && (response.status == 404 || response.status == 409) && job->ok_if_gone) {
		log_info("kube: %s: %s %s: %s (gone or replaced meanwhile); nothing to do", job->what,
			 job->method, url, response.error);
		kube_response_free(&response);
		return 0;
	}
	if (kube_should_retry(err, response.status)) {
		/* Once per job at warning level; the retries themselves at debug. */
		if (!job->warned)
			log_warn("kube: %s: %s %s: %s; retrying with backoff", job->what, job->method, url,
				 response.error);
		job->warned = true;
		kube_response_free(&response);
		return KUBE_JOB_RETRY;
	}
	log_err("kube: %s: %s %s: %s; not retried", job->what, job->method, url, response.error);
	kube_response_free(&response);
	return err ? err : -EPROTO;
}

static const struct kube_job_ops request_job_ops = {
	.run = request_job_run,
	.release = request_job_release,
};

int kube_submit(struct kube_client *client, const struct kube_request_spec *spec)
{
	struct request_job *job = calloc(1, sizeof(*job));

	if (!job)
		return -ENOMEM;
	snprintf(job->method, sizeof(job->method), "%s", spec->method);
	job->path = strdup(spec->path);
	job->content_type = spec->content_type ? strdup(spec->content_type) : NULL;
	job->body = spec->body ? strdup(spec->body) : NULL;
	job->what = strdup(spec->what ? spec->what : spec->path);
	job->ok_if_gone = spec->ok_if_gone;
	if (!job->path || !job->what || (spec->content_type && !job->content_type) ||
	    (spec->body && !job->body)) {
		request_job_release(job);
		return -ENOMEM;
	}
	return kube_submit_job(client, &request_job_ops, job, job->what);
}

/* ---- tasks ----------------------------------------------------------------------------- */

struct kube_task *kube_task_add(struct kube_client *client, const struct kube_task_ops *ops, void *ctx)
{
	struct kube_task *task = calloc(1, sizeof(*task));

	if (!task) {
		if (ops->release)
			ops->release(ctx);
		return NULL;
	}
	task->client = client;
	task->ops = ops;
	task->ctx = ctx;
	task->woken = true;
	pthread_mutex_lock(&client->lock);
	task->next = client->tasks;
	client->tasks = task;
	pthread_cond_signal(&client->wake);
	pthread_mutex_unlock(&client->lock);
	return task;
}

void kube_task_wake(struct kube_task *task)
{
	struct kube_client *client = task->client;

	pthread_mutex_lock(&client->lock);
	task->woken = true;
	pthread_cond_signal(&client->wake);
	pthread_mutex_unlock(&client->lock);
}
