// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* One option table drives the flags, the KubeletConfiguration keys and evictd's own YAML
 * keys, so a setting has one parser and one help line wherever it comes from. Each row names
 * its field once: the setters know its size and refuse what does not fit. */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/options.h"
#include "core/quantity.h"
#include "sys/log.h"
#include "version.h"

#define sizeof_field(type, member) sizeof(((type *)0)->member)
/* Every row names its field once, so offset and size cannot disagree (xdp-tools style). */
#define FIELD(member) offsetof(struct evictd_config, member), \
		      sizeof_field(struct evictd_config, member)
#define NO_FIELD 0, 0

const struct option_spec config_options[] = {
	{ "config", NULL, NULL, OPT_CONFIG_FILE, FIELD(config_files), "FILE",
	  "KubeletConfiguration and/or EvictdConfiguration YAML (repeatable; flags override)" },
	{ "config-dir", NULL, NULL, OPT_PATH, FIELD(config_dir), "DIR",
	  "the kubelet's --config-dir: its *.conf drop-ins merged over the --config files, in "
	  "lexical order (flags still win)" },
	{ "kubelet-flags-from", NULL, NULL, OPT_PATH, FIELD(kubelet_process), "PID|auto",
	  "read the running kubelet's configuration: its --config file, --config-dir and eviction "
	  "flags from /proc/PID/cmdline (auto: the process named kubelet); evictd's own files and "
	  "flags apply over it" },
	{ "eviction-hard", "evictionHard", NULL, OPT_THRESHOLD_MAP, FIELD(eviction_hard), "LIST",
	  "hard thresholds, e.g. memory.available<500Mi,nodefs.available<10%" },
	{ "eviction-soft", "evictionSoft", NULL, OPT_THRESHOLD_MAP, FIELD(eviction_soft), "LIST",
	  "soft thresholds, e.g. memory.available<1.5Gi (each needs a grace period)" },
	{ "eviction-soft-grace-period", "evictionSoftGracePeriod", NULL, OPT_SIGNAL_MAP,
	  FIELD(eviction_soft_grace_period), "LIST", "e.g. memory.available=1m30s" },
	{ "merge-default-eviction-settings", "mergeDefaultEvictionSettings", NULL, OPT_BOOL,
	  FIELD(merge_default_eviction_settings), NULL,
	  "keep the default hard thresholds that --eviction-hard does not name (false)" },
	{ "enforce-node-allocatable", "enforceNodeAllocatable", NULL, OPT_WORD_LIST,
	  FIELD(enforce_node_allocatable), "LIST",
	  "the kubelet's enforced allocatable (pods): with pods, allocatableMemory.available follows "
	  "the hard memory.available thresholds" },
	{ "eviction-max-pod-grace-period", "evictionMaxPodGracePeriod", NULL, OPT_SECONDS,
	  FIELD(max_pod_grace_period_s), "SECONDS",
	  "max pod termination grace for soft evictions (0: kill at once)" },
	{ "hard-eviction-grace-period", NULL, "hardEvictionGracePeriod", OPT_DURATION,
	  FIELD(hard_eviction_grace_ns), "DURATION",
	  "SIGTERM grace of hard evictions and the least a soft one gets (0s: cgroup.kill at once; "
	  "the kubelet: 1s)" },
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
	  "where maps are pinned, on a bpffs (/sys/fs/bpf/evictd)" },
	{ "state-dir", NULL, "stateDir", OPT_PATH, FIELD(state_dir), "DIR",
	  "persisted state and the instance lock (/var/lib/evictd)" },
	{ "logind-dropin-dir", NULL, "logindDropinDir", OPT_PATH, FIELD(logind_dropin_dir), "DIR",
	  "where a drop-in raising logind's InhibitDelayMaxSec goes (/etc/systemd/logind.conf.d)" },
	{ "workload-root", NULL, "workloadRoots", OPT_STRING_LIST, FIELD(workload_roots), "DIR",
	  "standalone mode: child cgroups of DIR are the workloads (repeatable)" },
	{ "workload-preference", NULL, "workloadPreferences", OPT_WORKLOAD_PREFS, FIELD(workload_prefs),
	  "PATTERN=SETTING", "standalone: workloads whose name (or path, with a /) matches the glob get "
	  "priority:N, prefer, avoid or never (repeatable; first match wins)" },
	{ "allow-host-units", NULL, "allowHostUnits", OPT_BOOL, FIELD(allow_host_units), NULL,
	  "accept a workload root that is a cgroup root or holds init.scope, system.slice, user.slice "
	  "or session.slice (warned instead of refused)" },
	{ "on-evict", NULL, "onEvict", OPT_PATH, FIELD(on_evict), "CMD",
	  "run CMD (sh -c) after each eviction and warning, with EVICTD_* in its environment; "
	  "never waited for" },
	{ "on-evict-timeout", NULL, "onEvictTimeout", OPT_DURATION, FIELD(on_evict_timeout_ns), "DURATION",
	  "the --on-evict command's group is killed after this (10s)" },
	{ "dbus-signal", NULL, "dbusSignal", OPT_BOOL, FIELD(dbus_signal), NULL,
	  "emit org.evictd.Evictd1.Evicted on the system bus for each eviction and warning" },
	{ "pods-file", NULL, "podsFile", OPT_PATH, FIELD(pods_file), "FILE",
	  "pod metadata from a PodList JSON (kubectl get pods -o json), re-read when it changes" },
	{ "node-name", NULL, "nodeName", OPT_NODE_NAME, FIELD(node_name), "NAME",
	  "only pods bound to this node (default: $NODE_NAME, else the hostname)" },
	{ "cgroup-root", "cgroupRoot", "cgroupRoot", OPT_PATH, FIELD(kubelet_cgroup_root), "PATH",
	  "the kubelet's --cgroup-root, where kubepods lives (/)" },
	{ "kubelet-config", NULL, "kubeletConfig", OPT_PATH, FIELD(kubelet_config), "FILE",
	  "the kubelet's own config file, only read: warn at start when both run graceful shutdown "
	  "or evictd's thresholds are not above the kubelet's" },
	{ "static-pod-path", "staticPodPath", "staticPodPath", OPT_PATH, FIELD(static_pod_path), "PATH",
	  "the kubelet's static pod directory or manifest file (staticPodPath, --pod-manifest-path): its pods are "
	  "never evicted; default: the kubelet's, from --kubelet-config or --kubelet-flags-from, "
	  "else /etc/kubernetes/manifests; \"\": none" },
	{ "memory-reclaim-before-kill", NULL, "memoryReclaimBeforeKill", OPT_BOOL,
	  FIELD(memory_reclaim_before_kill), NULL,
	  "write memory.reclaim on the top candidates before killing (cgroup v2, Linux >= 5.19)" },
	{ "reclaim-command", NULL, "reclaimCommands", OPT_STRING_LIST, FIELD(reclaim_commands), "CMD",
	  "DiskPressure node-level reclaim step, run with sh -c (repeatable; default: crictl rm of "
	  "exited containers, then crictl rmi --prune)" },
	{ "kill-timeout", NULL, "killTimeout", OPT_DURATION, FIELD(kill_timeout_ns), "DURATION",
	  "how long to wait for a killed cgroup to empty before logging a timeout (10s)" },
	{ "kube-api", NULL, "kubeAPI", OPT_PATH, FIELD(kube_api), "auto|on|read-only|off",
	  "watch this node's pods and report evictions, pressure taints and shutdown to the API server "
	  "(auto: in a cluster; read-only: watch, never write)" },
	{ "kube-api-server", NULL, "kubeAPIServer", OPT_PATH, FIELD(kube_api_server), "URL",
	  "the API server (https://...); default: in-cluster KUBERNETES_SERVICE_HOST" },
	{ "kube-token-file", NULL, "kubeTokenFile", OPT_PATH, FIELD(kube_token_file), "FILE",
	  "bearer token (default: the service account's)" },
	{ "kube-ca-file", NULL, "kubeCAFile", OPT_PATH, FIELD(kube_ca_file), "FILE",
	  "CA bundle for the API server (default: the service account's ca.crt)" },
	{ "kube-pods-client-cert", NULL, "kubePodsClientCert", OPT_PATH, FIELD(kube_pods_client_cert), "auto|none|FILE",
	  "list and watch this node's pods with this PEM client certificate and key, not the token "
	  "(auto: the kubelet's <root-dir>/pki/kubelet-client-current.pem when readable)" },
	{ "kube-pods-refresh", NULL, "kubePodsRefreshPeriod", OPT_DURATION, FIELD(kube_pods_refresh_ns),
	  "DURATION", "ignored: pod metadata is listed once, then watched" },
	{ "kube-eviction-status-wait", NULL, "kubeEvictionStatusWait", OPT_DURATION,
	  FIELD(kube_eviction_status_wait_ns), "DURATION",
	  "hold a soft eviction's SIGTERM until its pod's Failed/Evicted status is answered, at most this long (5s; 0: no hold)" },
	{ "kube-hard-eviction-status-wait", NULL, "kubeHardEvictionStatusWait", OPT_DURATION,
	  FIELD(kube_hard_eviction_status_wait_ns), "DURATION",
	  "hold a hard eviction's cgroup.kill until its pod's Failed/Evicted status is answered, at most this long, less when the signal falls to half its threshold (5s; 0: no hold)" },
	{ "kube-handover-termination", NULL, "kubeHandoverTermination", OPT_BOOL,
	  FIELD(kube_handover_termination), NULL,
	  "a soft eviction whose status landed is terminated by the kubelet (preStop, STOPSIGNAL); evictd keeps the cgroup.kill at the grace's end (default true)" },
	{ "kube-pressure-taints", NULL, "kubePressureTaints", OPT_BOOL, FIELD(kube_pressure_taints), NULL,
	  "taint the node evictd.io/<resource>-pressure:NoSchedule while a condition holds (default true)" },
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
	{ "memory-refault-aware", NULL, "memoryRefaultAware", OPT_BOOL, FIELD(memory_refault_aware), NULL,
	  "memory.available counts only refaulting or recently used file cache (kubernetes#43916; under MGLRU from Linux 6.5)" },
	{ "bpf-inspect", NULL, "bpfInspect", OPT_BOOL, FIELD(bpf_inspect), NULL,
	  "also attach the BPF programs that only fill the inspection maps (costly on hot paths)" },
	{ "no-page-cache-bpf", NULL, "noPageCacheBpf", OPT_BOOL, FIELD(no_page_cache_bpf), NULL,
	  "with --bpf-inspect: skip the per-folio page-cache counters" },
	{ "daemonset-last", NULL, "daemonSetLast", OPT_BOOL, FIELD(daemonset_last), NULL,
	  "rank DaemonSet pods after all others (true)" },
	{ "oom-guard", NULL, "oomGuard", OPT_OOM_GUARD, FIELD(oom_guard_value), "VALUE|off",
	  "evict when MemAvailable falls below this (10%, capped by --oom-guard-max)" },
	{ "oom-guard-max", NULL, "oomGuardMax", OPT_QUANTITY, FIELD(oom_guard_value), "QUANTITY",
	  "upper bound of a percentage OOM guard (1Gi; 0: none)" },
	{ "swap-guard", NULL, "swapGuard", OPT_HOST_GUARD, FIELD(swap_guard), "VALUE|off",
	  "memory thresholds count only while free swap is below this too (hosts: 10%; "
	  "kubernetes: off)" },
	{ "zram-guard", NULL, "zramGuard", OPT_HOST_GUARD, FIELD(zram_guard), "VALUE|off",
	  "...or while zram's room (its limit minus mem_used_total) is below this (hosts: 10%)" },
	{ "memory-pressure-limit", NULL, "memoryPressureLimit", OPT_PATH, FIELD(memory_pressure_text),
	  "[some|full] [avg10|avg60|total] PCT|off",
	  "a workload whose memory PSI stays above this for the duration is a victim (desktop: full "
	  "avg10 60%, systemd-oomd's; else off)" },
	{ "memory-pressure-duration", NULL, "memoryPressureDuration", OPT_DURATION,
	  FIELD(memory_pressure_duration_ns), "DURATION", "how long above the limit (30s)" },
	{ "warn-memory-available", NULL, "warnMemoryAvailable", OPT_HOST_GUARD, FIELD(warn_memory_available),
	  "VALUE|off", "warn (log, decision log, --on-evict and D-Bus with phase warn) while "
	  "memory.available is below this and no threshold acts (off)" },
	{ "warn-interval", NULL, "warnInterval", OPT_DURATION, FIELD(warn_interval_ns), "DURATION",
	  "at most one warning per this (60s)" },
	{ "warn-ahead", NULL, "warnAhead", OPT_DURATION, FIELD(warn_ahead_ns), "DURATION",
	  "warn (as --warn-memory-available) while a hard threshold is sure to be reached within "
	  "this at the measured rate (0: off)" },
	{ "act-ahead", NULL, "actAhead", OPT_DURATION, FIELD(act_ahead_ns), "DURATION",
	  "act on a hard threshold not yet met when it is sure to be reached within this (0: off)" },
	{ "profile", NULL, "profile", OPT_PATH, FIELD(profile), "auto|kubernetes|server|desktop",
	  "defaults for the node (auto: kubernetes when the kubelet's directory exists)" },
	{ "output", NULL, "output", OPT_OUTPUT, FIELD(output), "text|json", "output of --once" },
	{ "metrics-address", NULL, "metricsAddress", OPT_PATH, FIELD(metrics_address), "HOST:PORT",
	  "serve Prometheus /metrics and /healthz here (127.0.0.1:9808; [::1]:9808; off)" },
	{ "event-log", NULL, "eventLog", OPT_PATH, FIELD(event_log), "FILE",
	  "append the decision log (JSON lines) to FILE (-: stdout; off: none); reopened on SIGHUP" },
	{ "event-log-max-size", NULL, "eventLogMaxSize", OPT_BYTES, FIELD(event_log_max_size), "QUANTITY",
	  "rotate the --event-log file before it passes this size (10Mi; 0: no cap)" },
	{ "event-log-max-files", NULL, "eventLogMaxFiles", OPT_COUNT, FIELD(event_log_max_files), "N",
	  "rotated --event-log files kept, FILE.1 (newest) to FILE.N (3)" },
	{ "realtime-priority", NULL, "realtimePriority", OPT_COUNT, FIELD(realtime_priority), "N",
	  "run the event loop SCHED_FIFO at priority N (0: off; needs CAP_SYS_NICE)" },
	{ "control-socket", NULL, "controlSocket", OPT_PATH, FIELD(control_socket), "PATH",
	  "evictctl's UNIX socket (/run/evictd/evictd.sock)" },
	{ "log-level", NULL, "logLevel", OPT_LOG_LEVEL, FIELD(log_level), "LEVEL",
	  "error, warning, info or debug" },
	{ "help", NULL, NULL, OPT_HELP, NO_FIELD, NULL, "show this help" },
	{ "version", NULL, NULL, OPT_VERSION, NO_FIELD, NULL, "show the version" },
};

