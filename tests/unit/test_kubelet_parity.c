// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The kubelet's own test tables, ported: pkg/kubelet/eviction/helpers_test.go
 * TestParseThresholdConfig, component-base cli/flag map_string_string_test.go and
 * langle_separated_map_string_string_test.go, plus the rules of v1beta1 defaults.go and
 * helpers.go parsePercentage / parseMinimumReclaims / addAllocatableThresholds. A case that
 * evictd answers differently on purpose says so and is listed in README (kubelet
 * compatibility). */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "config/options.h"
#include "core/thresholds.h"
#include "pods/pods.h"

#define S(x) ((int64_t)(x) * 1000000000LL)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static int parse(struct evictd_config *config, const char *const *args)
{
	/* The kubelet's rules: pinned, as this host has no kubelet for "auto" to find. */
	char *argv[32] = { "evictd", "--profile=kubernetes" };
	int argc = 2, err;

	for (; args && args[argc - 2]; argc++)
		argv[argc] = (char *)args[argc - 2];
	config_init_defaults(config);
	err = config_parse_args(config, argc, argv);
	if (err)
		return err;
	return config_finalize(config);
}

/* Defaults with the kubelet's profile pinned (a YAML loaded directly is no evidence of one). */
static void kubernetes_defaults(struct evictd_config *config)
{
	config_init_defaults(config);
	snprintf(config->profile, sizeof(config->profile), "kubernetes");
}

/* "hard memory.available<150Mi min=0", the form the tables below expect. */
static void describe(const struct threshold *threshold, char *buf, size_t len)
{
	int n = threshold_format(threshold, buf, len);

	assert_true(n > 0);
	if (threshold->min_reclaim.text[0])
		snprintf(buf + n, len - (size_t)n, " min=%s", threshold->min_reclaim.text);
}

static bool has_threshold(const struct evictd_config *config, const char *want)
{
	char buf[160];

	for (size_t i = 0; i < config->n_thresholds; i++) {
		describe(&config->thresholds[i], buf, sizeof(buf));
		if (!strcmp(buf, want))
			return true;
	}
	return false;
}

/* ---- helpers_test.go TestParseThresholdConfig ------------------------------------------ */

struct parse_threshold_case {
	const char *name;
	const char *hard, *soft, *grace, *min_reclaim;	/* flag values ("" = an empty map) */
	bool expect_err;
	const char *expect[5];				/* describe() of each threshold */
};

static const struct parse_threshold_case parse_threshold_cases[] = {
	{ "no values", "", "", "", "", false, { NULL } },
	{ "all flag values", "memory.available<150Mi", "memory.available<300Mi",
	  "memory.available=30s", "memory.available=0", false,
	  { "hard memory.available<150Mi min=0", "soft memory.available<300Mi grace=30s min=0" } },
	{ "all flag values in percentages", "memory.available<10%", "memory.available<30%",
	  "memory.available=30s", "memory.available=5%", false,
	  { "hard memory.available<10% min=5%", "soft memory.available<30% grace=30s min=5%" } },
	{ "disk flag values", "imagefs.available<150Mi,nodefs.available<100Mi",
	  "imagefs.available<300Mi,nodefs.available<200Mi",
	  "imagefs.available=30s,nodefs.available=30s",
	  "imagefs.available=2Gi,nodefs.available=1Gi", false,
	  { "hard imagefs.available<150Mi min=2Gi", "hard nodefs.available<100Mi min=1Gi",
	    "soft imagefs.available<300Mi grace=30s min=2Gi",
	    "soft nodefs.available<200Mi grace=30s min=1Gi" } },
	{ "disk flag values in percentages", "imagefs.available<15%,nodefs.available<10.5%",
	  "imagefs.available<30%,nodefs.available<20.5%",
	  "imagefs.available=30s,nodefs.available=30s",
	  "imagefs.available=10%,nodefs.available=5%", false,
	  { "hard imagefs.available<15% min=10%", "hard nodefs.available<10.5% min=5%",
	    "soft imagefs.available<30% grace=30s min=10%",
	    "soft nodefs.available<20.5% grace=30s min=5%" } },
	{ "inode flag values", "imagefs.inodesFree<150Mi,nodefs.inodesFree<100Mi",
	  "imagefs.inodesFree<300Mi,nodefs.inodesFree<200Mi",
	  "imagefs.inodesFree=30s,nodefs.inodesFree=30s",
	  "imagefs.inodesFree=2Gi,nodefs.inodesFree=1Gi", false,
	  { "hard imagefs.inodesFree<150Mi min=2Gi", "hard nodefs.inodesFree<100Mi min=1Gi",
	    "soft imagefs.inodesFree<300Mi grace=30s min=2Gi",
	    "soft nodefs.inodesFree<200Mi grace=30s min=1Gi" } },
	{ "invalid-signal", "mem.available<150Mi", "", "", "", true, { NULL } },
	{ "hard-signal-negative", "memory.available<-150Mi", "", "", "", true, { NULL } },
	{ "hard-signal-negative-percentage", "memory.available<-15%", "", "", "", true, { NULL } },
	{ "soft-signal-negative", "", "memory.available<-150Mi", "", "", true, { NULL } },
	{ "valid-and-invalid-signal", "memory.available<150Mi,invalid.foo<150Mi", "", "", "", true,
	  { NULL } },
	{ "soft-no-grace-period", "", "memory.available<150Mi", "", "", true, { NULL } },
	{ "soft-negative-grace-period", "", "memory.available<150Mi", "memory.available=-30s", "",
	  true, { NULL } },
	{ "negative-reclaim", "", "", "", "memory.available=-300Mi", true, { NULL } },
	{ "duplicate-reclaim", "", "", "", "memory.available=-300Mi,memory.available=-100Mi", true,
	  { NULL } },
	/* The table above predates the map form; in the map form a repeated key is the later
	 * value (MapStringString.Set), which is what the kubelet and evictd do with flags. */
	{ "duplicate-signal (map form: the later wins)", "memory.available<150Mi,memory.available<100Mi",
	  "", "", "", false, { "hard memory.available<100Mi" } },
	/* parseThresholdStatement: zero is not positive; "0%"/"100%" are ignored, not errors. */
	{ "zero quantity", "memory.available<0", "", "", "", true, { NULL } },
	{ "0% and 100% ignored", "memory.available<0%,nodefs.available<100%,pid.available<10", "", "",
	  "", false, { "hard pid.available<10" } },
	{ "percentage above 100", "memory.available<100.5%", "", "", "", true, { NULL } },
	{ "100.0% is not ignored", "nodefs.available<100.0%", "", "", "", false,
	  { "hard nodefs.available<100.0%" } },
	/* parseMinimumReclaims: every entry parsed; a percentage must be positive, no upper bound. */
	{ "reclaim 0% is an error", "memory.available<1Gi", "", "", "memory.available=0%", true, { NULL } },
	{ "reclaim above 100% is fine", "memory.available<1Gi", "", "", "memory.available=150%", false,
	  { "hard memory.available<1Gi min=150%" } },
	{ "reclaim for a signal without threshold still parsed", "memory.available<1Gi", "", "",
	  "nodefs.available=lots", true, { NULL } },
	/* parseGracePeriods: every entry parsed. */
	{ "bad grace for a signal without soft threshold", "memory.available<1Gi", "", "nodefs.available=soon",
	  "", true, { NULL } },
	/* isHardEvictionThreshold: GracePeriod == 0 makes a soft threshold hard. */
	{ "soft with 0s grace is hard", "", "memory.available<300Mi", "memory.available=0s", "", false,
	  { "hard memory.available<300Mi" } },
	/* allocatableMemory.available is a signal the kubelet accepts in a threshold. */
	{ "allocatable named directly", "allocatableMemory.available<200Mi", "", "", "", false,
	  { "hard allocatableMemory.available<200Mi" } },
};

