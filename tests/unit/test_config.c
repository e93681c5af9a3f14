// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Configuration rules of DESIGN.md §2 and §7 from flags and KubeletConfiguration YAML. */
#include "testutil.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "config/options.h"

#define S(x) ((int64_t)(x) * 1000000000LL)

static void fixture_mkdirs_under(const char *root, const char *rel)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fixture_mkdirs(path);
}

static int parse(struct evictd_config *config, const char *const *args)
{
	/* The kubelet's rules: pinned, so the host's own directories (profile.c auto) do not
	 * change them; test_profile.c covers the host profile. */
	char *argv[34] = { "evictd", "--profile=kubernetes" };
	int argc = 2, err;

	for (; args && args[argc - 2]; argc++)
		argv[argc] = (char *)args[argc - 2];
	config_init_defaults(config);
	err = config_parse_args(config, argc, argv);
	if (err)
		return err;
	return config_finalize(config);
}

static const struct threshold *find(const struct evictd_config *config, enum ev_signal signal, bool hard)
{
	for (size_t i = 0; i < config->n_thresholds; i++)
		if (config->thresholds[i].signal == signal && config->thresholds[i].hard == hard)
			return &config->thresholds[i];
	return NULL;
}

static char *printed(const struct evictd_config *config)
{
	static char buf[8192];
	FILE *out = fmemopen(buf, sizeof(buf), "w");

	config_print(config, out);
	fclose(out);
	return buf;
}

static void test_defaults_only_when_nothing_configured(void **state)
{
	static struct evictd_config config;
	char *text;

	assert_int_equal(parse(&config, NULL), 0);
	assert_true(config.using_default_thresholds);
	assert_int_equal(config.n_thresholds, 5);
	assert_int_equal(find(&config, EV_SIGNAL_MEMORY_AVAILABLE, true)->value.quantity, 100LL << 20);
	assert_true(find(&config, EV_SIGNAL_NODEFS_AVAILABLE, true)->value.percentage == 0.10f);
	assert_true(find(&config, EV_SIGNAL_IMAGEFS_AVAILABLE, true)->value.percentage == 0.15f);
	assert_true(find(&config, EV_SIGNAL_NODEFS_INODES_FREE, true)->value.percentage == 0.05f);
	assert_true(find(&config, EV_SIGNAL_IMAGEFS_INODES_FREE, true)->value.percentage == 0.05f);
	text = printed(&config);
	assert_non_null(strstr(text, "hard memory.available<100Mi\n"));
	assert_non_null(strstr(text, "hard nodefs.available<10%\n"));
	assert_non_null(strstr(text, "hard imagefs.available<15%\n"));
	assert_non_null(strstr(text, "hard nodefs.inodesFree<5%\n"));
	assert_non_null(strstr(text, "hard imagefs.inodesFree<5%\n"));
	assert_int_equal(config.pressure_transition_period_ns, S(300));
	assert_int_equal(config.housekeeping_interval_ns, S(10));
}

static void test_one_threshold_turns_every_default_off(void **state)
{
	static struct evictd_config config;
	const char *args[] = { "--eviction-hard=memory.available<500Mi", NULL };

	assert_int_equal(parse(&config, args), 0);
	assert_false(config.using_default_thresholds);
	assert_int_equal(config.n_thresholds, 1);
	assert_int_equal(config.thresholds[0].value.quantity, 500LL << 20);
	assert_true(config.thresholds[0].hard);
}

/* v1beta1 defaults.go: evictionHard is defaulted when it is not set at all, so a soft
 * threshold alone keeps the five default hard thresholds. */
static void test_a_soft_threshold_alone_keeps_the_defaults(void **state)
{
	static struct evictd_config config;
	const char *args[] = { "--eviction-soft=memory.available<1.5Gi",
			       "--eviction-soft-grace-period=memory.available=1m30s", NULL };
	const struct threshold *soft;

	assert_int_equal(parse(&config, args), 0);
	assert_true(config.using_default_thresholds);
	assert_int_equal(config.n_thresholds, 6);
	soft = find(&config, EV_SIGNAL_MEMORY_AVAILABLE, false);
	assert_non_null(soft);
	assert_int_equal(soft->grace_period_ns, S(90));
	assert_int_equal(soft->value.quantity, 1610612736LL);
	assert_int_equal(find(&config, EV_SIGNAL_MEMORY_AVAILABLE, true)->value.quantity, 100LL << 20);
	assert_true(find(&config, EV_SIGNAL_IMAGEFS_INODES_FREE, true)->value.percentage == 0.05f);
	assert_non_null(strstr(printed(&config), "soft memory.available<1.5Gi grace=1m30s\n"));
	assert_non_null(strstr(printed(&config), "source hard nodefs.available: default\n"));
}

static void test_soft_without_grace_is_an_error(void **state)
{
	static struct evictd_config config;
	const char *args[] = { "--eviction-soft=memory.available<1Gi", NULL };
	const char *other_signal[] = { "--eviction-soft=memory.available<1Gi",
				       "--eviction-soft-grace-period=nodefs.available=1m", NULL };

	assert_int_equal(parse(&config, args), -EINVAL);
	assert_int_equal(parse(&config, other_signal), -EINVAL);
}

