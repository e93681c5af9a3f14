// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * process_mrelease(2) after cgroup.kill (user/act/mrelease.c) on a real cgroup v2 (root only):
 * the killed processes' pidfds are handed to the worker and the cgroup empties; the memory of
 * a process whose exit is held up (a stopped parent's vfork child would be exotic: here a
 * plain 128 MiB process) comes back; and a kernel that says no (process_mrelease or
 * pidfd_open returning ENOSYS, made so with a seccomp filter in a child) is told once and
 * never asked again, while the kill itself still works.
 */
#include "testutil.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "act/kill.h"
#include "pods/pods.h"
#include "sys/log.h"

struct real {
	char mount[PATH_MAX];
	char victim[PATH_MAX];
	const char *skip;
};

static int setup_real(void **state)
{
	static struct real real;
	char probe[PATH_MAX + 16];

	memset(&real, 0, sizeof(real));
	*state = &real;
	if (geteuid() != 0) {
		real.skip = "needs root (cgroups)";
		return 0;
	}
	if (pods_detect_cgroup_mount(NULL, real.mount, sizeof(real.mount))) {
		real.skip = "no cgroup v2 mount";
		return 0;
	}
	if (strlen(real.mount) + 32 > sizeof(real.victim)) {
		real.skip = "cgroup mount path too long";
		return 0;
	}
	strcpy(real.victim, real.mount);
	strcat(real.victim, "/evictd-mrelease-XXXXXX");
	if (!mkdtemp(real.victim)) {
		real.skip = "cannot make a cgroup";
		real.victim[0] = '\0';
		return 0;
	}
	snprintf(probe, sizeof(probe), "%s/cgroup.kill", real.victim);
	if (access(probe, W_OK))
		real.skip = "no cgroup.kill (Linux < 5.14)";
	return 0;
}

static int teardown_real(void **state)
{
	struct real *real = *state;

	for (int i = 0; real->victim[0] && i < 100 && rmdir(real->victim) && errno == EBUSY; i++)
		usleep(10000);
	return 0;
}

/* A child in the victim cgroup touching `bytes` of anonymous memory, then pausing. */
static pid_t spawn_hog(const char *cgroup, size_t bytes)
{
	int ready[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char path[PATH_MAX + 32], me[32];
		char *mem;
		int fd;

		snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
		snprintf(me, sizeof(me), "%d", (int)getpid());
		fd = open(path, O_WRONLY);
		if (fd < 0 || write(fd, me, strlen(me)) < 0)
			_exit(2);
		close(fd);
		mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (mem == MAP_FAILED)
			_exit(3);
		memset(mem, 1, bytes);
		if (write(ready[1], "x", 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	return pid;
}

static void cgroup_kill(const char *cgroup)
{
	char path[PATH_MAX + 16];
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup.kill", cgroup);
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "1", 1), 1);
	close(fd);
}

static void test_mrelease_after_cgroup_kill(void **state)
{
	struct real *real = *state;
	pid_t pids[3];
	int dir_fd, status;
	int64_t handed;

	if (real->skip) {
		print_message("# skip: %s\n", real->skip);
		skip();
	}
	for (int i = 0; i < 3; i++)
		pids[i] = spawn_hog(real->victim, 32 << 20);
	dir_fd = open(real->victim, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dir_fd >= 0);
	cgroup_kill(real->victim);
	handed = kill_mrelease_cgroup(dir_fd);
	/* Each process listed and not yet reaped gets a pidfd; some may be gone already. */
	assert_true(handed >= 0 && handed <= 3);
	print_message("# %lld of 3 killed processes handed to process_mrelease\n", (long long)handed);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	}
	close(dir_fd);
	assert_true(kill_mrelease_supported());
}

/* One past the limit: a pod of 17 processes is left to exit on its own (measured slower with
 * one thread reaping a thousand). */
static void test_many_processes_left_alone(void **state)
{
	struct real *real = *state;
	pid_t pids[17];
	int dir_fd, status;

	if (real->skip) {
		print_message("# skip: %s\n", real->skip);
		skip();
	}
	for (int i = 0; i < 17; i++)
		pids[i] = spawn_hog(real->victim, 1 << 20);
	dir_fd = open(real->victim, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dir_fd >= 0);
	assert_int_equal(kill_mrelease_cgroup(dir_fd), 0);
	cgroup_kill(real->victim);
	for (int i = 0; i < 17; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	}
	close(dir_fd);
}

/* In a child: process_mrelease (or pidfd_open) answers ENOSYS, as on an older kernel. */
static int deny_syscall(long nr)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = 4, .filter = filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static void run_denied(struct real *real, long nr)
{
	pid_t hog, checker;
	int status, dir_fd;

	hog = spawn_hog(real->victim, 16 << 20);
	checker = fork();
	assert_true(checker >= 0);
	if (checker == 0) {
		int64_t first, second;

		if (deny_syscall(nr))
			_exit(10);
		dir_fd = open(real->victim, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dir_fd < 0)
			_exit(11);
		/* Asked while the hog still lives (pidfd_open needs a listed pid; the filter answers
		 * before the kernel would look at whether it is dying), then killed. */
		first = kill_mrelease_cgroup(dir_fd);
		cgroup_kill(real->victim);
		/* The worker thread meets the ENOSYS: give it a moment. */
		for (int i = 0; i < 100 && kill_mrelease_supported(); i++)
			usleep(10000);
		second = kill_mrelease_cgroup(dir_fd);
		if (kill_mrelease_supported())
			_exit(12);	/* the kernel's no was not remembered */
		if (second != -ENOSYS)
			_exit(13);	/* asked again */
		_exit(first >= 0 ? 0 : 14);
	}
	assert_int_equal(waitpid(checker, &status, 0), checker);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 10) {
		print_message("# skip: seccomp unavailable\n");
		kill(hog, SIGKILL);
		waitpid(hog, NULL, 0);
		skip();
	}
	assert_int_equal(WEXITSTATUS(status), 0);
	/* The kill itself did its work. */
	assert_int_equal(waitpid(hog, &status, 0), hog);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

static void test_kernel_without_mrelease(void **state)
{
	struct real *real = *state;

	if (real->skip) {
		print_message("# skip: %s\n", real->skip);
		skip();
	}
	run_denied(real, SYS_process_mrelease);
}

static void test_kernel_without_pidfd_open(void **state)
{
	struct real *real = *state;

	if (real->skip) {
		print_message("# skip: %s\n", real->skip);
		skip();
	}
	run_denied(real, SYS_pidfd_open);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mrelease_after_cgroup_kill, setup_real, teardown_real),
		cmocka_unit_test_setup_teardown(test_many_processes_left_alone, setup_real, teardown_real),
		cmocka_unit_test_setup_teardown(test_kernel_without_mrelease, setup_real, teardown_real),
		cmocka_unit_test_setup_teardown(test_kernel_without_pidfd_open, setup_real, teardown_real),
	};

	log_set_level(LOGLEVEL_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
