// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The control socket: a real UNIX socket in a temp dir, requests sent the way evictctl sends
 * them, replies parsed with json-c; socket file safety; a slow client never blocks. */
#include "testutil.h"

#include <json-c/json.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include "ops/control.h"
#include "ops/ctl_view.h"
#include "sys/loop.h"

struct fixture {
	char dir[PATH_MAX];
	char path[PATH_MAX + 64];
	struct evictd_config config;
	struct eviction_engine engine;
	struct observations obs;
	struct evaluation eval;
	struct decision decision;
	struct pod pods[4];
	struct pod *pod_ptrs[4];
	struct rank_options options;
	struct eventlog *eventlog;
	struct control *control;
	int view_calls;
	enum control_command last_command;
};

static struct pod make_pod(const char *name, enum pod_qos qos, int32_t priority, int64_t usage,
			   int64_t request, int64_t processes)
{
	struct pod pod = { .qos = qos, .priority = priority, .memory_working_set = usage,
			   .memory_request = request, .processes = processes };

	snprintf(pod.namespace_, sizeof(pod.namespace_), "default");
	snprintf(pod.name, sizeof(pod.name), "%s", name);
	snprintf(pod.uid, sizeof(pod.uid), "uid-%s", name);
	snprintf(pod.cgroup_path, sizeof(pod.cgroup_path), "/sys/fs/cgroup/kubepods/pod%s", name);
	return pod;
}

