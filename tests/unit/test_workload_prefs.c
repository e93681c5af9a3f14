// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Standalone workload preferences (doc/DESIGN.md §5, "Workload preferences") on fixture
 * trees with real user.* xattrs: systemd's user.oomd_avoid / user.oomd_omit under
 * systemd-oomd's ownership rule, workloadPreferences globs (name and path, first match per
 * field, surviving the cgroup's re-creation), their parsing, and the refusal of a workload
 * root that holds the host's own units.
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
#include "config/config.h"
#include "core/rank.h"
#include "pods/pods.h"
#include "pods/prefs.h"
#include "sys/log.h"

#define CG "sys/fs/cgroup"
#define MI (1024ll * 1024)

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	return remove(path);
}

/* A temp dir where user.* xattrs work (the disk temp dir, else tmpfs /dev/shm, which has
 * them since Linux 6.6), or skip saying why. */
static int setup_xattr_dir(void **state)
{
	static const char *const templates[] = { "/tmp/evictd-test-prefs-XXXXXX",
						  "/dev/shm/evictd-test-prefs-XXXXXX" };
	char *dir = malloc(PATH_MAX);

	if (!dir)
		return -1;
	for (size_t i = 0; i < 2; i++) {
		snprintf(dir, PATH_MAX, "%s", templates[i]);
		if (!mkdtemp(dir))
			continue;
		if (setxattr(dir, "user.evictd.probe", "1", 1, 0) == 0) {
			*state = dir;
			return 0;
		}
		rmdir(dir);
	}
	free(dir);
	*state = NULL;
	return 0;
}

static int teardown_dir(void **state)
{
	if (*state) {
		nftw(*state, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		free(*state);
	}
	return 0;
}

#define NEED_XATTRS(state)                                                                   \
	do {                                                                                 \
		if (!*(state)) {                                                             \
			print_message("no temp dir with user xattrs (/tmp, /dev/shm)\n");     \
			skip();                                                              \
		}                                                                            \
	} while (0)

static void workload(const char *root, const char *rel, long long current)
{
	char file[PATH_MAX];

	snprintf(file, sizeof(file), "%s/cgroup.procs", rel);
	fixture_write(root, file, "%s", "");
	snprintf(file, sizeof(file), "%s/memory.current", rel);
	fixture_write(root, file, "%lld\n", current);
	snprintf(file, sizeof(file), "%s/memory.stat", rel);
	fixture_write(root, file, "anon 1\ninactive_file 0\n");
	snprintf(file, sizeof(file), "%s/pids.current", rel);
	fixture_write(root, file, "1\n");
}

static void attr(const char *root, const char *rel, const char *name, const char *value)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s/%s", root, rel);
	if (setxattr(dir, name, value, strlen(value), 0))
		fail_msg("setxattr %s %s: %s", dir, name, strerror(errno));
}

static void owner(const char *root, const char *rel, uid_t uid)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s/%s", root, rel);
	if (chown(dir, uid, uid))
		fail_msg("chown %s: %s", dir, strerror(errno));
}

static struct pod *find(struct pod **list, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i]->name, name))
			return list[i];
	fail_msg("no workload %s", name);
	return NULL;
}

/* systemd-oomd's rule (src/oom/oomd-util.c oomd_fetch_cgroup_oom_preference): the xattrs of a
 * cgroup owned by root, or by the owner of the monitored cgroup above it, count; omit wins
 * over avoid; a value systemd's parse_boolean reads as false is no preference. */
