/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The API-server stand-in (tests/cli/kube-standin.py) for the unit tests: a local HTTPS server
 * with a throwaway CA (openssl), started per test on its own fixture directory. Each test makes
 * its own kube_client (the timeouts differ) from s->config. Include after testutil.h.
 * Used where a real API server cannot misbehave on demand (a chosen request answered late,
 * refused or garbled; a black-holed stream); what a real server does is tested against the
 * real kube-apiserver in tests/cluster (kube-standin.py's header lists the split).
 */
#ifndef EVICTD_STANDIN_H
#define EVICTD_STANDIN_H

#include <json-c/json.h>
#include <signal.h>
#include <sys/wait.h>

#include "testutil.h"

#include "kube/kube.h"
#include "kube/kube_report.h"
#include "pods/pods.h"

#define STANDIN EVICTD_SRCDIR "/tests/cli/kube-standin.py"
#define PYTHON "/usr/bin/python3"

struct standin {
	char dir[PATH_MAX];
	char log[PATH_MAX + 16];	/* requests.jsonl: one JSON object per request */
	char faults[PATH_MAX + 16];
	char dump[PATH_MAX + 16];	/* state.json, written on SIGUSR1 */
	char token[PATH_MAX + 16];
	char ca[PATH_MAX + 16];
	char certs[PATH_MAX];		/* the CA, the server's and the kubelets' certificates */
	pid_t pid;
	int port;
	struct kube_config config;	/* the server, its CA and (with a token) the token file */
	/* Made by the test; standin_stop frees them. */
	struct kube_client *client;
	struct kube_report *report;
	struct pods_meta_source *source;
};

struct standin_options {
	const char *tag;		/* names the temp directories (evictd-test-<tag>-*) */
	const char *node_name;		/* of the node fixture; NULL: "node-1" */
	const char *pods;		/* fixtures/pods.json, or NULL: none */
	const char *node;		/* fixtures/node-<node_name>.json, or NULL: none (a 404) */
	const char *daemonsets;		/* fixtures/daemonsets.json, or NULL: none */
	const char *faults;		/* the --faults rules, or NULL: [] */
	const char *token;		/* the token file's text, put in config; NULL: no token */
	const char *const *args;	/* more stand-in arguments, NULL-terminated, or NULL */
};

/* A kubelet client certificate the stand-in made (kubelet-node-1.pem, ...), into buf. */
static inline void standin_kubelet_cert(const struct standin *s, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s.pem", s->certs, name);
}

/* The stand-in offers HTTP/2 by ALPN beside HTTP/1.1 (--http2, python3-h2), as kube-apiserver
 * does, and libcurl negotiates it: a test program's main runs its stand-in tests once without
 * (HTTP/1.1) and once with it. standin_stop checks the client's answers came in that version. */
static bool standin_http2;

/* Made once per test program (openssl is slow); main removes it with standin_cleanup(). */
static char standin_certs[PATH_MAX];
/* The stand-in of the running test, stopped by the teardown when an assertion cut it short
 * (longjmp): every test keeps its stand-in static, so this never points into a dead frame. */
static struct standin *standin_running;

/* Why the stand-in tests cannot run here, or NULL. */
static inline const char *standin_missing(void)
{
	if (access(PYTHON, X_OK))
		return "no " PYTHON;
	if (access(STANDIN, R_OK))
		return "no " STANDIN;
	if (access("/usr/bin/openssl", X_OK) && access("/bin/openssl", X_OK))
		return "no openssl";
	if (access("/usr/bin/curl", X_OK) && access("/bin/curl", X_OK))
		return "no curl";
	if (standin_http2) {
		static int h2 = -1;

		if (h2 < 0) {
			char *const probe[] = { PYTHON, "-c", "import h2", NULL };
			pid_t pid = fork();
			int status;

			if (pid == 0) {
				execv(PYTHON, probe);
				_exit(127);
			}
			h2 = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status);
		}
		if (!h2)
			return "no python3-h2 for the stand-in's HTTP/2 (tools/install-deps.sh test)";
	}
	return NULL;
}

