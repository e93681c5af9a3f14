// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Children die with evictd (sys/subprocess.c, sys/subprocess_track.c). A stand-in "evictd"
 * (a forked process) starts a command and is SIGKILLed: the command's leader dies with it
 * (PR_SET_PDEATHSIG), and a grandchild it left (`sleep 60 &`) is killed by the next start
 * from the record in the state dir. A record naming a pid that is now another process (a
 * different start time) or written in another boot kills nothing. This test is the
 * subreaper of the orphans, so it can wait for them.
 */
#include "testutil.h"

#include <poll.h>
#include <signal.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "sys/boot.h"
#include "sys/log.h"
#include "sys/subprocess.h"

/* The pid a file will hold, within a bound against a hang. */
static pid_t wait_pid_file(const char *path)
{
	for (int i = 0; i < 1000; i++) {
		FILE *f = fopen(path, "r");
		int pid = 0;

		if (f) {
			if (fscanf(f, "%d", &pid) != 1)
				pid = 0;
			fclose(f);
		}
		if (pid > 0)
			return pid;
		usleep(10000);
	}
	fail_msg("no pid in %s", path);
	return -1;
}

/* true when pid ends within 10 s (a bound against a hang; it is SIGKILLed). Reaps it. */
static bool dies(pid_t pid)
{
	int fd = pidfd_open(pid, 0);
	struct pollfd p;
	bool gone;

	if (fd < 0)
		return errno == ESRCH;
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	gone = poll(&p, 1, 10000) == 1;
	close(fd);
	if (gone)
		waitpid(pid, NULL, 0);
	return gone;
}

/* A stand-in evictd: records children in dir (NULL: not) and runs command until killed. */
static pid_t fake_evictd(const char *dir, const char *command)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct subprocess_options o = { .shell_command = command, .timeout_ns = 120ll * 1000000000 };
		struct subprocess_result r;

		if (dir && subprocess_track(dir) < 0)
			_exit(3);
		subprocess_run_sync(&o, &r);
		_exit(0);
	}
	return pid;
}

static void test_leader_dies_with_evictd(void **state)
{
	char dir[PATH_MAX], cmd[PATH_MAX + 64], file[PATH_MAX + 16];
	pid_t evictd, leader;

	(void)state;
	fixture_tmpdir(dir, "track");
	snprintf(file, sizeof(file), "%s/leader.pid", dir);
	snprintf(cmd, sizeof(cmd), "echo $$ > %s; sleep 60; true", file);
	evictd = fake_evictd(NULL, cmd);
	leader = wait_pid_file(file);
	kill(evictd, SIGKILL);
	assert_int_equal(waitpid(evictd, NULL, 0), evictd);
	if (!dies(leader)) {
		kill(leader, SIGKILL);
		fail_msg("the command (pid %d) outlived evictd", (int)leader);
	}
	/* Its sleep, not recorded here, is ours to end (we are its subreaper). */
	kill(-leader, SIGKILL);
	while (waitpid(-leader, NULL, 0) > 0)
		;
	fixture_rm_rf(dir);
}

static void test_next_start_kills_leftover_group(void **state)
{
	char dir[PATH_MAX], cmd[PATH_MAX + 64], file[PATH_MAX + 16];
	pid_t evictd, orphan;

	(void)state;
	fixture_tmpdir(dir, "track");
	snprintf(file, sizeof(file), "%s/orphan.pid", dir);
	snprintf(cmd, sizeof(cmd), "sleep 60 & echo $! > %s; wait", file);
	evictd = fake_evictd(dir, cmd);
	orphan = wait_pid_file(file);
	kill(evictd, SIGKILL);
	assert_int_equal(waitpid(evictd, NULL, 0), evictd);
	/* PR_SET_PDEATHSIG reaches the leader only: the sleep lives on. */
	assert_int_equal(kill(orphan, 0), 0);
	/* The next start (2 when the leader has not finished dying yet). */
	assert_true(subprocess_track(dir) >= 1);
	subprocess_track(NULL);
	if (!dies(orphan)) {
		kill(orphan, SIGKILL);
		fail_msg("the leftover sleep (pid %d) was not killed", (int)orphan);
	}
	/* The record is gone with it: a second start kills nothing. */
	assert_int_equal(subprocess_track(dir), 0);
	subprocess_track(NULL);
	fixture_rm_rf(dir);
}

/* A group leader of our own, alive; records about it that must not kill it. */
static void test_recycled_or_old_boot_is_left(void **state)
{
	char dir[PATH_MAX], stat_path[64], buf[1024], boot_id[BOOT_ID_LEN], rel[64], *p;
	unsigned long long starttime = 0;
	pid_t other;

	(void)state;
	fixture_tmpdir(dir, "track");
	other = fork();
	assert_true(other >= 0);
	if (other == 0) {
		setpgid(0, 0);
		pause();
		_exit(0);
	}
	setpgid(other, other);
	snprintf(stat_path, sizeof(stat_path), "/proc/%d/stat", (int)other);
	FILE *f = fopen(stat_path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	p = strrchr(buf, ')') + 2;
	for (int field = 3; field < 22; field++)
		p = strchr(p, ' ') + 1;
	starttime = strtoull(p, NULL, 10);
	assert_int_equal(boot_id_read(boot_id, sizeof(boot_id)), 0);

	/* The pid now belongs to a process started later than the recorded one. */
	snprintf(rel, sizeof(rel), "children/%d", (int)other);
	fixture_write(dir, rel, "boot_id %s\npgid %d\nsession %d\nstarttime %llu\n", boot_id,
		      (int)other, (int)getsid(0), starttime - 1);
	assert_int_equal(subprocess_track(dir), 0);
	assert_int_equal(kill(other, 0), 0);
	/* The right start time, but from another boot. */
	fixture_write(dir, rel, "boot_id 00000000-0000-4000-8000-000000000000\npgid %d\nsession %d\n"
		      "starttime %llu\n", (int)other, (int)getsid(0), starttime);
	assert_int_equal(subprocess_track(dir), 0);
	assert_int_equal(kill(other, 0), 0);
	/* Garbage. */
	fixture_write(dir, rel, "pgid 1\n");
	assert_int_equal(subprocess_track(dir), 0);
	assert_int_equal(kill(other, 0), 0);
	/* And the same record with everything right does kill: the checks above are not vacuous. */
	fixture_write(dir, rel, "boot_id %s\npgid %d\nsession %d\nstarttime %llu\n", boot_id,
		      (int)other, (int)getsid(0), starttime);
	assert_int_equal(subprocess_track(dir), 1);
	subprocess_track(NULL);
	assert_true(dies(other));
	fixture_rm_rf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_leader_dies_with_evictd),
		cmocka_unit_test(test_next_start_kills_leftover_group),
		cmocka_unit_test(test_recycled_or_old_boot_is_left),
	};

	log_set_level(LOGLEVEL_ERR);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1))
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
