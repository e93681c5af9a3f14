// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Graceful node shutdown without D-Bus (DESIGN.md §7), following the kubelet's
 * pkg/kubelet/nodeshutdown: migrateConfig turns the two-period form into two priority groups
 * (0 and SystemCriticalPriority), groupByPriority puts each pod into the group with the
 * highest priority <= its own, and processShutdownEvent terminates the groups lowest priority
 * first, all pods of a group in parallel, moving on when they have all ended or the group's
 * period has passed, and skipping empty groups at once.
 *
 * Unlike the kubelet, whose processShutdownEvent blocks its event goroutine (so a
 * PrepareForShutdown(false) is only seen once every group is done), the sequence here is a
 * step function: the daemon keeps serving D-Bus, metrics and signals, and a cancel stops the
 * groups that have not started yet.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sys/log.h"
#include "act/shutdown.h"
#include "sys/clock.h"
#include "sys/fileio.h"

#define NS_PER_S 1000000000ll
/* The kubelet's scheduling.DefaultPriorityWhenNoDefaultClassExists. */
#define DEFAULT_PRIORITY 0

enum pod_kill_state {
	POD_WAITING,	/* its group has not started */
	POD_KILLING,	/* ops->start succeeded, no shutdown_kill_done yet */
	POD_ENDED,	/* done, failed to start, or given up on with its group */
};

struct shutdown_pod {
	struct pod pod;
	size_t group;
	enum pod_kill_state state;
	int err;
};

static int64_t seconds_to_ns(int64_t s)
{
	if (s <= 0)
		return 0;
	return s > INT64_MAX / NS_PER_S ? INT64_MAX : s * NS_PER_S;
}

static int64_t add_ns(int64_t a, int64_t b)
{
	int64_t sum;

	return __builtin_add_overflow(a, b, &sum) ? INT64_MAX : sum;
}

static double to_s(int64_t ns)
{
	return (double)ns / 1e9;
}

/* "namespace/name", or the bare name of a standalone workload. */
static const char *pod_label(const struct pod *pod, char *buf, size_t len)
{
	if (pod->namespace_[0])
		snprintf(buf, len, "%s/%s", pod->namespace_, pod->name);
	else
		snprintf(buf, len, "%s", pod->name);
	return buf;
}

const char *shutdown_phase_name(enum shutdown_phase phase)
{
	switch (phase) {
	case SHUTDOWN_IDLE: return "idle";
	case SHUTDOWN_RUNNING: return "running";
	case SHUTDOWN_DONE: return "done";
	case SHUTDOWN_CANCELLED: return "cancelled";
	}
	return "?";
}

/* ---- the group plan ---------------------------------------------------------------------- */

size_t shutdown_migrate_config(int64_t total_ns, int64_t critical_ns, struct shutdown_plan_group out[2])
{
	int64_t regular_ns;

	if (total_ns <= 0 || critical_ns < 0 || critical_ns > total_ns)
		return 0;
	regular_ns = total_ns - critical_ns;
	/* Each truncated on its own, as int64(d / time.Second) does: 30.5s/10.2s -> 20 + 10. */
	out[0] = (struct shutdown_plan_group){
		.priority = DEFAULT_PRIORITY,
		.period_ns = regular_ns / NS_PER_S * NS_PER_S,
	};
	out[1] = (struct shutdown_plan_group){
		.priority = RANK_SYSTEM_CRITICAL_PRIORITY,
		.period_ns = critical_ns / NS_PER_S * NS_PER_S,
	};
	return 2;
}

size_t shutdown_plan_from_config(const struct evictd_config *config, struct shutdown_plan *plan)
{
	memset(plan, 0, sizeof(*plan));
	if (config->n_shutdown_groups) {
		size_t n = config->n_shutdown_groups;

		if (n > SHUTDOWN_MAX_GROUPS)
			n = SHUTDOWN_MAX_GROUPS;
		for (size_t i = 0; i < n; i++) {
			plan->groups[i].priority = config->shutdown_groups[i].priority;
			plan->groups[i].period_ns = seconds_to_ns(config->shutdown_groups[i].grace_period_s);
		}
		/* config_finalize sorts them; a plan built by hand may not be: insertion sort. */
		for (size_t i = 1; i < n; i++)
			for (size_t j = i; j > 0 && plan->groups[j - 1].priority > plan->groups[j].priority; j--) {
				struct shutdown_plan_group tmp = plan->groups[j];

				plan->groups[j] = plan->groups[j - 1];
				plan->groups[j - 1] = tmp;
			}
		plan->n_groups = n;
	} else {
		plan->n_groups = shutdown_migrate_config(config->shutdown_grace_period_ns,
							 config->shutdown_grace_period_critical_pods_ns,
							 plan->groups);
	}
	for (size_t i = 0; i < plan->n_groups; i++)
		plan->total_ns = add_ns(plan->total_ns, plan->groups[i].period_ns);
	return plan->n_groups;
}

