// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * scale-bench - evictd at scale, with the daemon's own code (linked from build/libevictd.a).
 *
 *   scale-bench eval [--pods N] [--iterations K] [--cgroup-root NAME]
 *       Build a kubelet-like kubepods tree (systemd driver) with N pod cgroups under
 *       <cgroup v2 mount>/NAME/kubepods.slice (10% Guaranteed, 30% Burstable, 60% BestEffort),
 *       one process in each pod's container cgroup, and a PodList file for them. Then time
 *       policy_evaluate() - one full evaluation exactly as the daemon runs it when a threshold
 *       is met: read every signal, evaluate the thresholds, re-read the pods source, discover
 *       and re-read every pod's cgroup, rank, pick the victim - K times (a threshold
 *       memory.available<1Pi keeps it met; --dry-run, so nothing is killed). Also
 *       timed on their own: signals_read(), pods_refresh(), rank_pods(), and a full
 *       evaluation right after the pods file changed (a new pod was scheduled: the JSON is
 *       parsed again inside the evaluation).
 *   scale-bench kill [--procs P] [--repeat R] [--cgroup-root NAME] [--child PATH]
 *       A pod with P processes; time kill_cgroup() (cgroup.kill, then poll cgroup.events for
 *       populated 0) R times, a fresh pod each time. The processes are forks of this program
 *       (dynamically linked against evictd's ten libraries: many mappings to tear down), or
 *       with --child, each execs "PATH pause" (e.g. the static racekit: a minimal process).
 *
 *   scale-bench memkill [--mib M] [--procs P] [--repeat R] [--cgroup-root NAME]
 *       A pod of P processes holding M MiB in all; cgroup.kill, then the time until
 *       MemAvailable has 90% of it back, with process_mrelease(2) on the killed processes
 *       (as evictd does) and without, alternating, R each.
 *
 * Output: lines starting with "scale " (see main()). Needs root and cgroup v2; cleans up
 * (kills and removes everything it made) on exit. NAME defaults to evictd-scale-<pid>, so an
 * evictd running on the same machine never sees these pods (they are not in its kubepods).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "daemon/policy.h"
#include "act/kill.h"
#include "sys/cgroupfs.h"
#include "sys/log.h"
#include "pods/pods.h"
#include "core/rank.h"
#include "signals/signals.h"

static char mount_dir[PATH_MAX / 2];
static char base[PATH_MAX / 2 + 128];	/* mount/NAME */
static char pods_file[PATH_MAX / 2];

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "scale-bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int write_text(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX + 64];
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) < 0)
		err = -errno;
	close(fd);
	return err;
}

/* Enable for children what this cgroup has (memory, pids, cpu; silently skips the absent). */
static void enable_controllers(const char *dir)
{
	static const char *const ctl[] = { "+memory", "+pids", "+cpu" };

	for (size_t i = 0; i < sizeof(ctl) / sizeof(ctl[0]); i++)
		write_text(dir, "cgroup.subtree_control", ctl[i]);
}

static void make_dir(const char *path, bool enable)
{
	if (mkdir(path, 0755) && errno != EEXIST)
		die(path);
	if (enable)
		enable_controllers(path);
}

/* Kill and remove everything below dir, bottom-up. */
static void remove_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char child[PATH_MAX];

	if (!d)
		return;
	write_text(dir, "cgroup.kill", "1");
	while ((e = readdir(d))) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		snprintf(child, sizeof(child), "%s/%s", dir, e->d_name);
		remove_tree(child);
	}
	closedir(d);
	for (int i = 0; i < 500 && rmdir(dir) && errno == EBUSY; i++)
		usleep(10000);
}

static void cleanup(void)
{
	if (base[0]) {
		remove_tree(base);
		base[0] = '\0';
	}
	if (pods_file[0])
		unlink(pods_file);
}

static void on_signal(int sig)
{
	cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

static const char *child_exec;	/* --child: exec this with "pause" */

/* A child that joins cgroup dir and sleeps until killed. Returns in the parent. */
static void spawn_into(const char *dir)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (pid == 0) {
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		if (write_text(dir, "cgroup.procs", "0"))
			_exit(1);
		if (child_exec) {
			execl(child_exec, child_exec, "pause", (char *)NULL);
			_exit(1);
		}
		for (;;)
			pause();
	}
}

