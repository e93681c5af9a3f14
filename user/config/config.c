// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* One option table drives the flags, the KubeletConfiguration keys and evictd's own YAML
 * keys, so a setting has one parser and one help line wherever it comes from. */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "config/config.h"
#include "ops/metrics.h"
#include "sys/log.h"
#include "core/quantity.h"

#define EVICTD_VERSION "0.1.0"
#define KUBELET_API_VERSION "kubelet.config.k8s.io/v1beta1"
#define EVICTD_API_VERSION "evictd.io/v1alpha1"

enum option_kind {
	OPT_THRESHOLD_MAP,	/* flag "sig<q,sig<q"; YAML map signal: q */
	OPT_SIGNAL_MAP,		/* flag "sig=v,sig=v"; YAML map signal: v */
	OPT_DURATION,		/* Go duration */
	OPT_SECONDS,		/* whole seconds, >= 0 */
	OPT_PRIORITY_LIST,	/* shutdownGracePeriodByPodPriority */
	OPT_PATH,		/* a char array of size bytes, NUL included */
	OPT_NODE_NAME,		/* OPT_PATH that must be a DNS-1123 subdomain */
	OPT_STRING_LIST,	/* repeatable; a struct string_list */
	OPT_BOOL,
	OPT_OUTPUT,
	OPT_LOG_LEVEL,
	OPT_OOM_GUARD,		/* threshold value or "off" */
	OPT_QUANTITY,		/* a quantity stored in a threshold_value's cap */
	OPT_CONFIG_FILE,
	OPT_HELP,
	OPT_VERSION,
};

struct option_spec {
	const char *flag;		/* long option, without "--" */
	const char *kubelet_key;	/* KubeletConfiguration field, or NULL */
	const char *evictd_key;		/* EvictdConfiguration field, or NULL */
	enum option_kind kind;
	size_t offset;			/* into struct evictd_config */
	size_t size;			/* of that field: no setter writes past it */
	const char *arg;		/* argument name for --help; NULL for bools */
	const char *help;
};

#define sizeof_field(type, member) sizeof(((type *)0)->member)
/* Every row names its field once, so offset and size cannot disagree (xdp-tools style). */
#define FIELD(member) offsetof(struct evictd_config, member), \
		      sizeof_field(struct evictd_config, member)
#define NO_FIELD 0, 0