static void test_parse_threshold_config_table(void **state)
{
	static struct evictd_config config;

	for (size_t i = 0; i < ARRAY_SIZE(parse_threshold_cases); i++) {
		const struct parse_threshold_case *c = &parse_threshold_cases[i];
		char hard[160], soft[160], grace[160], reclaim[160];
		const char *args[] = { hard, soft, grace, reclaim, NULL };
		size_t n_expect = 0;
		int err;

		snprintf(hard, sizeof(hard), "--eviction-hard=%s", c->hard);
		snprintf(soft, sizeof(soft), "--eviction-soft=%s", c->soft);
		snprintf(grace, sizeof(grace), "--eviction-soft-grace-period=%s", c->grace);
		snprintf(reclaim, sizeof(reclaim), "--eviction-minimum-reclaim=%s", c->min_reclaim);
		err = parse(&config, args);
		if ((err != 0) != c->expect_err)
			fail_msg("%s: err %d, expected %s", c->name, err, c->expect_err ? "an error" : "none");
		if (c->expect_err)
			continue;
		for (; n_expect < ARRAY_SIZE(c->expect) && c->expect[n_expect]; n_expect++)
			if (!has_threshold(&config, c->expect[n_expect]))
				fail_msg("%s: no \"%s\"", c->name, c->expect[n_expect]);
		if (config.n_thresholds != n_expect)
			fail_msg("%s: %zu thresholds, expected %zu", c->name, config.n_thresholds, n_expect);
	}
}

/* ---- component-base map flag types -------------------------------------------------- */

struct map_flag_case {
	const char *name;
	const char *flags[4];
	bool expect_err;
	const char *expect[4];
};

static const struct map_flag_case map_flag_cases[] = {
	/* TestSetLangleSeparatedMapStringString */
	{ "empty", { "--eviction-hard=" }, false, { NULL } },
	{ "one key", { "--eviction-hard=memory.available<1Gi" }, false, { "hard memory.available<1Gi" } },
	{ "two keys", { "--eviction-hard=memory.available<1Gi,nodefs.available<2Gi" }, false,
	  { "hard memory.available<1Gi", "hard nodefs.available<2Gi" } },
	{ "two keys, multiple Set invocations",
	  { "--eviction-hard=memory.available<1Gi", "--eviction-hard=nodefs.available<2Gi" }, false,
	  { "hard memory.available<1Gi", "hard nodefs.available<2Gi" } },
	{ "two keys with space", { "--eviction-hard=memory.available<1Gi, nodefs.available<2Gi" }, false,
	  { "hard memory.available<1Gi", "hard nodefs.available<2Gi" } },
	/* "empty key": the kubelet's map takes "" and ParseThresholdConfig then refuses it as an
	 * unsupported signal; evictd refuses it at once. Both exit with an error. */
	{ "empty key", { "--eviction-hard=<1Gi" }, true, { NULL } },
	{ "missing value", { "--eviction-hard=memory.available" }, true, { NULL } },
	/* Set's own rules around those tables. */
	{ "a later Set for the same key wins",
	  { "--eviction-hard=memory.available<1Gi", "--eviction-hard=memory.available<2Gi" }, false,
	  { "hard memory.available<2Gi" } },
	{ "empty entries are skipped", { "--eviction-hard=,memory.available<1Gi,,", }, false,
	  { "hard memory.available<1Gi" } },
	{ "white space around key and value is trimmed", { "--eviction-hard= memory.available\t< 1Gi\n" },
	  false, { "hard memory.available<1Gi" } },
	{ "a blank entry is a malformed pair", { "--eviction-hard=memory.available<1Gi, " }, true, { NULL } },
	/* TestSetMapStringString, through the '=' maps. */
	{ "grace, multiple Set invocations",
	  { "--eviction-hard=", "--eviction-soft=memory.available<1Gi,nodefs.available<1Gi",
	    "--eviction-soft-grace-period=memory.available=1m",
	    "--eviction-soft-grace-period=nodefs.available=2m" }, false,
	  { "soft memory.available<1Gi grace=1m0s", "soft nodefs.available<1Gi grace=2m0s" } },
	{ "reclaim, missing value", { "--eviction-minimum-reclaim=memory.available" }, true, { NULL } },
	{ "reclaim, two keys with space",
	  { "--eviction-hard=memory.available<1Gi,nodefs.available<1Gi",
	    "--eviction-minimum-reclaim=memory.available=1Mi, nodefs.available=2Mi" }, false,
	  { "hard memory.available<1Gi min=1Mi", "hard nodefs.available<1Gi min=2Mi" } },
};

