// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Acting on a decision (doc/DESIGN.md, "Acting"): node-level reclaim first (act_reclaim.c), then evictions
 * started through the executor, which never waits. How many run at once, and how a decision
 * counts what those in flight will free, is written down in doc/DESIGN.md.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/arith.h"
#include "daemon/daemon_parts.h"
#include "kube/kube_report.h"
#include "ops/notify_hook.h"
#include "pods/containers.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "sys/procfs.h"

/* One eviction in flight: what its end must report, copied at its start (the policy and its
 * pods table may be replaced meanwhile; the reference keeps the policy's strings alive). */
struct eviction {
	struct daemon *daemon;
	struct policy *policy;
	enum ev_signal signal;
	bool hard;
	struct threshold_value threshold;
	int64_t threshold_quantity;
	int64_t available;
	int64_t used;			/* capacity - available at the decision */
	int64_t expected;		/* what the victim held of the resource then; -1 unknown */
	int64_t detected_ns;		/* the wake-up, else when the crossing signal was read */
	int64_t grace_ns;
	const char *reason;		/* a string constant, or reason_text */
	char reason_text[224];		/* a decision ahead's reason, copied: the policy's buffer
					 * (policy_ahead_reason) is rewritten by the next one */
	char victim_name[330];
	char rank_reason[256];		/* why this victim, for the log (log_eviction) */
	/* Copied from the part of the ranking every evaluation settles, after the kill started
	 * (eviction_keep_candidates): up to 16 pods of 5.8 KB were a 93 KB calloc before it. */
	_Static_assert(EVENTLOG_MAX_CANDIDATES <= POLICY_RANK_SETTLED, "event log shows unsettled pods");
	struct pod *candidates;		/* n_candidates, one allocation with candidate_ptrs */
	struct pod **candidate_ptrs;
	size_t n_candidates;
	/* The victim's containers at the decision, for the message (pods/containers.c). */
	struct kube_container_usage containers[POD_MAX_NAMED_CONTAINERS];
	char container_names[POD_MAX_NAMED_CONTAINERS][64];
	size_t n_containers;
	/* The answer to its status patch, which the kill is held for (NULL: none). Owned: the
	 * executor watches its fd until done is called. */
	struct kube_status_wait *status_wait;
};

static size_t evictions_in_flight;

/* exec_request.handed_over: the status patch landed, the kubelet stops the containers on the
 * terminal phase (doc/DESIGN.md §8, "Who terminates"). */
static bool eviction_handed_over(void *ctx)
{
	struct eviction *eviction = ctx;

	return eviction->policy->config.kube_handover_termination &&
	       kube_status_wait_result(eviction->status_wait) == 0;
}

/* A hard kill held for its status report can wait no longer: its signal fell to half its
 * threshold (doc/DESIGN.md §8: the kubelet's own thresholds and the kernel's min watermark
 * lie below). */
static bool eviction_cannot_wait(const struct policy *policy, const struct eviction *eviction)
{
	const struct observation *now = &policy->obs.signal[eviction->signal];

	return now->present && now->available <= eviction->threshold_quantity / 2;
}

static void eviction_free(struct eviction *eviction)
{
	kube_status_wait_free(eviction->status_wait);
	policy_unref(eviction->policy);
	free(eviction->candidates);
	free(eviction);
}

/* exec_request.release: the daemon stops with this eviction in flight. */
static void eviction_release(void *ctx)
{
	evictions_in_flight--;
	eviction_free(ctx);
}

bool daemon_is_disk_signal(enum ev_signal signal)
{
	return signal_condition(signal) == EV_CONDITION_DISK_PRESSURE;
}

bool daemon_is_memory_signal(enum ev_signal signal)
{
	return signal_meta(signal)->group == SIGNAL_GROUP_MEMORY;
}

static void on_retry(void *ctx)
{
	struct daemon *daemon = ctx;

	daemon->pending_mask |= SIGNAL_MASK_ALL;
}

/* Decide again when a hold or a backoff ends, which no kernel event announces. */
void daemon_arm_retry(struct daemon *daemon, int64_t at_ns)
{
	if (!daemon->retry_timer)
		daemon->retry_timer = loop_add_timer(daemon->loop, LOOP_NO_DEADLINE, on_retry, daemon);
	if (daemon->retry_timer)
		loop_timer_set(daemon->retry_timer, at_ns);
}

/* An eviction whose yield cannot be known counts as meeting the whole need until it has
 * completed and the signal is read again: never as freeing nothing (doc/DESIGN.md, "Acting:
 * one victim per need"). */
#define FREES_UNKNOWN (INT64_MAX / 4)

