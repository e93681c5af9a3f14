// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Who reads the pods (--kube-pods-client-cert, doc/DESIGN.md §8 "Read scope"): the kubelet's
 * client certificate (system:node:<name>, which the Node authorizer lets list and watch only
 * its own node's pods) for the pod list and watch, the token for every other request; which
 * file "auto" finds; /readyz's 403 message naming the identity and the overlay; a rotated
 * certificate used from the next TLS handshake, and the connection dropped on a 401. Against
 * tests/cli/kube-standin.py with --client-ca (skipped, with the reason, without python3,
 * openssl or curl).
 */
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <time.h>

#include "testutil.h"
#include "standin.h"

#include "kube/client_internal.h"
#include "kube/kube.h"
#include "kube/kube_report.h"
#include "ops/metrics.h"

#define NODE "node-1"
#define MS (1000000ll)
#define S (1000000000ll)
#define PEM "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n" \
	    "-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----\n"

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * S + ts.tv_nsec;
}

/* ---- which certificate: kube_config_load ------------------------------------------------- */

static int load(const char *root, const char *want, const char *root_dir, struct kube_config *config)
{
	return kube_config_load(config, &(struct kube_config_options){
		.root = root, .api_server = "https://127.0.0.1:6443", .pods_client_cert = want,
		.kubelet_root_dir = root_dir });
}

static void test_config_pods_identity(void **state)
{
	struct kube_config config;
	char root[PATH_MAX], expect[PATH_MAX + 64], file[PATH_MAX + 64];

	fixture_tmpdir(root, "kube-identity");
	/* auto without the kubelet's file: the token. */
	assert_int_equal(load(root, "auto", NULL, &config), 0);
	assert_string_equal(config.pods_client_cert, "");
	assert_int_equal(load(root, NULL, NULL, &config), 0);	/* the default is auto */
	assert_string_equal(config.pods_client_cert, "");
	/* auto with it, below --root and the kubelet's root dir. */
	fixture_write(root, "var/lib/kubelet/pki/kubelet-client-current.pem", "%s", PEM);
	snprintf(expect, sizeof(expect), "%s/var/lib/kubelet/pki/kubelet-client-current.pem", root);
	assert_int_equal(load(root, "auto", NULL, &config), 0);
	assert_string_equal(config.pods_client_cert, expect);
	assert_int_equal(load(root, "auto", "/data/kubelet", &config), 0);
	assert_string_equal(config.pods_client_cert, "");
	fixture_write(root, "data/kubelet/pki/kubelet-client-current.pem", "%s", PEM);
	snprintf(expect, sizeof(expect), "%s/data/kubelet/pki/kubelet-client-current.pem", root);
	assert_int_equal(load(root, "auto", "/data/kubelet", &config), 0);
	assert_string_equal(config.pods_client_cert, expect);
	/* A file without a key (a bootstrap leftover, a half-written file): the token. */
	fixture_write(root, "data/kubelet/pki/kubelet-client-current.pem", "-----BEGIN CERTIFICATE-----\n");
	assert_int_equal(load(root, "auto", "/data/kubelet", &config), 0);
	assert_string_equal(config.pods_client_cert, "");
	/* Unreadable (not root): the token. Root reads anything, so only where it counts. */
	if (geteuid()) {
		snprintf(file, sizeof(file), "%s/var/lib/kubelet/pki/kubelet-client-current.pem", root);
		chmod(file, 0);
		assert_int_equal(load(root, "auto", NULL, &config), 0);
		assert_string_equal(config.pods_client_cert, "");
		chmod(file, 0600);
	}
	/* none: the token even with the file there. */
	assert_int_equal(load(root, "none", NULL, &config), 0);
	assert_string_equal(config.pods_client_cert, "");
	/* A file named: that file (not below --root: a path as given, like --kube-token-file). */
	snprintf(file, sizeof(file), "%s/mine.pem", root);
	fixture_write(root, "mine.pem", "%s", PEM);
	assert_int_equal(load(root, file, NULL, &config), 0);
	assert_string_equal(config.pods_client_cert, file);
	/* Named and missing: an error, as a missing --kube-token-file. */
	snprintf(file, sizeof(file), "%s/missing.pem", root);
	assert_int_equal(load(root, file, NULL, &config), -ENOENT);
	fixture_rm_rf(root);
}

