// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Profiles (DESIGN.md "Profiles"): on a fixture root without a kubelet the host profile turns
 * the kubelet's default disk thresholds off for absent directories, gates memory on swap and
 * takes the machine's units as workloads; with /var/lib/kubelet, the kubelet's model stays. */
#include "testutil.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config/config.h"

static char root[PATH_MAX];

static void fixture_mkdirs_at(const char *base, const char *rel)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", base, rel);
	fixture_mkdirs(path);
}

static void rmdir_at(const char *rel)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(rmdir(path), 0);
}

static int setup(void **state)
{
	fixture_tmpdir(root, "profile");
	fixture_write(root, "sys/fs/cgroup/cgroup.controllers", "cpu memory pids\n");
	fixture_mkdirs_at(root, "sys/fs/cgroup/system.slice/ssh.service");
	fixture_mkdirs_at(root, "sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope");
	fixture_mkdirs_at(root, "sys/fs/cgroup/user.slice/user-0.slice/user@0.service");
	return 0;
}

static int teardown(void **state)
{
	fixture_rm_rf(root);
	return 0;
}

static int parse(struct evictd_config *config, const char *extra)
{
	char root_flag[PATH_MAX + 16];
	char *argv[4] = { "evictd", root_flag };
	int argc = 2, err;

	snprintf(root_flag, sizeof(root_flag), "--root=%s", root);
	if (extra)
		argv[argc++] = (char *)extra;
	config_init_defaults(config);
	err = config_parse_args(config, argc, argv);
	if (err)
		return err;
	return config_finalize(config);
}

static bool has(const struct evictd_config *config, enum ev_signal signal)
{
	for (size_t i = 0; i < config->n_thresholds; i++)
		if (config->thresholds[i].signal == signal)
			return true;
	return false;
}

static size_t count_guards(const struct evictd_config *config)
{
	struct threshold out[EV_MAX_THRESHOLDS];
	size_t n = config_effective_thresholds(config, FS_LAYOUT_SINGLE, out, EV_MAX_THRESHOLDS), guards = 0;

	for (size_t i = 0; i < n; i++)
		guards += signal_meta(out[i].signal)->swap_gate;
	return guards;
}

static char *printed(const struct evictd_config *config)
{
	static char buf[8192];
	FILE *out = fmemopen(buf, sizeof(buf), "w");

	config_print(config, out);
	fclose(out);
	return buf;
}

/* Today's bug: a host without a kubelet got nodefs.available<10% and imagefs.available<15%
 * on its own disks, and no workloads ("kubernetes mode ... no pods yet"). */
static void test_host_without_kubelet(void **state)
{
	static struct evictd_config config;

	assert_int_equal(parse(&config, NULL), 0);
	assert_int_equal(config.profile_effective, PROFILE_SERVER);
	assert_true(has(&config, EV_SIGNAL_MEMORY_AVAILABLE));
	assert_false(has(&config, EV_SIGNAL_NODEFS_AVAILABLE));
	assert_false(has(&config, EV_SIGNAL_NODEFS_INODES_FREE));
	assert_false(has(&config, EV_SIGNAL_IMAGEFS_AVAILABLE));
	assert_false(has(&config, EV_SIGNAL_IMAGEFS_INODES_FREE));
	assert_true(config.swap_guard.on);
	assert_true(config.swap_guard.value.percentage == 0.10f);
	assert_true(config.zram_guard.on);
	assert_int_equal(count_guards(&config), 2);
	/* system.slice, then each user's slice in name order. */
	assert_int_equal(config.workload_roots.n, 3);
	assert_string_equal(config.workload_roots.items[0], "/sys/fs/cgroup/system.slice");
	assert_string_equal(config.workload_roots.items[1], "/sys/fs/cgroup/user.slice/user-0.slice");
	assert_string_equal(config.workload_roots.items[2], "/sys/fs/cgroup/user.slice/user-1000.slice");
	assert_non_null(strstr(printed(&config), "profile server (auto: no kubelet"));
	assert_non_null(strstr(printed(&config), "swap-guard 10%\n"));
}

