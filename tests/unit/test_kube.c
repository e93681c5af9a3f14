// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The Kubernetes API client and reporter (issue 6): the request bodies and messages as pure
 * functions, then the exact requests sent, against tests/cli/kube-standin.py, a local HTTPS
 * protocol stand-in started per test with a throwaway CA (openssl). A real API server was not
 * available to the tests. The integration tests are skipped when /usr/bin/python3 or openssl
 * is missing.
 */
#include <arpa/inet.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "testutil.h"
#include "standin.h"

#include "kube/kube.h"
#include "kube/kube_report.h"
#include "kube/report_internal.h"	/* report->task: waking the reconciler by hand */
#include "sys/log.h"
#include "core/thresholds.h"

#define FIXED_UNIX_S 1700000000ll
#define FIXED_TIME "2023-11-14T22:13:20Z"
#define NODE "node-1"
#define UID_WEB "0a1b2c3d-0000-4000-8000-000000000001"
#define UID_DB "0a1b2c3d-0000-4000-8000-000000000002"

static int64_t fixed_realtime(void)
{
	return FIXED_UNIX_S * 1000000000;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void assert_json_eq(const char *actual, const char *expected)
{
	struct json_object *a = json_tokener_parse(actual), *e = json_tokener_parse(expected);

	if (!a || !e || !json_object_equal(a, e))
		fail_msg("JSON differs:\n  actual:   %s\n  expected: %s", actual, expected);
	json_object_put(a);
	json_object_put(e);
}

/* ---- pure functions -------------------------------------------------------------------- */

static void test_quantity_string(void **state)
{
	static const struct {
		int64_t value;
		enum kube_quantity_format format;
		const char *text;
	} cases[] = {
		{ 0, KUBE_QUANTITY_BINARY_SI, "0" },
		{ 104857600, KUBE_QUANTITY_BINARY_SI, "100Mi" },
		{ 52428800, KUBE_QUANTITY_BINARY_SI, "50Mi" },
		{ 100390912, KUBE_QUANTITY_BINARY_SI, "98038Ki" },
		{ 1536, KUBE_QUANTITY_BINARY_SI, "1536" },
		{ 1610612736, KUBE_QUANTITY_BINARY_SI, "1536Mi" },
		{ 1000, KUBE_QUANTITY_BINARY_SI, "1k" },	/* below 1024: decimal SI */
		{ 500, KUBE_QUANTITY_BINARY_SI, "500" },
		{ -52428800, KUBE_QUANTITY_BINARY_SI, "-50Mi" },
		{ 12345, KUBE_QUANTITY_DECIMAL_SI, "12345" },
		{ 5000000, KUBE_QUANTITY_DECIMAL_SI, "5M" },
		{ 1500, KUBE_QUANTITY_DECIMAL_SI, "1500" },
		{ 120000, KUBE_QUANTITY_DECIMAL_SI, "120k" },
		{ 1000000000, KUBE_QUANTITY_DECIMAL_EXPONENT, "1e9" },
		{ 1500, KUBE_QUANTITY_DECIMAL_EXPONENT, "1500" },
		{ INT64_MIN, KUBE_QUANTITY_BINARY_SI, "-8Ei" },
	};
	char buf[40];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(kube_quantity_string(cases[i].value, cases[i].format, buf, sizeof(buf)),
				 (int)strlen(cases[i].text));
		assert_string_equal(buf, cases[i].text);
	}
	assert_int_equal(kube_quantity_string(104857600, KUBE_QUANTITY_BINARY_SI, buf, 3), -ENOSPC);
}

static void test_threshold_format(void **state)
{
	static const struct {
		const char *text;
		enum kube_quantity_format format;
	} cases[] = {
		{ "100Mi", KUBE_QUANTITY_BINARY_SI },	{ "1.5Gi", KUBE_QUANTITY_BINARY_SI },
		{ "500M", KUBE_QUANTITY_DECIMAL_SI },	{ "10k", KUBE_QUANTITY_DECIMAL_SI },
		{ "1000", KUBE_QUANTITY_DECIMAL_SI },	{ "1e9", KUBE_QUANTITY_DECIMAL_EXPONENT },
		{ "10%", KUBE_QUANTITY_BINARY_SI },	{ "2E", KUBE_QUANTITY_DECIMAL_SI },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct threshold_value value;
		bool disabled;

		assert_int_equal(threshold_value_parse(cases[i].text, &value, &disabled), 0);
		assert_int_equal(kube_threshold_format(&value), cases[i].format);
	}
}

static struct pod make_pod(const char *ns, const char *name, const char *uid)
{
	struct pod pod = { .termination_grace_period_s = -1 };

	snprintf(pod.namespace_, sizeof(pod.namespace_), "%s", ns);
	snprintf(pod.name, sizeof(pod.name), "%s", name);
	snprintf(pod.uid, sizeof(pod.uid), "%s", uid);
	snprintf(pod.cgroup_path, sizeof(pod.cgroup_path), "/sys/fs/cgroup/kubepods.slice/pod%s", uid);
	return pod;
}