/* What a victim will give back of the starved resource once it is gone. */
static int64_t frees(enum ev_signal signal, const struct pod *pod)
{
	if (daemon_is_memory_signal(signal))
		return pod->stats_missing ? FREES_UNKNOWN :
		       pod->memory_working_set > 0 ? pod->memory_working_set : 0;
	if (signal == EV_SIGNAL_PID_AVAILABLE)
		return pod->processes > 0 ? pod->processes : FREES_UNKNOWN;
	return 0;
}

static enum ledger_resource ledger_resource_of(enum ev_signal signal)
{
	return daemon_is_memory_signal(signal) ? LEDGER_MEMORY :
	       signal == EV_SIGNAL_PID_AVAILABLE ? LEDGER_PIDS : LEDGER_OTHER;
}

static bool same_resource(enum ev_signal a, enum ev_signal b)
{
	return a == b || (daemon_is_memory_signal(a) && daemon_is_memory_signal(b));
}

static struct eventlog_decision eviction_entry(const struct eviction *eviction, const struct pod *victim,
					       enum eventlog_action action, int64_t latency_ns,
					       const char *error)
{
	return (struct eventlog_decision){
		.signal = eviction->signal,
		.hard = eviction->hard,
		.value = eviction->available,
		.threshold = eviction->threshold_quantity,
		.threshold_text = eviction->threshold.text,
		.candidates = (struct pod *const *)eviction->candidate_ptrs,
		.n_candidates = eviction->n_candidates,
		.rank_options = &eviction->policy->rank_options,
		.victim = victim,
		.action = action,
		.latency_ns = latency_ns,
		.reason = eviction->reason,
		.error = error,
		.dry_run = false,
	};
}

/* An eviction's entry: the journal's fields, and the rank reason (why this victim) for the
 * text, as the decision log and `evictctl pods` say it (ops/eventlog.c eventlog_rank_reason). */
__attribute__((format(printf, 4, 5)))
static void log_eviction(struct eviction *eviction, const struct pod *victim,
			 enum log_level level, const char *fmt, ...)
{
	char observed[32], text[1024];
	va_list ap;

	eventlog_rank_reason(eviction->signal, &eviction->policy->rank_options, victim,
			     eviction->rank_reason, sizeof(eviction->rank_reason));
	snprintf(observed, sizeof(observed), "%lld", (long long)eviction->available);
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	{
		const struct log_field fields[] = {
			{ "POD", victim->name[0] ? victim->name : victim->cgroup_path },
			{ "NAMESPACE", victim->namespace_[0] ? victim->namespace_ : NULL },
			{ "SIGNAL", signal_name(eviction->signal) },
			{ "THRESHOLD", eviction->threshold.text },
			{ "OBSERVED", observed },
			{ "RANK_REASON", eviction->rank_reason },
		};

		log_event(level, LOG_KIND_EVICTION, fields, sizeof(fields) / sizeof(fields[0]), "%s",
			  text);
	}
}

/* --on-evict and --dbus-signal (ops/notify_hook.h): never waited for. Not in --once, whose
 * process exits (and would kill the hook) right after. */
static void notify_evicted(struct daemon *daemon, const struct eviction *eviction,
			   const struct pod *victim)
{
	const struct evictd_config *config = &daemon->policy->config;

	if (config->once || (!config->on_evict[0] && !config->dbus_signal))
		return;
	notify_hook_fire(daemon->notify, config->on_evict, config->on_evict_timeout_ns,
			 config->dbus_signal, &(struct notify_event){
				 .kind = "evicted",
				 .victim = eviction->victim_name,
				 .cgroup = victim->cgroup_path,
				 .signal = signal_name(eviction->signal),
				 .threshold = eviction->threshold.text,
				 .observed = eviction->available,
				 .reason = eviction->rank_reason,
			 });
}

