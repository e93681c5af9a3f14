// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* evictd and the kubelet on one node (doc/DESIGN.md §9): evictd's thresholds above the
 * kubelet's, so evictd acts first and the kubelet stays the backstop, and exactly one of them
 * running graceful node shutdown. The kubelet's file is only read. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/coexist.h"
#include "config/options.h"
#include "core/quantity.h"
#include "core/signal_meta.h"
#include "sys/log.h"

/* 1: a is met earlier than b (a higher "available <" value), 0: not, -1: a quantity against a
 * percentage with no capacity to resolve them. */
static int value_above(const struct threshold_value *a, const struct threshold_value *b, int64_t capacity)
{
	if (a->is_percentage && b->is_percentage)
		return a->percentage > b->percentage;
	if (!a->is_percentage && !b->is_percentage)
		return a->quantity > b->quantity;
	if (capacity <= 0)
		return -1;
	return threshold_value_resolve(a, capacity) > threshold_value_resolve(b, capacity);
}

/* Whether e is acted on no later than k once both are met: a hard threshold at once, a soft
 * one after its grace period. */
static bool acts_no_later(const struct threshold *e, const struct threshold *k)
{
	if (e->hard)
		return true;
	return !k->hard && e->grace_period_ns <= k->grace_period_ns;
}

static bool shutdown_enabled(const struct evictd_config *config)
{
	return config->shutdown_grace_period_ns > 0 || config->n_shutdown_groups > 0;
}

size_t coexist_compare(const struct evictd_config *evictd, const struct evictd_config *kubelet,
		       const int64_t capacity[EV_SIGNAL_COUNT], struct coexist_finding *out, size_t max)
{
	size_t n = 0;

	if (n < max && shutdown_enabled(evictd) == shutdown_enabled(kubelet)) {
		memset(&out[n], 0, sizeof(out[n]));
		out[n++].kind = shutdown_enabled(evictd) ? COEXIST_SHUTDOWN_BOTH : COEXIST_SHUTDOWN_NEITHER;
	}
	for (size_t k = 0; k < kubelet->n_thresholds && n < max; k++) {
		const struct threshold *theirs = &kubelet->thresholds[k];
		const struct threshold *nearest = NULL;
		bool covered = false, uncomparable = false;
		struct coexist_finding *finding = &out[n];

		for (size_t e = 0; e < evictd->n_thresholds; e++) {
			const struct threshold *ours = &evictd->thresholds[e];
			int above;

			if (ours->signal != theirs->signal)
				continue;
			above = value_above(&ours->value, &theirs->value, capacity ? capacity[ours->signal] : 0);
			covered |= above == 1 && acts_no_later(ours, theirs);
			uncomparable |= above < 0;
			/* Name the one of the same kind (hard against hard) in the message. */
			if (!nearest || (ours->hard == theirs->hard && nearest->hard != theirs->hard))
				nearest = ours;
		}
		if (covered)
			continue;
		memset(finding, 0, sizeof(*finding));
		finding->kubelet = *theirs;
		if (nearest) {
			finding->evictd = *nearest;
			finding->has_evictd = true;
		}
		finding->kind = !nearest ? COEXIST_KUBELET_ONLY : uncomparable ? COEXIST_UNCOMPARABLE :
									  COEXIST_NOT_ABOVE;
		n++;
	}
	return n;
}

bool coexist_is_warning(const struct coexist_finding *finding)
{
	return finding->kind == COEXIST_SHUTDOWN_BOTH || finding->kind == COEXIST_NOT_ABOVE;
}

int coexist_format(const struct coexist_finding *finding, char *buf, size_t len)
{
	char theirs[96] = "", ours[96] = "";

	threshold_format(&finding->kubelet, theirs, sizeof(theirs));
	if (finding->has_evictd)
		threshold_format(&finding->evictd, ours, sizeof(ours));
	switch (finding->kind) {
	case COEXIST_SHUTDOWN_BOTH:
		return snprintf(buf, len, "both evictd and the kubelet are configured for graceful node "
			"shutdown (shutdownGracePeriod): both would take a logind inhibitor and terminate "
			"pods; let exactly one own it and set the other's shutdownGracePeriod to 0");
	case COEXIST_SHUTDOWN_NEITHER:
		return snprintf(buf, len, "neither evictd nor the kubelet runs graceful node shutdown "
			"(shutdownGracePeriod 0 in both)");
	case COEXIST_NOT_ABOVE:
		return snprintf(buf, len, "the kubelet's %s is met no later than evictd's %s: both would "
			"evict (a double eviction) or the kubelet first; set evictd's threshold above the "
			"kubelet's, so that evictd acts first and the kubelet stays the backstop", theirs, ours);
	case COEXIST_KUBELET_ONLY:
		return snprintf(buf, len, "the kubelet's %s has no evictd counterpart: the kubelet alone "
			"evicts on %s", theirs, signal_name(finding->kubelet.signal));
	case COEXIST_UNCOMPARABLE:
		return snprintf(buf, len, "the kubelet's %s and evictd's %s cannot be compared without "
			"the signal's capacity (one is a percentage); make both quantities or both "
			"percentages", theirs, ours);
	}
	return snprintf(buf, len, "?");
}

