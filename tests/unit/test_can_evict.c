// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* act/can_evict on fixture trees (tests/fixtures/can_evict: v1 only, hybrid, v2, v2 as nobody
 * without capabilities, v2 without the memory controller), a real read-only bind mount, the
 * pure evaluation and the tracker's kill-refusal memory. */
#include "testutil.h"

#include <sched.h>
#include <sys/mount.h>

#include "act/can_evict.h"
#include "sys/log.h"

#define CE_DIR FIXTURES_DIR "/can_evict"

struct fixture {
	char root[PATH_MAX - 256];
	char roots[2][PATH_MAX + 64];
	const char *root_ptrs[2];
	struct can_evict_input input;
};

/* The kill roots as policy gives them: both drivers' kubepods dirs, root-joined. */
static void fixture_input(struct fixture *f, const char *name, const char *mount_rel, bool need_memory)
{
	snprintf(f->root, sizeof(f->root), "%s/%s", CE_DIR, name);
	snprintf(f->roots[0], sizeof(f->roots[0]), "%s%s/kubepods.slice", f->root, mount_rel);
	snprintf(f->roots[1], sizeof(f->roots[1]), "%s%s/kubepods", f->root, mount_rel);
	f->root_ptrs[0] = f->roots[0];
	f->root_ptrs[1] = f->roots[1];
	f->input = (struct can_evict_input){
		.root = f->root,
		.kill_roots = f->root_ptrs,
		.n_kill_roots = 2,
		.need_memory = need_memory,
	};
}

static const struct can_evict_reason *find_reason(const struct can_evict_state *state, const char *key)
{
	for (size_t i = 0; i < state->n_reasons; i++)
		if (!strcmp(state->reasons[i].key, key))
			return &state->reasons[i];
	return NULL;
}

static void check_fixture(const char *name, const char *mount_rel, bool need_memory,
			  struct can_evict_state *state)
{
	struct can_evict_probe *probe = calloc(1, sizeof(*probe));
	struct fixture f;

	assert_non_null(probe);
	fixture_input(&f, name, mount_rel, need_memory);
	assert_int_equal(can_evict_probe_read(probe, &f.input), 0);
	can_evict_evaluate(probe, state);
	free(probe);
}

static void test_v1_only_cannot_evict(void **unused)
{
	struct can_evict_state state;
	const struct can_evict_reason *reason;

	check_fixture("v1", "/sys/fs/cgroup", true, &state);
	assert_false(state.can_evict);
	reason = find_reason(&state, "no_cgroup2");
	assert_non_null(reason);
	assert_true(reason->fatal);
	assert_non_null(strstr(reason->text, "cgroup v1 host"));
	assert_non_null(strstr(reason->text, "/sys/fs/cgroup/memory"));
}

static void test_hybrid_can_evict_degraded(void **unused)
{
	struct can_evict_state state;
	const struct can_evict_reason *reason;

	check_fixture("hybrid", "/sys/fs/cgroup/unified", true, &state);
	assert_true(state.can_evict);
	assert_null(find_reason(&state, "no_cgroup2"));
	reason = find_reason(&state, "no_memory_controller");
	assert_non_null(reason);
	assert_false(reason->fatal);
	assert_non_null(strstr(reason->text, "unified/kubepods.slice/cgroup.controllers"));
}

static void test_v2_root_can_evict(void **unused)
{
	struct can_evict_state state;

	check_fixture("v2", "/sys/fs/cgroup", true, &state);
	assert_true(state.can_evict);
	assert_int_equal(state.n_reasons, 0);
}

/* cgroup.kill is 0644 and owned by whoever checked the tree out; the fixture's process is
 * uid 65534 with no capabilities at all. */
static void test_v2_unwritable_cgroup_kill(void **unused)
{
	struct can_evict_state state;
	const struct can_evict_reason *reason;
	struct stat st;

	assert_int_equal(stat(CE_DIR "/v2-nobody/sys/fs/cgroup/kubepods.slice/cgroup.kill", &st), 0);
	if (st.st_uid == 65534 || (st.st_mode & S_IWOTH))
		skip();	/* the checkout itself belongs to nobody, or is world-writable */
	check_fixture("v2-nobody", "/sys/fs/cgroup", true, &state);
	assert_false(state.can_evict);
	reason = find_reason(&state, "cgroup_kill_not_writable");
	assert_non_null(reason);
	assert_true(reason->fatal);
	assert_non_null(strstr(reason->text, "kubepods.slice/cgroup.kill"));
	assert_non_null(strstr(reason->text, "uid 65534"));
	reason = find_reason(&state, "no_cap_kill");
	assert_non_null(reason);
	assert_false(reason->fatal);
}

static void test_v2_no_memory_controller(void **unused)
{
	struct can_evict_state state;

	check_fixture("v2-nomem", "/sys/fs/cgroup", true, &state);
	assert_true(state.can_evict);
	assert_non_null(find_reason(&state, "no_memory_controller"));
	/* Without a memory threshold nothing ranks by it: not worth a word. */
	check_fixture("v2-nomem", "/sys/fs/cgroup", false, &state);
	assert_true(state.can_evict);
	assert_int_equal(state.n_reasons, 0);
}

