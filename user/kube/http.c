// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The Kubernetes API client's HTTPS side: one request through libcurl, the token, the
 * retry policy and small helpers. Runs in the worker (kube/client.c). */
#include <ctype.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "kube/client_internal.h"
#include "sys/log.h"

const struct kube_config *kube_client_config(const struct kube_client *client)
{
	return &client->config;
}

void kube_url(const struct kube_client *client, const char *path, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", client->config.server, path);
}

void kube_client_count(struct kube_client *client, uint64_t *counter)
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

uint64_t kube_next_random(uint64_t *state)
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

int64_t kube_delay_next(struct kube_delay *d, int64_t now_ns, uint64_t random_value)
{
	int64_t delay;

	/* Reset once no delay was taken for reset_ns: the server has been healthy that long. */
	if (!d->next_ns || (d->last_ns && now_ns - d->last_ns > d->reset_ns))
		d->next_ns = d->initial_ns > 0 ? d->initial_ns : 1;
	d->last_ns = now_ns;
	delay = d->next_ns < d->cap_ns ? d->next_ns : d->cap_ns;
	d->next_ns = delay > d->cap_ns / 2 ? d->cap_ns : delay * 2;	/* Factor 2, Cap */
	/* wait.Jitter(duration, 1.0): duration + rand * duration, in [delay, 2 * delay). */
	return delay + (int64_t)(random_value % (uint64_t)delay);
}

int64_t kube_retry_after_bounded(int64_t retry_after_ns)
{
	return retry_after_ns < KUBE_RETRY_AFTER_MAX_NS ? retry_after_ns : KUBE_RETRY_AFTER_MAX_NS;
}

int64_t kube_retry_after_jittered(int64_t retry_after_ns, uint64_t random_value)
{
	int64_t asked = kube_retry_after_bounded(retry_after_ns);

	if (asked <= 0)
		return 0;
	/* client-go waits exactly Retry-After (rest/with_retry.go IsNextRetry: Wait = seconds;
	 * Before: max(backoff, Wait)): the clients the server refused together retry together
	 * and meet the same 429. A random extra in [0, Retry-After) spreads them over twice it. */
	return asked + (int64_t)(random_value % (uint64_t)asked);
}

int64_t kube_client_backoff_ns(struct kube_client *client, unsigned attempt)
{
	int64_t delay = kube_backoff_ns(client->backoff_initial_ns, client->backoff_max_ns, attempt,
					kube_next_random(&client->random_state));
	int64_t asked = kube_retry_after_bounded(client->retry_after_ns);

	client->retry_after_ns = 0;
	return asked > delay ? asked : delay;
}

