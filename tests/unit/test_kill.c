// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Killing (DESIGN.md §6): the never-kill rules and the hard/soft sequences on fixture trees
 * through fake ops (a fake clock, a fake kernel that empties cgroup.events), then real kills
 * on this host's cgroup v2 mount with forked children. */
#include "testutil.h"

#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>

#include "act/kill.h"
#include "sys/log.h"
#include "pods/pods.h"

#define CG "sys/fs/cgroup"
#define POD_REL CG "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podabc.slice"
#define MS 1000000ll

/* snprintf that must not truncate (a cut path would test the wrong thing). */
#define PATHF(buf, len, ...) assert_true(snprintf(buf, len, __VA_ARGS__) < (int)(len))

/* ---- fake ops ------------------------------------------------------------------------ */

#define MAX_RECORDS 64

static struct fake {
	int64_t clock_ns;
	size_t n_writes;
	char write_names[MAX_RECORDS][32];
	char write_texts[MAX_RECORDS][32];
	size_t n_signals;
	pid_t signal_pids[MAX_RECORDS];
	int signal_sigs[MAX_RECORDS];
	/* The fake kernel: what empties the cgroup. */
	bool empty_on_kill;		/* cgroup.kill written */
	bool empty_on_sigterm;		/* every listed process got SIGTERM */
	bool empty_on_sigkill;
	size_t expect_procs;
	bool kill_file_missing;		/* Linux < 5.14 */
	char events_path[PATH_MAX];	/* the pod's cgroup.events */
} fake;

