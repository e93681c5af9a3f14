// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The node's static pod directory (doc/DESIGN.md §5, "Pod identity"): which directory says a
 * pod is static. --static-pod-path, else the kubelet's staticPodPath (its file read through
 * --kubelet-config, or its --pod-manifest-path seen through --kubelet-flags-from), else
 * /etc/kubernetes/manifests; --validate names the source. The policy's pods table takes its
 * static pods from that directory, below --root. On fixture trees.
 */
#include "testutil.h"

#include "config/config.h"
#include "daemon/policy.h"
#include "pods/pods.h"
#include "sys/log.h"

#define CG "sys/fs/cgroup"
#define SLICE CG "/kubepods.slice"
#define UID_API "2b1c5e4f6a7d8e9f0a1b2c3d4e5f6a7b"	/* kube-apiserver, manifest in /srv/static */
#define UID_ETCD "9f8e7d6c5b4a39281706f5e4d3c2b1a0"	/* etcd, manifest only in the default dir */
#define PID "4242"

static int setup_tmp(void **state)
{
	char *root = malloc(PATH_MAX);

	if (!root)
		return -1;
	fixture_tmpdir(root, "staticpath");
	*state = root;
	return 0;
}

static int teardown_tmp(void **state)
{
	fixture_rm_rf(*state);
	free(*state);
	return 0;
}

/* Parse argv (NULL-terminated, argv[0] included) and finalize. */
static int parse(struct evictd_config *config, char **argv)
{
	int argc = 0, err;

	while (argv[argc])
		argc++;
	config_init_defaults(config);
	err = config_parse_args(config, argc, argv);
	return config_finalize(config) ? -EINVAL : err;
}

/* --validate's static-pod-path line. */
static void printed_line(const struct evictd_config *config, char *line, size_t len)
{
	char *text = NULL, *found, *end;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);

	assert_non_null(out);
	config_print(config, out);
	fclose(out);
	found = strstr(text, "\nstatic-pod-path ");
	assert_non_null(found);
	end = strchr(found + 1, '\n');
	snprintf(line, len, "%.*s", (int)(end - found - 1), found + 1);
	free(text);
}

/* A kubelet process below root: /proc/PID/cmdline with the given NUL-separated arguments. */
static void write_cmdline(const char *root, const char *args, size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	fixture_write(root, "proc/" PID "/comm", "kubelet\n");
	snprintf(path, sizeof(path), "%s/proc/" PID "/cmdline", root);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(args, 1, len, f), len);
	fclose(f);
}

static void test_precedence_and_validate_source(void **state)
{
	const char *root = *state;
	static struct evictd_config config;
	char kubelet_file[PATH_MAX + 32], arg_kc[PATH_MAX + 64], arg_root[PATH_MAX + 16], line[PATH_MAX + 200],
	     want[PATH_MAX + 200];
	static const char cmdline[] = "/usr/bin/kubelet\0--pod-manifest-path\0/from/flags\0";

	fixture_write(root, "kubelet.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\n"
		      "kind: KubeletConfiguration\nstaticPodPath: /x\n");
	fixture_write(root, "plain.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\n"
		      "kind: KubeletConfiguration\n");
	write_cmdline(root, cmdline, sizeof(cmdline) - 1);
	snprintf(kubelet_file, sizeof(kubelet_file), "%s/kubelet.yaml", root);
	snprintf(arg_kc, sizeof(arg_kc), "--kubelet-config=%s", kubelet_file);
	snprintf(arg_root, sizeof(arg_root), "--root=%s", root);

	/* Nothing known: kubeadm's directory. */
	assert_int_equal(parse(&config, (char *[]){ "evictd", NULL }), 0);
	assert_string_equal(config.static_pod_path, "/etc/kubernetes/manifests");
	printed_line(&config, line, sizeof(line));
	assert_string_equal(line, "static-pod-path /etc/kubernetes/manifests (default)");

	/* The kubelet's file. */
	assert_int_equal(parse(&config, (char *[]){ "evictd", arg_kc, NULL }), 0);
	assert_string_equal(config.static_pod_path, "/x");
	printed_line(&config, line, sizeof(line));
	snprintf(want, sizeof(want), "static-pod-path /x (--kubelet-config %s: staticPodPath)", kubelet_file);
	assert_string_equal(line, want);

	/* A kubelet file without staticPodPath keeps the default (the kubelet may have the flag). */
	snprintf(arg_kc, sizeof(arg_kc), "--kubelet-config=%s/plain.yaml", root);
	assert_int_equal(parse(&config, (char *[]){ "evictd", arg_kc, NULL }), 0);
	assert_string_equal(config.static_pod_path, "/etc/kubernetes/manifests");
	snprintf(arg_kc, sizeof(arg_kc), "--kubelet-config=%s", kubelet_file);

	/* The running kubelet's --pod-manifest-path wins over its file, as in the kubelet. */
	assert_int_equal(parse(&config, (char *[]){ "evictd", arg_root, "--kubelet-flags-from=" PID,
						    arg_kc, NULL }), 0);
	assert_string_equal(config.static_pod_path, "/from/flags");
	printed_line(&config, line, sizeof(line));
	assert_string_equal(line, "static-pod-path /from/flags (kubelet (pid " PID "): --pod-manifest-path)");

	/* evictd's own flag wins over both; "" is none. */
	assert_int_equal(parse(&config, (char *[]){ "evictd", arg_root, "--kubelet-flags-from=" PID,
						    arg_kc, "--static-pod-path=/srv/static", NULL }), 0);
	assert_string_equal(config.static_pod_path, "/srv/static");
	printed_line(&config, line, sizeof(line));
	assert_string_equal(line, "static-pod-path /srv/static (--static-pod-path)");
	assert_int_equal(parse(&config, (char *[]){ "evictd", arg_kc, "--static-pod-path=", NULL }), 0);
	printed_line(&config, line, sizeof(line));
	assert_string_equal(line, "static-pod-path none (--static-pod-path)");
}

