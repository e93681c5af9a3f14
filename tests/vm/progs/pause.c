/* pause - the pod sandbox's process for the real-node tests (tests/cluster/node): holds the
 * pod's namespaces, reaps orphans (it is PID 1 with shareProcessNamespace), and exits on
 * SIGTERM/SIGINT as the upstream pause does (kubernetes build/pause/linux/pause.c).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig)
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
	struct sigaction stop = { .sa_handler = on_stop }, child = { .sa_handler = on_child,
								  .sa_flags = SA_NOCLDSTOP };

	if (sigaction(SIGINT, &stop, NULL) < 0 || sigaction(SIGTERM, &stop, NULL) < 0 ||
	    sigaction(SIGCHLD, &child, NULL) < 0)
		return 1;
	for (;;)
		pause();
}
