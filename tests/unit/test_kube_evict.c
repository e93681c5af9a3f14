// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * An eviction as the kubelet writes it (doc/DESIGN.md §8), against the stand-in API server
 * (tests/cli/kube-standin.py): the pod ends Failed/Evicted with the DisruptionTarget condition
 * and the kubelet's message, written before kube_report_eviction returns (the daemon kills
 * after it returns), never deleted; the kubelet model keeps that terminal phase when the
 * container then exits 0; a stalled API does not hold the caller; a 422 on the uid is stale;
 * the Evicted event lives as long as the eviction; event names are valid.
 */
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "testutil.h"
#include "standin.h"

#include "kube/kube.h"
#include "kube/kube_report.h"
#include "core/thresholds.h"

#define NODE "node-1"
#define UID_WEB "0a1b2c3d-0000-4000-8000-000000000001"
#define UID_JOB "0a1b2c3d-0000-4000-8000-000000000007"
#define MESSAGE "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "

static const char PODS[] =
	"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":["
	"{\"metadata\":{\"name\":\"web-1\",\"namespace\":\"default\",\"uid\":\"" UID_WEB "\"},"
	" \"spec\":{\"nodeName\":\"" NODE "\",\"restartPolicy\":\"Always\"},\"status\":{\"phase\":\"Running\"}},"
	"{\"metadata\":{\"name\":\"job-x\",\"namespace\":\"default\",\"uid\":\"" UID_JOB "\"},"
	" \"spec\":{\"nodeName\":\"" NODE "\",\"restartPolicy\":\"Never\"},\"status\":{\"phase\":\"Running\","
	"  \"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}]}";

static _Atomic int64_t fake_now = 1000000000000ll;

static int64_t fixed_realtime(void)
{
	return 1700000000ll * 1000000000;
}

static int64_t fake_clock(void)
{
	return fake_now;
}

static void standin_start(struct standin *s, const char *faults, bool fake_time)
{
	standin_launch(s, &(struct standin_options){
		.tag = "kube-evict", .pods = PODS, .node = "{\"metadata\":{\"name\":\"" NODE "\"}}",
		.faults = faults, .token = "token-one\n" });
	assert_int_equal(kube_client_new(&s->client, &(struct kube_client_options){
		.config = &s->config, .request_timeout_ns = 15000000000ll, .backoff_initial_ns = 20000000,
		.backoff_max_ns = 40000000, .retry_for_ns = 1200000000000ll,
		.now_ns = fake_time ? fake_clock : NULL }), 0);
	assert_int_equal(kube_report_new(&s->report, &(struct kube_report_options){
		.client = s->client, .node_name = NODE, .state_dir = "", .realtime_ns = fixed_realtime }), 0);
}

/* "METHOD path" of every request so far, one per line. */
static void request_lines(struct standin *s, char *buf, size_t len)
{
	struct json_object *requests = standin_requests(s);
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < json_object_array_length(requests); i++) {
		struct json_object *r = json_object_array_get_idx(requests, i), *method, *path;

		json_object_object_get_ex(r, "method", &method);
		json_object_object_get_ex(r, "path", &path);
		used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s %s\n",
					 json_object_get_string(method), json_object_get_string(path));
	}
	json_object_put(requests);
}

/* The pod named name as the stand-in holds it now (caller puts the returned document). */
static struct json_object *pod_now(struct standin *s, const char *name, struct json_object **doc)
{
	struct json_object *pods;

	*doc = standin_state(s);
	assert_true(json_object_object_get_ex(*doc, "pods", &pods));
	for (size_t i = 0; i < json_object_array_length(pods); i++) {
		struct json_object *pod = json_object_array_get_idx(pods, i), *meta, *n;

		json_object_object_get_ex(pod, "metadata", &meta);
		json_object_object_get_ex(meta, "name", &n);
		if (!strcmp(json_object_get_string(n), name))
			return pod;
	}
	return NULL;
}

static const char *field(struct json_object *obj, const char *a, const char *b)
{
	struct json_object *x;

	if (!obj || !json_object_object_get_ex(obj, a, &x) || (b && !json_object_object_get_ex(x, b, &x)))
		return NULL;
	return json_object_get_string(x);
}