static void test_eviction_message(void **state)
{
	struct pod pod = make_pod("default", "web-1", UID_WEB);
	struct threshold_value value;
	char buf[1024];
	bool disabled;
	struct kube_container_usage containers[] = {
		{ "app", 125829120, 104857600 },	/* 120Mi > 100Mi: named */
		{ "sidecar", 1048576, 8388608 },	/* under its request: not named */
		{ "logger", 4194304, 0 },		/* no request: named */
	};
	struct kube_eviction eviction = {
		.pod = &pod,
		.signal = EV_SIGNAL_MEMORY_AVAILABLE,
		.threshold = &value,
		.threshold_quantity = 104857600,
		.available = 52428800,
	};

	assert_int_equal(threshold_value_parse("100Mi", &value, &disabled), 0);
	assert_true(kube_eviction_message(&eviction, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. ");

	eviction.containers = containers;
	eviction.n_containers = 3;
	kube_eviction_message(&eviction, buf, sizeof(buf));
	assert_string_equal(buf, "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "
			    "Container app was using 120Mi, request is 100Mi, has larger consumption of memory. "
			    "Container logger was using 4Mi, request is 0, has larger consumption of memory. ");

	/* Percentages resolve in binary SI; inodes are counts (decimal SI); no container part. */
	assert_int_equal(threshold_value_parse("5%", &value, &disabled), 0);
	eviction.signal = EV_SIGNAL_NODEFS_INODES_FREE;
	eviction.threshold_quantity = 50000;
	eviction.available = 12000;
	kube_eviction_message(&eviction, buf, sizeof(buf));
	assert_string_equal(buf, "The node was low on resource: inodes. Threshold quantity: 50000, available: 12k. ");

	assert_int_equal(threshold_value_parse("1k", &value, &disabled), 0);
	eviction.signal = EV_SIGNAL_PID_AVAILABLE;
	eviction.threshold_quantity = 1000;
	eviction.available = 999;
	kube_eviction_message(&eviction, buf, sizeof(buf));
	assert_string_equal(buf, "The node was low on resource: pids. Threshold quantity: 1k, available: 999. ");

	assert_int_equal(threshold_value_parse("10%", &value, &disabled), 0);
	eviction.signal = EV_SIGNAL_NODEFS_AVAILABLE;
	eviction.threshold_quantity = 10737418240;
	eviction.available = 5368709120;
	eviction.n_containers = 0;
	kube_eviction_message(&eviction, buf, sizeof(buf));
	assert_string_equal(buf, "The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, "
			    "available: 5Gi. ");

	assert_int_equal(threshold_value_parse("100Mi", &value, &disabled), 0);
	eviction.signal = EV_SIGNAL_OOM_GUARD;
	eviction.threshold_quantity = 104857600;
	eviction.available = 83886080;
	kube_eviction_message(&eviction, buf, sizeof(buf));
	assert_string_equal(buf, "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. "
			    "evictd's OOM guard acted: the kernel's MemAvailable was below it. ");

	assert_int_equal(kube_eviction_message(&eviction, buf, 20), -ENOSPC);
}

#define EVICTED_MESSAGE "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "
#define EVICTED_PATCH                                                                              \
	"{\"metadata\":{\"uid\":\"" UID_WEB "\",\"annotations\":{\"evictd.io/failed-at\":\"" FIXED_TIME "\"}}," \
	"\"status\":{\"phase\":\"Failed\",\"reason\":\"Evicted\"," \
	"\"message\":\"" EVICTED_MESSAGE "\",\"conditions\":[{\"type\":\"DisruptionTarget\","            \
	"\"status\":\"True\",\"lastTransitionTime\":\"" FIXED_TIME "\",\"reason\":\"TerminationByKubelet\"," \
	"\"message\":\"" EVICTED_MESSAGE "\"}]}}"

static void test_pod_failed_patch(void **state)
{
	char *patch = kube_pod_failed_patch(UID_WEB, "Evicted", EVICTED_MESSAGE, fixed_realtime());

	assert_non_null(patch);
	/* Byte for byte: what goes on the wire. */
	assert_string_equal(patch, EVICTED_PATCH);
	free(patch);
	patch = kube_pod_failed_patch("u", "Terminated", "quote \" and \\ and /", fixed_realtime());
	assert_non_null(strstr(patch, "\"message\":\"quote \\\" and \\\\ and /\""));
	free(patch);
}

static void test_event_bodies(void **state)
{
	const char *annotations[] = { "starved_resource", "memory" };
	struct kube_event event = {
		.namespace_ = "default", .name = "web-1.17979cfe362a0000", .kind = "Pod",
		.object_namespace = "default", .object_name = "web-1", .object_uid = UID_WEB,
		.type = "Warning", .reason = "Evicted", .message = "low",
		.component = "evictd", .host = NODE, .count = 1,
		.first_unix_ns = fixed_realtime(), .last_unix_ns = fixed_realtime(),
		.annotations = annotations, .n_annotations = 1,
	};
	char *body = kube_event_body(&event);

	assert_string_equal(body,
		"{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"web-1.17979cfe362a0000\","
		"\"namespace\":\"default\",\"annotations\":{\"starved_resource\":\"memory\"}},"
		"\"involvedObject\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"namespace\":\"default\","
		"\"name\":\"web-1\",\"uid\":\"" UID_WEB "\"},\"type\":\"Warning\",\"reason\":\"Evicted\","
		"\"message\":\"low\",\"source\":{\"component\":\"evictd\",\"host\":\"" NODE "\"},"
		"\"firstTimestamp\":\"" FIXED_TIME "\",\"lastTimestamp\":\"" FIXED_TIME "\",\"count\":1,"
		"\"reportingComponent\":\"evictd\",\"reportingInstance\":\"" NODE "\"}");
	free(body);
	body = kube_event_count_patch(3, fixed_realtime(), "low");
	assert_string_equal(body, "{\"count\":3,\"lastTimestamp\":\"" FIXED_TIME "\",\"message\":\"low\"}");
	free(body);
}

#define MEM KUBE_TAINT_BIT(KUBE_TAINT_MEMORY_PRESSURE)
#define DISK KUBE_TAINT_BIT(KUBE_TAINT_DISK_PRESSURE)
#define SHUT KUBE_TAINT_BIT(KUBE_TAINT_SHUTDOWN)
#define OOS KUBE_TAINT_BIT(KUBE_TAINT_OUT_OF_SERVICE)
#define OTHER_TAINT "{\"key\":\"example.com/gpu\",\"value\":\"true\",\"effect\":\"NoSchedule\"}"
#define MEM_TAINT "{\"key\":\"evictd.io/memory-pressure\",\"effect\":\"NoSchedule\"}"
#define OOS_TAINT "{\"key\":\"node.kubernetes.io/out-of-service\",\"value\":\"nodeshutdown\"," \
		  "\"effect\":\"NoExecute\",\"timeAdded\":\"" FIXED_TIME "\"}"

static void test_taint_patch(void **state)
{
	const char *node = "{\"kind\":\"Node\",\"metadata\":{\"name\":\"" NODE "\",\"resourceVersion\":\"41\"},"
			   "\"spec\":{\"taints\":[" OTHER_TAINT "]}}";
	const char *with_mem = "{\"metadata\":{\"resourceVersion\":\"42\"},\"spec\":{\"taints\":[" OTHER_TAINT ","
			       MEM_TAINT "," MEM_TAINT "]}}";
	char *patch;
	uint32_t present;

	/* Add: the other taint kept, first and as it was. */
	assert_int_equal(kube_node_taint_patch(node, MEM, KUBE_TAINTS_EVICTD_OWNED, fixed_realtime(), &patch, &present), 0);
	assert_int_equal(present, 0);
	assert_string_equal(patch, "{\"metadata\":{\"resourceVersion\":\"41\"},\"spec\":{\"taints\":[" OTHER_TAINT ","
			    MEM_TAINT "]}}");
	free(patch);
	/* Already there: nothing to send. */
	assert_int_equal(kube_node_taint_patch("{\"metadata\":{\"resourceVersion\":\"7\"},\"spec\":{\"taints\":["
					       MEM_TAINT "]}}", MEM, KUBE_TAINTS_EVICTD_OWNED, 0, &patch, &present), 0);
	assert_null(patch);
	assert_int_equal(present, MEM);
	/* A duplicate of ours is folded into one. */
	assert_int_equal(kube_node_taint_patch(with_mem, MEM, KUBE_TAINTS_EVICTD_OWNED, 0, &patch, &present), 0);
	assert_string_equal(patch, "{\"metadata\":{\"resourceVersion\":\"42\"},\"spec\":{\"taints\":[" OTHER_TAINT ","
			    MEM_TAINT "]}}");
	free(patch);
	/* Remove: only ours goes. */
	assert_int_equal(kube_node_taint_patch(with_mem, 0, KUBE_TAINTS_EVICTD_OWNED, 0, &patch, &present), 0);
	assert_string_equal(patch, "{\"metadata\":{\"resourceVersion\":\"42\"},\"spec\":{\"taints\":[" OTHER_TAINT "]}}");
	free(patch);
	/* The last one removed: null, not an empty list. */
	assert_int_equal(kube_node_taint_patch("{\"metadata\":{\"resourceVersion\":\"9\"},\"spec\":{\"taints\":["
					       MEM_TAINT "]}}", 0, KUBE_TAINTS_EVICTD_OWNED, 0, &patch, &present), 0);
	assert_string_equal(patch, "{\"metadata\":{\"resourceVersion\":\"9\"},\"spec\":{\"taints\":null}}");
	free(patch);
	/* Out-of-service: added with timeAdded; an operator's with another value is not ours. */
	assert_int_equal(kube_node_taint_patch("{\"metadata\":{\"resourceVersion\":\"1\"}}", OOS | SHUT,
					       KUBE_TAINTS_EVICTD_OWNED | OOS, fixed_realtime(), &patch, &present), 0);
	assert_string_equal(patch, "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"taints\":["
			    "{\"key\":\"evictd.io/shutdown\",\"effect\":\"NoSchedule\"}," OOS_TAINT "]}}");
	free(patch);
	assert_int_equal(kube_node_taint_patch("{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"taints\":["
					       "{\"key\":\"node.kubernetes.io/out-of-service\",\"value\":\"manual\","
					       "\"effect\":\"NoExecute\"}]}}", 0, KUBE_TAINTS_EVICTD_OWNED | OOS, 0,
					       &patch, &present), 0);
	assert_null(patch);
	assert_int_equal(present, 0);
	/* Unmanaged out-of-service (no record): left alone even when ours exactly. */
	assert_int_equal(kube_node_taint_patch("{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"taints\":["
					       OOS_TAINT "]}}", 0, KUBE_TAINTS_EVICTD_OWNED, 0, &patch, &present), 0);
	assert_null(patch);
	assert_int_equal(kube_node_taint_patch("[]", 0, 0, 0, &patch, &present), -EINVAL);
	assert_int_equal(kube_node_taint_patch("{\"metadata\":{}}", 0, 0, 0, &patch, &present), -EINVAL);
	assert_string_equal(kube_taint_name(KUBE_TAINT_OUT_OF_SERVICE),
			    "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute");
	assert_int_equal(kube_taint_for_condition(EV_CONDITION_DISK_PRESSURE), KUBE_TAINT_DISK_PRESSURE);
}

static void test_backoff_and_retry(void **state)
{
	const int64_t ms = 1000000;

	/* attempt 1: [125, 250] ms; doubling; capped at max; jitter never below half. */
	assert_int_equal(kube_backoff_ns(250 * ms, 30000 * ms, 1, 0), 125 * ms);
	assert_int_equal(kube_backoff_ns(250 * ms, 30000 * ms, 1, 125 * ms), 250 * ms);
	assert_int_equal(kube_backoff_ns(250 * ms, 30000 * ms, 3, 0), 500 * ms);
	assert_int_equal(kube_backoff_ns(250 * ms, 30000 * ms, 40, 0), 15000 * ms);
	for (uint64_t r = 0; r < 1000; r++) {
		int64_t d = kube_backoff_ns(250 * ms, 30000 * ms, 5, r * 7919 * 104729);

		assert_true(d >= 2000 * ms && d <= 4000 * ms);
	}
	assert_true(kube_should_retry(-ECONNREFUSED, 0));
	assert_true(kube_should_retry(-ETIMEDOUT, 0));
	assert_false(kube_should_retry(-EFBIG, 0));
	assert_true(kube_should_retry(0, 500));
	assert_true(kube_should_retry(0, 503));
	assert_true(kube_should_retry(0, 429));
	assert_false(kube_should_retry(0, 404));
	assert_false(kube_should_retry(0, 409));
	assert_false(kube_should_retry(0, 403));
	assert_false(kube_should_retry(0, 422));
}

static void test_escape_and_status(void **state)
{
	char buf[64];

	assert_int_equal(kube_escape("spec.nodeName=node-1", buf, sizeof(buf)), 22);
	assert_string_equal(buf, "spec.nodeName%3Dnode-1");
	kube_escape("a b/c+d~", buf, sizeof(buf));
	assert_string_equal(buf, "a%20b%2Fc%2Bd~");
	assert_int_equal(kube_escape("abcdef", buf, 4), -ENOSPC);
	kube_status_message("{\"kind\":\"Status\",\"message\":\"pods \\\"x\\\" not found\"}", buf, sizeof(buf));
	assert_string_equal(buf, "pods \"x\" not found");
	kube_status_message("not json", buf, sizeof(buf));
	assert_string_equal(buf, "");
}

static void test_config(void **state)
{
	char root[PATH_MAX];
	struct kube_config config;

	log_set_level(LOGLEVEL_ERR);
	fixture_tmpdir(root, "kube-config");
	/* Not in a cluster: no environment. */
	assert_int_equal(kube_config_load(&config, &(struct kube_config_options){
		.root = root, .service_host = "", .service_port = "" }), -ENOENT);
	/* In a cluster but the token is missing. */
	assert_int_equal(kube_config_load(&config, &(struct kube_config_options){
		.root = root, .service_host = "10.96.0.1", .service_port = "443" }), -ENOENT);
	fixture_write(root, "var/run/secrets/kubernetes.io/serviceaccount/token", "tok\n");
	fixture_write(root, "var/run/secrets/kubernetes.io/serviceaccount/ca.crt", "ca\n");
	fixture_write(root, "var/run/secrets/kubernetes.io/serviceaccount/namespace", "kube-system\n");
	assert_int_equal(kube_config_load(&config, &(struct kube_config_options){
		.root = root, .service_host = "10.96.0.1", .service_port = "443" }), 0);
	assert_string_equal(config.server, "https://10.96.0.1:443");
	assert_true(config.in_cluster);
	assert_true(strstr(config.token_path, "/var/run/secrets/kubernetes.io/serviceaccount/token") != NULL);
	assert_true(strstr(config.ca_path, "/serviceaccount/ca.crt") != NULL);
	assert_string_equal(config.namespace_, "kube-system");
	assert_int_equal(kube_config_load(&config, &(struct kube_config_options){
		.root = root, .service_host = "fd00::1", .service_port = "6443" }), 0);
	assert_string_equal(config.server, "https://[fd00::1]:6443");
	assert_int_equal(kube_config_load(&config, &(struct kube_config_options){
		.root = root, .service_host = "10.96.0.1", .service_port = "http" }), -EINVAL);
	/* Explicit: overrides, trailing slashes dropped, https only. */
	fixture_write(root, "other-token", "x");
	{
		char token[PATH_MAX + 16];

		snprintf(token, sizeof(token), "%s/other-token", root);
		assert_true(strlen(token) < sizeof(config.token_path));
		assert_int_equal(kube_config_load(&config, &(struct kube_config_options){
			.root = root, .api_server = "https://api.example:6443//", .token_file = token,
			.service_host = "", .service_port = "" }), 0);
		assert_string_equal(config.server, "https://api.example:6443");
		assert_string_equal(config.token_path, token);
		assert_false(config.in_cluster);
	}
	assert_int_equal(kube_config_load(&config, &(struct kube_config_options){
		.root = root, .api_server = "http://api.example" }), -EINVAL);
	assert_int_equal(kube_config_load(&config, &(struct kube_config_options){
		.root = root, .api_server = "https://x", .ca_file = "/nonexistent/ca.crt" }), -ENOENT);
	fixture_rm_rf(root);
	log_set_level(LOGLEVEL_INFO);
}

/* ---- the stand-in ------------------------------------------------------------------------ */

static const char PODS_FIXTURE[] =
	"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":["
	"{\"metadata\":{\"name\":\"web-1\",\"namespace\":\"default\",\"uid\":\"" UID_WEB "\",\"resourceVersion\":\"5\"},"
	" \"spec\":{\"nodeName\":\"" NODE "\",\"priority\":0},\"status\":{\"phase\":\"Running\",\"qosClass\":\"BestEffort\"}},"
	"{\"metadata\":{\"name\":\"db-0\",\"namespace\":\"prod\",\"uid\":\"" UID_DB "\",\"resourceVersion\":\"5\"},"
	" \"spec\":{\"nodeName\":\"" NODE "\",\"priority\":1000},\"status\":{\"phase\":\"Running\",\"qosClass\":\"Burstable\"}},"
	"{\"metadata\":{\"name\":\"c\",\"namespace\":\"default\",\"uid\":\"0a1b2c3d-0000-4000-8000-000000000003\",\"resourceVersion\":\"5\"},"
	" \"spec\":{\"nodeName\":\"" NODE "\"}},"
	"{\"metadata\":{\"name\":\"d\",\"namespace\":\"default\",\"uid\":\"0a1b2c3d-0000-4000-8000-000000000004\",\"resourceVersion\":\"5\"},"
	" \"spec\":{\"nodeName\":\"" NODE "\"}},"
	"{\"metadata\":{\"name\":\"elsewhere\",\"namespace\":\"default\",\"uid\":\"0a1b2c3d-0000-4000-8000-000000000005\",\"resourceVersion\":\"5\"},"
	" \"spec\":{\"nodeName\":\"node-2\"}},"
	"{\"metadata\":{\"name\":\"e\",\"namespace\":\"kube-system\",\"uid\":\"0a1b2c3d-0000-4000-8000-000000000006\",\"resourceVersion\":\"5\"},"
	" \"spec\":{\"nodeName\":\"" NODE "\"}}]}";

/* Start the stand-in with faults (a JSON list, or NULL) and the node's fixture (or NULL). */
static void standin_start(struct standin *s, const char *faults, const char *node_json)
{
	standin_launch(s, &(struct standin_options){
		.tag = "kube", .pods = PODS_FIXTURE, .faults = faults, .token = "token-one\n",
		/* The node exists (the stand-in, as the API server, 404s an unknown one). */
		.node = node_json ? node_json : "{\"metadata\":{\"name\":\"" NODE "\"}}",
		.args = (const char *const[]){ "--bookmark-seconds", "0.5", NULL } });
}

static void standin_client(struct standin *s)
{
	assert_int_equal(kube_client_new(&s->client, &(struct kube_client_options){
		.config = &s->config,
		.request_timeout_ns = 3000000000ll,
		.backoff_initial_ns = 20000000,		/* fast retries for the tests */
		.backoff_max_ns = 100000000,
		.retry_for_ns = 20000000000ll,
	}), 0);
}

static const char *str_at(struct json_object *obj, const char *path)
{
	char key[128];
	const char *dot;

	while (obj && (dot = strchr(path, '.'))) {
		snprintf(key, sizeof(key), "%.*s", (int)(dot - path), path);
		if (!json_object_object_get_ex(obj, key, &obj))
			return NULL;
		path = dot + 1;
	}
	if (!obj || !json_object_object_get_ex(obj, path, &obj))
		return NULL;
	return json_object_get_string(obj);
}

/* "METHOD /path" of request i. */
static const char *request_line(struct json_object *requests, size_t i, char *buf, size_t len)
{
	struct json_object *r = json_object_array_get_idx(requests, i);

	snprintf(buf, len, "%s %s%s%s", str_at(r, "method"), str_at(r, "path"),
		 str_at(r, "query")[0] ? "?" : "", str_at(r, "query"));
	return buf;
}

static void assert_request_lines(struct json_object *requests, const char *const *expected, size_t n)
{
	char buf[1024];

	if (json_object_array_length(requests) != n) {
		for (size_t i = 0; i < json_object_array_length(requests); i++)
			print_message("# request %zu: %s\n", i, request_line(requests, i, buf, sizeof(buf)));
		fail_msg("expected %zu requests, got %zu", n, json_object_array_length(requests));
	}
	for (size_t i = 0; i < n; i++)
		assert_string_equal(request_line(requests, i, buf, sizeof(buf)), expected[i]);
}

static void assert_body(struct json_object *requests, size_t i, const char *expected)
{
	struct json_object *body;

	assert_true(json_object_object_get_ex(json_object_array_get_idx(requests, i), "body", &body));
	assert_json_eq(json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN), expected);
}

static void drain(struct standin *s)
{
	assert_int_equal(kube_client_drain(s->client, 15000000000ll), 0);
}

static int sync_calls;
static void fake_sync(void)
{
	sync_calls++;
}

static struct kube_report *new_report(struct standin *s, bool out_of_service, bool dry_run)
{
	struct kube_report *report;
	char state_dir[PATH_MAX + 16];

	snprintf(state_dir, sizeof(state_dir), "%s/state", s->dir);
	assert_int_equal(kube_report_new(&report, &(struct kube_report_options){
		.client = s->client,
		.node_name = NODE,
		.state_dir = state_dir,
		.dry_run = dry_run,
		.taint_out_of_service_on_shutdown = out_of_service,
		.realtime_ns = fixed_realtime,
		.sync_filesystems = fake_sync,
	}), 0);
	/* The daemon's first evaluation: no pressure. The reconciler starts from it. */
	kube_report_conditions(report, (bool[EV_CONDITION_COUNT]){ false });
	return report;
}

/* ---- the requests ------------------------------------------------------------------------ */

static void test_eviction_requests(void **state)
{
	struct pod pod = make_pod("default", "web-1", UID_WEB);
	struct threshold_value value;
	struct json_object *requests, *r, *doc;
	struct kube_report *report;
	static struct standin s;
	bool disabled;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL, NULL);
	standin_client(&s);
	report = new_report(&s, false, false);
	drain(&s);	/* the start-up taint check */
	threshold_value_parse("100Mi", &value, &disabled);
	assert_int_equal(kube_report_eviction(report, &(struct kube_eviction){
		.pod = &pod, .signal = EV_SIGNAL_MEMORY_AVAILABLE, .threshold = &value,
		.threshold_quantity = 104857600, .available = 52428800 }), 0);
	drain(&s);

	requests = standin_requests(&s);
	assert_request_lines(requests, (const char *const[]){
		"GET /api/v1/nodes/" NODE,	/* start: anything left from an earlier run? no */
		"PATCH /api/v1/namespaces/default/pods/web-1/status",
		"POST /api/v1/namespaces/default/events",
	}, 3);
	r = json_object_array_get_idx(requests, 1);
	assert_string_equal(str_at(r, "headers.content-type"), "application/strategic-merge-patch+json");
	assert_string_equal(str_at(r, "headers.authorization"), "Bearer token-one");
	assert_string_equal(str_at(r, "headers.accept"), "application/json");
	assert_string_equal(str_at(r, "headers.user-agent"), "evictd");
	/* The kubelet's eviction status, one patch; no DELETE (DESIGN.md §8). */
	assert_body(requests, 1, EVICTED_PATCH);
	r = json_object_array_get_idx(requests, 2);
	assert_string_equal(str_at(r, "headers.content-type"), "application/json");
	assert_body(requests, 2,
		"{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"web-1.17979cfe362a0000\","
		"\"namespace\":\"default\",\"annotations\":{\"offending_containers\":\"\","
		"\"offending_containers_usage\":\"\",\"starved_resource\":\"memory\"}},"
		"\"involvedObject\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"namespace\":\"default\","
		"\"name\":\"web-1\",\"uid\":\"" UID_WEB "\"},\"type\":\"Warning\",\"reason\":\"Evicted\","
		"\"message\":\"" EVICTED_MESSAGE "\",\"source\":{\"component\":\"evictd\",\"host\":\"" NODE "\"},"
		"\"firstTimestamp\":\"" FIXED_TIME "\",\"lastTimestamp\":\"" FIXED_TIME "\",\"count\":1,"
		"\"reportingComponent\":\"evictd\",\"reportingInstance\":\"" NODE "\"}");
	json_object_put(requests);

	/* The stand-in applied it as the API server would: Failed/Evicted, the condition, and the
	 * pod is not being deleted. */
	doc = standin_state(&s);
	{
		struct json_object *pods, *pod0, *conditions;

		json_object_object_get_ex(doc, "pods", &pods);
		pod0 = json_object_array_get_idx(pods, 0);
		assert_string_equal(str_at(pod0, "metadata.name"), "web-1");
		assert_null(str_at(pod0, "metadata.deletionTimestamp"));
		assert_string_equal(str_at(pod0, "status.phase"), "Failed");
		assert_string_equal(str_at(pod0, "status.reason"), "Evicted");
		json_object_object_get_ex(json_object_object_get(pod0, "status"), "conditions", &conditions);
		assert_string_equal(str_at(json_object_array_get_idx(conditions, 0), "type"), "DisruptionTarget");
	}
	json_object_put(doc);

	/* Stale reports are dropped after one request: a pod replaced under the same name (the
	 * uid in the patch -> 422) and one deleted (404). */
	{
		struct pod replaced = make_pod("default", "db-0", "ffffffff-0000-4000-8000-000000000002");
		struct pod gone = make_pod("default", "gone", UID_WEB);

		snprintf(replaced.namespace_, sizeof(replaced.namespace_), "prod");
		assert_int_equal(kube_report_eviction(report, &(struct kube_eviction){
			.pod = &replaced, .signal = EV_SIGNAL_MEMORY_AVAILABLE, .threshold = &value }), 0);
		assert_int_equal(kube_report_eviction(report, &(struct kube_eviction){
			.pod = &gone, .signal = EV_SIGNAL_MEMORY_AVAILABLE, .threshold = &value }), 0);
		drain(&s);
		requests = standin_requests(&s);
		assert_request_lines(requests, (const char *const[]){
			"GET /api/v1/nodes/" NODE,
			"PATCH /api/v1/namespaces/default/pods/web-1/status",
			"POST /api/v1/namespaces/default/events",
			"PATCH /api/v1/namespaces/prod/pods/db-0/status",
			"POST /api/v1/namespaces/prod/events",
			"PATCH /api/v1/namespaces/default/pods/gone/status",
			"POST /api/v1/namespaces/default/events",
		}, 7);
		json_object_put(requests);
		doc = standin_state(&s);
		{
			struct json_object *pods;

			json_object_object_get_ex(doc, "pods", &pods);
			assert_string_equal(str_at(json_object_array_get_idx(pods, 1), "status.phase"), "Running");
		}
		json_object_put(doc);
	}
	fixture_write(s.dir, "requests.jsonl", "%s", "");

	/* A pod replaced under the same name (uid -> 422) and one deleted (404): nothing to do,
	 * one request each, no retry. */
	{
		struct pod replaced = make_pod("default", "web-1", "ffffffff-0000-4000-8000-000000000001");
		struct pod gone = make_pod("default", "gone", UID_WEB);

		assert_int_equal(kube_report_shutdown_pod(report, &replaced, NULL), 0);
		assert_int_equal(kube_report_shutdown_pod(report, &gone, NULL), 0);
		drain(&s);
		requests = standin_requests(&s);
		assert_int_equal(json_object_array_length(requests), 2);
		json_object_put(requests);
	}
	/* Pods the API does not know, and static pods, are not reported. */
	{
		struct pod anonymous = make_pod("", "", UID_WEB);
		struct pod mirror = make_pod("kube-system", "etcd-" NODE, UID_DB);

		mirror.is_mirror = true;
		assert_int_equal(kube_report_shutdown_pod(report, &anonymous, NULL), -ENODATA);
		assert_int_equal(kube_report_shutdown_pod(report, &mirror, NULL), -ENODATA);
	}
	kube_report_free(report);
	standin_stop(&s);
}

static _Atomic int64_t fake_now;

static int64_t fake_clock(void)
{
	return fake_now;
}

static size_t count_requests(struct standin *s, const char *line)
{
	struct json_object *requests = standin_requests(s);
	char buf[1024];
	size_t n = 0;

	for (size_t i = 0; i < json_object_array_length(requests); i++)
		n += !strcmp(request_line(requests, i, buf, sizeof(buf)), line);
	json_object_put(requests);
	return n;
}

/* A status patch that keeps failing (500) is retried with backoff, but a report older than
 * KUBE_EVICTION_RETRY_FOR_NS is dropped: the eviction is over by then. */
static void test_eviction_report_window(void **state)
{
	struct pod pod = make_pod("default", "web-1", UID_WEB);
	struct kube_client_stats stats;
	struct threshold_value value;
	struct kube_report *report;
	static struct standin s;
	bool disabled;
	size_t patches;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, "[{\"method\":\"PATCH\",\"path\":\"/api/v1/namespaces/default/pods/web-1/status\","
		      "\"status\":500,\"times\":100000}]", NULL);
	fake_now = 1000000000000ll;
	assert_int_equal(kube_client_new(&s.client, &(struct kube_client_options){
		.config = &s.config, .request_timeout_ns = 3000000000ll, .backoff_initial_ns = 20000000,
		.backoff_max_ns = 40000000, .now_ns = fake_clock }), 0);
	report = new_report(&s, false, false);
	threshold_value_parse("100Mi", &value, &disabled);
	assert_int_equal(kube_report_eviction(report, &(struct kube_eviction){
		.pod = &pod, .signal = EV_SIGNAL_MEMORY_AVAILABLE, .threshold = &value,
		.threshold_quantity = 104857600, .available = 52428800 }), 0);
	/* The injected clock moves on as the real one does (retries fall due by it). */
	for (int i = 0; i < 200 && count_requests(&s, "PATCH /api/v1/namespaces/default/pods/web-1/status") < 3; i++) {
		usleep(20000);
		fake_now += 20000000;
	}
	assert_true(count_requests(&s, "PATCH /api/v1/namespaces/default/pods/web-1/status") >= 3);
	assert_false(kube_client_idle(s.client));
	/* Two minutes later (the injected clock): given up, nothing left to send. */
	fake_now += KUBE_EVICTION_RETRY_FOR_NS + 1;
	for (int i = 0; i < 250 && !kube_client_idle(s.client); i++) {
		usleep(20000);
		fake_now += 20000000;
	}
	drain(&s);
	kube_client_get_stats(s.client, &stats);
	assert_true(stats.dropped >= 1);
	patches = count_requests(&s, "PATCH /api/v1/namespaces/default/pods/web-1/status");
	usleep(200000);
	assert_int_equal(count_requests(&s, "PATCH /api/v1/namespaces/default/pods/web-1/status"), patches);
	assert_int_equal(count_requests(&s, "DELETE /api/v1/namespaces/default/pods/web-1"), 0);
	kube_report_free(report);
	standin_stop(&s);
}