const size_t config_n_options = sizeof(config_options) / sizeof(config_options[0]);
_Static_assert(sizeof(config_options) / sizeof(config_options[0]) <= CONFIG_MAX_OPTIONS,
	       "struct evictd_config sources[] has a row per option");

void option_note_source(struct evictd_config *config, const struct option_spec *spec,
			const char *source)
{
	size_t row = (size_t)(spec - config_options);

	if (row < config_n_options)
		snprintf(config->sources[row], sizeof(config->sources[row]), "%s", source);
}
#define N_OPTIONS config_n_options

struct echo value_echo(const char *value)
{
	struct echo out;
	size_t i;

	for (i = 0; value[i] && i < ECHO_MAX; i++)
		out.text[i] = (unsigned char)value[i] < 0x20 || value[i] == 0x7f ? '?' : value[i];
	strcpy(out.text + i, value[i] ? "..." : "");
	return out;
}

const struct option_spec *option_by_flag(const char *flag)
{
	for (size_t i = 0; i < N_OPTIONS; i++)
		if (strcmp(config_options[i].flag, flag) == 0)
			return &config_options[i];
	return NULL;
}

const struct option_spec *option_by_key(const char *key, bool kubelet)
{
	for (size_t i = 0; i < N_OPTIONS; i++) {
		const char *name = kubelet ? config_options[i].kubelet_key : config_options[i].evictd_key;

		if (name && !strcmp(name, key))
			return &config_options[i];
	}
	return NULL;
}

