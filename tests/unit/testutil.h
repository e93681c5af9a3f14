/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Helpers for tests that build fixture trees (proc, cgroup, sysfs) under a temp root. */
#ifndef EVICTD_TESTUTIL_H
#define EVICTD_TESTUTIL_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

/* Static fixtures live in tests/fixtures; tests run from the repository root. */
/* The source tree, made absolute by the Makefile: tests find their files from any directory. */
#ifndef EVICTD_SRCDIR
#define EVICTD_SRCDIR "."
#endif
#define FIXTURES_DIR EVICTD_SRCDIR "/tests/fixtures"

static inline void fixture_mkdirs(const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	assert_true(len < sizeof(buf));
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			fail_msg("mkdir %s: %s", buf, strerror(errno));
		*p = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		fail_msg("mkdir %s: %s", buf, strerror(errno));
}

/* Write root/relpath (creating parent dirs) from a printf format. */
static inline void __attribute__((format(printf, 3, 4)))
fixture_write(const char *root, const char *relpath, const char *fmt, ...)
{
	char path[PATH_MAX];
	char *slash;
	va_list ap;
	FILE *f;

	if (snprintf(path, sizeof(path), "%s/%s", root, relpath) >= (int)sizeof(path))
		fail_msg("fixture path too long: %s/%s", root, relpath);
	slash = strrchr(path, '/');
	*slash = '\0';
	fixture_mkdirs(path);
	*slash = '/';
	f = fopen(path, "w");
	if (!f)
		fail_msg("fopen %s: %s", path, strerror(errno));
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

/* A fresh empty directory under /tmp; buf must hold PATH_MAX. */
static inline void fixture_tmpdir(char *buf, const char *tag)
{
	snprintf(buf, PATH_MAX, "/tmp/evictd-test-%s-XXXXXX", tag);
	if (!mkdtemp(buf))
		fail_msg("mkdtemp %s: %s", buf, strerror(errno));
}

static inline int fixture_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	return remove(path);
}

static inline void fixture_rm_rf(const char *root)
{
	if (root && strncmp(root, "/tmp/evictd-test-", 17) == 0)
		nftw(root, fixture_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}


/* Dead within wait_ms: gone, or a zombie waiting for whoever inherited it to reap it. */
static inline bool process_gone(pid_t pid, int wait_ms)
{
	for (int i = 0; i <= wait_ms / 10; i++) {
		char path[64], text[512] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		f = fopen(path, "r");
		if (!f)
			return true;
		if (!fgets(text, sizeof(text), f))
			text[0] = '\0';
		fclose(f);
		if (strstr(text, ") Z "))
			return true;
		usleep(10000);
	}
	return false;
}

#endif
