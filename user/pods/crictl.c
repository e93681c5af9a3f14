// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Running `crictl stats -o json` (bounded in time and output) and reading its answer. */
#include <errno.h>
#include <fcntl.h>
#include <json.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sys/cgroupfs.h"
#include "sys/clock.h"
#include "pods/internal.h"
#include "pods/crictl.h"

int pods_crictl_resolve(const char *name, char *buf, size_t len)
{
	const char *path_env = getenv("PATH"), *dir;

	if (strchr(name, '/')) {
		if (snprintf(buf, len, "%s", name) >= (int)len)
			return -ENAMETOOLONG;
		return access(buf, X_OK) ? -errno : 0;
	}
	if (!path_env)
		return -ENOENT;
	for (dir = path_env; ; ) {
		const char *end = strchr(dir, ':');
		size_t n = end ? (size_t)(end - dir) : strlen(dir);

		if (n && (size_t)snprintf(buf, len, "%.*s/%s", (int)n, dir, name) < len &&
		    access(buf, X_OK) == 0)
			return 0;
		if (!end)
			return -ENOENT;
		dir = end + 1;
	}
}

/* SIGKILL the child's group and reap it, waiting at most PODS_CRICTL_REAP_NS: a child in
 * uninterruptible sleep (D state, e.g. on a hung runtime socket's filesystem) dies only when
 * the kernel lets it, and the caller must not wait for that. 0 reaped, else -ETIMEDOUT. */
static int kill_and_reap(pid_t pid, int *wstatus)
{
	int64_t deadline = clock_monotonic_ns() + PODS_CRICTL_REAP_NS;

	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	for (;;) {
		pid_t r = waitpid(pid, wstatus, WNOHANG);

		if (r == pid || (r < 0 && errno != EINTR))
			return 0;	/* reaped, or not our child any more (ECHILD) */
		if (clock_monotonic_ns() >= deadline)
			return -ETIMEDOUT;
		usleep(5000);
	}
}

int pods_run_capture(char *const argv[], int64_t timeout_ns, size_t max_out, const int *stop,
		     char **out, size_t *out_len, char *err_tail, size_t err_len, int *status,
		     pid_t *unreaped)
{
	posix_spawn_file_actions_t actions;
	posix_spawnattr_t attr;
	int out_pipe[2] = { -1, -1 }, err_pipe[2] = { -1, -1 };
	int64_t deadline = clock_monotonic_ns() + timeout_ns;
	size_t len = 0, cap = 0, tail = 0;
	char *buf = NULL;
	int err = 0, wstatus = 0;
	bool reaped = false;
	pid_t pid;

	*out = NULL;
	*out_len = 0;
	*unreaped = 0;
	if (err_len)
		err_tail[0] = '\0';
	if (pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC)) {
		err = -errno;
		goto close_pipes;
	}
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
	posix_spawnattr_init(&attr);
	/* Own process group: a timeout kills whatever it started too. Default signal
	 * dispositions and an empty mask, whatever the daemon blocks or ignores. */
	{
		sigset_t none, all;

		sigemptyset(&none);
		sigfillset(&all);
		posix_spawnattr_setsigmask(&attr, &none);
		posix_spawnattr_setsigdefault(&attr, &all);
	}
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
					POSIX_SPAWN_SETSIGDEF);
	err = -posix_spawn(&pid, argv[0], &actions, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	posix_spawnattr_destroy(&attr);
	if (err)
		goto close_pipes;
	close(out_pipe[1]);
	close(err_pipe[1]);
	out_pipe[1] = err_pipe[1] = -1;

	while (out_pipe[0] >= 0 || err_pipe[0] >= 0 || !reaped) {
		struct pollfd pfds[2] = {
			{ .fd = out_pipe[0], .events = POLLIN },
			{ .fd = err_pipe[0], .events = POLLIN },
		};
		int64_t remaining = deadline - clock_monotonic_ns();
		char chunk[4096];

		if (remaining <= 0) {
			err = -ETIMEDOUT;
			break;
		}
		if (stop && __atomic_load_n(stop, __ATOMIC_RELAXED)) {
			err = -ECANCELED;
			break;
		}
		/* Wake at least every 100 ms to see *stop. */
		if (remaining > 100000000)
			remaining = 100000000;
		if (out_pipe[0] < 0 && err_pipe[0] < 0) {
			/* Both pipes closed: wait for the exit, still bounded by the deadline. */
			pid_t r = waitpid(pid, &wstatus, WNOHANG);

			if (r == pid || (r < 0 && errno != EINTR)) {
				reaped = true;
				if (r < 0)
					err = -ECHILD;
				break;
			}
			usleep(remaining > 10000000 ? 10000 : (useconds_t)(remaining / 1000 + 1));
			continue;
		}
		if (poll(pfds, 2, (int)(remaining / 1000000 + 1)) < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (pfds[0].revents) {
			ssize_t n;

			if (cap - len < sizeof(chunk) + 1) {
				size_t grown = cap ? cap * 2 : 65536;
				char *next;

				if (grown > max_out + sizeof(chunk) + 1)
					grown = max_out + sizeof(chunk) + 1;
				next = grown > cap ? realloc(buf, grown) : NULL;
				if (!next) {
					err = grown > cap ? -ENOMEM : -E2BIG;
					break;
				}
				buf = next;
				cap = grown;
			}
			n = read(out_pipe[0], buf + len, sizeof(chunk));
			if (n > 0) {
				len += (size_t)n;
				if (len > max_out) {
					err = -E2BIG;
					break;
				}
			} else if (n == 0 || errno != EINTR) {
				close(out_pipe[0]);
				out_pipe[0] = -1;
			}
		}
		if (pfds[1].revents) {
			ssize_t n = read(err_pipe[0], chunk, sizeof(chunk));

			if (n > 0 && err_len > 1) {
				/* Keep the last err_len - 1 bytes. */
				size_t keep = (size_t)n < err_len - 1 ? (size_t)n : err_len - 1;

				if (tail + keep > err_len - 1) {
					size_t drop = tail + keep - (err_len - 1);

					memmove(err_tail, err_tail + drop, tail - drop);
					tail -= drop;
				}
				memcpy(err_tail + tail, chunk + n - keep, keep);
				tail += keep;
				err_tail[tail] = '\0';
			} else if (n == 0 || (n < 0 && errno != EINTR)) {
				close(err_pipe[0]);
				err_pipe[0] = -1;
			}
		}
	}
	/* Only reached with err set: the loop ends without reaping only through a break. */
	if (!reaped && kill_and_reap(pid, &wstatus))
		*unreaped = pid;
	if (!err) {
		*status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) :
			  WIFSIGNALED(wstatus) ? 128 + WTERMSIG(wstatus) : 255;
		if (!buf)
			buf = malloc(1);
		if (!buf) {
			err = -ENOMEM;
		} else {
			buf[len] = '\0';
			*out = buf;
			*out_len = len;
			buf = NULL;
		}
	}
close_pipes:
	for (int i = 0; i < 2; i++) {
		if (out_pipe[i] >= 0)
			close(out_pipe[i]);
		if (err_pipe[i] >= 0)
			close(err_pipe[i]);
	}
	free(buf);
	return err;
}

