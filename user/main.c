// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* evictd: kubelet-compatible node-pressure eviction, driven by BPF events. */
#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "config/config.h"
#include "daemon/daemon.h"
#include "ops/report.h"
#include "sys/log.h"

#define EXIT_CONFIG 2

/* Before anything else, and before any thread exists (the API client, libmicrohttpd and
 * libcurl start threads): every thread inherits this mask, so SIGTERM, SIGINT and SIGHUP
 * only ever reach the main loop's signalfd, never a default action in another thread.
 * Children get an empty mask back (sys/subprocess). */
static void block_signals(void)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	/* A closed stdout (event log) or a vanished client must be an error, not a death. */
	signal(SIGPIPE, SIG_IGN);
}

/* Each kill in flight holds a few fds and graceful shutdown terminates every pod at once:
 * take the hard limit, as systemd recommends for daemons that need many. */
static void raise_nofile(void)
{
	struct rlimit limit;

	if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
		limit.rlim_cur = limit.rlim_max;
		setrlimit(RLIMIT_NOFILE, &limit);
	}
}

int main(int argc, char **argv)
{
	static struct evictd_config config;
	static struct daemon daemon;
	int err;

	block_signals();
	config_init_defaults(&config);
	err = config_parse_args(&config, argc, argv);
	if (err > 0)
		return EXIT_SUCCESS;	/* --help, --version */
	/* Finalize even after a parse error, so every bad value is reported in one run. */
	if (config_finalize(&config))
		err = -EINVAL;
	if (err) {
		log_err("invalid configuration; nothing started");
		return EXIT_CONFIG;
	}
	log_set_level(config.log_level);

	if (config.validate) {
		config_print(&config, stdout);
		return EXIT_SUCCESS;
	}
	raise_nofile();
	err = daemon_init(&daemon, &config, argc, argv);
	if (err) {
		log_err("starting: %s", strerror(-err));
		daemon_destroy(&daemon);
		return EXIT_FAILURE;
	}
	if (config.once) {
		struct policy *policy = daemon.policy;
		int status = daemon_once(&daemon);

		if (config.output == OUTPUT_JSON) {
			struct json_object *doc = report_json(&policy->config, &policy->engine, &policy->obs,
							      &policy->eval, &policy->decision);

			puts(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
									 JSON_C_TO_STRING_NOSLASHESCAPE));
			json_object_put(doc);
		} else {
			report_text(stdout, &policy->engine, &policy->obs, &policy->eval, &policy->decision);
		}
		daemon_destroy(&daemon);
		return status;
	}
	err = daemon_run(&daemon);
	daemon_destroy(&daemon);
	return err;
}