static void test_flag_list_and_min_reclaim(void **state)
{
	static struct evictd_config config;
	const char *args[] = { "--eviction-hard=memory.available<500Mi, nodefs.available<1Gi,pid.available<5%",
			       "--eviction-minimum-reclaim=nodefs.available=500Mi,memory.available=0Mi",
			       "--eviction-max-pod-grace-period=30",
			       "--eviction-pressure-transition-period=1m",
			       "--housekeeping-interval=2s", NULL };
	const struct threshold *nodefs;

	assert_int_equal(parse(&config, args), 0);
	assert_int_equal(config.n_thresholds, 3);
	nodefs = find(&config, EV_SIGNAL_NODEFS_AVAILABLE, true);
	assert_non_null(nodefs);
	assert_int_equal(nodefs->value.quantity, 1LL << 30);
	assert_int_equal(nodefs->min_reclaim.quantity, 500LL << 20);
	assert_true(find(&config, EV_SIGNAL_PID_AVAILABLE, true)->value.is_percentage);
	assert_int_equal(config.max_pod_grace_period_s, 30);
	assert_int_equal(config.pressure_transition_period_ns, S(60));
	assert_int_equal(config.housekeeping_interval_ns, S(2));
	assert_non_null(strstr(printed(&config), "min-reclaim nodefs.available=500Mi\n"));
}

static void test_bad_values_are_errors(void **state)
{
	static struct evictd_config config;
	static const char *const bad[] = {
		"--eviction-hard=memory.avail<1Gi",		/* unknown signal */
		"--eviction-hard=memory.available<lots",	/* not a quantity */
		"--eviction-hard=memory.available<150%",	/* above 100% */
		"--eviction-hard=memory.available<-1Gi",	/* negative */
		"--eviction-hard=memory.available=1Gi",		/* wrong operator */
		"--eviction-minimum-reclaim=memory.available=-5Mi",
		"--eviction-max-pod-grace-period=-1",
		"--eviction-max-pod-grace-period=ten",
		"--eviction-pressure-transition-period=5 minutes",
		"--housekeeping-interval=0s",
		"--output=xml",
		"--dry-run=maybe",
		"--oom-guard=lots",
		"--no-such-flag",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *args[] = { bad[i], NULL };

		if (parse(&config, args) != -EINVAL)
			fail_msg("accepted %s", bad[i]);
	}
}

/* helpers.go parseThresholdStatement: a quantity threshold must be positive ("eviction
 * threshold %v must be positive"); only "0%" and "100%" switch a threshold off. */
static void test_zero_quantity_threshold_is_an_error(void **state)
{
	static struct evictd_config config;
	static const char *const zero[] = {
		"--eviction-hard=memory.available<0",
		"--eviction-hard=memory.available<0Mi",
		"--eviction-hard=nodefs.available<0.0Gi",
		"--eviction-hard=pid.available<-0",
		"--oom-guard=0Mi",
	};
	static const char zero_yaml[] =
		"kind: KubeletConfiguration\nevictionSoft: {memory.available: \"0Ki\"}\n"
		"evictionSoftGracePeriod: {memory.available: 1m}\n";
	const char *smallest[] = { "--eviction-hard=memory.available<1m", NULL };

	for (size_t i = 0; i < sizeof(zero) / sizeof(zero[0]); i++) {
		const char *args[] = { zero[i], NULL };

		if (parse(&config, args) != -EINVAL)
			fail_msg("accepted %s", zero[i]);
	}
	config_init_defaults(&config);
	assert_int_equal(config_load_yaml(&config, zero_yaml, strlen(zero_yaml), "zero.yaml"), 0);
	assert_int_equal(config_finalize(&config), -EINVAL);
	/* 1m (a thousandth) is positive: Value() rounds it up to 1. */
	assert_int_equal(parse(&config, smallest), 0);
	assert_int_equal(config.thresholds[0].value.quantity, 1);
}

/* Every duration and seconds option has a range (options.c option_ranges, --help, evictd.8):
 * a 1 ns housekeeping interval spins a core; a duration near INT64_MAX ns overflows when
 * added to a clock reading. The bounds themselves are accepted. */
static void test_duration_ranges(void **state)
{
	static struct evictd_config config;
	static const char *const bad[] = {
		"--housekeeping-interval=1ns",
		"--housekeeping-interval=99ms",
		"--housekeeping-interval=24h0m0.001s",
		"--kill-timeout=2562047h",
		"--kill-timeout=0",
		"--kube-pods-refresh=1ns",
		"--eviction-pressure-transition-period=25h",
		"--eviction-max-pod-grace-period=86401",
		"--shutdown-grace-period=500ms",	/* the kubelet: zero or at least 1s */
		"--shutdown-grace-period=25h",
		"--shutdown-grace-period-by-pod-priority=0=86401",
		"--act-ahead=50ms",	/* seeing ahead: under the 100 ms spacing of its points */
		"--act-ahead=61s",	/* beyond what a 10 s window says */
		"--warn-ahead=1h1s",
	};
	static const char *const good[] = {
		"--housekeeping-interval=100ms",
		"--housekeeping-interval=24h",
		"--kill-timeout=100ms",
		"--kube-pods-refresh=1s",
		"--eviction-pressure-transition-period=0s",
		"--eviction-max-pod-grace-period=86400",
		"--shutdown-grace-period=0",
		"--shutdown-grace-period=24h",
		"--shutdown-grace-period-by-pod-priority=0=86400",
		"--act-ahead=0",
		"--act-ahead=100ms",
		"--act-ahead=1m",
		"--warn-ahead=1h",
	};
	const char *soft_bad[] = { "--eviction-soft=memory.available<1Gi",
				   "--eviction-soft-grace-period=memory.available=24h1s", NULL };
	const char *soft_good[] = { "--eviction-soft=memory.available<1Gi",
				    "--eviction-soft-grace-period=memory.available=24h", NULL };
	static const char yaml[] = "kind: EvictdConfiguration\nkillTimeout: 1ns\n";

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *args[] = { bad[i], NULL };

		if (parse(&config, args) != -EINVAL)
			fail_msg("accepted %s", bad[i]);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		const char *args[] = { good[i], NULL };

		if (parse(&config, args) != 0)
			fail_msg("refused %s", good[i]);
	}
	assert_int_equal(parse(&config, soft_bad), -EINVAL);
	assert_int_equal(parse(&config, soft_good), 0);
	assert_int_equal(find(&config, EV_SIGNAL_MEMORY_AVAILABLE, false)->grace_period_ns, S(86400));
	config_init_defaults(&config);
	assert_int_equal(config_load_yaml(&config, yaml, strlen(yaml), "range.yaml"), -EINVAL);
	assert_int_equal(config.kill_timeout_ns, S(10));
	/* A configuration built in code is held to the same ranges by config_finalize. */
	config_init_defaults(&config);
	config.housekeeping_interval_ns = 1;
	assert_int_equal(config_finalize(&config), -EINVAL);
	config_init_defaults(&config);
	config.kill_timeout_ns = INT64_MAX;
	assert_int_equal(config_finalize(&config), -EINVAL);
}