/* strings.TrimSpace, for the ASCII white space a flag can carry. */
static bool is_go_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static char *trim(char *text)
{
	char *end;

	while (is_go_space(*text))
		text++;
	end = text + strlen(text);
	while (end > text && is_go_space(end[-1]))
		*--end = '\0';
	return text;
}

/* key is where the value came from ("--eviction-hard" or "file: evictionHard"). */
int signal_map_put(struct signal_text_map *map, const char *key, const char *signal_text,
		   const char *value)
{
	enum ev_signal signal;

	/* helpers.go validSignal: "unsupported eviction signal" (an empty key too). */
	if (signal_from_name(signal_text, &signal)) {
		const char *best = signal_suggest(signal_text);

		log_err("%s: unknown signal \"%s\": unsupported eviction signal%s%s%s (valid signals: %s)",
			key, value_echo(signal_text).text, best ? "; did you mean " : "", best ? best : "",
			best ? "?" : "", signal_valid_names());
		return -EINVAL;
	}
	if (strlen(value) >= sizeof(map->text[0])) {
		log_err("%s: %s=\"%s\": expected a value of at most %zu bytes", key, signal_text,
			value_echo(value).text, sizeof(map->text[0]) - 1);
		return -EINVAL;
	}
	map->present[signal] = true;
	strcpy(map->text[signal], value);
	snprintf(map->source[signal], sizeof(map->source[signal]), "%s", key);
	return 0;
}

