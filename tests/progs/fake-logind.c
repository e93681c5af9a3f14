// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fake-logind: a stand-in for systemd-logind on a private bus, for the CLI tests. It owns
 * org.freedesktop.login1 on the bus at $DBUS_SYSTEM_BUS_ADDRESS and
 *   --silent          takes every method call and never answers (a logind that hangs);
 *   otherwise         answers Inhibit with a pipe's write end and InhibitDelayMaxUSec with
 *                     --delay seconds (default 60), and prints "lock-held" when the delay
 *                     inhibitor is taken, "lock-released" when evictd closes it;
 *   --prepare-after S emits PrepareForShutdown(true) S seconds after the lock was taken and
 *                     prints "prepare-for-shutdown".
 * Every line goes to stdout, flushed. It runs until SIGTERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

static bool silent;
static uint64_t delay_s = 60;
static int lock_fd = -1;
static double lock_at;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void say(const char *what)
{
	printf("%s\n", what);
	fflush(stdout);
}

static int filter(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	uint8_t type = 0;
	int fds[2];

	if (sd_bus_message_get_type(m, &type) < 0 || type != SD_BUS_MESSAGE_METHOD_CALL)
		return 0;
	if (silent) {
		say("call-ignored");
		return 1;	/* taken; no reply, ever */
	}
	if (sd_bus_message_is_method_call(m, "org.freedesktop.login1.Manager", "Inhibit")) {
		if (pipe2(fds, O_CLOEXEC))
			return sd_bus_reply_method_errno(m, errno, NULL);
		sd_bus_reply_method_return(m, "h", fds[1]);
		close(fds[1]);
		if (lock_fd >= 0)
			close(lock_fd);
		lock_fd = fds[0];
		lock_at = now_s();
		say("lock-held");
		return 1;
	}
	if (sd_bus_message_is_method_call(m, "org.freedesktop.DBus.Properties", "Get")) {
		sd_bus_reply_method_return(m, "v", "t", delay_s * 1000000);
		return 1;
	}
	if (sd_bus_message_is_method_call(m, "org.freedesktop.DBus.Properties", "GetAll") ||
	    sd_bus_message_is_method_call(m, "org.freedesktop.login1.Manager", "KillUnit")) {
		sd_bus_reply_method_return(m, "");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	double prepare_after = -1;
	bool prepared = false;
	sd_bus *bus = NULL;
	const char *address = getenv("DBUS_SYSTEM_BUS_ADDRESS");

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--silent"))
			silent = true;
		else if (!strcmp(argv[i], "--delay") && i + 1 < argc)
			delay_s = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--prepare-after") && i + 1 < argc)
			prepare_after = atof(argv[++i]);
		else {
			fprintf(stderr, "usage: fake-logind [--silent] [--delay S] [--prepare-after S]\n");
			return 2;
		}
	}
	if (!address || sd_bus_new(&bus) < 0 || sd_bus_set_address(bus, address) < 0 ||
	    sd_bus_set_bus_client(bus, 1) < 0 || sd_bus_start(bus) < 0 ||
	    sd_bus_request_name(bus, "org.freedesktop.login1", 0) < 0 ||
	    sd_bus_add_filter(bus, NULL, filter, NULL) < 0) {
		fprintf(stderr, "fake-logind: cannot take org.freedesktop.login1 on %s\n", address ? address : "(unset)");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	say("ready");
	for (;;) {
		struct pollfd pfds[2] = { { .fd = sd_bus_get_fd(bus), .events = POLLIN },
					  { .fd = lock_fd, .events = POLLIN } };

		poll(pfds, lock_fd >= 0 ? 2 : 1, 50);
		while (sd_bus_process(bus, NULL) > 0)
			;
		if (lock_fd >= 0 && (pfds[1].revents & (POLLHUP | POLLERR))) {
			close(lock_fd);
			lock_fd = -1;
			say("lock-released");
		}
		if (!prepared && prepare_after >= 0 && lock_fd >= 0 && now_s() - lock_at >= prepare_after) {
			sd_bus_emit_signal(bus, "/org/freedesktop/login1", "org.freedesktop.login1.Manager",
					   "PrepareForShutdown", "b", 1);
			sd_bus_flush(bus);
			prepared = true;
			say("prepare-for-shutdown");
		}
	}
}