/* Two pods the API lists as ordinary pods, each with a manifest and a kubelet log dir: the
 * apiserver's manifest in /srv/static (the kubelet's staticPodPath here), etcd's only in
 * /etc/kubernetes/manifests, which this kubelet does not read. */
static void build_node(const char *root)
{
	static const char *const uids[] = { UID_API, UID_ETCD };

	fixture_write(root, CG "/cgroup.controllers", "cpuset cpu io memory pids\n");
	fixture_write(root, SLICE "/cgroup.procs", "%s", "");
	fixture_write(root, SLICE "/memory.current", "1000\n");
	for (size_t i = 0; i < 2; i++) {
		char dir[PATH_MAX];

		snprintf(dir, sizeof(dir), SLICE "/kubepods-pod%s.slice/cgroup.procs", uids[i]);
		fixture_write(root, dir, "%s", "");
		snprintf(dir, sizeof(dir), SLICE "/kubepods-pod%s.slice/memory.current", uids[i]);
		fixture_write(root, dir, "1000\n");
	}
	fixture_write(root, "proc/meminfo", "MemTotal: 16000000 kB\nMemFree: 8000000 kB\n"
		      "MemAvailable: 8000000 kB\nBuffers: 0 kB\nCached: 100 kB\n");
	fixture_write(root, "proc/self/cgroup", "0::/system.slice/evictd.service\n");
	fixture_write(root, "var/lib/kubelet/.keep", "%s", "");
	fixture_write(root, "srv/static/kube-apiserver.yaml",
		      "kind: Pod\nmetadata:\n  name: kube-apiserver\n  namespace: kube-system\n");
	fixture_write(root, "etc/kubernetes/manifests/etcd.yaml",
		      "kind: Pod\nmetadata:\n  name: etcd\n  namespace: kube-system\n");
	fixture_write(root, "var/log/pods/kube-system_kube-apiserver-n_" UID_API "/c/0.log", "x");
	fixture_write(root, "var/log/pods/kube-system_etcd-n_" UID_ETCD "/c/0.log", "x");
	fixture_write(root, "pods.json", "{\"kind\":\"PodList\",\"items\":["
		      "{\"metadata\":{\"uid\":\"" UID_API "\",\"name\":\"kube-apiserver-n\","
		      "\"namespace\":\"kube-system\"},\"spec\":{\"nodeName\":\"n\"}},"
		      "{\"metadata\":{\"uid\":\"" UID_ETCD "\",\"name\":\"etcd-n\","
		      "\"namespace\":\"kube-system\"},\"spec\":{\"nodeName\":\"n\"}}]}\n");
}

static const struct pod *find_pod(struct policy *policy, const char *uid)
{
	size_t n;
	struct pod **list = pods_list(policy->pods, &n);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i]->uid, uid))
			return list[i];
	return NULL;
}

/* The policy's pods table reads the configured directory, below --root. */
static void test_policy_reads_static_pod_path(void **state)
{
	const char *root = *state;
	static struct evictd_config config;
	char arg_root[PATH_MAX + 16], arg_pods[PATH_MAX + 32], arg_kc[PATH_MAX + 64];
	struct policy *policy;
	const struct pod *api, *etcd;

	build_node(root);
	fixture_write(root, "kubelet.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\n"
		      "kind: KubeletConfiguration\nstaticPodPath: /srv/static\n");
	snprintf(arg_root, sizeof(arg_root), "--root=%s", root);
	snprintf(arg_pods, sizeof(arg_pods), "--pods-file=%s/pods.json", root);
	/* The kubelet's file is a host path: not below --root. */
	snprintf(arg_kc, sizeof(arg_kc), "--kubelet-config=%s/kubelet.yaml", root);
	assert_int_equal(parse(&config, (char *[]){ "evictd", "--once", "--dry-run", arg_root, arg_pods,
						    arg_kc, "--node-name=n", "--kube-api=off",
						    "--metrics-address=off", "--event-log=off", "--no-psi",
						    NULL }), 0);
	assert_string_equal(config.static_pod_path, "/srv/static");
	assert_int_equal(policy_new(&policy, &config, &(struct policy_deps){ .node_name = "n" }), 0);
	assert_non_null(policy->pods);
	policy_evaluate(policy, 0);
	assert_int_equal(pods_meta_wait(policy->pods, 10ll * 1000000000), 0);
	assert_int_equal(pods_refresh(policy->pods), 0);
	api = find_pod(policy, UID_API);
	etcd = find_pod(policy, UID_ETCD);
	assert_non_null(api);
	assert_non_null(etcd);
	assert_true(api->is_static);		/* its manifest is in the kubelet's directory */
	assert_false(etcd->is_static);		/* a manifest elsewhere is no evidence */
	assert_false(etcd->meta_unknown);
	policy_unref(policy);
}

#define TT(fn) cmocka_unit_test_setup_teardown(fn, setup_tmp, teardown_tmp)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TT(test_precedence_and_validate_source),
		TT(test_policy_reads_static_pod_path),
	};

	log_set_level(LOGLEVEL_ERR - 1);
	return cmocka_run_group_tests_name("static_pod_path", tests, NULL, NULL);
}