size_t shutdown_group_index(const struct shutdown_plan *plan, int32_t priority)
{
	size_t index = 0;

	/* sort.Search: the first group whose priority >= the pod's. */
	while (index < plan->n_groups && plan->groups[index].priority < priority)
		index++;
	if (index == plan->n_groups)
		return plan->n_groups ? plan->n_groups - 1 : 0;
	if (index > 0 && plan->groups[index].priority > priority)
		index--;
	return index;
}

int64_t shutdown_pod_grace_ns(const struct pod *pod, int64_t period_ns)
{
	int64_t pod_grace_ns;

	if (pod->termination_grace_period_s < 0)
		return period_ns;
	pod_grace_ns = seconds_to_ns(pod->termination_grace_period_s);
	return pod_grace_ns <= period_ns ? pod_grace_ns : period_ns;
}

/* ---- persisted state ----------------------------------------------------------------------- */

void shutdown_format_time(int64_t unix_ns, char *buf, size_t len)
{
	time_t sec;
	long nsec;
	struct tm tm;
	char frac[16] = "";
	size_t used;

	if (unix_ns <= 0) {
		snprintf(buf, len, "0001-01-01T00:00:00Z");	/* Go's zero time.Time */
		return;
	}
	sec = (time_t)(unix_ns / NS_PER_S);
	nsec = (long)(unix_ns % NS_PER_S);
	gmtime_r(&sec, &tm);
	if (nsec) {
		int n = snprintf(frac, sizeof(frac), ".%09ld", nsec);

		while (n > 1 && frac[n - 1] == '0')
			frac[--n] = '\0';
	}
	used = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + used, len - used, "%sZ", frac);
}

static int parse_digits(const char **p, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++, (*p)++) {
		if (**p < '0' || **p > '9')
			return -EINVAL;
		v = v * 10 + (**p - '0');
	}
	*out = v;
	return 0;
}

static int expect_char(const char **p, char c)
{
	if (**p != c)
		return -EINVAL;
	(*p)++;
	return 0;
}

int shutdown_parse_time(const char *text, int64_t *unix_ns)
{
	const char *p = text;
	int year, mon, day, hour, min, sec, off_h = 0, off_m = 0, sign = 0;
	int64_t nsec = 0, scale = NS_PER_S / 10;
	struct tm tm = { 0 };
	time_t t;

	if (parse_digits(&p, 4, &year) || expect_char(&p, '-') || parse_digits(&p, 2, &mon) ||
	    expect_char(&p, '-') || parse_digits(&p, 2, &day) || (*p != 'T' && *p != 't') ||
	    (p++, parse_digits(&p, 2, &hour)) || expect_char(&p, ':') || parse_digits(&p, 2, &min) ||
	    expect_char(&p, ':') || parse_digits(&p, 2, &sec))
		return -EINVAL;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++, scale /= 10)
			nsec += (*p - '0') * scale;	/* digits past the 9th add 0 */
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p++ == '+' ? 1 : -1;
		if (parse_digits(&p, 2, &off_h) || expect_char(&p, ':') || parse_digits(&p, 2, &off_m))
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (*p || mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60 ||
	    off_h > 23 || off_m > 59)
		return -EINVAL;
	tm.tm_year = year - 1900;
	tm.tm_mon = mon - 1;
	tm.tm_mday = day;
	tm.tm_hour = hour;
	tm.tm_min = min;
	tm.tm_sec = sec;
	t = timegm(&tm);
	t -= (time_t)sign * (off_h * 3600 + off_m * 60);
	/* Go's zero time (year 1) and anything else before the epoch: unset. */
	*unix_ns = t < 0 ? 0 : (int64_t)t * NS_PER_S + nsec;
	return 0;
}