static void test_map_flags_merge_like_component_base(void **state)
{
	static struct evictd_config config;

	for (size_t i = 0; i < ARRAY_SIZE(map_flag_cases); i++) {
		const struct map_flag_case *c = &map_flag_cases[i];
		const char *args[ARRAY_SIZE(c->flags) + 1] = { NULL };
		size_t n_args = 0, n_expect = 0;
		int err;

		for (; n_args < ARRAY_SIZE(c->flags) && c->flags[n_args]; n_args++)
			args[n_args] = c->flags[n_args];
		err = parse(&config, args);
		if ((err != 0) != c->expect_err)
			fail_msg("%s: err %d", c->name, err);
		if (c->expect_err)
			continue;
		for (; n_expect < ARRAY_SIZE(c->expect) && c->expect[n_expect]; n_expect++)
			if (!has_threshold(&config, c->expect[n_expect]))
				fail_msg("%s: no \"%s\"", c->name, c->expect[n_expect]);
		if (config.n_thresholds != n_expect)
			fail_msg("%s: %zu thresholds, expected %zu", c->name, config.n_thresholds, n_expect);
	}
}

/* kubeletConfigFlagPrecedence re-parses the flags over the file: the first --eviction-hard
 * clears the file's map ("clears defaults"), the next ones add to it. */
static void test_flags_replace_the_file_map_then_merge(void **state)
{
	static struct evictd_config config;
	char dir[PATH_MAX], path[PATH_MAX + 16], flag[PATH_MAX + 32];
	const char *args[] = { flag, "--eviction-hard=pid.available<100",
			       "--eviction-hard=nodefs.available<5%", NULL };
	const char *no_flag[] = { flag, NULL };

	fixture_tmpdir(dir, "parity");
	snprintf(path, sizeof(path), "%s/kubelet.yaml", dir);
	fixture_write(dir, "kubelet.yaml", "kind: KubeletConfiguration\n"
			    "evictionHard:\n  memory.available: 1Gi\n  imagefs.available: 20%%\n");
	snprintf(flag, sizeof(flag), "--config=%s", path);
	assert_int_equal(parse(&config, args), 0);
	assert_int_equal(config.n_thresholds, 2);
	assert_true(has_threshold(&config, "hard pid.available<100"));
	assert_true(has_threshold(&config, "hard nodefs.available<5%"));
	assert_int_equal(parse(&config, no_flag), 0);
	assert_int_equal(config.n_thresholds, 2);
	assert_true(has_threshold(&config, "hard memory.available<1Gi"));
	fixture_rm_rf(dir);
}

/* ---- defaults.go ------------------------------------------------------------------------- */

static void test_defaults_and_merge_default_eviction_settings(void **state)
{
	static struct evictd_config config;
	const char *only_soft[] = { "--eviction-soft=memory.available<300Mi",
				    "--eviction-soft-grace-period=memory.available=1m30s", NULL };
	const char *one_hard[] = { "--eviction-hard=memory.available<200Mi", NULL };
	const char *merged[] = { "--eviction-hard=memory.available<200Mi",
				 "--merge-default-eviction-settings", NULL };
	const char *empty_hard[] = { "--eviction-hard=", "--merge-default-eviction-settings", NULL };

	/* Nothing about evictionHard: the five defaults, whatever else is set. */
	assert_int_equal(parse(&config, only_soft), 0);
	assert_int_equal(config.n_thresholds, 6);
	assert_true(has_threshold(&config, "hard memory.available<100Mi"));
	assert_true(has_threshold(&config, "hard imagefs.inodesFree<5%"));
	assert_true(has_threshold(&config, "soft memory.available<300Mi grace=1m30s"));
	/* evictionHard set: the defaults it does not name are off ... */
	assert_int_equal(parse(&config, one_hard), 0);
	assert_int_equal(config.n_thresholds, 1);
	/* ... unless mergeDefaultEvictionSettings: then what it names wins over the default. */
	assert_int_equal(parse(&config, merged), 0);
	assert_int_equal(config.n_thresholds, 5);
	assert_true(has_threshold(&config, "hard memory.available<200Mi"));
	assert_false(has_threshold(&config, "hard memory.available<100Mi"));
	assert_true(has_threshold(&config, "hard nodefs.available<10%"));
	assert_int_equal(parse(&config, empty_hard), 0);
	assert_int_equal(config.n_thresholds, 5);
}

