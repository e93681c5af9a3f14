/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The daemon: read signals, run the engine, decide; the event loop around it. */
#ifndef EVICTD_DAEMON_H
#define EVICTD_DAEMON_H

#include "config.h"
#include "rank.h"
#include "report.h"
#include "signals.h"
#include "thresholds.h"

struct daemon {
	struct evictd_config config;
	struct signal_source source;
	struct eviction_engine engine;
	enum fs_layout engine_layout;	/* layout the engine's containerfs thresholds follow */
	bool engine_ready;
	struct observations obs;
	struct evaluation eval;
	struct decision decision;
	struct pod **candidates;	/* ranked, owned by the pods source */
	size_t n_candidates;
	int64_t (*now_ns)(void);	/* monotonic clock; injectable */

	/* For SIGHUP: the command line the configuration came from. */
	int argc;
	char **argv;
	/* What the last logged decision was, so each decision is logged once. */
	int logged_threshold_index;
	const struct pod *logged_victim;
	uint64_t evaluations;
};

int64_t daemon_monotonic_ns(void);
void daemon_init(struct daemon *daemon, const struct evictd_config *config);
/* Re-read the configuration from daemon->argv; on any error keep the old one and say why.
 * Returns 0 when the new configuration is in force. */
int daemon_reload(struct daemon *daemon);
/* Log the current decision if it differs from the last one logged. */
void daemon_log_decision(struct daemon *daemon);
/* Re-read the signals in mask (0 = all), evaluate, fill daemon->decision. */
int daemon_evaluate(struct daemon *daemon, uint32_t mask);
/* Run until SIGTERM/SIGINT; returns the exit status. */
int daemon_run(struct daemon *daemon);

#endif
