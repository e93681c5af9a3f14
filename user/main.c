// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* evictd: kubelet-compatible node-pressure eviction, driven by BPF events. */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>

#include "config/config.h"
#include "daemon/daemon.h"
#include "sys/log.h"

#define EXIT_CONFIG 2

int main(int argc, char **argv)
{
	static struct evictd_config config;
	static struct daemon daemon;
	int err;

	/* A closed stdout (event log) or a vanished client must be an error, not a death. */
	signal(SIGPIPE, SIG_IGN);
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

	daemon_init(&daemon, &config);
	daemon.argc = argc;
	daemon.argv = argv;
	if (config.once) {
		daemon_handle(&daemon, 0);
		if (config.output == OUTPUT_JSON) {
			struct json_object *doc = report_json(&daemon.config, &daemon.engine, &daemon.obs,
							      &daemon.eval, &daemon.decision);

			puts(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
									 JSON_C_TO_STRING_NOSLASHESCAPE));
			json_object_put(doc);
		} else {
			report_text(stdout, &daemon.engine, &daemon.obs, &daemon.eval, &daemon.decision);
		}
		daemon_destroy(&daemon);
		return EXIT_SUCCESS;
	}
	err = daemon_run(&daemon);
	daemon_destroy(&daemon);
	return err;
}