static void test_zero_and_hundred_percent_disable(void **state)
{
	static struct evictd_config config;
	const char *args[] = { "--eviction-hard=memory.available<0%,nodefs.available<100%,pid.available<1000", NULL };

	assert_int_equal(parse(&config, args), 0);
	assert_int_equal(config.n_thresholds, 1);
	assert_int_equal(config.thresholds[0].signal, EV_SIGNAL_PID_AVAILABLE);
}

static const char kubelet_yaml[] =
	"apiVersion: kubelet.config.k8s.io/v1beta1\n"
	"kind: KubeletConfiguration\n"
	"address: 0.0.0.0\n"
	"authentication:\n  anonymous:\n    enabled: false\n"
	"evictionHard:\n"
	"  memory.available: \"500Mi\"\n"
	"  nodefs.available: \"1Gi\"\n"
	"  imagefs.available: \"100Gi\"\n"
	"evictionSoft:\n  memory.available: 1.5Gi\n"
	"evictionSoftGracePeriod:\n  memory.available: 1m30s\n"
	"evictionMinimumReclaim:\n"
	"  memory.available: \"0Mi\"\n"
	"  nodefs.available: \"500Mi\"\n"
	"  imagefs.available: \"2Gi\"\n"
	"evictionMaxPodGracePeriod: 60\n"
	"evictionPressureTransitionPeriod: 30s\n"
	"shutdownGracePeriod: 30s\n"
	"shutdownGracePeriodCriticalPods: 10s\n"
	"featureGates:\n  GracefulNodeShutdown: true\n";

static void test_kubelet_configuration_yaml(void **state)
{
	static struct evictd_config config;

	config_init_defaults(&config);
	assert_int_equal(config_load_yaml(&config, kubelet_yaml, strlen(kubelet_yaml), "kubelet.yaml"), 0);
	assert_int_equal(config_finalize(&config), 0);
	assert_int_equal(config.n_thresholds, 4);
	assert_int_equal(find(&config, EV_SIGNAL_MEMORY_AVAILABLE, true)->value.quantity, 500LL << 20);
	assert_int_equal(find(&config, EV_SIGNAL_IMAGEFS_AVAILABLE, true)->min_reclaim.quantity, 2LL << 30);
	assert_int_equal(find(&config, EV_SIGNAL_MEMORY_AVAILABLE, false)->grace_period_ns, S(90));
	assert_int_equal(config.max_pod_grace_period_s, 60);
	assert_int_equal(config.pressure_transition_period_ns, S(30));
	assert_int_equal(config.shutdown_grace_period_ns, S(30));
	assert_int_equal(config.shutdown_grace_period_critical_pods_ns, S(10));
}

static void test_flags_override_the_file(void **state)
{
	static struct evictd_config config;
	char dir[PATH_MAX], path[PATH_MAX + 16];
	const char *args[] = { "--eviction-hard=memory.available<1Gi", "--config", path,
			       "--eviction-max-pod-grace-period=5", NULL };

	fixture_tmpdir(dir, "config");
	fixture_write(dir, "kubelet.yaml", "%s", kubelet_yaml);
	snprintf(path, sizeof(path), "%s/kubelet.yaml", dir);
	assert_int_equal(parse(&config, args), 0);
	/* The flag replaces evictionHard as a whole; evictionSoft still comes from the file. */
	assert_int_equal(find(&config, EV_SIGNAL_MEMORY_AVAILABLE, true)->value.quantity, 1LL << 30);
	assert_null(find(&config, EV_SIGNAL_NODEFS_AVAILABLE, true));
	assert_non_null(find(&config, EV_SIGNAL_MEMORY_AVAILABLE, false));
	assert_int_equal(config.max_pod_grace_period_s, 5);
	fixture_rm_rf(dir);
}

static void test_missing_file_is_an_error(void **state)
{
	static struct evictd_config config;
	const char *args[] = { "--config=/nonexistent/evictd.yaml", NULL };

	assert_int_equal(parse(&config, args), -EINVAL);
}

/* A FIFO as the configuration file: refused at once as not a regular file (it used to be
 * read as an empty file, or to wait for a writer), and so is a directory. */
static void test_config_file_must_be_a_regular_file(void **state)
{
	static struct evictd_config config;
	char dir[PATH_MAX], fifo[PATH_MAX + 16], arg[PATH_MAX + 32];
	const char *args[] = { arg, NULL };

	fixture_tmpdir(dir, "config-fifo");
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	snprintf(arg, sizeof(arg), "--config=%s", fifo);
	assert_int_equal(parse(&config, args), -EINVAL);
	config_init_defaults(&config);
	assert_int_not_equal(config_load_file(&config, fifo), 0);
	assert_int_not_equal(config_load_file(&config, dir), 0);
	unlink(fifo);
	rmdir(dir);
}