static void test_event_dedupe(void **state)
{
	struct json_object *requests;
	struct kube_report *report;
	static struct standin s;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL, NULL);
	standin_client(&s);
	report = new_report(&s, false, false);
	drain(&s);
	/* The same Event three times: one create, then the count goes up on it. */
	kube_report_shutdown_cancel(report);
	drain(&s);
	kube_report_shutdown_cancel(report);
	drain(&s);
	kube_report_shutdown_cancel(report);
	drain(&s);
	requests = standin_requests(&s);
	assert_request_lines(requests, (const char *const[]){
		"GET /api/v1/nodes/" NODE,
		"POST /api/v1/namespaces/default/events",
		"PATCH /api/v1/namespaces/default/events/" NODE ".17979cfe362a0000",
		"PATCH /api/v1/namespaces/default/events/" NODE ".17979cfe362a0000",
	}, 4);
	assert_body(requests, 1,
		"{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"" NODE ".17979cfe362a0000\","
		"\"namespace\":\"default\"},\"involvedObject\":{\"apiVersion\":\"v1\",\"kind\":\"Node\","
		"\"name\":\"" NODE "\",\"uid\":\"" NODE "\"},\"type\":\"Normal\",\"reason\":\"Shutdown\","
		"\"message\":\"evictd detected a shutdown cancellation\",\"source\":{\"component\":\"evictd\","
		"\"host\":\"" NODE "\"},\"firstTimestamp\":\"" FIXED_TIME "\",\"lastTimestamp\":\"" FIXED_TIME "\","
		"\"count\":1,\"reportingComponent\":\"evictd\",\"reportingInstance\":\"" NODE "\"}");
	assert_string_equal(str_at(json_object_array_get_idx(requests, 2), "headers.content-type"),
			    "application/strategic-merge-patch+json");
	assert_body(requests, 2, "{\"count\":2,\"lastTimestamp\":\"" FIXED_TIME "\","
			       "\"message\":\"evictd detected a shutdown cancellation\"}");
	assert_body(requests, 3, "{\"count\":3,\"lastTimestamp\":\"" FIXED_TIME "\","
			       "\"message\":\"evictd detected a shutdown cancellation\"}");
	json_object_put(requests);
	kube_report_free(report);
	standin_stop(&s);
}