static void on_eviction_done(void *ctx, const struct exec_action *action, int err,
			     const struct kill_result *result)
{
	struct eviction *eviction = ctx;
	struct daemon *daemon = eviction->daemon;
	const struct pod *victim = executor_action_pod(action);
	struct eventlog_decision entry;

	evictions_in_flight--;
	daemon->last_kill = *result;
	grace_store_forget(daemon->grace_store, victim->cgroup_id);
	if (err) {
		if (err == -ESTALE)
			daemon->evictions_stale++;
		else
			daemon->evictions_failed++;
		kill_ledger_failed(&daemon->ledger, ledger_resource_of(eviction->signal), clock_monotonic_ns());
		log_eviction(eviction, victim, LOGLEVEL_ERR, "evicting %s failed: %s", victim->cgroup_path,
			     strerror(-err));
		daemon_can_evict_note_kill_error(daemon, err, victim->cgroup_path);
		entry = eviction_entry(eviction, victim, EVENTLOG_FAILED, -1, strerror(-err));
		daemon_ops_record(daemon, &entry);
	} else {
		int64_t now = clock_monotonic_ns(), latency = now - eviction->detected_ns;
		enum ledger_resource resource = ledger_resource_of(eviction->signal);

		daemon->evictions++;
		daemon->escaped_processes += result->escaped;
		kill_ledger_succeeded(&daemon->ledger, resource);
		daemon_can_evict_note_kill_error(daemon, 0, victim->cgroup_path);
		/* The next decision for this resource is judged against what this one gave back. */
		kill_ledger_completed(&daemon->ledger, resource, now, eviction->available, eviction->used,
				      eviction->expected, result->memory_left_bytes);
		daemon->ledger_signal[resource] = eviction->signal;
		entry = eviction_entry(eviction, victim, EVENTLOG_KILLED, latency, NULL);
		daemon_ops_record(daemon, &entry);
		log_eviction(eviction, victim, LOGLEVEL_INFO,
			 "evicted %s (%s) for %s%s%s: %s; %s, empty %.3f ms after %s%s",
			 eviction->victim_name, victim->cgroup_path, signal_name(eviction->signal),
			 eviction->signal == EV_SIGNAL_MEMORY_PRESSURE ? " " : "<", eviction->threshold.text, eviction->rank_reason,
			 eviction->grace_ns ? "SIGTERM then cgroup.kill" : "cgroup.kill",
			 (double)(result->exited_in_grace ? result->sigterm_to_empty_ns :
							    result->kill_to_empty_ns) / 1e6,
			 result->exited_in_grace ? "SIGTERM" : "the kill",
			 eviction->signal == EV_SIGNAL_OOM_GUARD ? " [oom-guard]" : "");
		/* The victim is gone: forget it so the next decision is logged afresh. */
		daemon->logged_victim[0] = '\0';
		/* The averages lag the kill: systemd-oomd's post-action delay before the next. */
		if (eviction->signal == EV_SIGNAL_MEMORY_PRESSURE)
			pressure_watch_acted(eviction->policy->pressure, now);
		notify_evicted(daemon, eviction, victim);
	}
	/* Disk comes back only when the kubelet has torn the pod's volumes down: the next disk
	 * eviction waits for that (act_reclaim.c daemon_disk_cleanup_pending). */
	if (!err && daemon_is_disk_signal(eviction->signal)) {
		snprintf(daemon->disk_cleanup_uid, sizeof(daemon->disk_cleanup_uid), "%s", victim->uid);
		daemon->disk_cleanup_until_ns = clock_monotonic_ns() + DAEMON_DISK_CLEANUP_WAIT_NS;
		daemon->disk_cleanup_said = false;
	}
	/* Re-read and decide again now that it has freed what it held; the next disk
	 * eviction reclaims first again, as the kubelet's next synchronize() does. */
	daemon->reclaim_tried[eviction->signal] = false;
	daemon->pending_mask |= SIGNAL_MASK_ALL;
	eviction_free(eviction);
}

static struct eviction *eviction_new(struct daemon *daemon, const struct threshold *threshold,
				     const struct pod *victim, int64_t grace_ns)
{
	struct policy *policy = daemon->policy;
	struct eviction *eviction = calloc(1, sizeof(*eviction));
	int index = policy->decision.threshold_index;

	if (!eviction)
		return NULL;
	*eviction = (struct eviction){
		.daemon = daemon,
		.policy = policy_ref(policy),
		.signal = threshold->signal,
		.hard = threshold->hard,
		.threshold = threshold->value,
		.threshold_quantity = policy->eval.threshold_value[index],
		.available = policy->obs.signal[threshold->signal].available,
		.used = policy->obs.signal[threshold->signal].capacity - policy->obs.signal[threshold->signal].available,
		.expected = frees(threshold->signal, victim) == FREES_UNKNOWN ? -1 : frees(threshold->signal, victim),
		.detected_ns = daemon->wake_ktime_ns ? daemon->wake_ktime_ns :
			       policy->obs.signal[threshold->signal].read_at_ns,
		.grace_ns = grace_ns,
		.reason = policy->decision.reason,
	};
	if (policy->decision.reason == policy->ahead_reason) {
		snprintf(eviction->reason_text, sizeof(eviction->reason_text), "%s", policy->ahead_reason);
		eviction->reason = eviction->reason_text;
	}
	daemon_victim_name(victim, eviction->victim_name, sizeof(eviction->victim_name));
	/* evictionMessage reads the containers' usage before the pod is killed; only memory
	 * has a per-container usage here (DESIGN.md §8). */
	if (!strcmp(signal_resource(threshold->signal), "memory")) {
		const char *names[POD_MAX_NAMED_CONTAINERS];
		int64_t usage[POD_MAX_NAMED_CONTAINERS], request[POD_MAX_NAMED_CONTAINERS];
		size_t n = pod_container_usage(victim, names, usage, request, POD_MAX_NAMED_CONTAINERS);

		for (size_t i = 0; i < n; i++) {
			snprintf(eviction->container_names[i], sizeof(eviction->container_names[i]), "%s",
				 names[i]);
			eviction->containers[i] = (struct kube_container_usage){
				.name = eviction->container_names[i], .usage = usage[i], .request = request[i] };
		}
		eviction->n_containers = n;
	}
	return eviction;
}

