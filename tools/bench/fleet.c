// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The fleet benchmark's evictd side (tools/bench/fleet.sh, issue 20 part 6): N nodes, each the
 * REAL API-server pods source of build/libevictd.a (kube_pods_source_new: the list-then-watch
 * thread of kube/pods_watch.c) with its own node name and its own credentials in its own
 * kube_client, against a real kube-apiserver (tests/cluster/cluster.sh). The events (an API
 * server restart, an etcd compaction) and the measurement (the apiserver's /metrics) are
 * fleet.sh's; this program only runs the sources, as N evictd daemons would:
 *
 *   fleet --server URL --ca FILE --nodes N [--prefix P] --token-dir DIR | --cert-dir DIR
 *
 * Node i is PREFIX<i, 4 digits>. --token-dir: DIR/token-NAME, a token file per node (the
 * evictd ServiceAccount's token bound to the Node, as tools/deploy's DaemonSet gets it);
 * --cert-dir: DIR/node-NAME.pem, the node identity's certificate and key in one PEM, used for
 * the pod list and watch (kube_config.pods_client_cert; built with -DFLEET_POD_CLIENT_CERT,
 * which fleet.sh sets when user/kube/kube.h has the field).
 *
 * Prints "fleet start: nodes=N watching=W after_s=S" once every source has listed and
 * watches (or after 180 s), then runs until SIGTERM or SIGINT. On SIGUSR1, and at the end, one
 * line with the sources' own counters summed (kube_pods_health): "fleet sources: ...". The
 * sources log at info level on stderr (each relist and its reason, with the node's name).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube/kube.h"
#include "kube/kube_report.h"
#include "sys/clock.h"
#include "sys/log.h"

#define NS 1000000000ll

struct options {
	const char *server, *ca, *prefix, *token_dir, *cert_dir;
	unsigned nodes;
};

static struct options opt = { .prefix = "fleet-node-" };

static void usage(FILE *out)
{
	fprintf(out, "usage: fleet --server URL --ca FILE --nodes N [--prefix P] --token-dir DIR | --cert-dir DIR\n");
}

static int parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 's' }, { "ca", required_argument, NULL, 'c' },
		{ "nodes", required_argument, NULL, 'n' }, { "prefix", required_argument, NULL, 'p' },
		{ "token-dir", required_argument, NULL, 't' }, { "cert-dir", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's': opt.server = optarg; break;
		case 'c': opt.ca = optarg; break;
		case 'n': opt.nodes = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'p': opt.prefix = optarg; break;
		case 't': opt.token_dir = optarg; break;
		case 'C': opt.cert_dir = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -EINVAL;
		}
	}
	if (!opt.server || !opt.ca || !opt.nodes || !opt.token_dir == !opt.cert_dir) {
		usage(stderr);
		return -EINVAL;
	}
#ifndef FLEET_POD_CLIENT_CERT
	if (opt.cert_dir) {
		fprintf(stderr, "fleet: --cert-dir: this build of user/kube has no pods_client_cert\n");
		return -EINVAL;
	}
#endif
	return 0;
}

struct totals {
	unsigned listed, watching, resuming, failing;
	uint64_t lists, relists, watches, failures, stalls, events, bookmarks;
};

static void sum(struct pods_meta_source **sources, struct totals *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < opt.nodes; i++) {
		struct kube_pods_health h;

		kube_pods_source_health(sources[i], &h);
		t->listed += h.listed;
		t->watching += h.listed && h.watching;
		t->resuming += h.resuming;
		t->failing += h.failing;
		t->lists += h.lists;
		t->relists += h.relists;
		t->watches += h.watches;
		t->failures += h.failures;
		t->stalls += h.stalls;
		t->events += h.watch_events;
		t->bookmarks += h.bookmarks;
	}
}

static void print_totals(struct pods_meta_source **sources)
{
	struct totals t;

	sum(sources, &t);
	printf("fleet sources: nodes=%u listed=%u watching=%u resuming=%u failing=%u lists=%llu relists=%llu "
	       "watches=%llu failures=%llu stalls=%llu events=%llu bookmarks=%llu\n",
	       opt.nodes, t.listed, t.watching, t.resuming, t.failing, (unsigned long long)t.lists,
	       (unsigned long long)t.relists, (unsigned long long)t.watches, (unsigned long long)t.failures,
	       (unsigned long long)t.stalls, (unsigned long long)t.events, (unsigned long long)t.bookmarks);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct pods_meta_source **sources;
	struct kube_client **clients;
	struct totals t;
	int64_t t0, deadline;
	sigset_t set;
	int sig;

	if (parse_args(argc, argv))
		return 2;
	log_set_level(LOGLEVEL_INFO);
	/* The sources' threads inherit this mask: the signals come to sigwait() below. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	sources = calloc(opt.nodes, sizeof(*sources));
	clients = calloc(opt.nodes, sizeof(*clients));
	if (!sources || !clients)
		return 1;

	t0 = clock_monotonic_ns();
	for (unsigned i = 0; i < opt.nodes; i++) {
		struct kube_config config = { .in_cluster = false };
		char name[64];
		int err;

		snprintf(name, sizeof(name), "%s%04u", opt.prefix, i);
		snprintf(config.server, sizeof(config.server), "%s", opt.server);
		snprintf(config.ca_path, sizeof(config.ca_path), "%s", opt.ca);
		if (opt.token_dir)
			snprintf(config.token_path, sizeof(config.token_path), "%s/token-%s", opt.token_dir, name);
#ifdef FLEET_POD_CLIENT_CERT
		else
			snprintf(config.pods_client_cert, sizeof(config.pods_client_cert), "%s/node-%s.pem",
				 opt.cert_dir, name);
#endif
		err = kube_client_new(&clients[i], &(struct kube_client_options){
			.config = &config, .user_agent = "evictd-fleet" });
		if (err) {
			fprintf(stderr, "fleet: the kube client of %s: %s\n", name, strerror(-err));
			return 1;
		}
		sources[i] = kube_pods_source_new(&(struct kube_pods_source_options){
			.client = clients[i], .node_name = name });
		if (!sources[i]) {
			fprintf(stderr, "fleet: the pods source of %s did not start (threads: ulimit -u?)\n", name);
			return 1;
		}
	}
	deadline = t0 + 180 * NS;
	for (sum(sources, &t); t.watching < opt.nodes && clock_monotonic_ns() < deadline; sum(sources, &t))
		usleep(100000);
	printf("fleet start: nodes=%u watching=%u after_s=%.1f\n", opt.nodes, t.watching,
	       (double)(clock_monotonic_ns() - t0) / NS);
	fflush(stdout);
	if (t.watching < opt.nodes)
		return 1;

	for (;;) {
		if (sigwait(&set, &sig))
			continue;
		print_totals(sources);
		if (sig != SIGUSR1)
			break;
	}
	/* Exit without stopping 2N threads one by one: the process ends, its sockets close. */
	fflush(stderr);
	_exit(0);
}