/* mkdir -p for the state dir. */
int shutdown_state_save(const char *path, int64_t start_ns, int64_t end_ns)
{
	char dir[PATH_MAX], start[48], end[48], text[160];
	const char *slash = strrchr(path, '/');
	size_t len;
	int err;

	if (!slash || (size_t)(slash - path) >= sizeof(dir))
		return -EINVAL;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	if (dir[0] && (err = fileio_mkdir_p(dir, 0755))) {
		log_err("shutdown: mkdir -p %s: %s", dir, strerror(-err));
		return err;
	}
	shutdown_format_time(start_ns, start, sizeof(start));
	shutdown_format_time(end_ns, end, sizeof(end));
	len = (size_t)snprintf(text, sizeof(text), "{\"startTime\":\"%s\",\"endTime\":\"%s\"}", start, end);
	err = fileio_write_atomic(path, text, len, 0644);
	if (err)
		log_err("shutdown: writing %s: %s", path, strerror(-err));
	return err;
}

/* One "startTime"/"endTime" member: absent = 0 (json.Unmarshal leaves the zero time). */
static int load_member(const char *path, struct json_object *root, const char *key, int64_t *out)
{
	struct json_object *value;

	*out = 0;
	if (!json_object_object_get_ex(root, key, &value) || json_object_is_type(value, json_type_null))
		return 0;
	if (!json_object_is_type(value, json_type_string) ||
	    shutdown_parse_time(json_object_get_string(value), out)) {
		log_err("shutdown: %s: %s: expected an RFC 3339 time string, got %s", path, key,
			json_object_to_json_string(value));
		return -EINVAL;
	}
	return 0;
}

int shutdown_state_load(const char *path, int64_t *start_ns, int64_t *end_ns)
{
	char text[4096];
	struct json_object *root;
	int64_t start, end;
	ssize_t n;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (err != -ENOENT)
			log_err("shutdown: open %s: %m", path);
		return err;
	}
	n = read(fd, text, sizeof(text) - 1);
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err) {
		errno = -err;
		log_err("shutdown: read %s: %m", path);
		return err;
	}
	text[n] = '\0';
	root = json_tokener_parse(text);
	if (!root || !json_object_is_type(root, json_type_object)) {
		log_err("shutdown: %s: not a JSON object", path);
		json_object_put(root);
		return -EINVAL;
	}
	err = load_member(path, root, "startTime", &start);
	if (!err)
		err = load_member(path, root, "endTime", &end);
	json_object_put(root);
	if (err)
		return err;
	*start_ns = start;
	*end_ns = end;
	return 0;
}

static void persist(struct shutdown_manager *m)
{
	if (m->state_path[0])
		shutdown_state_save(m->state_path, m->start_time_ns, m->end_time_ns);
}

/* ---- the kill sequence --------------------------------------------------------------------- */

int shutdown_init(struct shutdown_manager *m, const struct shutdown_options *options)
{
	const char *dir;
	int err;

	memset(m, 0, sizeof(*m));
	if (!options || !options->ops || !options->ops->start || (!options->config && !options->plan))
		return -EINVAL;
	if (options->config)
		shutdown_plan_from_config(options->config, &m->plan);
	else
		m->plan = *options->plan;
	m->ops = options->ops;
	m->ops_ctx = options->ops_ctx;
	m->realtime_ns = options->realtime_ns ? options->realtime_ns : clock_realtime_ns;
	m->pod_done = options->pod_done;
	m->pod_done_ctx = options->pod_done_ctx;
	m->phase = SHUTDOWN_IDLE;

	dir = options->state_dir ? options->state_dir : SHUTDOWN_DEFAULT_STATE_DIR;
	if (!dir[0])
		return 0;
	if (snprintf(m->state_path, sizeof(m->state_path), "%s/%s", dir, SHUTDOWN_STATE_FILE) >=
	    (int)sizeof(m->state_path)) {
		log_err("shutdown: state dir %s: path too long", dir);
		m->state_path[0] = '\0';
		return -ENAMETOOLONG;
	}
	err = shutdown_state_load(m->state_path, &m->start_time_ns, &m->end_time_ns);
	if (err == 0) {
		char start[48], end[48];

		shutdown_format_time(m->start_time_ns, start, sizeof(start));
		shutdown_format_time(m->end_time_ns, end, sizeof(end));
		log_info("shutdown: last graceful shutdown (%s): started %s, ended %s", m->state_path,
			 m->start_time_ns ? start : "never", m->end_time_ns ? end : "never");
	} else {
		m->start_time_ns = m->end_time_ns = 0;	/* missing or unreadable: nothing to report */
	}
	return 0;
}