static void test_oomd_xattrs_and_ownership(void **state)
{
	const char *roots[] = { "/system.slice", "/user.slice/user-1000.slice/user@1000.service/app.slice" };
	const char *root = *state;
	struct pods_options options = { .root = root, .workload_roots = roots, .n_workload_roots = 2 };
	struct pod *avoid, *omit, *both, *off, *plain, *foreign, *own, *prefer;
	struct pod **list;
	struct pods *pods;
	size_t n;

	NEED_XATTRS(state);
	if (geteuid() != 0) {
		print_message("not root: cannot chown a cgroup to another user\n");
		skip();
	}
	fixture_write(root, CG "/cgroup.controllers", "memory\n");
	workload(root, "system.slice/avoid.service", 10 * MI);
	workload(root, "system.slice/omit.service", 900 * MI);
	workload(root, "system.slice/both.service", 10 * MI);
	workload(root, "system.slice/off.service", 10 * MI);
	workload(root, "system.slice/plain.service", 10 * MI);
	workload(root, "system.slice/foreign.service", 10 * MI);
	workload(root, "user.slice/user-1000.slice/user@1000.service/app.slice/own.service", 10 * MI);
	workload(root, "user.slice/user-1000.slice/user@1000.service/app.slice/prefer.service", 5 * MI);
	attr(root, "system.slice/avoid.service", PODS_XATTR_OOMD_AVOID, "1");
	attr(root, "system.slice/omit.service", PODS_XATTR_OOMD_OMIT, "yes\n");
	attr(root, "system.slice/both.service", PODS_XATTR_OOMD_AVOID, "1");
	attr(root, "system.slice/both.service", PODS_XATTR_OOMD_OMIT, "true");
	attr(root, "system.slice/off.service", PODS_XATTR_OOMD_OMIT, "0");
	/* A delegated cgroup below a root-owned slice: its owner wrote omit, not trusted. */
	attr(root, "system.slice/foreign.service", PODS_XATTR_OOMD_OMIT, "1");
	owner(root, "system.slice/foreign.service", 1000);
	/* A user's manager: the slice and the unit belong to the same user, trusted. */
	owner(root, "user.slice/user-1000.slice/user@1000.service/app.slice", 1000);
	owner(root, "user.slice/user-1000.slice/user@1000.service/app.slice/own.service", 1000);
	attr(root, "user.slice/user-1000.slice/user@1000.service/app.slice/own.service",
	     PODS_XATTR_OOMD_OMIT, "1");
	attr(root, "system.slice/plain.service", PODS_XATTR_PRIORITY, "5");

	struct workload_prefs prefs = { .n = 1 };
	assert_int_equal(workload_pref_parse("test", "prefer.service=prefer", &prefs.items[0]), 0);
	options.workload_prefs = &prefs;
	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_refresh(pods), 0);
	list = pods_list(pods, &n);
	assert_int_equal(n, 8);
	avoid = find(list, n, "avoid.service");
	omit = find(list, n, "omit.service");
	both = find(list, n, "both.service");
	off = find(list, n, "off.service");
	plain = find(list, n, "plain.service");
	foreign = find(list, n, "foreign.service");
	own = find(list, n, "own.service");
	prefer = find(list, n, "prefer.service");

	assert_int_equal(avoid->preference, POD_PREF_AVOID);
	assert_int_equal(omit->preference, POD_PREF_NEVER);
	assert_true(pod_never_evict(omit));
	assert_non_null(strstr(pod_never_evict_reason(omit), "ManagedOOMPreference=omit"));
	assert_int_equal(both->preference, POD_PREF_NEVER);
	assert_int_equal(off->preference, POD_PREF_NONE);
	assert_int_equal(foreign->preference, POD_PREF_NONE);
	assert_false(pod_never_evict(foreign));
	assert_int_equal(own->preference, POD_PREF_NEVER);
	assert_int_equal(prefer->preference, POD_PREF_PREFER);

	/* Memory ranking: prefer first, whatever its usage; avoid after every other evictable
	 * one; omitted ones last (never evicted). Among the rest: priority, then usage. */
	rank_pods(EV_SIGNAL_MEMORY_AVAILABLE, NULL, list, n);
	assert_ptr_equal(list[0], prefer);
	assert_ptr_equal(list[3], plain);	/* priority 5 after off, foreign (0) */
	assert_ptr_equal(list[4], avoid);
	for (size_t i = 5; i < 8; i++)		/* omit, both, own */
		assert_true(pod_never_evict(list[i]));
	pods_close(pods);
}

/* Patterns: a name glob, a path glob ('*' crossing '/'), the first match per field, the
 * cgroup's own xattr over a pattern's priority, systemd's omit kept against "prefer", and
 * the match surviving the cgroup's re-creation (its xattrs gone, a new cgroup id). */