/*
 * The taint reconciler woken again for a generation it has already reconciled (at start the
 * task's first wake-up and the first conditions' can both land while it runs) reads the node
 * no second time; a real change still does.
 */
static void test_taint_reconciler_skips_a_repeated_wake(void **state)
{
	struct kube_report *report;
	static struct standin s;
	size_t gets;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL, NULL);
	standin_client(&s);
	report = new_report(&s, false, false);
	drain(&s);
	gets = count_requests(&s, "GET /api/v1/nodes/" NODE);
	assert_int_equal(gets, 1);
	for (int i = 0; i < 3; i++) {
		kube_task_wake(report->task);
		drain(&s);
	}
	assert_int_equal(count_requests(&s, "GET /api/v1/nodes/" NODE), gets);
	kube_report_conditions(report, (bool[EV_CONDITION_COUNT]){
		[EV_CONDITION_MEMORY_PRESSURE] = true });
	drain(&s);
	assert_int_equal(count_requests(&s, "GET /api/v1/nodes/" NODE), gets + 1);
	kube_report_free(report);
	standin_stop(&s);
}

#define NODE_FIXTURE "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" NODE "\"}," \
		     "\"spec\":{\"taints\":[" OTHER_TAINT "]}}"
#define MAINTENANCE_TAINT "{\"key\":\"example.com/maintenance\",\"effect\":\"NoSchedule\"}"

static void assert_node_taints(struct standin *s, const char *expected_taints)
{
	struct json_object *doc = standin_state(s), *nodes, *node, *spec, *taints = NULL;

	assert_true(json_object_object_get_ex(doc, "nodes", &nodes));
	assert_true(json_object_object_get_ex(nodes, NODE, &node));
	if (json_object_object_get_ex(node, "spec", &spec))
		json_object_object_get_ex(spec, "taints", &taints);
	assert_json_eq(taints ? json_object_to_json_string_ext(taints, JSON_C_TO_STRING_PLAIN) : "null",
		       expected_taints);
	json_object_put(doc);
}