/* The ranking the decision log shows with this eviction, copied once the kill is under way
 * (the pods table is not refreshed in between). Without memory the entry lists none. */
static void eviction_keep_candidates(struct eviction *eviction, const struct policy *policy)
{
	size_t n = policy->n_candidates < EVENTLOG_MAX_CANDIDATES ? policy->n_candidates :
								      EVENTLOG_MAX_CANDIDATES;

	if (eviction->candidates || !n)
		return;
	eviction->candidates = malloc(n * (sizeof(struct pod) + sizeof(struct pod *)));
	if (!eviction->candidates)
		return;
	eviction->candidate_ptrs = (struct pod **)(eviction->candidates + n);
	for (size_t i = 0; i < n; i++) {
		eviction->candidates[i] = *policy->candidates[i];
		eviction->candidate_ptrs[i] = &eviction->candidates[i];
	}
	eviction->n_candidates = n;
}

/*
 * Start as many evictions as the threshold needs, counting what those in flight will free:
 * a victim after cgroup.kill frees within milliseconds; one in its SIGTERM grace only at the
 * end of it, so a hard threshold or the OOM guard does not count on it (and cuts its grace
 * short when the ranking names it again). Disk is freed only once the runtime has cleaned
 * up: one disk eviction at a time (the kubelet's waitForPodsCleanup).
 */
