/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Inside signals/: path joins under the root prefix, small-file and keyed-file reads, and the
 * failure logging shared by the memory, filesystem and pid readers. */
#ifndef EVICTD_SIGNALS_PARTS_H
#define EVICTD_SIGNALS_PARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "signals/signals.h"
#include "sys/log.h"

#define DEFAULT_KUBELET_DIR "/var/lib/kubelet"
#define DEFAULT_IMAGEFS_DIR "/var/lib/containerd"

/* A group that already failed last round logs at debug (signals.c group_begin). */
extern __thread bool signals_log_quietly;
#define log_fail(...) log_msg(signals_log_quietly ? LOGLEVEL_DEBUG : LOGLEVEL_ERR, __VA_ARGS__)

int sig_root_len(const char *root);
bool sig_root_is_host(const char *root);
int sig_path_join(char *buf, size_t size, const char *root, const char *dir, const char *file);
int sig_path_in(char *buf, size_t size, const char *dir, const char *file);
ssize_t sig_read_small(const char *path, char *buf, size_t size);
int sig_parse_count(const char *text, const char *unit, int64_t *value);
int sig_read_int64_quiet(const char *path, int64_t *value, char *buf, size_t size);
void sig_log_int64_failure(const char *path, int err, const char *text);
int sig_read_int64(const char *path, int64_t *value);

/* Keyed files: memory.stat ("key value") and meminfo ("Key:   value kB"). The caller's keys
 * must match a whole key, so "anon" never picks up "anon_thp". */
#define MAX_KEYS 8
struct key_scan {
	const char *keys[MAX_KEYS];
	unsigned nkeys;
	char sep;			/* what follows the key: ' ' or ':' */
	const char *unit;		/* optional unit after the value */
	int64_t values[MAX_KEYS];
	unsigned found;			/* bit i: keys[i] seen */
	const char *bad_key;		/* first key whose value did not parse */
};
int sig_scan_keys(const char *path, struct key_scan *scan);

/* meminfo, and the cgroup working set unless only the guard is wanted (memory.c). Without
 * want_guard, MemTotal may come from the last meminfo read and the guard is left as it was. */
int sig_read_memory_group(const struct signal_source *source, struct observations *obs,
			  bool want_cgroup, bool want_guard);
/* The memory cgroup layout, detected once per source and thread (memory.c); forget it when a
 * read under the found dir fails, so that the next read detects again. */
enum cgroup_layout sig_cached_layout(const struct signal_source *source, const char **memory_dir);
void sig_layout_forget(void);

static inline const char *nonempty_or(const char *text, const char *fallback)
{
	return text && text[0] ? text : fallback;
}

/* Unsigned counters (statvfs, meminfo kB) scaled into int64, clamped at INT64_MAX. */
static inline int64_t mul_clamp(uint64_t a, uint64_t b)
{
	uint64_t product;

	if (__builtin_mul_overflow(a, b, &product) || product > INT64_MAX)
		return INT64_MAX;
	return (int64_t)product;
}

#endif