static struct json_object *condition(struct json_object *pod, const char *type)
{
	struct json_object *status, *conditions;

	if (!pod || !json_object_object_get_ex(pod, "status", &status) ||
	    !json_object_object_get_ex(status, "conditions", &conditions))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(conditions); i++) {
		struct json_object *c = json_object_array_get_idx(conditions, i);

		if (!strcmp(field(c, "type", NULL), type))
			return c;
	}
	return NULL;
}

static struct pod make_pod(const char *name, const char *uid)
{
	struct pod pod = { .termination_grace_period_s = -1 };

	snprintf(pod.namespace_, sizeof(pod.namespace_), "default");
	snprintf(pod.name, sizeof(pod.name), "%s", name);
	snprintf(pod.uid, sizeof(pod.uid), "%s", uid);
	snprintf(pod.cgroup_path, sizeof(pod.cgroup_path), "/sys/fs/cgroup/kubepods.slice/pod%s", uid);
	return pod;
}

/* Report an eviction; with wait_ns > 0, poll the answer's eventfd at most that long, as the
 * daemon's loop watches it (a test may block; the daemon never does). */
static int evict(struct standin *s, const struct pod *pod, int64_t wait_ns)
{
	static struct threshold_value value;
	struct kube_status_wait *wait = NULL;
	bool disabled;
	int err;

	threshold_value_parse("100Mi", &value, &disabled);
	err = kube_report_eviction(s->report, &(struct kube_eviction){
		.pod = pod, .signal = EV_SIGNAL_MEMORY_AVAILABLE, .threshold = &value,
		.threshold_quantity = 104857600, .available = 52428800,
		.status_wait = wait_ns > 0 ? &wait : NULL });
	if (wait) {
		struct pollfd pfd = { .fd = kube_status_wait_fd(wait), .events = POLLIN };

		if (poll(&pfd, 1, (int)(wait_ns / 1000000)) == 1)
			assert_int_not_equal(kube_status_wait_result(wait), 1);
		else
			assert_int_equal(kube_status_wait_result(wait), 1);
		kube_status_wait_free(wait);
	}
	return err;
}

static void assert_evicted(struct json_object *pod)
{
	struct json_object *c = condition(pod, "DisruptionTarget");

	assert_non_null(pod);
	assert_string_equal(field(pod, "status", "phase"), "Failed");
	assert_string_equal(field(pod, "status", "reason"), "Evicted");
	assert_string_equal(field(pod, "status", "message"), MESSAGE);
	assert_non_null(c);
	assert_string_equal(field(c, "status", NULL), "True");
	assert_string_equal(field(c, "reason", NULL), "TerminationByKubelet");
	assert_string_equal(field(c, "message", NULL), MESSAGE);
	assert_null(field(pod, "metadata", "deletionTimestamp"));
}

/* The pod ends Failed/Evicted with the kubelet's message and condition, written before
 * kube_report_eviction returns (the daemon's kill comes after the return), and is not
 * deleted; then the Job pod's container exits 0 on SIGTERM and the kubelet reports
 * Succeeded: the terminal phase stays Failed/Evicted. */
static void test_status_before_kill_and_terminal(void **state)
{
	static struct standin s;
	struct pod web = make_pod("web-1", UID_WEB), job = make_pod("job-x", UID_JOB);
	struct json_object *doc;
	char lines[4096];

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL, false);
	/* A generous wait: the stand-in (python, a fresh TLS connection) answers within it. */
	assert_int_equal(evict(&s, &job, 10000000000ll), 0);
	/* "Now" the daemon would kill: the status is already there. */
	assert_evicted(pod_now(&s, "job-x", &doc));
	json_object_put(doc);
	standin_hook(&s, "kubelet-status/default/job-x",
		     "{\"phase\":\"Succeeded\",\"reason\":\"\",\"message\":\"\"}");
	assert_evicted(pod_now(&s, "job-x", &doc));
	json_object_put(doc);

	assert_int_equal(evict(&s, &web, 10000000000ll), 0);
	assert_int_equal(kube_client_drain(s.client, 15000000000ll), 0);
	assert_evicted(pod_now(&s, "web-1", &doc));
	json_object_put(doc);
	request_lines(&s, lines, sizeof(lines));
	/* The status, then the Event at the decision; no DELETE (no start-up taint read: no
	 * conditions were reported). */
	assert_string_equal(lines,
		"PATCH /api/v1/namespaces/default/pods/job-x/status\n"
		"POST /api/v1/namespaces/default/events\n"
		"PATCH /api/v1/namespaces/default/pods/web-1/status\n"
		"POST /api/v1/namespaces/default/events\n");
	standin_stop(&s);
}