static void fake_set_populated(int populated)
{
	char text[64];
	int fd = open(fake.events_path, O_WRONLY | O_TRUNC);

	assert_true(fd >= 0);
	PATHF(text, sizeof(text), "populated %d\nfrozen 0\n", populated);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static int fake_write_file(int dir_fd, const char *name, const char *text)
{
	if (fake.kill_file_missing && strcmp(name, "cgroup.kill") == 0)
		return -ENOENT;
	assert_true(fake.n_writes < MAX_RECORDS);
	PATHF(fake.write_names[fake.n_writes], 32, "%s", name);
	PATHF(fake.write_texts[fake.n_writes], 32, "%s", text);
	fake.n_writes++;
	if (fake.empty_on_kill && strcmp(name, "cgroup.kill") == 0) {
		fake.clock_ns += 3 * MS;	/* the kernel takes a little while */
		fake_set_populated(0);
	}
	return 0;
}

static int fake_signal_pid(pid_t pid, int sig)
{
	assert_true(fake.n_signals < MAX_RECORDS);
	fake.signal_pids[fake.n_signals] = pid;
	fake.signal_sigs[fake.n_signals] = sig;
	fake.n_signals++;
	return 0;
}

static int fake_wait_change(int events_fd, int timeout_ms)
{
	size_t terms = 0, kills = 0;

	for (size_t i = 0; i < fake.n_signals; i++) {
		terms += fake.signal_sigs[i] == SIGTERM;
		kills += fake.signal_sigs[i] == SIGKILL;
	}
	/* Processes that exit on a signal do so 20 ms in; nothing else changes. */
	if ((fake.empty_on_sigterm && terms >= fake.expect_procs) ||
	    (fake.empty_on_sigkill && kills >= fake.expect_procs)) {
		fake.clock_ns += 20 * MS;
		fake_set_populated(0);
		return 1;
	}
	fake.clock_ns += (int64_t)timeout_ms * MS;
	return 0;
}

static int fake_check_cgroupfs(int dir_fd)
{
	return 0;
}

static int64_t fake_now_ns(void)
{
	return fake.clock_ns;
}

static const struct kill_ops fake_ops = {
	.write_file = fake_write_file,
	.signal_pid = fake_signal_pid,
	.wait_change = fake_wait_change,
	.check_cgroupfs = fake_check_cgroupfs,
	.now_ns = fake_now_ns,
};

/* ---- the fixture tree -------------------------------------------------------------------- */

struct fixture {
	char root[PATH_MAX];
	char mount[PATH_MAX];
	char allowed[PATH_MAX];
	char pod[PATH_MAX];
	char self[PATH_MAX];
	const char *roots[1];
	struct kill_config config;
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	memset(&fake, 0, sizeof(fake));
	fixture_tmpdir(fx->root, "kill");
	PATHF(fake.events_path, PATH_MAX, "%s/" POD_REL "/cgroup.events", fx->root);
	fixture_write(fx->root, CG "/cgroup.controllers", "memory pids\n");
	fixture_write(fx->root, CG "/cgroup.procs", "1\n");
	fixture_write(fx->root, POD_REL "/cgroup.kill", "%s", "");
	fixture_write(fx->root, POD_REL "/cgroup.events", "populated 1\nfrozen 0\n");
	fixture_write(fx->root, POD_REL "/cgroup.procs", "111\n222\n");
	fixture_write(fx->root, POD_REL "/cri-containerd-1.scope/cgroup.procs", "333\n");
	fixture_write(fx->root, POD_REL "/cri-containerd-1.scope/cgroup.events", "populated 1\n");
	fixture_write(fx->root, CG "/system.slice/evictd.service/cgroup.procs", "444\n");
	fixture_write(fx->root, CG "/system.slice/evictd.service/cgroup.events", "populated 1\n");
	fixture_write(fx->root, CG "/system.slice/other.service/cgroup.kill", "%s", "");
	fixture_write(fx->root, CG "/system.slice/other.service/cgroup.events", "populated 1\n");
	fixture_write(fx->root, CG "/system.slice/other.service/cgroup.procs", "555\n");
	PATHF(fx->mount, PATH_MAX, "%s/" CG, fx->root);
	PATHF(fx->allowed, PATH_MAX, "%s/" CG "/kubepods.slice", fx->root);
	PATHF(fx->pod, PATH_MAX, "%s/" POD_REL, fx->root);
	PATHF(fx->self, PATH_MAX, "%s/" CG "/system.slice/evictd.service", fx->root);
	fx->roots[0] = fx->allowed;
	fx->config = (struct kill_config){
		.root = fx->root,
		.cgroup_mount = fx->mount,
		.allowed_roots = fx->roots,
		.n_allowed_roots = 1,
		.self_cgroup = fx->self,
		.kill_timeout_ns = 2000 * MS,
		.ops = &fake_ops,
	};
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	fixture_rm_rf(fx->root);
	free(fx);
	return 0;
}

static void read_text(const char *dir, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	PATHF(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		fail_msg("open %s: %s", path, strerror(errno));
	n = read(fd, buf, len - 1);
	assert_true(n >= 0);
	buf[n] = '\0';
	close(fd);
}

static void assert_untouched(const struct fixture *fx)
{
	char text[64];

	assert_int_equal(fake.n_writes, 0);
	assert_int_equal(fake.n_signals, 0);
	read_text(fx->pod, "cgroup.kill", text, sizeof(text));
	assert_string_equal(text, "");
	read_text(fx->pod, "cgroup.events", text, sizeof(text));
	assert_string_equal(text, "populated 1\nfrozen 0\n");
}

/* ---- the never-kill rules ----------------------------------------------------------------- */

static void test_refuse_root_and_bad_paths(void **state)
{
	struct fixture *fx = *state;
	struct kill_result result;
	char path[PATH_MAX];

	assert_int_equal(kill_cgroup(&fx->config, "/", KILL_HARD, 0, &result), -EPERM);
	assert_int_equal(kill_cgroup(&fx->config, fx->mount, KILL_HARD, 0, &result), -EPERM);
	assert_int_equal(kill_cgroup(&fx->config, "", KILL_HARD, 0, &result), -EINVAL);
	assert_int_equal(kill_cgroup(&fx->config, NULL, KILL_HARD, 0, &result), -EINVAL);
	assert_int_equal(kill_cgroup(NULL, fx->pod, KILL_HARD, 0, &result), -EINVAL);
	assert_int_equal(kill_cgroup(&fx->config, "sys/fs/cgroup/kubepods.slice/x", KILL_HARD, 0, &result), -EINVAL);
	/* Non-canonical spellings could walk out of the allowed root lexically. */
	PATHF(path, sizeof(path), "%s/kubepods-besteffort.slice/../../system.slice/other.service", fx->allowed);
	assert_int_equal(kill_cgroup(&fx->config, path, KILL_HARD, 0, &result), -EINVAL);
	PATHF(path, sizeof(path), "%s/", fx->pod);
	assert_int_equal(kill_cgroup(&fx->config, path, KILL_HARD, 0, &result), -EINVAL);
	PATHF(path, sizeof(path), "%s/./kubepods-besteffort.slice", fx->allowed);
	assert_int_equal(kill_cgroup(&fx->config, path, KILL_HARD, 0, &result), -EINVAL);
	PATHF(path, sizeof(path), "%s//kubepods-besteffort.slice", fx->allowed);
	assert_int_equal(kill_cgroup(&fx->config, path, KILL_HARD, 0, &result), -EINVAL);
	/* Even with "/" configured as the mount, "/" stays refused. */
	fx->config.cgroup_mount = "/";
	assert_int_equal(kill_cgroup(&fx->config, "/", KILL_HARD, 0, &result), -EPERM);
	/* No mount configured: nothing can be checked, nothing is killed. */
	fx->config.cgroup_mount = NULL;
	assert_int_equal(kill_cgroup(&fx->config, fx->pod, KILL_HARD, 0, &result), -EPERM);
	assert_untouched(fx);
}

static void test_refuse_outside_allowed_roots(void **state)
{
	struct fixture *fx = *state;
	const char *slash_root[] = { "/" };
	char path[PATH_MAX];

	/* A real cgroup, just not below the kubepods tree. */
	PATHF(path, sizeof(path), "%s/system.slice/other.service", fx->mount);
	assert_int_equal(kill_cgroup(&fx->config, path, KILL_HARD, 0, NULL), -EPERM);
	/* The allowed root itself: that would be every pod at once. */
	assert_int_equal(kill_cgroup(&fx->config, fx->allowed, KILL_HARD, 0, NULL), -EPERM);
	/* A sibling sharing the root's name as a prefix is not below it. */
	PATHF(path, sizeof(path), "%s-evil/pod", fx->allowed);
	fixture_write(fx->root, CG "/kubepods.slice-evil/pod/cgroup.events", "populated 1\n");
	assert_int_equal(kill_cgroup(&fx->config, path, KILL_HARD, 0, NULL), -EPERM);
	/* Outside the cgroup mount altogether. */
	PATHF(path, sizeof(path), "%s/elsewhere", fx->root);
	assert_int_equal(kill_cgroup(&fx->config, path, KILL_HARD, 0, NULL), -EPERM);
	/* No allowed roots, or only "/" (which would allow everything): refused. */
	fx->config.n_allowed_roots = 0;
	assert_int_equal(kill_cgroup(&fx->config, fx->pod, KILL_HARD, 0, NULL), -EPERM);
	fx->config.allowed_roots = slash_root;
	fx->config.n_allowed_roots = 1;
	assert_int_equal(kill_cgroup(&fx->config, fx->pod, KILL_HARD, 0, NULL), -EPERM);
	assert_untouched(fx);
	read_text(fx->mount, "system.slice/other.service/cgroup.kill", path, sizeof(path));
	assert_string_equal(path, "");
}

static void test_refuse_symlinks(void **state)
{
	struct fixture *fx = *state;
	char link[PATH_MAX], target[PATH_MAX], path[PATH_MAX];

	/* A symlink inside the allowed tree pointing at another cgroup: lexically fine. */
	PATHF(link, sizeof(link), "%s/kubepods-besteffort.slice/escape", fx->allowed);
	PATHF(target, sizeof(target), "%s/system.slice", fx->mount);
	assert_int_equal(symlink(target, link), 0);
	PATHF(path, sizeof(path), "%s/other.service", link);
	assert_int_equal(kill_cgroup(&fx->config, path, KILL_HARD, 0, NULL), -ELOOP);
	assert_int_equal(kill_check_cgroup(&fx->config, path, NULL), -ELOOP);

	/* The last component a symlink to a real pod: refused too. */
	PATHF(link, sizeof(link), "%s/kubepods-podlink.slice", fx->allowed);
	assert_int_equal(symlink(fx->pod, link), 0);
	assert_int_equal(kill_cgroup(&fx->config, link, KILL_HARD, 0, NULL), -ELOOP);

	/* A relative symlink climbing out. */
	PATHF(link, sizeof(link), "%s/kubepods-up.slice", fx->allowed);
	assert_int_equal(symlink("../system.slice/other.service", link), 0);
	assert_int_equal(kill_cgroup(&fx->config, link, KILL_SOFT, 30 * 1000 * MS, NULL), -ELOOP);

	assert_untouched(fx);
	read_text(fx->mount, "system.slice/other.service/cgroup.kill", path, sizeof(path));
	assert_string_equal(path, "");
}

static void test_refuse_own_cgroup_and_ancestors(void **state)
{
	struct fixture *fx = *state;
	char self[PATH_MAX];

	/* evictd running inside the pod's container: the pod and the container are refused. */
	PATHF(self, sizeof(self), "%s/cri-containerd-1.scope", fx->pod);
	fx->config.self_cgroup = self;
	assert_int_equal(kill_cgroup(&fx->config, fx->pod, KILL_HARD, 0, NULL), -EPERM);
	assert_int_equal(kill_cgroup(&fx->config, self, KILL_HARD, 0, NULL), -EPERM);

	/* Read from <root>/proc/self/cgroup when not given. */
	fx->config.self_cgroup = NULL;
	fixture_write(fx->root, "proc/self/cgroup",
		      "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podabc.slice\n");
	assert_int_equal(kill_cgroup(&fx->config, fx->pod, KILL_HARD, 0, NULL), -EPERM);
	/* Unreadable: fail closed. */
	PATHF(self, sizeof(self), "%s/proc/self/cgroup", fx->root);
	unlink(self);
	assert_int_equal(kill_cgroup(&fx->config, fx->pod, KILL_HARD, 0, NULL), -EPERM);
	/* No v2 line: fail closed too. */
	fixture_write(fx->root, "proc/self/cgroup", "4:memory:/\n");
	assert_int_equal(kill_cgroup(&fx->config, fx->pod, KILL_HARD, 0, NULL), -EPERM);
	assert_untouched(fx);

	/* evictd elsewhere: the same pod is fine. */
	fixture_write(fx->root, "proc/self/cgroup", "0::/system.slice/evictd.service\n");
	fake.empty_on_kill = true;
	assert_int_equal(kill_cgroup(&fx->config, fx->pod, KILL_HARD, 0, NULL), 0);
	assert_int_equal(fake.n_writes, 1);
}

static void test_refuse_never_evict_pods(void **state)
{
	struct fixture *fx = *state;
	struct kill_result result;
	struct pod pod = { .namespace_ = "kube-system", .name = "p", .priority = 0 };

	PATHF(pod.cgroup_path, sizeof(pod.cgroup_path), "%s", fx->pod);
	pod.is_static = true;
	assert_int_equal(kill_pod(&fx->config, &pod, KILL_HARD, 0, &result), -EPERM);
	pod.is_static = false;
	pod.is_mirror = true;
	assert_int_equal(kill_pod(&fx->config, &pod, KILL_SOFT, 10 * MS, &result), -EPERM);
	pod.is_mirror = false;
	pod.priority = 2000000000;	/* system-cluster-critical */
	assert_int_equal(kill_pod(&fx->config, &pod, KILL_HARD, 0, &result), -EPERM);
	pod.priority = 2000001000;	/* system-node-critical */
	assert_int_equal(kill_pod(&fx->config, &pod, KILL_HARD, 0, &result), -EPERM);
	pod.priority = 1999999999;
	pod.is_self = true;
	assert_int_equal(kill_pod(&fx->config, &pod, KILL_HARD, 0, &result), -EPERM);
	assert_int_equal(kill_pod(&fx->config, NULL, KILL_HARD, 0, &result), -EINVAL);
	assert_untouched(fx);

	/* Just below the critical line, not static, not self: killed. */
	pod.is_self = false;
	fake.empty_on_kill = true;
	assert_int_equal(kill_pod(&fx->config, &pod, KILL_HARD, 0, &result), 0);
	assert_true(result.used_cgroup_kill);
}

static void test_dry_run_touches_nothing(void **state)
{
	struct fixture *fx = *state;
	/* Real writes (so a write would show in the file), fake signals (the pids are made up). */
	struct kill_ops ops = fake_ops;
	struct kill_result result;
	struct pod pod = { .name = "p" };
	struct stat before, after;
	char path[PATH_MAX];

	ops.write_file = NULL;
	fx->config.ops = &ops;
	fx->config.dry_run = true;
	PATHF(path, sizeof(path), "%s/cgroup.kill", fx->pod);
	assert_int_equal(stat(path, &before), 0);

	assert_int_equal(kill_cgroup(&fx->config, fx->pod, KILL_HARD, 0, &result), 0);
	assert_true(result.dry_run);
	assert_false(result.used_cgroup_kill);
	assert_int_equal(kill_cgroup(&fx->config, fx->pod, KILL_SOFT, 30000 * MS, &result), 0);
	assert_true(result.dry_run);
	assert_int_equal(result.n_sigterm, 0);
	PATHF(pod.cgroup_path, sizeof(pod.cgroup_path), "%s", fx->pod);
	assert_int_equal(kill_pod(&fx->config, &pod, KILL_SOFT, 5000 * MS, &result), 0);
	/* The rules still apply in a dry run. */
	assert_int_equal(kill_cgroup(&fx->config, "/", KILL_HARD, 0, &result), -EPERM);

	assert_untouched(fx);
	assert_int_equal(stat(path, &after), 0);
	assert_int_equal(before.st_mtim.tv_sec, after.st_mtim.tv_sec);
	assert_int_equal(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);
	assert_int_equal(fake.clock_ns, 0);	/* and it did not wait */
}

/* ---- the sequences on the fixture ------------------------------------------------------- */

static void test_hard_kill_sequence(void **state)
{
	struct fixture *fx = *state;
	struct kill_result result;
	char text[64];

	fake.clock_ns = 1000 * MS;
	fake.empty_on_kill = true;
	assert_int_equal(kill_cgroup(&fx->config, fx->pod, KILL_HARD, 0, &result), 0);
	assert_int_equal(fake.n_writes, 1);
	assert_string_equal(fake.write_names[0], "cgroup.kill");
	assert_string_equal(fake.write_texts[0], "1");
	assert_int_equal(fake.n_signals, 0);
	assert_true(result.used_cgroup_kill);
	assert_false(result.exited_in_grace);
	assert_int_equal(result.kill_to_empty_ns, 3 * MS);
	assert_int_equal(result.total_ns, 3 * MS);
	assert_int_equal(result.sigterm_to_empty_ns, -1);
	read_text(fx->pod, "cgroup.events", text, sizeof(text));
	assert_string_equal(text, "populated 0\nfrozen 0\n");
}

static void test_hard_kill_timeout(void **state)
{
	struct fixture *fx = *state;
	struct kill_result result;

	/* The cgroup never empties (tasks in D state): give up after the timeout, logged. */
	assert_int_equal(kill_cgroup(&fx->config, fx->pod, KILL_HARD, 0, &result), -ETIMEDOUT);
	assert_int_equal(fake.n_writes, 1);
	assert_true(result.used_cgroup_kill);
	assert_int_equal(result.kill_to_empty_ns, -1);
	assert_true(fake.clock_ns >= 2000 * MS);
	assert_true(fake.clock_ns < 2100 * MS);
}

static void test_soft_kill_sigterm_then_cgroup_kill(void **state)
{
	struct fixture *fx = *state;
	struct kill_result result;
	bool seen[3] = { false, false, false };

	fake.empty_on_kill = true;
	assert_int_equal(kill_cgroup(&fx->config, fx->pod, KILL_SOFT, 500 * MS, &result), 0);
	/* SIGTERM to every process of the subtree (the pod and its container), then the kill
	 * at the end of the grace. */
	assert_int_equal(fake.n_signals, 3);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(fake.signal_sigs[i], SIGTERM);
		seen[0] |= fake.signal_pids[i] == 111;
		seen[1] |= fake.signal_pids[i] == 222;
		seen[2] |= fake.signal_pids[i] == 333;
	}
	assert_true(seen[0] && seen[1] && seen[2]);
	assert_int_equal(result.n_sigterm, 3);
	assert_false(result.exited_in_grace);
	assert_true(result.used_cgroup_kill);
	assert_int_equal(fake.n_writes, 1);
	assert_string_equal(fake.write_names[0], "cgroup.kill");
	assert_int_equal(result.grace_ns, 500 * MS);
	/* cgroup.kill came at the end of the grace, not before. */
	assert_true(result.total_ns >= 500 * MS);
	assert_int_equal(result.kill_to_empty_ns, 3 * MS);
}

static void test_soft_kill_exits_within_grace(void **state)
{
	struct fixture *fx = *state;
	struct kill_result result;

	fake.empty_on_sigterm = true;
	fake.expect_procs = 3;
	assert_int_equal(kill_cgroup(&fx->config, fx->pod, KILL_SOFT, 30000 * MS, &result), 0);
	assert_true(result.exited_in_grace);
	assert_false(result.used_cgroup_kill);
	assert_int_equal(fake.n_writes, 0);
	assert_int_equal(result.sigterm_to_empty_ns, 20 * MS);
}

static void test_soft_kill_without_grace_is_hard(void **state)
{
	struct fixture *fx = *state;
	struct kill_result result;

	fake.empty_on_kill = true;
	assert_int_equal(kill_cgroup(&fx->config, fx->pod, KILL_SOFT, 0, &result), 0);
	assert_int_equal(fake.n_signals, 0);
	assert_true(result.used_cgroup_kill);
	assert_int_equal(result.grace_ns, 0);
}

static void test_already_empty_and_not_a_cgroup(void **state)
{
	struct fixture *fx = *state;
	struct kill_result result;
	char path[PATH_MAX];

	fixture_write(fx->root, POD_REL "/cgroup.events", "populated 0\nfrozen 0\n");
	assert_int_equal(kill_cgroup(&fx->config, fx->pod, KILL_SOFT, 1000 * MS, &result), 0);
	assert_true(result.was_empty);
	assert_int_equal(fake.n_writes, 0);
	assert_int_equal(fake.n_signals, 0);

	/* No cgroup.events: not a (non-root) cgroup v2 directory. */
	fixture_write(fx->root, CG "/kubepods.slice/plain/cgroup.kill", "%s", "");
	PATHF(path, sizeof(path), "%s/plain", fx->allowed);
	assert_int_equal(kill_cgroup(&fx->config, path, KILL_HARD, 0, &result), -ENOTDIR);
	assert_int_equal(fake.n_writes, 0);

	/* A regular file as the target. */
	PATHF(path, sizeof(path), "%s/cgroup.kill", fx->pod);
	assert_int_equal(kill_cgroup(&fx->config, path, KILL_HARD, 0, &result), -ENOTDIR);
	assert_int_equal(fake.n_writes, 0);
}

static void test_real_fs_check_refuses_non_cgroupfs(void **state)
{
	struct fixture *fx = *state;
	struct kill_ops ops = fake_ops;

	/* With the real statfs check, a directory on /tmp is no cgroup. */
	ops.check_cgroupfs = NULL;
	fx->config.ops = &ops;
	assert_int_equal(kill_cgroup(&fx->config, fx->pod, KILL_HARD, 0, NULL), -ENOTDIR);
	assert_int_equal(fake.n_writes, 0);
}

static void test_fallback_without_cgroup_kill(void **state)
{
	struct fixture *fx = *state;
	struct kill_result result;
	size_t kills = 0;

	/* Linux < 5.14: SIGKILL every process instead. */
	fake.kill_file_missing = true;
	fake.empty_on_sigkill = true;
	fake.expect_procs = 3;
	assert_int_equal(kill_cgroup(&fx->config, fx->pod, KILL_HARD, 0, &result), 0);
	for (size_t i = 0; i < fake.n_signals; i++)
		kills += fake.signal_sigs[i] == SIGKILL;
	assert_int_equal(kills, 3);
	assert_false(result.used_cgroup_kill);
	assert_true(result.kill_to_empty_ns >= 0);
}

static void test_soft_grace(void **state)
{
	struct pod pod = { .termination_grace_period_s = 45 };

	assert_int_equal(kill_soft_grace_ns(&pod, 60), 45 * 1000 * MS);
	assert_int_equal(kill_soft_grace_ns(&pod, 10), 10 * 1000 * MS);
	/* No evictionMaxPodGracePeriod: soft evictions kill at once (DESIGN.md §2). */
	assert_int_equal(kill_soft_grace_ns(&pod, 0), 0);
	/* Unset: the API default of 30 s. */
	pod.termination_grace_period_s = -1;
	assert_int_equal(kill_soft_grace_ns(&pod, 600), 30 * 1000 * MS);
	pod.termination_grace_period_s = 0;
	assert_int_equal(kill_soft_grace_ns(&pod, 600), 0);
	assert_int_equal(kill_soft_grace_ns(NULL, 600), 0);
}

/* ---- real kills on this host's cgroup v2 mount --------------------------------------------- */

struct real {
	char mount[PATH_MAX];
	char parent[PATH_MAX];
	char victim[PATH_MAX];
	const char *roots[1];
	pid_t children[3];
	size_t n_children;
	struct kill_config config;
};

static int setup_real(void **state)
{
	struct real *real = calloc(1, sizeof(*real));
	char probe[PATH_MAX];

	if (!real)
		return -1;
	*state = real;
	if (pods_detect_cgroup_mount(NULL, real->mount, sizeof(real->mount))) {
		print_message("no cgroup v2 mount at /sys/fs/cgroup or /sys/fs/cgroup/unified\n");
		return 0;
	}
	PATHF(real->parent, sizeof(real->parent), "%s/evictd-test-XXXXXX", real->mount);
	if (!mkdtemp(real->parent)) {
		print_message("mkdir in %s: %s\n", real->mount, strerror(errno));
		real->parent[0] = '\0';
		return 0;
	}
	PATHF(real->victim, sizeof(real->victim), "%s/victim", real->parent);
	if (mkdir(real->victim, 0755)) {
		print_message("mkdir %s: %s\n", real->victim, strerror(errno));
		real->victim[0] = '\0';
		return 0;
	}
	PATHF(probe, sizeof(probe), "%s/cgroup.kill", real->victim);
	if (access(probe, W_OK)) {
		print_message("%s: %s (Linux < 5.14?)\n", probe, strerror(errno));
		real->victim[0] = '\0';
		return 0;
	}
	real->roots[0] = real->parent;
	real->config = (struct kill_config){
		.cgroup_mount = real->mount,
		.allowed_roots = real->roots,
		.n_allowed_roots = 1,
		.kill_timeout_ns = 5000 * MS,
	};
	return 0;
}

static int teardown_real(void **state)
{
	struct real *real = *state;

	for (size_t i = 0; i < real->n_children; i++) {
		if (real->children[i] > 0) {
			kill(real->children[i], SIGKILL);
			waitpid(real->children[i], NULL, 0);
		}
	}
	if (real->victim[0])
		rmdir(real->victim);
	if (real->parent[0])
		rmdir(real->parent);
	free(real);
	return 0;
}

enum child_mode {
	CHILD_SLEEP,		/* default SIGTERM: dies of it */
	CHILD_EXIT_ON_TERM,	/* catches SIGTERM and exits 0 */
	CHILD_IGNORE_TERM,	/* SIG_IGN: only SIGKILL ends it */
};

static void on_term(int sig)
{
	_exit(0);
}

/* Fork n children into the victim cgroup; each reports ready once it is in and its SIGTERM
 * disposition is set. */
static void spawn_children(struct real *real, size_t n, enum child_mode mode)
{
	char procs[PATH_MAX];
	int ready[2];

	PATHF(procs, sizeof(procs), "%s/cgroup.procs", real->victim);
	assert_int_equal(pipe(ready), 0);
	for (size_t i = 0; i < n; i++) {
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			int fd = open(procs, O_WRONLY);

			close(ready[0]);
			if (mode == CHILD_EXIT_ON_TERM)
				signal(SIGTERM, on_term);
			else if (mode == CHILD_IGNORE_TERM)
				signal(SIGTERM, SIG_IGN);
			/* "0" moves the writer itself. */
			if (fd < 0 || write(fd, "0", 1) != 1)
				_exit(99);
			close(fd);
			if (write(ready[1], "r", 1) != 1)
				_exit(98);
			for (;;)
				pause();
		}
		real->children[real->n_children++] = pid;
	}
	close(ready[1]);
	for (size_t i = 0; i < n; i++) {
		char c;

		assert_int_equal(read(ready[0], &c, 1), 1);
	}
	close(ready[0]);
}