static char *nested_yaml(size_t levels)
{
	const char *head = "kind: KubeletConfiguration\nx: ";
	size_t len = strlen(head);
	char *yaml = malloc(len + 2 * levels + 2);

	assert_non_null(yaml);
	memcpy(yaml, head, len);
	memset(yaml + len, '[', levels);
	memset(yaml + len + levels, ']', levels);
	strcpy(yaml + len + 2 * levels, "\n");
	return yaml;
}

/* Finding: 100,000 levels of nesting took 17 s to parse (quadratic in libyaml). The top map
 * is level 1: 31 lists inside it are accepted, 32 are refused, and 100,000 are refused at
 * once. */
static void test_yaml_nesting_is_bounded(void **state)
{
	static struct evictd_config config;
	struct timespec start, end;
	char *yaml;
	double seconds;

	yaml = nested_yaml(31);
	config_init_defaults(&config);
	assert_int_equal(config_load_yaml(&config, yaml, strlen(yaml), "deep.yaml"), 0);
	free(yaml);
	yaml = nested_yaml(32);
	config_init_defaults(&config);
	assert_int_equal(config_load_yaml(&config, yaml, strlen(yaml), "deep.yaml"), -EINVAL);
	free(yaml);
	yaml = nested_yaml(100000);
	config_init_defaults(&config);
	clock_gettime(CLOCK_MONOTONIC, &start);
	assert_int_equal(config_load_yaml(&config, yaml, strlen(yaml), "deep.yaml"), -EINVAL);
	clock_gettime(CLOCK_MONOTONIC, &end);
	seconds = (double)(end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9;
	if (seconds > 1.0)
		fail_msg("100,000 levels took %.1f s to refuse", seconds);
	free(yaml);
}

/* A key given twice in one map: an error in EvictdConfiguration; in a KubeletConfiguration a
 * warning and the last value, as the kubelet's lenient v1beta1 decoding. */
static void test_repeated_keys(void **state)
{
	static struct evictd_config config;
	static const char evictd_twice[] =
		"kind: EvictdConfiguration\ndryRun: true\nkillTimeout: 5s\ndryRun: false\n";
	static const char kubelet_twice[] =
		"kind: KubeletConfiguration\nhousekeepingInterval: 5s\nhousekeepingInterval: 7s\n";

	config_init_defaults(&config);
	assert_int_equal(config_load_yaml(&config, evictd_twice, strlen(evictd_twice), "twice.yaml"),
			 -EINVAL);
	config_init_defaults(&config);
	assert_int_equal(config_load_yaml(&config, kubelet_twice, strlen(kubelet_twice), "twice.yaml"), 0);
	assert_int_equal(config.housekeeping_interval_ns, S(7));
}

/* stderr (where log lines go, one write(2) each) into a memfd, and back. */
static int stderr_capture_begin(int *saved)
{
	int fd = memfd_create("stderr", MFD_CLOEXEC);

	assert_true(fd >= 0);
	*saved = dup(STDERR_FILENO);
	assert_true(*saved >= 0);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	return fd;
}

static void stderr_capture_end(int fd, int saved, char *buf, size_t len)
{
	ssize_t n;

	dup2(saved, STDERR_FILENO);
	close(saved);
	n = pread(fd, buf, len - 1, 0);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	fputs(buf, stderr);
}

/* A signal given twice inside evictionHard (or any map of signals): the last value, as the
 * kubelet's lenient decoding takes it, and a warning naming the file, the map, the key and
 * both values (DESIGN.md, "Hostile input"), never a silent pick. */
static void test_repeated_keys_in_maps(void **state)
{
	static struct evictd_config config;
	static const char yaml[] =
		"kind: KubeletConfiguration\n"
		"evictionHard:\n  memory.available: 100Mi\n  nodefs.available: 10%\n"
		"  memory.available: 200Mi\n"
		"evictionSoft:\n  memory.available: 300Mi\n"
		"evictionSoftGracePeriod:\n  memory.available: 1m\n  memory.available: 2m\n";
	char log[4096];
	int fd, saved;

	config_init_defaults(&config);
	fd = stderr_capture_begin(&saved);
	assert_int_equal(config_load_yaml(&config, yaml, strlen(yaml), "twice.yaml"), 0);
	stderr_capture_end(fd, saved, log, sizeof(log));
	assert_non_null(strstr(log, "warning: twice.yaml: evictionHard: key \"memory.available\" "
				    "given twice in one map (\"100Mi\", then \"200Mi\")"));
	assert_non_null(strstr(log, "warning: twice.yaml: evictionSoftGracePeriod: key "
				    "\"memory.available\" given twice in one map (\"1m\", then \"2m\")"));
	assert_string_equal(config.eviction_hard.text[EV_SIGNAL_MEMORY_AVAILABLE], "200Mi");
	assert_string_equal(config.eviction_hard.text[EV_SIGNAL_NODEFS_AVAILABLE], "10%");
}

/* A list where each entry must be one value: a nested list is an error (naming the key,
 * checked by tests/cli/test_hostile_config.sh), and sets nothing. */
static void test_list_entries_are_single_values(void **state)
{
	static struct evictd_config config;
	static const char nested[] = "kind: EvictdConfiguration\nreclaimCommands: [[a]]\n";

	config_init_defaults(&config);
	assert_int_equal(config_load_yaml(&config, nested, strlen(nested), "list.yaml"), -EINVAL);
	assert_int_equal(config.reclaim_commands.n, 0);
}

static void test_evictd_document_and_bad_yaml(void **state)
{
	static struct evictd_config config;
	static const char both[] =
		"kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\n"
		"evictionHard: {memory.available: 200Mi}\n"
		"---\n"
		"kind: EvictdConfiguration\napiVersion: evictd.io/v1alpha1\n"
		"dryRun: true\nkubeletRootDir: /srv/kubelet\noomGuard: 5%\noomGuardMax: 512Mi\n"
		"workloadRoots: [/sys/fs/cgroup/a.slice, /sys/fs/cgroup/b.slice]\n";
	static const char *const bad[] = {
		"kind: EvictdConfiguration\ndryRn: true\n",		/* typo in our own file */
		"kind: Pod\n",						/* wrong kind */
		"kind: KubeletConfiguration\nevictionHard: [a, b]\n",	/* list, not map */
		"kind: KubeletConfiguration\nevictionHard:\n  memory.available: \"1Gi\n",	/* syntax */
		"kind: KubeletConfiguration\nevictionHard: {disk.available: 1Gi}\n",
		"- just\n- a list\n",
		"kind: KubeletConfiguration\nshutdownGracePeriodByPodPriority:\n  - priority: 10\n",
	};

	char root[PATH_MAX];

	/* The workload roots must exist: a fixture tree under --root stands in for cgroupfs. */
	fixture_tmpdir(root, "config-both");
	fixture_mkdirs_under(root, "sys/fs/cgroup/a.slice");
	fixture_mkdirs_under(root, "sys/fs/cgroup/b.slice");
	config_init_defaults(&config);
	assert_int_equal(config_load_yaml(&config, both, strlen(both), "both.yaml"), 0);
	snprintf(config.root, sizeof(config.root), "%s", root);
	assert_int_equal(config_finalize(&config), 0);
	fixture_rm_rf(root);
	assert_true(config.dry_run);
	assert_string_equal(config.kubelet_dir, "/srv/kubelet");
	assert_true(config.oom_guard_value.percentage == 0.05f);
	assert_int_equal(config.oom_guard_value.max_quantity, 512LL << 20);
	assert_int_equal(config.workload_roots.n, 2);
	assert_string_equal(config.workload_roots.items[1], "/sys/fs/cgroup/b.slice");
	assert_int_equal(config.n_thresholds, 1);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		config_init_defaults(&config);
		if (config_load_yaml(&config, bad[i], strlen(bad[i]), "bad.yaml") != -EINVAL)
			fail_msg("accepted: %s", bad[i]);
	}
}

