// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* evictctl: ask a running evictd what it sees (status), how it would rank the pods (pods)
 * and what it decided lately (events), through its control socket and its pinned maps. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <linux/types.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "ops/control.h"
#include "evictd.h"
#include "ops/eventlog.h"
#include "signals/signals.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define EVICTCTL_VERSION "0.1.0"
#define DEFAULT_TIMEOUT_S 15

static bool lookup_signal(const char *name, enum ev_signal *signal);

struct options {
	const char *socket_path;
	const char *pin_dir;
	const char *command;
	const char *signal;
	bool json;
	int timeout_s;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: evictctl [--socket PATH] [--json] COMMAND\n"
		"Ask a running evictd what it sees and decides.\n"
		"\n"
		"Commands:\n"
		"  status                 signals, thresholds, node conditions, mode, BPF state, evictions\n"
		"  pods [--signal NAME]   the eviction ranking for the most pressing signal (or NAME),\n"
		"                         with the reason for each position\n"
		"  events                 the last %d decisions, oldest first\n"
		"\n"
		"Options:\n"
		"  --socket PATH          evictd's control socket (%s; $EVICTD_SOCKET)\n"
		"  --bpf-pin-dir DIR      where evictd pins its maps (%s)\n"
		"  --json                 print the daemon's JSON reply instead of tables\n"
		"  --timeout SECONDS      how long to wait for the reply (%d)\n"
		"  --help, --version\n"
		"\n"
		"Exit status: 0 ok, 1 evictd not reachable or it reported an error, 2 usage error.\n",
		EVENTLOG_RING_SIZE, CONTROL_DEFAULT_SOCKET, EVICTD_PIN_DIR_DEFAULT, DEFAULT_TIMEOUT_S);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("evictctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'evictctl --help'.\n", stderr);
	return EXIT_USAGE;
}

/* "--name VALUE" or "--name=VALUE"; advances *i past what it used. */
static const char *option_value(int argc, char **argv, int *i, const char *name)
{
	size_t len = strlen(name);

	if (strncmp(argv[*i], name, len))
		return NULL;
	if (argv[*i][len] == '=')
		return argv[*i] + len + 1;
	if (argv[*i][len] == '\0' && *i + 1 < argc)
		return argv[++*i];
	return NULL;
}

static int parse_args(int argc, char **argv, struct options *opts)
{
	const char *env_socket = getenv("EVICTD_SOCKET");

	*opts = (struct options){
		.socket_path = env_socket && env_socket[0] ? env_socket : CONTROL_DEFAULT_SOCKET,
		.pin_dir = EVICTD_PIN_DIR_DEFAULT,
		.timeout_s = DEFAULT_TIMEOUT_S,
	};
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *value;

		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(arg, "--version")) {
			printf("evictctl %s\n", EVICTCTL_VERSION);
			exit(0);
		} else if (!strcmp(arg, "--json")) {
			opts->json = true;
		} else if ((value = option_value(argc, argv, &i, "--socket"))) {
			opts->socket_path = value;
		} else if ((value = option_value(argc, argv, &i, "--bpf-pin-dir"))) {
			opts->pin_dir = value;
		} else if ((value = option_value(argc, argv, &i, "--signal"))) {
			opts->signal = value;
		} else if ((value = option_value(argc, argv, &i, "--timeout"))) {
			char *end;
			long seconds = strtol(value, &end, 10);

			if (*end || seconds <= 0 || seconds > 3600)
				return usage_error("--timeout: \"%s\": expected seconds between 1 and 3600", value);
			opts->timeout_s = (int)seconds;
		} else if (!strncmp(arg, "--socket", 8) || !strncmp(arg, "--signal", 8) ||
			   !strncmp(arg, "--timeout", 9) || !strncmp(arg, "--bpf-pin-dir", 13)) {
			return usage_error("%s needs a value", arg);
		} else if (arg[0] == '-') {
			return usage_error("unknown option %s", arg);
		} else if (!opts->command) {
			opts->command = arg;
		} else {
			return usage_error("unexpected argument \"%s\"", arg);
		}
	}
	if (!opts->command)
		return usage_error("no command given (status, pods or events)");
	if (strcmp(opts->command, "status") && strcmp(opts->command, "pods") && strcmp(opts->command, "events"))
		return usage_error("unknown command \"%s\" (expected status, pods or events)", opts->command);
	if (opts->signal && strcmp(opts->command, "pods"))
		return usage_error("--signal applies to pods only");
	if (opts->signal && !lookup_signal(opts->signal, &(enum ev_signal){ 0 }))
		return usage_error("--signal: unknown signal \"%s\"; expected one of %s, oom.guard", opts->signal,
				   signal_valid_names());
	return 0;
}

