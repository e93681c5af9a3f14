// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer: the YAML front end (KubeletConfiguration / EvictdConfiguration) and finalize.
 * Any input must either be rejected or give a configuration that prints and re-validates. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "sys/log.h"

static struct evictd_config config;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *sink;

	log_set_level((enum log_level)0);	/* errors are the point here; keep the run quiet */
	config_init_defaults(&config);
	if (config_load_yaml(&config, (const char *)data, size, "fuzz.yaml"))
		return 0;
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
		if (threshold->value.is_percentage &&
		    (threshold->value.percentage <= 0 || threshold->value.percentage >= 1))
			abort();
		if (!threshold->value.is_percentage && threshold->value.quantity < 0)
			abort();
	}
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