/* The kubelet's file read as the kubelet reads it: its defaults, then the file
 * (config_finalize applies the default thresholds when the file sets none, as the kubelet
 * does). 0 and *out (to free), or -errno after one line saying what is then not done. */
static int read_kubelet_file(const char *path, const char *unused_for, struct evictd_config **out)
{
	struct evictd_config *kubelet;
	struct stat st;
	int err;

	*out = NULL;
	if (stat(path, &st)) {
		err = -errno;
		log_info("kubelet-config %s: %m: %s", path, unused_for);
		return err;
	}
	kubelet = malloc(sizeof(*kubelet));
	if (!kubelet)
		return -ENOMEM;
	config_init_defaults(kubelet);
	/* The kubelet's own defaults, whatever this host looks like to "auto". */
	snprintf(kubelet->profile, sizeof(kubelet->profile), "kubernetes");
	err = config_load_file(kubelet, path);
	if (!err && config_finalize(kubelet))
		err = -EINVAL;
	if (err) {
		log_warn("kubelet-config %s: not understood (%s): %s", path, strerror(-err), unused_for);
		free(kubelet);
		return err;
	}
	*out = kubelet;
	return 0;
}

int coexist_static_pod_path(struct evictd_config *config)
{
	const struct option_spec *spec = option_by_flag("static-pod-path");
	size_t row = (size_t)(spec - config_options);
	struct evictd_config *kubelet;
	char source[96];
	int err;

	/* An evictd flag or file, or the running kubelet's flags, said it already. */
	if (!config->kubelet_config[0] || config->sources[row][0])
		return 0;
	err = read_kubelet_file(config->kubelet_config, "its staticPodPath not used", &kubelet);
	if (err)
		return err;
	/* A file without staticPodPath keeps evictd's default: the kubelet may still have
	 * --pod-manifest-path, and a static pod taken for an ordinary one could be evicted. */
	if (kubelet->sources[row][0]) {
		memcpy(config->static_pod_path, kubelet->static_pod_path, sizeof(config->static_pod_path));
		snprintf(source, sizeof(source), "--kubelet-config %.*s", (int)(sizeof(source) - 18),
			 kubelet->sources[row]);
		option_note_source(config, spec, source);
	}
	free(kubelet);
	return 0;
}

static bool runs_shutdown(const struct evictd_config *config)
{
	return config->shutdown_grace_period_ns > 0 || config->n_shutdown_groups > 0;
}

int coexist_shutdown_owner(struct evictd_config *config)
{
	struct evictd_config *kubelet;
	int err;

	if (!config->kubelet_config[0] || !runs_shutdown(config))
		return 0;
	err = read_kubelet_file(config->kubelet_config, "graceful shutdown's owner not checked", &kubelet);
	if (err)
		return err;
	if (runs_shutdown(kubelet)) {
		/* Two owners would both hold a delay inhibitor and both terminate every pod: a pod
		 * SIGTERMed twice, marked Terminated twice (doc/DESIGN.md §9). The kubelet's own
		 * shutdown manager wins, as the operator configured it there last. */
		log_warn("graceful node shutdown: the kubelet runs it (shutdownGracePeriod %llds, %zu "
			 "priority groups, in %s): evictd's is off, so that exactly one holds the "
			 "inhibitor and terminates pods; set evictd's shutdownGracePeriod to 0 to say so",
			 (long long)(kubelet->shutdown_grace_period_ns / 1000000000), kubelet->n_shutdown_groups,
			 config->kubelet_config);
		config->shutdown_grace_period_ns = 0;
		config->shutdown_grace_period_critical_pods_ns = 0;
		config->n_shutdown_groups = 0;
	}
	free(kubelet);
	return 0;
}

int coexist_check_kubelet_file(const struct evictd_config *evictd, const char *path)
{
	struct coexist_finding findings[COEXIST_MAX_FINDINGS];
	struct evictd_config *kubelet;
	int warnings = 0, err;
	size_t n;

	err = read_kubelet_file(path, "coexistence with the kubelet not checked", &kubelet);
	if (err)
		return err;
	n = coexist_compare(evictd, kubelet, NULL, findings, COEXIST_MAX_FINDINGS);
	for (size_t i = 0; i < n; i++) {
		char line[512];

		coexist_format(&findings[i], line, sizeof(line));
		if (coexist_is_warning(&findings[i])) {
			log_warn("kubelet coexistence (%s): %s", path, line);
			warnings++;
		} else {
			log_info("kubelet coexistence (%s): %s", path, line);
		}
	}
	if (!warnings)
		log_info("kubelet coexistence (%s): no clash: evictd acts before the kubelet on every "
			 "threshold both have, and they do not both run graceful shutdown", path);
	free(kubelet);
	return warnings;
}