/* What the kubelet does with a terminal phase it did not write (the stand-in as corrected by a
 * real kubelet, tests/cluster/test_node.sh): a status-only Failed/Evicted from someone else is
 * a reconcile, no pod-worker sync, and the status manager's next write puts Running back;
 * evictd's patch also sets its evictd.io/failed-at annotation (an UPDATE: the pod worker
 * syncs and keeps the API's terminal phase), so the kubelet's Running write leaves it Failed. */
static void test_kubelet_keeps_only_a_synced_terminal_phase(void **state)
{
	static struct standin s;
	struct pod web = make_pod("web-1", UID_WEB);
	struct json_object *doc;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL, false);
	standin_patch_pod_status(&s, "default", "job-x",
				 "{\"status\":{\"phase\":\"Failed\",\"reason\":\"Evicted\"}}");
	assert_string_equal(field(pod_now(&s, "job-x", &doc), "status", "phase"), "Failed");
	json_object_put(doc);
	standin_hook(&s, "kubelet-status/default/job-x", "{\"phase\":\"Running\"}");
	assert_string_equal(field(pod_now(&s, "job-x", &doc), "status", "phase"), "Running");
	json_object_put(doc);

	assert_int_equal(evict(&s, &web, 10000000000ll), 0);
	assert_int_equal(kube_client_drain(s.client, 15000000000ll), 0);
	standin_hook(&s, "kubelet-status/default/web-1", "{\"phase\":\"Running\"}");
	assert_evicted(pod_now(&s, "web-1", &doc));
	json_object_put(doc);
	standin_stop(&s);
}

static int64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A stalled API (every status patch answered after 10 s) does not hold the kill past its bound (100 ms here): the call
 * returns with the patch unanswered, and the patch lands later. */
static void test_stalled_api_bounded(void **state)
{
	static struct standin s;
	struct pod web = make_pod("web-1", UID_WEB);
	struct json_object *doc;
	int64_t start, took;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, "[{\"method\":\"PATCH\",\"path\":\"/api/v1/namespaces/default/pods/web-1/status\","
		      "\"delay\":10,\"times\":1}]", false);
	start = monotonic_ns();
	assert_int_equal(evict(&s, &web, 100 * 1000000ll), 0);
	took = monotonic_ns() - start;
	/* Not a timing measurement: only "did not wait for the 10 s answer". */
	assert_true(took < 5000000000ll);
	assert_string_equal(field(pod_now(&s, "web-1", &doc), "status", "phase"), "Running");
	json_object_put(doc);
	assert_int_equal(kube_client_drain(s.client, 30000000000ll), 0);
	assert_evicted(pod_now(&s, "web-1", &doc));
	json_object_put(doc);
	standin_stop(&s);
}

/* Another pod has the name now: 422 from the uid, stale, one request, no DELETE, no retry. */
static void test_uid_mismatch_422_not_retried(void **state)
{
	static struct standin s;
	struct pod replaced = make_pod("web-1", "ffffffff-0000-4000-8000-000000000001");
	struct json_object *doc;
	char lines[4096];

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, NULL, false);
	assert_int_equal(evict(&s, &replaced, 10000000000ll), 0);
	assert_int_equal(kube_client_drain(s.client, 15000000000ll), 0);
	usleep(200000);
	request_lines(&s, lines, sizeof(lines));
	assert_string_equal(lines,
		"PATCH /api/v1/namespaces/default/pods/web-1/status\n"
		"POST /api/v1/namespaces/default/events\n");
	assert_string_equal(field(pod_now(&s, "web-1", &doc), "status", "phase"), "Running");
	json_object_put(doc);
	standin_stop(&s);
}