static void test_merge_default_eviction_settings_from_yaml(void **state)
{
	static struct evictd_config config;
	static const char yaml[] = "kind: KubeletConfiguration\n"
				   "mergeDefaultEvictionSettings: true\n"
				   "evictionHard:\n  nodefs.available: 1Gi\n";

	kubernetes_defaults(&config);
	assert_int_equal(config_load_yaml(&config, yaml, strlen(yaml), "merge.yaml"), 0);
	assert_int_equal(config_finalize(&config), 0);
	assert_int_equal(config.n_thresholds, 5);
	assert_true(has_threshold(&config, "hard nodefs.available<1Gi"));
	assert_true(has_threshold(&config, "hard memory.available<100Mi"));
}

/* A null in a KubeletConfiguration is an unset field: "evictionHard:" alone keeps the
 * defaults, an empty map does not. */
static void test_null_and_empty_eviction_hard(void **state)
{
	static struct evictd_config config;
	static const char null_yaml[] = "kind: KubeletConfiguration\nevictionHard:\n"
					"evictionMaxPodGracePeriod: ~\n";
	static const char empty_yaml[] = "kind: KubeletConfiguration\nevictionHard: {}\n";

	kubernetes_defaults(&config);
	assert_int_equal(config_load_yaml(&config, null_yaml, strlen(null_yaml), "null.yaml"), 0);
	assert_int_equal(config_finalize(&config), 0);
	assert_int_equal(config.n_thresholds, 5);
	kubernetes_defaults(&config);
	assert_int_equal(config_load_yaml(&config, empty_yaml, strlen(empty_yaml), "empty.yaml"), 0);
	assert_int_equal(config_finalize(&config), 0);
	assert_int_equal(config.n_thresholds, 0);
}

/* SetDefaults_KubeletConfiguration: evictionPressureTransitionPeriod 0 in a file is
 * defaulted (zeroDuration); a flag is applied after defaulting, so its 0 stays 0. */
static void test_zero_transition_period_in_a_file_is_defaulted(void **state)
{
	static struct evictd_config config;
	static const char yaml[] = "kind: KubeletConfiguration\nevictionPressureTransitionPeriod: 0s\n";
	const char *flag[] = { "--eviction-pressure-transition-period=0s", NULL };

	kubernetes_defaults(&config);
	assert_int_equal(config_load_yaml(&config, yaml, strlen(yaml), "zero.yaml"), 0);
	assert_int_equal(config.pressure_transition_period_ns, S(300));
	assert_int_equal(parse(&config, flag), 0);
	assert_int_equal(config.pressure_transition_period_ns, 0);
}

/* ---- addAllocatableThresholds --------------------------------------------------------- */

static size_t allocatable(const struct evictd_config *config, struct threshold *out)
{
	return config_allocatable_thresholds(config, out, EV_MAX_THRESHOLDS);
}

static void test_allocatable_follows_hard_memory(void **state)
{
	static struct evictd_config config;
	struct threshold out[EV_MAX_THRESHOLDS];
	const char *defaults[] = { NULL };
	const char *two[] = { "--eviction-hard=memory.available<10%",
			      "--eviction-soft=memory.available<1Gi",
			      "--eviction-soft-grace-period=memory.available=1m",
			      "--eviction-minimum-reclaim=memory.available=50Mi", NULL };
	const char *none[] = { "--enforce-node-allocatable=none", NULL };
	const char *others[] = { "--enforce-node-allocatable=system-reserved,kube-reserved", NULL };
	const char *bad[] = { "--enforce-node-allocatable=pod", NULL };
	struct threshold effective[EV_MAX_THRESHOLDS];
	size_t n;

	assert_int_equal(parse(&config, defaults), 0);
	assert_int_equal(allocatable(&config, out), 1);
	assert_int_equal(out[0].signal, EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE);
	assert_true(out[0].hard);
	assert_int_equal(out[0].value.quantity, 100LL << 20);
	/* Only the hard one is copied, with its value and minimum reclaim. */
	assert_int_equal(parse(&config, two), 0);
	assert_int_equal(allocatable(&config, out), 1);
	assert_true(out[0].value.is_percentage && out[0].value.percentage == 0.10f);
	assert_int_equal(out[0].min_reclaim.quantity, 50LL << 20);
	/* And it is among the thresholds the engine evaluates. */
	n = config_effective_thresholds(&config, FS_LAYOUT_SINGLE, effective, EV_MAX_THRESHOLDS);
	assert_true(n > 0);
	{
		bool found = false;

		for (size_t i = 0; i < n; i++)
			found |= effective[i].signal == EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE;
		assert_true(found);
	}
	assert_int_equal(parse(&config, none), 0);
	assert_int_equal(allocatable(&config, out), 0);
	assert_int_equal(parse(&config, others), 0);
	assert_int_equal(allocatable(&config, out), 0);
	assert_int_equal(parse(&config, bad), -EINVAL);
}

static void test_allocatable_from_yaml_list(void **state)
{
	static struct evictd_config config;
	struct threshold out[EV_MAX_THRESHOLDS];
	static const char none[] = "kind: KubeletConfiguration\nenforceNodeAllocatable: [none]\n";
	static const char pods[] = "kind: KubeletConfiguration\n"
				   "enforceNodeAllocatable:\n- system-reserved\n- pods\n";

	kubernetes_defaults(&config);
	assert_int_equal(config_load_yaml(&config, none, strlen(none), "none.yaml"), 0);
	assert_int_equal(config_finalize(&config), 0);
	assert_int_equal(allocatable(&config, out), 0);
	kubernetes_defaults(&config);
	assert_int_equal(config_load_yaml(&config, pods, strlen(pods), "pods.yaml"), 0);
	assert_int_equal(config_finalize(&config), 0);
	assert_int_equal(allocatable(&config, out), 1);
	assert_string_equal(config.enforce_node_allocatable, "system-reserved,pods");
}

/* ---- --config-dir and the running kubelet ------------------------------------------------ */

