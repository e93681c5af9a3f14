// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The daemon's Kubernetes API side: node name, client and reporter set-up. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon_parts.h"
#include "sys/log.h"
#include "kube/kube.h"
#include "kube/kube_report.h"
#include "ops/metrics.h"

void daemon_resolve_node_name(struct daemon *daemon, const struct evictd_config *config)
{
	const char *from_env = getenv("NODE_NAME");

	if (config->node_name[0])
		snprintf(daemon->node_name, sizeof(daemon->node_name), "%s", config->node_name);
	else if (from_env && from_env[0])
		snprintf(daemon->node_name, sizeof(daemon->node_name), "%s", from_env);
	else if (gethostname(daemon->node_name, sizeof(daemon->node_name) - 1))
		daemon->node_name[0] = '\0';
}

static bool kube_wanted(const struct evictd_config *config)
{
	if (config->workload_roots.n || config->once || config->validate || !strcmp(config->kube_api, "off"))
		return false;
	if (!strcmp(config->kube_api, "on") || !strcmp(config->kube_api, "read-only"))
		return true;
	return getenv("KUBERNETES_SERVICE_HOST") || config->kube_api_server[0];
}

/* The pod watch's health to the metrics server (/readyz, evictd_kube_*): on every health
 * change and list the watch posts, and after each evaluation. */
void daemon_kube_update_metrics(struct daemon *daemon)
{
	struct policy *policy = daemon->policy;
	struct metrics_kube view = { .ready_grace_ns = KUBE_WATCH_READY_GRACE_NS };
	struct kube_client_stats stats;
	struct kube_pods_health health;

	if (!daemon->kube || !policy || !policy->api_meta)
		return;
	kube_pods_source_health(policy->api_meta, &health);
	kube_client_get_stats(daemon->kube, &stats);
	view.http_version = stats.http_version;
	view.enabled = true;
	view.pods_client_cert = kube_client_config(daemon->kube)->pods_client_cert[0] != '\0';
	view.listed = health.listed;
	view.watching = health.watching;
	view.failing = health.failing;
	view.resuming = health.resuming;
	view.last_status = health.last_status;
	view.not_watching_since_ns = health.not_watching_since_ns;
	view.progress_ns = health.progress_ns;
	view.stale_after_ns = health.progress_timeout_ns;
	view.lists = health.lists;
	view.relists = health.relists;
	view.watches = health.watches;
	view.watch_events = health.watch_events;
	view.bookmarks = health.bookmarks;
	view.failures = health.failures;
	view.taint_lifts = daemon->kube_report ? kube_report_taint_lifts(daemon->kube_report) : 0;
	metrics_set_kube(daemon_ops_metrics(daemon), &view);
}

static void on_kube(void *ctx, int fd, uint32_t revents)
{
	struct daemon *daemon = ctx;
	uint32_t events = kube_client_dispatch(daemon->kube);

	if (events & (KUBE_EVENT_HEALTH | KUBE_EVENT_PODS))
		daemon_kube_update_metrics(daemon);
	/* A new pod list: decide again with it (the next evaluation refreshes the pods). */
	if (events & KUBE_EVENT_PODS)
		daemon->pending_mask |= SIGNAL_MASK_ALL;
	if (events & KUBE_EVENT_IDLE)
		daemon_shutdown_release_now(daemon);
}

static void on_meta_deadline(void *ctx)
{
	struct daemon *daemon = ctx;
	struct policy *policy = daemon->policy;

	if (policy->api_meta && !kube_pods_source_ready(policy->api_meta)) {
		int err = kube_pods_source_error(policy->api_meta);

		log_warn("kubernetes API: no pod list yet%s%s; pods without metadata are left to the OOM guard",
			 err ? ": " : "", err ? strerror(-err) : "");
	}
	daemon->pending_mask |= SIGNAL_MASK_ALL;
}

void daemon_kube_watch_policy(struct daemon *daemon)
{
	struct policy *policy = daemon->policy;

	/* The pressure taints' hole punch sees DaemonSet pods land through this pod watch. */
	if (daemon->kube_report)
		kube_report_set_pods(daemon->kube_report, policy->api_meta);
	if (!policy->api_meta)
		return;
	daemon_kube_update_metrics(daemon);
	if (!daemon->meta_timer)
		daemon->meta_timer = loop_add_timer(daemon->loop, LOOP_NO_DEADLINE, on_meta_deadline, daemon);
	loop_timer_set(daemon->meta_timer, policy->meta_deadline_ns);
}

/* The API client and reporter live for the whole process: a reload must not drop reports
 * still queued. */
void daemon_kube_setup(struct daemon *daemon, const struct evictd_config *config)
{
	bool read_only = !strcmp(config->kube_api, "read-only");
	struct kube_config kube_config;
	int err;

	if (daemon->kube || !kube_wanted(config))
		return;
	if (!daemon->node_name[0]) {
		log_err("kubernetes API: no node name (--node-name or $NODE_NAME); API reporting off");
		return;
	}
	err = kube_config_load(&kube_config, &(struct kube_config_options){
		.root = config->root,
		.api_server = config->kube_api_server[0] ? config->kube_api_server : NULL,
		.token_file = config->kube_token_file[0] ? config->kube_token_file : NULL,
		.ca_file = config->kube_ca_file[0] ? config->kube_ca_file : NULL,
		.pods_client_cert = config->kube_pods_client_cert,
		.kubelet_root_dir = config->kubelet_dir,
	});
	if (!err)
		err = kube_client_new(&daemon->kube, &(struct kube_client_options){ .config = &kube_config });
	/* read-only: the pod watch (metadata for ranking) without a reporter, so no request but
	 * GETs of pods: for a cluster where evictd may not write (README "Deploying",
	 * tools/overlays/no-node-claim). */
	if (!err && !read_only)
		err = kube_report_new(&daemon->kube_report, &(struct kube_report_options){
			.client = daemon->kube,
			.node_name = daemon->node_name,
			.state_dir = config->state_dir,
			.dry_run = config->dry_run,
			.no_pressure_taints = !config->kube_pressure_taints,
			.taint_out_of_service_on_shutdown = config->taint_out_of_service_on_shutdown,
		});
	if (err) {
		log_err("kubernetes API: %s; evictions are not reported to the API server", strerror(-err));
		if (daemon->kube)
			kube_client_free(daemon->kube);
		daemon->kube = NULL;
		return;
	}
	daemon->kube_source = loop_add_fd(daemon->loop, kube_client_event_fd(daemon->kube), EPOLLIN, false,
					  on_kube, daemon);
	if (!daemon->kube_source)
		log_err("kubernetes API: cannot watch the client's events: %m; pod lists arrive at housekeeping");
	if (read_only)
		log_info("kubernetes API: watching pods on %s as node %s; read-only (--kube-api=read-only): "
			 "no eviction reports, taints or shutdown updates", kube_config.server, daemon->node_name);
	else
		log_info("kubernetes API: reporting to %s as node %s", kube_config.server, daemon->node_name);
}

void daemon_kube_teardown(struct daemon *daemon)
{
	loop_remove(daemon->loop, daemon->meta_timer);
	daemon->meta_timer = NULL;
	if (!daemon->kube)
		return;
	loop_remove(daemon->loop, daemon->kube_source);	/* kube_client_free closes the fd */
	daemon->kube_source = NULL;
	/* The loop has stopped: the last reports may take a moment to go out. */
	kube_client_drain(daemon->kube, 2LL * 1000000000);
	kube_report_free(daemon->kube_report);
	kube_client_free(daemon->kube);
	daemon->kube_report = NULL;
	daemon->kube = NULL;
}