/* ---- pinned maps ----------------------------------------------------------------------- */

/* Sum the per-CPU node_stats entries into *out. 0 or negative errno. */
static int read_node_stats(const char *pin_dir, struct evictd_node_stats *out)
{
	size_t n_fields = sizeof(*out) / sizeof(__u64);
	char path[PATH_MAX];
	__u64 *values, *sum = (__u64 *)out;
	__u32 key = 0;
	int fd, ncpus, err = 0;

	snprintf(path, sizeof(path), "%s/node_stats", pin_dir);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0) {
		close(fd);
		return ncpus < 0 ? ncpus : -EINVAL;
	}
	values = calloc((size_t)ncpus, sizeof(*out));
	if (!values) {
		close(fd);
		return -ENOMEM;
	}
	if (bpf_map_lookup_elem(fd, &key, values)) {
		err = -errno;
	} else {
		memset(out, 0, sizeof(*out));
		for (int cpu = 0; cpu < ncpus; cpu++)
			for (size_t f = 0; f < n_fields; f++)
				sum[f] += values[(size_t)cpu * n_fields + f];
	}
	free(values);
	close(fd);
	return err;
}

static void print_node_stats(const struct evictd_node_stats *stats)
{
	printf("BPF counters (node_stats): oom_kills=%llu forks=%llu exits=%llu direct_reclaims=%llu "
	       "kswapd_wakes=%llu wakeups_sent=%llu wakeups_dropped=%llu\n",
	       (unsigned long long)stats->oom_kills, (unsigned long long)stats->forks,
	       (unsigned long long)stats->exits, (unsigned long long)stats->direct_reclaims,
	       (unsigned long long)stats->kswapd_wakes, (unsigned long long)stats->wakeups_sent,
	       (unsigned long long)stats->wakeups_dropped);
}

/* The daemon is not answering: say what its pinned maps show, if anything is there. */
static void report_pins(const char *pin_dir)
{
	struct evictd_node_stats stats;
	char names[512] = "";
	size_t used = 0, count = 0;
	struct dirent *entry;
	DIR *dir = opendir(pin_dir);

	if (!dir)
		return;
	while ((entry = readdir(dir))) {
		if (entry->d_name[0] == '.')
			continue;
		count++;
		if (used < sizeof(names))
			used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", used ? ", " : "",
						 entry->d_name);
	}
	closedir(dir);
	if (!count)
		return;
	fprintf(stderr, "evictctl: pinned maps exist under %s (%s): left by an evictd that is not running "
		"any more, or one using another --control-socket; `bpftool map dump pinned %s/node_stats` "
		"reads them\n", pin_dir, names, pin_dir);
	if (read_node_stats(pin_dir, &stats) == 0) {
		fflush(stdout);
		print_node_stats(&stats);
	}
}

/* ---- talking to the daemon ------------------------------------------------------------- */

/* Send one request line, read the reply to EOF. Returns 0 and a malloc'd reply, or exits
 * through the caller with a message. */
