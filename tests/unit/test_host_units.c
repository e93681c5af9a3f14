// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Standalone workloads on a host (doc/DESIGN.md §5 "Workloads on a host"): below a workload
 * root such as system.slice or user.slice the candidates are the units, found as
 * systemd-oomd finds them below a monitored cgroup (src/oom/oomd-manager.c
 * recursively_get_cgroup_context): slices and user managers are descended into, services
 * and scopes are candidates, never a user's whole slice, the user manager or the root.
 * Fixture: tests/fixtures/host-units (a Debian host's tree, see its README).
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include "core/rank.h"
#include "pods/pods.h"
#include "pods/prefs.h"
#include "sys/log.h"

#define HOST FIXTURES_DIR "/host-units"
#define CG "sys/fs/cgroup"
#define APP CG "/user.slice/user-1000.slice/user@1000.service/app.slice"

static struct pod *find(struct pod **list, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i]->name, name))
			return list[i];
	return NULL;
}

static void names_are(struct pod **list, size_t n, const char *const *expect, size_t n_expect)
{
	char got[2048] = "";

	for (size_t i = 0; i < n; i++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), " %s", list[i]->name);
	if (n != n_expect)
		fail_msg("%zu workloads, expected %zu:%s", n, n_expect, got);
	for (size_t i = 0; i < n_expect; i++)
		if (!find(list, n, expect[i]))
			fail_msg("no workload %s among:%s", expect[i], got);
}

static struct pods *open_host(const char *root, const char *const *roots, size_t n_roots)
{
	struct pods_options options = { .root = root, .workload_roots = roots, .n_workload_roots = n_roots };
	struct pods *pods;

	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_refresh(pods), 0);
	return pods;
}

/* system.slice and user.slice as roots: the units, each whole, and the session's leak ranks
 * first for memory, not user-1000.slice (the bench's thrash and leak took the user's whole
 * slice down: bench/results.md "Host race"). */
static void test_candidates_are_units(void **state)
{
	static const char *const roots[] = { "/" CG "/system.slice", "/" CG "/user.slice" };
	static const char *const expect[] = {
		"ssh.service", "db.service", "getty@tty1.service",
		"delegated.service",	/* child cgroups: a unit is killed whole */
		"grouped.slice",	/* memory.oom.group=1: oomd does not descend either */
		"threads.slice",	/* domain threaded: cgroup.kill refuses its threaded children */
		"session-2.scope", "firefox.service", "app-term-42.scope", "pipewire.service",
	};
	static const char *const never[] = {
		"user-1000.slice", "user@1000.service", "init.scope", "app.slice", "session.slice",
		"background.slice", "system-idle.slice", "system-getty.slice", "payload", "pool",
		"worker-a.service",
	};
	struct pods *pods = open_host(HOST, roots, 2);
	struct pod **list, *firefox;
	char expect_path[PATH_MAX];
	size_t n;

	(void)state;
	list = pods_list(pods, &n);
	names_are(list, n, expect, sizeof(expect) / sizeof(expect[0]));
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++)
		assert_null(find(list, n, never[i]));
	firefox = find(list, n, "firefox.service");
	assert_non_null(firefox);
	snprintf(expect_path, sizeof(expect_path), "%s/%s/firefox.service", HOST, APP);
	assert_string_equal(firefox->cgroup_path, expect_path);
	assert_int_equal(firefox->memory_working_set, 400ll << 20);

	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, NULL, list, n);
	assert_string_equal(list[0]->name, "session-2.scope");
	assert_string_equal(list[1]->name, "firefox.service");
	pods_close(pods);
}

/* The host profile's roots (user-1000.slice: profile.c default_workload_roots): the user
 * manager is descended into, its own init.scope is never a candidate. */
static void test_user_slice_root(void **state)
{
	static const char *const roots[] = { "/" CG "/user.slice/user-1000.slice" };
	static const char *const expect[] = {
		"session-2.scope", "firefox.service", "app-term-42.scope", "pipewire.service",
	};
	struct pods *pods = open_host(HOST, roots, 1);
	struct pod **list;
	size_t n;

	(void)state;
	list = pods_list(pods, &n);
	names_are(list, n, expect, sizeof(expect) / sizeof(expect[0]));
	pods_close(pods);
}