void shutdown_destroy(struct shutdown_manager *m)
{
	free(m->pods);
	m->pods = NULL;
	m->n_pods = 0;
}

double shutdown_start_time_seconds(const struct shutdown_manager *m)
{
	return to_s(m->start_time_ns);
}

double shutdown_end_time_seconds(const struct shutdown_manager *m)
{
	return to_s(m->end_time_ns);
}

static uint64_t make_token(uint32_t generation, size_t index)
{
	return (uint64_t)generation << 32 | (uint32_t)index;
}

int shutdown_begin(struct shutdown_manager *m, int64_t now_ns, struct pod *const *pods, size_t n_pods)
{
	struct shutdown_pod *copies = NULL;
	size_t count[SHUTDOWN_MAX_GROUPS] = { 0 }, n = 0;

	if (m->phase == SHUTDOWN_RUNNING) {
		log_info("shutdown: PrepareForShutdown(true) again while terminating pods; ignored");
		return -EALREADY;
	}
	if (!m->plan.n_groups)
		n_pods = 0;	/* nothing configured: the sequence ends at once */
	if (n_pods) {
		copies = calloc(n_pods, sizeof(*copies));
		if (!copies) {
			log_err("shutdown: out of memory for %zu pods", n_pods);
			return -ENOMEM;
		}
	}
	/* A counting sort by group keeps the given order within a group. */
	for (size_t i = 0; i < n_pods; i++)
		if (!pods[i]->is_self)
			count[shutdown_group_index(&m->plan, pods[i]->priority)]++;
	m->group_first[0] = 0;
	for (size_t g = 0; g < SHUTDOWN_MAX_GROUPS; g++)
		m->group_first[g + 1] = m->group_first[g] + (g < m->plan.n_groups ? count[g] : 0);
	memset(count, 0, sizeof(count));
	for (size_t i = 0; i < n_pods; i++) {
		size_t g, slot;

		if (pods[i]->is_self)
			continue;	/* evictd goes down with the node, after releasing the lock */
		g = shutdown_group_index(&m->plan, pods[i]->priority);
		slot = m->group_first[g] + count[g]++;
		copies[slot] = (struct shutdown_pod){ .pod = *pods[i], .group = g, .state = POD_WAITING };
		n++;
	}

	free(m->pods);
	m->pods = copies;
	m->n_pods = n;
	m->generation++;
	m->phase = SHUTDOWN_RUNNING;
	m->group = 0;
	m->group_started = false;
	m->pending = 0;
	m->release_due = false;
	m->begin_ns = now_ns;
	m->start_time_ns = m->realtime_ns();
	m->end_time_ns = 0;
	persist(m);
	log_event(LOGLEVEL_INFO, LOG_KIND_SHUTDOWN, NULL, 0,
		  "shutdown: node shutdown announced: terminating %zu pods in %zu priority groups, "
		  "lowest priority first, within %.0f s", n, m->plan.n_groups, to_s(m->plan.total_ns));
	return 0;
}

static void start_group(struct shutdown_manager *m, int64_t now_ns)
{
	const struct shutdown_plan_group *group = &m->plan.groups[m->group];

	m->group_started = true;
	m->group_start_ns = now_ns;
	m->group_deadline_ns = add_ns(now_ns, group->period_ns);
	m->pending = 0;
	log_info("shutdown: group %zu/%zu (priority >= %" PRId32 ", %.0f s): terminating %zu pods",
		 m->group + 1, m->plan.n_groups, group->priority, to_s(group->period_ns),
		 m->group_first[m->group + 1] - m->group_first[m->group]);
	for (size_t i = m->group_first[m->group]; i < m->group_first[m->group + 1]; i++) {
		struct shutdown_pod *sp = &m->pods[i];
		int64_t grace_ns = shutdown_pod_grace_ns(&sp->pod, group->period_ns);
		char label[sizeof(sp->pod.namespace_) + sizeof(sp->pod.name)];
		int err;

		log_info("shutdown: SIGTERM to pod %s (priority %" PRId32 ", %s), cgroup.kill after %.0f s",
			 pod_label(&sp->pod, label, sizeof(label)), sp->pod.priority, sp->pod.cgroup_path,
			 to_s(grace_ns));
		err = m->ops->start(m->ops_ctx, make_token(m->generation, i), &sp->pod, grace_ns);
		if (err) {
			sp->state = POD_ENDED;
			sp->err = err;
			log_err("shutdown: could not start terminating pod %s: %s", label, strerror(-err));
			continue;
		}
		sp->state = POD_KILLING;
		m->pending++;
	}
}

