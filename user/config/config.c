// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The configuration after every source: defaults, the kubelet's threshold rules
 * (config_finalize), containerfs derivation and --validate's printout. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "config/coexist.h"
#include "config/options.h"
#include "core/quantity.h"
#include "sys/fileio.h"
#include "sys/cgroupfs.h"
#include "sys/netaddr.h"
#include "sys/log.h"

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
	config->event_log_max_size = 10LL << 20;	/* a decision log must not cause DiskPressure */
	config->event_log_max_files = 3;
	strcpy(config->control_socket, "/run/evictd/evictd.sock");
	config->daemonset_last = true;
	config->oom_guard = true;
	config->oom_guard_value.is_percentage = true;
	config->oom_guard_value.percentage = 0.10f;
	config->oom_guard_value.max_quantity = 1LL << 30;
	strcpy(config->oom_guard_value.text, "10%");
	strcpy(config->profile, "auto");
	config->memory_pressure_duration_ns = 30LL * 1000000000;	/* oomd's DurationSec */
	config->output = OUTPUT_TEXT;
	config->log_level = LOGLEVEL_INFO;
	config->kill_timeout_ns = 10LL * 1000000000;
	config->on_evict_timeout_ns = 10LL * 1000000000;
	config->warn_interval_ns = 60LL * 1000000000;	/* earlyoom -r's report interval */
	strcpy(config->kube_api, "auto");
	strcpy(config->kube_pods_client_cert, "auto");	/* the kubelet's identity when readable */
	config->kube_pods_refresh_ns = 10LL * 1000000000;
	config->kube_eviction_status_wait_ns = 5000LL * 1000000;	/* KUBE_EVICTION_STATUS_WAIT_NS */
	config->kube_hard_eviction_status_wait_ns = 5000LL * 1000000;	/* KUBE_HARD_EVICTION_STATUS_WAIT_NS */
	config->kube_handover_termination = true;
	/* On: nothing else tells the scheduler that evictd acted (the kubelet's own condition
	 * never turns on when evictd acts first); doc/DESIGN.md §8 "Pressure taints". */
	config->kube_pressure_taints = true;
	strcpy(config->enforce_node_allocatable, "pods");	/* DefaultNodeAllocatableEnforcement */
	strcpy(config->static_pod_path, CONFIG_DEFAULT_STATIC_POD_PATH);
}

/* DefaultEvictionHard (pkg/kubelet/eviction/defaults_linux.go). */
static const char *const default_hard[][2] = {
	{ "memory.available", "100Mi" },
	{ "nodefs.available", "10%" },
	{ "nodefs.inodesFree", "5%" },
	{ "imagefs.available", "15%" },
	{ "imagefs.inodesFree", "5%" },
};

/*
 * The kubelet fills evictionHard with DefaultEvictionHard only when it is not set at all
 * (v1beta1 SetDefaults_KubeletConfiguration, cmd/kubelet/app/server.go loadConfigFile; for
 * flags, the default value of --eviction-hard): a configuration with evictionSoft alone keeps
 * the five defaults. With mergeDefaultEvictionSettings the defaults fill in every signal
 * evictionHard does not name (KubeletConfiguration.MergeDefaultEvictionSettings).
 */
static void apply_default_hard(struct evictd_config *config)
{
	struct signal_text_map *hard = &config->eviction_hard;

	config->using_default_thresholds = !hard->set;
	if (hard->set && !config->merge_default_eviction_settings)
		return;
	if (!hard->set)
		signal_map_begin(hard, "default");
	for (size_t i = 0; i < sizeof(default_hard) / sizeof(default_hard[0]); i++) {
		enum ev_signal signal;

		if (signal_from_name(default_hard[i][0], &signal) || hard->present[signal])
			continue;
		hard->present[signal] = true;
		strcpy(hard->text[signal], default_hard[i][1]);
		strcpy(hard->source[signal], hard->set && strcmp(hard->origin, "default") ?
					     "default (mergeDefaultEvictionSettings)" : "default");
	}
}

