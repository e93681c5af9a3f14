// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The scheduler told, by default (issue 20 item 5, doc/DESIGN.md §8 "Pressure taints"): after
 * evictd acts on memory pressure its evictd.io/memory-pressure:NoSchedule taint is on the node,
 * held for evictionPressureTransitionPeriod after the last observation (the engine's
 * condition, on an injected clock), then removed: two node PATCHes in all, whatever the
 * kubelet and the node lifecycle controller do meanwhile. The controller is modelled by
 * tests/cli/kube-standin.py --node-lifecycle-controller (doNoScheduleTaintingPass on every
 * Node update); the stand-in tests are skipped (with the reason) without python3, openssl or
 * curl.
 */
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <sys/wait.h>

#include "testutil.h"
#include "standin.h"

#include "config/config.h"
#include "core/thresholds.h"
#include "kube/kube.h"
#include "kube/kube_report.h"
#include "pods/pods.h"

#define NODE "node-1"
#define S(x) ((int64_t)(x) * 1000000000LL)
#define MI(x) ((int64_t)(x) << 20)

/* Members in the order of the stand-in's dump (sorted). */
#define OURS "{\"effect\":\"NoSchedule\",\"key\":\"evictd.io/memory-pressure\"}"
#define KUBELETS "{\"effect\":\"NoSchedule\",\"key\":\"node.kubernetes.io/memory-pressure\"}"
#define MAINTENANCE "{\"effect\":\"NoSchedule\",\"key\":\"example.com/maintenance\",\"value\":\"true\"}"
#define COND(type, status) "{\"type\":\"" type "\",\"status\":\"" status "\"}"
#define KUBELET_STATUS(memory) "{\"conditions\":[" COND("Ready", "True") "," COND("MemoryPressure", memory) "]}"

/* ---- the default ---------------------------------------------------------------------------- */

/* On unless turned off: nothing else tells the scheduler that evictd acted. */
static void test_pressure_taints_default_on(void **state)
{
	struct evictd_config config;

	config_init_defaults(&config);
	assert_true(config.kube_pressure_taints);
	/* The opt-out is kept. */
	assert_int_equal(config_apply_flag(&config, "kube-pressure-taints", "false"), 0);
	assert_false(config.kube_pressure_taints);
}

/* ---- the stand-in -------------------------------------------------------------------------- */

static const char *standin_faults;	/* a --faults file's rules for the next start, or NULL */

static void standin_start_with(struct standin *s, const char *node_json, const char *daemonsets_json)
{
	standin_launch(s, &(struct standin_options){
		.tag = "kube-taints", .pods = "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[]}",
		.node = node_json, .daemonsets = daemonsets_json, .faults = standin_faults,
		.args = (const char *const[]){ "--node-lifecycle-controller", NULL } });
	assert_int_equal(kube_client_new(&s->client, &(struct kube_client_options){
		.config = &s->config, .request_timeout_ns = S(3),
		.backoff_initial_ns = 20000000, .backoff_max_ns = 100000000, .retry_for_ns = S(20) }), 0);
}

static void standin_start(struct standin *s, const char *node_json)
{
	standin_start_with(s, node_json, NULL);
}

/* The kubelet's node status update: its conditions (it never saw the pressure evictd acted on). */
static void kubelet_status(struct standin *s, const char *conditions)
{
	standin_hook(s, "node-status/" NODE, conditions);
}

/* evictd's requests on the Node: method "GET" or "PATCH". */
static size_t node_requests(struct standin *s, const char *method)
{
	struct json_object *requests = standin_requests(s);
	size_t n = 0;

	for (size_t i = 0; i < json_object_array_length(requests); i++) {
		struct json_object *entry = json_object_array_get_idx(requests, i), *m, *path;

		assert_true(json_object_object_get_ex(entry, "method", &m));
		assert_true(json_object_object_get_ex(entry, "path", &path));
		n += !strcmp(json_object_get_string(m), method) &&
		     !strcmp(json_object_get_string(path), "/api/v1/nodes/" NODE);
	}
	json_object_put(requests);
	return n;
}

