// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Reading the kernel's files for the signal readers: every path under the root prefix,
 * small files through sys/fileio, memory.stat and meminfo streamed by key. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>	/* snprintf only */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "signals/parts.h"
#include "sys/fileio.h"

/* "", "/" and NULL all mean the real machine; trailing slashes are dropped so joins stay
 * clean. */
int sig_root_len(const char *root)
{
	size_t len = root ? strlen(root) : 0;

	while (len > 0 && root[len - 1] == '/')
		len--;
	return len > INT_MAX ? INT_MAX : (int)len;
}

bool sig_root_is_host(const char *root)
{
	return sig_root_len(root) == 0;
}

/* root + dir [+ "/" + file]; dir is taken as relative to root whether or not it starts
 * with '/'. */
int sig_path_join(char *buf, size_t size, const char *root, const char *dir, const char *file)
{
	int n = snprintf(buf, size, "%.*s%s%s%s%s", sig_root_len(root), root ? root : "",
			 dir[0] == '/' ? "" : "/", dir, file ? "/" : "", file ? file : "");

	if (n < 0 || (size_t)n >= size) {
		log_fail("path too long: %s%s%s%s", root ? root : "", dir, file ? "/" : "",
			 file ? file : "");
		return -ENAMETOOLONG;
	}
	return 0;
}

/* dir + "/" + file, for dirs already joined under root (the detected memory dir). */
int sig_path_in(char *buf, size_t size, const char *dir, const char *file)
{
	int n = snprintf(buf, size, "%s/%s", dir, file);

	if (n < 0 || (size_t)n >= size) {
		log_fail("path too long: %s/%s", dir, file);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* A small file (one number, a controller list) into buf, NUL-terminated. Silent: used for
 * probing too. Returns the length or -errno, with errno set for %m. */
ssize_t sig_read_small(const char *path, char *buf, size_t size)
{
	ssize_t len = fileio_read_at(AT_FDCWD, path, buf, size);

	if (len < 0)
		errno = (int)-len;
	return len;
}

/* A non-negative decimal (the kernel prints these counters unsigned), then nothing but
 * blanks and, if given, the unit ("kB" in meminfo). */
int sig_parse_count(const char *text, const char *unit, int64_t *value)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(text, &end, 10);
	if (end == text || errno || v < 0)
		return -EINVAL;
	end += strspn(end, " \t\n");
	if (unit && strncmp(end, unit, strlen(unit)) == 0)
		end += strlen(unit) + strspn(end + strlen(unit), " \t\n");
	if (*end)
		return -EINVAL;
	*value = v;
	return 0;
}

/* A file holding one number (memory.usage_in_bytes, pid_max), unlogged: -errno (errno
 * kept for %m) or -EINVAL with the text left in buf for the message. */
int sig_read_int64_quiet(const char *path, int64_t *value, char *buf, size_t size)
{
	ssize_t len = sig_read_small(path, buf, size);

	if (len < 0)
		return (int)len;
	if (sig_parse_count(buf, NULL, value)) {
		buf[strcspn(buf, "\n")] = '\0';
		return -EINVAL;
	}
	return 0;
}

void sig_log_int64_failure(const char *path, int err, const char *text)
{
	errno = -err;
	if (err == -EINVAL)
		log_fail("%s: not a number: \"%.20s\"", path, text);
	else
		log_fail("read %s: %m", path);
}

int sig_read_int64(const char *path, int64_t *value)
{
	char buf[64];
	int err = sig_read_int64_quiet(path, value, buf, sizeof(buf));

	if (err)
		sig_log_int64_failure(path, err, buf);
	return err;
}

/* Returns true when every key was seen and the read can stop. */
static bool key_scan_line(struct key_scan *scan, const char *line, size_t len)
{
	for (unsigned i = 0; i < scan->nkeys; i++) {
		size_t key_len = strlen(scan->keys[i]);

		if (scan->found & (1u << i) || len <= key_len || line[key_len] != scan->sep ||
		    memcmp(line, scan->keys[i], key_len) != 0)
			continue;
		if (sig_parse_count(line + key_len + 1, scan->unit, &scan->values[i]) && !scan->bad_key)
			scan->bad_key = scan->keys[i];
		scan->found |= 1u << i;
		break;
	}
	return scan->found == (1u << scan->nkeys) - 1;
}

/* Stream the file line by line through a stack buffer, so a memory.stat of any length
 * parses without allocating; stops early once every key was seen. */
int sig_scan_keys(const char *path, struct key_scan *scan)
{
	char buf[4096 + 1];	/* +1: room to terminate a last line without '\n' */
	size_t have = 0;
	bool overlong = false;	/* dropping the rest of a line longer than buf */
	int fd, err;

	scan->found = 0;
	scan->bad_key = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		log_fail("open %s: %m", path);
		return -err;
	}
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		size_t start = 0;
		char *nl;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = errno;
			log_fail("read %s: %m", path);
			close(fd);
			return -err;
		}
		if (n == 0)
			break;
		have += (size_t)n;
		while ((nl = memchr(buf + start, '\n', have - start))) {
			size_t len = (size_t)(nl - (buf + start));

			*nl = '\0';
			if (!overlong && key_scan_line(scan, buf + start, len))
				goto done;
			overlong = false;
			start += len + 1;
		}
		memmove(buf, buf + start, have - start);
		have -= start;
		if (have == sizeof(buf) - 1) {
			have = 0;
			overlong = true;
		}
	}
	if (have > 0 && !overlong) {
		buf[have] = '\0';
		key_scan_line(scan, buf, have);
	}
done:
	close(fd);
	if (scan->bad_key) {
		log_fail("%s: bad value for %s", path, scan->bad_key);
		return -EINVAL;
	}
	return 0;
}