static int populated(const char *cgroup)
{
	char text[128];

	read_text(cgroup, "cgroup.events", text, sizeof(text));
	return strstr(text, "populated 1") ? 1 : strstr(text, "populated 0") ? 0 : -1;
}

static void reap_all(struct real *real, int want_signal, int want_exit)
{
	for (size_t i = 0; i < real->n_children; i++) {
		int status;

		assert_int_equal(waitpid(real->children[i], &status, 0), real->children[i]);
		if (want_signal) {
			assert_true(WIFSIGNALED(status));
			assert_int_equal(WTERMSIG(status), want_signal);
		} else {
			assert_true(WIFEXITED(status));
			assert_int_equal(WEXITSTATUS(status), want_exit);
		}
		real->children[i] = 0;
	}
	real->n_children = 0;
}

#define REQUIRE_REAL(real)                                                                  \
	do {                                                                                   \
		if (!(real)->victim[0]) {                                                      \
			print_message("no writable cgroup v2 with cgroup.kill here; skipped\n"); \
			skip();                                                                \
		}                                                                              \
	} while (0)

static void test_real_hard_kill(void **state)
{
	struct real *real = *state;
	struct kill_result result;

	REQUIRE_REAL(real);
	spawn_children(real, 3, CHILD_IGNORE_TERM);
	assert_int_equal(populated(real->victim), 1);
	/* The allowed root itself and the mount stay refused on the real tree too. */
	assert_int_equal(kill_cgroup(&real->config, real->parent, KILL_HARD, 0, &result), -EPERM);
	assert_int_equal(kill_cgroup(&real->config, real->mount, KILL_HARD, 0, &result), -EPERM);
	assert_int_equal(populated(real->victim), 1);

	assert_int_equal(kill_cgroup(&real->config, real->victim, KILL_HARD, 0, &result), 0);
	assert_true(result.used_cgroup_kill);
	assert_int_equal(populated(real->victim), 0);
	assert_true(result.kill_to_empty_ns >= 0 && result.kill_to_empty_ns < 5000 * MS);
	print_message("real hard kill: cgroup.kill -> populated 0 in %.3f ms\n",
		      (double)result.kill_to_empty_ns / 1e6);
	reap_all(real, SIGKILL, 0);
}