static const char *entry_source(const struct signal_text_map *map, enum ev_signal signal,
				const char *fallback)
{
	if (map->source[signal][0])
		return map->source[signal];
	return map->origin[0] ? map->origin : fallback;
}

/* helpers.go parseThresholdStatements: every entry parsed, an error for any bad one. */
static int add_thresholds(struct evictd_config *config, const struct signal_text_map *map, bool hard)
{
	int err = 0;

	for (int s = 0; s < EV_SIGNAL_COUNT; s++) {
		const char *origin = entry_source(map, s, hard ? "evictionHard" : "evictionSoft");
		struct threshold parsed;
		bool disabled;
		int parse_err;

		if (!map->present[s])
			continue;
		memset(&parsed, 0, sizeof(parsed));
		parse_err = threshold_value_parse(map->text[s], &parsed.value, &disabled);
		if (parse_err == -ERANGE && map->text[s][strlen(map->text[s]) - 1] == '%') {
			log_err("%s: %s<%s: eviction percentage threshold must be from 0%% to 100%%",
				origin, signal_name(s), value_echo(map->text[s]).text);
			err = -EINVAL;
			continue;
		}
		/* parseThresholdStatement: "eviction threshold %v must be positive" (quantity.Sign()
		 * < 0 || quantity.IsZero()); a zero threshold is never crossed. */
		if (parse_err == -ERANGE || (!parse_err && !disabled && !parsed.value.is_percentage &&
					     parsed.value.quantity <= 0)) {
			log_err("%s: %s<%s: eviction threshold must be positive: expected a quantity above "
				"0 or a percentage from 0%% to 100%%", origin, signal_name(s),
				value_echo(map->text[s]).text);
			err = -EINVAL;
			continue;
		}
		if (parse_err) {
			log_err("%s: %s<%s: expected a quantity (100Mi, 1.5Gi, 1e9) or a percentage (10%%)",
				origin, signal_name(s), value_echo(map->text[s]).text);
			err = -EINVAL;
			continue;
		}
		if (signal_meta(s)->derived) {
			/* helpers.go UpdateContainerFsThresholds: custom containerfs values are
			 * not supported; they follow nodefs or imagefs. */
			log_warn("%s: %s<%s ignored: containerfs thresholds follow nodefs (one "
				 "filesystem) or imagefs (split), they cannot be set", origin,
				 signal_name(s), value_echo(map->text[s]).text);
			continue;
		}
		if (disabled)
			continue;
		if (config->n_thresholds >= EV_MAX_THRESHOLDS) {
			log_err("%s: more than %d thresholds", origin, EV_MAX_THRESHOLDS);
			return -E2BIG;
		}
		parsed.signal = s;
		parsed.hard = hard;
		config->thresholds[config->n_thresholds++] = parsed;
	}
	return err;
}

/* helpers.go parseGracePeriods: every entry a non-negative Go duration (evictd: at most 24h). */
static int parse_grace_periods(const struct signal_text_map *map, int64_t *grace_ns)
{
	int err = 0;

	for (int s = 0; s < EV_SIGNAL_COUNT; s++) {
		char key[160];

		if (!map->present[s])
			continue;
		snprintf(key, sizeof(key), "%s: %s", entry_source(map, s, "evictionSoftGracePeriod"),
			 signal_name(s));
		if (option_parse_duration(key, map->text[s], &grace_ns[s]) ||
		    option_check_range(option_by_flag("eviction-soft-grace-period"), key, map->text[s],
				       grace_ns[s]))
			err = -EINVAL;
	}
	return err;
}

/* helpers.go parseMinimumReclaims: every entry parsed, whether a threshold uses it or not. */
static int parse_min_reclaims(const struct signal_text_map *map, struct threshold_value *out)
{
	int err = 0;

	for (int s = 0; s < EV_SIGNAL_COUNT; s++) {
		if (!map->present[s])
			continue;
		if (min_reclaim_parse(map->text[s], &out[s])) {
			log_err("%s: %s=%s: expected a quantity >= 0 (500Mi) or a percentage above 0%% (5%%)",
				entry_source(map, s, "evictionMinimumReclaim"), signal_name(s),
				value_echo(map->text[s]).text);
			err = -EINVAL;
		}
	}
	return err;
}

