// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The fleet benchmark (issue 20): N simulated nodes, each the REAL API-server pods source of
 * build/libevictd.a (kube_pods_source_new: the list-then-watch thread of kube/pods_watch.c)
 * with its own node name, against tests/cli/kube-standin.py, through three events:
 *   restart    POST /standin/restart: every watch cut, a new watch cache (watches from an
 *              older resourceVersion get 410);
 *   partition  /standin/blackhole for --partition s: open watches get nothing on an open
 *              socket, not even bookmarks; then /standin/unblackhole;
 *   storm      every GET of pods answered 429 with Retry-After (the stand-in's faults file)
 *              for --storm s, every watch cut at its start (/standin/drop-watches) so every
 *              node has to come back through it.
 * Per event: requests and full lists per node and the peak requests per second (1 s bins
 * from the event's start) from the stand-in's request log (--log-time), the time until every
 * node watches again and the stale seconds (no list, event or bookmark for longer than the
 * progress bound, as evictd_kube_pods_stale_seconds counts them) from the sources' health,
 * sampled every 100 ms. Beside each, a computed model of client-go's reflector in the same
 * event (model(), below: computed, not a run). Output: one "fleet EVENT WHO: key=value ..." line
 * per event and column, for tools/bench/fleet.sh.
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube/client_internal.h"
#include "kube/kube_report.h"
#include "kube/report_internal.h"	/* kube_json_member_string */
#include "sys/clock.h"
#include "sys/log.h"

#define NS 1000000000ll
#define SAMPLE_NS (100ll * 1000000)
#define MAX_BINS 1024

enum event { EV_RESTART, EV_PARTITION, EV_STORM, EV_COUNT };
static const char *const event_names[EV_COUNT] = { "restart", "partition", "storm" };

struct options {
	const char *server, *ca, *log, *faults, *prefix;
	unsigned nodes;
	double window_s;	/* observed after each event's end */
	double partition_s, storm_s, retry_after_s;
	double settle_s;	/* all watching this long before the first event */
	uint64_t seed;
};

struct node {
	char name[64];
	struct pods_meta_source *source;
	/* per event */
	uint64_t watches0, watches_end;	/* opened: by the event's start, by its end */
	double age0_s;		/* since the last progress, at the event's start (the model's input) */
	double recovered_s;	/* after the event's end; < 0: not within the window */
	double stale_s;
};

struct window {
	int64_t start_ns, end_ns, until_ns;	/* event start, disturbance end, observation end */
};

struct result {
	double requests_mean, lists_mean, peak_rps, peak_at_s, watching_all_s, watching_median_s;
	double stale_mean_s, stale_max_s, late_requests;
	unsigned requests_max, lists_max, not_recovered;
};

static struct options opt = {
	.prefix = "fleet-node-", .nodes = 500, .window_s = 60, .partition_s = 60, .storm_s = 30,
	.retry_after_s = 5, .settle_s = 5, .seed = 20,
};
static struct node *nodes;
static struct kube_client *client;
static struct kube_conn hook_conn;

/* ---- the stand-in's hooks ------------------------------------------------------------------ */

static int hook(const char *name)
{
	struct kube_response response;
	char path[128];
	int err;

	snprintf(path, sizeof(path), "/standin/%s", name);
	err = kube_conn_request(client, &hook_conn, "POST", path, KUBE_CONTENT_JSON, "{}", 0, NULL, &response);
	if (!err && response.status != 200)
		err = -EIO;
	if (err)
		fprintf(stderr, "fleet: POST %s: %s\n", path, response.error[0] ? response.error : strerror(-err));
	kube_response_free(&response);
	return err;
}

static int write_faults(const char *text)
{
	char tmp[4200];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%.4000s.tmp", opt.faults);
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "fleet: %s: %m\n", tmp);
		return -errno;
	}
	fputs(text, f);
	if (fclose(f) || rename(tmp, opt.faults)) {
		fprintf(stderr, "fleet: %s: %m\n", opt.faults);
		return -errno;
	}
	return 0;
}

/* ---- sampling ----------------------------------------------------------------------------- */