static void test_pressure_taints_conflict(void **state)
{
	bool conditions[EV_CONDITION_COUNT] = { [EV_CONDITION_MEMORY_PRESSURE] = true };
	struct json_object *requests, *r;
	struct kube_report *report;
	static struct standin s;
	char rv_get[16], rv_patch[16];

	SKIP_WITHOUT_STANDIN();
	/* The first PATCH meets a node someone else changed since our GET: a real 409. */
	standin_start(&s, "[{\"method\":\"PATCH\",\"path\":\"/api/v1/nodes/\",\"times\":1,"
			  "\"mutate_node\":{\"taints\":[" MAINTENANCE_TAINT "]}}]", NODE_FIXTURE);
	standin_client(&s);
	report = new_report(&s, false, false);
	drain(&s);
	kube_report_conditions(report, conditions);
	drain(&s);
	/* Unchanged conditions: no request. */
	kube_report_conditions(report, conditions);
	drain(&s);
	requests = standin_requests(&s);
	assert_request_lines(requests, (const char *const[]){
		"GET /api/v1/nodes/" NODE,	/* start-up: none of ours there */
		"GET /api/v1/nodes/" NODE,
		"PATCH /api/v1/nodes/" NODE,	/* 409: the node changed */
		"GET /api/v1/nodes/" NODE,
		"PATCH /api/v1/nodes/" NODE,
	}, 5);
	r = json_object_array_get_idx(requests, 2);
	assert_string_equal(str_at(r, "headers.content-type"), "application/merge-patch+json");
	snprintf(rv_get, sizeof(rv_get), "%s", str_at(r, "body.metadata.resourceVersion"));
	assert_body(requests, 2, "{\"metadata\":{\"resourceVersion\":\"1001\"},\"spec\":{\"taints\":["
			       OTHER_TAINT "," MEM_TAINT "]}}");
	/* The retry is based on the node read again: the maintenance taint survives. */
	r = json_object_array_get_idx(requests, 4);
	snprintf(rv_patch, sizeof(rv_patch), "%s", str_at(r, "body.metadata.resourceVersion"));
	assert_string_not_equal(rv_get, rv_patch);
	assert_body(requests, 4, "{\"metadata\":{\"resourceVersion\":\"1002\"},\"spec\":{\"taints\":["
			       OTHER_TAINT "," MAINTENANCE_TAINT "," MEM_TAINT "]}}");
	json_object_put(requests);
	assert_node_taints(&s, "[" OTHER_TAINT "," MAINTENANCE_TAINT "," MEM_TAINT "]");

	/* The condition goes (the engine already waited the transition period): only ours goes. */
	conditions[EV_CONDITION_MEMORY_PRESSURE] = false;
	kube_report_conditions(report, conditions);
	drain(&s);
	requests = standin_requests(&s);
	assert_int_equal(json_object_array_length(requests), 7);
	assert_body(requests, 6, "{\"metadata\":{\"resourceVersion\":\"1003\"},\"spec\":{\"taints\":["
			       OTHER_TAINT "," MAINTENANCE_TAINT "]}}");
	json_object_put(requests);
	assert_node_taints(&s, "[" OTHER_TAINT "," MAINTENANCE_TAINT "]");
	kube_report_free(report);
	standin_stop(&s);
}

#define SHUTDOWN_TAINT "{\"key\":\"evictd.io/shutdown\",\"effect\":\"NoSchedule\"}"
#define TERMINATED_PATCH(uid)                                                                      \
	"{\"metadata\":{\"uid\":\"" uid "\",\"annotations\":{\"evictd.io/failed-at\":\"" FIXED_TIME "\"}}," \
	"\"status\":{\"phase\":\"Failed\",\"reason\":\"Terminated\"," \
	"\"message\":\"Pod was terminated in response to imminent node shutdown.\",\"conditions\":["   \
	"{\"type\":\"DisruptionTarget\",\"status\":\"True\",\"lastTransitionTime\":\"" FIXED_TIME "\","  \
	"\"reason\":\"TerminationByKubelet\",\"message\":\"Pod was terminated in response to imminent " \
	"node shutdown.\"}]}}"

static void test_shutdown_and_next_start(void **state)
{
	struct pod web = make_pod("default", "web-1", UID_WEB), db = make_pod("prod", "db-0", UID_DB);
	struct json_object *requests;
	struct kube_report *report;
	char record[PATH_MAX + 64];
	static struct standin s;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL, NODE_FIXTURE);
	standin_client(&s);
	snprintf(record, sizeof(record), "%s/state/" KUBE_OUT_OF_SERVICE_RECORD, s.dir);
	sync_calls = 0;
	report = new_report(&s, true, false);
	drain(&s);

	kube_report_shutdown_begin(report);
	drain(&s);
	/* Each pod as its kill ends. */
	assert_int_equal(kube_report_shutdown_pod(report, &web, NULL), 0);
	assert_int_equal(kube_report_shutdown_pod(report, &db, NULL), 0);
	drain(&s);
	assert_int_equal(sync_calls, 0);
	assert_int_equal(access(record, F_OK), -1);
	/* All gone: sync, record, then the out-of-service taint. */
	kube_report_shutdown_end(report, true, KUBE_NODE_GOING_AWAY);
	drain(&s);
	assert_int_equal(sync_calls, 1);
	assert_int_equal(access(record, F_OK), 0);

	requests = standin_requests(&s);
	assert_request_lines(requests, (const char *const[]){
		"GET /api/v1/nodes/" NODE,
		"POST /api/v1/namespaces/default/events",
		"GET /api/v1/nodes/" NODE,
		"PATCH /api/v1/nodes/" NODE,
		"PATCH /api/v1/namespaces/default/pods/web-1/status",
		"PATCH /api/v1/namespaces/prod/pods/db-0/status",
		"GET /api/v1/nodes/" NODE,
		"PATCH /api/v1/nodes/" NODE,
		"POST /api/v1/namespaces/default/events",
	}, 9);
	assert_string_equal(str_at(json_object_array_get_idx(requests, 1), "body.reason"), "Shutdown");
	assert_string_equal(str_at(json_object_array_get_idx(requests, 1), "body.message"),
			    "evictd detected a shutdown event: terminating pods by priority");
	assert_body(requests, 3, "{\"metadata\":{\"resourceVersion\":\"1001\"},\"spec\":{\"taints\":["
			       OTHER_TAINT "," SHUTDOWN_TAINT "]}}");
	assert_body(requests, 4, TERMINATED_PATCH(UID_WEB));
	assert_body(requests, 5, TERMINATED_PATCH(UID_DB));
	assert_body(requests, 7, "{\"metadata\":{\"resourceVersion\":\"1002\"},\"spec\":{\"taints\":["
			       OTHER_TAINT "," SHUTDOWN_TAINT "," OOS_TAINT "]}}");
	assert_string_equal(str_at(json_object_array_get_idx(requests, 8), "body.reason"), "OutOfService");
	assert_string_equal(str_at(json_object_array_get_idx(requests, 8), "body.type"), "Warning");
	json_object_put(requests);
	assert_node_taints(&s, "[" OTHER_TAINT "," SHUTDOWN_TAINT "," OOS_TAINT "]");
	kube_report_free(report);
	kube_client_free(s.client);

	/* The next boot: a new evictd finds the record and takes off what it put there. */
	standin_client(&s);
	report = new_report(&s, true, false);
	drain(&s);
	requests = standin_requests(&s);
	assert_int_equal(json_object_array_length(requests), 12);
	assert_body(requests, 10, "{\"metadata\":{\"resourceVersion\":\"1005\"},\"spec\":{\"taints\":["
				OTHER_TAINT "]}}");
	assert_string_equal(str_at(json_object_array_get_idx(requests, 11), "body.reason"), "OutOfServiceRemoved");
	json_object_put(requests);
	assert_int_equal(access(record, F_OK), -1);
	assert_node_taints(&s, "[" OTHER_TAINT "]");
	kube_report_free(report);
	standin_stop(&s);
}

static void test_out_of_service_guards(void **state)
{
	struct json_object *requests;
	struct kube_report *report;
	static struct standin s;

	SKIP_WITHOUT_STANDIN();
	/* An out-of-service taint evictd did not record (an operator's) survives a start. */
	standin_start(&s, NULL, "{\"metadata\":{\"name\":\"" NODE "\"},\"spec\":{\"taints\":[" OOS_TAINT "]}}");
	standin_client(&s);
	sync_calls = 0;
	report = new_report(&s, true, false);
	drain(&s);
	/* Not every pod gone: no out-of-service taint; cancel: the shutdown taint goes. */
	kube_report_shutdown_begin(report);
	drain(&s);
	kube_report_shutdown_end(report, false, KUBE_NODE_GOING_AWAY);
	drain(&s);
	/* A reboot, or a shutdown whose kind is unknown: never out-of-service either. */
	kube_report_shutdown_end(report, true, KUBE_NODE_COMING_BACK);
	drain(&s);
	kube_report_shutdown_end(report, true, KUBE_NODE_FATE_UNKNOWN);
	drain(&s);
	kube_report_shutdown_cancel(report);
	drain(&s);
	assert_int_equal(sync_calls, 0);
	requests = standin_requests(&s);
	assert_request_lines(requests, (const char *const[]){
		"GET /api/v1/nodes/" NODE,
		"POST /api/v1/namespaces/default/events",
		"GET /api/v1/nodes/" NODE,
		"PATCH /api/v1/nodes/" NODE,
		"POST /api/v1/namespaces/default/events",
		"GET /api/v1/nodes/" NODE,
		"PATCH /api/v1/nodes/" NODE,
	}, 7);
	assert_body(requests, 6, "{\"metadata\":{\"resourceVersion\":\"1002\"},\"spec\":{\"taints\":["
			       OOS_TAINT "]}}");
	json_object_put(requests);
	kube_report_free(report);
	standin_stop(&s);
}

/* A restart under pressure keeps the pressure taint (reconcile at start, no remove-then-add);
 * nothing is sent before the first evaluation; a restart without pressure removes it. */
static void test_taints_reconciled_at_start(void **state)
{
	bool memory[EV_CONDITION_COUNT] = { [EV_CONDITION_MEMORY_PRESSURE] = true };
	bool none[EV_CONDITION_COUNT] = { false };
	struct json_object *requests;
	struct kube_report *report;
	static struct standin s;
	char state_dir[PATH_MAX + 16];

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL, "{\"metadata\":{\"name\":\"" NODE "\"},\"spec\":{\"taints\":["
		      "{\"key\":\"evictd.io/memory-pressure\",\"effect\":\"NoSchedule\"}]}}");
	standin_client(&s);
	snprintf(state_dir, sizeof(state_dir), "%s/state", s.dir);
	assert_int_equal(kube_report_new(&report, &(struct kube_report_options){
		.client = s.client, .node_name = NODE, .state_dir = state_dir, .realtime_ns = fixed_realtime }), 0);
	drain(&s);
	requests = standin_requests(&s);
	assert_int_equal(json_object_array_length(requests), 0);
	json_object_put(requests);
	kube_report_conditions(report, memory);
	drain(&s);
	requests = standin_requests(&s);
	assert_request_lines(requests, (const char *const[]){ "GET /api/v1/nodes/" NODE }, 1);
	json_object_put(requests);
	kube_report_free(report);

	/* The next start finds no pressure: the taint goes. */
	assert_int_equal(kube_report_new(&report, &(struct kube_report_options){
		.client = s.client, .node_name = NODE, .state_dir = state_dir, .realtime_ns = fixed_realtime }), 0);
	kube_report_conditions(report, none);
	drain(&s);
	requests = standin_requests(&s);
	assert_request_lines(requests, (const char *const[]){
		"GET /api/v1/nodes/" NODE, "GET /api/v1/nodes/" NODE, "PATCH /api/v1/nodes/" NODE }, 3);
	assert_body(requests, 2, "{\"metadata\":{\"resourceVersion\":\"1001\"},\"spec\":{\"taints\":null}}");
	json_object_put(requests);
	kube_report_free(report);
	standin_stop(&s);
}