/* mergeKubeletConfigurations: *.conf only, lexical order (a subdirectory where its name
 * sorts), maps merged key by key, a null changes nothing; flags still win. */
static void test_config_dir_dropins(void **state)
{
	static struct evictd_config config;
	char dir[PATH_MAX], file_flag[PATH_MAX + 64], dir_flag[PATH_MAX + 64];
	const char *args[] = { file_flag, dir_flag, NULL };
	const char *with_flag[] = { file_flag, dir_flag, "--eviction-max-pod-grace-period=7", NULL };

	fixture_tmpdir(dir, "dropin");
	fixture_write(dir, "kubelet.yaml", "kind: KubeletConfiguration\n"
		      "evictionHard:\n  memory.available: 1Gi\n  imagefs.available: 20%%\n"
		      "evictionMaxPodGracePeriod: 30\n");
	fixture_write(dir, "d/10-disk.conf", "apiVersion: kubelet.config.k8s.io/v1beta1\n"
		      "kind: KubeletConfiguration\nevictionHard:\n  nodefs.available: 5%%\n");
	fixture_write(dir, "d/20-mem.conf", "kind: KubeletConfiguration\n"
		      "evictionHard:\n  memory.available: 2Gi\n  imagefs.available: null\n"
		      "evictionMaxPodGracePeriod: 60\n");
	/* "sub" sorts after "20-mem.conf": its file comes last. */
	fixture_write(dir, "d/sub/01-last.conf", "kind: KubeletConfiguration\n"
		      "evictionHard:\n  memory.available: 3Gi\nevictionMaxPodGracePeriod: null\n");
	fixture_write(dir, "d/99-ignored.yaml", "kind: KubeletConfiguration\n"
		      "evictionHard:\n  pid.available: 100\n");
	fixture_write(dir, "d/98-ignored.conf.bak", "kind: KubeletConfiguration\n"
		      "evictionHard:\n  pid.available: 100\n");
	snprintf(file_flag, sizeof(file_flag), "--config=%s/kubelet.yaml", dir);
	snprintf(dir_flag, sizeof(dir_flag), "--config-dir=%s/d", dir);
	assert_int_equal(parse(&config, args), 0);
	assert_int_equal(config.n_thresholds, 3);
	assert_true(has_threshold(&config, "hard memory.available<3Gi"));
	assert_true(has_threshold(&config, "hard imagefs.available<20%"));
	assert_true(has_threshold(&config, "hard nodefs.available<5%"));
	assert_int_equal(config.max_pod_grace_period_s, 60);
	assert_int_equal(parse(&config, with_flag), 0);
	assert_int_equal(config.max_pod_grace_period_s, 7);
	/* A drop-in is a KubeletConfiguration; a bad one is an error. */
	fixture_write(dir, "d/30-bad.conf", "kind: EvictdConfiguration\ndryRun: true\n");
	assert_int_equal(parse(&config, args), -EINVAL);
	fixture_rm_rf(dir);
}

/* Hostile drop-in directories: a FIFO named *.conf is refused without waiting for a writer,
 * nesting and file counts are bounded, a symlinked directory is not followed. */