/* A configured disk threshold stays, and so does a default whose directory exists. */
static void test_host_keeps_what_exists_or_is_configured(void **state)
{
	static struct evictd_config config;

	fixture_mkdirs_at(root, "var/lib/containerd");
	assert_int_equal(parse(&config, "--swap-guard=off"), 0);
	assert_int_equal(config.profile_effective, PROFILE_SERVER);
	assert_true(has(&config, EV_SIGNAL_IMAGEFS_AVAILABLE));
	assert_false(has(&config, EV_SIGNAL_NODEFS_AVAILABLE));
	assert_false(config.swap_guard.on);
	assert_int_equal(count_guards(&config), 1);
	assert_int_equal(parse(&config, "--eviction-hard=nodefs.available<5%"), 0);
	assert_true(has(&config, EV_SIGNAL_NODEFS_AVAILABLE));
	rmdir_at("var/lib/containerd");
}

static void test_kubelet_dir_keeps_the_kubelet_model(void **state)
{
	static struct evictd_config config;

	fixture_mkdirs_at(root, "var/lib/kubelet");
	assert_int_equal(parse(&config, NULL), 0);
	assert_int_equal(config.profile_effective, PROFILE_KUBERNETES);
	assert_int_equal(config.n_thresholds, 5);
	assert_false(config.swap_guard.on);
	assert_int_equal(config.workload_roots.n, 0);
	assert_non_null(strstr(printed(&config), "profile kubernetes (auto: /var/lib/kubelet exists)"));
	/* --profile wins over the evidence. */
	assert_int_equal(parse(&config, "--profile=server"), 0);
	assert_int_equal(config.profile_effective, PROFILE_SERVER);
	assert_true(has(&config, EV_SIGNAL_NODEFS_AVAILABLE));	/* its directory exists */
	rmdir_at("var/lib/kubelet");
}

static void test_graphical_session_is_a_desktop(void **state)
{
	static struct evictd_config config;

	fixture_write(root, "run/systemd/sessions/2", "# This is private data.\nUID=1000\nTYPE=wayland\n"
		      "CLASS=user\n");
	assert_int_equal(parse(&config, NULL), 0);
	assert_int_equal(config.profile_effective, PROFILE_DESKTOP);
	/* systemd-oomd's defaults on a desktop: full avg10 above 60% for 30 s. */
	assert_true(config.memory_pressure.on);
	assert_int_equal(config.memory_pressure.kind, PRESSURE_FULL);
	assert_int_equal(config.memory_pressure.limit, 6000);
	assert_int_equal(config.memory_pressure.duration_ns, 30LL * 1000000000);
	assert_non_null(strstr(printed(&config), "memory-pressure full avg10>60.00% for 30s (node: victim by ranking; each workload: itself)\n"));
	fixture_write(root, "run/systemd/sessions/2", "UID=1000\nTYPE=tty\n");
	assert_int_equal(parse(&config, NULL), 0);
	assert_int_equal(config.profile_effective, PROFILE_SERVER);
	assert_false(config.memory_pressure.on);
}

static void test_bad_values(void **state)
{
	static struct evictd_config config;

	assert_int_equal(parse(&config, "--profile=laptop"), -EINVAL);
	assert_int_not_equal(parse(&config, "--swap-guard=0Mi"), 0);
	assert_int_not_equal(parse(&config, "--zram-guard=lots"), 0);
	assert_int_equal(parse(&config, "--zram-guard=256Mi"), 0);
	assert_int_equal(config.zram_guard.value.quantity, 256LL << 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_without_kubelet),
		cmocka_unit_test(test_host_keeps_what_exists_or_is_configured),
		cmocka_unit_test(test_kubelet_dir_keeps_the_kubelet_model),
		cmocka_unit_test(test_graphical_session_is_a_desktop),
		cmocka_unit_test(test_bad_values),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