static void sleep_until(int64_t when_ns)
{
	int64_t now = clock_monotonic_ns();

	if (when_ns > now)
		usleep((useconds_t)((when_ns - now) / 1000));
}

/* Watching again: a watch is open that was opened after the event's end, or that brought a
 * list, event or bookmark after it (a watch reopened inside a partition proves nothing until
 * its first bookmark). */
static bool watching_again(const struct kube_pods_health *h, const struct node *n, int64_t end_ns)
{
	return h->watching && (h->watches > n->watches_end || h->progress_ns > end_ns);
}

/* The disturbance ends now. */
static void event_end(struct window *w)
{
	w->end_ns = clock_monotonic_ns();
	for (unsigned i = 0; i < opt.nodes; i++) {
		struct kube_pods_health h;

		kube_pods_source_health(nodes[i].source, &h);
		nodes[i].watches_end = h.watches;
	}
}

static unsigned count_watching(void)
{
	unsigned watching = 0;

	for (unsigned i = 0; i < opt.nodes; i++) {
		struct kube_pods_health h;

		kube_pods_source_health(nodes[i].source, &h);
		watching += h.listed && h.watching;
	}
	return watching;
}

static void event_begin(struct window *w)
{
	int64_t now = clock_monotonic_ns();

	w->start_ns = now;
	for (unsigned i = 0; i < opt.nodes; i++) {
		struct kube_pods_health h;

		kube_pods_source_health(nodes[i].source, &h);
		nodes[i].watches0 = h.watches;
		nodes[i].age0_s = (double)(now - h.progress_ns) / NS;
		nodes[i].recovered_s = -1;
		nodes[i].stale_s = 0;
	}
}

/* Sample every node until `until_ns`. Recovery counts from w->end_ns, to the start of the
 * last stretch in which the node watched again (a 410's watch is open for an instant). */
static void sample_until(const struct window *w, int64_t until_ns)
{
	for (int64_t t = clock_monotonic_ns(); t < until_ns; t = clock_monotonic_ns()) {
		for (unsigned i = 0; i < opt.nodes; i++) {
			struct node *n = &nodes[i];
			struct kube_pods_health h;

			kube_pods_source_health(n->source, &h);
			if (t - h.progress_ns > h.progress_timeout_ns)
				n->stale_s += (double)SAMPLE_NS / NS;
			if (t < w->end_ns)
				continue;
			if (!watching_again(&h, n, w->end_ns))
				n->recovered_s = -1;
			else if (n->recovered_s < 0)
				n->recovered_s = (double)(t - w->end_ns) / NS;
		}
		sleep_until(t + SAMPLE_NS);
	}
}

/* ---- the request log ------------------------------------------------------------------------ */

struct request {
	double t;
	int node;
	bool list;
};

static struct request *requests;
static size_t n_requests;

static int node_of(const char *query)
{
	const char *at = strstr(query, "spec.nodeName%3D");
	size_t prefix = strlen(opt.prefix);

	if (!at)
		return -1;
	at += strlen("spec.nodeName%3D");
	if (strncmp(at, opt.prefix, prefix))
		return -1;
	return atoi(at + prefix);
}