static void test_patterns_survive_recreation(void **state)
{
	const char *roots[] = { "/system.slice" };
	const char *root = *state;
	struct pods_options options = { .root = root, .workload_roots = roots, .n_workload_roots = 1 };
	static const char *const flags[] = {
		"sshd.service=never",
		"*/system.slice/web*.service=priority:-10,prefer",
		"*.service=priority:100,avoid",
		"db.service=priority:7",
	};
	struct workload_prefs prefs = { .n = 4 };
	struct pod *sshd, *web, *db, *cache, *guarded;
	char dir[PATH_MAX];
	uint64_t old_id;
	struct pod **list;
	struct pods *pods;
	size_t n;

	NEED_XATTRS(state);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(workload_pref_parse("--workload-preference", flags[i], &prefs.items[i]), 0);
	fixture_write(root, CG "/cgroup.controllers", "memory\n");
	workload(root, "system.slice/sshd.service", 10 * MI);
	workload(root, "system.slice/web1.service", 10 * MI);
	workload(root, "system.slice/db.service", 10 * MI);
	workload(root, "system.slice/cache.service", 10 * MI);
	workload(root, "system.slice/guarded.service", 10 * MI);
	attr(root, "system.slice/cache.service", PODS_XATTR_PRIORITY, "3");
	attr(root, "system.slice/guarded.service", PODS_XATTR_OOMD_OMIT, "1");
	options.workload_prefs = &prefs;
	assert_int_equal(pods_open(&pods, &options), 0);
	assert_int_equal(pods_refresh(pods), 0);
	list = pods_list(pods, &n);
	assert_int_equal(n, 5);
	sshd = find(list, n, "sshd.service");
	web = find(list, n, "web1.service");
	db = find(list, n, "db.service");
	cache = find(list, n, "cache.service");
	guarded = find(list, n, "guarded.service");

	assert_int_equal(sshd->preference, POD_PREF_NEVER);
	assert_true(pod_never_evict(sshd));
	assert_int_equal(sshd->priority, 100);		/* the first entry setting priority */
	assert_int_equal(web->preference, POD_PREF_PREFER);
	assert_int_equal(web->priority, -10);
	assert_int_equal(db->preference, POD_PREF_AVOID);
	assert_int_equal(db->priority, 100);		/* *.service came first */
	assert_int_equal(cache->priority, 3);		/* its own xattr wins */
	assert_int_equal(cache->preference, POD_PREF_AVOID);
	assert_int_equal(guarded->preference, POD_PREF_NEVER);	/* systemd's omit stays */

	/* systemd recreates the unit's cgroup: new id, no xattrs; the pattern still holds. */
	old_id = sshd->cgroup_id;
	snprintf(dir, sizeof(dir), "%s/system.slice/sshd.service", root);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	workload(root, "system.slice/sshd.service", 10 * MI);
	assert_int_equal(pods_refresh(pods), 0);
	list = pods_list(pods, &n);
	sshd = find(list, n, "sshd.service");
	if (sshd->cgroup_id == old_id)
		print_message("the filesystem reused the inode; the id check is moot\n");
	assert_true(pod_never_evict(sshd));
	pods_close(pods);
}

/* Pattern matching alone (no filesystem). */
static void test_pattern_matching(void **state)
{
	(void)state;
	assert_true(workload_pref_matches("*.service", "sshd.service", "system.slice/sshd.service"));
	assert_false(workload_pref_matches("*.service", "session-2.scope", "user.slice/session-2.scope"));
	/* Without a '/': the name only, never the path. */
	assert_false(workload_pref_matches("system.slice", "sshd.service", "system.slice/sshd.service"));
	/* With one: the whole path below the mount; a leading '/' is optional; '*' crosses '/'. */
	assert_true(workload_pref_matches("/system.slice/sshd.service", "sshd.service",
					  "system.slice/sshd.service"));
	assert_true(workload_pref_matches("*user@*.service/app.slice/app-firefox*", "app-firefox-12.scope",
					  "user.slice/user-1000.slice/user@1000.service/app.slice/app-firefox-12.scope"));
	assert_false(workload_pref_matches("user@*.service/app-firefox*", "app-firefox-12.scope",
					   "user.slice/user-1000.slice/user@1000.service/app.slice/app-firefox-12.scope"));
	assert_true(workload_pref_matches("app-[fg]*", "app-gimp.scope", "x/app-gimp.scope"));
}