#define SKIP_WITHOUT_STANDIN()                                                    \
	do {                                                                      \
		const char *missing = standin_missing();                          \
		if (missing) {                                                    \
			print_message("# SKIP the API server stand-in: %s\n", missing); \
			skip();                                                   \
		}                                                                 \
	} while (0)

/* Run argv[0] with argv and wait: its exit status, or -1. */
static inline int run_wait(char *const argv[])
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Start the stand-in on a fresh directory with these fixtures, wait for its port and fill
 * s->config. */
static inline void standin_launch(struct standin *s, const struct standin_options *o)
{
	char port_file[PATH_MAX + 16], fixtures[PATH_MAX + 16], cert[PATH_MAX + 16], key[PATH_MAX + 16];
	char tag[64], node_file[128];
	const char *argv[64];
	size_t n = 0;

	if (!standin_certs[0]) {
		snprintf(tag, sizeof(tag), "%s-certs", o->tag);
		fixture_tmpdir(standin_certs, tag);
		char *const make[] = { PYTHON, STANDIN, "--make-certs", standin_certs, NULL };

		if (run_wait(make))
			fail_msg("the stand-in could not make certificates with openssl");
	}
	memset(s, 0, sizeof(*s));
	fixture_tmpdir(s->dir, o->tag);
	snprintf(s->log, sizeof(s->log), "%s/requests.jsonl", s->dir);
	snprintf(s->faults, sizeof(s->faults), "%s/faults.json", s->dir);
	snprintf(s->dump, sizeof(s->dump), "%s/state.json", s->dir);
	snprintf(s->token, sizeof(s->token), "%s/token", s->dir);
	snprintf(s->ca, sizeof(s->ca), "%s/ca.crt", standin_certs);
	snprintf(s->certs, sizeof(s->certs), "%s", standin_certs);
	snprintf(port_file, sizeof(port_file), "%s/port", s->dir);
	snprintf(fixtures, sizeof(fixtures), "%s/fixtures", s->dir);
	snprintf(cert, sizeof(cert), "%s/server.crt", standin_certs);
	snprintf(key, sizeof(key), "%s/server.key", standin_certs);
	if (o->pods)
		fixture_write(s->dir, "fixtures/pods.json", "%s", o->pods);
	if (o->node) {
		snprintf(node_file, sizeof(node_file), "fixtures/node-%s.json", o->node_name ? o->node_name : "node-1");
		fixture_write(s->dir, node_file, "%s", o->node);
	}
	if (o->daemonsets)
		fixture_write(s->dir, "fixtures/daemonsets.json", "%s", o->daemonsets);
	fixture_write(s->dir, "faults.json", "%s", o->faults ? o->faults : "[]");
	if (o->token)
		fixture_write(s->dir, "token", "%s", o->token);

	const char *common[] = { PYTHON, STANDIN, "--cert", cert, "--key", key, "--port-file", port_file,
				 "--log", s->log, "--fixtures", fixtures, "--faults", s->faults,
				 "--state-dump", s->dump, "--max-seconds", "120", "--client-ca", s->ca };
	for (size_t i = 0; i < sizeof(common) / sizeof(common[0]); i++)
		argv[n++] = common[i];
	for (size_t i = 0; o->args && o->args[i]; i++) {
		assert_true(n < sizeof(argv) / sizeof(argv[0]) - 1);
		argv[n++] = o->args[i];
	}
	if (standin_http2)
		argv[n++] = "--http2";
	argv[n] = NULL;

	standin_running = s;
	s->pid = fork();
	assert_true(s->pid >= 0);
	if (s->pid == 0) {
		execv(PYTHON, (char *const *)argv);
		_exit(127);
	}
	for (int i = 0; i < 200 && !s->port; i++) {
		FILE *f = fopen(port_file, "r");

		if (f) {
			if (fscanf(f, "%d", &s->port) != 1)
				s->port = 0;
			fclose(f);
		}
		if (!s->port)
			usleep(50000);
	}
	if (!s->port)
		fail_msg("the stand-in did not start");
	snprintf(s->config.server, sizeof(s->config.server), "https://127.0.0.1:%d", s->port);
	snprintf(s->config.ca_path, sizeof(s->config.ca_path), "%.4000s", s->ca);
	if (o->token)
		snprintf(s->config.token_path, sizeof(s->config.token_path), "%.4000s", s->token);
}