static size_t count_lines(struct standin *s, const char *line)
{
	char lines[1 << 16];
	size_t n = 0;

	request_lines(s, lines, sizeof(lines));
	for (const char *p = lines; (p = strstr(p, line)); p += strlen(line))
		n++;
	return n;
}

/* The Evicted event, like the status, is given up with the eviction after
 * KUBE_EVICTION_RETRY_FOR_NS, not retried for the client's whole window (20 min here). */
static void test_event_lives_with_the_eviction(void **state)
{
	static struct standin s;
	struct pod web = make_pod("web-1", UID_WEB);
	struct kube_client_stats stats;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, "[{\"method\":\"POST\",\"path\":\"/api/v1/namespaces/default/events\","
		      "\"status\":500,\"times\":100000}]", true);
	assert_int_equal(evict(&s, &web, 0), 0);
	for (int i = 0; i < 250 && count_lines(&s, "POST /api/v1/namespaces/default/events") < 2; i++) {
		usleep(20000);
		fake_now += 20000000;
	}
	assert_true(count_lines(&s, "POST /api/v1/namespaces/default/events") >= 2);
	fake_now += KUBE_EVICTION_RETRY_FOR_NS + 1;
	for (int i = 0; i < 250 && !kube_client_idle(s.client); i++) {
		usleep(20000);
		fake_now += 20000000;
	}
	assert_true(kube_client_idle(s.client));
	kube_client_get_stats(s.client, &stats);
	assert_true(stats.dropped >= 1);
	standin_stop(&s);
}

/* DNS-1123 subdomain (apimachinery IsDNS1123Subdomain): [a-z0-9] at both ends of each label. */
static bool dns1123_subdomain(const char *name)
{
	size_t n = strlen(name);

	if (!n || n > 253)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

		if (!alnum && c != '-' && c != '.')
			return false;
		if (!alnum && (i == 0 || i == n - 1 || name[i - 1] == '.' || name[i + 1] == '.'))
			return false;
	}
	return true;
}

static void test_event_names(void **state)
{
	char object[300], name[320];
	static const char *const ends[] = { "-", ".", "--", "-a", ".a" };

	assert_int_equal(kube_event_name("web-1", 0x17979cfe362a0000ll, name, sizeof(name)), 22);
	assert_string_equal(name, "web-1.17979cfe362a0000");
	for (size_t e = 0; e < sizeof(ends) / sizeof(ends[0]); e++)
		for (size_t cut = 175; cut <= 195; cut++) {
			/* The object's name (itself valid, up to 253) has a '-' or '.' where the cut
			 * falls. */
			memset(object, 'a', sizeof(object));
			memcpy(object + cut - strlen(ends[e]), ends[e], strlen(ends[e]));
			object[250] = '\0';
			assert_true(kube_event_name(object, 0x17979cfe362a0000ll, name, sizeof(name)) > 0);
			assert_true(strlen(name) <= KUBE_EVENT_NAME_MAX);
			if (!dns1123_subdomain(name))
				fail_msg("not a DNS-1123 subdomain: %s", name);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_names),
		cmocka_unit_test(test_kubelet_keeps_only_a_synced_terminal_phase),
		cmocka_unit_test_teardown(test_status_before_kill_and_terminal, teardown_standin),
		cmocka_unit_test_teardown(test_stalled_api_bounded, teardown_standin),
		cmocka_unit_test_teardown(test_uid_mismatch_422_not_retried, teardown_standin),
		cmocka_unit_test_teardown(test_event_lives_with_the_eviction, teardown_standin),
	};
	const struct CMUnitTest tests_http2[] = {
		cmocka_unit_test_teardown(test_status_before_kill_and_terminal, teardown_standin),
		cmocka_unit_test_teardown(test_uid_mismatch_422_not_retried, teardown_standin),
		cmocka_unit_test_teardown(test_event_lives_with_the_eviction, teardown_standin),
	};
	int failed;

	signal(SIGPIPE, SIG_IGN);
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	/* The writes (status patch, Event) against a stand-in that offers HTTP/2 (ALPN). */
	standin_http2 = true;
	failed += cmocka_run_group_tests_name("the stand-in in HTTP/2", tests_http2, NULL, NULL);
	standin_cleanup();
	return failed;
}