/* The Node's taints as the stand-in holds them ("null" for none), and the controller's writes. */
static void node_taints(struct standin *s, char *out, size_t len, int *controller_writes)
{
	struct json_object *doc = standin_state(s), *nodes, *node, *spec, *taints = NULL, *writes;

	assert_true(json_object_object_get_ex(doc, "nodes", &nodes));
	assert_true(json_object_object_get_ex(nodes, NODE, &node));
	if (json_object_object_get_ex(node, "spec", &spec))
		json_object_object_get_ex(spec, "taints", &taints);
	snprintf(out, len, "%s", taints ? json_object_to_json_string_ext(taints, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) : "null");
	assert_true(json_object_object_get_ex(doc, "controller_writes", &writes));
	*controller_writes = json_object_get_int(writes);
	json_object_put(doc);
}

static void assert_taints(struct standin *s, const char *expected, int expected_controller_writes)
{
	char taints[4096];
	int writes;

	node_taints(s, taints, sizeof(taints), &writes);
	assert_string_equal(taints, expected);
	assert_int_equal(writes, expected_controller_writes);
}

static void drain(struct standin *s)
{
	assert_int_equal(kube_client_drain(s->client, S(15)), 0);
}

static int64_t fixed_realtime(void)
{
	return 1700000000LL * 1000000000LL;
}

/* ---- the taint through the transition period, against the node lifecycle controller ---- */

/* The engine's evaluation at t (s) with memory.available = avail, handed to the reporter as
 * the daemon does after every evaluation (daemon/act.c). */
static void evaluate(struct eviction_engine *engine, struct kube_report *report, int t, int64_t avail)
{
	struct observations obs = { 0 };
	struct evaluation eval;

	obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].present = true;
	obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].available = avail;
	obs.signal[EV_SIGNAL_MEMORY_AVAILABLE].capacity = MI(4096);
	engine_evaluate(engine, &obs, S(t), &eval);
	kube_report_conditions(report, eval.conditions);
}

static void test_taint_held_for_transition_period(void **state)
{
	struct threshold threshold = { .signal = EV_SIGNAL_MEMORY_AVAILABLE, .hard = true };
	struct eviction_engine engine;
	struct evictd_config config;
	struct kube_report *report;
	static struct standin s;
	bool disabled;

	SKIP_WITHOUT_STANDIN();
	assert_int_equal(threshold_value_parse("100Mi", &threshold.value, &disabled), 0);
	/* evictionPressureTransitionPeriod: the kubelet's default, 5 min. */
	assert_int_equal(engine_init(&engine, &threshold, 1, S(300)), 0);
	standin_start(&s, "{\"metadata\":{\"name\":\"" NODE "\"},\"spec\":{\"taints\":[" MAINTENANCE "]},"
			  "\"status\":" KUBELET_STATUS("False") "}");
	/* The reporter as the daemon makes it from the default configuration (daemon_kube.c). */
	config_init_defaults(&config);
	assert_int_equal(kube_report_new(&report, &(struct kube_report_options){
		.client = s.client, .node_name = NODE, .state_dir = "", .realtime_ns = fixed_realtime,
		.no_pressure_taints = !config.kube_pressure_taints }), 0);

	evaluate(&engine, report, 0, MI(1000));
	drain(&s);
	assert_int_equal(node_requests(&s, "PATCH"), 0);

	/* evictd acts: memory.available under 100Mi. */
	evaluate(&engine, report, 10, MI(50));
	drain(&s);
	assert_int_equal(node_requests(&s, "PATCH"), 1);
	assert_taints(&s, "[" MAINTENANCE "," OURS "]", 0);

	/* Recovered at once (the kill freed the memory); the kubelet never saw the pressure and
	 * keeps posting MemoryPressure=False: the controller reconciles its own taints on each
	 * of those Node updates and leaves ours alone; evictd sends nothing. */
	for (int t = 20; t <= 300; t += 10) {
		evaluate(&engine, report, t, MI(1000));
		if (t % 60 == 0)
			kubelet_status(&s, KUBELET_STATUS("False"));
	}
	/* Still inside the transition period of the last observation (t = 10). */
	evaluate(&engine, report, 309, MI(1000));
	drain(&s);
	assert_int_equal(node_requests(&s, "PATCH"), 1);
	assert_int_equal(node_requests(&s, "GET"), 2);	/* the start, the add */
	assert_taints(&s, "[" MAINTENANCE "," OURS "]", 0);

	/* The kubelet's own condition, in between, gets the controller's taint next to ours;
	 * when it clears, the controller removes its own, never ours. */
	kubelet_status(&s, KUBELET_STATUS("True"));
	assert_taints(&s, "[" MAINTENANCE "," OURS "," KUBELETS "]", 1);
	kubelet_status(&s, KUBELET_STATUS("False"));
	assert_taints(&s, "[" MAINTENANCE "," OURS "]", 2);

	/* The transition period is over: removed, once; the other taints stay. */
	evaluate(&engine, report, 311, MI(1000));
	for (int t = 320; t <= 400; t += 10)
		evaluate(&engine, report, t, MI(1000));
	drain(&s);
	assert_int_equal(node_requests(&s, "PATCH"), 2);
	assert_taints(&s, "[" MAINTENANCE "]", 2);
	kube_report_free(report);
	standin_stop(&s);
}

