// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * SIGHUP (doc/DESIGN.md, "Reload"): the configuration is parsed and validated from the command
 * line again, a whole new policy is built beside the running one, and only then swapped in.
 * The old policy is released; evictions still in flight hold their own reference, so it is
 * freed when the last of them ends. The runtime (loop, executor, BPF, API client, logind,
 * the shutdown sequence) carries on untouched.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon_parts.h"
#include "sys/log.h"

int daemon_reload(struct daemon *daemon)
{
	struct evictd_config *fresh = calloc(1, sizeof(*fresh));
	struct policy *policy, *old = daemon->policy;
	int err;

	if (!fresh)
		return -ENOMEM;
	config_init_defaults(fresh);
	err = config_parse_args(fresh, daemon->argc, daemon->argv);
	if (config_finalize(fresh) || err) {
		log_err("SIGHUP: the new configuration is invalid (see above); keeping the running one");
		err = -EINVAL;
		goto out;
	}
	if (fresh->validate || fresh->once) {
		log_err("SIGHUP: --validate/--once make no sense on reload; keeping the running one");
		err = -EINVAL;
		goto out;
	}
	err = policy_new(&policy, fresh, &(struct policy_deps){
		.kube = daemon->kube,
		.node_name = daemon->node_name,
		.pressure = &daemon->pressure,
	});
	if (err) {
		log_err("SIGHUP: building the new policy: %s; keeping the running one", strerror(-err));
		goto out;
	}
	log_set_level(fresh->log_level);
	if (old->engine_ready) {
		/* Applied when the new engine is first built (policy.c engine_follow_layout). */
		policy->inherited = old->engine;
		policy->has_inherited = true;
	}
	/* The readings' series are the node's, not the configuration's. */
	memcpy(policy->ahead, old->ahead, sizeof(policy->ahead));
	daemon->policy = policy;
	/* A reclaim job reads the old policy's signals: it ends with it, the new one decides. */
	reclaim_cancel(&old->reclaim);
	daemon_disk_usage_cancel(daemon);
	policy_unref(old);
	daemon_kube_watch_policy(daemon);
	/* The new pods table starts empty: its triggers follow at the next evaluation. */
	daemon->logged_threshold_index = -1;
	daemon->logged_victim[0] = '\0';
	log_info("SIGHUP: configuration reloaded, %zu thresholds", fresh->n_thresholds);
out:
	free(fresh);
	return err;
}