void signal_map_begin(struct signal_text_map *map, const char *origin)
{
	memset(map, 0, sizeof(*map));
	map->set = true;
	snprintf(map->origin, sizeof(map->origin), "%s", origin);
}

/* The flag form of a map, as component-base's map flag types parse it (cli/flag
 * map_string_string.go, langle_separated_map_string_string.go Set): the first occurrence of
 * the flag clears what the files set, each further one adds to it key by key (a key given
 * again takes the later value). Entries are split at ',', an empty one is skipped, one
 * without sep is "malformed pair", key and value are trimmed (strings.TrimSpace). */
static int map_from_flag(struct signal_text_map *map, const char *key, const char *value, char sep)
{
	char *copy = strdup(value), *saveptr = NULL;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	if (strcmp(map->origin, key))
		signal_map_begin(map, key);
	for (char *item = strtok_r(copy, ",", &saveptr); item; item = strtok_r(NULL, ",", &saveptr)) {
		char *split = strchr(item, sep);

		if (!split) {
			log_err("%s: \"%s\": malformed pair, expected <signal>%c<value>, e.g. %s", key,
				value_echo(item).text, sep,
				sep == '<' ? "memory.available<500Mi" : "memory.available=1m30s");
			err = -EINVAL;
			continue;
		}
		*split = '\0';
		if (signal_map_put(map, key, trim(item), trim(split + 1)))
			err = -EINVAL;
	}
	free(copy);
	return err;
}

