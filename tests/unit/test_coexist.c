// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* evictd beside the kubelet (config/coexist.c): configurations made from real YAML through the
 * same loader and finalize step as the daemon, then compared. Each clash the README names is
 * found, and one past each boundary (equal values, a longer grace) counts as a clash. */
#include "testutil.h"

#include "config/coexist.h"
#include "config/config.h"

#define KUBELET_HEADER "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

static struct evictd_config *config_from(const char *yaml)
{
	struct evictd_config *config = calloc(1, sizeof(*config));

	assert_non_null(config);
	config_init_defaults(config);
	assert_int_equal(config_load_yaml(config, yaml, strlen(yaml), "test"), 0);
	assert_int_equal(config_finalize(config), 0);
	return config;
}

static size_t compare(const char *evictd_yaml, const char *kubelet_yaml, const int64_t *capacity,
		      struct coexist_finding *out)
{
	struct evictd_config *evictd = config_from(evictd_yaml), *kubelet = config_from(kubelet_yaml);
	size_t n = coexist_compare(evictd, kubelet, capacity, out, COEXIST_MAX_FINDINGS);

	free(evictd);
	free(kubelet);
	return n;
}

static size_t count_kind(const struct coexist_finding *f, size_t n, enum coexist_kind kind)
{
	size_t count = 0;

	for (size_t i = 0; i < n; i++)
		count += f[i].kind == kind;
	return count;
}

static const struct coexist_finding *find(const struct coexist_finding *f, size_t n, enum coexist_kind kind,
					  enum ev_signal signal)
{
	for (size_t i = 0; i < n; i++)
		if (f[i].kind == kind && (kind <= COEXIST_SHUTDOWN_NEITHER || f[i].kubelet.signal == signal))
			return &f[i];
	return NULL;
}

/* The kubelet with nothing set keeps its default hard thresholds; evictd above all of them,
 * owning shutdown alone: no warning. */
static void test_above_the_kubelet_defaults_is_quiet(void **state)
{
	struct coexist_finding f[COEXIST_MAX_FINDINGS];
	size_t n = compare(KUBELET_HEADER "evictionHard:\n  memory.available: 500Mi\n  nodefs.available: 15%\n"
					  "  nodefs.inodesFree: 10%\n  imagefs.available: 20%\n  imagefs.inodesFree: 10%\n"
					  "shutdownGracePeriod: 30s\n",
			   KUBELET_HEADER "cgroupDriver: systemd\n", NULL, f);

	for (size_t i = 0; i < n; i++) {
		char line[512];

		coexist_format(&f[i], line, sizeof(line));
		assert_false(coexist_is_warning(&f[i]));
		fail_msg("unexpected finding: %s", line);
	}
}

static void test_both_run_graceful_shutdown(void **state)
{
	struct coexist_finding f[COEXIST_MAX_FINDINGS];
	size_t n = compare(KUBELET_HEADER "shutdownGracePeriod: 30s\n", KUBELET_HEADER "shutdownGracePeriod: 1m\n", NULL, f);
	char line[512];

	assert_non_null(find(f, n, COEXIST_SHUTDOWN_BOTH, 0));
	assert_true(coexist_is_warning(find(f, n, COEXIST_SHUTDOWN_BOTH, 0)));
	coexist_format(find(f, n, COEXIST_SHUTDOWN_BOTH, 0), line, sizeof(line));
	assert_non_null(strstr(line, "shutdownGracePeriod"));
	/* The priority form counts as configured too (shutdownGracePeriodByPodPriority). */
	n = compare(KUBELET_HEADER "shutdownGracePeriod: 30s\n",
		    KUBELET_HEADER "shutdownGracePeriodByPodPriority:\n- priority: 0\n  shutdownGracePeriodSeconds: 20\n",
		    NULL, f);
	assert_non_null(find(f, n, COEXIST_SHUTDOWN_BOTH, 0));
	/* One owner: no shutdown finding at all, whichever it is. */
	n = compare(KUBELET_HEADER, KUBELET_HEADER "shutdownGracePeriod: 1m\n", NULL, f);
	assert_int_equal(count_kind(f, n, COEXIST_SHUTDOWN_BOTH) + count_kind(f, n, COEXIST_SHUTDOWN_NEITHER), 0);
	n = compare(KUBELET_HEADER "shutdownGracePeriod: 30s\n", KUBELET_HEADER, NULL, f);
	assert_int_equal(count_kind(f, n, COEXIST_SHUTDOWN_BOTH) + count_kind(f, n, COEXIST_SHUTDOWN_NEITHER), 0);
	/* Neither: said, but not a warning. */
	n = compare(KUBELET_HEADER, KUBELET_HEADER, NULL, f);
	assert_non_null(find(f, n, COEXIST_SHUTDOWN_NEITHER, 0));
	assert_false(coexist_is_warning(find(f, n, COEXIST_SHUTDOWN_NEITHER, 0)));
}