static const struct option_spec option_table[] = {
	{ "config", NULL, NULL, OPT_CONFIG_FILE, FIELD(config_files), "FILE",
	  "KubeletConfiguration and/or EvictdConfiguration YAML (repeatable; flags override)" },
	{ "eviction-hard", "evictionHard", NULL, OPT_THRESHOLD_MAP, FIELD(eviction_hard), "LIST",
	  "hard thresholds, e.g. memory.available<500Mi,nodefs.available<10%" },
	{ "eviction-soft", "evictionSoft", NULL, OPT_THRESHOLD_MAP, FIELD(eviction_soft), "LIST",
	  "soft thresholds, e.g. memory.available<1.5Gi (each needs a grace period)" },
	{ "eviction-soft-grace-period", "evictionSoftGracePeriod", NULL, OPT_SIGNAL_MAP,
	  FIELD(eviction_soft_grace_period), "LIST", "e.g. memory.available=1m30s" },
	{ "eviction-max-pod-grace-period", "evictionMaxPodGracePeriod", NULL, OPT_SECONDS,
	  FIELD(max_pod_grace_period_s), "SECONDS",
	  "max pod termination grace for soft evictions (0: kill at once)" },
	{ "eviction-minimum-reclaim", "evictionMinimumReclaim", NULL, OPT_SIGNAL_MAP,
	  FIELD(eviction_minimum_reclaim), "LIST", "e.g. nodefs.available=500Mi" },
	{ "eviction-pressure-transition-period", "evictionPressureTransitionPeriod", NULL,
	  OPT_DURATION, FIELD(pressure_transition_period_ns), "DURATION",
	  "how long a pressure condition stays true after its last threshold crossing (5m)" },
	{ "housekeeping-interval", "housekeepingInterval", "housekeepingInterval", OPT_DURATION,
	  FIELD(housekeeping_interval_ns), "DURATION", "backstop poll interval (10s)" },
	{ "shutdown-grace-period", "shutdownGracePeriod", NULL, OPT_DURATION,
	  FIELD(shutdown_grace_period_ns), "DURATION", "total graceful node shutdown delay (0: off)" },
	{ "shutdown-grace-period-critical-pods", "shutdownGracePeriodCriticalPods", NULL,
	  OPT_DURATION, FIELD(shutdown_grace_period_critical_pods_ns), "DURATION",
	  "part of the shutdown delay reserved for critical pods" },
	{ "shutdown-grace-period-by-pod-priority", "shutdownGracePeriodByPodPriority", NULL,
	  OPT_PRIORITY_LIST, FIELD(shutdown_groups), "LIST", "e.g. 100000=10,1000=20,0=30 (priority=seconds)" },
	{ "root", NULL, "root", OPT_PATH, FIELD(root), "DIR",
	  "prefix for every /proc, /sys path (tests, containers)" },
	{ "root-dir", NULL, "kubeletRootDir", OPT_PATH, FIELD(kubelet_dir), "DIR",
	  "kubelet root dir on nodefs (/var/lib/kubelet)" },
	{ "imagefs-dir", NULL, "imagefsDir", OPT_PATH, FIELD(imagefs_dir), "DIR",
	  "container runtime image dir (/var/lib/containerd)" },
	{ "containerfs-dir", NULL, "containerfsDir", OPT_PATH, FIELD(containerfs_dir), "DIR",
	  "writable-layer dir, when split from images (default: the imagefs dir)" },
	{ "bpf-pin-dir", NULL, "bpfPinDir", OPT_PATH, FIELD(bpf_pin_dir), "DIR",
	  "where maps are pinned (/sys/fs/bpf/evictd)" },
	{ "state-dir", NULL, "stateDir", OPT_PATH, FIELD(state_dir), "DIR",
	  "persisted state, e.g. graceful shutdown times (/var/lib/evictd)" },
	{ "logind-dropin-dir", NULL, "logindDropinDir", OPT_PATH, FIELD(logind_dropin_dir), "DIR",
	  "where a drop-in raising logind's InhibitDelayMaxSec goes (/etc/systemd/logind.conf.d)" },
	{ "workload-root", NULL, "workloadRoots", OPT_STRING_LIST, FIELD(workload_roots), "DIR",
	  "standalone mode: child cgroups of DIR are the workloads (repeatable)" },
	{ "pods-file", NULL, "podsFile", OPT_PATH, FIELD(pods_file), "FILE",
	  "pod metadata from a PodList JSON (kubectl get pods -o json), re-read when it changes" },
	{ "node-name", NULL, "nodeName", OPT_NODE_NAME, FIELD(node_name), "NAME",
	  "only pods bound to this node (default: $NODE_NAME, else the hostname)" },
	{ "cgroup-root", "cgroupRoot", "cgroupRoot", OPT_PATH, FIELD(kubelet_cgroup_root), "PATH",
	  "the kubelet's --cgroup-root, where kubepods lives (/)" },
	{ "memory-reclaim-before-kill", NULL, "memoryReclaimBeforeKill", OPT_BOOL,
	  FIELD(memory_reclaim_before_kill), NULL,
	  "write memory.reclaim on the top candidates before killing (cgroup v2, Linux >= 5.19)" },
	{ "reclaim-command", NULL, "reclaimCommands", OPT_STRING_LIST, FIELD(reclaim_commands), "CMD",
	  "DiskPressure node-level reclaim step, run with sh -c (repeatable; default: crictl rm of "
	  "exited containers, then crictl rmi --prune)" },
	{ "kill-timeout", NULL, "killTimeout", OPT_DURATION, FIELD(kill_timeout_ns), "DURATION",
	  "how long to wait for a killed cgroup to empty before logging a timeout (10s)" },
	{ "kube-api", NULL, "kubeAPI", OPT_PATH, FIELD(kube_api), "auto|on|off",
	  "report evictions, pressure taints and shutdown to the API server (auto: in a cluster)" },
	{ "kube-api-server", NULL, "kubeAPIServer", OPT_PATH, FIELD(kube_api_server), "URL",
	  "the API server (https://...); default: in-cluster KUBERNETES_SERVICE_HOST" },
	{ "kube-token-file", NULL, "kubeTokenFile", OPT_PATH, FIELD(kube_token_file), "FILE",
	  "bearer token (default: the service account's)" },
	{ "kube-ca-file", NULL, "kubeCAFile", OPT_PATH, FIELD(kube_ca_file), "FILE",
	  "CA bundle for the API server (default: the service account's ca.crt)" },
	{ "kube-pods-refresh", NULL, "kubePodsRefreshPeriod", OPT_DURATION, FIELD(kube_pods_refresh_ns),
	  "DURATION", "how often pod metadata is listed from the API server (10s)" },
	{ "kube-pressure-taints", NULL, "kubePressureTaints", OPT_BOOL, FIELD(kube_pressure_taints), NULL,
	  "taint the node evictd.io/<resource>-pressure:NoSchedule while a condition holds (true)" },
	{ "taint-out-of-service-on-shutdown", NULL, "taintOutOfServiceOnShutdown", OPT_BOOL,
	  FIELD(taint_out_of_service_on_shutdown), NULL,
	  "after a graceful shutdown emptied every pod, taint node.kubernetes.io/out-of-service "
	  "(removed at the next start; see the man page for the risks)" },
	{ "dry-run", NULL, "dryRun", OPT_BOOL, FIELD(dry_run), NULL,
	  "decide and report everything, kill nothing" },
	{ "once", NULL, NULL, OPT_BOOL, FIELD(once), NULL, "one round: read, evaluate, act (unless --dry-run), print, exit" },
	{ "validate", NULL, NULL, OPT_BOOL, FIELD(validate), NULL,
	  "print the effective configuration and exit (2 when invalid)" },
	{ "no-bpf", NULL, "noBpf", OPT_BOOL, FIELD(no_bpf), NULL, "run on polling and PSI alone" },
	{ "no-psi", NULL, "noPsi", OPT_BOOL, FIELD(no_psi), NULL,
	  "no PSI trigger (with --no-bpf: a plain poller, as the kubelet is)" },
	{ "no-page-cache-bpf", NULL, "noPageCacheBpf", OPT_BOOL, FIELD(no_page_cache_bpf), NULL,
	  "skip the per-folio page-cache counters (cheaper on page-cache-heavy nodes)" },
	{ "daemonset-last", NULL, "daemonSetLast", OPT_BOOL, FIELD(daemonset_last), NULL,
	  "rank DaemonSet pods after all others (true)" },
	{ "oom-guard", NULL, "oomGuard", OPT_OOM_GUARD, FIELD(oom_guard_value), "VALUE|off",
	  "evict when MemAvailable falls below this (10%, capped by --oom-guard-max)" },
	{ "oom-guard-max", NULL, "oomGuardMax", OPT_QUANTITY, FIELD(oom_guard_value), "QUANTITY",
	  "upper bound of a percentage OOM guard (1Gi; 0: none)" },
	{ "output", NULL, "output", OPT_OUTPUT, FIELD(output), "text|json", "output of --once" },
	{ "metrics-address", NULL, "metricsAddress", OPT_PATH, FIELD(metrics_address), "HOST:PORT",
	  "serve Prometheus /metrics and /healthz here (127.0.0.1:9808; [::1]:9808; off)" },
	{ "event-log", NULL, "eventLog", OPT_PATH, FIELD(event_log), "FILE",
	  "append the decision log (JSON lines) to FILE (-: stdout; off: none); reopened on SIGHUP" },
	{ "control-socket", NULL, "controlSocket", OPT_PATH, FIELD(control_socket), "PATH",
	  "evictctl's UNIX socket (/run/evictd/evictd.sock)" },
	{ "log-level", NULL, "logLevel", OPT_LOG_LEVEL, FIELD(log_level), "LEVEL",
	  "error, warning, info or debug" },
	{ "help", NULL, NULL, OPT_HELP, NO_FIELD, NULL, "show this help" },
	{ "version", NULL, NULL, OPT_VERSION, NO_FIELD, NULL, "show the version" },
};

#define N_OPTIONS (sizeof(option_table) / sizeof(option_table[0]))

/* A value as echoed in a message: at most ECHO_MAX bytes, control characters as '?', so a
 * 128 KiB or multi-line value still makes one short line. Returned by value: the text lives
 * until the end of the full expression, long enough for a log call. */
#define ECHO_MAX 64
struct echo {
	char text[ECHO_MAX + sizeof("...")];
};

static struct echo echo(const char *value)
{
	struct echo out;
	size_t i;

