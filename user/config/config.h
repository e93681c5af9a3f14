/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Configuration: KubeletConfiguration YAML (eviction and shutdown fields), kubelet-style
 * flags, and evictd's own options, all described by one option table. Flags override files. */
#ifndef EVICTD_CONFIG_H
#define EVICTD_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/pressure.h"
#include "core/thresholds.h"
#include "pods/prefs.h"

#define CONFIG_MAX_SHUTDOWN_GROUPS 32
#define CONFIG_MAX_LIST 16
#define CONFIG_MAX_FILES 8
#define CONFIG_MAX_OPTIONS 80
/* The kubelet's staticPodPath defaults to "" (none: pkg/kubelet/apis/config/v1beta1/defaults.go
 * SetDefaults_KubeletConfiguration leaves it unset); kubeadm writes this one into every
 * node's KubeletConfiguration (cmd/kubeadm/app/componentconfigs/kubelet.go Default,
 * kubeadmapiv1.DefaultManifestsDir), the common case evictd assumes when it knows no better. */
#define CONFIG_DEFAULT_STATIC_POD_PATH "/etc/kubernetes/manifests"	/* rows of the option table (options.c checks) */

enum output_format {
	OUTPUT_TEXT,
	OUTPUT_JSON,
};

/* A repeatable option (--workload-root, --reclaim-command). */
struct string_list {
	char items[CONFIG_MAX_LIST][PATH_MAX];
	size_t n;
};

struct shutdown_group {
	int32_t priority;		/* pods with priority >= this (and < the next group) */
	int64_t grace_period_s;		/* shutdownGracePeriodSeconds */
};

/* A kubelet map field (signal -> text) as configured, before parsing its values. */
struct signal_text_map {
	bool set;			/* given by some source; an empty map still counts */
	char origin[64];		/* "evictionHard" or "--eviction-hard", for messages */
	bool present[EV_SIGNAL_COUNT];
	char text[EV_SIGNAL_COUNT][32];
	/* Where each entry came from, for --validate: "--eviction-hard", "default",
	 * "/etc/kubelet.yaml: evictionHard". */
	char source[EV_SIGNAL_COUNT][96];
};

/* A host guard (--swap-guard, --zram-guard): a threshold value, or off. set: configured by
 * some source (the host profile fills in only what is not). */
struct host_guard {
	bool on;
	bool set;
	struct threshold_value value;
};

/* What kind of node evictd runs on (DESIGN.md "Profiles"): resolved from --profile by
 * config_finalize (config/profile.c). */
enum config_profile {
	PROFILE_KUBERNETES,	/* the kubelet's model, unchanged */
	PROFILE_SERVER,		/* a host without a kubelet */
	PROFILE_DESKTOP,	/* a host with a graphical session */
};

struct evictd_config {
	/* KubeletConfiguration, as configured. */
	struct signal_text_map eviction_hard;
	struct signal_text_map eviction_soft;
	struct signal_text_map eviction_soft_grace_period;
	struct signal_text_map eviction_minimum_reclaim;
	bool merge_default_eviction_settings;		/* mergeDefaultEvictionSettings */
	/* enforceNodeAllocatable (default ["pods"]): "pods" derives allocatableMemory.available
	 * from the hard memory.available thresholds (helpers.go addAllocatableThresholds). */
	char enforce_node_allocatable[128];		/* comma-separated, as configured */
	int64_t max_pod_grace_period_s;			/* evictionMaxPodGracePeriod; 0 = none */
	/* evictd: SIGTERM grace of a hard eviction, and the least a soft one gets (0: cgroup.kill
	 * at once; the kubelet: 1s, immediateEvictionGracePeriodSeconds and its pod workers'
	 * floor). DESIGN.md, deliberate differences. */
	int64_t hard_eviction_grace_ns;
	int64_t pressure_transition_period_ns;		/* default 5m */
	int64_t housekeeping_interval_ns;		/* default 10s */
	int64_t shutdown_grace_period_ns;
	int64_t shutdown_grace_period_critical_pods_ns;
	struct shutdown_group shutdown_groups[CONFIG_MAX_SHUTDOWN_GROUPS];
	size_t n_shutdown_groups;