/* Equal is not above (both evict at once), one byte more is. */
static void test_threshold_boundaries(void **state)
{
	struct coexist_finding f[COEXIST_MAX_FINDINGS];
	const struct coexist_finding *hit;
	size_t n;

	n = compare(KUBELET_HEADER "evictionHard:\n  memory.available: 100Mi\n",
		    KUBELET_HEADER "evictionHard:\n  memory.available: 100Mi\n", NULL, f);
	hit = find(f, n, COEXIST_NOT_ABOVE, EV_SIGNAL_MEMORY_AVAILABLE);
	assert_non_null(hit);
	assert_true(coexist_is_warning(hit));
	assert_string_equal(hit->evictd.value.text, "100Mi");
	n = compare(KUBELET_HEADER "evictionHard:\n  memory.available: \"104857601\"\n",
		    KUBELET_HEADER "evictionHard:\n  memory.available: 100Mi\n", NULL, f);
	assert_null(find(f, n, COEXIST_NOT_ABOVE, EV_SIGNAL_MEMORY_AVAILABLE));
	/* Percentages against percentages. */
	n = compare(KUBELET_HEADER "evictionHard:\n  nodefs.available: 9%\n",
		    KUBELET_HEADER "evictionHard:\n  nodefs.available: 10%\n", NULL, f);
	assert_non_null(find(f, n, COEXIST_NOT_ABOVE, EV_SIGNAL_NODEFS_AVAILABLE));
	n = compare(KUBELET_HEADER "evictionHard:\n  nodefs.available: 11%\n",
		    KUBELET_HEADER "evictionHard:\n  nodefs.available: 10%\n", NULL, f);
	assert_null(find(f, n, COEXIST_NOT_ABOVE, EV_SIGNAL_NODEFS_AVAILABLE));
}

/* A soft threshold of evictd's covers the kubelet's only with a grace no longer; a hard one
 * covers a soft one; a soft one never covers a hard one. */
/* Each side names its hard memory threshold: a soft threshold alone keeps the kubelet's five
 * default hard ones (v1beta1 defaults.go), which would be equal on both sides and clash. */
#define EV_HARD "evictionHard:\n  memory.available: 200Mi\n"
#define KL_HARD "evictionHard:\n  memory.available: 100Mi\n"