	for (i = 0; value[i] && i < ECHO_MAX; i++)
		out.text[i] = (unsigned char)value[i] < 0x20 || value[i] == 0x7f ? '?' : value[i];
	strcpy(out.text + i, value[i] ? "..." : "");
	return out;
}

void config_init_defaults(struct evictd_config *config)
{
	memset(config, 0, sizeof(*config));
	config->pressure_transition_period_ns = 5LL * 60 * 1000000000;
	config->housekeeping_interval_ns = 10LL * 1000000000;
	strcpy(config->kubelet_dir, "/var/lib/kubelet");
	strcpy(config->imagefs_dir, "/var/lib/containerd");
	strcpy(config->bpf_pin_dir, "/sys/fs/bpf/evictd");
	strcpy(config->state_dir, "/var/lib/evictd");
	strcpy(config->logind_dropin_dir, "/etc/systemd/logind.conf.d");
	strcpy(config->metrics_address, "127.0.0.1:9808");
	strcpy(config->event_log, "-");
	strcpy(config->control_socket, "/run/evictd/evictd.sock");
	config->daemonset_last = true;
	config->oom_guard = true;
	config->oom_guard_value.is_percentage = true;
	config->oom_guard_value.percentage = 0.10f;
	config->oom_guard_value.max_quantity = 1LL << 30;
	strcpy(config->oom_guard_value.text, "10%");
	config->output = OUTPUT_TEXT;
	config->log_level = LOGLEVEL_INFO;
	config->kill_timeout_ns = 10LL * 1000000000;
	strcpy(config->kube_api, "auto");
	config->kube_pods_refresh_ns = 10LL * 1000000000;
	config->kube_pressure_taints = true;
}

static const struct option_spec *option_by_flag(const char *flag)
{
	for (size_t i = 0; i < N_OPTIONS; i++)
		if (strcmp(option_table[i].flag, flag) == 0)
			return &option_table[i];
	return NULL;
}

static char *trim(char *text)
{
	char *end;

	while (*text == ' ' || *text == '\t')
		text++;
	end = text + strlen(text);
	while (end > text && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	return text;
}

/* key is where the value came from ("--eviction-hard" or "evictionHard"). */
static int map_put(struct signal_text_map *map, const char *key, const char *signal_text,
		   const char *value)
{
	enum ev_signal signal;

	if (signal_from_name(signal_text, &signal)) {
		log_err("%s: unknown signal \"%s\" (valid signals: %s)", key, echo(signal_text).text,
			signal_valid_names());
		return -EINVAL;
	}
	if (strlen(value) >= sizeof(map->text[0])) {
		log_err("%s: %s=\"%s\": expected a value of at most %zu bytes", key, signal_text,
			echo(value).text, sizeof(map->text[0]) - 1);
		return -EINVAL;
	}
	if (map->present[signal])
		log_warn("%s: %s given twice, the last value (%s) wins", key, signal_text, echo(value).text);
	map->present[signal] = true;
	strcpy(map->text[signal], value);
	return 0;
}

static void map_begin(struct signal_text_map *map, const char *origin)
{
	memset(map, 0, sizeof(*map));
	map->set = true;
	snprintf(map->origin, sizeof(map->origin), "%s", origin);
}

/* Flag form of a map: entries separated by ',', key and value by sep ('<' or '='). */
static int map_from_flag(struct signal_text_map *map, const char *key, const char *value, char sep)
{
	char *copy = strdup(value), *saveptr = NULL;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	map_begin(map, key);
	for (char *item = strtok_r(copy, ",", &saveptr); item; item = strtok_r(NULL, ",", &saveptr)) {
		char *split = strchr(item, sep);

		item = trim(item);
		if (*item == '\0')
			continue;
		if (!split) {
			log_err("%s: \"%s\": expected <signal>%c<value>, e.g. %s", key, echo(item).text, sep,
				sep == '<' ? "memory.available<500Mi" : "memory.available=1m30s");
			err = -EINVAL;
			continue;
		}
		*split = '\0';
		if (map_put(map, key, trim(item), trim(split + 1)))
			err = -EINVAL;
	}
	free(copy);
	return err;
}

static int parse_bool(const char *key, const char *value, bool *out)
{
	if (!value || !strcasecmp(value, "true") || !strcmp(value, "1") || !strcasecmp(value, "yes")) {
		*out = true;
		return 0;
	}
	if (!strcasecmp(value, "false") || !strcmp(value, "0") || !strcasecmp(value, "no")) {
		*out = false;
		return 0;
	}
	log_err("%s: \"%s\": expected true or false", key, echo(value).text);
	return -EINVAL;
}

static int parse_seconds(const char *key, const char *value, int64_t *out)
{
	char *end;
	long long seconds;

	errno = 0;
	seconds = strtoll(value, &end, 10);
	if (errno || end == value || *end != '\0' || seconds < 0 || seconds > INT32_MAX) {
		log_err("%s: \"%s\": expected a whole number of seconds >= 0", key, echo(value).text);
		return -EINVAL;
	}
	*out = seconds;
	return 0;
}

static int parse_duration(const char *key, const char *value, int64_t *out)
{
	int64_t ns;

	if (duration_parse(value, &ns) || ns < 0) {
		log_err("%s: \"%s\": expected a non-negative duration such as 30s, 1m30s, 500ms or 2h",
			key, echo(value).text);
		return -EINVAL;
	}
	*out = ns;
	return 0;
}

static int shutdown_group_add(struct evictd_config *config, const char *key, const char *priority_text,
			      const char *seconds_text)
{
	struct shutdown_group *group;
	char *end;
	long long priority;
	int64_t seconds;

	if (config->n_shutdown_groups >= CONFIG_MAX_SHUTDOWN_GROUPS) {
		log_err("%s: more than %d priority groups", key, CONFIG_MAX_SHUTDOWN_GROUPS);
		return -E2BIG;
	}
	errno = 0;
	priority = strtoll(priority_text, &end, 10);
	if (errno || end == priority_text || *end != '\0' || priority < INT32_MIN || priority > INT32_MAX) {
		log_err("%s: priority \"%s\": expected a 32-bit integer", key, echo(priority_text).text);
		return -EINVAL;
	}
	if (parse_seconds(key, seconds_text, &seconds))
		return -EINVAL;
	group = &config->shutdown_groups[config->n_shutdown_groups++];
	group->priority = (int32_t)priority;
	group->grace_period_s = seconds;
	return 0;
}

static int priority_list_from_flag(struct evictd_config *config, const char *key, const char *value)
{
	char *copy = strdup(value), *saveptr = NULL;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	config->n_shutdown_groups = 0;
	for (char *item = strtok_r(copy, ",", &saveptr); item; item = strtok_r(NULL, ",", &saveptr)) {
		char *split = strchr(item, '=');

		if (!split) {
			log_err("%s: \"%s\": expected <priority>=<seconds>, e.g. 100000=10", key, echo(item).text);
			err = -EINVAL;
			continue;
		}
		*split = '\0';
		if (shutdown_group_add(config, key, trim(item), trim(split + 1)))
			err = -EINVAL;
	}
	free(copy);
	return err;
}

static int parse_guard(struct evictd_config *config, const char *key, const char *value)
{
	struct threshold_value parsed;
	int64_t cap = config->oom_guard_value.max_quantity;
	bool disabled;

	if (!strcasecmp(value, "off") || !strcasecmp(value, "false") || !strcmp(value, "0")) {
		config->oom_guard = false;
		return 0;
	}
	if (threshold_value_parse(value, &parsed, &disabled) || disabled) {
		log_err("%s: \"%s\": expected a quantity (200Mi), a percentage of memory (10%%) or off",
			key, echo(value).text);
		return -EINVAL;
	}
	parsed.max_quantity = cap;
	config->oom_guard = true;
	config->oom_guard_value = parsed;
	return 0;
}

/* Copy value into a char array of size bytes, or refuse it whole: a value that does not fit
 * is a configuration error, never truncated (a truncated path names another file). */
static int set_string(const char *key, const struct option_spec *spec, const char *value,
		      char *field, size_t size)
{
	size_t len = strlen(value);

	if (len >= size) {
		log_err("%s: \"%s\" (%zu bytes): expected %s of at most %zu bytes", key,
			echo(value).text, len, spec->arg ? spec->arg : "a value", size - 1);
		return -ENAMETOOLONG;
	}
	memcpy(field, value, len + 1);
	return 0;
}

bool config_is_dns1123_subdomain(const char *name)
{
	size_t len = strlen(name);

	/* apimachinery validation.IsDNS1123Subdomain: at most 253 characters matching
	 * [a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)* -- every label
	 * starts and ends alphanumeric, but unlike a DNS-1123 label is not limited to 63. */
	if (len == 0 || len > 253)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		bool label_edge = i == 0 || i == len - 1 || name[i - 1] == '.' || name[i + 1] == '.';

		if (c == '.' ? label_edge : !(alnum || (c == '-' && !label_edge)))
			return false;
	}
	return true;
}

