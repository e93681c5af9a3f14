// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer: the YAML front end (KubeletConfiguration / EvictdConfiguration) and finalize.
 * Any input must either be rejected or give a configuration that prints and re-validates. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "sys/log.h"

#define DAY (86400LL * 1000000000LL)

static struct evictd_config config;

/* Every string field must hold its NUL: a setter that wrote past a field would leave the
 * field unterminated or its neighbour changed, and the node name must be a valid name. */
#define TERMINATED(field) (memchr((field), '\0', sizeof(field)) != NULL)

static void check_strings(const struct evictd_config *config)
{
	if (!TERMINATED(config->root) || !TERMINATED(config->kubelet_dir) ||
	    !TERMINATED(config->imagefs_dir) || !TERMINATED(config->containerfs_dir) ||
	    !TERMINATED(config->bpf_pin_dir) || !TERMINATED(config->state_dir) ||
	    !TERMINATED(config->logind_dropin_dir) || !TERMINATED(config->pods_file) ||
	    !TERMINATED(config->node_name) || !TERMINATED(config->kubelet_cgroup_root) ||
	    !TERMINATED(config->kube_api) || !TERMINATED(config->kube_api_server) ||
	    !TERMINATED(config->kube_token_file) || !TERMINATED(config->kube_ca_file) ||
	    !TERMINATED(config->metrics_address) || !TERMINATED(config->event_log) ||
	    !TERMINATED(config->control_socket))
		abort();
	if (config->node_name[0] && !config_is_dns1123_subdomain(config->node_name))
		abort();
	if (config->workload_roots.n > CONFIG_MAX_LIST || config->reclaim_commands.n > CONFIG_MAX_LIST)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *sink;

	log_set_level((enum log_level)0);	/* errors are the point here; keep the run quiet */
	config_init_defaults(&config);
	if (config_load_yaml(&config, (const char *)data, size, "fuzz.yaml"))
		return 0;
	check_strings(&config);
	if (config_finalize(&config))
		return 0;
	/* An accepted configuration must be internally consistent. */
	if (config.n_thresholds > EV_MAX_THRESHOLDS)
		abort();
	for (size_t i = 0; i < config.n_thresholds; i++) {
		const struct threshold *threshold = &config.thresholds[i];

		if (threshold->signal >= EV_SIGNAL_OOM_GUARD)
			abort();
		if (!threshold->hard && threshold->grace_period_ns < 0)
			abort();
		/* parseThresholdStatement keeps "0.0%" and "100.0%" (only "0%" and "100%" as
		 * written mean no threshold): [0, 1] inclusive. */
		if (threshold->value.is_percentage &&
		    (!(threshold->value.percentage >= 0) || threshold->value.percentage > 1))
			abort();
		if (!threshold->value.is_percentage && threshold->value.quantity <= 0)
			abort();
	}
	/* Every duration within its range (options.c): none near what overflows a clock. */
	if (config.housekeeping_interval_ns < 100000000LL || config.housekeeping_interval_ns > DAY ||
	    config.pressure_transition_period_ns < 0 || config.pressure_transition_period_ns > DAY ||
	    config.kill_timeout_ns <= 0 || config.kill_timeout_ns > DAY ||
	    config.shutdown_grace_period_ns < 0 || config.shutdown_grace_period_ns > DAY ||
	    config.max_pod_grace_period_s < 0 || config.max_pod_grace_period_s > 86400)
		abort();
	for (size_t i = 0; i < config.n_thresholds; i++)
		if (config.thresholds[i].grace_period_ns > DAY ||
		    (!config.thresholds[i].value.is_percentage && config.thresholds[i].value.quantity <= 0))
			abort();
	if (config.shutdown_grace_period_critical_pods_ns &&
	    config.shutdown_grace_period_critical_pods_ns >= config.shutdown_grace_period_ns)
		abort();
	sink = fopen("/dev/null", "w");
	if (sink) {
		config_print(&config, sink);
		fclose(sink);
	}
	return 0;
}