/* The flag form and the YAML form, and what each refuses (one line each, exit 2). */
static void test_pref_parse_and_validate(void **state)
{
	static const char *const bad[] = {
		"sshd.service",			/* no setting */
		"=never",			/* no pattern */
		"a=sometimes",			/* unknown setting */
		"a=priority:high",		/* not a number */
		"a=priority:3000000000",	/* beyond int32 */
		"a=prefer,avoid",		/* two preferences */
		"app-[fg=prefer",		/* '[' without ']' */
	};
	static const char yaml_ok[] =
		"apiVersion: evictd.io/v1alpha1\nkind: EvictdConfiguration\nworkloadPreferences:\n"
		"- {match: \"*.service\", priority: 100}\n"
		"- {match: \"user@*.service/app-firefox*\", prefer: true}\n"
		"- {match: sshd.service, never: true}\n";
	static const char *const yaml_bad[] = {
		"apiVersion: evictd.io/v1alpha1\nkind: EvictdConfiguration\nworkloadPreferences:\n"
		"- {priority: 100}\n",
		"apiVersion: evictd.io/v1alpha1\nkind: EvictdConfiguration\nworkloadPreferences:\n"
		"- {match: a, prefer: maybe}\n",
		"apiVersion: evictd.io/v1alpha1\nkind: EvictdConfiguration\nworkloadPreferences:\n"
		"- {match: a, colour: red}\n",
		"apiVersion: evictd.io/v1alpha1\nkind: EvictdConfiguration\nworkloadPreferences: a\n",
	};
	struct evictd_config *config = calloc(1, sizeof(*config));
	struct workload_pref pref;

	(void)state;
	assert_non_null(config);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(workload_pref_parse("--workload-preference", bad[i], &pref), -EINVAL);
	assert_int_equal(workload_pref_parse("--workload-preference", "*.scope=priority:-3,avoid", &pref), 0);
	assert_string_equal(pref.match, "*.scope");
	assert_true(pref.has_priority);
	assert_int_equal(pref.priority, -3);
	assert_int_equal(pref.preference, POD_PREF_AVOID);

	config_init_defaults(config);
	assert_int_equal(config_load_yaml(config, yaml_ok, strlen(yaml_ok), "ok.yaml"), 0);
	assert_int_equal(config->workload_prefs.n, 3);
	assert_string_equal(config->workload_prefs.items[1].match, "user@*.service/app-firefox*");
	assert_int_equal(config->workload_prefs.items[1].preference, POD_PREF_PREFER);
	assert_int_equal(config->workload_prefs.items[2].preference, POD_PREF_NEVER);
	assert_int_equal(config->workload_prefs.items[0].priority, 100);
	/* The flag adds to what the file set. */
	assert_int_equal(config_apply_flag(config, "workload-preference", "x.service=avoid"), 0);
	assert_int_equal(config->workload_prefs.n, 4);
	for (size_t i = 0; i < sizeof(yaml_bad) / sizeof(yaml_bad[0]); i++) {
		config_init_defaults(config);
		assert_int_equal(config_load_yaml(config, yaml_bad[i], strlen(yaml_bad[i]), "bad.yaml"), -EINVAL);
	}
	free(config);
}

static int setup_tmp(void **state)
{
	char *dir = malloc(PATH_MAX);

	if (!dir)
		return -1;
	fixture_tmpdir(dir, "prefs-root");
	*state = dir;
	return 0;
}

/* A workload root that is a cgroup root (no cgroup.events: the hierarchy's root) or holds
 * the host's own units is refused, or warned about with --allow-host-units; a slice of
 * ordinary workloads passes. */
static void test_refuse_host_units(void **state)
{
	const char *root = *state;
	struct evictd_config *config = calloc(1, sizeof(*config));

	assert_non_null(config);
	config_init_defaults(config);
	snprintf(config->root, sizeof(config->root), "%s", root);
	/* The hierarchy's root: cgroup.procs but no cgroup.events. */
	fixture_write(root, "cg/cgroup.procs", "%s", "");
	fixture_write(root, "cg/batch.slice/cgroup.procs", "%s", "");
	fixture_write(root, "cg/batch.slice/cgroup.events", "populated 0\n");
	fixture_write(root, "cg/batch.slice/job1.service/cgroup.procs", "%s", "");
	fixture_write(root, "cg/batch.slice/job1.service/cgroup.events", "populated 0\n");
	/* A user manager: init.scope and session.slice below it. */
	fixture_write(root, "cg/user@1000.service/cgroup.procs", "%s", "");
	fixture_write(root, "cg/user@1000.service/cgroup.events", "populated 1\n");
	fixture_write(root, "cg/user@1000.service/init.scope/cgroup.procs", "%s", "");
	fixture_write(root, "cg/user@1000.service/session.slice/cgroup.procs", "%s", "");
	fixture_write(root, "cg/user@1000.service/app.slice/cgroup.procs", "%s", "");
	/* A slice holding system.slice (a nested host, or a mistake). */
	fixture_write(root, "cg/nested/cgroup.events", "populated 1\n");
	fixture_write(root, "cg/nested/cgroup.procs", "%s", "");
	fixture_write(root, "cg/nested/system.slice/cgroup.procs", "%s", "");

	assert_int_equal(config_check_host_units(config, "/cg"), -EINVAL);
	assert_int_equal(config_check_host_units(config, "/cg/user@1000.service"), -EINVAL);
	assert_int_equal(config_check_host_units(config, "/cg/nested"), -EINVAL);
	assert_int_equal(config_check_host_units(config, "/cg/batch.slice"), 0);
	config->allow_host_units = true;
	assert_int_equal(config_check_host_units(config, "/cg"), 0);
	assert_int_equal(config_check_host_units(config, "/cg/user@1000.service"), 0);
	free(config);
}

static int teardown_tmp(void **state)
{
	fixture_rm_rf(*state);
	free(*state);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_oomd_xattrs_and_ownership, setup_xattr_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_patterns_survive_recreation, setup_xattr_dir, teardown_dir),
		cmocka_unit_test(test_pattern_matching),
		cmocka_unit_test(test_pref_parse_and_validate),
		cmocka_unit_test_setup_teardown(test_refuse_host_units, setup_tmp, teardown_tmp),
	};

	log_set_level(LOGLEVEL_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