static void start_evictions(struct daemon *daemon, const struct threshold *threshold, int64_t target)
{
	struct policy *policy = daemon->policy;
	bool urgent = threshold->hard;	/* hard thresholds and the OOM guard (always hard) */
	const struct observation *observed = &policy->obs.signal[threshold->signal];
	int64_t available = observed->available;
	int64_t quantity = policy->eval.threshold_value[policy->decision.threshold_index];
	int64_t pending = 0, in_flight_pending, now = clock_monotonic_ns(), until;
	enum ledger_resource resource = ledger_resource_of(threshold->signal);

	if (kill_ledger_backing_off(&daemon->ledger, resource, now, &until)) {
		if (!daemon->ledger_said_backoff[resource])
			log_warn("%s: the last eviction failed; retrying in %.1f s (backing off)",
				 signal_name(threshold->signal), (double)(until - now) / 1e9);
		daemon->ledger_said_backoff[resource] = true;
		daemon_arm_retry(daemon, until);
		return;
	}
	daemon->ledger_said_backoff[resource] = false;
	if (kill_ledger_held(&daemon->ledger, resource, now, available)) {
		const struct ledger_state *held = &daemon->ledger.r[resource];

		if (!daemon->ledger_said_hold[resource])
			log_warn("%s: holding evictions: the last one did not give back what it held; the next "
				 "only once %s < %lld MiB or in %.0f s", signal_name(threshold->signal),
				 signal_name(threshold->signal), (long long)(held->hold_level >> 20),
				 (double)(held->hold_until_ns - now) / 1e9);
		daemon->ledger_said_hold[resource] = true;
		daemon_arm_retry(daemon, held->hold_until_ns);
		return;
	}
	daemon->ledger_said_hold[resource] = false;
	if (daemon_is_disk_signal(threshold->signal) && daemon_disk_cleanup_pending(daemon, now))
		return;
	/* Decided ahead (--act-ahead): the threshold is not met yet, but will be within the
	 * duration; the need is counted from the threshold, as if met now. Without this the
	 * signal, still above the target, needed nothing and no decision ahead ever killed. */
	if (policy->decision.ahead && available >= quantity)
		available = quantity - 1;
	/* Tasks of completed kills that are still zombies count as freed until reaped. */
	if (resource == LEDGER_PIDS && kill_ledger_reap_open(&daemon->ledger, resource, now))
		pending += kill_ledger_reap_credit(&daemon->ledger, resource, now,
						   observed->capacity - observed->available,
						   procfs_count_zombies(policy->config.root));

	in_flight_pending = pending;
rescan:
	pending = in_flight_pending;
	for (struct exec_action *a = executor_next(daemon->executor, NULL); a;
	     a = executor_next(daemon->executor, a)) {
		const struct eviction *other = executor_action_owner(a);

		if (executor_action_kind(a) != DAEMON_ACTION_EVICTION || !same_resource(other->signal, threshold->signal))
			continue;
		if (daemon_is_disk_signal(threshold->signal)) {
			log_debug("%s: an eviction for it is still in flight", signal_name(threshold->signal));
			return;
		}
		/* After cgroup.kill a victim is gone within milliseconds: the next one is chosen
		 * from the signal read once it has, not from an estimate of what it will free. */
		if (executor_action_phase(a) == EXEC_KILLED)
			pending = sat_add_i64(pending, FREES_UNKNOWN);
		else if (executor_action_hard(a) && executor_action_phase(a) == EXEC_HELD) {
			/* Held for its status report (--kube-hard-eviction-status-wait): its
			 * cgroup.kill is as good as written, so it counts as a kill does, as meeting
			 * the whole need until it has completed (one victim per need: counting its
			 * usage let a second Job pod be evicted beside it, test_controllers b),
			 * unless the node cannot wait for the report. */
			if (eviction_cannot_wait(policy, other)) {
				log_warn("%s: %lld MiB, half its threshold: %s is killed without waiting "
					 "for its status report", signal_name(other->signal),
					 (long long)(policy->obs.signal[other->signal].available >> 20),
					 executor_action_pod(a)->cgroup_path);
				executor_escalate(daemon->executor, a);	/* may free a: scan again */
				goto rescan;
			}
			pending = sat_add_i64(pending, FREES_UNKNOWN);
		} else if (!urgent)
			pending = sat_add_i64(pending, frees(threshold->signal, executor_action_pod(a)));
	}
	for (size_t i = 0; i < policy->n_candidates; i++) {
		const struct pod *pod;
		struct exec_action *action;
		struct eviction *eviction;
		struct kill_result result;
		int64_t grace_ns, hold_ns;
		int err;

		/* Past the pods every evaluation settles: make this one exact too. */
		policy_rank_settle(policy, i);
		pod = policy->candidates[i];
		if (!pod_is_candidate_for(pod, threshold->signal))
			continue;
		if (available + pending >= target) {
			if (pending)
				log_debug("%s: the evictions in flight will free enough", signal_name(threshold->signal));
			return;
		}
		action = executor_find(daemon->executor, pod);
		if (action) {
			/* A hard kill held for its status report is cut short above, by its own
			 * signal, not by every evaluation that names it again. */
			if (urgent && executor_action_phase(action) != EXEC_KILLED && !executor_action_hard(action) &&
			    executor_action_kind(action) == DAEMON_ACTION_EVICTION) {
				executor_escalate(daemon->executor, action);
				pending = sat_add_i64(pending, FREES_UNKNOWN);
			}
			continue;
		}
		if (evictions_in_flight >= DAEMON_MAX_EVICTIONS_IN_FLIGHT) {
			log_warn("%zu evictions in flight: the next waits for one of them to end",
				 evictions_in_flight);
			return;
		}
		/* --dry-run: a decision that holds is reported once, not on every evaluation. */
		if (policy->config.dry_run && daemon->dry_run_reported && daemon->dry_run_cgroup_id == pod->cgroup_id &&
		    daemon->dry_run_threshold_index == policy->decision.threshold_index)
			return;
		/* Hard: --hard-eviction-grace-period (0: none). Soft: min(terminationGracePeriodSeconds,
		 * evictionMaxPodGracePeriod), at least that (eviction_grace_ns). */
		grace_ns = eviction_grace_ns(urgent, urgent ? 0 : kill_soft_grace_ns(pod,
					     policy->config.max_pod_grace_period_s),
					     policy->config.hard_eviction_grace_ns);
		/* A restart does not grant a fresh grace (act/grace_store.c). */
		grace_ns = grace_store_begin(daemon->grace_store, pod->cgroup_id, pod->cgroup_path,
					     grace_ns, policy->config.dry_run);
		eviction = eviction_new(daemon, threshold, pod, grace_ns);
		if (!eviction) {
			log_err("evicting %s: out of memory", pod->cgroup_path);
			return;
		}
		/* The pod's status Failed/Evicted before the kill (kube/report.c, DESIGN.md §8): the
		 * kubelet's pod worker restarts a pod whose containers died while its phase in the
		 * API is Running (a new sandbox, SandboxChanged), and takes the terminal phase when
		 * the API has it first (kubelet_pods.go generateAPIPodStatus: "API phase was
		 * terminal"). The kill is held for the patch's first answer, by the executor in the
		 * loop, which goes on meanwhile: a soft one at most --kube-eviction-status-wait (then
		 * the kubelet terminates it, preStop and STOPSIGNAL, --kube-handover-termination), a
		 * hard one at most --kube-hard-eviction-status-wait, cut short when its signal falls
		 * to half the threshold (start_evictions' scan above). */
		/* The OOM guard is the last line before the kernel's OOM killer: never held. */
		hold_ns = grace_ns > 0 ? policy->config.kube_eviction_status_wait_ns :
			  threshold->signal == EV_SIGNAL_OOM_GUARD ? 0 :
			  policy->config.kube_hard_eviction_status_wait_ns;
		if (!grace_ns && eviction_cannot_wait(policy, eviction))
			hold_ns = 0;
		if (daemon->kube_report && !policy->config.workload_roots.n && !policy->config.dry_run &&
		    !executor_find(daemon->executor, pod))
			kube_report_eviction(daemon->kube_report, &(struct kube_eviction){
				.pod = pod,
				.signal = eviction->signal,
				.threshold = &eviction->threshold,
				.threshold_quantity = eviction->threshold_quantity,
				.available = eviction->available,
				.containers = eviction->containers,
				.n_containers = eviction->n_containers,
				.status_wait = hold_ns > 0 ? &eviction->status_wait : NULL,
			});
		err = executor_start(daemon->executor, &policy->kill, &(struct exec_request){
			.pod = pod,
			.mode = grace_ns > 0 ? KILL_SOFT : KILL_HARD,
			.grace_ns = grace_ns,
			.done = on_eviction_done,
			.ctx = eviction,
			.owner = eviction,
			.kind = DAEMON_ACTION_EVICTION,
			.hold_fd = kube_status_wait_fd(eviction->status_wait),
			.hold_ns = eviction->status_wait ? hold_ns : 0,
			.handed_over = eviction_handed_over,
			.release = eviction_release,
		}, &result);
		daemon->last_kill = result;
		eviction_keep_candidates(eviction, policy);
		if (err == 1 && result.dry_run) {
			struct eventlog_decision entry = daemon_ops_decision_entry(daemon, EVENTLOG_DRY_RUN, -1, NULL);

			daemon_ops_record(daemon, &entry);
			daemon->dry_run_reported = true;
			daemon->dry_run_cgroup_id = pod->cgroup_id;
			daemon->dry_run_threshold_index = policy->decision.threshold_index;
		}
		if (err == -ENOENT) {
			/* The cgroup went away by itself since the ranking: no failure, decide again. */
			daemon->pending_mask |= SIGNAL_MASK_ALL;
			err = 1;
		}
		/* The ranking kept near the threshold named a pod that emptied since: decide
		 * again at once, on a fresh ranking (policy_evaluate uses a kept one once). */
		if (err == 1 && result.was_empty && policy->preranked)
			daemon->pending_mask |= SIGNAL_MASK_ALL;
		if (err) {
			if (err < 0) {
				struct eventlog_decision entry = eviction_entry(eviction, pod, EVENTLOG_FAILED, -1,
										strerror(-err));

				if (err == -ESTALE)
					daemon->evictions_stale++;
				else
					daemon->evictions_failed++;
				kill_ledger_failed(&daemon->ledger, resource, now);
				daemon_can_evict_note_kill_error(daemon, err, pod->cgroup_path);
				log_err("evicting %s failed: %s", pod->cgroup_path, strerror(-err));
				daemon_ops_record(daemon, &entry);
				kill_ledger_backing_off(&daemon->ledger, resource, now, &until);
				daemon_arm_retry(daemon, until);
			}
			eviction_free(eviction);
			/* Dry run: nothing changes, the same decision would repeat. Empty: it ended
			 * by itself, re-read on the next wake. Refused: do not try the next pod on
			 * a table that may be stale. */
			return;
		}
		evictions_in_flight++;
		daemon_bpf_log_detection(daemon, result.killed_at_ns);
		/* Killed now: wait for it to complete (above). In its grace (soft): count on what it
		 * holds, its usage or, unknown, the whole need. */
		pending = sat_add_i64(pending, grace_ns > 0 ? frees(threshold->signal, pod) : FREES_UNKNOWN);
		if (daemon_is_disk_signal(threshold->signal))
			return;
	}
}