static int setup_copy(void **state)
{
	char *dir = malloc(PATH_MAX), cmd[2 * PATH_MAX];

	if (!dir)
		return -1;
	fixture_tmpdir(dir, "hostunits");
	snprintf(cmd, sizeof(cmd), "cp -a '%s/sys' '%s/'", HOST, dir);
	if (system(cmd) != 0) {
		free(dir);
		return -1;
	}
	*state = dir;
	return 0;
}

static int teardown_copy(void **state)
{
	fixture_rm_rf(*state);
	free(*state);
	return 0;
}

/* A unit started later inside a nested slice (an app in the user manager's app.slice) is
 * found at the next refresh: the slices descended into are watched too, not only the root. */
static void test_new_unit_in_nested_slice(void **state)
{
	static const char *const roots[] = { "/" CG "/user.slice" };
	const char *root = *state;
	struct pods *pods = open_host(root, roots, 1);
	struct pod **list;
	size_t n;

	list = pods_list(pods, &n);
	assert_int_equal(n, 4);
	assert_int_equal(pods_refresh(pods), 0);	/* nothing changed: in place */
	fixture_write(root, APP "/app-new-7.scope/memory.current", "%d\n", 64 << 20);
	fixture_write(root, APP "/app-new-7.scope/cgroup.procs", "%s", "");
	assert_int_equal(pods_refresh(pods), 0);
	list = pods_list(pods, &n);
	assert_int_equal(n, 5);
	assert_non_null(find(list, n, "app-new-7.scope"));
	pods_close(pods);
}

/* Ownership below the root (prefs.h pods_oomd_preference): the monitored cgroup is the
 * workload root at every depth. A root-owned unit's user.oomd_avoid counts; a unit of the
 * user's own manager (owned by uid 1000, below a root-owned user.slice) cannot omit itself
 * from a ranking against other users' and the system's units. */
static void test_oomd_ownership_below_root(void **state)
{
	static const char *const roots[] = { "/" CG "/system.slice", "/" CG "/user.slice" };
	const char *root = *state;
	char dir[PATH_MAX];
	struct pod **list;
	struct pods *pods;
	size_t n;

	snprintf(dir, sizeof(dir), "%s/%s/firefox.service", root, APP);
	if (setxattr(dir, PODS_XATTR_OOMD_OMIT, "1", 1, 0)) {
		print_message("user xattrs on %s: %s\n", dir, strerror(errno));
		skip();
	}
	if (geteuid() != 0) {
		print_message("not root: cannot chown a cgroup to another user\n");
		skip();
	}
	if (chown(dir, 1000, 1000))
		fail_msg("chown %s: %s", dir, strerror(errno));
	snprintf(dir, sizeof(dir), "%s/%s/system-getty.slice/getty@tty1.service", root, CG "/system.slice");
	if (setxattr(dir, PODS_XATTR_OOMD_AVOID, "1", 1, 0))
		fail_msg("setxattr %s: %s", dir, strerror(errno));
	pods = open_host(root, roots, 2);
	list = pods_list(pods, &n);
	assert_non_null(find(list, n, "getty@tty1.service"));
	assert_non_null(find(list, n, "firefox.service"));
	assert_int_equal(find(list, n, "getty@tty1.service")->preference, POD_PREF_AVOID);
	assert_int_equal(find(list, n, "firefox.service")->preference, POD_PREF_NONE);
	pods_close(pods);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_candidates_are_units),
		cmocka_unit_test(test_user_slice_root),
		cmocka_unit_test_setup_teardown(test_new_unit_in_nested_slice, setup_copy, teardown_copy),
		cmocka_unit_test_setup_teardown(test_oomd_ownership_below_root, setup_copy, teardown_copy),
	};

	log_set_level(LOGLEVEL_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