static int64_t count_lines(const char *dir, const char *name)
{
	char path[PATH_MAX + 64], buf[65536];
	int64_t n = 0;
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < r; i++)
			n += buf[i] == '\n';
	close(fd);
	return n;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

struct stats {
	double median_ms, p95_ms, min_ms, max_ms;
};

static struct stats stats_of(int64_t *v, size_t n)
{
	struct stats s = { 0 };
	size_t k;

	if (!n)
		return s;
	qsort(v, n, sizeof(*v), cmp_i64);
	k = (size_t)(0.95 * n);
	if ((double)k < 0.95 * n)
		k++;
	s.median_ms = (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) / 1e6;
	s.p95_ms = v[k - 1] / 1e6;
	s.min_ms = v[0] / 1e6;
	s.max_ms = v[n - 1] / 1e6;
	return s;
}

static const char *uid_of(int i, char *buf, size_t len)
{
	snprintf(buf, len, "5ca1e000-%04x-4000-8000-%012x", (unsigned)(i % 65536), (unsigned)i);
	return buf;
}

static void uid_underscored(const char *uid, char *buf, size_t len)
{
	snprintf(buf, len, "%s", uid);
	for (char *p = buf; *p; p++)
		if (*p == '-')
			*p = '_';
}

enum { QOS_G, QOS_BU, QOS_BE };

static int qos_of(int i)
{
	return i % 10 == 0 ? QOS_G : i % 10 <= 3 ? QOS_BU : QOS_BE;
}

/* Pod i's cgroup dir and its container's, creating both. */
static void make_pod(int i, char *pod_dir, char *ctr_dir, size_t len)
{
	static const char *const parent[] = { "", "/kubepods-burstable.slice", "/kubepods-besteffort.slice" };
	static const char *const prefix[] = { "kubepods-pod", "kubepods-burstable-pod", "kubepods-besteffort-pod" };
	char uid[64], uidu[64];
	int q = qos_of(i);

	uid_underscored(uid_of(i, uid, sizeof(uid)), uidu, sizeof(uidu));
	snprintf(pod_dir, len, "%s/kubepods.slice%s/%s%s.slice", base, parent[q], prefix[q], uidu);
	snprintf(ctr_dir, len, "%s/cri-containerd-%064x.scope", pod_dir, (unsigned)i + 1);
	make_dir(pod_dir, true);
	make_dir(ctr_dir, false);
	if (q == QOS_G)
		write_text(pod_dir, "memory.max", "104857600");
}

static void write_pods_file(int n_pods, int extra)
{
	char tmp[PATH_MAX + 8], uid[64];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", pods_file);
	f = fopen(tmp, "w");
	if (!f)
		die(tmp);
	fprintf(f, "{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"%d\"},\"items\":[\n", extra);
	for (int i = 0; i < n_pods + extra; i++) {
		int q = qos_of(i);
		const char *res = q == QOS_G ? "\"requests\":{\"memory\":\"100Mi\",\"cpu\":\"100m\"},\"limits\":{\"memory\":\"100Mi\",\"cpu\":\"100m\"}" :
				  q == QOS_BU ? "\"requests\":{\"memory\":\"64Mi\"}" : "";
		fprintf(f, "%s{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod-%d\",\"namespace\":\"scale\","
			   "\"uid\":\"%s\",\"labels\":{\"app\":\"scale\",\"pod-template-hash\":\"5d8f7c9b6\"},"
			   "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"scale-5d8f7c9b6\","
			   "\"uid\":\"00000000-0000-4000-8000-000000000001\",\"controller\":true}]},"
			   "\"spec\":{\"nodeName\":\"scale\",\"priority\":%d,\"terminationGracePeriodSeconds\":30,"
			   "\"containers\":[{\"name\":\"main\",\"image\":\"registry.example/app:1.0\",\"resources\":{%s}}]},"
			   "\"status\":{\"phase\":\"Running\",\"qosClass\":\"%s\"}}\n",
			i ? "," : "", i, uid_of(i, uid, sizeof(uid)), (i * 7) % 1000, res,
			q == QOS_G ? "Guaranteed" : q == QOS_BU ? "Burstable" : "BestEffort");
	}
	fprintf(f, "]}\n");
	if (fclose(f))
		die(tmp);
	if (rename(tmp, pods_file))
		die(pods_file);
}