static int request(const struct options *opts, const char *line, char **reply)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval timeout = { .tv_sec = opts->timeout_s };
	size_t len = 0, cap = 65536;
	char *buf;
	int fd;

	if (strlen(opts->socket_path) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "evictctl: %s: socket path too long\n", opts->socket_path);
		return -ENAMETOOLONG;
	}
	strcpy(addr.sun_path, opts->socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fprintf(stderr, "evictctl: socket: %m\n");
		return -errno;
	}
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		int err = -errno;

		fprintf(stderr, "evictctl: cannot connect to %s: %s — is evictd running?\n", opts->socket_path,
			strerror(-err));
		close(fd);
		report_pins(opts->pin_dir);
		return err;
	}
	/* The daemon answers from its event loop; it may be busy killing a pod for a while. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
	if (send(fd, line, strlen(line), MSG_NOSIGNAL) < 0) {
		fprintf(stderr, "evictctl: sending to %s: %m\n", opts->socket_path);
		close(fd);
		return -EIO;
	}
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n;

		if (len + 1 >= cap) {
			char *bigger = realloc(buf, cap * 2);

			if (!bigger) {
				free(buf);
				close(fd);
				return -ENOMEM;
			}
			buf = bigger;
			cap *= 2;
		}
		n = recv(fd, buf + len, cap - 1 - len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = -errno;

			fprintf(stderr, "evictctl: no reply from %s within %ds: %s (evictd may be busy "
				"evicting; try --timeout)\n", opts->socket_path, opts->timeout_s, strerror(-err));
			free(buf);
			close(fd);
			return err;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	*reply = buf;
	return 0;
}

/* ---- tables ---------------------------------------------------------------------------- */

#define TABLE_MAX_COLS 10

struct table {
	size_t n_cols;
	size_t n_rows;
	size_t cap_rows;
	char *(*rows)[TABLE_MAX_COLS];
};

static void table_add(struct table *table, ...)
{
	va_list ap;

	if (table->n_rows == table->cap_rows) {
		size_t cap = table->cap_rows ? table->cap_rows * 2 : 16;
		void *bigger = realloc(table->rows, cap * sizeof(*table->rows));

		if (!bigger)
			return;
		table->rows = bigger;
		table->cap_rows = cap;
	}
	va_start(ap, table);
	for (size_t c = 0; c < table->n_cols; c++) {
		const char *cell = va_arg(ap, const char *);

		table->rows[table->n_rows][c] = strdup(cell ? cell : "");
	}
	va_end(ap);
	table->n_rows++;
}

/* Columns padded to their widest cell, two spaces apart, the last one not padded. */
static void table_print(struct table *table)
{
	size_t width[TABLE_MAX_COLS] = { 0 };

	for (size_t r = 0; r < table->n_rows; r++)
		for (size_t c = 0; c < table->n_cols; c++)
			if (table->rows[r][c] && strlen(table->rows[r][c]) > width[c])
				width[c] = strlen(table->rows[r][c]);
	for (size_t r = 0; r < table->n_rows; r++) {
		for (size_t c = 0; c < table->n_cols; c++) {
			const char *cell = table->rows[r][c] ? table->rows[r][c] : "";

			if (c + 1 < table->n_cols)
				printf("%-*s  ", (int)width[c], cell);
			else
				printf("%s\n", cell);
			free(table->rows[r][c]);
		}
	}
	free(table->rows);
	table->rows = NULL;
	table->n_rows = table->cap_rows = 0;
}

/* ---- JSON helpers ---------------------------------------------------------------------- */

static struct json_object *field(struct json_object *object, const char *name)
{
	struct json_object *value = NULL;

	if (object)
		json_object_object_get_ex(object, name, &value);
	return value;
}

static const char *field_string(struct json_object *object, const char *name, const char *fallback)
{
	struct json_object *value = field(object, name);

	return value && json_object_is_type(value, json_type_string) ? json_object_get_string(value) : fallback;
}

static int64_t field_int(struct json_object *object, const char *name)
{
	return json_object_get_int64(field(object, name));
}

