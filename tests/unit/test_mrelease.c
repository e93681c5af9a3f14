// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * process_mrelease(2) after cgroup.kill (user/act/mrelease.c) on a real cgroup v2 (root only):
 * every killed process's pidfd is passed to process_mrelease (counted through the syscall
 * seam, by the pid behind each pidfd), the count is not read from a job the worker freed
 * (a worker that runs first), and the cgroup empties; the memory of
 * a process whose exit is held up (a stopped parent's vfork child would be exotic: here a
 * plain 128 MiB process) comes back; and a kernel that says no (process_mrelease or
 * pidfd_open returning ENOSYS, made so with a seccomp filter in a child) is told once and
 * never asked again, while the kill itself still works.
 */
#include "testutil.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "act/kill.h"
#include "act/mrelease.h"
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

/* ---- the seams: who was reaped, and a worker that runs before the caller goes on ---------- */

#define MAX_CALLS 32

static struct {
	const char *kill_first;	/* cgroup.kill this in spawn, before the worker runs */
	pthread_mutex_t lock;
	sem_t done;		/* posted per process_mrelease call */
	size_t calls;
	pid_t pid[MAX_CALLS];	/* whose pidfd each call had */
	int result[MAX_CALLS];	/* 0 or the errno */
} seen = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void cgroup_kill(const char *cgroup);

/* The pid a pidfd refers to: its fdinfo's "Pid:" line. */
static pid_t pidfd_pid(int pidfd)
{
	char path[64], line[128];
	pid_t pid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Pid: %d", &pid) == 1)
			break;
	fclose(f);
	return pid;
}

static long counting_mrelease(int pidfd, unsigned int flags)
{
	long ret = syscall(SYS_process_mrelease, pidfd, flags);
	int saved = errno;

	pthread_mutex_lock(&seen.lock);
	if (seen.calls < MAX_CALLS) {
		seen.pid[seen.calls] = pidfd_pid(pidfd);
		seen.result[seen.calls] = ret ? saved : 0;
	}
	seen.calls++;
	pthread_mutex_unlock(&seen.lock);
	sem_post(&seen.done);
	errno = saved;
	return ret;
}

/* The scheduler's worst order: the worker runs, and frees its job, before spawn returns. */
static int spawn_inline(void *(*worker)(void *), void *job)
{
	if (seen.kill_first)
		cgroup_kill(seen.kill_first);
	worker(job);
	return 0;
}

static void seen_reset(void)
{
	seen.kill_first = NULL;
	seen.calls = 0;
	sem_destroy(&seen.done);
	assert_int_equal(sem_init(&seen.done, 0, 0), 0);
}

static size_t count_pid(pid_t pid)
{
	size_t n = 0;

	for (size_t i = 0; i < seen.calls && i < MAX_CALLS; i++)
		n += seen.pid[i] == pid;
	return n;
}

/*
 * Every killed process's pidfd goes through process_mrelease, once. The pidfds are taken
 * while the processes live (so all three are listed), the cgroup is killed, then the worker
 * runs before kill_mrelease_cgroup returns: the count it returns must not be read from the
 * job the worker freed (heap-use-after-free under ASan before the fix).
 */
static void test_mrelease_called_for_each_pidfd(void **state)
{
	struct real *real = *state;
	pid_t pids[3];
	int dir_fd, status;
	size_t reaped = 0;
	int64_t handed;

	if (real->skip) {
		print_message("# skip: %s\n", real->skip);
		skip();
	}
	for (int i = 0; i < 3; i++)
		pids[i] = spawn_hog(real->victim, 32 << 20);
	dir_fd = open(real->victim, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dir_fd >= 0);
	seen_reset();
	seen.kill_first = real->victim;
	kill_mrelease_set_hooks(&(struct kill_mrelease_hooks){ .spawn = spawn_inline,
							       .mrelease = counting_mrelease });
	handed = kill_mrelease_cgroup(dir_fd);
	kill_mrelease_set_hooks(NULL);
	assert_int_equal(handed, 3);
	assert_int_equal(seen.calls, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(count_pid(pids[i]), 1);
		/* 0: its address space reaped here; ESRCH: it ran its exit first. Never EINVAL
		 * (not dying): the kill came before. */
		assert_true(seen.result[i] == 0 || seen.result[i] == ESRCH);
		reaped += seen.result[i] == 0;
	}
	print_message("# 3 killed processes handed over, %zu reaped by process_mrelease\n", reaped);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	}
	close(dir_fd);
	assert_true(kill_mrelease_supported());
}

/* As the daemon does it: cgroup.kill first, then the pidfds of whatever is still listed, in
 * the detached worker thread. Every pidfd handed over is passed to process_mrelease. */
static void test_mrelease_after_cgroup_kill(void **state)
{
	struct real *real = *state;
	struct timespec until;
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
	seen_reset();
	kill_mrelease_set_hooks(&(struct kill_mrelease_hooks){ .mrelease = counting_mrelease });
	cgroup_kill(real->victim);
	handed = kill_mrelease_cgroup(dir_fd);
	assert_true(handed >= 0 && handed <= 3);
	/* A bound against a hang, not a timing assertion. */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 30;
	for (int64_t i = 0; i < handed; i++)
		assert_int_equal(sem_timedwait(&seen.done, &until), 0);
	kill_mrelease_set_hooks(NULL);
	assert_int_equal(seen.calls, (size_t)handed);
	print_message("# %lld of 3 killed processes handed to process_mrelease\n", (long long)handed);
	for (int i = 0; i < 3; i++) {
		assert_true(count_pid(pids[i]) <= 1);
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
		cmocka_unit_test_setup_teardown(test_mrelease_called_for_each_pidfd, setup_real, teardown_real),
		cmocka_unit_test_setup_teardown(test_mrelease_after_cgroup_kill, setup_real, teardown_real),
		cmocka_unit_test_setup_teardown(test_many_processes_left_alone, setup_real, teardown_real),
		cmocka_unit_test_setup_teardown(test_kernel_without_mrelease, setup_real, teardown_real),
		cmocka_unit_test_setup_teardown(test_kernel_without_pidfd_open, setup_real, teardown_real),
	};

	log_set_level(LOGLEVEL_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