/* The first observation after a memory kill completed says what it gave back: too little
 * (tmpfs and shared memory outlive their processes) is reported, and holds the next memory
 * eviction so that a fresh workload is not killed on every wake-up for memory no kill can
 * return (doc/DESIGN.md, "Acting: one victim per need"). */
static void judge_followup(struct daemon *daemon)
{
	struct policy *policy = daemon->policy;
	enum ev_signal signal = daemon->ledger_signal[LEDGER_MEMORY];
	const struct observation *observed = &policy->obs.signal[signal];
	const struct threshold *threshold = policy_threshold(policy);
	bool still_met = threshold && daemon_is_memory_signal(threshold->signal);
	struct ledger_verdict verdict;
	int64_t margin;
	char what[256];

	if (!daemon->ledger.r[LEDGER_MEMORY].followup || !observed->present)
		return;
	/* New pressure, not noise, ends the hold early: 64 MiB, or 1/64 of the capacity on a large
	 * node (384 MiB of 24 GiB), whose page cache alone moves by more. */
	margin = observed->capacity / 64 > LEDGER_MEMORY_NOISE_BYTES ? observed->capacity / 64 :
									 LEDGER_MEMORY_NOISE_BYTES;
	verdict = kill_ledger_judge(&daemon->ledger, LEDGER_MEMORY, clock_monotonic_ns(), observed->read_at_ns,
				    observed->available, still_met, margin);
	if (!verdict.unreturned)
		return;
	daemon->evictions_unreturned++;
	if (verdict.left >= 0)
		snprintf(what, sizeof(what), "%lld MiB stayed charged to its emptied cgroup (shmem %lld MiB: "
			 "tmpfs and shared memory outlive their processes)", (long long)(verdict.left >> 20),
			 (long long)(daemon->last_kill.shmem_left_bytes > 0 ? daemon->last_kill.shmem_left_bytes >> 20 : 0));
	else
		snprintf(what, sizeof(what), "it held %lld MiB; %s rose by %lld MiB", (long long)(verdict.expected >> 20),
			 signal_name(signal), (long long)(verdict.returned >> 20));
	log_warn("the last eviction for %s did not give back its memory: %s; no eviction for memory until "
		 "%s < %lld MiB or for %.0f s", signal_name(signal), what, signal_name(signal),
		 (long long)(verdict.hold_level >> 20), (double)(verdict.hold_until_ns - clock_monotonic_ns()) / 1e9);
	if (still_met) {
		struct eventlog_decision entry = daemon_ops_decision_entry(daemon, EVENTLOG_UNRETURNED, -1, what);

		daemon_ops_record(daemon, &entry);
	} else {
		/* Back over the threshold: no decision stands; the event names the signal and the
		 * highest threshold on it, the one the next drift down crosses first. */
		struct eventlog_decision entry = {
			.signal = signal,
			.value = observed->available,
			.threshold = -1,
			.action = EVENTLOG_UNRETURNED,
			.latency_ns = -1,
			.reason = "the signal is back over its threshold",
			.error = what,
			.dry_run = policy->config.dry_run,
		};

		for (size_t i = 0; i < policy->engine.n_thresholds; i++) {
			const struct threshold *t = &policy->engine.thresholds[i];

			if (t->signal == signal && policy->eval.threshold_value[i] > entry.threshold) {
				entry.threshold = policy->eval.threshold_value[i];
				entry.threshold_text = t->value.text;
				entry.hard = t->hard;
			}
		}
		daemon_ops_record(daemon, &entry);
	}
	daemon->ledger_said_hold[LEDGER_MEMORY] = true;
	daemon_arm_retry(daemon, verdict.hold_until_ns);
}

