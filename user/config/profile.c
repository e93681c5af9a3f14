// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Profiles (DESIGN.md "Profiles: Kubernetes, server, desktop"): which defaults suit the node.
 * Kubernetes keeps the kubelet's model as it is; a host without a kubelet gets no disk
 * threshold for a directory it does not have, swap-aware memory thresholds, and its own units
 * as workloads. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "config/config.h"
#include "config/options.h"
#include "sys/fileio.h"
#include "sys/log.h"

const char *config_profile_name(enum config_profile profile)
{
	switch (profile) {
	case PROFILE_KUBERNETES:
		return "kubernetes";
	case PROFILE_SERVER:
		return "server";
	case PROFILE_DESKTOP:
		return "desktop";
	}
	return "unknown";
}

int host_guard_parse(struct host_guard *guard, const char *key, const char *value)
{
	struct threshold_value parsed;
	bool disabled;

	guard->set = true;
	if (!strcasecmp(value, "off") || !strcasecmp(value, "false") || !strcmp(value, "0")) {
		guard->on = false;
		return 0;
	}
	/* Like a threshold: positive, 0% and 100% as written mean nothing. */
	if (threshold_value_parse(value, &parsed, &disabled) || disabled ||
	    (!parsed.is_percentage && parsed.quantity <= 0)) {
		log_err("%s: \"%s\": expected a positive quantity (512Mi), a percentage (10%%) or off",
			key, value_echo(value).text);
		return -EINVAL;
	}
	guard->on = true;
	guard->value = parsed;
	return 0;
}

static bool exists_below(const struct evictd_config *config, const char *dir, const char *file)
{
	char path[PATH_MAX], joined[PATH_MAX];
	struct stat st;

	if (snprintf(joined, sizeof(joined), "%s%s%s", dir, file ? "/" : "", file ? file : "") >=
	    (int)sizeof(joined))
		return false;
	if (fileio_join_root(path, sizeof(path), config->root, joined))
		return false;
	return stat(path, &st) == 0;
}

/* A graphical logind session: a TYPE=x11 or TYPE=wayland line in a /run/systemd/sessions
 * file (systemd src/login/logind-session.c session_save writes them). */
static bool has_graphical_session(const struct evictd_config *config)
{
	char dir[PATH_MAX], path[PATH_MAX + 256], buf[4096];
	struct dirent *entry;
	bool found = false;
	DIR *sessions;

	if (fileio_join_root(dir, sizeof(dir), config->root, "/run/systemd/sessions") ||
	    !(sessions = opendir(dir)))
		return false;
	while (!found && (entry = readdir(sessions))) {
		ssize_t len;

		if (entry->d_name[0] == '.' || strchr(entry->d_name, '.'))
			continue;	/* "2" is a session; "2.ref" a FIFO */
		snprintf(path, sizeof(path), "%s/%s", dir, entry->d_name);
		len = fileio_read_at(AT_FDCWD, path, buf, sizeof(buf));
		if (len <= 0)
			continue;
		found = strstr(buf, "\nTYPE=x11\n") || strstr(buf, "\nTYPE=wayland\n");
	}
	closedir(sessions);
	return found;
}

/* Anything that says Kubernetes: an input only it has, or the kubelet's directory. */
static bool kubernetes_evidence(const struct evictd_config *config, char *why, size_t len)
{
	if (config->pods_file[0])
		snprintf(why, len, "--pods-file is set");
	else if (config->kubelet_process[0])
		snprintf(why, len, "--kubelet-flags-from is set");
	else if (config->kubelet_config[0])
		snprintf(why, len, "--kubelet-config is set");
	else if (config->kube_api_server[0] || !strcmp(config->kube_api, "on") ||
		 !strcmp(config->kube_api, "read-only"))
		snprintf(why, len, "the Kubernetes API is configured");
	else if (exists_below(config, config->kubelet_dir, NULL))
		snprintf(why, len, "%.120s exists", config->kubelet_dir);
	else
		return false;
	return true;
}

static int resolve(struct evictd_config *config)
{
	char why[sizeof(config->profile_reason)];

	if (!strcmp(config->profile, "kubernetes") || !strcmp(config->profile, "server") ||
	    !strcmp(config->profile, "desktop")) {
		config->profile_effective = config->profile[0] == 'k' ? PROFILE_KUBERNETES :
					    config->profile[0] == 's' ? PROFILE_SERVER : PROFILE_DESKTOP;
		snprintf(config->profile_reason, sizeof(config->profile_reason), "--profile");
		return 0;
	}
	if (strcmp(config->profile, "auto")) {
		log_err("--profile: \"%s\": expected auto, kubernetes, server or desktop",
			value_echo(config->profile).text);
		return -EINVAL;
	}
	if (!config->workload_roots.n && kubernetes_evidence(config, why, sizeof(why))) {
		config->profile_effective = PROFILE_KUBERNETES;
		snprintf(config->profile_reason, sizeof(config->profile_reason), "auto: %.150s", why);
		return 0;
	}
	config->profile_effective = has_graphical_session(config) ? PROFILE_DESKTOP : PROFILE_SERVER;
	snprintf(config->profile_reason, sizeof(config->profile_reason), "auto: %s%s",
		 config->workload_roots.n ? "--workload-root is set" :
		 "no kubelet (no kubelet directory, pods file or API)",
		 config->profile_effective == PROFILE_DESKTOP ? ", a graphical session" : "");
	return 0;
}