/* Whether enforceNodeAllocatable names "pods" (kubetypes.NodeAllocatableEnforcementKey). */
static bool enforces_pods_allocatable(const struct evictd_config *config)
{
	char copy[sizeof(config->enforce_node_allocatable)], *saveptr = NULL;

	memcpy(copy, config->enforce_node_allocatable, sizeof(copy));
	for (char *item = strtok_r(copy, ",", &saveptr); item; item = strtok_r(NULL, ",", &saveptr))
		if (!strcmp(item, "pods"))
			return true;
	return false;
}

/* helpers.go ParseThresholdConfig, after apply_default_hard: thresholds, grace periods,
 * minimum reclaims, then the allocatable thresholds. */
static int build_thresholds(struct evictd_config *config)
{
	int64_t grace_ns[EV_SIGNAL_COUNT] = { 0 };
	struct threshold_value min_reclaim[EV_SIGNAL_COUNT];
	int err = 0;

	memset(min_reclaim, 0, sizeof(min_reclaim));
	if (add_thresholds(config, &config->eviction_hard, true))
		err = -EINVAL;
	if (add_thresholds(config, &config->eviction_soft, false))
		err = -EINVAL;
	if (parse_grace_periods(&config->eviction_soft_grace_period, grace_ns))
		err = -EINVAL;
	if (parse_min_reclaims(&config->eviction_minimum_reclaim, min_reclaim))
		err = -EINVAL;

	for (size_t i = 0; i < config->n_thresholds; i++) {
		struct threshold *threshold = &config->thresholds[i];
		const char *name = signal_name(threshold->signal);

		if (!threshold->hard && !config->eviction_soft_grace_period.present[threshold->signal]) {
			log_err("%s: %s<%s: grace period must be specified for the soft eviction threshold: "
				"set evictionSoftGracePeriod / --eviction-soft-grace-period=%s=<duration>",
				entry_source(&config->eviction_soft, threshold->signal, "evictionSoft"), name,
				threshold->value.text, name);
			err = -EINVAL;
		} else if (!threshold->hard) {
			threshold->grace_period_ns = grace_ns[threshold->signal];
			/* helpers.go isHardEvictionThreshold: GracePeriod == 0 is what makes a
			 * threshold hard, so a soft one with a 0s grace period acts as a hard one. */
			if (threshold->grace_period_ns == 0) {
				log_warn("%s: %s<%s has a 0s grace period: the kubelet treats it as a hard "
					 "threshold, and so does evictd", entry_source(&config->eviction_soft,
					 threshold->signal, "evictionSoft"), name, threshold->value.text);
				threshold->hard = true;
			}
		}
		if (config->eviction_minimum_reclaim.present[threshold->signal])
			threshold->min_reclaim = min_reclaim[threshold->signal];
	}
	for (int s = 0; s < EV_SIGNAL_COUNT; s++) {
		bool has_soft = false;

		for (size_t i = 0; i < config->n_thresholds; i++)
			has_soft |= config->thresholds[i].signal == (enum ev_signal)s &&
				    (!config->thresholds[i].hard || config->thresholds[i].grace_period_ns);
		if (config->eviction_soft_grace_period.present[s] && !has_soft &&
		    !config->eviction_soft.present[s])
			log_warn("evictionSoftGracePeriod: %s has no soft threshold; ignored", signal_name(s));
	}

	return err;
}

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


#define WORKLOAD_ROOT_KEY "workloadRoots (--workload-root)"

/* A workload root must name the cgroup v2 directory evictd will kill below, exactly as the
 * never-kill rules compare it (doc/DESIGN.md §6, act/kill.c kill_check_cgroup): absolute,
 * canonical, every component a real directory (no symlink anywhere), on cgroup2. A root that
 * fails any of these made a daemon that never kills; now it is one line and exit 2. A trailing
 * slash only is normalised (with a warning): it names the same directory. The checks apply to
 * --root + path; under a --root that is not / (tests' fixture trees, plain directories) the
 * filesystem type is not checked, everything else is. */