/* The node name selects pods by spec.nodeName and names the Node object: Kubernetes only
 * accepts a DNS-1123 subdomain there. "" keeps the default ($NODE_NAME, the hostname). */
static int set_node_name(const char *key, const struct option_spec *spec, const char *value,
			 char *field, size_t size)
{
	if (value[0] && !config_is_dns1123_subdomain(value)) {
		log_err("%s: \"%s\" (%zu bytes): expected a DNS-1123 subdomain (at most 253 of a-z, "
			"0-9, '-' and '.', starting and ending alphanumeric)", key, echo(value).text,
			strlen(value));
		return -EINVAL;
	}
	return set_string(key, spec, value, field, size);
}

/* Apply a scalar (or repeated) value to an option. key names the source for messages. */
static int apply_scalar(struct evictd_config *config, const struct option_spec *spec,
			const char *key, const char *value)
{
	char *field = (char *)config + spec->offset;

	if (!value && spec->kind != OPT_BOOL && spec->kind != OPT_HELP && spec->kind != OPT_VERSION) {
		log_err("%s: a value is required", key);
		return -EINVAL;
	}
	switch (spec->kind) {
	case OPT_THRESHOLD_MAP:
		return map_from_flag((struct signal_text_map *)field, key, value, '<');
	case OPT_SIGNAL_MAP:
		return map_from_flag((struct signal_text_map *)field, key, value, '=');
	case OPT_DURATION:
		return parse_duration(key, value, (int64_t *)field);
	case OPT_SECONDS:
		return parse_seconds(key, value, (int64_t *)field);
	case OPT_PRIORITY_LIST:
		return priority_list_from_flag(config, key, value);
	case OPT_PATH:
		return set_string(key, spec, value, field, spec->size);
	case OPT_NODE_NAME:
		return set_node_name(key, spec, value, field, spec->size);
	case OPT_STRING_LIST: {
		struct string_list *list = (struct string_list *)field;
		int err;

		if (list->n >= CONFIG_MAX_LIST) {
			log_err("%s: \"%s\": expected at most %d values", key, echo(value).text,
				CONFIG_MAX_LIST);
			return -E2BIG;
		}
		err = set_string(key, spec, value, list->items[list->n], sizeof(list->items[0]));
		if (!err)
			list->n++;
		return err;
	}
	case OPT_BOOL:
		return parse_bool(key, value, (bool *)field);
	case OPT_OUTPUT:
		if (!strcmp(value, "text"))
			config->output = OUTPUT_TEXT;
		else if (!strcmp(value, "json"))
			config->output = OUTPUT_JSON;
		else {
			log_err("%s: \"%s\": expected text or json", key, echo(value).text);
			return -EINVAL;
		}
		return 0;
	case OPT_LOG_LEVEL: {
		static const struct { const char *name; int level; } levels[] = {
			{ "error", LOGLEVEL_ERR }, { "warning", LOGLEVEL_WARN },
			{ "info", LOGLEVEL_INFO }, { "debug", LOGLEVEL_DEBUG },
		};
		for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
			if (!strcmp(value, levels[i].name)) {
				config->log_level = levels[i].level;
				return 0;
			}
		log_err("%s: \"%s\": expected error, warning, info or debug", key, echo(value).text);
		return -EINVAL;
	}
	case OPT_OOM_GUARD:
		return parse_guard(config, key, value);
	case OPT_QUANTITY: {
		int64_t quantity;

		if (quantity_parse(value, &quantity) || quantity < 0) {
			log_err("%s: \"%s\": expected a non-negative quantity such as 1Gi", key, echo(value).text);
			return -EINVAL;
		}
		config->oom_guard_value.max_quantity = quantity;
		return 0;
	}
	case OPT_CONFIG_FILE: {
		char (*files)[PATH_MAX] = (char (*)[PATH_MAX])field;

		if (config->n_config_files >= spec->size / sizeof(files[0])) {
			log_err("%s: \"%s\": expected at most %zu files", key, echo(value).text,
				spec->size / sizeof(files[0]));
			return -E2BIG;
		}
		if (set_string(key, spec, value, files[config->n_config_files], sizeof(files[0])))
			return -ENAMETOOLONG;
		config->n_config_files++;
		return 0;
	}
	case OPT_HELP:
	case OPT_VERSION:
		return 0;
	}
	return -EINVAL;
}