static void test_grace_periods(void **state)
{
	struct coexist_finding f[COEXIST_MAX_FINDINGS];
	size_t n;

	n = compare(KUBELET_HEADER EV_HARD "evictionSoft:\n  memory.available: 2Gi\nevictionSoftGracePeriod:\n  memory.available: 1m\n",
		    KUBELET_HEADER KL_HARD "evictionSoft:\n  memory.available: 1Gi\nevictionSoftGracePeriod:\n  memory.available: 1m\n",
		    NULL, f);
	assert_null(find(f, n, COEXIST_NOT_ABOVE, EV_SIGNAL_MEMORY_AVAILABLE));
	n = compare(KUBELET_HEADER EV_HARD "evictionSoft:\n  memory.available: 2Gi\nevictionSoftGracePeriod:\n  memory.available: 61s\n",
		    KUBELET_HEADER KL_HARD "evictionSoft:\n  memory.available: 1Gi\nevictionSoftGracePeriod:\n  memory.available: 1m\n",
		    NULL, f);
	assert_non_null(find(f, n, COEXIST_NOT_ABOVE, EV_SIGNAL_MEMORY_AVAILABLE));
	n = compare(KUBELET_HEADER "evictionHard:\n  memory.available: 2Gi\n",
		    KUBELET_HEADER KL_HARD "evictionSoft:\n  memory.available: 1Gi\nevictionSoftGracePeriod:\n  memory.available: 1m\n",
		    NULL, f);
	assert_null(find(f, n, COEXIST_NOT_ABOVE, EV_SIGNAL_MEMORY_AVAILABLE));
	n = compare(KUBELET_HEADER EV_HARD "evictionSoft:\n  memory.available: 2Gi\nevictionSoftGracePeriod:\n  memory.available: 1s\n",
		    KUBELET_HEADER "evictionHard:\n  memory.available: 1Gi\n", NULL, f);
	assert_non_null(find(f, n, COEXIST_NOT_ABOVE, EV_SIGNAL_MEMORY_AVAILABLE));
	/* Soft thresholds alone on both sides: the default hard memory.available<100Mi is on
	 * both, equal, and that is a clash. */
	n = compare(KUBELET_HEADER "evictionSoft:\n  memory.available: 2Gi\nevictionSoftGracePeriod:\n  memory.available: 1m\n",
		    KUBELET_HEADER "evictionSoft:\n  memory.available: 1Gi\nevictionSoftGracePeriod:\n  memory.available: 1m\n",
		    NULL, f);
	assert_non_null(find(f, n, COEXIST_NOT_ABOVE, EV_SIGNAL_MEMORY_AVAILABLE));
}

/* A kubelet threshold on a signal evictd does not watch, and a quantity against a percentage:
 * said as information, resolved when the capacity is known. */
static void test_other_signals_and_mixed_forms(void **state)
{
	struct coexist_finding f[COEXIST_MAX_FINDINGS];
	int64_t capacity[EV_SIGNAL_COUNT] = { 0 };
	const struct coexist_finding *hit;
	size_t n;

	n = compare(KUBELET_HEADER "evictionHard:\n  memory.available: 500Mi\n",
		    KUBELET_HEADER "evictionHard:\n  memory.available: 100Mi\n  pid.available: 5%\n", NULL, f);
	hit = find(f, n, COEXIST_KUBELET_ONLY, EV_SIGNAL_PID_AVAILABLE);
	assert_non_null(hit);
	assert_false(coexist_is_warning(hit));
	assert_false(hit->has_evictd);

	n = compare(KUBELET_HEADER "evictionHard:\n  nodefs.available: 20Gi\n",
		    KUBELET_HEADER "evictionHard:\n  nodefs.available: 10%\n", NULL, f);
	hit = find(f, n, COEXIST_UNCOMPARABLE, EV_SIGNAL_NODEFS_AVAILABLE);
	assert_non_null(hit);
	assert_false(coexist_is_warning(hit));
	capacity[EV_SIGNAL_NODEFS_AVAILABLE] = 100LL << 30;	/* 10% = 10Gi < 20Gi */
	n = compare(KUBELET_HEADER "evictionHard:\n  nodefs.available: 20Gi\n",
		    KUBELET_HEADER "evictionHard:\n  nodefs.available: 10%\n", capacity, f);
	assert_int_equal(count_kind(f, n, COEXIST_UNCOMPARABLE) + count_kind(f, n, COEXIST_NOT_ABOVE), 0);
	capacity[EV_SIGNAL_NODEFS_AVAILABLE] = 300LL << 30;	/* 10% = 30Gi > 20Gi */
	n = compare(KUBELET_HEADER "evictionHard:\n  nodefs.available: 20Gi\n",
		    KUBELET_HEADER "evictionHard:\n  nodefs.available: 10%\n", capacity, f);
	assert_non_null(find(f, n, COEXIST_NOT_ABOVE, EV_SIGNAL_NODEFS_AVAILABLE));
}