	/* evictd's own options. */
	char config_files[CONFIG_MAX_FILES][PATH_MAX];
	size_t n_config_files;
	bool config_file_default;		/* config_files[0] is CONFIG_DEFAULT_FILE, none given */
	char config_dir[PATH_MAX];		/* kubelet --config-dir drop-ins, after the files */
	char kubelet_process[32];		/* "", a pid or "auto": read the running kubelet's */
	char root[PATH_MAX];			/* prefix for every /proc, /sys path; "" = / */
	char kubelet_dir[PATH_MAX];		/* nodefs; kubelet --root-dir */
	char imagefs_dir[PATH_MAX];
	char containerfs_dir[PATH_MAX];		/* "" = same as imagefs_dir */
	char bpf_pin_dir[PATH_MAX];
	char state_dir[PATH_MAX];		/* persisted state (shutdown times) */
	char logind_dropin_dir[PATH_MAX];	/* where InhibitDelayMaxSec is raised */
	struct string_list workload_roots;	/* standalone mode when non-empty */
	/* Standalone: priority and prefer/avoid/never by unit name pattern (pods/prefs.h). */
	struct workload_prefs workload_prefs;
	/* A workload root that is a cgroup root or holds the host's own units (init.scope,
	 * system.slice, user.slice, session.slice) is refused unless this is set; then warned. */
	bool allow_host_units;
	/* --on-evict: a command (sh -c) run after each eviction and warning, bounded by
	 * on_evict_timeout_ns, never waited for (ops/notify_hook.h). "" = none. */
	char on_evict[PATH_MAX];
	int64_t on_evict_timeout_ns;
	/* Emit org.evictd.Evictd1.Evicted on the system bus (sys/dbus_signal.h). */
	bool dbus_signal;
	char pods_file[PATH_MAX];		/* PodList JSON (Kubernetes mode, offline) */
	char node_name[256];			/* keep only pods bound to this node */
	char kubelet_cgroup_root[PATH_MAX];	/* kubelet cgroupRoot; "" = / */
	char kubelet_config[PATH_MAX];		/* the kubelet's own file, read to compare (config/coexist.h) */
	/* The kubelet's staticPodPath, below --root: static pods are known from it (pods.h).
	 * "" = none. Resolved by config_finalize (config_resolve_static_pod_path). */
	char static_pod_path[PATH_MAX];
	bool memory_reclaim_before_kill;
	struct string_list reclaim_commands;	/* DiskPressure; empty = crictl defaults */
	int64_t kill_timeout_ns;		/* cgroup.kill -> populated 0 */
	/* Kubernetes API reporting. */
	char kube_api[16];			/* auto, on, read-only, off */
	char kube_api_server[512];		/* "" = in-cluster */
	char kube_token_file[PATH_MAX];
	char kube_ca_file[PATH_MAX];
	char kube_pods_client_cert[PATH_MAX];	/* auto, none or a PEM file (cert and key) */
	int64_t kube_pods_refresh_ns;
	int64_t kube_eviction_status_wait_ns;	/* a soft kill held for its status patch, at most */
	int64_t kube_hard_eviction_status_wait_ns;	/* a hard kill held for it, at most */
	bool kube_handover_termination;		/* the kubelet terminates a pod whose patch landed */
	bool kube_pressure_taints;
	bool taint_out_of_service_on_shutdown;
	char metrics_address[PATH_MAX];		/* "host:port"; "" or "off": no server */
	char event_log[PATH_MAX];		/* "-": stdout; "off": in memory only */
	int64_t event_log_max_size;		/* bytes; the file is rotated before passing it; 0: no cap */
	int64_t event_log_max_files;		/* rotated files kept (FILE.1 ... FILE.N) */
	int64_t realtime_priority;		/* SCHED_FIFO priority of the loop; 0: off */
	char control_socket[PATH_MAX];
	bool dry_run;
	bool once;
	bool validate;
	bool no_bpf;
	bool no_page_cache_bpf;
	bool bpf_inspect;			/* attach the inspection-only BPF programs */
	bool memory_refault_aware;		/* active file cache reclaimable unless refaulting */
	bool no_psi;				/* no PSI trigger: poll only (benchmarks) */			/* leave out the per-folio page-cache programs */
	bool daemonset_last;
	bool oom_guard;
	struct threshold_value oom_guard_value;	/* MemAvailable below this (capped) */
	struct host_guard swap_guard;		/* swap.available below this: swap short */
	struct host_guard zram_guard;		/* zram.available below this: swap short */
	/* The memory pressure criterion (core/pressure.h) as configured ("" = the profile's),
	 * and parsed by config_apply_profile with its duration. */
	char memory_pressure_text[64];
	int64_t memory_pressure_duration_ns;
	struct pressure_criterion memory_pressure;
	/* The pre-kill warning (DESIGN.md §9 "Warnings"): memory.available below this, under the
	 * swap gate, while no threshold acts; said at most once per warn_interval_ns. */
	struct host_guard warn_memory_available;
	int64_t warn_interval_ns;
	/* Seeing ahead (doc/DESIGN.md "Seeing ahead"); 0: off. Warn when a hard threshold's time to
	 * exhaustion is below warn_ahead_ns; act on it when below act_ahead_ns and sure. */
	int64_t warn_ahead_ns;
	int64_t act_ahead_ns;
	char profile[16];			/* auto, kubernetes, server, desktop */
	enum config_profile profile_effective;	/* config_finalize */
	char profile_reason[160];		/* why, for --validate and the start line */
	enum output_format output;
	int log_level;