/*
 * A pod cgroup without metadata is never a threshold's victim, so while the pod list that may
 * name it is being read, the ranking holds only the pods known before it: a new BestEffort hog
 * whose entry is a parse away would leave a known Burstable pod within its request as the
 * victim (guest 10-memory on a slow machine). The eviction waits for that list, re-deciding
 * every POLICY_META_SETTLE_STEP_NS, at most POLICY_META_SETTLE_NS, then goes on with what is
 * known. The OOM guard never waits (it stands where the kernel's OOM killer would act).
 */
static bool metadata_settling(struct daemon *daemon, const struct threshold *threshold)
{
	struct policy *policy = daemon->policy;
	int64_t now = clock_monotonic_ns();
	const char *example = NULL;

	if (threshold->signal == EV_SIGNAL_OOM_GUARD || !pods_meta_settling(policy->pods, &example)) {
		daemon->meta_settle_since_ns = 0;
		return false;
	}
	if (!daemon->meta_settle_since_ns) {
		daemon->meta_settle_since_ns = now;
		log_info("%s: %s has no pod metadata yet and a newer pod list is being read: waiting up to "
			 "%lld ms for it before choosing a victim", signal_name(threshold->signal), example,
			 (long long)(POLICY_META_SETTLE_NS / 1000000));
	}
	if (now - daemon->meta_settle_since_ns >= POLICY_META_SETTLE_NS) {
		if (daemon->meta_settle_since_ns > 0) {
			log_warn("%s: the pod list being read did not arrive within %lld ms; choosing among "
				 "the pods known now", signal_name(threshold->signal),
				 (long long)(POLICY_META_SETTLE_NS / 1000000));
			daemon->meta_settle_since_ns = -1;	/* said; until the settling ends */
		}
		return false;
	}
	daemon_arm_retry(daemon, now + POLICY_META_SETTLE_STEP_NS);
	return true;
}