int config_apply_flag(struct evictd_config *config, const char *flag, const char *value)
{
	const struct option_spec *spec = option_by_flag(flag);
	char key[96];

	if (!spec) {
		log_err("unknown option --%s (see --help)", flag);
		return -EINVAL;
	}
	snprintf(key, sizeof(key), "--%s", spec->flag);
	return apply_scalar(config, spec, key, value);
}

/* ---- YAML ---- */

struct yaml_ctx {
	yaml_document_t *doc;
	const char *name;	/* file name for messages */
	int doc_index;
};

static const char *scalar_of(yaml_node_t *node)
{
	return node && node->type == YAML_SCALAR_NODE ? (const char *)node->data.scalar.value : NULL;
}

static const char *node_kind_name(yaml_node_t *node)
{
	if (!node)
		return "nothing";
	switch (node->type) {
	case YAML_SCALAR_NODE: return "a scalar";
	case YAML_SEQUENCE_NODE: return "a list";
	case YAML_MAPPING_NODE: return "a map";
	default: return "nothing";
	}
}

static int yaml_apply_map(struct yaml_ctx *ctx, struct signal_text_map *map, const char *key,
			  yaml_node_t *value)
{
	int err = 0;

	if (value->type != YAML_MAPPING_NODE) {
		log_err("%s: %s: expected a map of signal: value, got %s", ctx->name, key,
			node_kind_name(value));
		return -EINVAL;
	}
	map_begin(map, key);
	for (yaml_node_pair_t *pair = value->data.mapping.pairs.start;
	     pair < value->data.mapping.pairs.top; pair++) {
		const char *signal = scalar_of(yaml_document_get_node(ctx->doc, pair->key));
		const char *text = scalar_of(yaml_document_get_node(ctx->doc, pair->value));

		if (!signal || !text) {
			log_err("%s: %s: entries must be signal: value scalars", ctx->name, key);
			err = -EINVAL;
			continue;
		}
		if (map_put(map, key, signal, text))
			err = -EINVAL;
	}
	return err;
}

static int yaml_apply_priority_list(struct yaml_ctx *ctx, struct evictd_config *config,
				    const char *key, yaml_node_t *value)
{
	int err = 0;

	if (value->type != YAML_SEQUENCE_NODE) {
		log_err("%s: %s: expected a list of {priority, shutdownGracePeriodSeconds}, got %s",
			ctx->name, key, node_kind_name(value));
		return -EINVAL;
	}
	config->n_shutdown_groups = 0;
	for (yaml_node_item_t *item = value->data.sequence.items.start;
	     item < value->data.sequence.items.top; item++) {
		yaml_node_t *entry = yaml_document_get_node(ctx->doc, *item);
		const char *priority = NULL, *seconds = NULL;

		if (!entry || entry->type != YAML_MAPPING_NODE) {
			log_err("%s: %s: each entry must be a map", ctx->name, key);
			err = -EINVAL;
			continue;
		}
		for (yaml_node_pair_t *pair = entry->data.mapping.pairs.start;
		     pair < entry->data.mapping.pairs.top; pair++) {
			const char *field = scalar_of(yaml_document_get_node(ctx->doc, pair->key));
			const char *text = scalar_of(yaml_document_get_node(ctx->doc, pair->value));

			if (field && !strcmp(field, "priority"))
				priority = text;
			else if (field && !strcmp(field, "shutdownGracePeriodSeconds"))
				seconds = text;
		}
		if (!priority || !seconds) {
			log_err("%s: %s: each entry needs priority and shutdownGracePeriodSeconds",
				ctx->name, key);
			err = -EINVAL;
			continue;
		}
		if (shutdown_group_add(config, key, priority, seconds))
			err = -EINVAL;
	}
	return err;
}

static int yaml_apply_document(struct evictd_config *config, struct yaml_ctx *ctx)
{
	yaml_node_t *root = yaml_document_get_root_node(ctx->doc);
	const char *kind = NULL, *api_version = NULL;
	bool kubelet;
	int err = 0;

	if (!root)
		return 0;	/* empty document */
	if (root->type != YAML_MAPPING_NODE) {
		log_err("%s: document %d: expected a map at the top, got %s", ctx->name,
			ctx->doc_index, node_kind_name(root));
		return -EINVAL;
	}
	for (yaml_node_pair_t *pair = root->data.mapping.pairs.start; pair < root->data.mapping.pairs.top;
	     pair++) {
		const char *key = scalar_of(yaml_document_get_node(ctx->doc, pair->key));
		const char *value = scalar_of(yaml_document_get_node(ctx->doc, pair->value));

		if (key && !strcmp(key, "kind"))
			kind = value;
		else if (key && !strcmp(key, "apiVersion"))
			api_version = value;
	}
	if (kind && !strcmp(kind, "KubeletConfiguration")) {
		kubelet = true;
		if (api_version && strcmp(api_version, KUBELET_API_VERSION))
			log_warn("%s: apiVersion \"%s\": expected %s; reading the fields anyway",
				 ctx->name, echo(api_version).text, KUBELET_API_VERSION);
	} else if (kind && !strcmp(kind, "EvictdConfiguration")) {
		kubelet = false;
	} else {
		log_err("%s: document %d: kind \"%s\": expected KubeletConfiguration or EvictdConfiguration",
			ctx->name, ctx->doc_index, echo(kind ? kind : "").text);
		return -EINVAL;
	}

	for (yaml_node_pair_t *pair = root->data.mapping.pairs.start; pair < root->data.mapping.pairs.top;
	     pair++) {
		const char *key = scalar_of(yaml_document_get_node(ctx->doc, pair->key));
		yaml_node_t *value = yaml_document_get_node(ctx->doc, pair->value);
		const struct option_spec *spec = NULL;

		if (!key || !strcmp(key, "kind") || !strcmp(key, "apiVersion"))
			continue;
		for (size_t i = 0; i < N_OPTIONS && !spec; i++) {
			const char *name = kubelet ? option_table[i].kubelet_key : option_table[i].evictd_key;

			if (name && !strcmp(name, key))
				spec = &option_table[i];
		}
		if (!spec) {
			/* The kubelet file carries much we do not use; our own file must be exact. */
			if (kubelet)
				continue;
			log_err("%s: unknown EvictdConfiguration field \"%s\"", ctx->name, echo(key).text);
			err = -EINVAL;
			continue;
		}
		switch (spec->kind) {
		case OPT_THRESHOLD_MAP:
		case OPT_SIGNAL_MAP:
			if (yaml_apply_map(ctx, (struct signal_text_map *)((char *)config + spec->offset),
					   kubelet ? spec->kubelet_key : spec->evictd_key, value))
				err = -EINVAL;
			break;
		case OPT_PRIORITY_LIST:
			if (yaml_apply_priority_list(ctx, config, key, value))
				err = -EINVAL;
			break;
		case OPT_STRING_LIST:
			if (value->type == YAML_SEQUENCE_NODE) {
				((struct string_list *)((char *)config + spec->offset))->n = 0;
				for (yaml_node_item_t *item = value->data.sequence.items.start;
				     item < value->data.sequence.items.top; item++) {
					const char *text = scalar_of(yaml_document_get_node(ctx->doc, *item));

					if (!text || apply_scalar(config, spec, key, text))
						err = -EINVAL;
				}
				break;
			}
			__attribute__((fallthrough)); /* a single path */
		default:
			if (value->type != YAML_SCALAR_NODE) {
				log_err("%s: %s: expected a single value, got %s", ctx->name, key,
					node_kind_name(value));
				err = -EINVAL;
			} else if (apply_scalar(config, spec, key, scalar_of(value))) {
				err = -EINVAL;
			}
		}
	}
	return err;
}