/* Root passes every permission check: only the mount's flag tells a read-only cgroupfs. */
static void test_read_only_pure(void **unused)
{
	struct can_evict_probe *probe = calloc(1, sizeof(*probe));
	struct can_evict_state state;

	assert_non_null(probe);
	snprintf(probe->mount, sizeof(probe->mount), "/sys/fs/cgroup");
	probe->cap_eff = ~0ull;
	probe->n_roots = 1;
	snprintf(probe->roots[0].path, sizeof(probe->roots[0].path), "/sys/fs/cgroup/kubepods.slice");
	probe->roots[0].kill_mode = 0644;
	probe->roots[0].read_only = true;
	probe->roots[0].access_err = -EROFS;
	can_evict_evaluate(probe, &state);
	assert_false(state.can_evict);
	assert_non_null(find_reason(&state, "cgroup_read_only"));
	assert_null(find_reason(&state, "cgroup_kill_not_writable"));
	free(probe);
}

/* A real read-only bind mount of the v2 fixture, in a mount namespace of this test's own. */
static void test_read_only_bind_mount(void **unused)
{
	char tmp[PATH_MAX], kill_root[PATH_MAX + 64];
	const char *roots[1] = { kill_root };
	struct can_evict_probe *probe;
	struct can_evict_state state;

	if (geteuid() != 0 || unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		print_message("# SKIP read-only bind mount: needs root and a mount namespace\n");
		skip();
	}
	fixture_tmpdir(tmp, "can_evict_ro");
	if (mount(CE_DIR "/v2", tmp, NULL, MS_BIND, NULL) ||
	    mount(NULL, tmp, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL)) {
		print_message("# SKIP read-only bind mount: %s\n", strerror(errno));
		umount2(tmp, MNT_DETACH);
		rmdir(tmp);
		skip();
	}
	snprintf(kill_root, sizeof(kill_root), "%s/sys/fs/cgroup/kubepods.slice", tmp);
	probe = calloc(1, sizeof(*probe));
	assert_non_null(probe);
	assert_int_equal(can_evict_probe_read(probe, &(struct can_evict_input){
		.root = tmp, .kill_roots = roots, .n_kill_roots = 1 }), 0);
	umount2(tmp, MNT_DETACH);
	rmdir(tmp);
	assert_true(probe->roots[0].read_only);
	can_evict_evaluate(probe, &state);
	free(probe);
	assert_false(state.can_evict);
	assert_non_null(find_reason(&state, "cgroup_read_only"));
}

/* A kill refused for lack of permission makes the state fatal until a kill works again; the
 * same state twice is one change, not two. */
static void test_tracker_kill_refusal(void **unused)
{
	struct can_evict_tracker *tracker = calloc(1, sizeof(*tracker));
	struct fixture f;

	assert_non_null(tracker);
	fixture_input(&f, "v2", "/sys/fs/cgroup", true);
	assert_true(can_evict_update(tracker, &f.input));	/* the first check always counts */
	assert_true(tracker->state.can_evict);
	assert_false(can_evict_update(tracker, &f.input));	/* unchanged: no log, no change */

	can_evict_note_kill_error(tracker, -ENOENT, "/x");	/* not a permission error */
	assert_false(tracker->recheck);
	can_evict_note_kill_error(tracker, -EACCES, "/sys/fs/cgroup/kubepods.slice/pod1");
	assert_true(tracker->recheck);
	assert_true(can_evict_update(tracker, &f.input));
	assert_false(tracker->recheck);
	assert_false(tracker->state.can_evict);
	assert_non_null(strstr(find_reason(&tracker->state, "kill_refused")->text, "pod1"));
	assert_false(can_evict_update(tracker, &f.input));

	can_evict_note_kill_error(tracker, 0, NULL);
	assert_true(tracker->recheck);
	assert_true(can_evict_update(tracker, &f.input));
	assert_true(tracker->state.can_evict);
	free(tracker);
}

static void test_summary(void **unused)
{
	struct can_evict_state state;
	char text[2048];

	check_fixture("v1", "/sys/fs/cgroup", true, &state);
	can_evict_summary(&state, text, sizeof(text));
	assert_non_null(strstr(text, "no cgroup v2 hierarchy"));
	assert_true(can_evict_is_permission_error(EROFS));
	assert_true(can_evict_is_permission_error(-EPERM));
	assert_false(can_evict_is_permission_error(-ESRCH));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v1_only_cannot_evict),
		cmocka_unit_test(test_hybrid_can_evict_degraded),
		cmocka_unit_test(test_v2_root_can_evict),
		cmocka_unit_test(test_v2_unwritable_cgroup_kill),
		cmocka_unit_test(test_v2_no_memory_controller),
		cmocka_unit_test(test_read_only_pure),
		cmocka_unit_test(test_read_only_bind_mount),
		cmocka_unit_test(test_tracker_kill_refusal),
		cmocka_unit_test(test_summary),
	};

	log_set_level(LOGLEVEL_ERR - 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