static void end_group(struct shutdown_manager *m, int64_t now_ns)
{
	const struct shutdown_plan_group *group = &m->plan.groups[m->group];

	if (m->pending)
		log_warn("shutdown: group %zu/%zu (priority >= %" PRId32 "): its %.0f s are over, pods "
			 "still terminating: %zu; going on with the next group",
			 m->group + 1, m->plan.n_groups, group->priority, to_s(group->period_ns), m->pending);
	else
		log_info("shutdown: group %zu/%zu (priority >= %" PRId32 ") done in %.3f s",
			 m->group + 1, m->plan.n_groups, group->priority, to_s(now_ns - m->group_start_ns));
	/* Late reports for this group change nothing: only the current group counts. */
	for (size_t i = m->group_first[m->group]; i < m->group_first[m->group + 1]; i++)
		if (m->pods[i].state == POD_KILLING)
			m->pods[i].state = POD_ENDED;
	m->group++;
	m->group_started = false;
	m->pending = 0;
}

int64_t shutdown_step(struct shutdown_manager *m, int64_t now_ns, bool *release_lock)
{
	if (release_lock)
		*release_lock = false;
	while (m->phase == SHUTDOWN_RUNNING) {
		if (m->group >= m->plan.n_groups) {
			m->phase = SHUTDOWN_DONE;
			m->end_time_ns = m->realtime_ns();
			persist(m);
			log_event(LOGLEVEL_INFO, LOG_KIND_SHUTDOWN, NULL, 0,
				  "shutdown: every group done %.3f s after the shutdown was announced; "
				  "releasing the inhibitor lock", to_s(now_ns - m->begin_ns));
			if (release_lock)
				*release_lock = true;
			return SHUTDOWN_NO_DEADLINE;
		}
		if (!m->group_started) {
			if (m->group_first[m->group] == m->group_first[m->group + 1]) {
				log_info("shutdown: group %zu/%zu (priority >= %" PRId32 "): no pods; skipped",
					 m->group + 1, m->plan.n_groups, m->plan.groups[m->group].priority);
				m->group++;
				continue;
			}
			start_group(m, now_ns);
		}
		if (m->pending && now_ns < m->group_deadline_ns)
			return m->group_deadline_ns;
		end_group(m, now_ns);
	}
	return SHUTDOWN_NO_DEADLINE;
}

void shutdown_kill_done(struct shutdown_manager *m, uint64_t token, int err)
{
	size_t index = (size_t)(token & 0xffffffffu);
	struct shutdown_pod *sp;

	if ((uint32_t)(token >> 32) != m->generation || m->phase != SHUTDOWN_RUNNING || index >= m->n_pods)
		return;
	sp = &m->pods[index];
	if (sp->state != POD_KILLING)
		return;
	sp->state = POD_ENDED;
	sp->err = err;
	if (err) {
		char label[sizeof(sp->pod.namespace_) + sizeof(sp->pod.name)];

		log_warn("shutdown: terminating pod %s failed: %s", pod_label(&sp->pod, label, sizeof(label)),
			 strerror(-err));
	}
	if (m->pod_done)
		m->pod_done(m->pod_done_ctx, &sp->pod, err);
	/* Only the current group's pods are still POD_KILLING: end_group() ends the others. */
	if (m->pending)
		m->pending--;
}

bool shutdown_cancel(struct shutdown_manager *m, int64_t now_ns)
{
	enum shutdown_phase was = m->phase;

	if (was == SHUTDOWN_IDLE || was == SHUTDOWN_CANCELLED) {
		log_info("shutdown: PrepareForShutdown(false) with no shutdown in progress");
		return false;
	}
	m->phase = SHUTDOWN_CANCELLED;
	if (was == SHUTDOWN_DONE) {
		log_info("shutdown: shutdown cancelled after every group was done");
		return false;
	}
	m->end_time_ns = m->realtime_ns();
	persist(m);
	log_info("shutdown: shutdown cancelled %.3f s after it was announced, in group %zu/%zu; "
		 "%zu groups not started", to_s(now_ns - m->begin_ns),
		 m->group < m->plan.n_groups ? m->group + 1 : m->plan.n_groups, m->plan.n_groups,
		 m->plan.n_groups - m->group - (m->group_started ? 1 : 0));
	return true;
}