/* The file path: the kubelet's file read from disk, warnings counted; a missing file is no
 * clash; a file that is not YAML is an error, not a silent pass. */
static void test_check_kubelet_file(void **state)
{
	char dir[] = "/tmp/evictd-coexist-XXXXXX", path[PATH_MAX];
	struct evictd_config *evictd = config_from(KUBELET_HEADER "evictionHard:\n  memory.available: 100Mi\n"
								  "shutdownGracePeriod: 30s\n");

	assert_non_null(mkdtemp(dir));
	fixture_write(dir, "config.yaml", KUBELET_HEADER "shutdownGracePeriod: 1m\nevictionHard:\n  memory.available: 200Mi\n");
	snprintf(path, sizeof(path), "%s/config.yaml", dir);
	assert_int_equal(coexist_check_kubelet_file(evictd, path), 2);
	fixture_write(dir, "config.yaml", KUBELET_HEADER "evictionHard:\n  memory.available: 50Mi\n");
	assert_int_equal(coexist_check_kubelet_file(evictd, path), 0);
	fixture_write(dir, "config.yaml", "evictionHard: [unterminated\n");
	assert_true(coexist_check_kubelet_file(evictd, path) < 0);
	unlink(path);
	assert_int_equal(coexist_check_kubelet_file(evictd, path), -ENOENT);
	rmdir(dir);
	free(evictd);
}

/* Exactly one owner of graceful shutdown: the kubelet's file runs it, evictd's is turned off;
 * a kubelet file without it, or none, leaves evictd's alone. */
static void test_shutdown_owner(void **state)
{
	char dir[] = "/tmp/evictd-coexist-XXXXXX";
	struct evictd_config *evictd = config_from(KUBELET_HEADER "shutdownGracePeriod: 30s\n"
								  "shutdownGracePeriodCriticalPods: 10s\n");

	assert_non_null(mkdtemp(dir));
	assert_int_equal(evictd->shutdown_grace_period_ns, 30000000000ll);
	assert_int_equal(coexist_shutdown_owner(evictd), 0);	/* no --kubelet-config */
	assert_int_equal(evictd->shutdown_grace_period_ns, 30000000000ll);
	snprintf(evictd->kubelet_config, sizeof(evictd->kubelet_config), "%s/config.yaml", dir);
	fixture_write(dir, "config.yaml", KUBELET_HEADER "evictionHard:\n  memory.available: 50Mi\n");
	assert_int_equal(coexist_shutdown_owner(evictd), 0);
	assert_int_equal(evictd->shutdown_grace_period_ns, 30000000000ll);
	fixture_write(dir, "config.yaml", KUBELET_HEADER "shutdownGracePeriod: 20s\n");
	assert_int_equal(coexist_shutdown_owner(evictd), 0);
	assert_int_equal(evictd->shutdown_grace_period_ns, 0);
	assert_int_equal(evictd->shutdown_grace_period_critical_pods_ns, 0);
	assert_int_equal(evictd->n_shutdown_groups, 0);
	unlink(evictd->kubelet_config);
	rmdir(dir);
	free(evictd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_above_the_kubelet_defaults_is_quiet),
		cmocka_unit_test(test_both_run_graceful_shutdown),
		cmocka_unit_test(test_threshold_boundaries),
		cmocka_unit_test(test_grace_periods),
		cmocka_unit_test(test_other_signals_and_mixed_forms),
		cmocka_unit_test(test_check_kubelet_file),
		cmocka_unit_test(test_shutdown_owner),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