static void test_real_soft_kill_exits_on_sigterm(void **state)
{
	struct real *real = *state;
	struct kill_result result;

	REQUIRE_REAL(real);
	spawn_children(real, 3, CHILD_EXIT_ON_TERM);
	assert_int_equal(kill_cgroup(&real->config, real->victim, KILL_SOFT, 5000 * MS, &result), 0);
	assert_true(result.exited_in_grace);
	assert_false(result.used_cgroup_kill);
	assert_int_equal(result.n_sigterm, 3);
	assert_true(result.sigterm_to_empty_ns < 5000 * MS);
	assert_int_equal(populated(real->victim), 0);
	print_message("real soft kill: SIGTERM -> populated 0 in %.3f ms\n",
		      (double)result.sigterm_to_empty_ns / 1e6);
	reap_all(real, 0, 0);
}

static void test_real_soft_kill_ignored_sigterm(void **state)
{
	struct real *real = *state;
	struct kill_result result;

	REQUIRE_REAL(real);
	spawn_children(real, 3, CHILD_IGNORE_TERM);
	assert_int_equal(kill_cgroup(&real->config, real->victim, KILL_SOFT, 300 * MS, &result), 0);
	assert_false(result.exited_in_grace);
	assert_true(result.used_cgroup_kill);
	assert_int_equal(result.n_sigterm, 3);
	/* The kill came at the end of the grace. */
	assert_true(result.total_ns >= 300 * MS);
	assert_true(result.total_ns < 300 * MS + 5000 * MS);
	assert_int_equal(populated(real->victim), 0);
	print_message("real soft kill, SIGTERM ignored: grace 300 ms, then populated 0 %.3f ms "
		      "after cgroup.kill\n", (double)result.kill_to_empty_ns / 1e6);
	reap_all(real, SIGKILL, 0);
}