static void test_dry_run_writes_nothing(void **state)
{
	bool conditions[EV_CONDITION_COUNT] = { [EV_CONDITION_DISK_PRESSURE] = true };
	struct pod pod = make_pod("default", "web-1", UID_WEB);
	struct json_object *requests;
	struct kube_report *report;
	static struct standin s;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL, NULL);
	standin_client(&s);
	report = new_report(&s, true, true);
	drain(&s);
	kube_report_eviction(report, &(struct kube_eviction){ .pod = &pod, .signal = EV_SIGNAL_NODEFS_AVAILABLE });
	kube_report_conditions(report, conditions);
	kube_report_shutdown_begin(report);
	kube_report_shutdown_end(report, true, KUBE_NODE_GOING_AWAY);
	drain(&s);
	requests = standin_requests(&s);
	for (size_t i = 0; i < json_object_array_length(requests); i++)
		assert_string_equal(str_at(json_object_array_get_idx(requests, i), "method"), "GET");
	json_object_put(requests);
	kube_report_free(report);
	standin_stop(&s);
}

static int cmp_strings(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool event_fd_readable(struct kube_client *client, int timeout_ms)
{
	struct pollfd pfd = { .fd = kube_client_event_fd(client), .events = POLLIN };

	return poll(&pfd, 1, timeout_ms) == 1 && (pfd.revents & POLLIN);
}

/* Wait (polling the client's eventfd, as the daemon's loop does) until pred holds. */
static bool wait_until_pred(struct standin *s, bool (*pred)(struct pods_meta_source *, void *),
			    struct pods_meta_source *source, void *ctx, int timeout_ms)
{
	int64_t end = now_ns() + (int64_t)timeout_ms * 1000000;

	while (now_ns() < end) {
		if (pred(source, ctx))
			return true;
		if (event_fd_readable(s->client, 50))
			kube_client_dispatch(s->client);
	}
	return pred(source, ctx);
}

struct count_ctx {
	struct pod_meta_list *list;
	size_t want;
};

/* refresh() until the list holds ctx->want pods. */
static bool list_has(struct pods_meta_source *source, void *arg)
{
	struct count_ctx *ctx = arg;

	source->refresh(source, ctx->list);
	return ctx->list->n_items == ctx->want;
}

static bool health_is(struct pods_meta_source *source, void *arg)
{
	const struct kube_pods_health *want = arg;
	struct kube_pods_health h;

	kube_pods_source_health(source, &h);
	return h.listed == want->listed && h.watching == want->watching && h.failing == want->failing &&
	       h.last_status == want->last_status;
}

/* At least *arg watch streams opened, one open now, nothing failing. */
static bool watches_reopened(struct pods_meta_source *source, void *arg)
{
	struct kube_pods_health h;

	kube_pods_source_health(source, &h);
	return h.watches >= *(const uint64_t *)arg && h.watching && !h.failing;
}

static const char *query_param(struct json_object *request, const char *name, char *buf, size_t len)
{
	const char *query = str_at(request, "query");
	size_t n = strlen(name);

	buf[0] = '\0';
	for (const char *p = query; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
		if (!strncmp(p, name, n) && p[n] == '=') {
			snprintf(buf, len, "%.*s", (int)strcspn(p + n + 1, "&"), p + n + 1);
			return buf;
		}
		if (!strchr(p, '&'))
			break;
	}
	return NULL;
}

#define POD_JSON(name, uid, node) \
	"{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"default\",\"uid\":\"" uid "\"}," \
	"\"spec\":{\"nodeName\":\"" node "\",\"priority\":7},\"status\":{\"phase\":\"Running\"}}"
#define UID_NEW "0a1b2c3d-0000-4000-8000-0000000000aa"
#define WATCH_PREFIX "GET /api/v1/pods?allowWatchBookmarks=true&fieldSelector=spec.nodeName%3D" NODE "&resourceVersion="

static struct pods_meta_source *watch_source(struct standin *s, unsigned page_limit, int64_t timeout_s)
{
	struct pods_meta_source *source = kube_pods_source_new(&(struct kube_pods_source_options){
		.client = s->client, .node_name = NODE, .page_limit = page_limit, .watch_timeout_s = timeout_s,
		.backoff_initial_ns = 20000000, .backoff_cap_ns = 100000000,	/* fast, as the client */
		.relist_spread_ns = -1 });

	assert_non_null(source);
	return source;
}

/* The list (paginated, from the watch cache: resourceVersion=0), then only watches, each
 * from the last resourceVersion seen; changes arrive as events; nothing is listed again while
 * the watch runs, across several watch timeouts. */
static void test_pods_list_then_watch(void **state)
{
	struct pod_meta_list list = { 0 };
	struct count_ctx want = { &list, 5 };
	struct pods_meta_source *source;
	struct json_object *requests;
	struct kube_pods_health h;
	char list_rv[64], rv[64], prev_rv[64];
	const char *uids[6];
	static struct standin s;	/* the teardown stops it after a failed assertion */
	size_t n, watches = 0;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL, NULL);
	standin_client(&s);
	source = watch_source(&s, 2, 1);
	assert_true(wait_until_pred(&s, list_has, source, &want, 10000));
	/* Five pods on this node over three pages, sorted for the join. */
	for (size_t i = 0; i < 5; i++)
		uids[i] = list.items[i].uid;
	qsort(uids, 5, sizeof(uids[0]), cmp_strings);
	for (size_t i = 0; i < 5; i++)
		assert_string_equal(list.items[i].uid, uids[i]);
	for (size_t i = 0; i < list.n_items; i++)
		if (!strcmp(list.items[i].uid, UID_DB)) {
			assert_string_equal(list.items[i].namespace_, "prod");
			assert_int_equal(list.items[i].priority, 1000);
		}
	/* A pod bound here arrives as an ADDED event; one on another node does not. */
	standin_hook(&s, "pods", POD_JSON("new", UID_NEW, NODE));
	standin_hook(&s, "pods", POD_JSON("away", "0a1b2c3d-0000-4000-8000-0000000000bb", "node-2"));
	want.want = 6;
	assert_true(wait_until_pred(&s, list_has, source, &want, 5000));
	/* Deleted: gone from the list. */
	standin_hook(&s, "delete-pod/default/new", NULL);
	want.want = 5;
	assert_true(wait_until_pred(&s, list_has, source, &want, 5000));
	/* Let three watch timeouts (1 s each) pass. */
	usleep(3200000);
	kube_pods_source_health(source, &h);
	assert_true(h.listed);
	assert_false(h.failing);
	assert_int_equal(h.lists, 1);
	assert_int_equal(h.relists, 0);
	assert_true(h.watches >= 3);
	assert_true(h.watch_events >= 2);
	assert_true(h.bookmarks >= 1);
	source->destroy(source);

	requests = standin_requests(&s);
	n = json_object_array_length(requests);
	assert_true(n >= 6);
	{
		char buf[1024];

		assert_string_equal(request_line(requests, 0, buf, sizeof(buf)),
				    "GET /api/v1/pods?fieldSelector=spec.nodeName%3D" NODE "&limit=2&resourceVersion=0");
		assert_string_equal(request_line(requests, 1, buf, sizeof(buf)),
				    "GET /api/v1/pods?fieldSelector=spec.nodeName%3D" NODE "&limit=2&continue=page-2-1000");
		assert_string_equal(request_line(requests, 2, buf, sizeof(buf)),
				    "GET /api/v1/pods?fieldSelector=spec.nodeName%3D" NODE "&limit=2&continue=page-4-1000");
		/* Then only watches, each from the resourceVersion the last one reached. */
		snprintf(list_rv, sizeof(list_rv), "%s", "");
		for (size_t i = 3; i < n; i++) {
			struct json_object *r = json_object_array_get_idx(requests, i);

			request_line(requests, i, buf, sizeof(buf));
			if (strncmp(buf, WATCH_PREFIX, strlen(WATCH_PREFIX)))
				fail_msg("request %zu is not a watch: %s", i, buf);
			assert_non_null(strstr(buf, "&timeoutSeconds=1&watch=true"));
			assert_string_equal(str_at(r, "headers.authorization"), "Bearer token-one");
			query_param(r, "resourceVersion", rv, sizeof(rv));
			assert_true(rv[0]);
			if (i == 3)
				snprintf(list_rv, sizeof(list_rv), "%s", rv);
			else
				assert_true(strtoll(rv, NULL, 10) >= strtoll(prev_rv, NULL, 10));
			snprintf(prev_rv, sizeof(prev_rv), "%s", rv);
			watches++;
		}
	}
	assert_true(watches >= 3);
	/* The watches moved past the three pod changes (and bookmarks). */
	assert_true(strtoll(prev_rv, NULL, 10) >= strtoll(list_rv, NULL, 10) + 3);
	json_object_put(requests);
	pod_meta_list_free(&list);
	standin_stop(&s);
}

/* A dropped connection resumes the watch from the last resourceVersion (no list); a watch
 * that gets 410 Gone (history compacted) relists at the last resourceVersion, then watches
 * from the new list's. */