static void setup_base(const char *name)
{
	char kp[PATH_MAX + 64];

	if (pods_detect_cgroup_mount("", mount_dir, sizeof(mount_dir)))
		die("no cgroup v2 mount (/sys/fs/cgroup or /sys/fs/cgroup/unified)");
	snprintf(base, sizeof(base), "%s/%s", mount_dir, name);
	make_dir(base, true);
	snprintf(kp, sizeof(kp), "%s/kubepods.slice", base);
	make_dir(kp, true);
	snprintf(kp, sizeof(kp), "%s/kubepods.slice/kubepods-burstable.slice", base);
	make_dir(kp, true);
	snprintf(kp, sizeof(kp), "%s/kubepods.slice/kubepods-besteffort.slice", base);
	make_dir(kp, true);
}

static int cmd_eval(int n_pods, int iterations, const char *name)
{
	static struct evictd_config config;
	struct policy *policy;
	char pod_dir[PATH_MAX], arg_root[PATH_MAX + 32], arg_pods[PATH_MAX + 32];
	int64_t *t = calloc((size_t)iterations, sizeof(*t));
	char (*ctr_dir)[PATH_MAX] = calloc((size_t)n_pods, PATH_MAX);
	int64_t t0;

	if (!t || !ctr_dir)
		die("calloc");
	setup_base(name);
	snprintf(pods_file, sizeof(pods_file), "/tmp/%s.pods.json", name);
	write_pods_file(n_pods, 0);
	t0 = now_ns();
	for (int i = 0; i < n_pods; i++) {
		make_pod(i, pod_dir, ctr_dir[i], PATH_MAX);
		spawn_into(ctr_dir[i]);
	}
	/* every process in its cgroup before timing anything */
	for (int tries = 0; tries < 1000; tries++) {
		int64_t n = 0;

		for (int i = 0; i < n_pods; i++)
			n += count_lines(ctr_dir[i], "cgroup.procs") > 0;
		if (n == n_pods)
			break;
		usleep(10000);
	}
	printf("# scale eval: %d pod cgroups with one process each under %s/kubepods.slice, made in %.1f s\n",
	       n_pods, base, (now_ns() - t0) / 1e9);

	snprintf(arg_root, sizeof(arg_root), "--cgroup-root=/%s", name);
	snprintf(arg_pods, sizeof(arg_pods), "--pods-file=%s", pods_file);
	char *argv[] = { "evictd", "--once", "--dry-run", arg_root, arg_pods, "--node-name=scale",
			 "--eviction-hard=memory.available<1Pi", "--kube-api=off", "--metrics-address=off",
			 "--event-log=off", getenv("SCALE_DEBUG") ? "--log-level=debug" : "--log-level=warning", NULL };
	config_init_defaults(&config);
	if (config_parse_args(&config, (int)(sizeof(argv) / sizeof(argv[0])) - 1, argv) || config_finalize(&config)) {
		fprintf(stderr, "scale-bench: the evictd configuration was refused\n");
		return 1;
	}
	log_set_level(config.log_level);
	if (policy_new(&policy, &config, &(struct policy_deps){ .node_name = "scale" }) || !policy->pods) {
		fprintf(stderr, "scale-bench: evictd found no cgroup v2 tree\n");
		return 1;
	}
	/* The pods file is parsed by a worker (user/pods/file_source.c): as --once does, wait
	 * for the first list, then warm up (first-time logs). */
	policy_evaluate(policy, 0);
	pods_meta_wait(policy->pods, 5000000000LL);
	for (int i = 0; i < 3; i++)
		policy_evaluate(policy, 0);
	if (policy->decision.threshold_index < 0 || !policy->decision.victim || policy->n_candidates != (size_t)n_pods) {
		fprintf(stderr, "scale-bench: the evaluation did not rank %d pods (threshold %d, %zu candidates, victim %s)\n",
			n_pods, policy->decision.threshold_index, policy->n_candidates,
			policy->decision.victim ? policy->decision.victim->name : "none");
		return 1;
	}

	struct stats s_full, s_sig, s_refresh, s_rank, s_changed, s_usage, s_ref_openat, s_ref_pread;
	for (int i = 0; i < iterations; i++) {
		t0 = now_ns();
		policy_evaluate(policy, 0);
		t[i] = now_ns() - t0;
	}
	s_full = stats_of(t, (size_t)iterations);
	for (int i = 0; i < iterations; i++) {
		struct observations obs = policy->obs;

		t0 = now_ns();
		signals_read(&policy->source, 0, &obs);
		t[i] = now_ns() - t0;
	}
	s_sig = stats_of(t, (size_t)iterations);
	for (int i = 0; i < iterations; i++) {
		t0 = now_ns();
		pods_refresh(policy->pods);
		t[i] = now_ns() - t0;
	}
	s_refresh = stats_of(t, (size_t)iterations);
	for (int i = 0; i < iterations; i++) {
		size_t n;
		struct pod **list;

		pods_refresh(policy->pods);
		list = pods_list(policy->pods, &n);
		t0 = now_ns();
		rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, &policy->rank_options, list, n);
		t[i] = now_ns() - t0;
	}
	s_rank = stats_of(t, (size_t)iterations);
	for (int i = 0; i < iterations; i++) {
		t0 = now_ns();
		pods_refresh_usage(policy->pods);
		t[i] = now_ns() - t0;
	}
	s_usage = stats_of(t, (size_t)iterations);

	/* References for what the per-pod reads could cost: the same three files per pod opened
	 * relative to a directory fd kept from discovery (no path walk), and kept open and
	 * re-read with pread (no open at all). */
	size_t n_list;
	struct pod **list = pods_list(policy->pods, &n_list);
	static const char *const files[3] = { "memory.current", "memory.stat", "pids.current" };
	int *dfd = calloc(n_list, sizeof(int)), *ffd = calloc(n_list * 3, sizeof(int));
	char buf[8192];
	if (!dfd || !ffd)
		die("calloc");
	for (size_t p = 0; p < n_list; p++) {
		dfd[p] = open(list[p]->cgroup_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		for (int f = 0; f < 3; f++)
			ffd[p * 3 + f] = openat(dfd[p], files[f], O_RDONLY | O_CLOEXEC);
	}
	for (int i = 0; i < iterations; i++) {
		t0 = now_ns();
		for (size_t p = 0; p < n_list; p++)
			for (int f = 0; f < 3; f++) {
				int fd = openat(dfd[p], files[f], O_RDONLY | O_CLOEXEC);

				if (fd >= 0) {
					if (read(fd, buf, sizeof(buf)) < 0)
						buf[0] = 0;
					close(fd);
				}
			}
		t[i] = now_ns() - t0;
	}
	s_ref_openat = stats_of(t, (size_t)iterations);
	for (int i = 0; i < iterations; i++) {
		t0 = now_ns();
		for (size_t p = 0; p < n_list * 3; p++)
			if (ffd[p] >= 0 && pread(ffd[p], buf, sizeof(buf), 0) < 0)
				buf[0] = 0;
		t[i] = now_ns() - t0;
	}
	s_ref_pread = stats_of(t, (size_t)iterations);
	/* The same syscalls on both sides: cgroup.events exists in every v2 tree (the host's has
	 * no memory or pids files), so the guest/host ratio of this says how much slower TCG
	 * makes exactly the reads an evaluation does. */
	struct stats s_ref_events;
	for (size_t p = 0; p < n_list * 3; p++)
		if (ffd[p] >= 0)
			close(ffd[p]);
	for (size_t p = 0; p < n_list * 3; p++)
		ffd[p] = p < n_list ? openat(dfd[p], "cgroup.events", O_RDONLY | O_CLOEXEC) : -1;
	for (int i = 0; i < iterations; i++) {
		t0 = now_ns();
		for (size_t p = 0; p < n_list; p++)
			if (ffd[p] >= 0 && pread(ffd[p], buf, sizeof(buf), 0) < 0)
				buf[0] = 0;
		t[i] = now_ns() - t0;
	}
	s_ref_events = stats_of(t, (size_t)iterations);
	for (size_t p = 0; p < n_list; p++) {
		for (int f = 0; f < 3; f++)
			if (ffd[p * 3 + f] >= 0)
				close(ffd[p * 3 + f]);
		close(dfd[p]);
	}
	free(dfd);
	free(ffd);

	/* A cgroup made or removed in a watched directory (here a non-pod one beside the pods):
	 * the next refresh rediscovers the whole tree (user/pods/cgroup_watch.c). */
	struct stats s_rediscover;
	char qos_dir[PATH_MAX], extra[PATH_MAX + 32];
	snprintf(qos_dir, sizeof(qos_dir), "%s", list[0]->cgroup_path);
	*strrchr(qos_dir, '/') = '\0';
	snprintf(extra, sizeof(extra), "%s/evictd-scale-extra", qos_dir);
	for (int i = 0; i < iterations; i++) {
		if (i % 2 ? rmdir(extra) : mkdir(extra, 0755))
			die("mkdir/rmdir of a cgroup beside the pods");
		t0 = now_ns();
		pods_refresh(policy->pods);
		t[i] = now_ns() - t0;
	}
	rmdir(extra);
	s_rediscover = stats_of(t, (size_t)iterations);

	int changed = iterations < 20 ? iterations : 20;
	for (int i = 0; i < changed; i++) {
		/* a new pod scheduled: the list has one more item (without a cgroup yet) */
		write_pods_file(n_pods, 1 + i % 2);
		t0 = now_ns();
		policy_evaluate(policy, 0);
		t[i] = now_ns() - t0;
		pods_meta_wait(policy->pods, 5000000000LL);	/* the next one starts settled */
	}
	s_changed = stats_of(t, (size_t)changed);
	printf("scale eval pods=%d: full evaluation (signals, thresholds, pods source, discovery, per-pod usage, ranking, victim) "
	       "median %.3f ms, p95 %.3f ms, min %.3f ms over %d\n", n_pods, s_full.median_ms, s_full.p95_ms, s_full.min_ms, iterations);
	printf("scale eval parts pods=%d: signals_read median %.3f ms; pods_refresh median %.3f ms (p95 %.3f); rank_pods median %.3f ms\n",
	       n_pods, s_sig.median_ms, s_refresh.median_ms, s_refresh.p95_ms, s_rank.median_ms);
	printf("scale eval usage pods=%d: pods_refresh_usage (per-pod reads through the kept dir fds) median %.3f ms; "
	       "reference, the same 3 files per pod: openat() from a kept dir fd median %.3f ms, pread() of kept fds median %.3f ms\n",
	       n_pods, s_usage.median_ms, s_ref_openat.median_ms, s_ref_pread.median_ms);
	printf("scale eval reference pods=%d: pread() of every pod's cgroup.events (the same syscalls host and guest) median %.3f ms\n",
	       n_pods, s_ref_events.median_ms);
	printf("scale eval rediscovery pods=%d: pods_refresh right after a cgroup was made or removed beside the pods median %.3f ms, p95 %.3f ms\n",
	       n_pods, s_rediscover.median_ms, s_rediscover.p95_ms);
	printf("scale eval changed pods=%d: full evaluation right after the pods file changed median %.3f ms, p95 %.3f ms over %d\n",
	       n_pods, s_changed.median_ms, s_changed.p95_ms, changed);
	policy_unref(policy);
	return 0;
}

