// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Soft graces across restarts (act/grace_store.h; doc/DESIGN.md §6 Killing). Without it a
 * restart during a grace granted a fresh full one: a victim ignoring SIGTERM died 13.5 s
 * after its first SIGTERM with an 8 s grace. One small file per eviction, keyed by the
 * cgroup id (an inode number, never reused within a boot), read only when an eviction
 * starts: nothing here is on a hot path.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "act/grace_store.h"
#include "sys/fileio.h"
#include "sys/log.h"

struct grace_store {
	char dir[PATH_MAX];		/* <state-dir>/grace */
	char boot_id[BOOT_ID_LEN];
};

int grace_store_open(struct grace_store **out, const char *dir, const char *boot_id)
{
	struct grace_store *store;
	int err;

	if (!out || !dir || !dir[0])
		return -EINVAL;
	*out = NULL;
	store = calloc(1, sizeof(*store));
	if (!store)
		return -ENOMEM;
	if ((size_t)snprintf(store->dir, sizeof(store->dir), "%s/grace", dir) >= sizeof(store->dir)) {
		free(store);
		return -ENAMETOOLONG;
	}
	if (boot_id)
		snprintf(store->boot_id, sizeof(store->boot_id), "%s", boot_id);
	err = boot_id ? 0 : boot_id_read(store->boot_id, sizeof(store->boot_id));
	if (!err)
		err = fileio_mkdir_p(store->dir, 0700);
	if (err) {
		errno = -err;
		log_err("grace store %s: %m; a restart will grant soft evictions a full grace again",
			store->dir);
		free(store);
		return err;
	}
	*out = store;
	return 0;
}

void grace_store_close(struct grace_store *store)
{
	free(store);
}

static void entry_path(const struct grace_store *store, uint64_t id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%" PRIu64, store->dir, id);
}

int grace_store_record(struct grace_store *store, uint64_t cgroup_id, const char *path,
		       int64_t sigterm_boottime_ns, int64_t grace_ns)
{
	char file[PATH_MAX + 32], tmp[PATH_MAX + 48], text[PATH_MAX + 256];
	int fd, n, err = 0;

	if (!store || !path || strchr(path, '\n'))
		return -EINVAL;
	entry_path(store, cgroup_id, file, sizeof(file));
	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	n = snprintf(text, sizeof(text), "boot_id %s\ncgroup_id %" PRIu64 "\nsigterm_boottime_ns %"
		     PRId64 "\ngrace_ns %" PRId64 "\npath %s\n", store->boot_id, cgroup_id,
		     sigterm_boottime_ns, grace_ns, path);
	if (n < 0 || (size_t)n >= sizeof(text))
		return -ENAMETOOLONG;
	/* No fsync: it must outlive evictd, not the machine (a reboot voids it anyway). */
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		err = -errno;
	else {
		if (write(fd, text, (size_t)n) != n)
			err = errno ? -errno : -EIO;
		if (close(fd) && !err)
			err = -errno;
		if (!err && rename(tmp, file))
			err = -errno;
		if (err)
			unlink(tmp);
	}
	if (err) {
		errno = -err;
		log_err("grace store: writing %s: %m", file);
	}
	return err;
}

int grace_store_forget(struct grace_store *store, uint64_t cgroup_id)
{
	char file[PATH_MAX + 32];

	if (!store)
		return -EINVAL;
	entry_path(store, cgroup_id, file, sizeof(file));
	if (unlink(file)) {
		if (errno != ENOENT)
			log_warn("grace store: removing %s: %m", file);
		return -errno;
	}
	return 0;
}

bool grace_store_remaining(struct grace_store *store, uint64_t cgroup_id, int64_t now_boottime_ns,
			   int64_t grace_ns, int64_t *remaining)
{
	char file[PATH_MAX + 32], text[PATH_MAX + 256], boot_id[BOOT_ID_LEN];
	long long sigterm, recorded_grace;
	unsigned long long id;
	int64_t left;

	if (!store || !remaining)
		return false;
	entry_path(store, cgroup_id, file, sizeof(file));
	if (fileio_read_at(AT_FDCWD, file, text, sizeof(text)) < 0)
		return false;
	if (sscanf(text, "boot_id %36s\ncgroup_id %llu\nsigterm_boottime_ns %lld\ngrace_ns %lld",
		   boot_id, &id, &sigterm, &recorded_grace) != 4 || id != cgroup_id ||
	    strcmp(boot_id, store->boot_id) || sigterm < 0 || recorded_grace < 0) {
		/* Another boot's (CLOCK_BOOTTIME started again) or garbage: void. */
		unlink(file);
		return false;
	}
	left = sigterm > INT64_MAX - recorded_grace ? INT64_MAX : sigterm + recorded_grace;
	left = left > now_boottime_ns ? left - now_boottime_ns : 0;
	*remaining = left < grace_ns ? left : grace_ns;
	if (*remaining < 0)
		*remaining = 0;
	return true;
}

int64_t grace_store_begin(struct grace_store *store, uint64_t cgroup_id, const char *path,
			  int64_t grace_ns, bool dry_run)
{
	int64_t now = clock_boottime_ns(), remaining;

	if (!store || grace_ns <= 0)
		return grace_ns;
	if (grace_store_remaining(store, cgroup_id, now, grace_ns, &remaining)) {
		log_info("%s: in its grace before evictd restarted: %.1f s of it left", path,
			 (double)remaining / 1e9);
		return remaining;	/* the entry stays: it holds the first SIGTERM's time */
	}
	if (!dry_run)
		grace_store_record(store, cgroup_id, path, now, grace_ns);
	return grace_ns;
}