static int check_workload_root(const struct evictd_config *config, char *dir)
{
	char path[PATH_MAX], original[PATH_MAX];
	size_t len = strlen(dir), base_len;
	int err;

	if (dir[0] != '/') {
		log_err("%s: \"%s\": expected an absolute path", WORKLOAD_ROOT_KEY, value_echo(dir).text);
		return -EINVAL;
	}
	memcpy(original, dir, len + 1);
	while (len > 1 && dir[len - 1] == '/')
		dir[--len] = '\0';
	if (strcmp(original, dir) && len > 1)
		log_warn("%s: \"%s\": normalised to \"%s\" (no trailing slash)", WORKLOAD_ROOT_KEY,
			 value_echo(original).text, value_echo(dir).text);
	if (len == 1) {
		log_err("%s: \"%s\": expected a cgroup below the root, not /", WORKLOAD_ROOT_KEY,
			value_echo(original).text);
		return -EINVAL;
	}
	if (!cgroupfs_path_is_canonical(dir)) {
		log_err("%s: \"%s\": expected a canonical path (no \"//\", \".\" or \"..\" component)",
			WORKLOAD_ROOT_KEY, value_echo(dir).text);
		return -EINVAL;
	}
	err = fileio_join_root(path, sizeof(path), config->root, dir);
	if (err) {
		log_err("%s: \"%s\": expected --root and the path together within %d bytes",
			WORKLOAD_ROOT_KEY, value_echo(dir).text, PATH_MAX - 1);
		return err;
	}
	/* Each component below --root: it exists, is no symlink, and is a directory. */
	base_len = strlen(path) - len;
	for (size_t end = base_len + 1; end <= strlen(path); end++) {
		struct stat st;
		char saved = path[end];

		if (saved != '/' && saved != '\0')
			continue;
		path[end] = '\0';
		if (lstat(path, &st)) {
			err = -errno;
			if (saved)	/* a parent is missing */
				log_err("%s: \"%s\": %s: %m: expected an existing cgroup directory",
					WORKLOAD_ROOT_KEY, value_echo(dir).text, value_echo(path + base_len).text);
			else
				log_err("%s: \"%s\": %m: expected an existing cgroup directory",
					WORKLOAD_ROOT_KEY, value_echo(dir).text);
			return err;
		}
		if (S_ISLNK(st.st_mode)) {
			log_err("%s: \"%s\": %s is a symlink: expected a real directory (evictd never kills "
				"through a link)", WORKLOAD_ROOT_KEY, value_echo(dir).text,
				value_echo(path + base_len).text);
			return -ELOOP;
		}
		if (!S_ISDIR(st.st_mode)) {
			log_err("%s: \"%s\": %s is not a directory: expected a cgroup directory",
				WORKLOAD_ROOT_KEY, value_echo(dir).text, value_echo(path + base_len).text);
			return -ENOTDIR;
		}
		path[end] = saved;
	}
	if (!fileio_root_is_host(config->root))
		return 0;	/* a fixture tree: plain directories stand in for cgroupfs */
	err = cgroupfs_check_v2_path(path);
	if (err == -ENOTDIR) {
		log_err("%s: \"%s\": not on a cgroup2 filesystem: expected a cgroup v2 directory",
			WORKLOAD_ROOT_KEY, value_echo(dir).text);
		return err;
	}
	if (err) {
		errno = -err;
		log_err("%s: \"%s\": %m: expected a cgroup v2 directory", WORKLOAD_ROOT_KEY, value_echo(dir).text);
		return err;
	}
	return 0;
}

/* Every duration and seconds option within its range (options.c). Flags and files are
 * checked as they are applied; this catches a configuration built or changed in code. */