/* Said once, and again when it changes: pods whose memory usage cannot be read. */
static void note_usage_estimates(struct daemon *daemon)
{
	struct policy *policy = daemon->policy;
	const struct pod *example = NULL;
	size_t n = 0;

	for (size_t i = 0; i < policy->n_candidates; i++) {
		const struct pod *pod = policy->candidates[i];

		if (pod->memory_estimated || (pod->stats_missing && !pod->exited)) {
			n++;
			example = example ? example : pod;
		}
	}
	if (!n == !daemon->usage_estimated_said) {
		daemon->usage_estimated_said = n;
		return;
	}
	daemon->usage_estimated_said = n;
	if (n)
		log_warn("the memory usage of %zu of %zu workloads cannot be read (no %s/memory.current: the "
			 "memory controller is not enabled there): memory evictions rank them by their processes' "
			 "resident memory (/proc/PID/statm) and count on each victim to free the whole need "
			 "until it is gone", n, policy->n_candidates, example->cgroup_path);
	else
		log_info("the memory usage of every workload can be read again");
}

void daemon_handle(struct daemon *daemon, uint32_t mask)
{
	struct policy *policy = daemon->policy;
	const struct threshold *threshold;
	bool log_after;
	int64_t target;

	do {
		policy_evaluate(policy, mask);
		daemon->evaluations++;
		daemon_pressure_poll(daemon);
		note_usage_estimates(daemon);
		judge_followup(daemon);
		threshold = policy_threshold(policy);
		/* A hard threshold's kill goes first: its decision line and the pods' PSI
		 * triggers come after the cgroup.kill write (doc/DESIGN.md "Acting"). */
		log_after = threshold && threshold->hard && policy->decision.victim &&
			    !policy->config.dry_run;
		if (!log_after) {
			daemon_sync_pod_psi(daemon);
			daemon_log_decision(daemon);
		}
		daemon_warn(daemon);
		daemon_warn_ahead(daemon);
		if (!threshold) {
			if (daemon->ops)
				eventlog_pressure_cleared(daemon_ops_eventlog(daemon));
			memset(daemon->reclaim_tried, 0, sizeof(daemon->reclaim_tried));
			daemon->dry_run_reported = false;
			break;
		}
		if (daemon->shutdown_ready && shutdown_in_progress(&daemon->shutdown)) {
			log_debug("node is shutting down: the shutdown sequence terminates pods, not eviction");
			break;
		}
		target = engine_reclaim_target(&policy->engine, (size_t)policy->decision.threshold_index,
					       &policy->obs);
		/* The OOM guard never waits for reclaim, nor does a decision ahead (reclaim would
		 * find the signal above its target and call it resolved, again and again). */
		if (!policy->config.dry_run && !daemon->reclaim_tried[threshold->signal] &&
		    threshold->signal != EV_SIGNAL_OOM_GUARD && !policy->decision.ahead &&
		    daemon_reclaim_first(daemon, threshold, target))
			break;
		if (!policy->decision.victim || !policy->pods) {
			struct eventlog_decision entry = daemon_ops_decision_entry(daemon, EVENTLOG_NO_VICTIM, -1, NULL);

			daemon_ops_record(daemon, &entry);
			break;
		}
		if (daemon_is_disk_signal(threshold->signal) && !daemon_disk_usage_ready(daemon)) {
			log_debug("%s: measuring per-pod disk usage before ranking", signal_name(threshold->signal));
			break;
		}
		if (!policy_metadata_ready(policy)) {
			/* Static pods are known from their mirror pods: without the first list
			 * they would rank as ordinary pods. The wait ends with the list or at
			 * meta_deadline_ns (daemon_kube.c arms a timer for it). */
			log_info("waiting up to %lld s for the first pod list before evicting",
				 (long long)(POLICY_META_WAIT_NS / 1000000000));
			break;
		}
		if (metadata_settling(daemon, threshold))
			break;
		/* The node's taints before the eviction's status patch: a replacement the
		 * ReplicaSet makes on seeing the pod Failed must not land here (§8 "Other
		 * controllers and evictd's taints"); the call below is then a no-op. */
		if (daemon->kube_report)
			kube_report_conditions(daemon->kube_report, policy->eval.conditions);
		start_evictions(daemon, threshold, target);
	} while (0);
	if (log_after) {
		daemon_log_decision(daemon);
		daemon_sync_pod_psi(daemon);
	}
	/* evictd's own NoSchedule taints follow the node conditions. */
	if (daemon->kube_report)
		kube_report_conditions(daemon->kube_report, policy->eval.conditions);
}
