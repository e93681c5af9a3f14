/* pause - a pod sandbox's infra process, as the kubelet's pause image runs it.
 *
 *   pause
 *
 * Sleeps until SIGTERM or SIGINT (exit 0) and reaps children that are reparented to it (it is
 * PID 1 of a pod with shareProcessNamespace). What build/pause/linux/pause.c of Kubernetes does,
 * for the guest node's sandbox image (tools/vm/build-node-disk.sh): no registry in the tests.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_term(int sig)
{
	(void)sig;
	_exit(0);
}

static void on_child(int sig)
{
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int main(void)
{
	struct sigaction term = { .sa_handler = on_term };
	struct sigaction child = { .sa_handler = on_child, .sa_flags = SA_NOCLDSTOP };

	if (getpid() != 1)
		fprintf(stderr, "pause: warning: not PID 1\n");
	if (sigaction(SIGINT, &term, NULL) < 0 || sigaction(SIGTERM, &term, NULL) < 0 ||
	    sigaction(SIGCHLD, &child, NULL) < 0) {
		perror("pause: sigaction");
		return 1;
	}
	for (;;)
		pause();
}