/* enforceNodeAllocatable: a list of pods, system-reserved, kube-reserved (and their
 * -compressible forms) or none (pkg/kubelet/apis/config/validation). Stored joined by ','. */
int word_list_set(char *field, size_t size, const char *key, const char *value)
{
	static const char *const valid[] = { "pods", "system-reserved", "kube-reserved",
		"system-reserved-compressible", "kube-reserved-compressible", "none" };
	char *copy = strdup(value), *saveptr = NULL;
	char joined[256] = "";
	int err = 0;

	if (!copy)
		return -ENOMEM;
	for (char *item = strtok_r(copy, ",", &saveptr); item; item = strtok_r(NULL, ",", &saveptr)) {
		bool known = false;

		item = trim(item);
		for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++)
			known |= !strcmp(item, valid[i]);
		if (!known) {
			log_err("%s: \"%s\": expected pods, system-reserved, kube-reserved, "
				"system-reserved-compressible, kube-reserved-compressible or none", key,
				value_echo(item).text);
			err = -EINVAL;
			continue;
		}
		if (strlen(joined) + strlen(item) + 2 > size) {
			log_err("%s: \"%s\": too many entries", key, value_echo(value).text);
			err = -E2BIG;
			break;
		}
		if (joined[0])
			strcat(joined, ",");
		strcat(joined, item);
	}
	free(copy);
	if (!err)
		snprintf(field, size, "%s", joined);
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
	log_err("%s: \"%s\": expected true or false", key, value_echo(value).text);
	return -EINVAL;
}

/* what: "seconds", "a count". */
static int parse_whole(const char *key, const char *value, const char *what, int64_t *out)
{
	char *end;
	long long number;

	errno = 0;
	number = strtoll(value, &end, 10);
	if (errno || end == value || *end != '\0' || number < 0 || number > INT32_MAX) {
		log_err("%s: \"%s\": expected a whole number (%s) >= 0", key, value_echo(value).text, what);
		return -EINVAL;
	}
	*out = number;
	return 0;
}

static int parse_seconds(const char *key, const char *value, int64_t *out)
{
	return parse_whole(key, value, "seconds", out);
}

