// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The configuration after every source: defaults, the kubelet's threshold rules
 * (config_finalize), containerfs derivation and --validate's printout. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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
	/* Off: the DaemonSet controller does not tolerate evictd.io taints (doc/DESIGN.md §8). */
	config->kube_pressure_taints = false;
}

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
		/* helpers.go parseThresholdStatement: "eviction threshold %v must be positive"
		 * (quantity.Sign() < 0 || quantity.IsZero()); a zero threshold is never crossed. */
		if (parse_err == -ERANGE || (!parse_err && !disabled && !threshold->value.is_percentage &&
					     threshold->value.quantity <= 0)) {
			log_err("%s: %s<%s: eviction threshold must be positive: expected a quantity above "
				"0 or a percentage from 0%% to 100%%", origin, signal_name(s),
				value_echo(map->text[s]).text);
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

	/* DESIGN.md §2: the defaults apply only when no threshold at all is configured. */
	if (!config->eviction_hard.set && !config->eviction_soft.set) {
		struct signal_text_map defaults;

		signal_map_begin(&defaults, "default");
		for (size_t i = 0; i < sizeof(default_hard) / sizeof(default_hard[0]); i++)
			signal_map_put(&defaults, "default", default_hard[i][0], default_hard[i][1]);
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
			} else {
				const char *text = grace->text[threshold->signal];
				char key[96];

				snprintf(key, sizeof(key), "%s: %s",
					 grace->origin[0] ? grace->origin : "evictionSoftGracePeriod", name);
				if (option_parse_duration(key, text, &threshold->grace_period_ns) ||
				    option_check_range(option_by_flag("eviction-soft-grace-period"), key, text,
						       threshold->grace_period_ns))
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
		log_err("--kube-api: \"%s\": expected auto, on or off", value_echo(config->kube_api).text);
		err = -EINVAL;
	}
	if (check_ranges(config))
		err = -EINVAL;
	if (finalize_shutdown(config))
		err = -EINVAL;
	for (size_t i = 0; i < config->workload_roots.n; i++)
		if (check_workload_root(config, config->workload_roots.items[i]))
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