static int fill_view(void *ctx, enum control_command command, struct control_view *view)
{
	struct fixture *f = ctx;

	f->view_calls++;
	f->last_command = command;
	*view = (struct control_view){
		.config = &f->config,
		.engine = &f->engine,
		.obs = &f->obs,
		.eval = &f->eval,
		.decision = &f->decision,
		.pods = f->pod_ptrs,
		.cgroup_tree = true,
		.n_pods = 4,
		.rank_options = &f->options,
		.eventlog = f->eventlog,
		.bpf = { .enabled = false, .reason = "no BTF" },
		.mode = "kubernetes",
		.node_name = "node-1",
		.uptime_ns = 3723ll * 1000000000,
		.evaluations = 12,
		.last_evaluation_unix_ns = 1234567890123456789ll,
		.evictions = 2,
		.evictions_failed = 1,
	};
	return 0;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct threshold effective[EV_MAX_THRESHOLDS];
	size_t n;

	fixture_tmpdir(f->dir, "control");
	snprintf(f->path, sizeof(f->path), "%s/run/evictd/evictd.sock", f->dir);
	config_init_defaults(&f->config);
	assert_int_equal(config_apply_flag(&f->config, "eviction-hard", "memory.available<1Gi,pid.available<10"), 0);
	assert_int_equal(config_apply_flag(&f->config, "dry-run", NULL), 0);
	assert_int_equal(config_finalize(&f->config), 0);
	n = config_effective_thresholds(&f->config, FS_LAYOUT_SINGLE, effective, EV_MAX_THRESHOLDS);
	assert_int_equal(engine_init(&f->engine, effective, n, 0), 0);
	f->obs.signal[EV_SIGNAL_MEMORY_AVAILABLE] = (struct observation){ true, 512ll << 20, 8ll << 30, 1 };
	f->obs.signal[EV_SIGNAL_PID_AVAILABLE] = (struct observation){ true, 30000, 32768, 1 };
	f->obs.signal[EV_SIGNAL_OOM_GUARD] = (struct observation){ true, 4ll << 30, 8ll << 30, 1 };
	engine_evaluate(&f->engine, &f->obs, 1000, &f->eval);

	f->pods[0] = make_pod("guaranteed", POD_QOS_GUARANTEED, 0, 100 << 20, 200 << 20, 5);
	f->pods[1] = make_pod("hog", POD_QOS_BESTEFFORT, 0, 300 << 20, 0, 2);
	f->pods[2] = make_pod("important", POD_QOS_BURSTABLE, 100000, 400 << 20, 100 << 20, 90);
	f->pods[3] = make_pod("kube-apiserver", POD_QOS_BURSTABLE, 2000001000, 1 << 30, 100 << 20, 10);
	f->pods[3].is_mirror = true;
	for (int i = 0; i < 4; i++)
		f->pod_ptrs[i] = &f->pods[i];
	f->options = (struct rank_options){ .daemonset_last = true };
	f->decision = (struct decision){ .threshold_index = f->eval.act_on, .victim = &f->pods[1],
					 .n_candidates = 3, .reason = "hard threshold met", .dry_run = true };
	assert_true(f->eval.act_on >= 0);
	assert_int_equal(eventlog_open(&f->eventlog, &(struct eventlog_options){ .path = "off" }), 0);
	assert_int_equal(control_open(&f->control, &(struct control_options){
		.path = f->path, .view = fill_view, .ctx = f, .version = "9.9.9" }), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	control_close(f->control);
	eventlog_close(f->eventlog);
	fixture_rm_rf(f->dir);
	free(f);
	return 0;
}

static int connect_to(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	return fd;
}

/* Serve until the client's reply is complete (EOF), as the daemon's loop would. */
static struct json_object *roundtrip(struct fixture *f, const char *request)
{
	int fd = connect_to(f->path);
	char buf[1 << 16];
	size_t len = 0;
	struct json_object *reply;

	assert_true(send(fd, request, strlen(request), 0) == (ssize_t)strlen(request));
	for (int spins = 0; spins < 200; spins++) {
		struct pollfd pfds[2] = { { .fd = control_fd(f->control), .events = POLLIN },
					  { .fd = fd, .events = POLLIN } };
		ssize_t n;

		poll(pfds, 2, 50);
		if (pfds[0].revents & POLLIN)
			assert_true(control_handle_ready(f->control) >= 0);
		if (!(pfds[1].revents & (POLLIN | POLLHUP)))
			continue;
		n = recv(fd, buf + len, sizeof(buf) - 1 - len, MSG_DONTWAIT);
		if (n == 0)
			break;
		if (n > 0)
			len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	assert_true(len > 0 && buf[len - 1] == '\n');
	assert_null(memchr(buf, '\n', len - 1));	/* exactly one line */
	reply = json_tokener_parse(buf);
	assert_non_null(reply);
	return reply;
}

static struct json_object *get(struct json_object *object, const char *key)
{
	struct json_object *value = NULL;

	if (!json_object_object_get_ex(object, key, &value))
		fail_msg("missing field %s in %s", key, json_object_to_json_string(object));
	return value;
}

static void test_socket_file_mode_and_dir(void **state)
{
	struct fixture *f = *state;
	char dir[PATH_MAX + 64];
	struct stat st;

	assert_int_equal(stat(f->path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	snprintf(dir, sizeof(dir), "%s/run/evictd", f->dir);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0755);
}

static void test_status(void **state)
{
	struct fixture *f = *state;
	struct json_object *reply = roundtrip(f, "{\"command\":\"status\"}\n");
	struct json_object *signals, *thresholds, *conditions, *bpf, *decision;

	assert_true(json_object_get_boolean(get(reply, "ok")));
	assert_int_equal(f->last_command, CONTROL_STATUS);
	assert_string_equal(json_object_get_string(get(reply, "command")), "status");
	assert_string_equal(json_object_get_string(get(reply, "version")), "9.9.9");
	assert_string_equal(json_object_get_string(get(reply, "mode")), "kubernetes");
	assert_string_equal(json_object_get_string(get(reply, "node_name")), "node-1");
	assert_true(json_object_get_boolean(get(reply, "dry_run")));
	assert_int_equal(json_object_get_int64(get(reply, "uptime_seconds")), 3723);
	assert_int_equal(json_object_get_int64(get(reply, "evaluations")), 12);
	assert_string_equal(json_object_get_string(get(reply, "last_evaluation")), "2009-02-13T23:31:30.123Z");
	assert_int_equal(json_object_get_int(get(reply, "pid")), getpid());

	signals = get(reply, "signals");
	assert_int_equal(json_object_get_int64(get(get(signals, "memory.available"), "available")), 512ll << 20);
	assert_int_equal(json_object_get_int64(get(get(signals, "pid.available"), "capacity")), 32768);
	thresholds = get(reply, "thresholds");
	assert_true(json_object_array_length(thresholds) >= 2);
	conditions = get(reply, "conditions");
	assert_true(json_object_get_boolean(get(conditions, "MemoryPressure")));
	assert_false(json_object_get_boolean(get(conditions, "PIDPressure")));
	decision = get(reply, "decision");
	assert_string_equal(json_object_get_string(get(decision, "signal")), "memory.available");
	assert_string_equal(json_object_get_string(get(get(decision, "victim"), "name")), "hog");

	bpf = get(reply, "bpf");
	assert_false(json_object_get_boolean(get(bpf, "enabled")));
	assert_string_equal(json_object_get_string(get(bpf, "reason")), "no BTF");
	assert_int_equal(json_object_get_int64(get(get(reply, "evictions"), "killed")), 2);
	assert_int_equal(json_object_get_int64(get(get(reply, "evictions"), "failed")), 1);
	json_object_put(reply);
}

static void test_pods_most_pressing(void **state)
{
	struct fixture *f = *state;
	struct json_object *reply = roundtrip(f, "{\"command\":\"pods\"}\n");
	struct json_object *pods, *first, *last;

	assert_true(json_object_get_boolean(get(reply, "ok")));
	assert_string_equal(json_object_get_string(get(reply, "signal")), "memory.available");
	assert_non_null(strstr(json_object_get_string(get(reply, "signal_reason")), "acting on it"));
	pods = get(reply, "pods");
	assert_int_equal(json_object_array_length(pods), 4);
	/* hog (BestEffort, exceeds), important (exceeds, priority 100000), guaranteed (within),
	 * kube-apiserver (mirror: never evicted, last). */
	first = json_object_array_get_idx(pods, 0);
	assert_string_equal(json_object_get_string(get(first, "name")), "hog");
	assert_int_equal(json_object_get_int(get(first, "rank")), 1);
	assert_true(json_object_get_boolean(get(first, "victim")));
	assert_true(json_object_get_boolean(get(first, "exceeds_request")));
	assert_int_equal(json_object_get_int64(get(first, "usage")), 300 << 20);
	assert_non_null(strstr(json_object_get_string(get(first, "reason")), "exceeds request"));
	assert_string_equal(json_object_get_string(get(json_object_array_get_idx(pods, 1), "name")), "important");
	assert_false(json_object_get_boolean(get(json_object_array_get_idx(pods, 1), "victim")));
	assert_string_equal(json_object_get_string(get(json_object_array_get_idx(pods, 2), "name")), "guaranteed");
	assert_false(json_object_get_boolean(get(json_object_array_get_idx(pods, 2), "exceeds_request")));
	last = json_object_array_get_idx(pods, 3);
	assert_string_equal(json_object_get_string(get(last, "name")), "kube-apiserver");
	assert_true(json_object_get_boolean(get(last, "never_evict")));
	assert_non_null(strstr(json_object_get_string(get(last, "reason")), "never evicted"));
	/* The daemon's own array was not reordered. */
	assert_ptr_equal(f->pod_ptrs[0], &f->pods[0]);
	assert_ptr_equal(f->pod_ptrs[1], &f->pods[1]);
	json_object_put(reply);
}

/* One victim predicate (pod_is_candidate): a pod whose cgroup says populated 0 is gone even
 * while zombies keep its task count up; evictctl used to mark it VICTIM where the daemon
 * skipped it. */
static void test_pods_victim_is_the_daemons(void **state)
{
	struct fixture *f = *state;
	struct json_object *reply, *pods;

	f->pods[1].exited = true;	/* hog: populated 0, processes still 2 */
	reply = roundtrip(f, "{\"command\":\"pods\"}\n");
	pods = get(reply, "pods");
	assert_string_equal(json_object_get_string(get(json_object_array_get_idx(pods, 0), "name")), "hog");
	assert_false(json_object_get_boolean(get(json_object_array_get_idx(pods, 0), "victim")));
	assert_string_equal(json_object_get_string(get(json_object_array_get_idx(pods, 1), "name")), "important");
	assert_true(json_object_get_boolean(get(json_object_array_get_idx(pods, 1), "victim")));
	assert_true(pod_is_candidate(&f->pods[2]));
	assert_false(pod_is_candidate(&f->pods[1]));
	json_object_put(reply);
}

static void test_pods_requested_signal(void **state)
{
	struct fixture *f = *state;
	struct json_object *reply = roundtrip(f, "{\"command\":\"pods\",\"signal\":\"pid.available\"}\n");
	struct json_object *pods;

	assert_true(json_object_get_boolean(get(reply, "ok")));
	assert_string_equal(json_object_get_string(get(reply, "signal")), "pid.available");
	assert_string_equal(json_object_get_string(get(reply, "unit")), "tasks");
	pods = get(reply, "pods");
	/* PIDs: priority first (0 before 100000), then more tasks first. */
	assert_string_equal(json_object_get_string(get(json_object_array_get_idx(pods, 0), "name")), "guaranteed");
	assert_string_equal(json_object_get_string(get(json_object_array_get_idx(pods, 1), "name")), "hog");
	assert_string_equal(json_object_get_string(get(json_object_array_get_idx(pods, 2), "name")), "important");
	assert_string_equal(json_object_get_string(get(json_object_array_get_idx(pods, 0), "reason")), "priority 0; 5 tasks");
	json_object_put(reply);

	/* The bare-word form (socat users). */
	reply = roundtrip(f, "pods pid.available\n");
	assert_true(json_object_get_boolean(get(reply, "ok")));
	assert_string_equal(json_object_get_string(get(reply, "signal")), "pid.available");
	json_object_put(reply);

	reply = roundtrip(f, "{\"command\":\"pods\",\"signal\":\"memory.avail\"}\n");
	assert_false(json_object_get_boolean(get(reply, "ok")));
	assert_non_null(strstr(json_object_get_string(get(reply, "error")), "unknown signal \"memory.avail\""));
	json_object_put(reply);
}

static void test_pods_no_pressure_defaults_to_memory(void **state)
{
	struct fixture *f = *state;
	struct json_object *reply;

	f->decision.threshold_index = -1;
	memset(f->eval.met, 0, sizeof(f->eval.met));
	reply = roundtrip(f, "{\"command\":\"pods\"}\n");
	assert_string_equal(json_object_get_string(get(reply, "signal")), "memory.available");
	assert_non_null(strstr(json_object_get_string(get(reply, "signal_reason")), "no threshold met"));
	json_object_put(reply);
}

static void test_events(void **state)
{
	struct fixture *f = *state;
	struct json_object *reply, *events;
	struct eventlog_decision decision = {
		.signal = EV_SIGNAL_MEMORY_AVAILABLE, .hard = true, .value = 1, .threshold = 2,
		.action = EVENTLOG_DRY_RUN, .latency_ns = -1, .victim = &f->pods[1], .dry_run = true,
	};

	reply = roundtrip(f, "{\"command\":\"events\"}\n");
	assert_int_equal(json_object_array_length(get(reply, "events")), 0);
	json_object_put(reply);

	assert_int_equal(eventlog_record(f->eventlog, &decision), 1);
	decision.action = EVENTLOG_KILLED;
	decision.latency_ns = 5;
	assert_int_equal(eventlog_record(f->eventlog, &decision), 1);
	reply = roundtrip(f, "events\n");
	assert_true(json_object_get_boolean(get(reply, "ok")));
	events = get(reply, "events");
	assert_int_equal(json_object_array_length(events), 2);
	assert_string_equal(json_object_get_string(get(json_object_array_get_idx(events, 0), "action")), "dry_run");
	assert_string_equal(json_object_get_string(get(json_object_array_get_idx(events, 1), "action")), "killed");
	assert_int_equal(json_object_get_int(get(reply, "capacity")), EVENTLOG_RING_SIZE);
	json_object_put(reply);
}

static void test_bad_requests(void **state)
{
	struct fixture *f = *state;
	const char *bad[] = { "{\"command\":\"reboot\"}\n", "{not json\n", "[1,2]\n", "{}\n", "\n" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct json_object *reply = roundtrip(f, bad[i]);

		assert_false(json_object_get_boolean(get(reply, "ok")));
		assert_true(strlen(json_object_get_string(get(reply, "error"))) > 0);
		json_object_put(reply);
	}
	/* The reply path on its own: a request without a newline is a whole request too. */
	{
		char *line = control_reply(f->control, "{\"command\":\"status\"}");

		assert_non_null(line);
		assert_non_null(strstr(line, "\"ok\":true"));
		free(line);
	}
}

static int failing_view(void *ctx, enum control_command command, struct control_view *view)
{
	return -EAGAIN;
}

static void test_view_failure_is_reported(void **state)
{
	struct fixture *f = *state;
	struct control *control;
	char path[PATH_MAX + 64];
	char *line;

	snprintf(path, sizeof(path), "%s/other.sock", f->dir);
	assert_int_equal(control_open(&control, &(struct control_options){ .path = path, .view = failing_view }), 0);
	line = control_reply(control, "status");
	assert_non_null(strstr(line, "\"ok\":false"));
	assert_non_null(strstr(line, "could not answer"));
	free(line);
	control_close(control);
	assert_int_equal(access(path, F_OK), -1);
}

static void test_split_request_and_silent_client(void **state)
{
	struct fixture *f = *state;
	int silent = connect_to(f->path), fd = connect_to(f->path);
	char buf[65536];
	ssize_t n;
	size_t len = 0;
	int64_t start;
	struct timespec ts;

	/* A client that sends nothing must not stall the loop: handle returns at once. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	start = ts.tv_sec * 1000000000ll + ts.tv_nsec;
	assert_int_equal(control_handle_ready(f->control), 0);
	assert_int_equal(control_handle_ready(f->control), 0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	assert_true(ts.tv_sec * 1000000000ll + ts.tv_nsec - start < 100000000);

	/* Half a line, then the rest: answered once complete. */
	assert_true(send(fd, "{\"command\":", 11, 0) == 11);
	usleep(10000);
	assert_int_equal(control_handle_ready(f->control), 0);
	assert_true(send(fd, "\"events\"}\n", 10, 0) == 10);
	usleep(10000);
	assert_int_equal(control_handle_ready(f->control), 1);
	while ((n = recv(fd, buf + len, sizeof(buf) - 1 - len, MSG_DONTWAIT)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	assert_non_null(strstr(buf, "\"command\":\"events\""));
	assert_int_equal(n, 0);	/* and the connection is closed */
	close(fd);
	close(silent);
}

/* The control module's clock, shifted: a client accepted "now" by it has a deadline already
 * past on the loop's real CLOCK_MONOTONIC (no waiting), or one far ahead. */
static int64_t clock_shift_ns;

static int64_t shifted_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec + clock_shift_ns;
}

/* Accept fd's connection and read what it sent (half a line), without answering. */
static void accept_partial(struct control *control, int fd)
{
	assert_true(send(fd, "{\"command\":", 11, 0) == 11);
	for (int i = 0; i < 20; i++) {
		struct pollfd pfd = { .fd = control_fd(control), .events = POLLIN };

		if (poll(&pfd, 1, i ? 50 : 0) <= 0 && i)
			break;	/* accepted and read: nothing more is coming */
		assert_int_equal(control_handle_ready(control), 0);
	}
}

/* Each connection has its own deadline on the loop: a client that sends half a line and
 * stalls is closed when its time is up, with no other client arriving and no call into the
 * control module (before, only the next client's arrival swept it out). */
static void test_stalled_client_deadline(void **state)
{
	struct fixture *f = *state;
	struct loop *loop;
	char buf[64];
	int fd, n = -1;

	control_close(f->control);
	assert_int_equal(loop_new(&loop), 0);
	/* Deadline 60 s ahead: the loop has nothing due, the client stays. */
	clock_shift_ns = 60ll * 1000000000;
	assert_int_equal(control_open(&f->control, &(struct control_options){
		.path = f->path, .view = fill_view, .ctx = f, .loop = loop, .now_ns = shifted_now }), 0);
	fd = connect_to(f->path);
	accept_partial(f->control, fd);
	assert_true(loop_run_once(loop, 0, NULL, NULL) >= 0);
	assert_int_equal(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
	close(fd);
	control_close(f->control);

	/* Accepted "60 s ago": its deadline passed 55 s ago; the loop alone closes it. */
	clock_shift_ns = -60ll * 1000000000;
	assert_int_equal(control_open(&f->control, &(struct control_options){
		.path = f->path, .view = fill_view, .ctx = f, .loop = loop, .now_ns = shifted_now }), 0);
	fd = connect_to(f->path);
	accept_partial(f->control, fd);
	for (int i = 0; i < 5 && n != 0; i++) {
		assert_true(loop_run_once(loop, 200, NULL, NULL) >= 0);
		n = (int)recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	}
	assert_int_equal(n, 0);	/* EOF: closed by its deadline */
	close(fd);
	control_close(f->control);
	f->control = NULL;
	assert_int_equal(loop_n_sources(loop), 0);
	loop_free(loop);
}

static void test_stale_live_and_foreign_files(void **state)
{
	struct fixture *f = *state;
	struct control *second = (struct control *)1;
	char other[PATH_MAX + 64];
	int fd;

	/* A live daemon on the path: refused, and the socket left alone. */
	assert_int_equal(control_open(&second, &(struct control_options){ .path = f->path }), -EADDRINUSE);
	assert_null(second);
	assert_int_equal(access(f->path, F_OK), 0);

	/* A regular file on the path is not ours to remove. */
	snprintf(other, sizeof(other), "%s/plain-file", f->dir);
	fd = open(other, O_CREAT | O_WRONLY, 0600);
	close(fd);
	assert_int_equal(control_open(&second, &(struct control_options){ .path = other }), -EEXIST);
	assert_int_equal(access(other, F_OK), 0);

	/* Dead daemon: its socket file is replaced. */
	control_close(f->control);
	f->control = NULL;
	assert_int_equal(access(f->path, F_OK), -1);	/* close removed it */
	{
		struct sockaddr_un addr = { .sun_family = AF_UNIX };

		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		assert_true(strlen(f->path) < sizeof(addr.sun_path));
		memcpy(addr.sun_path, f->path, strlen(f->path) + 1);
		assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
		close(fd);	/* bound, never listened: what a crashed daemon leaves */
	}
	assert_int_equal(control_open(&f->control, &(struct control_options){
		.path = f->path, .view = fill_view, .ctx = f }), 0);
	{
		struct json_object *reply = roundtrip(f, "status\n");

		assert_true(json_object_get_boolean(get(reply, "ok")));
		json_object_put(reply);
	}

	/* Too long for sun_path. */
	memset(other, 'x', 200);
	other[0] = '/';
	other[200] = '\0';
	assert_int_equal(control_open(&second, &(struct control_options){ .path = other }), -ENAMETOOLONG);
}

/* Strict JSON that is valid UTF-8 (RFC 8259 §8.1), as jq or Python would demand. */
static struct json_object *parse_strict_utf8(const char *text)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *doc;

	assert_non_null(tok);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	doc = json_tokener_parse_ex(tok, text, (int)strlen(text));
	json_tokener_free(tok);
	return doc;
}

/* Names are bytes from outside (the API server, directory names, xattrs): json-c copies
 * invalid UTF-8 as it is, which makes the reply invalid JSON. The reply carries \xNN. */
static void test_invalid_utf8_in_names(void **state)
{
	struct fixture *f = *state;
	struct json_object *reply, *first;
	char *text;

	snprintf(f->pods[1].name, sizeof(f->pods[1].name), "hog\xff\xfe\x1b[31m");
	snprintf(f->pods[1].namespace_, sizeof(f->pods[1].namespace_), "ns\xc3");	/* truncated */
	snprintf(f->pods[1].cgroup_path, sizeof(f->pods[1].cgroup_path), "/sys/fs/cgroup/\xed\xa0\x80");
	text = control_reply(f->control, "{\"command\":\"pods\"}");
	assert_non_null(text);
	reply = parse_strict_utf8(text);
	if (!reply)
		fail_msg("not strict UTF-8 JSON: %s", text);
	first = json_object_array_get_idx(get(reply, "pods"), 0);
	assert_string_equal(json_object_get_string(get(first, "name")), "hog\\xff\\xfe\x1b[31m");
	assert_string_equal(json_object_get_string(get(first, "namespace")), "ns\\xc3");
	assert_string_equal(json_object_get_string(get(first, "cgroup")), "/sys/fs/cgroup/\\xed\\xa0\\x80");
	json_object_put(reply);
	free(text);
	/* Valid UTF-8 goes through as it is. */
	snprintf(f->pods[1].name, sizeof(f->pods[1].name), "h\xc3\xb6g-\xe6\x97\xa5");
	text = control_reply(f->control, "status");
	assert_non_null(strstr(text, "h\xc3\xb6g-\xe6\x97\xa5"));
	free(text);
}

/* evictctl's rendering (ops/ctl_view.h) of a reply: into a memory FILE. */
static int render(const char *command, const char *reply_text, char **out_text, char *err, size_t err_len)
{
	struct json_object *reply;
	size_t len = 0;
	FILE *out;
	int ret;

	ret = ctl_view_parse(reply_text, &reply, err, err_len);
	*out_text = NULL;
	if (ret)
		return ret;
	out = open_memstream(out_text, &len);
	assert_non_null(out);
	ret = ctl_view_render(out, command, reply, err, err_len);
	fclose(out);
	json_object_put(reply);
	return ret;
}

static void test_ctl_view_missing_and_mistyped_fields(void **state)
{
	static const char *const commands[] = { "status", "pods", "events" };
	static const char *const replies[] = {
		"{\"ok\":true}",
		"{\"ok\":true,\"signals\":1,\"pods\":{},\"events\":\"x\",\"thresholds\":{},\"bpf\":[]}",
		"{\"ok\":true,\"signals\":{\"memory.available\":3},\"thresholds\":[1,null,{\"signal\":5}],"
		"\"conditions\":{\"a\":1},\"decision\":{\"victim\":2},\"evictions\":7,\"oom_guard\":{\"enabled\":true},"
		"\"pods\":[1,null,{\"name\":7,\"usage\":1e300}],\"cgroup_tree\":true,\"events\":[1,{\"latency_ns\":\"1\"}]}",
	};
	char err[512], *text;

	/* {"ok":true}: the command's main part is missing, one line says so. */
	for (size_t c = 0; c < 3; c++) {
		assert_int_equal(render(commands[c], replies[0], &text, err, sizeof(err)), -EPROTO);
		assert_non_null(strstr(err, "has no"));
		assert_null(strchr(err, '\n'));
		free(text);
		assert_int_equal(render(commands[c], replies[1], &text, err, sizeof(err)), -EPROTO);
		free(text);
		/* Present but every element of the wrong type: placeholders. */
		assert_int_equal(render(commands[c], replies[2], &text, err, sizeof(err)), 0);
		assert_non_null(text);
		free(text);
	}
	assert_int_equal(render("status", replies[2], &text, err, sizeof(err)), 0);
	assert_non_null(strstr(text, "? killed, ? failed"));
	assert_non_null(strstr(text, "memory.available  ?"));
	free(text);
	assert_int_equal(render("status", "{\"ok\":false}", &text, err, sizeof(err)), -EREMOTEIO);
	assert_string_equal(err, "evictd: request failed");
	assert_int_equal(render("status", "[1]", &text, err, sizeof(err)), -EPROTO);
}

static void test_ctl_view_escapes_names(void **state)
{
	static const char reply[] =
		"{\"ok\":true,\"cgroup_tree\":true,\"signal\":\"memory.available\",\"pods\":["
		"{\"rank\":1,\"namespace\":\"ns\\n\\u001b[31m\",\"name\":\"evil\\u009b2J\",\"reason\":\"r\\r\\t\"},"
		"{\"rank\":2,\"namespace\":\"d\",\"name\":\"h\xc3\xb6g\xff\"}]}";
	char err[512], *text;

	assert_int_equal(render("pods", reply, &text, err, sizeof(err)), 0);
	assert_non_null(strstr(text, "ns\\n\\x1b[31m/evil\\xc2\\x9b2J"));
	assert_non_null(strstr(text, "r\\r\\t"));
	assert_non_null(strstr(text, "d/h\xc3\xb6g\\xff"));
	assert_null(strchr(text, '\x1b'));
	assert_null(strchr(text, '\r'));
	/* A header and two rows: the newline in the name did not make a row. */
	{
		size_t lines = 0;

		for (const char *p = text; *p; p++)
			lines += *p == '\n';
		assert_int_equal(lines, 4);	/* "Ranking for ...", the header, two pods */
	}
	free(text);
	assert_int_equal(render("status", "{\"ok\":false,\"error\":\"x\\n\\u001b[2Jy\"}", &text, err, sizeof(err)),
			 -EREMOTEIO);
	assert_string_equal(err, "evictd: x\\n\\x1b[2Jy");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_socket_file_mode_and_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pods_most_pressing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pods_victim_is_the_daemons, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pods_requested_signal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pods_no_pressure_defaults_to_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_requests, setup, teardown),
		cmocka_unit_test_setup_teardown(test_view_failure_is_reported, setup, teardown),
		cmocka_unit_test_setup_teardown(test_split_request_and_silent_client, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stalled_client_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_live_and_foreign_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_invalid_utf8_in_names, setup, teardown),
		cmocka_unit_test(test_ctl_view_missing_and_mistyped_fields),
		cmocka_unit_test(test_ctl_view_escapes_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