static void test_config_dir_limits(void **state)
{
	static struct evictd_config config;
	char dir[PATH_MAX], path[PATH_MAX + 64], flag[PATH_MAX + 64];
	const char *args[] = { flag, NULL };

	fixture_tmpdir(dir, "dropinlimits");
	snprintf(flag, sizeof(flag), "--config-dir=%s/d", dir);
	fixture_write(dir, "d/10.conf", "kind: KubeletConfiguration\nevictionHard:\n  pid.available: 10\n");
	snprintf(path, sizeof(path), "%s/d/20-fifo.conf", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(parse(&config, args), -EINVAL);
	unlink(path);
	/* A symlink to a directory is not walked (WalkDir does not follow it). */
	snprintf(path, sizeof(path), "%s/d/loop", dir);
	assert_int_equal(symlink(dir, path), 0);
	assert_int_equal(parse(&config, args), 0);
	assert_true(has_threshold(&config, "hard pid.available<10"));
	unlink(path);
	/* Nine levels deep is refused, with one line. */
	fixture_write(dir, "d/a/b/c/d/e/f/g/h/i/deep.conf", "kind: KubeletConfiguration\n");
	assert_int_equal(parse(&config, args), -EINVAL);
	fixture_rm_rf(dir);
	/* A missing directory is an error, not an empty one. */
	assert_int_equal(parse(&config, args), -EINVAL);
}

/* A command line of many thousand arguments: read up to its limits, no overflow; the flags
 * that fit are applied. */
static void test_kubelet_process_huge_cmdline(void **state)
{
	static struct evictd_config config;
	char root[PATH_MAX], root_flag[PATH_MAX + 16], path[PATH_MAX + 64];
	const char *args[] = { root_flag, "--kubelet-flags-from=77", NULL };
	FILE *f;

	fixture_tmpdir(root, "hugecmd");
	fixture_write(root, "proc/77/comm", "kubelet\n");
	snprintf(path, sizeof(path), "%s/proc/77/cmdline", root);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("kubelet", f);
	fputc(0, f);
	fputs("--eviction-hard=memory.available<123Mi", f);
	fputc(0, f);
	for (int i = 0; i < 100000; i++) {
		fputs("--v=2", f);
		fputc(0, f);
	}
	fputs("--eviction-hard=pid.available<9", f);	/* past every limit: not read */
	fputc(0, f);
	fclose(f);
	snprintf(root_flag, sizeof(root_flag), "--root=%s", root);
	assert_int_equal(parse(&config, args), 0);
	assert_int_equal(config.n_thresholds, 1);
	/* A flag cut by the 256 KiB limit is dropped, not read shorter: pad so that
	 * "...<123456Mi" ends past the limit. */
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("kubelet", f);
	fputc(0, f);
	fputs("--node-labels=", f);
	for (int i = 0; i < (256 << 10) - 31 - 8 - 14 - 1; i++)
		fputc('x', f);
	fputc(0, f);
	fputs("--eviction-hard=memory.available<123456Mi", f);
	fputc(0, f);
	fclose(f);
	assert_int_equal(parse(&config, args), 0);
	assert_true(config.using_default_thresholds);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("kubelet", f);
	fputc(0, f);
	fputs("--eviction-hard=memory.available<123Mi", f);
	fputc(0, f);
	fclose(f);
	snprintf(root_flag, sizeof(root_flag), "--root=%s", root);
	assert_int_equal(parse(&config, args), 0);
	assert_int_equal(config.n_thresholds, 1);
	assert_true(has_threshold(&config, "hard memory.available<123Mi"));
	fixture_rm_rf(root);
}

/* /proc/PID as --kubelet-flags-from=auto trusts it: comm kubelet, uids 0 (status "Uid:"
 * real, effective, saved, fs), exe a link to exe_rel (below root; made a root-owned 0755 file
 * when missing), and argv as its cmdline. */
static void write_proc(const char *root, const char *pid, const char *uids, const char *exe_rel,
		       const char *const *argv)
{
	char path[PATH_MAX], rel[64], exe[PATH_MAX], link[PATH_MAX + 64];
	FILE *f;

	snprintf(rel, sizeof(rel), "proc/%s/comm", pid);
	fixture_write(root, rel, "kubelet\n");
	snprintf(rel, sizeof(rel), "proc/%s/status", pid);
	fixture_write(root, rel, "Name:\tkubelet\nUmask:\t0022\nState:\tS (sleeping)\n"
		      "Tgid:\t%s\nPid:\t%s\nUid:\t%s\nGid:\t0\t0\t0\t0\n", pid, pid, uids);
	snprintf(exe, sizeof(exe), "%s/%s", root, exe_rel);
	if (access(exe, F_OK)) {
		fixture_write(root, exe_rel, "#!/bin/true\n");
		assert_int_equal(chmod(exe, 0755), 0);
	}
	snprintf(link, sizeof(link), "%s/proc/%s/exe", root, pid);
	unlink(link);
	assert_int_equal(symlink(exe, link), 0);
	snprintf(path, sizeof(path), "%s/proc/%s/cmdline", root, pid);
	f = fopen(path, "w");
	assert_non_null(f);
	for (; *argv; argv++)
		fwrite(*argv, 1, strlen(*argv) + 1, f);
	fclose(f);
}

static void write_cmdline(const char *root, const char *pid, const char *const *argv)
{
	write_proc(root, pid, "0\t0\t0\t0", "usr/bin/kubelet", argv);
}

static void test_kubelet_process_flags(void **state)
{
	static struct evictd_config config;
	static const char *const kubelet_argv[] = {
		"/usr/bin/kubelet", "--config=/etc/kubernetes/kubelet.yaml", "--node-ip=10.0.0.1",
		"--eviction-hard=memory.available<300Mi", "--eviction-hard", "nodefs.available<7%",
		"--root-dir", "/data/kubelet", "--eviction_max_pod_grace_period=20", "--v=2", NULL,
	};
	char root[PATH_MAX], root_flag[PATH_MAX + 16];
	const char *by_pid[] = { root_flag, "--kubelet-flags-from=4242", NULL };
	const char *auto_and_flag[] = { root_flag, "--kubelet-flags-from=auto",
					"--eviction-hard=pid.available<50", NULL };
	const char *missing[] = { root_flag, "--kubelet-flags-from=999", NULL };
	const char *bad[] = { root_flag, "--kubelet-flags-from=kubelet", NULL };

	fixture_tmpdir(root, "kubeletproc");
	fixture_write(root, "etc/kubernetes/kubelet.yaml", "kind: KubeletConfiguration\n"
		      "evictionHard:\n  imagefs.available: 9%%\nevictionPressureTransitionPeriod: 1m\n");
	write_cmdline(root, "4242", kubelet_argv);
	fixture_write(root, "proc/17/comm", "bash\n");
	snprintf(root_flag, sizeof(root_flag), "--root=%s", root);
	assert_int_equal(parse(&config, by_pid), 0);
	/* The kubelet's flags win over its file: its first --eviction-hard cleared the file's. */
	assert_int_equal(config.n_thresholds, 2);
	assert_true(has_threshold(&config, "hard memory.available<300Mi"));
	assert_true(has_threshold(&config, "hard nodefs.available<7%"));
	assert_int_equal(config.pressure_transition_period_ns, S(60));
	assert_string_equal(config.kubelet_dir, "/data/kubelet");
	assert_int_equal(config.max_pod_grace_period_s, 20);
	/* evictd's own flags apply over the kubelet's (a new first --eviction-hard clears). */
	assert_int_equal(parse(&config, auto_and_flag), 0);
	assert_int_equal(config.n_thresholds, 1);
	assert_true(has_threshold(&config, "hard pid.available<50"));
	assert_int_equal(parse(&config, missing), -EINVAL);
	assert_int_equal(parse(&config, bad), -EINVAL);
	/* auto with two kubelets is ambiguous. */
	write_cmdline(root, "4243", kubelet_argv);
	assert_int_equal(parse(&config, auto_and_flag), -EINVAL);
	fixture_rm_rf(root);
}

/* auto reads only a kubelet run by root from a root-owned binary nobody else may write:
 * anyone can name a process kubelet (prctl PR_SET_NAME), and such impostors are skipped with
 * a line each instead of being read or making auto ambiguous. */
static void test_kubelet_process_auto_trust(void **state)
{
	static struct evictd_config config;
	static const char *const evil[] = { "kubelet", "--eviction-hard=pid.available<99%", NULL };
	static const char *const real[] = { "/usr/bin/kubelet",
					    "--eviction-hard=memory.available<321Mi", NULL };
	char root[PATH_MAX], root_flag[PATH_MAX + 16], path[PATH_MAX + 64];
	const char *args[] = { root_flag, "--kubelet-flags-from=auto", NULL };

	if (geteuid() != 0)
		skip();	/* root-owned fixture binaries need root (the CLI test covers the host) */
	fixture_tmpdir(root, "kubelettrust");
	snprintf(root_flag, sizeof(root_flag), "--root=%s", root);
	/* An unprivileged user's process renamed kubelet, even one running the real binary. */
	write_proc(root, "100", "65534\t65534\t65534\t65534", "usr/bin/kubelet", evil);
	/* Root, but only the real uid: a setuid-style effective uid does not count... */
	write_proc(root, "101", "0\t1000\t0\t0", "usr/bin/kubelet", evil);
	write_proc(root, "102", "1000\t0\t0\t0", "usr/bin/kubelet", evil);
	/* ...root running a binary someone else could have written or that is not a kubelet. */
	write_proc(root, "103", "0\t0\t0\t0", "tmp/kubelet", evil);
	snprintf(path, sizeof(path), "%s/tmp/kubelet", root);
	assert_int_equal(chmod(path, 0775), 0);
	write_proc(root, "104", "0\t0\t0\t0", "home/user/kubelet", evil);
	snprintf(path, sizeof(path), "%s/home/user/kubelet", root);
	assert_int_equal(chown(path, 1000, 1000), 0);
	write_proc(root, "105", "0\t0\t0\t0", "usr/bin/sleep", evil);
	write_proc(root, "106", "0\t0\t0\t0", "usr/bin/kubelet", evil);
	fixture_write(root, "proc/106/status", "Name:\tkubelet\n");	/* no Uid: line */
	/* With only impostors there is no kubelet to read. */
	assert_int_equal(parse(&config, args), -EINVAL);
	/* The one trusted kubelet is read; the impostors neither count nor apply. */
	write_cmdline(root, "200", real);
	assert_int_equal(parse(&config, args), 0);
	assert_int_equal(config.n_thresholds, 1);
	assert_true(has_threshold(&config, "hard memory.available<321Mi"));
	/* An unlinked binary (a kubelet upgraded in place) is still its own file. */
	write_proc(root, "200", "0\t0\t0\t0", "usr/bin/kubelet", real);
	snprintf(path, sizeof(path), "%s/proc/200/exe", root);
	unlink(path);
	{
		char target[PATH_MAX + 64];

		snprintf(target, sizeof(target), "%s/usr/bin/kubelet (deleted)", root);
		fixture_write(root, "usr/bin/kubelet (deleted)", "#!/bin/true\n");
		assert_int_equal(chmod(target, 0755), 0);
		assert_int_equal(symlink(target, path), 0);
	}
	assert_int_equal(parse(&config, args), 0);
	assert_true(has_threshold(&config, "hard memory.available<321Mi"));
	/* Two trusted kubelets: ambiguous, refused. */
	write_cmdline(root, "201", real);
	assert_int_equal(parse(&config, args), -EINVAL);
	fixture_rm_rf(root);
}

/* GetResourceRequestQuantity with pod-level resources: the containers' requests are skipped,
 * so the ephemeral-storage request (no pod-level resource) is 0. */
static void test_pod_level_resources_zero_ephemeral_requests(void **state)
{
	static const char json[] =
		"{\"kind\":\"List\",\"items\":["
		"{\"metadata\":{\"uid\":\"u-1\",\"name\":\"pod-level\"},"
		"\"spec\":{\"resources\":{\"requests\":{\"memory\":\"2Gi\"}},"
		"\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":"
		"{\"memory\":\"1Gi\",\"ephemeral-storage\":\"1Gi\"}}}]}},"
		"{\"metadata\":{\"uid\":\"u-2\",\"name\":\"containers\"},"
		"\"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":"
		"{\"memory\":\"1Gi\",\"ephemeral-storage\":\"1Gi\"}}}]}},"
		/* Pod-level CPU only: the containers' memory request is skipped too. */
		"{\"metadata\":{\"uid\":\"u-3\",\"name\":\"pod-level-cpu\"},"
		"\"spec\":{\"resources\":{\"limits\":{\"cpu\":\"1\"}},"
		"\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":"
		"{\"memory\":\"1Gi\",\"ephemeral-storage\":\"1Gi\"}}}]}}]}";
	struct pod_meta_list list = { 0 };

	assert_int_equal(pods_parse_podlist(json, sizeof(json) - 1, "p", NULL, &list, NULL, 0), 0);
	assert_int_equal(list.n_items, 3);
	assert_int_equal(list.items[0].memory_request, 2LL << 30);
	assert_int_equal(list.items[0].ephemeral_storage_request, 0);
	assert_int_equal(list.items[1].ephemeral_storage_request, 1LL << 30);
	assert_int_equal(list.items[1].memory_request, 1LL << 30);
	assert_int_equal(list.items[2].memory_request, 0);
	assert_int_equal(list.items[2].ephemeral_storage_request, 0);
	pod_meta_list_free(&list);
}

/* ---- parsePercentage, parseThresholdStatement, parseMinimumReclaims ------------------ */

struct percent_case {
	const char *text;
	int err;
	float want;
};

static const struct percent_case percent_cases[] = {
	{ "10%", 0, 0.10f }, { "10.5%", 0, 0.105f }, { "20.5%", 0, 0.205f },
	{ "10%%", 0, 0.10f },			/* strings.TrimRight drops every '%' */
	{ "+10%", 0, 0.10f }, { "1e1%", 0, 0.10f }, { ".5%", 0, 0.005f }, { "5.%", 0, 0.05f },
	{ "0x1p3%", 0, 0.08f },			/* Go hex float, 'p' exponent required */
	{ "1e-50%", 0, 0.0f },			/* underflow is no error in ParseFloat */
	{ "0x10%", -EINVAL, 0 }, { " 10%", -EINVAL, 0 }, { "10 %", -EINVAL, 0 }, { "%", -EINVAL, 0 },
	{ "1_0%", -EINVAL, 0 }, { ".%", -EINVAL, 0 }, { "ten%", -EINVAL, 0 }, { "1e%", -EINVAL, 0 },
	{ "1e39%", -ERANGE, 0 },		/* beyond float32: ParseFloat's ErrRange */
	/* Go: "0x_1p0" is valid (underscores after a base prefix); refused here (README). */
	{ "0x_1p0%", -EINVAL, 0 },
};

static void test_percentage_parse_like_parse_float(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(percent_cases); i++) {
		const struct percent_case *c = &percent_cases[i];
		float got = -1;
		int err = percentage_parse(c->text, &got);

		if (err != c->err)
			fail_msg("\"%s\": err %d, want %d", c->text, err, c->err);
		if (!err && got != c->want)
			fail_msg("\"%s\": %.9g, want %.9g", c->text, got, c->want);
	}
	/* Infinities parse; the statement's range check refuses them. */
	{
		float got;

		assert_int_equal(percentage_parse("inf%", &got), 0);
		assert_true(isinf(got));
		assert_int_equal(percentage_parse("-Infinity%", &got), 0);
		assert_true(isinf(got) && got < 0);
	}
}