/* --workload-root: a root that is not a real cgroup directory made a daemon that never kills.
 * Now: absolute, canonical, existing, no symlink in any component, a directory, and on the
 * host on cgroup2; a trailing slash is only normalised. Under a fixture --root every check
 * but the filesystem type applies. */
static void test_workload_root_checks(void **state)
{
	static struct evictd_config config;
	static const char *const bad[] = {
		"relative/workloads", "workloads", "/", "//", "/workloads/../workloads",
		"/./workloads", "/a//workloads", "/missing", "/workloads/missing", "/link",
		"/linkdir/workloads", "/file", "/file/x",
	};
	char root[PATH_MAX], path[PATH_MAX * 2];

	fixture_tmpdir(root, "config-wroot");
	fixture_mkdirs_under(root, "workloads");
	fixture_mkdirs_under(root, "a/workloads");
	fixture_write(root, "file", "x\n");
	snprintf(path, sizeof(path), "%s/link", root);
	assert_int_equal(symlink("workloads", path), 0);
	snprintf(path, sizeof(path), "%s/linkdir", root);
	assert_int_equal(symlink("a", path), 0);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		config_init_defaults(&config);
		snprintf(config.root, sizeof(config.root), "%s", root);
		assert_int_equal(config_apply_flag(&config, "workload-root", bad[i]), 0);
		if (config_finalize(&config) != -EINVAL)
			fail_msg("accepted --workload-root=%s", bad[i]);
	}
	/* Good, and a trailing slash normalised. */
	config_init_defaults(&config);
	snprintf(config.root, sizeof(config.root), "%s", root);
	assert_int_equal(config_apply_flag(&config, "workload-root", "/workloads"), 0);
	assert_int_equal(config_apply_flag(&config, "workload-root", "/a/workloads//"), 0);
	assert_int_equal(config_finalize(&config), 0);
	assert_string_equal(config.workload_roots.items[0], "/workloads");
	assert_string_equal(config.workload_roots.items[1], "/a/workloads");

	/* On the host, a directory that is not on cgroup2 is refused. */
	config_init_defaults(&config);
	snprintf(path, sizeof(path), "%s/workloads", root);
	assert_int_equal(config_apply_flag(&config, "workload-root", path), 0);
	assert_int_equal(config_finalize(&config), -EINVAL);
	fixture_rm_rf(root);
}