static void test_pods_watch_resume_and_relist(void **state)
{
	struct pod_meta_list list = { 0 };
	struct count_ctx want = { &list, 5 };
	struct pods_meta_source *source;
	struct json_object *requests;
	struct kube_pods_health h;
	char buf[1024], rv_before[64], rv[64];
	static struct standin s;	/* the teardown stops it after a failed assertion */
	size_t n, lists = 0, first_relist = 0;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL, NULL);
	standin_client(&s);
	source = watch_source(&s, 500, 30);
	assert_true(wait_until_pred(&s, list_has, source, &want, 10000));
	assert_true(wait_until_pred(&s, health_is, source,
				    &(struct kube_pods_health){ .listed = true, .watching = true }, 5000));
	standin_hook(&s, "pods", POD_JSON("new", UID_NEW, NODE));
	want.want = 6;
	assert_true(wait_until_pred(&s, list_has, source, &want, 5000));
	/* Cut the stream: it comes back from where it was, nothing is listed. Waited for by the
	 * count of watches opened, not by "watching": under load the cut may not be seen yet when
	 * the test looks, and the compaction below must find the resumed watch open (it once
	 * came after it, watched from past the compaction and never got its 410). */
	standin_hook(&s, "drop-watches", NULL);
	assert_true(wait_until_pred(&s, watches_reopened, source, &(uint64_t){ 2 }, 10000));
	kube_pods_source_health(source, &h);
	assert_int_equal(h.lists, 1);
	assert_true(h.watches >= 2);
	/* Compact the history and cut again: the resumed watch gets ERROR 410. */
	standin_hook(&s, "compact", NULL);
	standin_hook(&s, "drop-watches", NULL);
	for (int i = 0; i < 100; i++) {
		kube_pods_source_health(source, &h);
		if (h.relists == 1 && h.watching)
			break;
		usleep(50000);
	}
	assert_int_equal(h.relists, 1);
	assert_int_equal(h.lists, 2);
	assert_false(h.failing);
	source->refresh(source, &list);
	assert_int_equal(list.n_items, 6);
	source->destroy(source);

	requests = standin_requests(&s);
	n = json_object_array_length(requests);
	for (size_t i = 0; i < n; i++) {
		request_line(requests, i, buf, sizeof(buf));
		if (!strncmp(buf, "GET /api/v1/pods?fieldSelector", 30)) {
			lists++;
			if (lists == 2)
				first_relist = i;
		}
	}
	assert_int_equal(lists, 2);
	/* list, watch, watch (resumed), watch (410), list at the last resourceVersion, watch. */
	assert_int_equal(n, 6);
	assert_int_equal(first_relist, 4);
	query_param(json_object_array_get_idx(requests, 1), "resourceVersion", rv_before, sizeof(rv_before));
	query_param(json_object_array_get_idx(requests, 2), "resourceVersion", rv, sizeof(rv));
	assert_true(strtoll(rv, NULL, 10) > strtoll(rv_before, NULL, 10));	/* past the ADDED */
	query_param(json_object_array_get_idx(requests, 3), "resourceVersion", rv_before, sizeof(rv_before));
	query_param(json_object_array_get_idx(requests, 4), "resourceVersion", rv, sizeof(rv));
	assert_string_equal(rv, rv_before);	/* relistResourceVersion: the last synced one */
	request_line(requests, 4, buf, sizeof(buf));
	/* From the watch cache: NotOlderThan, no limit (a limit would make it an exact read). */
	assert_non_null(strstr(buf, "&resourceVersion="));
	assert_non_null(strstr(buf, "&resourceVersionMatch=NotOlderThan"));
	assert_null(strstr(buf, "limit="));
	assert_int_equal(strncmp(request_line(requests, 5, buf, sizeof(buf)), WATCH_PREFIX, strlen(WATCH_PREFIX)), 0);
	json_object_put(requests);
	pod_meta_list_free(&list);
	standin_stop(&s);
}

/* Adversarial API servers: the first list never arrives (403), then a hang past the request
 * timeout, then garbage; the watch gets 403 and then garbage. Never blocks the caller; the
 * health says so (readyz); it recovers when the server does. */
static void test_pods_watch_adversarial(void **state)
{
	struct pod_meta_list list = { 0 };
	struct count_ctx want = { &list, 5 };
	struct pods_meta_source *source;
	struct kube_pods_health h;
	static struct standin s;	/* the teardown stops it after a failed assertion */
	uint64_t failures;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, "[{\"method\":\"GET\",\"path\":\"/api/v1/pods\",\"query\":\"limit=\",\"status\":403,\"times\":3},"
		      "{\"method\":\"GET\",\"path\":\"/api/v1/pods\",\"query\":\"limit=\",\"delay\":4,\"times\":1},"
		      "{\"method\":\"GET\",\"path\":\"/api/v1/pods\",\"query\":\"limit=\",\"body\":\"<html>nope\",\"times\":1}]",
		      NULL);
	standin_client(&s);
	source = watch_source(&s, 500, 30);
	/* Never waits for the server: the list succeeds only after 403 x3, a 4 s hang and garbage,
	 * so a constructor that waited for it would return ready. */
	assert_false(kube_pods_source_ready(source));
	assert_true(wait_until_pred(&s, health_is, source,
				    &(struct kube_pods_health){ .failing = true, .last_status = 403 }, 5000));
	assert_int_equal(source->refresh(source, &list), -EIO);
	assert_int_equal(list.n_items, 0);
	assert_false(kube_pods_source_ready(source));
	/* 403 x3, the hang (cut at the 3 s request timeout), garbage, then the list. */
	assert_true(wait_until_pred(&s, list_has, source, &want, 20000));
	kube_pods_source_health(source, &h);
	assert_true(h.failures >= 5);
	assert_true(wait_until_pred(&s, health_is, source,
				    &(struct kube_pods_health){ .listed = true, .watching = true }, 5000));

	/* The watch is refused (403) for as long as it takes to see it, ... */
	fixture_write(s.dir, "faults.json", "%s",
		      "[{\"method\":\"GET\",\"path\":\"/api/v1/pods\",\"query\":\"watch=true\",\"status\":403,\"times\":1000}]");
	standin_hook(&s, "drop-watches", NULL);
	assert_true(wait_until_pred(&s, health_is, source,
				    &(struct kube_pods_health){ .listed = true, .failing = true, .last_status = 403 }, 5000));
	kube_pods_source_health(source, &h);
	failures = h.failures;
	/* ... then answered with a line of garbage once, then it works again. */
	fixture_write(s.dir, "faults.json", "%s",
		      "[{\"method\":\"GET\",\"path\":\"/api/v1/pods\",\"query\":\"watch=true\",\"body\":\"{garbage\\n\",\"times\":1}]");
	for (int i = 0; i < 200; i++) {
		kube_pods_source_health(source, &h);
		if (h.failures > failures)
			break;	/* the garbage failed the watch */
		usleep(20000);
	}
	assert_true(h.failures > failures);
	assert_true(wait_until_pred(&s, health_is, source,
				    &(struct kube_pods_health){ .listed = true, .watching = true }, 10000));
	assert_int_equal(h.lists, 1);	/* a failing watch is resumed, not relisted */
	/* The metadata stayed through all of it. */
	source->refresh(source, &list);
	assert_int_equal(list.n_items, 5);
	source->destroy(source);
	pod_meta_list_free(&list);
	standin_stop(&s);
}

/* Destroying the source (a reload) never waits for the watch, and freeing the client ends
 * a watch still open. */
static void test_pods_watch_stops_promptly(void **state)
{
	struct pod_meta_list list = { 0 };
	struct count_ctx want = { &list, 5 };
	struct pods_meta_source *source;
	static struct standin s;	/* the teardown stops it after a failed assertion */
	int64_t start;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL, NULL);
	standin_client(&s);
	source = watch_source(&s, 500, 600);
	assert_true(wait_until_pred(&s, list_has, source, &want, 10000));
	start = now_ns();
	source->destroy(source);
	/* Waiting for the watch would take its 600 s timeout: a bound that only catches that. */
	assert_true(now_ns() - start < 10000000000ll);
	source = watch_source(&s, 500, 600);
	assert_true(wait_until_pred(&s, health_is, source,
				    &(struct kube_pods_health){ .listed = true, .watching = true }, 10000));
	start = now_ns();
	kube_client_free(s.client);
	s.client = NULL;
	assert_true(now_ns() - start < 10000000000ll);	/* not the watch's 600 s */
	source->destroy(source);
	pod_meta_list_free(&list);
	standin_stop(&s);
}
static void test_token_rotation(void **state)
{
	struct pod pod = make_pod("default", "web-1", UID_WEB);
	struct json_object *requests;
	struct kube_report *report;
	char path[PATH_MAX + 32], tmp[PATH_MAX + 32];
	struct kube_client_stats stats;
	static struct standin s;
	FILE *f;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL, NULL);
	standin_client(&s);
	report = new_report(&s, false, false);
	drain(&s);
	kube_report_shutdown_pod(report, &pod, NULL);
	drain(&s);
	/* The kubelet rotates a projected token by swapping the file. */
	snprintf(path, sizeof(path), "%s/token", s.dir);
	snprintf(tmp, sizeof(tmp), "%s/token.new", s.dir);
	f = fopen(tmp, "w");
	fputs("token-two-rotated\n", f);
	fclose(f);
	assert_int_equal(rename(tmp, path), 0);
	kube_report_shutdown_pod(report, &pod, NULL);
	drain(&s);
	requests = standin_requests(&s);
	assert_int_equal(json_object_array_length(requests), 3);
	assert_string_equal(str_at(json_object_array_get_idx(requests, 1), "headers.authorization"), "Bearer token-one");
	assert_string_equal(str_at(json_object_array_get_idx(requests, 2), "headers.authorization"),
			    "Bearer token-two-rotated");
	json_object_put(requests);
	kube_client_get_stats(s.client, &stats);
	assert_int_equal(stats.token_reloads, 2);
	kube_report_free(report);
	standin_stop(&s);
}

static void test_retry_500_then_success(void **state)
{
	struct pod pod = make_pod("default", "web-1", UID_WEB);
	struct json_object *requests;
	struct kube_report *report;
	struct kube_client_stats stats;
	static struct standin s;
	int64_t start;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, "[{\"method\":\"PATCH\",\"path\":\"/api/v1/namespaces/default/pods/\",\"status\":500,\"times\":2},"
			  "{\"method\":\"PATCH\",\"path\":\"/api/v1/namespaces/default/pods/\",\"status\":429,\"times\":1,"
			  "\"retry_after\":1}]", NULL);
	standin_client(&s);
	report = new_report(&s, false, false);
	drain(&s);
	start = now_ns();
	kube_report_shutdown_pod(report, &pod, NULL);
	drain(&s);
	/* The 429's Retry-After: 1 outweighs our 20-100 ms backoff. */
	assert_true(now_ns() - start >= 1000000000);
	requests = standin_requests(&s);
	/* 500, 500, 429, then the patch lands; the same body each time. */
	assert_request_lines(requests, (const char *const[]){
		"GET /api/v1/nodes/" NODE,
		"PATCH /api/v1/namespaces/default/pods/web-1/status",
		"PATCH /api/v1/namespaces/default/pods/web-1/status",
		"PATCH /api/v1/namespaces/default/pods/web-1/status",
		"PATCH /api/v1/namespaces/default/pods/web-1/status",
	}, 5);
	for (size_t i = 1; i < 5; i++)
		assert_body(requests, i, TERMINATED_PATCH(UID_WEB));
	json_object_put(requests);
	kube_client_get_stats(s.client, &stats);
	assert_int_equal(stats.retries, 3);
	assert_int_equal(stats.dropped, 0);
	/* A 403 (RBAC) is not retried. */
	fixture_write(s.dir, "faults.json", "[{\"method\":\"PATCH\",\"status\":403,\"times\":5}]");
	kube_report_shutdown_pod(report, &pod, NULL);
	drain(&s);
	requests = standin_requests(&s);
	assert_int_equal(json_object_array_length(requests), 6);
	json_object_put(requests);
	kube_report_free(report);
	standin_stop(&s);
}