static int check_ranges(const struct evictd_config *config)
{
	int err = 0;

	for (size_t i = 0; i < config_n_options; i++) {
		const struct option_spec *spec = &config_options[i];
		char key[96], text[32];
		int64_t value;

		if ((spec->kind != OPT_DURATION && spec->kind != OPT_SECONDS) || !option_range_of(spec))
			continue;
		memcpy(&value, (const char *)config + spec->offset, sizeof(value));
		if (spec->kind == OPT_DURATION)
			duration_format(value, text, sizeof(text));
		else
			snprintf(text, sizeof(text), "%lld", (long long)value);
		snprintf(key, sizeof(key), "%s (--%s)", spec->kubelet_key ? spec->kubelet_key :
							spec->evictd_key ? spec->evictd_key : spec->flag, spec->flag);
		if (option_check_range(spec, key, text, value))
			err = -EINVAL;
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
		if (netaddr_parse_listen("metrics-address", config->metrics_address, &addr, &len) < 0)
			err = -EINVAL;
	}

	/* DESIGN.md §2: the kubelet's defaults and its ParseThresholdConfig; on a host, only
	 * for the directories that exist (config/profile.c). */
	apply_default_hard(config);
	if (config_apply_profile(config))
		err = -EINVAL;
	if (build_thresholds(config))
		err = -EINVAL;

	if (strcmp(config->kube_api, "auto") && strcmp(config->kube_api, "on") && strcmp(config->kube_api, "off") &&
	    strcmp(config->kube_api, "read-only")) {
		log_err("--kube-api: \"%s\": expected auto, on, read-only or off", value_echo(config->kube_api).text);
		err = -EINVAL;
	}
	if (check_ranges(config))
		err = -EINVAL;
	if (finalize_shutdown(config))
		err = -EINVAL;
	for (size_t i = 0; i < config->workload_roots.n; i++)
		if (check_workload_root(config, config->workload_roots.items[i]) ||
		    config_check_host_units(config, config->workload_roots.items[i]))
			err = -EINVAL;
	coexist_static_pod_path(config);	/* an unreadable file is logged, not fatal */
	coexist_shutdown_owner(config);		/* the same */
	return err;
}

size_t config_allocatable_thresholds(const struct evictd_config *config, struct threshold *out,
				     size_t max)
{
	size_t n = 0;

	/* helpers.go addAllocatableThresholds: with "pods" enforced, every hard
	 * memory.available threshold gets an allocatableMemory.available copy (its value and
	 * minimum reclaim, no grace period). */
	if (!enforces_pods_allocatable(config))
		return 0;
	for (size_t i = 0; i < config->n_thresholds && n < max; i++) {
		const struct threshold *source = &config->thresholds[i];

		if (source->signal != EV_SIGNAL_MEMORY_AVAILABLE || !source->hard)
			continue;
		out[n] = *source;
		out[n].signal = EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE;
		out[n].grace_period_ns = 0;
		out[n].derived = true;
		n++;
	}
	return n;
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
	n += config_allocatable_thresholds(config, out + n, max - n);
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
	/* The swap gates (DESIGN.md §1 "Swap and zram"): never act, only hold the memory
	 * thresholds back while swap has room. */
	if (config->swap_guard.on && n < max) {
		memset(&out[n], 0, sizeof(out[n]));
		out[n].signal = EV_SIGNAL_SWAP_AVAILABLE;
		out[n].hard = true;
		out[n].value = config->swap_guard.value;
		n++;
	}
	if (config->zram_guard.on && n < max) {
		memset(&out[n], 0, sizeof(out[n]));
		out[n].signal = EV_SIGNAL_ZRAM_AVAILABLE;
		out[n].hard = true;
		out[n].value = config->zram_guard.value;
		n++;
	}
	/* The memory pressure criterion (DESIGN.md §1 "Memory pressure"), standalone only: a hard
	 * threshold on the share of time not stalled (10000 - PSI, permyriad), which the pressure
	 * watch crosses only once the pressure has stayed above the limit for the duration. */
	if (config_memory_pressure_applies(config) && n < max) {
		memset(&out[n], 0, sizeof(out[n]));
		out[n].signal = EV_SIGNAL_MEMORY_PRESSURE;
		out[n].hard = true;
		out[n].value.quantity = 10000 - config->memory_pressure.limit;
		pressure_criterion_format(&config->memory_pressure, out[n].value.text, sizeof(out[n].value.text));
		n++;
	}
	return n;
}