/* /readyz's 403: the identity that was refused and what to do about it. */
static void test_readyz_403_names_identity(void **state)
{
	struct metrics_kube kube = { .enabled = true, .last_status = 403, .ready_grace_ns = 10 * S,
				     .stale_after_ns = 90 * S };
	const char *why = NULL;

	assert_false(metrics_kube_ready(&kube, S, &why));
	assert_non_null(strstr(why, "403"));
	assert_non_null(strstr(why, "token"));
	assert_non_null(strstr(why, "tools/overlays/cluster-wide-pod-read"));
	assert_non_null(strstr(why, "--kube-pods-client-cert"));
	kube.pods_client_cert = true;
	assert_false(metrics_kube_ready(&kube, S, &why));
	assert_non_null(strstr(why, "kubelet's client certificate"));
	assert_non_null(strstr(why, "Node authorizer"));
	assert_non_null(strstr(why, "tools/overlays/cluster-wide-pod-read"));
	/* Listed, then the watch refused. */
	kube.listed = true;
	kube.failing = true;
	assert_false(metrics_kube_ready(&kube, S, &why));
	assert_non_null(strstr(why, "watch (403)"));
	assert_non_null(strstr(why, "Node authorizer"));
	kube.pods_client_cert = false;
	assert_false(metrics_kube_ready(&kube, S, &why));
	assert_non_null(strstr(why, "cluster-wide-pod-read"));
}

/* ---- against the stand-in ------------------------------------------------------------------- */

static const char PODS[] =
	"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":["
	"{\"metadata\":{\"name\":\"web-1\",\"namespace\":\"default\",\"uid\":\"0a1b2c3d-0000-4000-8000-000000000001\"},"
	" \"spec\":{\"nodeName\":\"" NODE "\",\"priority\":0},\"status\":{\"phase\":\"Running\"}},"
	"{\"metadata\":{\"name\":\"other\",\"namespace\":\"default\",\"uid\":\"0a1b2c3d-0000-4000-8000-000000000009\"},"
	" \"spec\":{\"nodeName\":\"node-2\",\"priority\":0},\"status\":{\"phase\":\"Running\"}}]}";

/* The stand-in as a cluster whose RBAC no longer grants the token pod reads, with a token
 * and the kubelet's certificate cert ("" none). */
static void standin_start(struct standin *s, const char *cert, const char *const *more)
{
	const char *args[8] = { "--bookmark-seconds", "0.3", "--log-time", "--rbac-no-pod-read" };
	size_t n = 4;
	char path[PATH_MAX + 64] = "";

	for (size_t i = 0; more && more[i] && n < 7; i++)
		args[n++] = more[i];
	args[n] = NULL;
	standin_launch(s, &(struct standin_options){
		.tag = "kube-identity", .pods = PODS, .token = "token-for-evictd",
		.node = "{\"metadata\":{\"name\":\"" NODE "\"}}",
		.args = (const char *const *)args });
	if (cert && cert[0] && cert[0] != '/')
		standin_kubelet_cert(s, cert, path, sizeof(path));
	snprintf(s->config.pods_client_cert, sizeof(s->config.pods_client_cert), "%s",
		 cert && cert[0] == '/' ? cert : path);
	assert_int_equal(kube_client_new(&s->client, &(struct kube_client_options){
		.config = &s->config, .request_timeout_ns = 3 * S }), 0);
}

static struct pods_meta_source *new_source(struct standin *s, int64_t watch_timeout_s)
{
	struct pods_meta_source *source = kube_pods_source_new(&(struct kube_pods_source_options){
		.client = s->client, .node_name = NODE, .watch_timeout_s = watch_timeout_s,
		.backoff_initial_ns = 20 * MS, .backoff_cap_ns = 200 * MS, .relist_spread_ns = -1 });

	assert_non_null(source);
	return source;
}

static struct kube_pods_health health(struct standin *s)
{
	struct kube_pods_health h;

	kube_pods_source_health(s->source, &h);
	return h;
}

#define WAIT_UNTIL(s, cond, timeout_ms)                                                 \
	({                                                                              \
		int64_t end_ = now_ns() + (int64_t)(timeout_ms) * MS;                   \
		bool ok_;                                                               \
		while (!(ok_ = (cond)) && now_ns() < end_) {                            \
			struct pollfd pfd_ = { .fd = kube_client_event_fd((s)->client), \
					       .events = POLLIN };                      \
			if (poll(&pfd_, 1, 20) == 1)                                    \
				kube_client_dispatch((s)->client);                      \
		}                                                                       \
		ok_;                                                                    \
	})

/* A member of a logged request as text ("" when absent). */
static const char *member(struct json_object *entry, const char *path)
{
	struct json_object *at = entry;
	char key[64];

	while (*path) {
		size_t len = strcspn(path, ".");

		snprintf(key, sizeof(key), "%.*s", (int)len, path);
		if (!json_object_object_get_ex(at, key, &at))
			return "";
		path += len + (path[len] == '.');
	}
	return json_object_get_string(at);
}

static bool is_pod_read(struct json_object *entry)
{
	return !strcmp(member(entry, "path"), "/api/v1/pods");
}

/* The pod list and watch present the kubelet's certificate (the stand-in's RBAC refuses the
 * token pod reads) and send no token; any other request (here the worker's GET of the Node)
 * sends the token and no certificate. */
static void test_pods_read_as_kubelet(void **state)
{
	static struct standin s;
	struct kube_response response = { 0 };
	struct json_object *log;
	size_t pod_reads = 0, others = 0;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, "kubelet-node-1", NULL);
	s.source = new_source(&s, 30);
	assert_true(WAIT_UNTIL(&s, health(&s).listed && health(&s).watching, 10000));
	assert_int_equal(kube_request(s.client, "GET", "/api/v1/nodes/" NODE, NULL, NULL, &response), 0);
	assert_int_equal(response.status, 200);
	kube_response_free(&response);
	assert_false(health(&s).failing);
	log = standin_requests(&s);
	for (size_t i = 0; i < json_object_array_length(log); i++) {
		struct json_object *entry = json_object_array_get_idx(log, i);

		if (is_pod_read(entry)) {
			pod_reads++;
			assert_string_equal(member(entry, "user"), "system:node:" NODE);
			assert_string_equal(member(entry, "headers.authorization"), "");
		} else {
			others++;
			assert_string_equal(member(entry, "user"), "");
			assert_string_equal(member(entry, "headers.authorization"), "Bearer token-for-evictd");
		}
	}
	assert_true(pod_reads >= 2);	/* the list and the watch */
	assert_int_equal(others, 1);
	json_object_put(log);
	standin_stop(&s);
}

