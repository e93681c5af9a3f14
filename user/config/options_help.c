// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* --help, grouped by concern and wrapped to 100 columns, and the usage errors of the command
 * line with a "did you mean" (core/suggest.h). Kept apart from the option table (options.c)
 * so that one stays a table and its setters. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "config/options.h"
#include "core/signal_meta.h"
#include "core/suggest.h"
#include "sys/log.h"

#define HELP_WIDTH 100
#define HELP_LEFT 34	/* the help text's column */

/* Every row of config_options in exactly one group (test_config checks it), in the order a
 * reader looks for them: what triggers an eviction first, how evictd is run last. */
static const char *const group_thresholds[] = {
	"eviction-hard", "eviction-soft", "eviction-soft-grace-period", "eviction-minimum-reclaim",
	"merge-default-eviction-settings", "enforce-node-allocatable",
	"eviction-pressure-transition-period", "eviction-max-pod-grace-period",
	"hard-eviction-grace-period", "housekeeping-interval", "oom-guard", "oom-guard-max",
	"swap-guard", "zram-guard", "memory-pressure-limit", "memory-pressure-duration", "warn-memory-available",
	"warn-interval", "warn-ahead", "act-ahead", "profile",
	NULL,
};
static const char *const group_sources[] = {
	"config", "config-dir", "kubelet-flags-from", "kubelet-config", NULL,
};
static const char *const group_node[] = {
	"root", "root-dir", "imagefs-dir", "containerfs-dir", "cgroup-root", "static-pod-path",
	"node-name", "workload-root", "workload-preference", "allow-host-units", "pods-file",
	"daemonset-last", NULL,
};
static const char *const group_kube[] = {
	"kube-api", "kube-api-server", "kube-token-file", "kube-ca-file", "kube-pods-client-cert",
	"kube-pods-refresh", "kube-pressure-taints", "kube-eviction-status-wait", "kube-hard-eviction-status-wait", "kube-handover-termination", NULL,
};
static const char *const group_shutdown[] = {
	"shutdown-grace-period", "shutdown-grace-period-critical-pods",
	"shutdown-grace-period-by-pod-priority", "logind-dropin-dir",
	"taint-out-of-service-on-shutdown", NULL,
};
static const char *const group_bpf[] = {
	"no-bpf", "no-psi", "bpf-pin-dir", "bpf-inspect", "no-page-cache-bpf", "memory-refault-aware",
	NULL,
};
static const char *const group_actions[] = {
	"dry-run", "memory-reclaim-before-kill", "reclaim-command", "kill-timeout", "on-evict",
	"on-evict-timeout", "dbus-signal", NULL,
};
static const char *const group_ops[] = {
	"validate", "once", "output", "metrics-address", "event-log", "event-log-max-size",
	"event-log-max-files", "realtime-priority", "control-socket", "state-dir", "log-level", "help", "version", NULL,
};

static const struct {
	const char *title;
	const char *const *flags;
} groups[] = {
	{ "Thresholds (the kubelet's eviction settings)", group_thresholds },
	{ "Configuration sources", group_sources },
	{ "The node: paths, pods and workloads", group_node },
	{ "Kubernetes API", group_kube },
	{ "Graceful node shutdown", group_shutdown },
	{ "BPF and signals", group_bpf },
	{ "Actions", group_actions },
	{ "Operations", group_ops },
};

const char *option_group_of(const char *flag)
{
	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
		for (const char *const *f = groups[g].flags; *f; f++)
			if (!strcmp(*f, flag))
				return groups[g].title;
	return NULL;
}

/* text from column col, wrapped at word boundaries to HELP_WIDTH, continuation lines at
 * HELP_LEFT. A word longer than a line is printed whole. */
static void print_wrapped(FILE *out, size_t col, const char *text)
{
	while (*text) {
		size_t room = HELP_WIDTH - col, len = strlen(text), cut = len;

		if (len > room) {
			cut = room;
			while (cut > 0 && text[cut] != ' ')
				cut--;
			if (cut == 0)
				cut = strcspn(text, " ");
		}
		fprintf(out, "%.*s\n", (int)cut, text);
		text += cut;
		while (*text == ' ')
			text++;
		if (*text)
			fprintf(out, "%*s", HELP_LEFT, "");
		col = HELP_LEFT;
	}
}

