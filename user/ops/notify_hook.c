// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* --on-evict and --dbus-signal (notify_hook.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/notify_hook.h"
#include "sys/dbus_signal.h"
#include "sys/log.h"
#include "sys/subprocess.h"

#define ENV_VARS 8
#define ENV_LEN 1024

struct hook_run {
	struct notify_hook *hook;
	struct subprocess *process;
	char kind[16];
	char victim[256];
};

struct notify_hook {
	struct loop *loop;
	struct dbus_signal *dbus;
	struct hook_run *running[NOTIFY_HOOK_MAX_RUNNING];
	struct notify_hook_stats stats;
};

struct notify_hook *notify_hook_new(struct loop *loop)
{
	struct notify_hook *hook = calloc(1, sizeof(*hook));

	if (hook)
		hook->loop = loop;
	return hook;
}

void notify_hook_free(struct notify_hook *hook)
{
	if (!hook)
		return;
	for (size_t i = 0; i < NOTIFY_HOOK_MAX_RUNNING; i++) {
		if (!hook->running[i])
			continue;
		subprocess_cancel(hook->running[i]->process);
		free(hook->running[i]);
	}
	dbus_signal_free(hook->dbus);
	free(hook);
}

struct notify_hook_stats notify_hook_stats(const struct notify_hook *hook)
{
	return hook ? hook->stats : (struct notify_hook_stats){ 0 };
}

static void on_done(void *ctx, const struct subprocess_result *result)
{
	struct hook_run *run = ctx;
	struct notify_hook *hook = run->hook;

	hook->stats.finished++;
	if (result->timed_out) {
		hook->stats.timed_out++;
		log_warn("--on-evict for %s %s: timed out after %.1f s; its process group was killed%s",
			 run->kind, run->victim, (double)result->elapsed_ns / 1e9,
			 result->abandoned ? " (and did not exit: abandoned)" : "");
	} else if (result->status) {
		log_warn("--on-evict for %s %s: exit status %d: %s", run->kind, run->victim,
			 result->status, result->output);
	} else {
		log_info("--on-evict for %s %s: done in %.1f ms", run->kind, run->victim,
			 (double)result->elapsed_ns / 1e6);
	}
	for (size_t i = 0; i < NOTIFY_HOOK_MAX_RUNNING; i++)
		if (hook->running[i] == run)
			hook->running[i] = NULL;
	free(run);
}

static void run_command(struct notify_hook *hook, const char *command, int64_t timeout_ns,
			const struct notify_event *event)
{
	static char env[ENV_VARS][ENV_LEN];
	const char *envp[ENV_VARS + 1];
	struct hook_run *run;
	size_t slot, n = 0;
	int err;

	for (slot = 0; slot < NOTIFY_HOOK_MAX_RUNNING && hook->running[slot]; slot++)
		;
	if (slot == NOTIFY_HOOK_MAX_RUNNING) {
		hook->stats.dropped++;
		log_warn("--on-evict: %d commands still running; not run for %s %s",
			 NOTIFY_HOOK_MAX_RUNNING, event->kind, event->victim);
		return;
	}
	run = calloc(1, sizeof(*run));
	if (!run) {
		log_err("--on-evict: out of memory");
		return;
	}
	run->hook = hook;
	snprintf(run->kind, sizeof(run->kind), "%s", event->kind);
	snprintf(run->victim, sizeof(run->victim), "%s", event->victim);
	/* Built here, before the fork: the child only execs. */
	snprintf(env[n++], ENV_LEN, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	snprintf(env[n++], ENV_LEN, "EVICTD_KIND=%s", event->kind);
	snprintf(env[n++], ENV_LEN, "EVICTD_VICTIM=%s", event->victim);
	snprintf(env[n++], ENV_LEN, "EVICTD_CGROUP=%s", event->cgroup);
	snprintf(env[n++], ENV_LEN, "EVICTD_SIGNAL=%s", event->signal);
	snprintf(env[n++], ENV_LEN, "EVICTD_THRESHOLD=%s", event->threshold);
	snprintf(env[n++], ENV_LEN, "EVICTD_OBSERVED=%" PRId64, event->observed);
	snprintf(env[n++], ENV_LEN, "EVICTD_REASON=%s", event->reason ? event->reason : "");
	for (size_t i = 0; i < n; i++)
		envp[i] = env[i];
	envp[n] = NULL;
	err = subprocess_start(hook->loop, &(struct subprocess_options){
		.shell_command = command,
		.envp = envp,
		.timeout_ns = timeout_ns,
		.done = on_done,
		.ctx = run,
	}, &run->process);
	if (err) {
		free(run);	/* subprocess_start logged it */
		return;
	}
	hook->running[slot] = run;
	hook->stats.started++;
}

void notify_hook_fire(struct notify_hook *hook, const char *command, int64_t timeout_ns, bool dbus,
		      const struct notify_event *event)
{
	if (!hook || !event)
		return;
	if (command && command[0])
		run_command(hook, command, timeout_ns, event);
	if (!dbus)
		return;
	if (!hook->dbus && !(hook->dbus = dbus_signal_new(hook->loop, NULL))) {
		log_err("dbus: out of memory");
		return;
	}
	dbus_signal_emit(hook->dbus, event->kind, event->victim, event->cgroup, event->signal,
			 event->threshold, event->observed);
}