struct statement_case {
	const char *text;
	int err;
	bool disabled;
};

static const struct statement_case statement_cases[] = {
	{ "0%", 0, true }, { "100%", 0, true },
	{ "0.0%", 0, false }, { "00%", 0, false }, { "100.0%", 0, false }, { "-0%", 0, false },
	{ "101%", -ERANGE, false }, { "-1%", -ERANGE, false }, { "inf%", -ERANGE, false },
	{ "-inf%", -ERANGE, false },
	/* NaN passes the kubelet's two checks and then has no value; refused (README). */
	{ "NaN%", -EINVAL, false },
	{ "100Mi", 0, false }, { "-1", -ERANGE, false }, { " 1Gi", -EINVAL, false },
	{ "1Gi ", -EINVAL, false }, { "", -EINVAL, false },
	/* Beyond int64: capped, a threshold that is always met (ParseQuantity keeps it). */
	{ "100E", 0, false },
};

static void test_threshold_statement_values(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(statement_cases); i++) {
		const struct statement_case *c = &statement_cases[i];
		struct threshold_value value;
		bool disabled = !c->disabled;
		int err = threshold_value_parse(c->text, &value, &disabled);

		if (err != c->err || (!err && disabled != c->disabled))
			fail_msg("\"%s\": err %d disabled %d", c->text, err, disabled);
	}
	{
		struct threshold_value value;
		bool disabled;

		assert_int_equal(threshold_value_parse("100E", &value, &disabled), 0);
		assert_int_equal(value.quantity, INT64_MAX);
		assert_int_equal(threshold_value_parse("-0%", &value, &disabled), 0);
		assert_int_equal(threshold_value_resolve(&value, 1LL << 30), 0);
	}
}

