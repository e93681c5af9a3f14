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
#include <time.h>
#include <sys/un.h>
#include <unistd.h>

#include "ops/control.h"
#include "ops/ctl_view.h"
#include "ops/textsafe.h"
#include "evictd.h"
#include "ops/eventlog.h"
#include "signals/signals.h"
#include "version.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define DEFAULT_TIMEOUT_S 15
/* The largest reply read: a pods reply for 1,000 pods is about 1 MiB; anything past this is
 * not evictd (or a broken one) and is cut off rather than read into memory without end. */
#define REPLY_MAX (16u << 20)

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
			printf("evictctl %s\n", EVICTD_VERSION);
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

/* Monotonic now in ms. */
static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Send one request line, read the reply to EOF: at most REPLY_MAX bytes, all within the
 * timeout (a peer that trickles a byte now and then does not hold evictctl forever). Returns
 * 0 and a malloc'd reply, or negative errno after a message. */
static int request(const struct options *opts, const char *line, char **reply)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval timeout = { .tv_sec = opts->timeout_s };
	size_t len = 0, cap = 65536;
	int64_t deadline;
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
	deadline = now_ms() + (int64_t)opts->timeout_s * 1000;
	for (;;) {
		int64_t left = deadline - now_ms();
		ssize_t n = -1;

		if (len > REPLY_MAX) {
			fprintf(stderr, "evictctl: the reply from %s is larger than %u MiB: not evictd's, "
				"or evictd is broken\n", opts->socket_path, REPLY_MAX >> 20);
			free(buf);
			close(fd);
			return -EFBIG;
		}
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
		errno = ETIMEDOUT;
		if (left > 0) {
			/* At most one byte past the bound: enough to tell a reply too large. */
			size_t want = cap - 1 - len < REPLY_MAX + 1 - len ? cap - 1 - len :
									  REPLY_MAX + 1 - len;

			timeout = (struct timeval){ .tv_sec = left / 1000, .tv_usec = left % 1000 * 1000 };
			setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
			n = recv(fd, buf + len, want, 0);
			if (n < 0 && errno == EINTR)
				continue;
		}
		if (n < 0) {
			int err = errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;

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

static bool lookup_signal(const char *name, enum ev_signal *signal)
{
	return signal_lookup(name, signal) == 0;
}

int main(int argc, char **argv)
{
	struct json_object *reply_doc, *request_doc;
	struct options opts;
	char *reply = NULL, *line, err[1200];
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
	/* The reply is read as untrusted: ops/ctl_view.h. */
	ret = ctl_view_parse(reply, &reply_doc, err, sizeof(err));
	free(reply);
	if (ret) {
		if (ret == -EPROTO)
			fprintf(stderr, "evictctl: %s: %s\n", opts.socket_path, err);
		else
			fprintf(stderr, "evictctl: %s\n", err);
		return EXIT_RUNTIME;
	}
	if (opts.json) {
		/* Valid UTF-8 and no raw control characters: json-c escapes those (ops/textsafe.h). */
		char *text = textsafe_json_utf8(json_object_to_json_string_ext(
			reply_doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));

		if (text)
			puts(text);
		free(text);
	} else if (ctl_view_render(stdout, opts.command, reply_doc, err, sizeof(err))) {
		fprintf(stderr, "evictctl: %s: %s\n", opts.socket_path, err);
		json_object_put(reply_doc);
		return EXIT_RUNTIME;
	} else if (!strcmp(opts.command, "status")) {
		/* The pinned maps, read directly: counters that outlive daemon restarts. */
		struct evictd_node_stats stats;

		if (read_node_stats(ctl_view_pin_dir(reply_doc, opts.pin_dir), &stats) == 0)
			print_node_stats(&stats);
	}
	json_object_put(reply_doc);
	return fflush(stdout) ? EXIT_RUNTIME : 0;
}
