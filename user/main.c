// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* evictd: kubelet-compatible node-pressure eviction, driven by BPF events. */
#include <errno.h>
#include <limits.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "config/coexist.h"
#include "config/config.h"
#include "act/can_evict.h"
#include "daemon/daemon.h"
#include "ops/control.h"
#include "ops/report.h"
#include "bpf_loader/bpf_loader.h"
#include "sys/lockfile.h"
#include "sys/log.h"

#define EXIT_CONFIG 2
/* --once without --dry-run on a node where evictd cannot evict (doc/DESIGN.md "Cannot act"). */
#define EXIT_CANNOT_EVICT 3

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
	int lock_fd = -1, err;

	block_signals();
	config_init_defaults(&config);
	/* Until the configuration is valid, errors are usage errors: "evictd: ..." lines. */
	log_set_program("evictd");
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
	log_set_program(NULL);
	log_set_level(config.log_level);
	if (!config.no_bpf) {
		char why[PATH_MAX + 128];
		bool mount_needed;

		if (bpf_loader_check_pin_dir(config.bpf_pin_dir, &mount_needed, why, sizeof(why))) {
			log_err("bpf-pin-dir: \"%s\": %s", config.bpf_pin_dir, why);
			log_err("invalid configuration; nothing started");
			return EXIT_CONFIG;
		}
	}

	/* doc/DESIGN.md §9: beside the kubelet, say at start what would clash. */
	if (config.kubelet_config[0])
		coexist_check_kubelet_file(&config, config.kubelet_config);

	if (config.validate) {
		config_print(&config, stdout);
		return EXIT_SUCCESS;
	}
	/* One evictd acts on a node: the lock comes before any pin, socket or port is touched.
	 * --once --dry-run only reads. */
	if (!(config.once && config.dry_run)) {
		char lock_path[PATH_MAX + 32];
		pid_t holder;

		snprintf(lock_path, sizeof(lock_path), "%s/evictd.lock",
			 config.state_dir[0] ? config.state_dir : "/run/evictd");
		err = lockfile_take(lock_path, &lock_fd, &holder);
		if (err == -EWOULDBLOCK) {
			log_err("another evictd (pid %d) holds %s: this one exits and changes nothing",
				(int)holder, lock_path);
			return EXIT_FAILURE;
		}
		if (err) {
			log_err("instance lock %s: %s", lock_path, strerror(-err));
			return EXIT_FAILURE;
		}
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
		const struct can_evict_state *can = daemon_can_evict_check(&daemon);
		struct metrics_can_evict shown;
		int status = daemon_once(&daemon);

		/* It could not have acted, needed or not: a check run from a timer must fail.
		 * --dry-run acts on nothing and only reports it. */
		if (can && !can->can_evict && !config.dry_run)
			status = EXIT_CANNOT_EVICT;
		daemon_can_evict_view(&daemon, &shown);
		if (config.output == OUTPUT_JSON) {
			struct json_object *doc = report_json(&policy->config, &policy->engine, &policy->obs,
							      &policy->eval, &policy->decision);

			control_json_can_evict(doc, &shown);
			{	/* who an eviction would take now, and why (DESIGN.md "Profiles") */
				struct json_object *first = json_object_new_object();
				enum ev_signal signal;
				char line[600];
				bool any = daemon_first_in_line(&daemon, &signal, line, sizeof(line));

				json_object_object_add(first, "signal", json_object_new_string(signal_name(signal)));
				json_object_object_add(first, any ? "victim" : "none", json_object_new_string(line));
				json_object_object_add(doc, "first_in_line", first);
			}

			puts(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
									 JSON_C_TO_STRING_NOSLASHESCAPE));
			json_object_put(doc);
		} else {
			for (size_t i = 0; i < shown.n_reasons; i++)
				if (shown.reasons[i].fatal)
					printf("CANNOT EVICT: %s (%s)\n", shown.reasons[i].text, shown.reasons[i].key);
			report_text(stdout, &policy->engine, &policy->obs, &policy->eval, &policy->decision);
			{
				enum ev_signal signal;
				char line[600];

				daemon_first_in_line(&daemon, &signal, line, sizeof(line));
				printf("  first in line for %s: %s\n", signal_name(signal), line);
			}
		}
		daemon_destroy(&daemon);
		return status;
	}
	err = daemon_run(&daemon);
	daemon_destroy(&daemon);
	return err;
}