static int parse_bytes(const char *key, const char *value, int64_t *out)
{
	if (quantity_parse(value, out) || *out < 0) {
		log_err("%s: \"%s\": expected a non-negative quantity such as 10Mi", key, value_echo(value).text);
		return -EINVAL;
	}
	return 0;
}

int option_parse_duration(const char *key, const char *value, int64_t *out)
{
	int64_t ns;

	if (duration_parse(value, &ns) || ns < 0) {
		log_err("%s: \"%s\": expected a non-negative duration such as 30s, 1m30s, 500ms or 2h",
			key, value_echo(value).text);
		return -EINVAL;
	}
	*out = ns;
	return 0;
}

int option_check_range(const struct option_spec *spec, const char *key, const char *text, int64_t value)
{
	const struct option_range *range = option_range_of(spec);

	if (!range || (range->zero_ok && value == 0) || (value >= range->min && value <= range->max))
		return 0;
	log_err("%s: \"%s\": out of range: expected %s", key, value_echo(text).text, range->text);
	return -ERANGE;
}

int shutdown_group_add(struct evictd_config *config, const char *key, const char *priority_text,
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
		log_err("%s: priority \"%s\": expected a 32-bit integer", key, value_echo(priority_text).text);
		return -EINVAL;
	}
	if (parse_seconds(key, seconds_text, &seconds) ||
	    option_check_range(option_by_flag("shutdown-grace-period-by-pod-priority"), key, seconds_text,
			       seconds))
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
			log_err("%s: \"%s\": expected <priority>=<seconds>, e.g. 100000=10", key, value_echo(item).text);
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
	/* A guard of 0 bytes never fires: like a threshold, it must be positive. */
	if (threshold_value_parse(value, &parsed, &disabled) || disabled ||
	    (!parsed.is_percentage && parsed.quantity <= 0)) {
		log_err("%s: \"%s\": expected a positive quantity (200Mi), a percentage of memory (10%%) or off",
			key, value_echo(value).text);
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
			value_echo(value).text, len, spec->arg ? spec->arg : "a value", size - 1);
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
			"0-9, '-' and '.', starting and ending alphanumeric)", key, value_echo(value).text,
			strlen(value));
		return -EINVAL;
	}
	return set_string(key, spec, value, field, size);
}

static int option_apply_value(struct evictd_config *config, const struct option_spec *spec,
			      const char *key, const char *value);

int option_apply(struct evictd_config *config, const struct option_spec *spec,
		 const char *key, const char *value)
{
	int err = option_apply_value(config, spec, key, value);

	if (!err)
		option_note_source(config, spec, key);
	return err;
}