static int cmd_kill(int procs, int repeat, const char *name)
{
	char pod_dir[PATH_MAX], ctr_dir[PATH_MAX], kp[PATH_MAX + 64];
	int64_t *t = calloc((size_t)repeat, sizeof(*t)), t0;
	const char *roots[1] = { kp };

	if (!t)
		die("calloc");
	setup_base(name);
	snprintf(kp, sizeof(kp), "%s/kubepods.slice", base);
	struct kill_config config = {
		.root = "",
		.cgroup_mount = mount_dir,
		.allowed_roots = roots,
		.n_allowed_roots = 1,
		.kill_timeout_ns = 10LL * 1000000000,
	};
	for (int r = 0; r < repeat; r++) {
		struct kill_result result;
		int64_t n = 0;

		make_pod(2 + r * 10, pod_dir, ctr_dir, sizeof(pod_dir));	/* BestEffort */
		t0 = now_ns();
		for (int i = 0; i < procs; i++)
			spawn_into(ctr_dir);
		for (int tries = 0; tries < 2000 && (n = count_lines(ctr_dir, "cgroup.procs")) < procs; tries++)
			usleep(5000);
		if (n < procs) {
			fprintf(stderr, "scale-bench: only %lld of %d processes joined %s\n", (long long)n, procs, ctr_dir);
			return 1;
		}
		if (child_exec)
			usleep(300000 + 1000 * procs);	/* let every child finish its exec */
		if (r == 0)
			printf("# scale kill: %d processes in %s, started in %.2f s\n", procs, pod_dir, (now_ns() - t0) / 1e9);
		if (kill_cgroup(&config, pod_dir, KILL_HARD, 0, &result) || result.kill_to_empty_ns < 0) {
			fprintf(stderr, "scale-bench: kill_cgroup %s failed\n", pod_dir);
			return 1;
		}
		t[r] = result.kill_to_empty_ns;
		rmdir(ctr_dir);
		rmdir(pod_dir);
	}
	struct stats s = stats_of(t, (size_t)repeat);
	printf("scale kill procs=%d%s: cgroup.kill -> populated 0 median %.2f ms, max %.2f ms, min %.2f ms over %d pods\n",
	       procs, child_exec ? " (minimal static processes)" : " (forks of a dynamically linked process)",
	       s.median_ms, s.max_ms, s.min_ms, repeat);
	return 0;
}