static bool field_bool(struct json_object *object, const char *name)
{
	return json_object_get_boolean(field(object, name));
}

static bool lookup_signal(const char *name, enum ev_signal *signal)
{
	return signal_lookup(name, signal) == 0;
}

static void amount(const char *signal_text, int64_t value, char *buf, size_t len)
{
	enum ev_signal signal;

	if (lookup_signal(signal_text, &signal))
		eventlog_format_amount(signal, value, buf, len);
	else
		snprintf(buf, len, "%lld", (long long)value);
}

static void format_duration(int64_t seconds, char *buf, size_t len)
{
	if (seconds >= 86400)
		snprintf(buf, len, "%lldd%lldh", (long long)(seconds / 86400), (long long)(seconds % 86400 / 3600));
	else if (seconds >= 3600)
		snprintf(buf, len, "%lldh%02lldm", (long long)(seconds / 3600), (long long)(seconds % 3600 / 60));
	else if (seconds >= 60)
		snprintf(buf, len, "%lldm%02llds", (long long)(seconds / 60), (long long)(seconds % 60));
	else
		snprintf(buf, len, "%llds", (long long)seconds);
}

/* ---- commands -------------------------------------------------------------------------- */

static void print_status(struct json_object *reply, const struct options *opts)
{
	struct json_object *signals = field(reply, "signals"), *thresholds = field(reply, "thresholds");
	struct json_object *conditions = field(reply, "conditions"), *decision = field(reply, "decision");
	struct json_object *bpf = field(reply, "bpf"), *guard = field(reply, "oom_guard");
	struct json_object *evictions = field(reply, "evictions");
	struct evictd_node_stats stats;
	struct table table = { .n_cols = 3 };
	char uptime[32], a[32], b[32];

	format_duration(field_int(reply, "uptime_seconds"), uptime, sizeof(uptime));
	printf("evictd %s, pid %lld, up %s, %s mode%s%s%s\n", field_string(reply, "version", "?"),
	       (long long)field_int(reply, "pid"), uptime, field_string(reply, "mode", "unknown"),
	       field(reply, "node_name") ? " on node " : "", field_string(reply, "node_name", ""),
	       field_bool(reply, "dry_run") ? ", DRY RUN (kills nothing)" : "");
	if (field_bool(bpf, "enabled"))
		printf("BPF:         on, %lld programs attached%s%s\n", (long long)field_int(bpf, "programs_attached"),
		       field(bpf, "pin_dir") ? ", maps pinned at " : "", field_string(bpf, "pin_dir", ""));
	else
		printf("BPF:         off (%s): polling and PSI only\n", field_string(bpf, "reason", "disabled"));
	printf("Evaluations: %lld, last at %s\n", (long long)field_int(reply, "evaluations"),
	       field_string(reply, "last_evaluation", "never"));
	printf("Evictions:   %lld killed, %lld failed, %lld refused (cgroup replaced), %lld in flight\n",
	       (long long)field_int(evictions, "killed"), (long long)field_int(evictions, "failed"),
	       (long long)field_int(evictions, "refused_stale"), (long long)field_int(evictions, "in_flight"));
	printf("Event loop:  longest iteration %.3f ms\n",
	       (double)field_int(reply, "loop_iteration_max_ns") / 1e6);
	if (field_bool(guard, "enabled")) {
		eventlog_format_amount(EV_SIGNAL_OOM_GUARD, field_int(guard, "mem_available"), a, sizeof(a));
		eventlog_format_amount(EV_SIGNAL_OOM_GUARD, field_int(guard, "mem_total"), b, sizeof(b));
		printf("OOM guard:   on, kernel MemAvailable %s of %s\n", a, b);
	} else {
		printf("OOM guard:   off\n");
	}
	putchar('\n');

	table_add(&table, "SIGNAL", "AVAILABLE", "CAPACITY");
	json_object_object_foreach(signals, name, value) {
		amount(name, field_int(value, "available"), a, sizeof(a));
		amount(name, field_int(value, "capacity"), b, sizeof(b));
		table_add(&table, name, a, b);
	}
	table_print(&table);
	putchar('\n');

	table.n_cols = 4;
	table_add(&table, "THRESHOLD", "RESOLVED", "GRACE", "STATE");
	for (size_t i = 0; thresholds && i < json_object_array_length(thresholds); i++) {
		struct json_object *threshold = json_object_array_get_idx(thresholds, i);
		const char *signal = field_string(threshold, "signal", "?");
		char text[160];

		snprintf(text, sizeof(text), "%s %s<%s%s", field_string(threshold, "kind", "?"), signal,
			 field_string(threshold, "value", "?"), field_bool(threshold, "derived") ? " (derived)" : "");
		amount(signal, field_int(threshold, "resolved"), a, sizeof(a));
		table_add(&table, text, a, field_string(threshold, "grace_period", "-"),
			  field_bool(threshold, "actionable") ? "ACTING" : field_bool(threshold, "met") ? "met" : "ok");
	}
	table_print(&table);
	putchar('\n');

	table.n_cols = 2;
	table_add(&table, "CONDITION", "STATUS");
	json_object_object_foreach(conditions, condition, status)
		table_add(&table, condition, json_object_get_boolean(status) ? "True" : "False");
	table_print(&table);
	putchar('\n');

	if (decision && !json_object_is_type(decision, json_type_null)) {
		struct json_object *victim = field(decision, "victim");
		char who[600] = "no victim";

		if (victim && !json_object_is_type(victim, json_type_null)) {
			const char *ns = field_string(victim, "namespace", "");

			snprintf(who, sizeof(who), "%s%s%s", ns, ns[0] ? "/" : "",
				 field_string(victim, "name", "")[0] ? field_string(victim, "name", "")
								    : field_string(victim, "cgroup", "?"));
		}
		printf("Decision:    %s %s -> %s (%s)%s\n", field_string(decision, "kind", "?"),
		       field_string(decision, "signal", "?"), who, field_string(decision, "reason", ""),
		       field_bool(decision, "dry_run") ? " [dry run]" : "");
	} else {
		printf("Decision:    none (no threshold is acted on)\n");
	}
	/* The pinned maps, read directly: counters that outlive daemon restarts. */
	if (read_node_stats(field_string(bpf, "pin_dir", opts->pin_dir), &stats) == 0)
		print_node_stats(&stats);
}