/* Nothing listens there: connections are refused at once. */
static int closed_port(void)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(addr);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	getsockname(fd, (struct sockaddr *)&addr, &len);
	close(fd);
	return ntohs(addr.sin_port);
}

static void test_api_down_never_blocks(void **state)
{
	struct pod pod = make_pod("default", "web-1", UID_WEB);
	struct threshold_value value;
	struct kube_client_stats stats;
	struct kube_report *report;
	static struct standin s;
	int64_t start, took;
	bool disabled;

	SKIP_WITHOUT_STANDIN();
	/* The server answers nothing for 2.5 s (a hung API server) on every pod patch. */
	standin_start(&s, "[{\"method\":\"PATCH\",\"path\":\"/api/v1/namespaces/\",\"delay\":2.5,\"status\":503,"
			  "\"times\":100}]", NULL);
	standin_client(&s);
	report = new_report(&s, false, false);
	drain(&s);
	threshold_value_parse("100Mi", &value, &disabled);
	start = now_ns();
	for (int i = 0; i < 20; i++)
		assert_int_equal(kube_report_eviction(report, &(struct kube_eviction){
			.pod = &pod, .signal = EV_SIGNAL_MEMORY_AVAILABLE, .threshold = &value,
			.threshold_quantity = 104857600, .available = 52428800 }), 0);
	took = now_ns() - start;
	/* 40 requests queued behind a hung server: the caller never waited for any of them (one
	 * wait is the server's 2.5 s), and they are all still queued or in flight. */
	assert_true(took < 2500000000ll);
	assert_false(kube_client_idle(s.client));
	assert_int_equal(kube_client_drain(s.client, 200000000), -ETIMEDOUT);
	kube_report_free(report);
	standin_stop(&s);	/* stops within the request in flight */

	/* Connection refused everywhere: still queued at once, retried in the background. */
	memset(&s, 0, sizeof(s));
	fixture_tmpdir(s.dir, "kube-down");
	snprintf(s.config.server, sizeof(s.config.server), "https://127.0.0.1:%d", closed_port());
	standin_client(&s);
	report = new_report(&s, false, false);
	start = now_ns();
	assert_int_equal(kube_report_eviction(report, &(struct kube_eviction){
		.pod = &pod, .signal = EV_SIGNAL_MEMORY_AVAILABLE, .threshold = &value,
		.threshold_quantity = 104857600, .available = 52428800 }), 0);
	took = now_ns() - start;
	/* Not retried in the caller: the retries' backoff (250 ms doubling, up to 30 s) is not
	 * waited out; the bound only catches that. */
	assert_true(took < 2000000000ll);
	for (int i = 0; i < 1000; i++) {	/* the retries happen in the background */
		kube_client_get_stats(s.client, &stats);
		if (stats.failures >= 3 && stats.retries >= 2)
			break;
		usleep(10000);
	}
	assert_true(stats.failures >= 3);
	assert_true(stats.retries >= 2);
	kube_report_free(report);
	kube_client_free(s.client);
	fixture_rm_rf(s.dir);
}

static void test_queue_full(void **state)
{
	struct kube_config config = { .server = "https://127.0.0.1:1" };
	struct kube_client *client;
	struct kube_client_stats stats;
	int64_t start;
	int err, refused = 0;

	config.server[0] = '\0';
	snprintf(config.server, sizeof(config.server), "https://127.0.0.1:%d", closed_port());
	assert_int_equal(kube_client_new(&client, &(struct kube_client_options){
		.config = &config, .queue_max = 4, .backoff_initial_ns = 1000000000, .backoff_max_ns = 1000000000 }), 0);
	log_set_level(LOGLEVEL_ERR - 1);	/* the refusals are logged; keep the output short */
	start = now_ns();
	for (int i = 0; i < 10; i++) {
		err = kube_submit(client, &(struct kube_request_spec){ .method = "GET", .path = "/api/v1/nodes/x" });
		if (err == -ENOBUFS)
			refused++;
		else
			assert_int_equal(err, 0);
	}
	/* A submit that waited for an attempt would wait out its 1 s backoff (at least 500 ms
	 * with the jitter): the bound only catches that. */
	assert_true(now_ns() - start < 500000000);
	log_set_level(LOGLEVEL_INFO);
	assert_true(refused >= 5);
	kube_client_get_stats(client, &stats);
	assert_int_equal(stats.dropped, (uint64_t)refused);
	kube_client_free(client);
}

/* ---- the event loop side ------------------------------------------------------------------ */

/* Whether the event fd is readable within timeout_ms. */
static void test_idle_notify(void **state)
{
	struct json_object *requests;
	static struct standin s;

	SKIP_WITHOUT_STANDIN();
	/* Every node read takes 0.5 s: the API server is slow. */
	standin_start(&s, "[{\"method\":\"GET\",\"path\":\"/api/v1/nodes/\",\"delay\":0.5,\"times\":100}]", NULL);
	standin_client(&s);
	assert_true(kube_client_event_fd(s.client) >= 0);
	assert_false(event_fd_readable(s.client, 0));
	assert_true(kube_client_idle(s.client));
	assert_int_equal(kube_client_dispatch(s.client), 0);

	/* Idle already: the notification is posted at once. */
	kube_client_request_idle_notify(s.client);
	assert_true(event_fd_readable(s.client, 0));
	assert_int_equal(kube_client_dispatch(s.client), KUBE_EVENT_IDLE);
	assert_false(event_fd_readable(s.client, 0));

	/* Busy: the request returns at once, the event comes when the queue has drained. */
	assert_int_equal(kube_submit(s.client, &(struct kube_request_spec){ .method = "GET",
		.path = "/api/v1/nodes/" NODE }), 0);
	assert_false(kube_client_idle(s.client));
	kube_client_request_idle_notify(s.client);
	/* It returned before the request (0.5 s at the server) was answered: not idle yet. */
	assert_false(kube_client_idle(s.client));
	assert_false(event_fd_readable(s.client, 100));
	assert_true(event_fd_readable(s.client, 5000));
	assert_int_equal(kube_client_dispatch(s.client), KUBE_EVENT_IDLE);
	assert_true(kube_client_idle(s.client));
	requests = standin_requests(&s);
	assert_request_lines(requests, (const char *const[]){ "GET /api/v1/nodes/" NODE }, 1);
	json_object_put(requests);

	/* The deadline wins: cancelled, no event comes later. */
	assert_int_equal(kube_submit(s.client, &(struct kube_request_spec){ .method = "GET",
		.path = "/api/v1/nodes/" NODE }), 0);
	kube_client_request_idle_notify(s.client);
	assert_false(event_fd_readable(s.client, 50));
	kube_client_cancel_idle_notify(s.client);
	assert_int_equal(kube_client_drain(s.client, 5000000000ll), 0);
	assert_true(kube_client_idle(s.client));
	assert_false(kube_client_dispatch(s.client) & KUBE_EVENT_IDLE);
	standin_stop(&s);
}

/* SigBlk of /proc/self/task/<tid>/status, for the thread whose comm is name (NULL: this
 * thread). */
static uint64_t thread_sigblk(const char *name)
{
	char path[PATH_MAX], line[256], comm[64];
	struct dirent *entry;
	uint64_t mask = 0;
	bool found = false;
	DIR *dir;

	if (!name) {
		snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)gettid());
	} else {
		dir = opendir("/proc/self/task");
		assert_non_null(dir);
		while (!found && (entry = readdir(dir))) {
			FILE *f;

			if (entry->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/self/task/%s/comm", entry->d_name);
			f = fopen(path, "r");
			if (!f)
				continue;
			if (fgets(comm, sizeof(comm), f) && !strncmp(comm, name, strlen(name)) &&
			    comm[strlen(name)] == '\n')
				found = true;
			fclose(f);
			if (found)
				snprintf(path, sizeof(path), "/proc/self/task/%s/status", entry->d_name);
		}
		closedir(dir);
		if (!found)
			fail_msg("no thread named %s", name);
	}
	{
		FILE *f = fopen(path, "r");

		assert_non_null(f);
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "SigBlk:", 7))
				mask = strtoull(line + 7, NULL, 16);
		fclose(f);
	}
	return mask;
}

#define SIGBIT(sig) (1ull << ((sig) - 1))

static void test_worker_blocks_signals(void **state)
{
	struct kube_config config = { .in_cluster = false };
	struct kube_client *client;
	sigset_t none, saved;
	uint64_t worker, before;

	/* Even when the caller has not blocked them yet (the daemon's start): the worker must
	 * not take SIGHUP's default action, which ends the process. */
	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, &saved);
	before = thread_sigblk(NULL);
	assert_false(before & SIGBIT(SIGHUP));
	snprintf(config.server, sizeof(config.server), "https://127.0.0.1:%d", closed_port());
	assert_int_equal(kube_client_new(&client, &(struct kube_client_options){ .config = &config }), 0);
	worker = thread_sigblk(KUBE_WORKER_THREAD_NAME);
	assert_true(worker & SIGBIT(SIGHUP));
	assert_true(worker & SIGBIT(SIGTERM));
	assert_true(worker & SIGBIT(SIGINT));
	assert_true(worker & SIGBIT(SIGUSR1));
	/* The caller's own mask is as it was. */
	assert_true(thread_sigblk(NULL) == before);
	kube_client_free(client);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
}

#define T(fn) cmocka_unit_test(fn)
#define TS(fn) cmocka_unit_test_teardown(fn, teardown_standin)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_quantity_string),
		T(test_threshold_format),
		T(test_eviction_message),
		T(test_pod_failed_patch),
		T(test_event_bodies),
		T(test_taint_patch),
		T(test_backoff_and_retry),
		T(test_escape_and_status),
		T(test_config),
		TS(test_eviction_requests),
		TS(test_eviction_report_window),
		TS(test_event_dedupe),
		TS(test_taint_reconciler_skips_a_repeated_wake),
		TS(test_pressure_taints_conflict),
		TS(test_shutdown_and_next_start),
		TS(test_out_of_service_guards),
		TS(test_taints_reconciled_at_start),
		TS(test_dry_run_writes_nothing),
		TS(test_pods_list_then_watch),
		TS(test_pods_watch_resume_and_relist),
		TS(test_pods_watch_adversarial),
		TS(test_pods_watch_stops_promptly),
		TS(test_token_rotation),
		TS(test_retry_500_then_success),
		TS(test_api_down_never_blocks),
		T(test_queue_full),
		TS(test_idle_notify),
		T(test_worker_blocks_signals),
	};
	int failed;

	signal(SIGPIPE, SIG_IGN);
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	standin_cleanup();
	return failed;
}
