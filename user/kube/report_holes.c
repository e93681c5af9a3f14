// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The pressure taints' hole punch (kube_report.h, doc/DESIGN.md §8 "Pressure taints"): while
 * evictd holds an evictd.io/<resource>-pressure:NoSchedule taint, a DaemonSet that would run on
 * the node but for it (kube/daemonset_fit.c) and has no pod here gets the taints lifted until
 * its pod is seen or the hole's time is up. Runs in the taint task (the client's worker).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/client_internal.h"
#include "kube/daemonset_fit.h"
#include "kube/pods_watch.h"
#include "kube/report_internal.h"
#include "sys/log.h"

/* How often an open hole looks for the pod: a lookup in the pod source's last list, no
 * request. */
#define HOLE_POLL_NS (250ll * 1000000)
/* A DaemonSet whose pod never comes waits hole_retry_ns, doubled per miss up to this many
 * times, before its next lift. */
#define HOLE_MAX_DOUBLINGS 3

static const enum kube_taint pressure_taints[] = {
	KUBE_TAINT_MEMORY_PRESSURE, KUBE_TAINT_DISK_PRESSURE, KUBE_TAINT_PID_PRESSURE,
};
static const char *const pressure_keys[] = {
	KUBE_TAINT_KEY_MEMORY_PRESSURE, KUBE_TAINT_KEY_DISK_PRESSURE, KUBE_TAINT_KEY_PID_PRESSURE,
};

void kube_report_set_pods(struct kube_report *report, struct pods_meta_source *pods)
{
	struct pods_meta_source *old;

	if (pods)
		kube_pods_source_ref((struct kube_pods_source *)pods);
	pthread_mutex_lock(&report->lock);
	old = report->pods;
	report->pods = pods;
	pthread_mutex_unlock(&report->lock);
	if (old)
		kube_pods_source_unref((struct kube_pods_source *)old);
}

void kube_report_holes_release(struct kube_report *report)
{
	if (report->pods)
		kube_pods_source_unref((struct kube_pods_source *)report->pods);
	report->pods = NULL;
}

uint64_t kube_report_taint_lifts(struct kube_report *report)
{
	return atomic_load(&report->taint_lifts);
}

/* 1: the DaemonSet has a pod on the node, 0: none, -ENODATA: no pod source to tell. */
static int has_pod(struct kube_report *report, const char *uid)
{
	int found = -ENODATA;

	pthread_mutex_lock(&report->lock);
	if (report->pods)
		found = kube_pods_source_has_daemonset_pod(report->pods, uid);
	pthread_mutex_unlock(&report->lock);
	return found;
}

static struct hole_daemonset *record(struct kube_report *report, const struct daemonset_blocked *ds,
				     int64_t now_ns)
{
	struct hole_daemonset *free_slot = NULL;

	for (size_t i = 0; i < HOLE_MAX_DAEMONSETS; i++) {
		struct hole_daemonset *h = &report->holes[i];

		if (h->uid[0] && !strcmp(h->uid, ds->uid))
			return h;
		/* A free slot, or one whose lift wait is over (it keeps no debt). */
		if (!free_slot && (!h->uid[0] || (!h->waiting && h->next_lift_ns <= now_ns)))
			free_slot = h;
	}
	if (!free_slot)
		return NULL;
	memset(free_slot, 0, sizeof(*free_slot));
	_Static_assert(sizeof(free_slot->uid) == sizeof(ds->uid) && sizeof(free_slot->name) == sizeof(ds->name),
		       "hole_daemonset mirrors daemonset_blocked");
	memcpy(free_slot->uid, ds->uid, sizeof(ds->uid));
	memcpy(free_slot->name, ds->name, sizeof(ds->name));
	return free_slot;
}

static int list_blocked(struct kube_client *client, struct kube_report *report, uint32_t held,
			struct daemonset_blocked *blocked, size_t max, size_t *n)
{
	struct kube_response node = { 0 }, list = { 0 };
	const char *keys[3];
	size_t n_keys = 0;
	char path[512], url[1024];
	int err;

	for (size_t i = 0; i < 3; i++)
		if (held & KUBE_TAINT_BIT(pressure_taints[i]))
			keys[n_keys++] = pressure_keys[i];
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", report->node);
	err = kube_request(client, "GET", path, NULL, NULL, &node);
	if (!err && node.status == 200) {
		/* resourceVersion=0: served from the API server's watch cache, no etcd read
		 * (staging/src/k8s.io/apiserver/pkg/storage/cacher/delegator.go shouldDelegateList:
		 * a list at "0", no continue, no resourceVersionMatch is not delegated to etcd), one list per 30 s per holding node. */
		snprintf(path, sizeof(path), "/apis/apps/v1/daemonsets?resourceVersion=0");
		err = kube_request(client, "GET", path, NULL, NULL, &list);
	}
	if (err || node.status != 200 || list.status != 200) {
		kube_url(client, path, url, sizeof(url));
		if (!report->check_warned)
			log_warn("kube: pressure taints: GET %s: %s; DaemonSets are checked again in %llds", url,
				 list.error[0] ? list.error : node.error,
				 (long long)(report->daemonset_check_ns / 1000000000));
		report->check_warned = true;
		err = err ? err : -EIO;
	} else {
		err = daemonset_blocked_list(list.body, node.body, keys, n_keys, blocked, max, n);
		if (err)
			log_warn("kube: pressure taints: the DaemonSet list or the Node is not what it should be");
		else
			report->check_warned = false;
	}
	kube_response_free(&node);
	kube_response_free(&list);
	return err;
}