/* MemAvailable in bytes. */
static int64_t mem_available(void)
{
	char buf[4096], *line;
	int fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		die("/proc/meminfo");
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		die("/proc/meminfo");
	buf[n] = '\0';
	line = strstr(buf, "MemAvailable:");
	return line ? strtoll(line + 13, NULL, 10) * 1024 : -1;
}

/*
 * cgroup.kill of a pod holding `mib` MiB in `procs` processes, then how long until
 * MemAvailable has 90% of it back, with and without process_mrelease(2) on the killed
 * processes (kill_mrelease_cgroup, as the daemon's executor does), alternating, R each.
 */
static int cmd_memkill(int mib, int procs, int repeat, const char *name)
{
	char pod_dir[PATH_MAX], ctr_dir[PATH_MAX];
	int64_t *t_mem = calloc((size_t)repeat * 2, sizeof(int64_t));
	int64_t *t_empty = calloc((size_t)repeat * 2, sizeof(int64_t));
	size_t per = ((size_t)mib << 20) / (size_t)procs;
	int n_with = 0, n_without = 0, timeouts = 0;

	if (!t_mem || !t_empty)
		die("calloc");
	setup_base(name);
	for (int r = 0; r < repeat * 2; r++) {
		bool with = r % 2 == 0;
		int ready[2], dir_fd, events_fd;
		int64_t baseline, before, t0, target, *slot;
		char c;

		make_pod(2 + r * 10, pod_dir, ctr_dir, sizeof(pod_dir));
		if (pipe(ready))
			die("pipe");
		baseline = mem_available();
		for (int i = 0; i < procs; i++) {
			pid_t pid = fork();

			if (pid < 0)
				die("fork");
			if (pid == 0) {
				char *mem;

				close(ready[0]);
				if (write_text(ctr_dir, "cgroup.procs", "0"))
					_exit(1);
				mem = mmap(NULL, per, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
				if (mem == MAP_FAILED)
					_exit(1);
				memset(mem, 1, per);
				if (write(ready[1], "x", 1) != 1)
					_exit(1);
				for (;;)
					pause();
			}
		}
		close(ready[1]);
		for (int i = 0; i < procs; i++)
			if (read(ready[0], &c, 1) != 1)
				die("a memory child failed");
		close(ready[0]);
		dir_fd = open(pod_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		events_fd = openat(dir_fd, "cgroup.events", O_RDONLY | O_CLOEXEC);
		if (dir_fd < 0 || events_fd < 0)
			die(pod_dir);
		before = mem_available();
		/* 90% of what the pod took from MemAvailable (measured: other activity and per-CPU
		 * counter drift make it differ a little from M MiB). */
		target = before + (baseline - before) * 9 / 10;
		t0 = now_ns();
		if (write_text(pod_dir, "cgroup.kill", "1"))
			die("cgroup.kill");
		if (with)
			kill_mrelease_cgroup(dir_fd);
		slot = with ? &t_mem[n_with] : &t_mem[repeat + n_without];
		*slot = -1;
		while (now_ns() - t0 < 10LL * 1000000000) {
			if (*slot < 0 && mem_available() >= target)
				*slot = now_ns() - t0;
			if (*slot >= 0 && cgroupfs_read_populated(events_fd) == 0)
				break;
			usleep(100);
		}
		if (with)
			t_empty[n_with++] = now_ns() - t0;
		else
			t_empty[repeat + n_without++] = now_ns() - t0;
		close(events_fd);
		close(dir_fd);
		for (int i = 0; i < 200 && rmdir(ctr_dir) && errno == EBUSY; i++)
			usleep(10000);
		rmdir(pod_dir);
		if (*slot < 0) {
			/* Counted as 10 s (a timeout), not dropped: the median must not improve. */
			fprintf(stderr, "scale-bench: memkill %s: MemAvailable not 90%% back within 10 s "
				"(before %lld MiB, now %lld MiB, target %lld MiB)\n", with ? "with" : "without",
				(long long)(before >> 20), (long long)(mem_available() >> 20),
				(long long)(target >> 20));
			*slot = 10LL * 1000000000;
			timeouts++;
		}
	}
	struct stats w = stats_of(t_mem, (size_t)repeat), wo = stats_of(t_mem + repeat, (size_t)repeat);
	printf("scale memkill %d MiB in %d process%s: cgroup.kill -> 90%% back in MemAvailable, with process_mrelease "
	       "median %.2f ms (max %.2f), without median %.2f ms (max %.2f), %d each, alternating, %d timeouts counted as 10 s%s\n",
	       mib, procs, procs == 1 ? "" : "es", w.median_ms, w.max_ms, wo.median_ms, wo.max_ms, repeat, timeouts,
	       kill_mrelease_supported() ? "" : " (this kernel has no process_mrelease: both are without)");
	return 0;
}

int main(int argc, char **argv)
{
	int pods = 1000, iterations = 200, procs = 1000, repeat = 5, mib = 700;
	char name[64];

	snprintf(name, sizeof(name), "evictd-scale-%d", (int)getpid());
	if (argc < 2) {
		fprintf(stderr, "usage: scale-bench eval [--pods N] [--iterations K] [--cgroup-root NAME]\n"
				"       scale-bench kill [--procs P] [--repeat R] [--cgroup-root NAME] [--child PATH]\n"
				"       scale-bench memkill [--mib M] [--procs P] [--repeat R] [--cgroup-root NAME]\n");
		return 2;
	}
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--pods"))
			pods = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--iterations"))
			iterations = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--procs"))
			procs = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--repeat"))
			repeat = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--mib"))
			mib = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--child"))
			child_exec = argv[i + 1];
		else if (!strcmp(argv[i], "--cgroup-root"))
			snprintf(name, sizeof(name), "%s", argv[i + 1]);
		else {
			fprintf(stderr, "scale-bench: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (pods < 1 || iterations < 1 || procs < 1 || repeat < 1)
		return 2;
	/* As evictd's main() does, the hard limit of open files, and at least 65536 as systemd
	 * gives services (its default LimitNOFILE hard limit is 524288; a busybox guest's is the
	 * kernel's 4096): the pods table keeps a few fds per pod, within half the soft limit. */
	struct rlimit nofile;

	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
		if (nofile.rlim_max < 65536)
			nofile.rlim_max = 65536;	/* root: CAP_SYS_RESOURCE */
		nofile.rlim_cur = nofile.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &nofile) && getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
			nofile.rlim_cur = nofile.rlim_max;
			setrlimit(RLIMIT_NOFILE, &nofile);
		}
	}
	/* Children are reaped by the kernel; cleanup runs on every way out. */
	signal(SIGCHLD, SIG_IGN);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	atexit(cleanup);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "eval"))
		return cmd_eval(pods, iterations, name);
	if (!strcmp(argv[1], "kill"))
		return cmd_kill(procs, repeat, name);
	if (!strcmp(argv[1], "memkill"))
		return cmd_memkill(mib, procs, repeat, name);
	fprintf(stderr, "scale-bench: unknown command %s\n", argv[1]);
	return 2;
}