int config_load_yaml(struct evictd_config *config, const char *yaml, size_t len, const char *name)
{
	yaml_parser_t parser;
	int err = 0;

	if (!yaml_parser_initialize(&parser)) {
		log_err("%s: cannot initialise the YAML parser", name);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	for (int index = 1;; index++) {
		struct yaml_ctx ctx = { .name = name, .doc_index = index };
		yaml_document_t doc;

		if (!yaml_parser_load(&parser, &doc)) {
			log_err("%s: line %zu column %zu: %s %s", name, parser.problem_mark.line + 1,
				parser.problem_mark.column + 1, parser.problem ? parser.problem : "YAML error",
				parser.context ? parser.context : "");
			err = -EINVAL;
			break;
		}
		if (!yaml_document_get_root_node(&doc)) {	/* end of stream */
			yaml_document_delete(&doc);
			break;
		}
		ctx.doc = &doc;
		if (yaml_apply_document(config, &ctx))
			err = -EINVAL;
		yaml_document_delete(&doc);
	}
	yaml_parser_delete(&parser);
	return err;
}

int config_load_file(struct evictd_config *config, const char *path)
{
	FILE *file = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int err;

	if (!file) {
		err = -errno;
		log_err("config %s: %m", path);
		return err;
	}
	for (;;) {
		size_t got;

		if (len + 4096 > cap) {
			char *grown;

			cap = cap ? cap * 2 : 8192;
			if (cap > (1u << 22)) {
				log_err("config %s: larger than 4 MiB", path);
				free(buf);
				fclose(file);
				return -EFBIG;
			}
			grown = realloc(buf, cap);
			if (!grown) {
				free(buf);
				fclose(file);
				return -ENOMEM;
			}
			buf = grown;
		}
		got = fread(buf + len, 1, cap - len, file);
		len += got;
		if (got == 0)
			break;
	}
	if (ferror(file)) {
		err = -EIO;
		log_err("config %s: read error", path);
	} else {
		err = config_load_yaml(config, buf ? buf : "", len, path);
	}
	free(buf);
	fclose(file);
	return err;
}

/* ---- arguments ---- */

int config_parse_args(struct evictd_config *config, int argc, char **argv)
{
	struct option long_options[N_OPTIONS + 1];
	int err = 0, opt, index;

	for (size_t i = 0; i < N_OPTIONS; i++) {
		long_options[i] = (struct option){
			.name = option_table[i].flag,
			.has_arg = option_table[i].kind == OPT_BOOL ? optional_argument :
				   (option_table[i].kind == OPT_HELP || option_table[i].kind == OPT_VERSION) ?
				   no_argument : required_argument,
			.flag = NULL,
			.val = 0,
		};
	}
	memset(&long_options[N_OPTIONS], 0, sizeof(long_options[N_OPTIONS]));

	/* Pass 1: --config, --help, --version; files load before the flags apply. */
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", long_options, &index)) != -1) {
		const struct option_spec *spec;

		if (opt == '?') {
			log_err("unknown or incomplete option \"%s\" (see --help)",
				echo(argv[optind - 1]).text);
			err = -EINVAL;
			continue;
		}
		spec = &option_table[index];
		if (spec->kind == OPT_HELP) {
			config_usage(stdout);
			return 1;
		}
		if (spec->kind == OPT_VERSION) {
			printf("evictd %s\n", EVICTD_VERSION);
			return 1;
		}
		if (spec->kind == OPT_CONFIG_FILE && config_apply_flag(config, spec->flag, optarg))
			err = -EINVAL;
	}
	if (optind < argc) {
		log_err("unexpected argument \"%s\" (options start with --)",
			echo(argv[optind]).text);
		err = -EINVAL;
	}
	if (err)
		return err;

	for (size_t i = 0; i < config->n_config_files; i++)
		if (config_load_file(config, config->config_files[i]))
			err = -EINVAL;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "", long_options, &index)) != -1) {
		const struct option_spec *spec = &option_table[index];

		if (spec->kind == OPT_CONFIG_FILE)
			continue;
		if (config_apply_flag(config, spec->flag, optarg))
			err = -EINVAL;
	}
	return err;
}

/* ---- finalize ---- */