static int option_apply_value(struct evictd_config *config, const struct option_spec *spec,
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
	case OPT_SECONDS:
	case OPT_BYTES:
	case OPT_COUNT: {
		int64_t parsed;

		if (spec->kind == OPT_DURATION ? option_parse_duration(key, value, &parsed) :
		    spec->kind == OPT_SECONDS ? parse_seconds(key, value, &parsed) :
		    spec->kind == OPT_COUNT ? parse_whole(key, value, "a count", &parsed) :
		    parse_bytes(key, value, &parsed))
			return -EINVAL;
		if (option_check_range(spec, key, value, parsed))
			return -EINVAL;
		*(int64_t *)field = parsed;
		return 0;
	}
	case OPT_PRIORITY_LIST:
		return priority_list_from_flag(config, key, value);
	case OPT_WORKLOAD_PREFS: {
		struct workload_prefs *prefs = (struct workload_prefs *)field;

		if (prefs->n >= PODS_MAX_WORKLOAD_PREFS) {
			log_err("%s: \"%s\": expected at most %d entries", key, value_echo(value).text,
				PODS_MAX_WORKLOAD_PREFS);
			return -E2BIG;
		}
		if (workload_pref_parse(key, value, &prefs->items[prefs->n]))
			return -EINVAL;
		prefs->n++;
		return 0;
	}
	case OPT_WORD_LIST:
		return word_list_set(field, spec->size, key, value);
	case OPT_PATH:
		return set_string(key, spec, value, field, spec->size);
	case OPT_NODE_NAME:
		return set_node_name(key, spec, value, field, spec->size);
	case OPT_STRING_LIST: {
		struct string_list *list = (struct string_list *)field;
		int err;

		if (list->n >= CONFIG_MAX_LIST) {
			log_err("%s: \"%s\": expected at most %d values", key, value_echo(value).text,
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
			log_err("%s: \"%s\": expected text or json", key, value_echo(value).text);
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
		log_err("%s: \"%s\": expected error, warning, info or debug", key, value_echo(value).text);
		return -EINVAL;
	}
	case OPT_OOM_GUARD:
		return parse_guard(config, key, value);
	case OPT_HOST_GUARD:
		return host_guard_parse((struct host_guard *)field, key, value);
	case OPT_QUANTITY: {
		int64_t quantity;

		if (quantity_parse(value, &quantity) || quantity < 0) {
			log_err("%s: \"%s\": expected a non-negative quantity such as 1Gi", key, value_echo(value).text);
			return -EINVAL;
		}
		config->oom_guard_value.max_quantity = quantity;
		return 0;
	}
	case OPT_CONFIG_FILE: {
		char (*files)[PATH_MAX] = (char (*)[PATH_MAX])field;

		if (config->n_config_files >= spec->size / sizeof(files[0])) {
			log_err("%s: \"%s\": expected at most %zu files", key, value_echo(value).text,
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
		option_usage_error(flag, 0);
		return -EINVAL;
	}
	snprintf(key, sizeof(key), "--%s", spec->flag);
	return option_apply(config, spec, key, value);
}

/* ---- arguments ---- */

/* Options that name where configuration comes from (and --root, under which the running
 * kubelet is looked for): applied before the sources are read. */
static bool is_source_option(const struct option_spec *spec)
{
	return spec->offset == offsetof(struct evictd_config, config_dir) ||
	       spec->offset == offsetof(struct evictd_config, root) ||
	       spec->offset == offsetof(struct evictd_config, kubelet_process);
}

int config_parse_args(struct evictd_config *config, int argc, char **argv)
{
	struct option long_options[N_OPTIONS + 1];
	int err = 0, opt, index;

	for (size_t i = 0; i < N_OPTIONS; i++) {
		long_options[i] = (struct option){
			.name = config_options[i].flag,
			.has_arg = config_options[i].kind == OPT_BOOL ? optional_argument :
				   (config_options[i].kind == OPT_HELP || config_options[i].kind == OPT_VERSION) ?
				   no_argument : required_argument,
			.flag = NULL,
			.val = 0,
		};
	}
	memset(&long_options[N_OPTIONS], 0, sizeof(long_options[N_OPTIONS]));

	/* Pass 1: --config, --help, --version; files load before the flags apply. */
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "h", long_options, &index)) != -1) {
		const struct option_spec *spec;

		if (opt == '?') {
			option_usage_error(argv[optind - 1], optopt);
			err = -EINVAL;
			continue;
		}
		spec = opt == 'h' ? option_by_flag("help") : &config_options[index];
		if (spec->kind == OPT_HELP) {
			config_usage(stdout);
			return 1;
		}
		if (spec->kind == OPT_VERSION) {
			printf("evictd %s\n", EVICTD_VERSION);
			return 1;
		}
		if ((spec->kind == OPT_CONFIG_FILE || is_source_option(spec)) &&
		    config_apply_flag(config, spec->flag, optarg))
			err = -EINVAL;
	}
	if (optind < argc) {
		log_err("unexpected argument \"%s\" (options start with --)",
			value_echo(argv[optind]).text);
		err = -EINVAL;
	}
	if (err)
		return err;

	/* The kubelet's own sources first (its file, drop-ins, flags), then evictd's files and
	 * the drop-in directory, then evictd's flags: the later wins (DESIGN.md §9). */
	if (config->kubelet_process[0] && config_load_kubelet_process(config, config->kubelet_process))
		err = -EINVAL;
	if (config_add_default_file(config))
		err = -EINVAL;
	for (size_t i = 0; i < config->n_config_files; i++)
		if (config_load_file(config, config->config_files[i]))
			err = -EINVAL;
	if (config->config_dir[0] && config_load_dropin_dir(config, config->config_dir))
		err = -EINVAL;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "h", long_options, &index)) != -1) {
		const struct option_spec *spec = &config_options[index];

		if (opt != 0 || spec->kind == OPT_CONFIG_FILE || is_source_option(spec))
			continue;
		if (config_apply_flag(config, spec->flag, optarg))
			err = -EINVAL;
	}
	return err;
}