/* Refused: the token where RBAC has no pod reads, and another node's certificate (the Node
 * authorizer's field-selector scope). The source fails with 403. */
static void test_pods_read_refused(void **state)
{
	static const char *const certs[] = { "", "kubelet-node-2" };
	static struct standin s;

	SKIP_WITHOUT_STANDIN();
	for (size_t i = 0; i < 2; i++) {
		struct kube_pods_health h;
		struct json_object *log;

		standin_start(&s, certs[i], NULL);
		s.source = new_source(&s, 30);
		assert_true(WAIT_UNTIL(&s, (h = health(&s)).failing, 10000));
		assert_int_equal(h.last_status, 403);
		assert_false(h.listed);
		log = standin_requests(&s);
		assert_true(json_object_array_length(log) >= 1);
		assert_string_equal(member(json_object_array_get_idx(log, 0), "user"), i ? "system:node:node-2" : "");
		json_object_put(log);
		standin_stop(&s);
	}
}

/* The kubelet rotates its certificate (a new file behind the -current.pem symlink) and the
 * old one stops being accepted (expired). The watch's connection, kept alive across watches,
 * still carries the old certificate: its next watch gets 401, the connection is dropped and
 * the request sent once more on a new one, whose handshake reads the new file (no TLS session
 * resumption, which would carry the old certificate). No failure reaches the source. */
static void test_rotation_reconnects(void **state)
{
	static struct standin s;
	char link[PATH_MAX + 64], old[PATH_MAX + 64], rotated[PATH_MAX + 64], tmp[PATH_MAX + 80];
	char first[64] = "", last[64] = "";
	struct json_object *log;
	int64_t rejected, t401 = 0, tnew = 0;
	bool saw_401_watch = false;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL, NULL);
	standin_kubelet_cert(&s, "kubelet-node-1", old, sizeof(old));
	standin_kubelet_cert(&s, "kubelet-node-1-rotated", rotated, sizeof(rotated));
	snprintf(link, sizeof(link), "%s/kubelet-client-current.pem", s.dir);
	assert_int_equal(symlink(old, link), 0);
	snprintf(s.config.pods_client_cert, sizeof(s.config.pods_client_cert), "%.4000s", link);
	kube_client_free(s.client);
	assert_int_equal(kube_client_new(&s.client, &(struct kube_client_options){
		.config = &s.config, .request_timeout_ns = 3 * S }), 0);
	/* Watches of 2 s: each ends at its timeoutSeconds and the next reuses the connection. */
	s.source = new_source(&s, 2);
	assert_true(WAIT_UNTIL(&s, health(&s).watching, 10000));
	/* The rotation as client-go's certificate store does it: a new symlink renamed over. */
	snprintf(tmp, sizeof(tmp), "%s.updated", link);
	assert_int_equal(symlink(rotated, tmp), 0);
	assert_int_equal(rename(tmp, link), 0);
	standin_hook(&s, "reject-cert", old);
	rejected = now_ns();
	/* The watch under way ends at its 2 s; the next one is refused and made again. */
	assert_true(WAIT_UNTIL(&s, health(&s).watches >= 3, 10000));
	assert_int_equal(health(&s).failures, 0);
	assert_false(health(&s).failing);
	log = standin_requests(&s);
	for (size_t i = 0; i < json_object_array_length(log); i++) {
		struct json_object *entry = json_object_array_get_idx(log, i), *time;
		int64_t at;

		if (!is_pod_read(entry))
			continue;
		assert_true(json_object_object_get_ex(entry, "time", &time));
		at = (int64_t)(json_object_get_double(time) * 1e9);
		if (!first[0])
			snprintf(first, sizeof(first), "%s", member(entry, "cert"));
		if (at > rejected && !strcmp(member(entry, "cert"), first) && strstr(member(entry, "query"), "watch=true")) {
			saw_401_watch = true;
			t401 = at;
		}
		if (at > rejected && strcmp(member(entry, "cert"), first) && !tnew)
			tnew = at;
		snprintf(last, sizeof(last), "%s", member(entry, "cert"));
	}
	json_object_put(log);
	assert_true(first[0]);
	if (!saw_401_watch)
		fail_msg("no watch with the old certificate after its rejection: the connection was not reused");
	if (!tnew || !strcmp(last, first))
		fail_msg("no request with the rotated certificate after the 401");
	if (tnew - t401 > 500 * MS)
		fail_msg("the request with the new certificate came %.3f s after the 401, not at once",
			 (double)(tnew - t401) / S);
	standin_stop(&s);
}