static int add_thresholds(struct evictd_config *config, const struct signal_text_map *map, bool hard)
{
	const char *origin = map->origin[0] ? map->origin : (hard ? "evictionHard" : "evictionSoft");
	int err = 0;

	for (int s = 0; s < EV_SIGNAL_COUNT; s++) {
		struct threshold *threshold;
		bool disabled;
		int parse_err;

		if (!map->present[s])
			continue;
		if (signal_meta(s)->derived) {
			/* helpers.go UpdateContainerFsThresholds: custom containerfs values are
			 * not supported; they follow nodefs or imagefs. */
			log_warn("%s: %s<%s ignored: containerfs thresholds follow nodefs (one "
				 "filesystem) or imagefs (split), they cannot be set", origin,
				 signal_name(s), map->text[s]);
			continue;
		}
		threshold = &config->thresholds[config->n_thresholds];
		memset(threshold, 0, sizeof(*threshold));
		parse_err = threshold_value_parse(map->text[s], &threshold->value, &disabled);
		if (parse_err == -ERANGE) {
			log_err("%s: %s<%s: must be a non-negative quantity or a percentage from 0%% to 100%%",
				origin, signal_name(s), map->text[s]);
			err = -EINVAL;
			continue;
		}
		if (parse_err) {
			log_err("%s: %s<%s: expected a quantity (100Mi, 1.5Gi, 1e9) or a percentage (10%%)",
				origin, signal_name(s), map->text[s]);
			err = -EINVAL;
			continue;
		}
		if (disabled)
			continue;
		threshold->signal = s;
		threshold->hard = hard;
		config->n_thresholds++;
	}
	return err;
}

static const char *const default_hard[][2] = {
	{ "memory.available", "100Mi" },
	{ "nodefs.available", "10%" },
	{ "nodefs.inodesFree", "5%" },
	{ "imagefs.available", "15%" },
	{ "imagefs.inodesFree", "5%" },
};

static int finalize_shutdown(struct evictd_config *config)
{
	int err = 0;

	if (config->n_shutdown_groups &&
	    (config->shutdown_grace_period_ns || config->shutdown_grace_period_critical_pods_ns)) {
		log_err("shutdownGracePeriodByPodPriority cannot be combined with shutdownGracePeriod "
			"or shutdownGracePeriodCriticalPods: use one form");
		err = -EINVAL;
	}
	if (config->shutdown_grace_period_critical_pods_ns &&
	    config->shutdown_grace_period_critical_pods_ns >= config->shutdown_grace_period_ns) {
		log_err("shutdownGracePeriodCriticalPods (%lld s) must be smaller than shutdownGracePeriod (%lld s)",
			(long long)(config->shutdown_grace_period_critical_pods_ns / 1000000000),
			(long long)(config->shutdown_grace_period_ns / 1000000000));
		err = -EINVAL;
	}
	for (size_t i = 0; i < config->n_shutdown_groups; i++)
		for (size_t j = i + 1; j < config->n_shutdown_groups; j++)
			if (config->shutdown_groups[i].priority == config->shutdown_groups[j].priority) {
				log_err("shutdownGracePeriodByPodPriority: priority %d listed twice",
					config->shutdown_groups[i].priority);
				err = -EINVAL;
			}
	/* Lowest priority first: the order the groups are shut down in. */
	for (size_t i = 1; i < config->n_shutdown_groups; i++)
		for (size_t j = i; j > 0 && config->shutdown_groups[j - 1].priority >
						   config->shutdown_groups[j].priority; j--) {
			struct shutdown_group tmp = config->shutdown_groups[j];

			config->shutdown_groups[j] = config->shutdown_groups[j - 1];
			config->shutdown_groups[j - 1] = tmp;
		}
	return err;
}

int config_finalize(struct evictd_config *config)
{
	int err = 0;

	config->n_thresholds = 0;
	config->using_default_thresholds = false;
	{
		struct sockaddr_storage addr;
		socklen_t len;

		/* A bad address is a configuration error (exit 2), found before anything starts. */
		if (metrics_parse_address(config->metrics_address, &addr, &len) < 0)
			err = -EINVAL;
	}

	/* DESIGN.md §2: the defaults apply only when no threshold at all is configured. */
	if (!config->eviction_hard.set && !config->eviction_soft.set) {
		struct signal_text_map defaults;

		map_begin(&defaults, "default");
		for (size_t i = 0; i < sizeof(default_hard) / sizeof(default_hard[0]); i++)
			map_put(&defaults, "default", default_hard[i][0], default_hard[i][1]);
		add_thresholds(config, &defaults, true);
		config->using_default_thresholds = true;
	} else {
		if (add_thresholds(config, &config->eviction_hard, true))
			err = -EINVAL;
		if (add_thresholds(config, &config->eviction_soft, false))
			err = -EINVAL;
	}

	for (size_t i = 0; i < config->n_thresholds; i++) {
		struct threshold *threshold = &config->thresholds[i];
		const char *name = signal_name(threshold->signal);
		const struct signal_text_map *grace = &config->eviction_soft_grace_period;
		const struct signal_text_map *reclaim = &config->eviction_minimum_reclaim;

		if (!threshold->hard) {
			if (!grace->present[threshold->signal]) {
				log_err("evictionSoft: %s<%s has no grace period: set "
					"evictionSoftGracePeriod / --eviction-soft-grace-period=%s=<duration>",
					name, threshold->value.text, name);
				err = -EINVAL;
			} else if (parse_duration("evictionSoftGracePeriod", grace->text[threshold->signal],
						  &threshold->grace_period_ns)) {
				err = -EINVAL;
			}
		}
		if (reclaim->present[threshold->signal]) {
			bool disabled;
			int parse_err = threshold_value_parse(reclaim->text[threshold->signal],
							      &threshold->min_reclaim, &disabled);

			if (parse_err) {
				log_err("evictionMinimumReclaim: %s=%s: expected a non-negative quantity "
					"(500Mi) or percentage (5%%)", name, reclaim->text[threshold->signal]);
				err = -EINVAL;
			} else if (disabled && !strcmp(reclaim->text[threshold->signal], "100%")) {
				threshold->min_reclaim.is_percentage = true;
				threshold->min_reclaim.percentage = 1.0f;
			} else if (disabled) {
				memset(&threshold->min_reclaim, 0, sizeof(threshold->min_reclaim));
			}
		}
	}
	for (int s = 0; s < EV_SIGNAL_COUNT; s++) {
		bool has_soft = false;

		for (size_t i = 0; i < config->n_thresholds; i++)
			has_soft |= !config->thresholds[i].hard && config->thresholds[i].signal == (enum ev_signal)s;
		if (config->eviction_soft_grace_period.present[s] && !has_soft)
			log_warn("evictionSoftGracePeriod: %s has no soft threshold; ignored", signal_name(s));
	}

	if (strcmp(config->kube_api, "auto") && strcmp(config->kube_api, "on") && strcmp(config->kube_api, "off")) {
		log_err("--kube-api: \"%s\": expected auto, on or off", echo(config->kube_api).text);
		err = -EINVAL;
	}
	if (config->housekeeping_interval_ns <= 0) {
		log_err("housekeepingInterval: must be greater than 0");
		err = -EINVAL;
	}
	if (finalize_shutdown(config))
		err = -EINVAL;
	return err;
}