	/* Where each option's value came from (by option table row): "--flag" or
	 * "file: key"; "" = the default. Printed by --validate. */
	char sources[CONFIG_MAX_OPTIONS][96];

	/* Derived by config_finalize(): the effective kubelet thresholds (containerfs not yet
	 * added: that needs the filesystem layout, see config_effective_thresholds). */
	struct threshold thresholds[EV_MAX_THRESHOLDS];
	size_t n_thresholds;
	bool using_default_thresholds;
};

/* Errors and warnings go to the log, one line per bad value naming the key, the value and
 * what was expected. Returns 0, or -EINVAL after at least one error. */
void config_init_defaults(struct evictd_config *config);
/* Parse argv (argv[0] skipped): first collects --config files, loads them in order, then
 * applies the flags so that flags win. Handles --help/--version by printing and returning
 * 1 (caller exits 0). */
int config_parse_args(struct evictd_config *config, int argc, char **argv);
/* Without --config, CONFIG_DEFAULT_FILE below --root joins the files when it exists (a missing
 * one is no error; one that cannot be read is, when loaded). 0 or -errno after one line. */
#define CONFIG_DEFAULT_FILE "/etc/evictd/config.yaml"
int config_add_default_file(struct evictd_config *config);
/* Load one YAML file (multi-document: KubeletConfiguration and/or EvictdConfiguration). */
int config_load_file(struct evictd_config *config, const char *path);
/* A kubelet --config-dir drop-in: a KubeletConfiguration merged into what is there the way
 * the kubelet merges it (mergeKubeletConfigurations: a JSON merge patch, then unmarshalled
 * over the configuration): maps key by key, a null changes nothing, anything else replaces. */
int config_load_dropin_file(struct evictd_config *config, const char *path);
/* Every *.conf file below dir (recursively, in the lexical order of filepath.WalkDir) as a
 * drop-in. 0 or -errno after one line per problem. */
int config_load_dropin_dir(struct evictd_config *config, const char *dir);
/* The running kubelet's effective configuration (opt-in): its --config file, its
 * --config-dir drop-ins and its command-line flags, read from /proc/<pid>/cmdline under
 * --root. which is a pid or "auto" (the process named kubelet). */
int config_load_kubelet_process(struct evictd_config *config, const char *which);
/* Same from a buffer (fuzzing, tests); name is used in messages. */
int config_load_yaml(struct evictd_config *config, const char *yaml, size_t len, const char *name);
/* Apply one option by its flag name (without "--") and value; NULL value for a bare bool. */
int config_apply_flag(struct evictd_config *config, const char *flag, const char *value);
/* Whether name is a Kubernetes DNS-1123 subdomain (apimachinery IsDNS1123Subdomain), the
 * form a node name must have. */
bool config_is_dns1123_subdomain(const char *name);
/* Build thresholds from the maps, apply the default and containerfs rules, validate. */
int config_finalize(struct evictd_config *config);

/* config/host_guard.c: a workload root that is a cgroup root or whose children are the host's
 * own units (init.scope, system.slice, user.slice, session.slice) is refused with the reason,
 * or only warned about with allow_host_units. dir is below config->root. 0 or -EINVAL. */
int config_check_host_units(const struct evictd_config *config, const char *dir);

/* The allocatableMemory.available thresholds derived from the hard memory.available ones when
 * enforceNodeAllocatable contains "pods" (DESIGN.md §2). Returns the count written (<= max). */
size_t config_allocatable_thresholds(const struct evictd_config *config, struct threshold *out,
				     size_t max);

/* Thresholds with containerfs derived for a filesystem layout (DESIGN.md §2): containerfs gets
 * imagefs's thresholds when imagefs holds the writable layers, else nodefs's; the
 * allocatableMemory.available ones; plus the OOM guard when enabled. Returns the count written (<= max). */
/* The memory pressure criterion is on and evictd is standalone (workload roots): Kubernetes
 * mode keeps the kubelet's rules. */
bool config_memory_pressure_applies(const struct evictd_config *config);
size_t config_effective_thresholds(const struct evictd_config *config, enum fs_layout layout,
				   struct threshold *out, size_t max);

/* config/profile.c: resolve --profile (auto: kubernetes when the kubelet's directory exists
 * below --root or Kubernetes inputs are configured; else desktop with a graphical logind
 * session, else server) and apply the host profile's defaults: the kubelet's default disk
 * thresholds only for directories that exist, swap and zram guards, and system.slice and
 * user.slice's user slices as workload roots when none is configured. 0 or -EINVAL. */
int config_apply_profile(struct evictd_config *config);
const char *config_profile_name(enum config_profile profile);
/* --swap-guard and --zram-guard: a threshold value or off, one error line on failure. */
int host_guard_parse(struct host_guard *guard, const char *key, const char *value);

/* The effective configuration, one item per line, thresholds in kubelet syntax. */
void config_print(const struct evictd_config *config, FILE *out);
void config_usage(FILE *out);

#endif