/* Rotated, the old certificate still valid: the next new connection (after an API server
 * restart) presents the new file, not a TLS session resumed from the old handshake. */
static void test_rotation_new_connection(void **state)
{
	static struct standin s;
	char link[PATH_MAX + 64], old[PATH_MAX + 64], rotated[PATH_MAX + 64], tmp[PATH_MAX + 80];
	char first[64] = "", last[64] = "";
	struct json_object *log;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL, NULL);
	standin_kubelet_cert(&s, "kubelet-node-1", old, sizeof(old));
	standin_kubelet_cert(&s, "kubelet-node-1-rotated", rotated, sizeof(rotated));
	snprintf(link, sizeof(link), "%s/kubelet-client-current.pem", s.dir);
	assert_int_equal(symlink(old, link), 0);
	snprintf(s.config.pods_client_cert, sizeof(s.config.pods_client_cert), "%.4000s", link);
	kube_client_free(s.client);
	assert_int_equal(kube_client_new(&s.client, &(struct kube_client_options){
		.config = &s.config, .request_timeout_ns = 3 * S }), 0);
	s.source = new_source(&s, 30);
	assert_true(WAIT_UNTIL(&s, health(&s).watching && health(&s).bookmarks >= 2, 10000));
	snprintf(tmp, sizeof(tmp), "%s.updated", link);
	assert_int_equal(symlink(rotated, tmp), 0);
	assert_int_equal(rename(tmp, link), 0);
	usleep(1100000);
	/* An API server restart: the connection closes (HTTP/2 too; a cut stream alone keeps its
	 * connection, and the certificate of its handshake). */
	standin_hook(&s, "restart", NULL);
	assert_true(WAIT_UNTIL(&s, health(&s).lists >= 2 && health(&s).watching, 10000));
	log = standin_requests(&s);
	for (size_t i = 0; i < json_object_array_length(log); i++) {
		struct json_object *entry = json_object_array_get_idx(log, i);

		if (!is_pod_read(entry))
			continue;
		if (!first[0])
			snprintf(first, sizeof(first), "%s", member(entry, "cert"));
		snprintf(last, sizeof(last), "%s", member(entry, "cert"));
	}
	json_object_put(log);
	assert_true(first[0] && last[0]);
	if (!strcmp(first, last))
		fail_msg("the watch on a new connection still presented the old certificate %s", first);
	assert_int_equal(health(&s).failures, 0);
	standin_stop(&s);
}

int main(void)
{
#define T(f) cmocka_unit_test(f)
#define TS(f) cmocka_unit_test_teardown(f, teardown_standin)
#define STANDIN_TESTS TS(test_pods_read_as_kubelet), TS(test_pods_read_refused), \
	TS(test_rotation_reconnects), TS(test_rotation_new_connection)
	const struct CMUnitTest tests[] = {
		T(test_config_pods_identity),
		T(test_readyz_403_names_identity),
		STANDIN_TESTS,
	};
	const struct CMUnitTest tests_http2[] = { STANDIN_TESTS };
	int failed;

	signal(SIGPIPE, SIG_IGN);
	failed = cmocka_run_group_tests_name("the stand-in in HTTP/1.1", tests, NULL, NULL);
	/* The same against a stand-in that offers HTTP/2, which libcurl negotiates (ALPN). */
	standin_http2 = true;
	failed += cmocka_run_group_tests_name("the stand-in in HTTP/2", tests_http2, NULL, NULL);
	standin_cleanup();
	return failed;
}