/* The check: open a hole when a blocked DaemonSet has no pod here and may have a lift. */
static void check(struct kube_client *client, struct kube_report *report, uint32_t held, int64_t now_ns)
{
	struct daemonset_blocked blocked[HOLE_MAX_DAEMONSETS];
	size_t n = 0;
	bool lift = false, have_pods;

	/* Without the API pod watch no hole could be closed on the pod's arrival: none is made,
	 * and nothing is listed. */
	pthread_mutex_lock(&report->lock);
	have_pods = report->pods != NULL;
	pthread_mutex_unlock(&report->lock);
	if (!have_pods)
		return;
	if (list_blocked(client, report, held, blocked, HOLE_MAX_DAEMONSETS, &n))
		return;
	for (size_t i = 0; i < n && i < HOLE_MAX_DAEMONSETS; i++) {
		int present = has_pod(report, blocked[i].uid);
		struct hole_daemonset *h;

		if (present == -ENODATA) {
			if (!report->no_pods_logged)
				log_warn("kube: pressure taints keep DaemonSet %s off node %s and evictd has no API "
					 "pod watch to see its pod land: not lifting them", blocked[i].name, report->node);
			report->no_pods_logged = true;
			return;
		}
		if (present)
			continue;
		h = record(report, &blocked[i], now_ns);
		if (!h)
			continue;
		if (h->next_lift_ns > now_ns) {
			if (!h->deferred_logged)
				log_info("kube: DaemonSet %s still has no pod on node %s; its next taint lift is in "
					 "%llds at the earliest", h->name, report->node,
					 (long long)((h->next_lift_ns - now_ns) / 1000000000));
			h->deferred_logged = true;
			continue;
		}
		h->waiting = true;
		h->deferred_logged = false;
		h->next_lift_ns = now_ns + report->hole_retry_ns;
		log_info("kube: node %s: lifting evictd's pressure taints for at most %llds: DaemonSet %s "
			 "would run here but does not tolerate them, and the DaemonSet controller creates no "
			 "pod while they hold", report->node, (long long)(report->hole_ns / 1000000000), h->name);
		lift = true;
	}
	if (!lift)
		return;
	report->lifted = held;
	report->hole_until_ns = now_ns + report->hole_ns;
	atomic_fetch_add(&report->taint_lifts, 1);
}

/* Close the hole: the taints go back (the reconciler's next pass). */
static void close_hole(struct kube_report *report, int64_t now_ns)
{
	int64_t next;

	for (size_t i = 0; i < HOLE_MAX_DAEMONSETS; i++) {
		struct hole_daemonset *h = &report->holes[i];

		if (!h->uid[0] || !h->waiting)
			continue;
		h->waiting = false;
		if (has_pod(report, h->uid) == 1) {
			h->timeouts = 0;
			continue;
		}
		/* Its pod never came: wait hole_retry_ns after the taints are back, doubled per
		 * miss in a row, before lifting them for it again. */
		next = now_ns + (report->hole_retry_ns << (h->timeouts < HOLE_MAX_DOUBLINGS ? h->timeouts
											 : HOLE_MAX_DOUBLINGS));
		if (next > h->next_lift_ns)
			h->next_lift_ns = next;
		h->timeouts++;
		log_warn("kube: node %s: DaemonSet %s got no pod within %llds of lifting the pressure taints; "
			 "they go back, and its next lift is in %llds at the earliest", report->node, h->name,
			 (long long)(report->hole_ns / 1000000000),
			 (long long)((h->next_lift_ns > now_ns ? h->next_lift_ns - now_ns : 0) / 1000000000));
	}
	report->lifted = 0;
	report->hole_until_ns = 0;
}

int64_t kube_report_holes_step(struct kube_client *client, struct kube_report *report, uint32_t held,
			       int64_t now_ns)
{
	uint64_t jitter;

	if (!held) {
		/* Nothing held: nothing to lift, and the next taint is checked at once. */
		if (report->hole_until_ns)
			close_hole(report, now_ns);
		report->check_at_ns = 0;
		return KUBE_TASK_IDLE;
	}
	if (report->hole_until_ns) {
		bool all_here = true;

		for (size_t i = 0; i < HOLE_MAX_DAEMONSETS; i++) {
			struct hole_daemonset *h = &report->holes[i];

			if (h->uid[0] && h->waiting && has_pod(report, h->uid) != 1)
				all_here = false;
			else if (h->uid[0] && h->waiting)
				log_info("kube: node %s: DaemonSet %s has its pod here; the pressure taints go back",
					 report->node, h->name);
		}
		if (!all_here && now_ns < report->hole_until_ns)
			return now_ns + HOLE_POLL_NS < report->hole_until_ns ? now_ns + HOLE_POLL_NS
									 : report->hole_until_ns;
		close_hole(report, now_ns);
		/* Look again after a full period: the pods that came are then in the list. */
		report->check_at_ns = now_ns + report->daemonset_check_ns;
		return report->check_at_ns;
	}
	if (!report->check_at_ns || now_ns >= report->check_at_ns) {
		check(client, report, held, now_ns);
		/* ~30 s, jittered by up to a fifth so that a fleet's nodes do not list together. */
		jitter = kube_next_random(&client->random_state) % (uint64_t)(report->daemonset_check_ns / 5 + 1);
		report->check_at_ns = now_ns + report->daemonset_check_ns + (int64_t)jitter;
	}
	return report->hole_until_ns ? now_ns + HOLE_POLL_NS : report->check_at_ns;
}