size_t config_effective_thresholds(const struct evictd_config *config, enum fs_layout layout,
				   struct threshold *out, size_t max)
{
	enum ev_signal bytes_source = layout == FS_LAYOUT_SPLIT_DISK ? EV_SIGNAL_IMAGEFS_AVAILABLE :
								       EV_SIGNAL_NODEFS_AVAILABLE;
	enum ev_signal inodes_source = layout == FS_LAYOUT_SPLIT_DISK ? EV_SIGNAL_IMAGEFS_INODES_FREE :
									EV_SIGNAL_NODEFS_INODES_FREE;
	size_t n = 0;

	for (size_t i = 0; i < config->n_thresholds && n < max; i++)
		out[n++] = config->thresholds[i];
	for (size_t i = 0; i < config->n_thresholds && n < max; i++) {
		const struct threshold *source = &config->thresholds[i];

		if (source->signal != bytes_source && source->signal != inodes_source)
			continue;
		out[n] = *source;
		out[n].signal = source->signal == bytes_source ? EV_SIGNAL_CONTAINERFS_AVAILABLE :
								 EV_SIGNAL_CONTAINERFS_INODES_FREE;
		out[n].derived = true;
		n++;
	}
	if (config->oom_guard && n < max) {
		memset(&out[n], 0, sizeof(out[n]));
		out[n].signal = EV_SIGNAL_OOM_GUARD;
		out[n].hard = true;
		out[n].value = config->oom_guard_value;
		n++;
	}
	return n;
}

void config_print(const struct evictd_config *config, FILE *out)
{
	char buf[160];

	for (size_t i = 0; i < config->n_thresholds; i++) {
		threshold_format(&config->thresholds[i], buf, sizeof(buf));
		fprintf(out, "%s\n", buf);
	}
	for (size_t i = 0; i < config->n_thresholds; i++) {
		const struct threshold *threshold = &config->thresholds[i];

		if (threshold->min_reclaim.text[0])
			fprintf(out, "min-reclaim %s=%s\n", signal_name(threshold->signal),
				threshold->min_reclaim.text);
	}
	fprintf(out, "max-pod-grace-period %llds\n", (long long)config->max_pod_grace_period_s);
	duration_format(config->pressure_transition_period_ns, buf, sizeof(buf));
	fprintf(out, "pressure-transition-period %s\n", buf);
	duration_format(config->housekeeping_interval_ns, buf, sizeof(buf));
	fprintf(out, "housekeeping-interval %s\n", buf);
	if (config->oom_guard) {
		quantity_format(config->oom_guard_value.max_quantity, buf, sizeof(buf));
		fprintf(out, "oom-guard MemAvailable<%s max=%s\n", config->oom_guard_value.text, buf);
	} else {
		fprintf(out, "oom-guard off\n");
	}
	if (config->n_shutdown_groups) {
		fprintf(out, "shutdown-grace-period-by-pod-priority");
		for (size_t i = 0; i < config->n_shutdown_groups; i++)
			fprintf(out, " %d=%llds", config->shutdown_groups[i].priority,
				(long long)config->shutdown_groups[i].grace_period_s);
		fputc('\n', out);
	} else {
		duration_format(config->shutdown_grace_period_ns, buf, sizeof(buf));
		fprintf(out, "shutdown-grace-period %s", buf);
		duration_format(config->shutdown_grace_period_critical_pods_ns, buf, sizeof(buf));
		fprintf(out, " critical-pods=%s\n", buf);
	}
	fprintf(out, "dry-run %s\n", config->dry_run ? "true" : "false");
	fprintf(out, "bpf %s\n", config->no_bpf ? "off" : "on");
	fprintf(out, "nodefs-dir %s\n", config->kubelet_dir);
	fprintf(out, "imagefs-dir %s\n", config->imagefs_dir);
	fprintf(out, "containerfs-dir %s\n", config->containerfs_dir[0] ? config->containerfs_dir :
									  config->imagefs_dir);
	for (size_t i = 0; i < config->workload_roots.n; i++)
		fprintf(out, "workload-root %s\n", config->workload_roots.items[i]);
	if (config->pods_file[0])
		fprintf(out, "pods-file %s\n", config->pods_file);
	if (config->node_name[0])
		fprintf(out, "node-name %s\n", config->node_name);
	fprintf(out, "cgroup-root %s\n", config->kubelet_cgroup_root[0] ? config->kubelet_cgroup_root : "/");
	fprintf(out, "memory-reclaim-before-kill %s\n", config->memory_reclaim_before_kill ? "true" : "false");
	for (size_t i = 0; i < config->reclaim_commands.n; i++)
		fprintf(out, "reclaim-command %s\n", config->reclaim_commands.items[i]);
	duration_format(config->kill_timeout_ns, buf, sizeof(buf));
	fprintf(out, "kill-timeout %s\n", buf);
}

void config_usage(FILE *out)
{
	fprintf(out,
		"Usage: evictd [OPTION]...\n"
		"Node-pressure eviction for Linux nodes, kubelet-compatible, driven by BPF events.\n\n");
	for (size_t i = 0; i < N_OPTIONS; i++) {
		const struct option_spec *spec = &option_table[i];
		char left[64];

		snprintf(left, sizeof(left), "--%s%s%s", spec->flag, spec->arg ? "=" : "",
			 spec->arg ? spec->arg : "");
		/* Long option names get the help on the next line, aligned. */
		if (strlen(left) > 40)
			fprintf(out, "  %s\n  %-40s %s\n", left, "", spec->help);
		else
			fprintf(out, "  %-40s %s\n", left, spec->help);
	}
	fprintf(out,
		"\nSignals: %s.\n"
		"With no threshold configured the kubelet defaults apply: memory.available<100Mi,\n"
		"nodefs.available<10%%, nodefs.inodesFree<5%%, imagefs.available<15%%, imagefs.inodesFree<5%%.\n"
		"Exit status: 0 ok, 1 runtime failure, 2 invalid configuration.\n",
		signal_valid_names());
}