static void print_pods(struct json_object *reply)
{
	struct json_object *pods = field(reply, "pods");
	const char *signal = field_string(reply, "signal", "?");
	struct table table = { .n_cols = 8 };
	size_t n = pods ? json_object_array_length(pods) : 0;

	printf("Ranking for %s (%s); usage and request in %s\n", signal, field_string(reply, "signal_reason", ""),
	       field_string(reply, "unit", "?"));
	if (!field_bool(reply, "cgroup_tree")) {
		printf("No cgroup v2 tree: evictd decides and reports only; nothing to rank.\n");
		return;
	}
	if (!n) {
		printf("No pods or workloads found.\n");
		return;
	}
	table_add(&table, "RANK", "POD", "QOS", "PRIORITY", "USAGE", "REQUEST", "MARK", "REASON");
	for (size_t i = 0; i < n; i++) {
		struct json_object *pod = json_object_array_get_idx(pods, i);
		const char *ns = field_string(pod, "namespace", ""), *name = field_string(pod, "name", "");
		char rank[16], who[600], priority[16], usage_text[32], request_text[32];

		snprintf(rank, sizeof(rank), "%lld", (long long)field_int(pod, "rank"));
		snprintf(who, sizeof(who), "%s%s%s", ns, ns[0] ? "/" : "", name[0] ? name : field_string(pod, "cgroup", "?"));
		snprintf(priority, sizeof(priority), "%lld", (long long)field_int(pod, "priority"));
		amount(signal, field_int(pod, "usage"), usage_text, sizeof(usage_text));
		amount(signal, field_int(pod, "request"), request_text, sizeof(request_text));
		table_add(&table, rank, who, field_string(pod, "qos", "?"), priority, usage_text, request_text,
			  field_bool(pod, "victim") ? "VICTIM" : field_bool(pod, "never_evict") ? "NEVER" : "",
			  field_string(pod, "reason", ""));
	}
	table_print(&table);
}