/* A CRI UInt64Value ({"value": "123"}: protojson writes 64-bit integers as strings; older
 * jsonpb builds may write numbers). Absent = 0; anything else = -EINVAL. */
static int cri_uint64(struct json_object *parent, const char *camel, const char *snake, int64_t *out)
{
	struct json_object *wrapper = NULL, *value = NULL;

	*out = 0;
	if ((!json_object_object_get_ex(parent, camel, &wrapper) || !wrapper) &&
	    (!json_object_object_get_ex(parent, snake, &wrapper) || !wrapper))
		return 0;
	if (!json_object_is_type(wrapper, json_type_object))
		return -EINVAL;
	if (!json_object_object_get_ex(wrapper, "value", &value) || !value)
		return 0;	/* EmitDefaults of a zero wrapper: {} or value absent */
	if (json_object_is_type(value, json_type_int)) {
		int64_t v = json_object_get_int64(value);

		if (v < 0 || v == INT64_MAX)
			return -EINVAL;
		*out = v;
		return 0;
	}
	if (json_object_is_type(value, json_type_string))
		return cgroupfs_parse_u64_text(json_object_get_string(value), out);
	return -EINVAL;
}

int pods_crictl_parse_stats(const char *json, size_t len, pods_crictl_add_fn add, void *ctx)
{
	struct json_object *doc, *stats;
	struct json_tokener *tok;
	int attributed = 0;
	size_t end;

	if (len > INT32_MAX)
		return -EINVAL;
	tok = json_tokener_new_ex(32);
	if (!tok)
		return -ENOMEM;
	doc = json_tokener_parse_ex(tok, json, (int)len);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	while (doc && end < len && (json[end] == ' ' || json[end] == '\n' || json[end] == '\r' ||
				    json[end] == '\t'))
		end++;
	if (!doc || end < len || !json_object_is_type(doc, json_type_object)) {
		json_object_put(doc);
		return -EINVAL;
	}
	/* No container at all: {"stats": []}, or {} when nothing was emitted. */
	if (!json_object_object_get_ex(doc, "stats", &stats) || !stats) {
		json_object_put(doc);
		return 0;
	}
	if (!json_object_is_type(stats, json_type_array)) {
		json_object_put(doc);
		return -EINVAL;
	}
	for (size_t i = 0; i < json_object_array_length(stats); i++) {
		struct json_object *item = json_object_array_get_idx(stats, i);
		struct json_object *attributes, *labels, *uid, *layer = NULL;
		int64_t used, inodes;

		if (!json_object_is_type(item, json_type_object) ||
		    !json_object_object_get_ex(item, "attributes", &attributes) ||
		    !json_object_is_type(attributes, json_type_object) ||
		    !json_object_object_get_ex(attributes, "labels", &labels) ||
		    !json_object_is_type(labels, json_type_object) ||
		    !json_object_object_get_ex(labels, "io.kubernetes.pod.uid", &uid) ||
		    !json_object_is_type(uid, json_type_string))
			continue;	/* not a Kubernetes container */
		if ((!json_object_object_get_ex(item, "writableLayer", &layer) || !layer) &&
		    (!json_object_object_get_ex(item, "writable_layer", &layer) || !layer)) {
			/* The runtime reports no layer: 0, as for the kubelet. */
			used = inodes = 0;
		} else if (!json_object_is_type(layer, json_type_object) ||
			   cri_uint64(layer, "usedBytes", "used_bytes", &used) ||
			   cri_uint64(layer, "inodesUsed", "inodes_used", &inodes)) {
			json_object_put(doc);
			return -EINVAL;
		}
		if (add(ctx, json_object_get_string(uid), used, inodes))
			attributed++;
	}
	json_object_put(doc);
	return attributed;
}