/* Why evictd does not use the standard key: the controller removes a
 * node.kubernetes.io/memory-pressure:NoSchedule taint whose condition is False on the very
 * next Node update, whoever set it (doNoScheduleTaintingPass), so it would last milliseconds
 * and every re-add would be undone: a flap per write. The model, checked. */
static void test_controller_removes_standard_taint(void **state)
{
	static struct standin s;

	SKIP_WITHOUT_STANDIN();
	standin_start(&s, "{\"metadata\":{\"name\":\"" NODE "\"},\"spec\":{\"taints\":[" KUBELETS "," OURS "]},"
			  "\"status\":" KUBELET_STATUS("False") "}");
	kubelet_status(&s, KUBELET_STATUS("False"));
	assert_taints(&s, "[" OURS "]", 1);
	standin_stop(&s);
}


/* ---- DaemonSets still land (the hole punch) --------------------------------------------- */

#define DS(name, uid, spec) "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"" name \
	"\",\"namespace\":\"kube-system\",\"uid\":\"" uid "\"},\"spec\":{\"selector\":{\"matchLabels\":" \
	"{\"app\":\"" name "\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"" name "\"}},\"spec\":" spec "}}}"
#define DS_LIST(items) "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSetList\",\"metadata\":{},\"items\":[" items "]}"
#define CONTAINERS "\"containers\":[{\"name\":\"c\",\"image\":\"registry.k8s.io/pause:3.9\"}]"
#define AGENT DS("agent", "ds-agent", "{" CONTAINERS "}")
#define TOLERANT DS("tolerant", "ds-tolerant", "{" CONTAINERS ",\"tolerations\":[{\"key\":" \
	"\"evictd.io/memory-pressure\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]}")
#define GPU_ONLY DS("gpu-plugin", "ds-gpu", "{" CONTAINERS ",\"nodeSelector\":{\"example.com/gpu\":\"true\"}}")
/* The same list as a JSON string (a fault rule's body). */
#define ESCAPED_AGENT_LIST "\"{\\\"kind\\\":\\\"DaemonSetList\\\",\\\"items\\\":[{\\\"metadata\\\":{\\\"name\\\":" \
	"\\\"agent\\\",\\\"namespace\\\":\\\"kube-system\\\",\\\"uid\\\":\\\"ds-agent\\\"},\\\"spec\\\":" \
	"{\\\"template\\\":{\\\"spec\\\":{}}}}]}\""
#define PLAIN_NODE "{\"metadata\":{\"name\":\"" NODE "\",\"labels\":{\"kubernetes.io/os\":\"linux\"}}," \
	"\"status\":" KUBELET_STATUS("False") "}"