int64_t kube_client_now_ns(const struct kube_client *client)
{
	return client->now_ns();
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

bool kube_status_object_too_large_rv(struct json_object *status)
{
	static const char too_large[] = "Too large resource version";
	struct json_object *details, *causes, *message;
	const char *reason = NULL;
	bool timeout;
	size_t n;

	if (!status || !json_object_is_type(status, json_type_object))
		return false;
	if (json_object_object_get_ex(status, "reason", &message) && json_object_is_type(message, json_type_string))
		reason = json_object_get_string(message);
	timeout = reason && !strcmp(reason, "Timeout");	/* apierrors.IsTimeout */
	if (json_object_object_get_ex(status, "details", &details) &&
	    json_object_object_get_ex(details, "causes", &causes) && json_object_is_type(causes, json_type_array)) {
		n = json_object_array_length(causes);
		for (size_t i = 0; i < n; i++) {
			struct json_object *cause = json_object_array_get_idx(causes, i), *field;

			/* metav1.StatusCause's Type is "reason" on the wire (HasStatusCause). */
			if (json_object_object_get_ex(cause, "reason", &field) &&
			    json_object_is_type(field, json_type_string) &&
			    !strcmp(json_object_get_string(field), "ResourceVersionTooLarge"))
				return true;
			/* API servers 1.17.0-1.18.5: the cause's message only. */
			if (timeout && json_object_object_get_ex(cause, "message", &field) &&
			    json_object_is_type(field, json_type_string) &&
			    !strcmp(json_object_get_string(field), too_large))
				return true;
		}
	}
	/* Before 1.17: the Status message. */
	return timeout && json_object_object_get_ex(status, "message", &message) &&
	       json_object_is_type(message, json_type_string) && strstr(json_object_get_string(message), too_large);
}

bool kube_status_too_large_rv(const char *body)
{
	struct json_object *doc;
	bool result;

	if (!body)
		return false;
	doc = json_tokener_parse(body);
	result = kube_status_object_too_large_rv(doc);
	json_object_put(doc);
	return result;
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

long kube_http_version_parse(const char *text)
{
	if (!text || !text[0])
		return CURL_HTTP_VERSION_NONE;
	if (!strcmp(text, "1.1"))
		return CURL_HTTP_VERSION_1_1;
	if (!strcmp(text, "2"))
		return CURL_HTTP_VERSION_2TLS;
	return -1;
}

long kube_http_version_from_env(void)
{
	const char *text = getenv("EVICTD_KUBE_HTTP_VERSION");
	long version = kube_http_version_parse(text);

	if (version < 0) {
		log_warn("kube: EVICTD_KUBE_HTTP_VERSION=%s is not 1.1 or 2; libcurl's default (HTTP/2 where the "
			 "server offers it)", text);
		return CURL_HTTP_VERSION_NONE;
	}
	if (version != CURL_HTTP_VERSION_NONE)
		log_info("kube: EVICTD_KUBE_HTTP_VERSION=%s: %s", text, version == CURL_HTTP_VERSION_1_1 ?
			 "HTTP/1.1 only" : "HTTP/2 where the server offers it by ALPN, else HTTP/1.1");
	return version;
}

/* CURLINFO_HTTP_VERSION as 10, 11, 20, 30; 0 unknown. */
static unsigned http_version_number(long info)
{
	switch (info) {
	case CURL_HTTP_VERSION_1_0: return 10;
	case CURL_HTTP_VERSION_1_1: return 11;
	case CURL_HTTP_VERSION_2_0: return 20;
	case CURL_HTTP_VERSION_3: return 30;
	default: return 0;
	}
}

/* ---- the token (worker only) ------------------------------------------------------------ */

void kube_token_clear(struct kube_token *token)
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
static int token_refresh(struct kube_client *client, struct kube_token *token, bool force)
{
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
	err = kube_read_trimmed(client->config.token_path, value, KUBE_TOKEN_MAX_BYTES);
	if (err) {
		free(value);
		log_warn("kube: reading token file %s: %s; keeping the last token",
			 client->config.token_path, strerror(-err));
		return err;
	}
	kube_token_clear(token);
	token->value = value;
	token->loaded = true;
	token->dev = st.st_dev;
	token->ino = st.st_ino;
	token->size = st.st_size;
	token->mtime = st.st_mtim;
	kube_client_count(client, &client->stats.token_reloads);
	log_debug("kube: token read from %s (%zu bytes)", client->config.token_path, strlen(value));
	return 0;
}

/* ---- one request ------------------------------------------------------------------------- */

struct body_buffer {
	char *data;
	size_t len;
	size_t cap;
	bool too_large;
	CURL *curl;
	const struct kube_stream_ops *stream;	/* NULL: buffer everything */
	bool aborted;				/* the stream said stop */
	bool opened;				/* on_open was called */
	struct kube_response *response;
};

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct body_buffer *buffer = userdata;
	size_t n = size * nmemb;

	if (buffer->stream && buffer->stream->on_data) {
		long status = 0;

		curl_easy_getinfo(buffer->curl, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 200 && status <= 299) {
			if (buffer->stream->on_data(ptr, n, buffer->stream->ctx))
				return n;
			buffer->aborted = true;
			return 0;
		}
	}

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
	struct body_buffer *buffer = userdata;
	struct kube_response *response = buffer->response;
	size_t n = size * nmemb;

	/* The blank line after the headers: a stream is open (or refused) now, before any of
	 * its body, which may not come for minutes. */
	if (buffer->stream && buffer->stream->on_open && !buffer->opened && (n == 2 || n == 1) &&
	    (ptr[0] == '\r' || ptr[0] == '\n')) {
		long status = 0;

		curl_easy_getinfo(buffer->curl, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 200) {	/* not a 1xx interim answer */
			buffer->opened = true;
			buffer->stream->on_open(status, buffer->stream->ctx);
		}
	}

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

static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct body_buffer *buffer = userdata;

	if (buffer->stream && buffer->stream->should_stop && buffer->stream->should_stop(buffer->stream->ctx)) {
		buffer->aborted = true;
		return 1;
	}
	return 0;
}

int kube_conn_init(struct kube_conn *conn)
{
	memset(conn, 0, sizeof(*conn));
	conn->curl = curl_easy_init();
	return conn->curl ? 0 : -ENOMEM;
}

void kube_conn_cleanup(struct kube_conn *conn)
{
	kube_token_clear(&conn->token);
	if (conn->curl)
		curl_easy_cleanup(conn->curl);
	conn->curl = NULL;
}

void kube_response_free(struct kube_response *response)
{
	free(response->body);
	memset(response, 0, sizeof(*response));
}

static int request_once(struct kube_client *client, struct kube_conn *conn, const char *method,
			const char *path, const char *content_type, const char *body, int64_t timeout_ns,
			const struct kube_stream_ops *stream, struct kube_response *response)
{
	char url[sizeof(client->config.server) + 4096];
	char curl_error[CURL_ERROR_SIZE] = "";
	struct body_buffer buffer = { .curl = conn->curl, .stream = stream, .response = response };
	struct curl_slist *headers = NULL;
	struct kube_token *token = &conn->token;
	char *auth = NULL;
	CURL *curl = conn->curl;
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
	/* A client certificate authenticates on its own: no Authorization header with it (the
	 * API server's authenticators are a union; the x509 one would win anyway). */
	if (!conn->client_cert && token->value && token->value[0]) {
		if (asprintf(&auth, "Authorization: Bearer %s", token->value) < 0)
			auth = NULL;
		if (auth)
			headers = curl_slist_append(headers, auth);
	}
	if (!headers || (!conn->client_cert && token->value && token->value[0] && !auth)) {
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
	if (conn->client_cert) {
		/* One PEM file with both (the kubelet's -current.pem), read at each new
		 * connection's handshake. No TLS session resumption: a resumed session keeps the
		 * certificate of the handshake it came from, so a rotated file would not be sent
		 * until the session cache let go of the old one. */
		curl_easy_setopt(curl, CURLOPT_SSLCERT, conn->client_cert);
		curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(curl, CURLOPT_SSLKEY, conn->client_cert);
		curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
		curl_easy_setopt(curl, CURLOPT_SSL_SESSIONID_CACHE, 0L);
	}
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)(timeout_ns / 1000000));
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(client->request_timeout_ns / 1000000 < 5000 ? client->request_timeout_ns / 1000000 : 5000));
	if (stream) {
		curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &buffer);
		/* A peer that vanished (no FIN, no RST: a black hole) is found by the kernel's
		 * keepalive probes, not by waiting out timeoutSeconds. */
		curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
		curl_easy_setopt(curl, CURLOPT_TCP_KEEPIDLE, KUBE_STREAM_KEEPIDLE_S);
		curl_easy_setopt(curl, CURLOPT_TCP_KEEPINTVL, KUBE_STREAM_KEEPINTVL_S);
		if (stream->idle_timeout_ns > 0) {
			/* Less than a byte a second for that long: nothing arrives. A backstop to
			 * the reader's own progress check (should_stop). */
			curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
			curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
					 (long)((stream->idle_timeout_ns + 999999999) / 1000000000));
		}
	}
	if (client->http_version != CURL_HTTP_VERSION_NONE)
		curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, client->http_version);
	curl_easy_setopt(curl, CURLOPT_USERAGENT, client->user_agent);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_error);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &buffer);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, &buffer);
	if (strcmp(method, "GET"))
		curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
	if (body) {
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	}

	kube_client_count(client, &client->stats.requests);
	code = curl_easy_perform(curl);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response->status);
	if (response->status) {
		long version = 0;

		curl_easy_getinfo(curl, CURLINFO_HTTP_VERSION, &version);
		pthread_mutex_lock(&client->lock);
		client->stats.http_version = http_version_number(version);
		pthread_mutex_unlock(&client->lock);
	}
	if (code != CURLE_OK) {
		err = buffer.aborted ? -ECANCELED : buffer.too_large ? -EFBIG : curl_errno(code);
		snprintf(response->error, sizeof(response->error), "curl error %d: %s", (int)code,
			 buffer.aborted ? "stopped by the reader" :
			 buffer.too_large ? "response larger than the limit" :
			 curl_error[0] ? curl_error : curl_easy_strerror(code));
		kube_client_count(client, &client->stats.failures);
		log_debug("kube: %s %s: %s", method, url, response->error);
		free(buffer.data);
		goto out;
	}
	response->body = buffer.data;
	response->body_len = buffer.len;
	if (response->status < 200 || response->status > 299) {
		char message[256];

		kube_status_message(response->body, message, sizeof(message));
		snprintf(response->error, sizeof(response->error), "HTTP %ld%s%s", response->status,
			 message[0] ? ": " : "", message);
		kube_client_count(client, &client->stats.failures);
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

/* A new libcurl handle for conn: its cached connections (and their TLS sessions) closed. */
static int conn_reconnect(struct kube_conn *conn)
{
	CURL *fresh = curl_easy_init();

	if (!fresh)
		return -ENOMEM;
	curl_easy_cleanup(conn->curl);
	conn->curl = fresh;
	return 0;
}

int kube_conn_request(struct kube_client *client, struct kube_conn *conn, const char *method,
		      const char *path, const char *content_type, const char *body, int64_t timeout_ns,
		      const struct kube_stream_ops *stream, struct kube_response *response)
{
	struct kube_token before;
	int err;

	if (timeout_ns <= 0)
		timeout_ns = client->request_timeout_ns;
	memset(response, 0, sizeof(*response));
	if (!conn->client_cert)
		token_refresh(client, &conn->token, false);
	err = request_once(client, conn, method, path, content_type, body, timeout_ns, stream, response);
	if (conn == &client->conn)
		client->retry_after_ns = response->retry_after_ns;
	if (!err && response->status == 401 && conn->client_cert) {
		/* The certificate this connection was made with is no longer accepted (expired:
		 * the kubelet rotated the file meanwhile). Only a new TLS handshake sends the
		 * file as it is now: close the connection and send once more at once. */
		log_info("kube: %s %s: 401 with the client certificate of this connection; reconnecting with %s "
			 "as it is now", method, path, conn->client_cert);
		if (conn_reconnect(conn) == 0)
			err = request_once(client, conn, method, path, content_type, body, timeout_ns, stream,
					   response);
		return err;
	}
	if (err || response->status != 401 || !client->config.token_path[0])
		return err;
	/* A 401 just as the kubelet rotates the token: read the file again and, when it is a
	 * new file, send once more at once; otherwise the caller's backoff applies. */
	before = conn->token;
	if (token_refresh(client, &conn->token, true) == 0 &&
	    (conn->token.ino != before.ino || conn->token.dev != before.dev ||
	     conn->token.size != before.size || conn->token.mtime.tv_sec != before.mtime.tv_sec ||
	     conn->token.mtime.tv_nsec != before.mtime.tv_nsec)) {
		log_info("kube: %s %s: 401 with a token that has since been replaced; retrying with the new one",
			 method, path);
		err = request_once(client, conn, method, path, content_type, body, timeout_ns, stream, response);
	}
	return err;
}

int kube_request(struct kube_client *client, const char *method, const char *path,
		 const char *content_type, const char *body, struct kube_response *response)
{
	return kube_conn_request(client, &client->conn, method, path, content_type, body, 0, NULL, response);
}