/* The kubelet's default disk thresholds watch /var/lib/kubelet and the runtime's image store
 * (a missing image dir falls back to nodefs, signals.c fs_read_or_nodefs); on a host without
 * them they judged the host's own disk by the kubelet's 10%/15% and called an 85%-full root
 * DiskPressure. Defaults only: a configured threshold stays. */
static void drop_absent_disk_defaults(struct evictd_config *config)
{
	static const struct {
		enum ev_signal signal;
		bool imagefs;
	} disk[] = {
		{ EV_SIGNAL_NODEFS_AVAILABLE, false }, { EV_SIGNAL_NODEFS_INODES_FREE, false },
		{ EV_SIGNAL_IMAGEFS_AVAILABLE, true }, { EV_SIGNAL_IMAGEFS_INODES_FREE, true },
	};
	struct signal_text_map *hard = &config->eviction_hard;

	for (size_t i = 0; i < sizeof(disk) / sizeof(disk[0]); i++) {
		const char *dir = disk[i].imagefs ? config->imagefs_dir : config->kubelet_dir;
		enum ev_signal s = disk[i].signal;

		if (!hard->present[s] || strncmp(hard->source[s], "default", 7) ||
		    exists_below(config, dir, NULL))
			continue;
		hard->present[s] = false;
		log_debug("profile %s: %s default threshold off: %s does not exist",
			  config_profile_name(config->profile_effective), signal_name(s), dir);
	}
}

static int add_root(struct evictd_config *config, const char *dir)
{
	struct string_list *roots = &config->workload_roots;

	if (roots->n >= CONFIG_MAX_LIST || strlen(dir) >= sizeof(roots->items[0]))
		return -E2BIG;
	strcpy(roots->items[roots->n++], dir);
	return 0;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The machine's own units as workloads: system.slice's services, and in user.slice each
 * user's slice's children (user@UID.service, session-N.scope), as systemd-oomd watches them
 * (units/user@.service.in ManagedOOMMemoryPressure=kill). Found at start. */
static void default_workload_roots(struct evictd_config *config)
{
	const char *mount = exists_below(config, "/sys/fs/cgroup", "cgroup.controllers") ?
			    "/sys/fs/cgroup" : "/sys/fs/cgroup/unified";
	char dir[PATH_MAX], path[PATH_MAX];
	char *names[CONFIG_MAX_LIST];
	struct dirent *entry;
	size_t n_names = 0;
	DIR *users;

	snprintf(dir, sizeof(dir), "%s/system.slice", mount);
	if (exists_below(config, dir, NULL))
		add_root(config, dir);
	snprintf(dir, sizeof(dir), "%s/user.slice", mount);
	if (!fileio_join_root(path, sizeof(path), config->root, dir) && (users = opendir(path))) {
		while ((entry = readdir(users)) && n_names < CONFIG_MAX_LIST)
			if (!strncmp(entry->d_name, "user-", 5) && strstr(entry->d_name, ".slice") &&
			    entry->d_type == DT_DIR && (names[n_names] = strdup(entry->d_name)))
				n_names++;
		closedir(users);
		qsort(names, n_names, sizeof(names[0]), compare_names);
		for (size_t i = 0; i < n_names; i++) {
			char user_dir[PATH_MAX];

			if (snprintf(user_dir, sizeof(user_dir), "%s/%s", dir, names[i]) < (int)sizeof(user_dir))
				add_root(config, user_dir);
			free(names[i]);
		}
	}
	if (!config->workload_roots.n)
		log_warn("profile %s: no system.slice or user slice below %s: no workloads, only the "
			 "signals are watched", config_profile_name(config->profile_effective), mount);
}

/* systemd-oomd's defaults (src/oom/oomd-manager.h: 60% of full avg10 for 30 s) on a desktop,
 * where a stalled session is lost long before MemAvailable runs out; off on a server, whose
 * batch jobs may stall in reclaim by design, and in Kubernetes (the kubelet has no such rule). */
static int apply_pressure(struct evictd_config *config)
{
	const char *text = config->memory_pressure_text[0] ? config->memory_pressure_text :
			   config->profile_effective == PROFILE_DESKTOP ? "full avg10 60%" : "off";

	memset(&config->memory_pressure, 0, sizeof(config->memory_pressure));
	if (pressure_criterion_parse(text, &config->memory_pressure)) {
		log_err("--memory-pressure-limit: \"%s\": expected [some|full] [avg10|avg60|total] and a "
			"percentage below 100%% (full avg10 60%%), or off", value_echo(text).text);
		return -EINVAL;
	}
	config->memory_pressure.duration_ns = config->memory_pressure_duration_ns;
	return 0;
}

int config_apply_profile(struct evictd_config *config)
{
	int err = resolve(config);

	if (!err)
		err = apply_pressure(config);
	if (err || config->profile_effective == PROFILE_KUBERNETES)
		return err;
	drop_absent_disk_defaults(config);
	/* earlyoom's defaults: act when MemAvailable and SwapFree are both below 10% (earlyoom
	 * main.c mem_term_percent, swap_term_percent). Kubernetes keeps the kubelet's formula. */
	if (!config->swap_guard.set) {
		host_guard_parse(&config->swap_guard, "swap-guard", "10%");
		config->swap_guard.set = false;	/* still the default */
	}
	if (!config->zram_guard.set) {
		host_guard_parse(&config->zram_guard, "zram-guard", "10%");
		config->zram_guard.set = false;
	}
	if (!config->workload_roots.n)
		default_workload_roots(config);
	return 0;
}