/* The stand-in's state-dump counter. */
static int dump_int(struct standin *s, const char *key)
{
	struct json_object *doc = standin_state(s), *value;
	int n;

	assert_true(json_object_object_get_ex(doc, key, &value));
	n = json_object_get_int(value);
	json_object_put(doc);
	return n;
}

/* Poll (at most seconds) until the stand-in has created n daemon pods; how many it has. */
static int wait_daemon_pods(struct standin *s, int n, int seconds)
{
	int have = 0;

	for (int i = 0; i < seconds * 10 && (have = dump_int(s, "daemon_pods_created")) < n; i++)
		usleep(100000);
	return have;
}

struct holes_fixture {
	struct standin s;
	struct pods_meta_source *pods;
	struct kube_report *report;
	struct eviction_engine engine;
};

/* The stand-in with these DaemonSets, a pod watch, and the reporter as the daemon makes it
 * from the default configuration, checking DaemonSets every second, holes of 5 s. */
static void holes_start(struct holes_fixture *f, const char *daemonsets)
{
	struct threshold threshold = { .signal = EV_SIGNAL_MEMORY_AVAILABLE, .hard = true };
	struct evictd_config config;
	bool disabled;

	assert_int_equal(threshold_value_parse("100Mi", &threshold.value, &disabled), 0);
	assert_int_equal(engine_init(&f->engine, &threshold, 1, S(300)), 0);
	standin_start_with(&f->s, PLAIN_NODE, daemonsets);
	f->pods = kube_pods_source_new(&(struct kube_pods_source_options){ .client = f->s.client, .node_name = NODE });
	assert_non_null(f->pods);
	assert_int_equal(kube_pods_source_wait(f->pods, S(10)), 0);
	config_init_defaults(&config);
	assert_int_equal(kube_report_new(&f->report, &(struct kube_report_options){
		.client = f->s.client, .node_name = NODE, .state_dir = "", .realtime_ns = fixed_realtime,
		.no_pressure_taints = !config.kube_pressure_taints, .daemonset_check_ns = S(1), .hole_ns = S(5) }), 0);
	kube_report_set_pods(f->report, f->pods);
	/* No pressure yet: the first evaluation reads the Node (the stand-in loads it, and its
	 * DaemonSet controller starts placing pods there). */
	evaluate(&f->engine, f->report, 0, MI(1000));
	drain(&f->s);
}

static void holes_stop(struct holes_fixture *f)
{
	kube_report_free(f->report);
	f->pods->destroy(f->pods);
	standin_stop(&f->s);
}

/* A DaemonSet that does not tolerate evictd.io/memory-pressure loses its pod while the taint
 * holds (a rolling update deletes it; a new DaemonSet is the same): the DaemonSet controller
 * creates no new one while the taint is there. evictd lifts it once, the pod lands, the taint
 * goes back: three node PATCHes, one lift, and no more however long it holds. */
static void test_daemonset_pod_lands_through_taint(void **state)
{
	static struct holes_fixture f;

	SKIP_WITHOUT_STANDIN();
	holes_start(&f, DS_LIST(AGENT));
	assert_int_equal(wait_daemon_pods(&f.s, 1, 5), 1);	/* agent-1, before any pressure */

	evaluate(&f.engine, f.report, 10, MI(50));	/* evictd acts */
	drain(&f.s);
	assert_int_equal(node_requests(&f.s, "PATCH"), 1);
	assert_taints(&f.s, "[" OURS "]", 0);
	assert_int_equal(kube_report_taint_lifts(f.report), 0);	/* agent has its pod */

	/* The rolling update deletes agent-1; the controller cannot place agent-2. */
	standin_hook(&f.s, "delete-pod/kube-system/agent-1", "");
	/* Within a check period and the pod watch's latency: lifted, agent-2 lands, back. */
	assert_int_equal(wait_daemon_pods(&f.s, 2, 8), 2);
	for (int i = 0; i < 50 && node_requests(&f.s, "PATCH") < 3; i++)
		usleep(100000);
	assert_int_equal(node_requests(&f.s, "PATCH"), 3);	/* add, lift, add again */
	assert_taints(&f.s, "[" OURS "]", 0);
	assert_int_equal(kube_report_taint_lifts(f.report), 1);

	/* No flapping: three more check periods with the pod there write nothing. */
	for (int t = 11; t <= 14; t++) {
		evaluate(&f.engine, f.report, t, MI(1000));
		usleep(1000000);
	}
	assert_int_equal(node_requests(&f.s, "PATCH"), 3);
	assert_int_equal(kube_report_taint_lifts(f.report), 1);
	assert_int_equal(dump_int(&f.s, "daemon_pods_created"), 2);
	holes_stop(&f);
}