/* Free what the test made on it (the source and the report before their client), stop it. */
static inline void standin_stop(struct standin *s)
{
	struct kube_client_stats stats = { 0 };
	unsigned want = standin_http2 ? 20 : 11;

	if (s->client)
		kube_client_get_stats(s->client, &stats);
	if (s->source)
		s->source->destroy(s->source);
	s->source = NULL;
	kube_report_free(s->report);
	s->report = NULL;
	kube_client_free(s->client);
	s->client = NULL;
	if (s->pid > 0) {
		kill(s->pid, SIGTERM);
		waitpid(s->pid, NULL, 0);
	}
	s->pid = 0;
	fixture_rm_rf(s->dir);
	standin_running = NULL;
	/* Only where the test did not set EVICTD_KUBE_HTTP_VERSION itself. */
	if (stats.http_version && stats.http_version != want && !getenv("EVICTD_KUBE_HTTP_VERSION"))
		fail_msg("the stand-in answered in HTTP %u.%u, not %u.%u", stats.http_version / 10,
			 stats.http_version % 10, want / 10, want % 10);
}

static inline int teardown_standin(void **state)
{
	(void)state;
	if (standin_running)
		standin_stop(standin_running);
	return 0;
}

/* At the end of main: the certificates. */
static inline void standin_cleanup(void)
{
	if (standin_certs[0])
		fixture_rm_rf(standin_certs);
}

/* A test hook of the stand-in (not recorded in its log): POST /standin/<what> with body. */
static inline void standin_hook(struct standin *s, const char *what, const char *body)
{
	char url[256];
	pid_t pid;
	int status;

	snprintf(url, sizeof(url), "https://127.0.0.1:%d/standin/%s", s->port, what);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		execlp("curl", "curl", "-sS", "--fail", "--cacert", s->ca, "-X", "POST", "--data-binary",
		       body ? body : "", url, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("stand-in hook %s failed", what);
}

/* A status-only strategic merge patch of pod NS/NAME, sent as another client would (curl, the
 * token "token-one"), not through evictd's code. */
static inline void standin_patch_pod_status(struct standin *s, const char *ns, const char *name,
					    const char *patch)
{
	char url[512];
	pid_t pid;
	int status;

	snprintf(url, sizeof(url), "https://127.0.0.1:%d/api/v1/namespaces/%s/pods/%s/status", s->port, ns, name);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		execlp("curl", "curl", "-sS", "--fail", "--cacert", s->ca, "-X", "PATCH", "-H",
		       "Content-Type: application/strategic-merge-patch+json", "-H", "Authorization: Bearer token-one",
		       "--data-binary", patch, url, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("status patch of %s/%s failed", ns, name);
}

/* Every request recorded so far, as a JSON array (caller puts it). */
static inline struct json_object *standin_requests(struct standin *s)
{
	struct json_object *all = json_object_new_array();
	char line[1 << 16];
	FILE *f = fopen(s->log, "r");

	while (f && fgets(line, sizeof(line), f)) {
		struct json_object *entry = json_tokener_parse(line);

		assert_non_null(entry);
		json_object_array_add(all, entry);
	}
	if (f)
		fclose(f);
	return all;
}

/* The nodes, pods, events and counters as the stand-in holds them now (caller puts it). */
static inline struct json_object *standin_state(struct standin *s)
{
	struct json_object *doc = NULL;

	unlink(s->dump);
	kill(s->pid, SIGUSR1);
	for (int i = 0; i < 200 && access(s->dump, F_OK); i++)
		usleep(20000);
	doc = json_object_from_file(s->dump);
	assert_non_null(doc);
	return doc;
}

#endif