static void test_containerfs_is_derived_not_configured(void **state)
{
	static struct evictd_config config;
	const char *args[] = { "--eviction-hard=nodefs.available<10%,imagefs.available<15%,"
			       "nodefs.inodesFree<5%,imagefs.inodesFree<7%,containerfs.available<50%", NULL };
	struct threshold effective[EV_MAX_THRESHOLDS];
	size_t n;

	assert_int_equal(parse(&config, args), 0);
	config.oom_guard = false;
	/* The custom containerfs value is ignored. */
	assert_int_equal(config.n_thresholds, 4);
	assert_null(find(&config, EV_SIGNAL_CONTAINERFS_AVAILABLE, true));

	/* One filesystem, or images split from containers: containerfs follows nodefs. */
	for (int layout = FS_LAYOUT_SINGLE; layout <= FS_LAYOUT_SPLIT_IMAGE; layout++) {
		const struct threshold *bytes = NULL, *inodes = NULL;

		n = config_effective_thresholds(&config, layout, effective, EV_MAX_THRESHOLDS);
		assert_int_equal(n, 6);
		for (size_t i = 0; i < n; i++) {
			if (effective[i].signal == EV_SIGNAL_CONTAINERFS_AVAILABLE)
				bytes = &effective[i];
			if (effective[i].signal == EV_SIGNAL_CONTAINERFS_INODES_FREE)
				inodes = &effective[i];
		}
		assert_non_null(bytes);
		assert_non_null(inodes);
		assert_true(bytes->derived);
		if (layout == FS_LAYOUT_SPLIT_DISK) {
			/* images and containers share imagefs: containerfs follows imagefs */
			assert_true(bytes->value.percentage == 0.15f);
			assert_true(inodes->value.percentage == 0.07f);
		} else {
			assert_true(bytes->value.percentage == 0.10f);
			assert_true(inodes->value.percentage == 0.05f);
		}
	}

	/* The guard is appended when enabled. */
	config.oom_guard = true;
	n = config_effective_thresholds(&config, FS_LAYOUT_SINGLE, effective, EV_MAX_THRESHOLDS);
	assert_int_equal(n, 7);
	assert_int_equal(effective[6].signal, EV_SIGNAL_OOM_GUARD);
	assert_true(effective[6].hard);
}

static void test_shutdown_rules(void **state)
{
	static struct evictd_config config;
	const char *ok[] = { "--shutdown-grace-period-by-pod-priority=100000=10,0=30,10000=180,1000=120", NULL };
	static const char *const bad[][3] = {
		{ "--shutdown-grace-period=10s", "--shutdown-grace-period-critical-pods=10s", NULL },
		{ "--shutdown-grace-period=10s", "--shutdown-grace-period-critical-pods=20s", NULL },
		{ "--shutdown-grace-period=-10s", NULL, NULL },
		{ "--shutdown-grace-period=30s", "--shutdown-grace-period-by-pod-priority=0=10", NULL },
		{ "--shutdown-grace-period-by-pod-priority=0=10,0=20", NULL, NULL },
		{ "--shutdown-grace-period-by-pod-priority=0=-1", NULL, NULL },
		{ "--shutdown-grace-period-by-pod-priority=high=10", NULL, NULL },
	};
	const char *valid[] = { "--shutdown-grace-period=30s", "--shutdown-grace-period-critical-pods=10s", NULL };

	assert_int_equal(parse(&config, valid), 0);
	assert_int_equal(parse(&config, ok), 0);
	assert_int_equal(config.n_shutdown_groups, 4);
	/* Kept lowest priority first: the order groups are shut down in. */
	assert_int_equal(config.shutdown_groups[0].priority, 0);
	assert_int_equal(config.shutdown_groups[0].grace_period_s, 30);
	assert_int_equal(config.shutdown_groups[3].priority, 100000);
	assert_int_equal(config.shutdown_groups[3].grace_period_s, 10);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (parse(&config, (const char *const *)bad[i]) != -EINVAL)
			fail_msg("accepted %s %s", bad[i][0], bad[i][1] ? bad[i][1] : "");
}

static void test_shutdown_by_priority_yaml(void **state)
{
	static struct evictd_config config;
	static const char yaml[] =
		"kind: KubeletConfiguration\n"
		"shutdownGracePeriodByPodPriority:\n"
		"  - priority: 100000\n    shutdownGracePeriodSeconds: 10\n"
		"  - priority: 10000\n    shutdownGracePeriodSeconds: 180\n"
		"  - priority: 1000\n    shutdownGracePeriodSeconds: 120\n"
		"  - priority: 0\n    shutdownGracePeriodSeconds: 60\n";

	config_init_defaults(&config);
	assert_int_equal(config_load_yaml(&config, yaml, strlen(yaml), "p.yaml"), 0);
	assert_int_equal(config_finalize(&config), 0);
	assert_int_equal(config.n_shutdown_groups, 4);
	assert_int_equal(config.shutdown_groups[1].priority, 1000);
	assert_int_equal(config.shutdown_groups[1].grace_period_s, 120);
}

static void test_oom_guard_options(void **state)
{
	static struct evictd_config config;
	const char *off[] = { "--oom-guard=off", NULL };
	const char *set[] = { "--oom-guard=200Mi", NULL };

	assert_int_equal(parse(&config, NULL), 0);
	assert_true(config.oom_guard);
	assert_true(config.oom_guard_value.percentage == 0.10f);
	assert_int_equal(config.oom_guard_value.max_quantity, 1LL << 30);
	assert_non_null(strstr(printed(&config), "oom-guard MemAvailable<10% max=1Gi\n"));
	assert_int_equal(parse(&config, off), 0);
	assert_false(config.oom_guard);
	assert_int_equal(parse(&config, set), 0);
	assert_int_equal(config.oom_guard_value.quantity, 200LL << 20);
}

/* The decision log's bound: 10Mi and 3 files by default, a quantity and a count from flags or
 * EvictdConfiguration, out-of-range values refused. */