bool config_memory_pressure_applies(const struct evictd_config *config)
{
	return config->memory_pressure.on && config->workload_roots.n > 0;
}

/* --validate: whom the criterion takes, or why it is not applied. */
static const char *memory_pressure_scope(const struct evictd_config *config)
{
	if (!config->memory_pressure.on)
		return "";
	if (config_memory_pressure_applies(config))
		return " (node: victim by ranking; each workload: itself)";
	return config->profile_effective == PROFILE_KUBERNETES ?
	       " (not applied: kubernetes mode keeps the kubelet's rules)" : " (not applied: no workload roots)";
}

int config_add_default_file(struct evictd_config *config)
{
	char path[PATH_MAX];
	struct stat st;

	if (config->n_config_files)
		return 0;	/* an explicit --config wins */
	if (fileio_join_root(path, sizeof(path), config->root, CONFIG_DEFAULT_FILE)) {
		log_err("config: --root and %s together exceed %d bytes", CONFIG_DEFAULT_FILE, PATH_MAX);
		return -ENAMETOOLONG;
	}
	/* Like the unit's EnvironmentFile=-: absent is fine; anything else is loaded (and a
	 * file that cannot be read is then an error, not silently skipped). */
	if (stat(path, &st) && (errno == ENOENT || errno == ENOTDIR))
		return 0;
	snprintf(config->config_files[0], sizeof(config->config_files[0]), "%s", path);
	config->n_config_files = 1;
	config->config_file_default = true;
	return 0;
}