static int read_log(void)
{
	FILE *f = fopen(opt.log, "r");
	char *line = NULL;
	size_t cap = 0;

	if (!f) {
		fprintf(stderr, "fleet: %s: %m\n", opt.log);
		return -errno;
	}
	while (getline(&line, &cap, f) > 0) {
		struct json_object *doc = json_tokener_parse(line), *time;
		const char *path = doc ? kube_json_member_string(doc, "path") : NULL;
		const char *query = doc ? kube_json_member_string(doc, "query") : NULL;
		struct request *grown;

		if (!path || !query || strcmp(path, "/api/v1/pods") || !json_object_object_get_ex(doc, "time", &time)) {
			json_object_put(doc);
			continue;
		}
		grown = realloc(requests, (n_requests + 1) * sizeof(*requests));
		if (!grown) {
			json_object_put(doc);
			break;
		}
		requests = grown;
		requests[n_requests++] = (struct request){
			.t = json_object_get_double(time),
			.node = node_of(query),
			.list = !strstr(query, "watch=true"),
		};
		json_object_put(doc);
	}
	free(line);
	fclose(f);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Requests per node and per 1 s bin in [start, until); late ones after each node's recovery. */
static void server_side(const struct window *w, const double *recovered, struct result *r)
{
	unsigned *per_node = calloc(opt.nodes, sizeof(*per_node)), *lists = calloc(opt.nodes, sizeof(*lists));
	unsigned bins[MAX_BINS] = { 0 };
	double start = (double)w->start_ns / NS, until = (double)w->until_ns / NS, end = (double)w->end_ns / NS;
	unsigned total = 0, total_lists = 0, peak = 0;

	if (!per_node || !lists)
		goto out;
	r->late_requests = 0;
	for (size_t i = 0; i < n_requests; i++) {
		const struct request *q = &requests[i];
		size_t bin;

		if (q->t < start || q->t >= until || q->node < 0 || (unsigned)q->node >= opt.nodes)
			continue;
		per_node[q->node]++;
		lists[q->node] += q->list;
		total++;
		total_lists += q->list;
		bin = (size_t)(q->t - start);
		if (bin < MAX_BINS && ++bins[bin] > peak) {
			peak = bins[bin];
			r->peak_at_s = (double)bin;
		}
		/* After the node watched again (2 s: the sampling's and the log's slack), or
		 * never did: a request loop would show here. */
		r->late_requests += recovered[q->node] < 0 || q->t > end + recovered[q->node] + 2;
	}
	r->requests_mean = (double)total / opt.nodes;
	r->lists_mean = (double)total_lists / opt.nodes;
	r->peak_rps = peak;
	for (unsigned i = 0; i < opt.nodes; i++) {
		if (per_node[i] > r->requests_max)
			r->requests_max = per_node[i];
		if (lists[i] > r->lists_max)
			r->lists_max = lists[i];
	}
out:
	free(per_node);
	free(lists);
}

/* Recovery and staleness, from the per-node values in nodes[] or a model's. */
static void summarize(const double *recovered, const double *stale, struct result *r)
{
	double *sorted = malloc(opt.nodes * sizeof(*sorted));
	unsigned n = 0;

	r->stale_mean_s = r->stale_max_s = 0;
	r->not_recovered = 0;
	for (unsigned i = 0; i < opt.nodes; i++) {
		r->stale_mean_s += stale[i] / opt.nodes;
		r->stale_max_s = fmax(r->stale_max_s, stale[i]);
		if (recovered[i] < 0)
			r->not_recovered++;
		else if (sorted)
			sorted[n++] = recovered[i];
	}
	if (sorted && n) {
		qsort(sorted, n, sizeof(*sorted), cmp_double);
		r->watching_median_s = sorted[n / 2];
		r->watching_all_s = r->not_recovered ? -1 : sorted[n - 1];
	} else {
		r->watching_median_s = r->watching_all_s = -1;
	}
	free(sorted);
}

static void print_result(enum event e, const char *who, const struct result *r, bool server)
{
	printf("fleet %s %s: nodes=%u requests_per_node=%.2f requests_max=%u lists_per_node=%.2f lists_max=%u "
	       "peak_rps=%.0f peak_at_s=%.0f watching_all_s=%.1f watching_median_s=%.1f not_watching=%u "
	       "stale_mean_s=%.1f stale_max_s=%.1f late_requests=%.0f%s\n",
	       event_names[e], who, opt.nodes, r->requests_mean, r->requests_max, r->lists_mean, r->lists_max,
	       r->peak_rps, r->peak_at_s, r->watching_all_s, r->watching_median_s, r->not_recovered,
	       r->stale_mean_s, r->stale_max_s, r->late_requests, server ? "" : " (model)");
}

/* ---- client-go's reflector, as a model -------------------------------------------------------- */

/*
 * What client-go's reflector (kubernetes/client-go tools/cache/reflector.go) would do in the
 * same event, from its source, with no network latency:
 *  - delays between rounds: delayHandler = wait.Backoff{800 ms, x2, Jitter 1.0, Cap 30 s}
 *    .DelayWithReset(clock, 2 min) (NewReflectorWithOptions, defaultBackoff*): the k-th delay
 *    of an outage in [0.8 * 2^k, 1.6 * 2^k) s, capped; fresh (k = 0) at each event, which
 *    the run's spacing (more than 2 min between delays) also gives evictd;
 *  - a watch that ends without an error (a cut stream after more than 1 s: handleWatch
 *    returns nil) is made again at once from the last resourceVersion (watch(): the loop);
 *  - a watch's 410 (isExpiredError) ends ListAndWatchWithContext; RunWithContext's
 *    delayHandler.Until waits one delay, then list() at the last resourceVersion with paging
 *    off (one request, from the watch cache), then a watch;
 *  - a 429 on the watch request: the rest client retries it itself after Retry-After,
 *    up to maxRetries = 10 (rest/request.go Watch, rest/with_retry.go IsNextRetry,
 *    checkWait; NoBackoff adds nothing), then the reflector (isWatchErrorRetriable) waits a
 *    delay and starts again;
 *  - nothing checks a silent watch: no request in a partition whose socket stays open; the
 *    watch resumes with the first bookmark after it (the data is stale meanwhile, under the
 *    same 90 s progress bound as evictd's metric).
 */
static uint64_t model_random;

static double model_delay(unsigned k)
{
	double step = 0.8 * ldexp(1.0, (int)(k > 6 ? 6 : k));

	if (step > 30)
		step = 30;
	return step + step * (double)(kube_next_random(&model_random) >> 11) / 9007199254740992.0;
}

static void model_bin(unsigned *bins, double t, double *peak, double *peak_at)
{
	size_t bin = t < 0 ? 0 : (size_t)t;

	if (bin < MAX_BINS && ++bins[bin] > *peak) {
		*peak = bins[bin];
		*peak_at = (double)bin;
	}
}

static void model(enum event e, double progress_timeout_s, struct result *r)
{
	double *recovered = calloc(opt.nodes, sizeof(double)), *stale = calloc(opt.nodes, sizeof(double));
	unsigned bins[MAX_BINS] = { 0 };
	double requests = 0, lists = 0;

	memset(r, 0, sizeof(*r));
	if (!recovered || !stale)
		goto out;
	for (unsigned i = 0; i < opt.nodes; i++) {
		double t = 0;
		unsigned k = 0, n = 0;

		switch (e) {
		case EV_RESTART:
			model_bin(bins, 0, &r->peak_rps, &r->peak_at_s);	/* the watch again: 410 */
			t = model_delay(0);
			model_bin(bins, t, &r->peak_rps, &r->peak_at_s);	/* list at the last RV */
			model_bin(bins, t, &r->peak_rps, &r->peak_at_s);	/* watch */
			n = 3;
			lists += 1;
			recovered[i] = t;
			break;
		case EV_PARTITION:
			recovered[i] = 0;
			stale[i] = fmax(0, nodes[i].age0_s + opt.partition_s -
					  fmax(progress_timeout_s, nodes[i].age0_s));
			break;
		case EV_STORM:
			/* Cut at 0: watch again at once; each Watch() call makes one attempt and
			 * up to 10 retries after Retry-After, then the reflector waits a delay. */
			for (unsigned retries = 0;;) {
				model_bin(bins, t, &r->peak_rps, &r->peak_at_s);
				n++;
				if (t >= opt.storm_s)
					break;
				if (retries < 10) {
					t += opt.retry_after_s;
					retries++;
				} else {
					t += model_delay(k++);
					retries = 0;
				}
			}
			recovered[i] = t - opt.storm_s;
			break;
		default:
			break;
		}
		requests += n;
		if (n > r->requests_max)
			r->requests_max = n;
	}
	r->requests_mean = requests / opt.nodes;
	r->lists_mean = lists / opt.nodes;
	r->lists_max = e == EV_RESTART ? 1 : 0;
	summarize(recovered, stale, r);
out:
	free(stale);
}

/* ---- main ------------------------------------------------------------------------------------- */

static void usage(FILE *out)
{
	fprintf(out, "usage: fleet --server URL --ca FILE --log FILE --faults FILE [--nodes N] [--prefix P]\n"
		     "             [--window S] [--partition S] [--storm S] [--retry-after S] [--seed N]\n");
}

static int parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 's' }, { "ca", required_argument, NULL, 'c' },
		{ "log", required_argument, NULL, 'l' }, { "faults", required_argument, NULL, 'f' },
		{ "nodes", required_argument, NULL, 'n' }, { "prefix", required_argument, NULL, 'p' },
		{ "window", required_argument, NULL, 'w' }, { "partition", required_argument, NULL, 'P' },
		{ "storm", required_argument, NULL, 'S' }, { "retry-after", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 'z' }, { "help", no_argument, NULL, 'h' }, { 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's': opt.server = optarg; break;
		case 'c': opt.ca = optarg; break;
		case 'l': opt.log = optarg; break;
		case 'f': opt.faults = optarg; break;
		case 'n': opt.nodes = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'p': opt.prefix = optarg; break;
		case 'w': opt.window_s = strtod(optarg, NULL); break;
		case 'P': opt.partition_s = strtod(optarg, NULL); break;
		case 'S': opt.storm_s = strtod(optarg, NULL); break;
		case 'r': opt.retry_after_s = strtod(optarg, NULL); break;
		case 'z': opt.seed = strtoull(optarg, NULL, 10); break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -EINVAL;
		}
	}
	if (!opt.server || !opt.ca || !opt.log || !opt.faults || !opt.nodes || opt.window_s < 25 ||
	    opt.partition_s <= 0 || opt.storm_s <= 0 || opt.retry_after_s < 1) {
		usage(stderr);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct window windows[EV_COUNT];
	struct result measured[EV_COUNT] = { 0 }, models[EV_COUNT];
	struct kube_config config = { .in_cluster = false };
	double *stale, *rec[EV_COUNT];
	int64_t t0, deadline;
	char faults[256];
	int err;

	if (parse_args(argc, argv))
		return 2;
	log_set_level(LOGLEVEL_ERR);	/* each source logs each relist: 500 nodes x 3 events */
	model_random = opt.seed;
	snprintf(config.server, sizeof(config.server), "%s", opt.server);
	snprintf(config.ca_path, sizeof(config.ca_path), "%s", opt.ca);
	nodes = calloc(opt.nodes, sizeof(*nodes));
	stale = calloc(opt.nodes, sizeof(*stale));
	for (int e = 0; e < EV_COUNT; e++)
		if (!(rec[e] = calloc(opt.nodes, sizeof(double))))
			return 1;
	if (!nodes || !stale || write_faults("[]") || kube_conn_init(&hook_conn))
		return 1;
	err = kube_client_new(&client, &(struct kube_client_options){ .config = &config });
	if (err) {
		fprintf(stderr, "fleet: kube client: %s\n", strerror(-err));
		return 1;
	}

	/* Start: every node lists and watches (the stand-in's log keeps the count). */
	t0 = clock_monotonic_ns();
	for (unsigned i = 0; i < opt.nodes; i++) {
		snprintf(nodes[i].name, sizeof(nodes[i].name), "%s%04u", opt.prefix, i);
		nodes[i].source = kube_pods_source_new(&(struct kube_pods_source_options){
			.client = client, .node_name = nodes[i].name });
		if (!nodes[i].source) {
			fprintf(stderr, "fleet: the pods source of %s did not start (threads: ulimit -u?)\n",
				nodes[i].name);
			return 1;
		}
	}
	deadline = t0 + 180 * NS;
	while (count_watching() < opt.nodes && clock_monotonic_ns() < deadline)
		usleep(100000);
	printf("fleet start: nodes=%u watching=%u after_s=%.1f\n", opt.nodes, count_watching(),
	       (double)(clock_monotonic_ns() - t0) / NS);
	fflush(stdout);
	if (count_watching() < opt.nodes)
		return 1;
	sleep_until(clock_monotonic_ns() + (int64_t)(opt.settle_s * NS));

	/* The API server restarts. */
	event_begin(&windows[EV_RESTART]);
	hook("restart");
	event_end(&windows[EV_RESTART]);
	windows[EV_RESTART].until_ns = windows[EV_RESTART].end_ns + (int64_t)(opt.window_s * NS);
	sample_until(&windows[EV_RESTART], windows[EV_RESTART].until_ns);
	for (unsigned i = 0; i < opt.nodes; i++)
		rec[EV_RESTART][i] = nodes[i].recovered_s, stale[i] = nodes[i].stale_s;
	summarize(rec[EV_RESTART], stale, &measured[EV_RESTART]);

	/* A partition: the watches' sockets stay open and bring nothing. */
	event_begin(&windows[EV_PARTITION]);
	model(EV_RESTART, 0, &models[EV_RESTART]);
	model(EV_PARTITION, (double)KUBE_WATCH_PROGRESS_TIMEOUT_NS / NS, &models[EV_PARTITION]);
	hook("blackhole");
	windows[EV_PARTITION].end_ns = windows[EV_PARTITION].start_ns + (int64_t)(opt.partition_s * NS);
	sample_until(&windows[EV_PARTITION], windows[EV_PARTITION].end_ns);
	hook("unblackhole");
	event_end(&windows[EV_PARTITION]);
	windows[EV_PARTITION].until_ns = windows[EV_PARTITION].end_ns + (int64_t)(opt.window_s * NS);
	sample_until(&windows[EV_PARTITION], windows[EV_PARTITION].until_ns);
	for (unsigned i = 0; i < opt.nodes; i++)
		rec[EV_PARTITION][i] = nodes[i].recovered_s, stale[i] = nodes[i].stale_s;
	summarize(rec[EV_PARTITION], stale, &measured[EV_PARTITION]);

	/* A 429 storm that every node has to come through. */
	snprintf(faults, sizeof(faults), "[{\"method\": \"GET\", \"path\": \"/api/v1/pods\", \"status\": 429, "
		 "\"retry_after\": %.0f, \"times\": 1000000000}]", opt.retry_after_s);
	event_begin(&windows[EV_STORM]);
	write_faults(faults);
	hook("drop-watches");
	windows[EV_STORM].end_ns = windows[EV_STORM].start_ns + (int64_t)(opt.storm_s * NS);
	sample_until(&windows[EV_STORM], windows[EV_STORM].end_ns);
	write_faults("[]");
	event_end(&windows[EV_STORM]);
	windows[EV_STORM].until_ns = windows[EV_STORM].end_ns + (int64_t)(opt.window_s * NS);
	sample_until(&windows[EV_STORM], windows[EV_STORM].until_ns);
	for (unsigned i = 0; i < opt.nodes; i++)
		rec[EV_STORM][i] = nodes[i].recovered_s, stale[i] = nodes[i].stale_s;
	summarize(rec[EV_STORM], stale, &measured[EV_STORM]);
	model(EV_STORM, 0, &models[EV_STORM]);

	for (unsigned i = 0; i < opt.nodes; i++)
		nodes[i].source->destroy(nodes[i].source);
	kube_client_free(client);
	kube_conn_cleanup(&hook_conn);

	/* The server's side, from its log. */
	if (read_log())
		return 1;
	printf("fleet params: nodes=%u window_s=%.0f partition_s=%.0f storm_s=%.0f retry_after_s=%.0f "
	       "progress_timeout_s=%.0f requests_logged=%zu\n", opt.nodes, opt.window_s, opt.partition_s,
	       opt.storm_s, opt.retry_after_s, (double)KUBE_WATCH_PROGRESS_TIMEOUT_NS / NS, n_requests);
	for (int e = 0; e < EV_COUNT; e++) {
		server_side(&windows[e], rec[e], &measured[e]);
		print_result(e, "evictd", &measured[e], true);
		print_result(e, "client-go", &models[e], false);
	}
	free(requests);
	free(nodes);
	free(stale);
	for (int e = 0; e < EV_COUNT; e++)
		free(rec[e]);
	return 0;
}