static void test_real_dry_run(void **state)
{
	struct real *real = *state;
	struct kill_result result;

	REQUIRE_REAL(real);
	spawn_children(real, 1, CHILD_SLEEP);
	real->config.dry_run = true;
	assert_int_equal(kill_cgroup(&real->config, real->victim, KILL_SOFT, 100 * MS, &result), 0);
	assert_true(result.dry_run);
	/* Still alive: nothing was signalled. */
	assert_int_equal(populated(real->victim), 1);
	assert_int_equal(kill(real->children[0], 0), 0);
	real->config.dry_run = false;
	assert_int_equal(kill_cgroup(&real->config, real->victim, KILL_SOFT, 2000 * MS, &result), 0);
	reap_all(real, SIGTERM, 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define R(fn) cmocka_unit_test_setup_teardown(fn, setup_real, teardown_real)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_refuse_root_and_bad_paths),
		T(test_refuse_outside_allowed_roots),
		T(test_refuse_symlinks),
		T(test_refuse_own_cgroup_and_ancestors),
		T(test_refuse_never_evict_pods),
		T(test_dry_run_touches_nothing),
		T(test_hard_kill_sequence),
		T(test_hard_kill_timeout),
		T(test_soft_kill_sigterm_then_cgroup_kill),
		T(test_soft_kill_exits_within_grace),
		T(test_soft_kill_without_grace_is_hard),
		T(test_already_empty_and_not_a_cgroup),
		T(test_real_fs_check_refuses_non_cgroupfs),
		T(test_fallback_without_cgroup_kill),
		cmocka_unit_test(test_soft_grace),
		R(test_real_hard_kill),
		R(test_real_soft_kill_exits_on_sigterm),
		R(test_real_soft_kill_ignored_sigterm),
		R(test_real_dry_run),
	};

	log_set_level(LOGLEVEL_ERR - 1);
	return cmocka_run_group_tests_name("kill", tests, NULL, NULL);
}