static void print_events(struct json_object *reply)
{
	struct json_object *events = field(reply, "events");
	struct table table = { .n_cols = 8 };
	size_t n = events ? json_object_array_length(events) : 0;

	if (!n) {
		printf("No decisions yet.\n");
		return;
	}
	table_add(&table, "TIME", "SIGNAL", "KIND", "VALUE", "THRESHOLD", "ACTION", "LATENCY", "VICTIM");
	for (size_t i = 0; i < n; i++) {
		struct json_object *event = json_object_array_get_idx(events, i);
		struct json_object *victim = field(event, "victim"), *latency = field(event, "latency_ns");
		const char *signal = field_string(event, "signal", "?");
		char value[32], threshold[32], latency_text[32] = "-", who[600] = "-";

		amount(signal, field_int(event, "value"), value, sizeof(value));
		amount(signal, field_int(event, "threshold"), threshold, sizeof(threshold));
		if (latency && !json_object_is_type(latency, json_type_null))
			snprintf(latency_text, sizeof(latency_text), "%.1fms", (double)json_object_get_int64(latency) / 1e6);
		if (victim && !json_object_is_type(victim, json_type_null))
			snprintf(who, sizeof(who), "%s", field_string(victim, "name", "?"));
		if (field_bool(event, "oom_guard"))
			strncat(who, " [oom-guard]", sizeof(who) - strlen(who) - 1);
		table_add(&table, field_string(event, "time", "?"), signal, field_string(event, "kind", "?"), value,
			  threshold, field_string(event, "action", "?"), latency_text, who);
	}
	table_print(&table);
}

int main(int argc, char **argv)
{
	struct json_object *reply_doc, *request_doc;
	struct options opts;
	char *reply = NULL, *line;
	int ret;

	ret = parse_args(argc, argv, &opts);
	if (ret)
		return ret;
	request_doc = json_object_new_object();
	json_object_object_add(request_doc, "command", json_object_new_string(opts.command));
	if (opts.signal)
		json_object_object_add(request_doc, "signal", json_object_new_string(opts.signal));
	if (asprintf(&line, "%s\n", json_object_to_json_string_ext(request_doc, JSON_C_TO_STRING_PLAIN)) < 0)
		return EXIT_RUNTIME;
	json_object_put(request_doc);

	ret = request(&opts, line, &reply);
	free(line);
	if (ret)
		return EXIT_RUNTIME;
	reply_doc = json_tokener_parse(reply);
	if (!reply_doc || !json_object_is_type(reply_doc, json_type_object)) {
		fprintf(stderr, "evictctl: %s answered something that is not JSON: %.200s\n", opts.socket_path, reply);
		free(reply);
		json_object_put(reply_doc);
		return EXIT_RUNTIME;
	}
	free(reply);
	if (!field_bool(reply_doc, "ok")) {
		fprintf(stderr, "evictctl: evictd: %s\n", field_string(reply_doc, "error", "request failed"));
		json_object_put(reply_doc);
		return EXIT_RUNTIME;
	}
	if (opts.json)
		puts(json_object_to_json_string_ext(reply_doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	else if (!strcmp(opts.command, "status"))
		print_status(reply_doc, &opts);
	else if (!strcmp(opts.command, "pods"))
		print_pods(reply_doc);
	else
		print_events(reply_doc);
	json_object_put(reply_doc);
	return fflush(stdout) ? EXIT_RUNTIME : 0;
}