void config_print(const struct evictd_config *config, FILE *out)
{
	struct threshold allocatable[EV_MAX_THRESHOLDS];
	size_t n_allocatable;
	char buf[160];

	for (size_t i = 0; i < config->n_thresholds; i++) {
		threshold_format(&config->thresholds[i], buf, sizeof(buf));
		fprintf(out, "%s\n", buf);
	}
	/* addAllocatableThresholds' copies, marked so a count of hard lines counts what was
	 * configured. */
	n_allocatable = config_allocatable_thresholds(config, allocatable, EV_MAX_THRESHOLDS);
	for (size_t i = 0; i < n_allocatable; i++) {
		threshold_format(&allocatable[i], buf, sizeof(buf));
		fprintf(out, "derived %s (from memory.available; enforceNodeAllocatable: %s)\n", buf,
			config->enforce_node_allocatable);
	}
	for (size_t i = 0; i < config->n_thresholds; i++) {
		const struct threshold *threshold = &config->thresholds[i];

		if (threshold->min_reclaim.text[0] && !threshold->derived)
			fprintf(out, "min-reclaim %s=%s\n", signal_name(threshold->signal),
				threshold->min_reclaim.text);
	}
	/* Where each threshold came from (DESIGN.md §9), one line each. */
	for (size_t i = 0; i < config->n_thresholds; i++) {
		const struct threshold *threshold = &config->thresholds[i];
		const struct signal_text_map *map = threshold->hard && !threshold->grace_period_ns &&
			config->eviction_hard.present[threshold->signal] ? &config->eviction_hard :
			&config->eviction_soft;

		fprintf(out, "source %s %s: %s\n", threshold->hard ? "hard" : "soft",
				signal_name(threshold->signal), entry_source(map, threshold->signal, "?"));
	}
	for (int sig = 0; sig < EV_SIGNAL_COUNT; sig++) {
		if (config->eviction_soft_grace_period.present[sig])
			fprintf(out, "source grace %s: %s\n", signal_name(sig),
				entry_source(&config->eviction_soft_grace_period, sig, "?"));
		if (config->eviction_minimum_reclaim.present[sig])
			fprintf(out, "source min-reclaim %s: %s\n", signal_name(sig),
				entry_source(&config->eviction_minimum_reclaim, sig, "?"));
	}
	for (size_t i = 0; i < config_n_options; i++)
		if (config->sources[i][0] && (config_options[i].kubelet_key || config_options[i].evictd_key) &&
		    config_options[i].kind != OPT_THRESHOLD_MAP && config_options[i].kind != OPT_SIGNAL_MAP)
			fprintf(out, "source --%s: %s\n", config_options[i].flag, config->sources[i]);
	for (size_t i = 0; i < config->n_config_files; i++)
		fprintf(out, "config %s%s\n", config->config_files[i],
			config->config_file_default ? " (default)" : "");
	if (config->kubelet_process[0])
		fprintf(out, "kubelet-flags-from %s\n", config->kubelet_process);
	if (config->config_dir[0])
		fprintf(out, "config-dir %s\n", config->config_dir);
	fprintf(out, "merge-default-eviction-settings %s\n",
		config->merge_default_eviction_settings ? "true" : "false");
	fprintf(out, "enforce-node-allocatable %s\n", config->enforce_node_allocatable[0] ?
		config->enforce_node_allocatable : "none");
	fprintf(out, "max-pod-grace-period %llds\n", (long long)config->max_pod_grace_period_s);
	duration_format(config->hard_eviction_grace_ns, buf, sizeof(buf));
	fprintf(out, "hard-eviction-grace-period %s\n", buf);
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
	fprintf(out, "swap-guard %s\n", config->swap_guard.on ? config->swap_guard.value.text : "off");
	fprintf(out, "zram-guard %s\n", config->zram_guard.on ? config->zram_guard.value.text : "off");
	pressure_criterion_format(&config->memory_pressure, buf, sizeof(buf));
	fprintf(out, "memory-pressure %s%s\n", buf, memory_pressure_scope(config));
	if (config->warn_memory_available.on)
		fprintf(out, "warn memory.available<%s every %llds\n", config->warn_memory_available.value.text,
			(long long)(config->warn_interval_ns / 1000000000));
	else
		fprintf(out, "warn off\n");
	duration_format(config->warn_ahead_ns, buf, sizeof(buf));
	fprintf(out, "warn-ahead %s\n", config->warn_ahead_ns ? buf : "off");
	duration_format(config->act_ahead_ns, buf, sizeof(buf));
	fprintf(out, "act-ahead %s\n", config->act_ahead_ns ? buf : "off");
	fprintf(out, "profile %s (%s)\n", config_profile_name(config->profile_effective),
		config->profile_reason[0] ? config->profile_reason : "configured");
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
	for (size_t i = 0; i < config->workload_prefs.n; i++) {
		const struct workload_pref *pref = &config->workload_prefs.items[i];

		fprintf(out, "workload-preference %s=", pref->match);
		if (pref->has_priority)
			fprintf(out, "priority:%d%s", pref->priority, pref->preference ? "," : "");
		fprintf(out, "%s\n", workload_pref_name(pref->preference));
	}
	if (config->pods_file[0])
		fprintf(out, "pods-file %s\n", config->pods_file);
	if (config->node_name[0])
		fprintf(out, "node-name %s\n", config->node_name);
	/* Where static pods are known from, and who said so (DESIGN.md §5, "Pod identity"). */
	{
		const struct option_spec *spec = option_by_flag("static-pod-path");
		const char *source = config->sources[spec - config_options];

		fprintf(out, "static-pod-path %s (%s)\n", config->static_pod_path[0] ?
			config->static_pod_path : "none", source[0] ? source : "default");
	}
	fprintf(out, "cgroup-root %s\n", config->kubelet_cgroup_root[0] ? config->kubelet_cgroup_root : "/");
	fprintf(out, "memory-reclaim-before-kill %s\n", config->memory_reclaim_before_kill ? "true" : "false");
	for (size_t i = 0; i < config->reclaim_commands.n; i++)
		fprintf(out, "reclaim-command %s\n", config->reclaim_commands.items[i]);
	duration_format(config->kill_timeout_ns, buf, sizeof(buf));
	fprintf(out, "kill-timeout %s\n", buf);
}