static void test_event_log_bounds(void **state)
{
	static struct evictd_config config;
	const char *set[] = { "--event-log-max-size=64Ki", "--event-log-max-files=0", NULL };
	const char *no_cap[] = { "--event-log-max-size=0", NULL };
	const char *tiny[] = { "--event-log-max-size=100", NULL };
	const char *many[] = { "--event-log-max-files=101", NULL };
	const char *words[] = { "--event-log-max-files=three", NULL };
	const char *yaml = "kind: EvictdConfiguration\neventLogMaxSize: 1Mi\neventLogMaxFiles: 7\n";

	assert_int_equal(parse(&config, NULL), 0);
	assert_int_equal(config.event_log_max_size, 10LL << 20);
	assert_int_equal(config.event_log_max_files, 3);
	assert_int_equal(parse(&config, set), 0);
	assert_int_equal(config.event_log_max_size, 64LL << 10);
	assert_int_equal(config.event_log_max_files, 0);
	assert_int_equal(parse(&config, no_cap), 0);
	assert_int_equal(config.event_log_max_size, 0);
	assert_int_equal(parse(&config, tiny), -EINVAL);
	assert_int_equal(parse(&config, many), -EINVAL);
	assert_int_equal(parse(&config, words), -EINVAL);
	config_init_defaults(&config);
	assert_int_equal(config_load_yaml(&config, yaml, strlen(yaml), "bounds.yaml"), 0);
	assert_int_equal(config.event_log_max_size, 1LL << 20);
	assert_int_equal(config.event_log_max_files, 7);
}

/* ---- string limits: every char-array option refuses what does not fit ---- */

struct string_option {
	const char *flag, *yaml_key;	/* evictd YAML key */
	size_t offset, size;		/* independent of the option table on purpose */
};

#define STRING_OPTION(flag, key, member) \
	{ flag, key, offsetof(struct evictd_config, member), sizeof(((struct evictd_config *)0)->member) }

static const struct string_option string_options[] = {
	STRING_OPTION("root", "root", root),
	STRING_OPTION("root-dir", "kubeletRootDir", kubelet_dir),
	STRING_OPTION("imagefs-dir", "imagefsDir", imagefs_dir),
	STRING_OPTION("containerfs-dir", "containerfsDir", containerfs_dir),
	STRING_OPTION("bpf-pin-dir", "bpfPinDir", bpf_pin_dir),
	STRING_OPTION("state-dir", "stateDir", state_dir),
	STRING_OPTION("logind-dropin-dir", "logindDropinDir", logind_dropin_dir),
	STRING_OPTION("pods-file", "podsFile", pods_file),
	STRING_OPTION("cgroup-root", "cgroupRoot", kubelet_cgroup_root),
	STRING_OPTION("kube-api", "kubeAPI", kube_api),
	STRING_OPTION("kube-api-server", "kubeAPIServer", kube_api_server),
	STRING_OPTION("kube-token-file", "kubeTokenFile", kube_token_file),
	STRING_OPTION("kube-ca-file", "kubeCAFile", kube_ca_file),
	STRING_OPTION("kube-pods-client-cert", "kubePodsClientCert", kube_pods_client_cert),
	STRING_OPTION("metrics-address", "metricsAddress", metrics_address),
	STRING_OPTION("event-log", "eventLog", event_log),
	STRING_OPTION("control-socket", "controlSocket", control_socket),
	/* The node name fits its 256-byte field up to 255, but Kubernetes stops at 253. */
	{ "node-name", "nodeName", offsetof(struct evictd_config, node_name), 254 },
};

static char *repeat(char c, size_t n)
{
	char *text = malloc(n + 1);

	assert_non_null(text);
	memset(text, c, n);
	text[n] = '\0';
	return text;
}

/* Apply value through the flag and the YAML key; expect err and that nothing outside
 * [offset, offset + size) changed. */
static void check_string_option(const struct string_option *option, const char *value, int err)
{
	struct evictd_config *config = malloc(sizeof(*config)), *before = malloc(sizeof(*config));
	size_t yaml_len = strlen(value) + 128;
	char *yaml = malloc(yaml_len);
	int got;

	assert_non_null(config);
	assert_non_null(before);
	assert_non_null(yaml);
	for (int source = 0; source < 2; source++) {
		config_init_defaults(config);
		memcpy(before, config, sizeof(*config));
		if (source == 0) {
			got = config_apply_flag(config, option->flag, value);
		} else {
			snprintf(yaml, yaml_len, "kind: EvictdConfiguration\n%s: \"%s\"\n",
				 option->yaml_key, value);
			got = config_load_yaml(config, yaml, strlen(yaml), "limits.yaml");
		}
		if ((got == 0) != (err == 0))
			fail_msg("%s%s with %zu bytes: got %d, expected %d", source ? "" : "--",
				 source ? option->yaml_key : option->flag, strlen(value), got, err);
		if (err) {
			assert_memory_equal(config, before, sizeof(*config));
			continue;
		}
		assert_string_equal((char *)config + option->offset, value);
		/* Where the value came from is recorded (--validate); nothing else changes. */
		assert_true(config->sources[option_by_flag(option->flag) - config_options][0]);
		memcpy(config->sources, before->sources, sizeof(config->sources));
		assert_memory_equal(config, before, option->offset);
		assert_memory_equal((char *)config + option->offset + option->size,
				    (char *)before + option->offset + option->size,
				    sizeof(*config) - option->offset - option->size);
	}
	free(yaml);
	free(before);
	free(config);
}

static void test_string_options_at_and_past_their_limit(void **state)
{
	for (size_t i = 0; i < sizeof(string_options) / sizeof(string_options[0]); i++) {
		const struct string_option *option = &string_options[i];
		char *at = repeat('a', option->size - 1), *past = repeat('a', option->size);
		char *far = repeat('a', option->size + 300);

		check_string_option(option, at, 0);
		check_string_option(option, past, -EINVAL);
		check_string_option(option, far, -EINVAL);
		free(at);
		free(past);
		free(far);
	}
}