/* A DaemonSet that tolerates the taint (operator Exists) and one whose nodeSelector excludes
 * the node: neither is a reason to lift it, pod or no pod. */
static void test_no_lift_for_tolerant_or_excluded(void **state)
{
	static struct holes_fixture f;

	SKIP_WITHOUT_STANDIN();
	holes_start(&f, DS_LIST(TOLERANT "," GPU_ONLY));
	assert_int_equal(wait_daemon_pods(&f.s, 1, 5), 1);	/* tolerant-1; gpu-plugin none */

	evaluate(&f.engine, f.report, 10, MI(50));
	drain(&f.s);
	/* Its pod goes; the controller puts it back through the taint. */
	standin_hook(&f.s, "delete-pod/kube-system/tolerant-1", "");
	assert_int_equal(wait_daemon_pods(&f.s, 2, 5), 2);
	usleep(3500000);	/* three check periods */
	assert_int_equal(node_requests(&f.s, "PATCH"), 1);	/* the add, nothing else */
	assert_taints(&f.s, "[" OURS "]", 0);
	assert_int_equal(kube_report_taint_lifts(f.report), 0);
	holes_stop(&f);
}

/* A DaemonSet whose pod never comes (the API server lists it, nothing places its pod: here
 * the stand-in's list comes from a fault rule and its controller model is off) gets one lift
 * per hole, the taint back after each, and waits longer each time: no loop. */
static void test_lift_bounded_when_pod_never_comes(void **state)
{
	static struct holes_fixture f;
	size_t patches;
	uint64_t lifts;

	SKIP_WITHOUT_STANDIN();
	standin_faults = "[{\"method\":\"GET\",\"path\":\"/apis/apps/v1/daemonsets\",\"status\":200,"
			 "\"times\":1000,\"body\":" ESCAPED_AGENT_LIST "}]";
	holes_start(&f, NULL);
	standin_faults = NULL;
	evaluate(&f.engine, f.report, 10, MI(50));
	/* 13 s: a hole of 5 s, the taint back for 5 s (the retry wait), a second hole of 5 s
	 * (then 10 s back): at most two lifts. */
	usleep(13000000);
	drain(&f.s);
	lifts = kube_report_taint_lifts(f.report);
	patches = node_requests(&f.s, "PATCH");
	assert_true(lifts >= 1 && lifts <= 2);
	/* the add is deferred by the first hole: one PATCH per lift and per re-add at most */
	assert_true(patches <= 2 * lifts + 1);
	holes_stop(&f);
}

int main(void)
{
#define T(f) cmocka_unit_test(f)
#define TS(f) cmocka_unit_test_teardown(f, teardown_standin)
	const struct CMUnitTest tests[] = {
		T(test_pressure_taints_default_on),
		TS(test_taint_held_for_transition_period),
		TS(test_controller_removes_standard_taint),
		TS(test_daemonset_pod_lands_through_taint),
		TS(test_no_lift_for_tolerant_or_excluded),
		TS(test_lift_bounded_when_pod_never_comes),
	};
	int failed;

	signal(SIGPIPE, SIG_IGN);
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	standin_cleanup();
	return failed;
}