static void test_min_reclaim_values(void **state)
{
	struct threshold_value value;

	assert_int_equal(min_reclaim_parse("0%", &value), -ERANGE);
	assert_int_equal(min_reclaim_parse("-5%", &value), -ERANGE);
	assert_int_equal(min_reclaim_parse("NaN%", &value), -EINVAL);
	assert_int_equal(min_reclaim_parse("250%", &value), 0);
	assert_true(value.is_percentage && value.percentage == 2.5f);
	assert_int_equal(min_reclaim_parse("100%", &value), 0);
	assert_true(value.is_percentage && value.percentage == 1.0f);
	assert_int_equal(min_reclaim_parse("0", &value), 0);
	assert_int_equal(value.quantity, 0);
	assert_int_equal(min_reclaim_parse("Mi", &value), 0);	/* an empty number is 0 */
	assert_int_equal(value.quantity, 0);
	assert_int_equal(min_reclaim_parse("-1", &value), -ERANGE);
	assert_int_equal(min_reclaim_parse("lots", &value), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_threshold_config_table),
		cmocka_unit_test(test_map_flags_merge_like_component_base),
		cmocka_unit_test(test_flags_replace_the_file_map_then_merge),
		cmocka_unit_test(test_defaults_and_merge_default_eviction_settings),
		cmocka_unit_test(test_merge_default_eviction_settings_from_yaml),
		cmocka_unit_test(test_zero_transition_period_in_a_file_is_defaulted),
		cmocka_unit_test(test_null_and_empty_eviction_hard),
		cmocka_unit_test(test_allocatable_follows_hard_memory),
		cmocka_unit_test(test_allocatable_from_yaml_list),
		cmocka_unit_test(test_config_dir_dropins),
		cmocka_unit_test(test_kubelet_process_flags),
		cmocka_unit_test(test_kubelet_process_auto_trust),
		cmocka_unit_test(test_config_dir_limits),
		cmocka_unit_test(test_kubelet_process_huge_cmdline),
		cmocka_unit_test(test_pod_level_resources_zero_ephemeral_requests),
		cmocka_unit_test(test_percentage_parse_like_parse_float),
		cmocka_unit_test(test_threshold_statement_values),
		cmocka_unit_test(test_min_reclaim_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