static void test_list_and_config_file_limits(void **state)
{
	struct evictd_config *config = malloc(sizeof(*config));
	char *at = repeat('a', PATH_MAX - 1), *past = repeat('a', PATH_MAX);
	static const char *const lists[] = { "workload-root", "reclaim-command" };

	assert_non_null(config);
	for (size_t i = 0; i < 2; i++) {
		struct string_list *list = i ? &config->reclaim_commands : &config->workload_roots;

		config_init_defaults(config);
		assert_int_equal(config_apply_flag(config, lists[i], at), 0);
		assert_int_equal(list->n, 1);
		assert_string_equal(list->items[0], at);
		assert_int_not_equal(config_apply_flag(config, lists[i], past), 0);
		assert_int_equal(list->n, 1);
		for (int n = 1; n < CONFIG_MAX_LIST; n++)
			assert_int_equal(config_apply_flag(config, lists[i], "/x"), 0);
		assert_int_not_equal(config_apply_flag(config, lists[i], "/x"), 0);
		assert_int_equal(list->n, CONFIG_MAX_LIST);
	}
	config_init_defaults(config);
	assert_int_equal(config_apply_flag(config, "config", at), 0);
	assert_int_not_equal(config_apply_flag(config, "config", past), 0);
	assert_int_equal(config->n_config_files, 1);
	for (int n = 1; n < CONFIG_MAX_FILES; n++)
		assert_int_equal(config_apply_flag(config, "config", "/x"), 0);
	assert_int_not_equal(config_apply_flag(config, "config", "/x"), 0);
	assert_int_equal(config->n_config_files, CONFIG_MAX_FILES);
	/* A signal map value has 31 bytes. */
	config_init_defaults(config);
	free(past);
	past = repeat('1', 32);
	at[0] = '\0';
	strcat(at, "memory.available<");
	strncat(at, past, 31);
	assert_int_equal(config_apply_flag(config, "eviction-hard", at), 0);
	at[strlen(at) - 1] = '\0';
	strcat(at, "12");
	assert_int_not_equal(config_apply_flag(config, "eviction-hard", at), 0);
	free(at);
	free(past);
	free(config);
}

static void test_node_name_is_a_dns1123_subdomain(void **state)
{
	static const char *const good[] = { "a", "node-1", "node-1.example.com", "1.2.3.4", "a-b--c",
					     "0" };
	static const char *const bad[] = { "", "Node", "node_1", "-a", "a-", ".a", "a.", "a..b",
					   "a.-b", "a-.b", "a b", "a/b", "ä" };
	static struct evictd_config config;
	char *label = repeat('a', 100), *longest = repeat('a', 253), *over = repeat('a', 254);

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!config_is_dns1123_subdomain(good[i]))
			fail_msg("refused %s", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (config_is_dns1123_subdomain(bad[i]))
			fail_msg("accepted \"%s\"", bad[i]);
	/* A subdomain's labels are not held to 63 characters; the whole is to 253. */
	assert_true(config_is_dns1123_subdomain(label));
	assert_true(config_is_dns1123_subdomain(longest));
	assert_false(config_is_dns1123_subdomain(over));
	longest[100] = '.';
	assert_true(config_is_dns1123_subdomain(longest));

	config_init_defaults(&config);
	assert_int_equal(config_apply_flag(&config, "node-name", "worker-7.example"), 0);
	assert_string_equal(config.node_name, "worker-7.example");
	assert_int_not_equal(config_apply_flag(&config, "node-name", "Worker_7"), 0);
	assert_string_equal(config.node_name, "worker-7.example");
	/* "" keeps the default ($NODE_NAME, then the hostname). */
	assert_int_equal(config_apply_flag(&config, "node-name", ""), 0);
	assert_string_equal(config.node_name, "");
	free(label);
	free(longest);
	free(over);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_only_when_nothing_configured),
		cmocka_unit_test(test_one_threshold_turns_every_default_off),
		cmocka_unit_test(test_a_soft_threshold_alone_keeps_the_defaults),
		cmocka_unit_test(test_soft_without_grace_is_an_error),
		cmocka_unit_test(test_flag_list_and_min_reclaim),
		cmocka_unit_test(test_bad_values_are_errors),
		cmocka_unit_test(test_zero_quantity_threshold_is_an_error),
		cmocka_unit_test(test_duration_ranges),
		cmocka_unit_test(test_zero_and_hundred_percent_disable),
		cmocka_unit_test(test_kubelet_configuration_yaml),
		cmocka_unit_test(test_flags_override_the_file),
		cmocka_unit_test(test_missing_file_is_an_error),
		cmocka_unit_test(test_evictd_document_and_bad_yaml),
		cmocka_unit_test(test_config_file_must_be_a_regular_file),
		cmocka_unit_test(test_yaml_nesting_is_bounded),
		cmocka_unit_test(test_repeated_keys),
		cmocka_unit_test(test_repeated_keys_in_maps),
		cmocka_unit_test(test_list_entries_are_single_values),
		cmocka_unit_test(test_workload_root_checks),
		cmocka_unit_test(test_containerfs_is_derived_not_configured),
		cmocka_unit_test(test_shutdown_rules),
		cmocka_unit_test(test_shutdown_by_priority_yaml),
		cmocka_unit_test(test_oom_guard_options),
		cmocka_unit_test(test_event_log_bounds),
		cmocka_unit_test(test_string_options_at_and_past_their_limit),
		cmocka_unit_test(test_list_and_config_file_limits),
		cmocka_unit_test(test_node_name_is_a_dns1123_subdomain),
	};

	/* Errors are logged by design here; keep the TAP stream readable. */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