static void print_option(FILE *out, const struct option_spec *spec)
{
	const struct option_range *range = option_range_of(spec);
	char left[64], help[512];
	int n;

	n = snprintf(left, sizeof(left), "  --%s%s%s", spec->flag, spec->arg ? "=" : "",
		     spec->arg ? spec->arg : "");
	snprintf(help, sizeof(help), "%s%s%s", spec->help, range ? "; accepts " : "",
		 range ? range->text : "");
	/* A long option gets its help on the next line. */
	if (n > HELP_LEFT - 2)
		fprintf(out, "%s\n%*s", left, HELP_LEFT, "");
	else
		fprintf(out, "%-*s", HELP_LEFT, left);
	print_wrapped(out, HELP_LEFT, help);
}

void config_usage(FILE *out)
{
	char text[1024];

	fprintf(out,
		"Usage: evictd [OPTION]...\n"
		"Node-pressure eviction for Linux nodes, kubelet-compatible, driven by BPF events.\n"
		"Reads /etc/evictd/config.yaml (below --root) when it exists and no --config is given.\n");
	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
		fprintf(out, "\n%s:\n", groups[g].title);
		for (const char *const *f = groups[g].flags; *f; f++) {
			const struct option_spec *spec = option_by_flag(*f);

			if (spec)
				print_option(out, spec);
		}
	}
	/* A row no group names still shows (test_config keeps this empty). */
	for (size_t i = 0; i < config_n_options; i++)
		if (!option_group_of(config_options[i].flag)) {
			fprintf(out, "\nOther:\n");
			for (; i < config_n_options; i++)
				if (!option_group_of(config_options[i].flag))
					print_option(out, &config_options[i]);
		}
	snprintf(text, sizeof(text), "Signals: %s.", signal_valid_names());
	fputc('\n', out);
	print_wrapped(out, 0, text);
	fprintf(out,
		"Without --eviction-hard (evictionHard) the kubelet's default hard thresholds apply:\n"
		"memory.available<100Mi, nodefs.available<10%%, nodefs.inodesFree<5%%,\n"
		"imagefs.available<15%%, imagefs.inodesFree<5%%; a soft threshold alone keeps them.\n"
		"Map flags given again merge key by key. Quote a threshold: '<' is the shell's.\n"
		"Exit status: 0 ok, 1 runtime failure, 2 invalid configuration.\n"
		"\nExamples (tests/cli/test_examples.sh runs each):\n"
		"  $ evictd --validate --config=evictd.yaml\n"
		"  $ evictd --once --dry-run --output=json\n"
		"  $ evictd --dry-run --eviction-hard='memory.available<2Gi'\n"
		"  $ evictd --workload-root=/sys/fs/cgroup/batch.slice "
		"--eviction-hard='memory.available<500Mi'\n");
}

const char *option_suggest(const char *typed)
{
	struct suggest s;

	suggest_begin(&s, typed);
	for (size_t i = 0; i < config_n_options; i++)
		suggest_offer(&s, config_options[i].flag);
	return s.best;
}

void option_usage_error(const char *arg, int short_opt)
{
	char name[96];
	const struct option_spec *spec;
	const char *best;

	if (short_opt) {
		log_err("unknown option '-%c' (see --help)", short_opt);
		return;
	}
	/* "--name=value" or "--name": the name alone, for the lookups. */
	snprintf(name, sizeof(name), "%s", arg + strspn(arg, "-"));
	name[strcspn(name, "=")] = '\0';
	spec = option_by_flag(name);
	if (spec && spec->arg && !strchr(arg, '='))
		log_err("option '--%s' requires a value (--%s=%s)", name, name, spec->arg);
	else if (spec)
		log_err("option '--%s' takes no value", name);
	else if ((best = option_suggest(name)))
		log_err("unknown option '--%s'; did you mean '--%s'?", value_echo(name).text, best);
	else
		log_err("unknown option '--%s' (see --help)", value_echo(name).text);
}
