// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The Kubernetes manifests in tools/deploy, parsed with libyaml: the Namespace admits the
 * privileged pod, the DaemonSet follows node-agent conventions and mounts what the code needs,
 * the ConfigMap is evictd's own configuration (valid, and above the kubelet's defaults), and
 * RBAC grants exactly the verbs the code uses. Each checker returns its problems; mutated
 * copies prove the checkers catch what they claim to (tests/unit/test_admission.c checks the
 * admission policy). */
#include "deploy_yaml.h"

#include "config/coexist.h"
#include "config/config.h"

/* What the Kubernetes code paths call with the token (tools/deploy/rbac.yaml says which uses
 * what). Not pod list and watch: evictd reads its node's pods as the kubelet (the Node
 * authorizer's scope); tools/overlays/cluster-wide-pod-read grants them where it cannot. */
static const char *const expected_grants[] = {
	"/pods/status:patch",
	"/events:create", "/events:patch",
	"/nodes:get", "/nodes:patch",
	"apps/daemonsets:list",
};

enum manifest { NAMESPACE, RBAC, CONFIGMAP, DAEMONSET, N_MANIFESTS };

static const char *const manifest_files[N_MANIFESTS] = {
	DEPLOY_DIR "namespace.yaml", DEPLOY_DIR "rbac.yaml", DEPLOY_DIR "configmap.yaml",
	DEPLOY_DIR "daemonset.yaml",
};

/* What one manifest tells the checks of the others. */
struct names {
	char sa_name[128], sa_namespace[128];
	char namespace_[128];
	char configmap[128], configmap_namespace[128];
	char configmap_keys[4][128];
	size_t n_configmap_keys;
};

/* ---- Namespace: PodSecurity admission must let a privileged pod in ----------------------- */

static void check_namespace(struct docs *docs, struct names *names, struct problems *p)
{
	yaml_node_t *root;
	yaml_document_t *doc = find_kind(docs, "Namespace", &root);

	if (!doc) {
		problem(p, "no Namespace document");
		return;
	}
	snprintf(names->namespace_, sizeof(names->namespace_), "%s", path_scalar(doc, root, "metadata.name") ?: "");
	if (!scalar_is(child(doc, path_get(doc, root, "metadata.labels"), "pod-security.kubernetes.io/enforce"),
		       "privileged"))
		problem(p, "the Namespace lacks the label pod-security.kubernetes.io/enforce: privileged");
}

/* ---- ConfigMap: evictd's own configuration, valid and above the kubelet's defaults -------- */

static void check_configmap(struct docs *docs, struct names *names, struct problems *p)
{
	static const char kubelet_defaults[] = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";
	struct coexist_finding findings[COEXIST_MAX_FINDINGS];
	struct evictd_config *ours, *kubelet;
	yaml_node_t *root, *data;
	yaml_document_t *doc = find_kind(docs, "ConfigMap", &root);
	const char *text;
	size_t n;

	if (!doc) {
		problem(p, "no ConfigMap document");
		return;
	}
	snprintf(names->configmap, sizeof(names->configmap), "%s", path_scalar(doc, root, "metadata.name") ?: "");
	snprintf(names->configmap_namespace, sizeof(names->configmap_namespace), "%s",
		 path_scalar(doc, root, "metadata.namespace") ?: "");
	data = child(doc, root, "data");
	for (yaml_node_pair_t *pair = data && data->type == YAML_MAPPING_NODE ? data->data.mapping.pairs.start : NULL;
	     pair && pair < data->data.mapping.pairs.top && names->n_configmap_keys < 4; pair++)
		snprintf(names->configmap_keys[names->n_configmap_keys++], 128, "%s",
			 scalar(yaml_document_get_node(doc, pair->key)) ?: "");
	text = scalar(child(doc, data, "config.yaml"));
	if (!text) {
		problem(p, "the ConfigMap has no data config.yaml");
		return;
	}
	/* Loaded and finalized as the daemon does: every error is one log line, and fails here. */
	ours = calloc(1, sizeof(*ours));
	kubelet = calloc(1, sizeof(*kubelet));
	assert_non_null(ours);
	assert_non_null(kubelet);
	config_init_defaults(ours);
	config_init_defaults(kubelet);
	/* A DaemonSet's evictd and the kubelet beside it: the kubelet's profile (the DaemonSet
	 * passes --kubelet-config, which "auto" reads as Kubernetes; this host has no kubelet). */
	snprintf(ours->profile, sizeof(ours->profile), "kubernetes");
	snprintf(kubelet->profile, sizeof(kubelet->profile), "kubernetes");
	if (config_load_yaml(ours, text, strlen(text), "configmap config.yaml") || config_finalize(ours)) {
		problem(p, "the ConfigMap's config.yaml is not a valid evictd configuration");
	} else {
		assert_int_equal(config_load_yaml(kubelet, kubelet_defaults, strlen(kubelet_defaults), "kubelet"), 0);
		assert_int_equal(config_finalize(kubelet), 0);
		n = coexist_compare(ours, kubelet, NULL, findings, COEXIST_MAX_FINDINGS);
		for (size_t i = 0; i < n; i++) {
			char line[512];

			coexist_format(&findings[i], line, sizeof(line));
			if (coexist_is_warning(&findings[i]) || findings[i].kind == COEXIST_UNCOMPARABLE ||
			    findings[i].kind == COEXIST_SHUTDOWN_NEITHER)
				problem(p, "ConfigMap against the kubelet's defaults: %s", line);
		}
	}
	free(ours);
	free(kubelet);
}

/* ---- DaemonSet -------------------------------------------------------------------------- */

struct mount_rule {
	const char *host_path;
	const char *mount_path;
	int read_only;			/* 1: must be read-only, 0: must be writable, -1: either */
	const char *propagation;	/* required mountPropagation, or NULL */
	const char *host_type;		/* required hostPath.type, or NULL */
	const char *why;
};

static const struct mount_rule mount_rules[] = {
	{ "/sys/fs/bpf", "/sys/fs/bpf", 0, "Bidirectional", NULL, "pins on the host's bpffs" },
	{ "/sys/fs/cgroup", "/sys/fs/cgroup", 0, NULL, NULL, "the pods' cgroups, cgroup.kill" },
	{ "/run/dbus", "/run/dbus", -1, NULL, NULL, "logind" },
	{ "/var/lib/kubelet", "/var/lib/kubelet", 1, "HostToContainer", NULL, "nodefs, pod volumes" },
	{ "/var/log/pods", "/var/log/pods", 1, NULL, NULL, "pod logs in the disk ranking" },
	/* user/pods/static_pods.c: the kubelet's staticPodPath, read where the node has it. */
	{ "/etc/kubernetes/manifests", "/etc/kubernetes/manifests", 1, NULL, "DirectoryOrCreate",
	  "static pods known without their mirror pods" },
	{ "/run/containerd", "/run/containerd", -1, NULL, NULL, "containerd's CRI socket" },
	{ "/run/crio", "/run/crio", -1, NULL, NULL, "CRI-O's CRI socket" },
	{ "/var/lib/evictd", "/var/lib/evictd", 0, NULL, "DirectoryOrCreate", "state across restarts" },
	{ "/run/evictd", "/run/evictd", 0, NULL, NULL, "the control socket" },
};

static bool arg_present(yaml_document_t *doc, yaml_node_t *args, const char *prefix, const char **value)
{
	for (size_t i = 0; i < seq_len(args); i++) {
		const char *arg = scalar(seq_at(doc, args, i));

		if (arg && !strncmp(arg, prefix, strlen(prefix))) {
			if (value)
				*value = arg + strlen(prefix);
			return true;
		}
	}
	return false;
}

/* The port a probe names, as a declared container port; 0 when it is none. */
static int probe_port(yaml_document_t *doc, yaml_node_t *container, const char *probe, const char *path,
		      struct problems *p)
{
	char key[64];
	const char *port;
	yaml_node_t *ports = child(doc, container, "ports");

	snprintf(key, sizeof(key), "%s.httpGet.path", probe);
	if (!scalar_is(path_get(doc, container, key), path)) {
		problem(p, "no %s httpGet %s", probe, path);
		return 0;
	}
	snprintf(key, sizeof(key), "%s.httpGet.port", probe);
	port = path_scalar(doc, container, key);
	for (size_t i = 0; port && i < seq_len(ports); i++) {
		yaml_node_t *entry = seq_at(doc, ports, i);

		if (scalar_is(child(doc, entry, "name"), port) || scalar_is(child(doc, entry, "containerPort"), port))
			return atoi(path_scalar(doc, entry, "containerPort") ?: "0");
	}
	problem(p, "the %s port is not a declared container port", probe);
	return 0;
}

static void check_mounts(yaml_document_t *doc, yaml_node_t *pod, yaml_node_t *container, struct problems *p)
{
	yaml_node_t *volumes = child(doc, pod, "volumes"), *mounts = child(doc, container, "volumeMounts");

	for (size_t r = 0; r < sizeof(mount_rules) / sizeof(mount_rules[0]); r++) {
		const struct mount_rule *rule = &mount_rules[r];
		const char *volume_name = NULL;
		yaml_node_t *mount = NULL;

		for (size_t i = 0; i < seq_len(volumes); i++) {
			yaml_node_t *v = seq_at(doc, volumes, i);

			if (scalar_is(path_get(doc, v, "hostPath.path"), rule->host_path)) {
				volume_name = scalar(child(doc, v, "name"));
				if (rule->host_type && !scalar_is(path_get(doc, v, "hostPath.type"), rule->host_type))
					problem(p, "hostPath %s is not type %s", rule->host_path, rule->host_type);
			}
		}
		if (!volume_name) {
			problem(p, "no hostPath volume for %s (%s)", rule->host_path, rule->why);
			continue;
		}
		for (size_t i = 0; i < seq_len(mounts); i++)
			if (scalar_is(child(doc, seq_at(doc, mounts, i), "name"), volume_name))
				mount = seq_at(doc, mounts, i);
		if (!mount) {
			problem(p, "volume %s (%s) is not mounted", volume_name, rule->host_path);
			continue;
		}
		if (!scalar_is(child(doc, mount, "mountPath"), rule->mount_path))
			problem(p, "%s is mounted at %s, not %s", rule->host_path,
				scalar(child(doc, mount, "mountPath")) ?: "?", rule->mount_path);
		if (rule->read_only == 1 && !scalar_is(child(doc, mount, "readOnly"), "true"))
			problem(p, "%s is not mounted read-only", rule->host_path);
		if (rule->read_only == 0 && scalar_is(child(doc, mount, "readOnly"), "true"))
			problem(p, "%s must be writable", rule->host_path);
		if (rule->propagation && !scalar_is(child(doc, mount, "mountPropagation"), rule->propagation))
			problem(p, "%s mountPropagation is not %s", rule->host_path, rule->propagation);
	}
	/* BTF is read through the container's own /sys (privileged: the kernel's sysfs). A hostPath
	 * for it, of any type, would be created by the runtime when missing (containerd and CRI-O
	 * MkdirAll a missing host path), which fails on sysfs: the pod would never start on a
	 * kernel without BTF, where evictd runs without BPF. */
	for (size_t i = 0; i < seq_len(volumes); i++) {
		const char *host = path_scalar(doc, seq_at(doc, volumes, i), "hostPath.path");

		if (host && !strncmp(host, "/sys/kernel/btf", strlen("/sys/kernel/btf")))
			problem(p, "a hostPath volume for %s: a kernel without BTF could not start the pod", host);
	}
	for (size_t i = 0; i < seq_len(mounts); i++) {
		const char *name = scalar(child(doc, seq_at(doc, mounts, i), "name"));
		bool declared = false;

		for (size_t v = 0; v < seq_len(volumes); v++)
			declared |= name && scalar_is(child(doc, seq_at(doc, volumes, v), "name"), name);
		if (!declared)
			problem(p, "volumeMount %s has no volume", name ? name : "?");
	}
}

/* evictd's configuration comes from the ConfigMap, mounted read-only, never from the kubelet's
 * file; the kubelet's file is only named for the coexistence check. */
static void check_config_source(yaml_document_t *doc, yaml_node_t *pod, yaml_node_t *container,
				const struct names *names, struct problems *p)
{
	yaml_node_t *volumes = child(doc, pod, "volumes"), *mounts = child(doc, container, "volumeMounts");
	yaml_node_t *args = child(doc, container, "args");
	const char *volume = NULL, *dir = NULL, *config = NULL, *kubelet_config = NULL;
	char wanted[PATH_MAX];
	bool key_found = false;

	for (size_t i = 0; i < seq_len(volumes); i++)
		if (scalar_is(path_get(doc, seq_at(doc, volumes, i), "configMap.name"), names->configmap))
			volume = scalar(child(doc, seq_at(doc, volumes, i), "name"));
	for (size_t i = 0; volume && i < seq_len(mounts); i++)
		if (scalar_is(child(doc, seq_at(doc, mounts, i), "name"), volume)) {
			dir = scalar(child(doc, seq_at(doc, mounts, i), "mountPath"));
			if (!scalar_is(child(doc, seq_at(doc, mounts, i), "readOnly"), "true"))
				problem(p, "the ConfigMap volume is not mounted read-only");
		}
	if (!volume || !dir) {
		problem(p, "the ConfigMap %s is not mounted", names->configmap);
		return;
	}
	if (!arg_present(doc, args, "--config=", &config)) {
		problem(p, "no --config= argument: evictd would run on built-in defaults");
		return;
	}
	for (size_t k = 0; k < names->n_configmap_keys; k++) {
		snprintf(wanted, sizeof(wanted), "%s/%s", dir, names->configmap_keys[k]);
		key_found |= !strcmp(config, wanted);
	}
	if (!key_found)
		problem(p, "--config=%s is not a key of the ConfigMap mounted at %s", config, dir);
	if (!strncmp(config, "/var/lib/kubelet", strlen("/var/lib/kubelet")))
		problem(p, "--config=%s is the kubelet's file: evictd would evict on the kubelet's thresholds", config);
	if (!arg_present(doc, args, "--kubelet-config=", &kubelet_config))
		problem(p, "no --kubelet-config=: evictd could not say when it clashes with the kubelet");
	else if (strncmp(kubelet_config, "/var/lib/kubelet/", strlen("/var/lib/kubelet/")))
		problem(p, "--kubelet-config=%s is not in the mounted kubelet dir", kubelet_config);
}

/* The pod list and watch present the kubelet's client certificate (--kube-pods-client-cert=auto,
 * the default: <--root-dir>/pki/kubelet-client-current.pem): the base grants the token no pod
 * reads, so the file must be in a volume of the container and readable (the kubelet keeps it
 * 0600 root: the container runs as root). */
static void check_pods_identity(yaml_document_t *doc, yaml_node_t *pod, yaml_node_t *container,
				struct problems *p)
{
	yaml_node_t *args = child(doc, container, "args"), *mounts = child(doc, container, "volumeMounts");
	const char *mode = "auto", *root_dir = "/var/lib/kubelet", *user;
	char cert[PATH_MAX];
	bool mounted = false;

	arg_present(doc, args, "--kube-pods-client-cert=", &mode);
	arg_present(doc, args, "--root-dir=", &root_dir);
	if (!strcmp(mode, "none")) {
		problem(p, "--kube-pods-client-cert=none: the base ClusterRole grants the token no pod reads "
			"(that is tools/overlays/cluster-wide-pod-read)");
		return;
	}
	if (!strcmp(mode, "auto"))
		snprintf(cert, sizeof(cert), "%s/pki/kubelet-client-current.pem", root_dir);
	else
		snprintf(cert, sizeof(cert), "%s", mode);
	for (size_t i = 0; i < seq_len(mounts); i++) {
		const char *path = scalar(child(doc, seq_at(doc, mounts, i), "mountPath"));
		size_t len = path ? strlen(path) : 0;

		mounted |= len && !strncmp(cert, path, len) && cert[len] == '/';
	}
	if (!mounted)
		problem(p, "the kubelet's client certificate %s is in no volume of the container: evictd could "
			"not read its node's pods", cert);
	user = path_scalar(doc, container, "securityContext.runAsUser") ?:
	       path_scalar(doc, pod, "securityContext.runAsUser");
	if (user && strcmp(user, "0"))
		problem(p, "runAsUser %s: the kubelet's client certificate (0600 root) is not readable", user);
}

static void check_daemonset(struct docs *docs, const struct names *names, struct problems *p)
{
	yaml_node_t *root, *pod, *container, *tolerations, *env;
	yaml_document_t *doc = find_kind(docs, "DaemonSet", &root);
	bool tolerates_all = false, node_name = false;
	int live_port, ready_port;

	if (!doc) {
		problem(p, "no DaemonSet document");
		return;
	}
	if (!scalar_is(child(doc, root, "apiVersion"), "apps/v1"))
		problem(p, "DaemonSet apiVersion is not apps/v1");
	pod = path_get(doc, root, "spec.template.spec");
	if (!pod) {
		problem(p, "no spec.template.spec");
		return;
	}
	if (!scalar_is(path_get(doc, root, "metadata.namespace"), names->sa_namespace))
		problem(p, "DaemonSet namespace differs from the ServiceAccount's (%s)", names->sa_namespace);
	if (strcmp(names->namespace_, names->sa_namespace) || strcmp(names->configmap_namespace, names->sa_namespace))
		problem(p, "the Namespace (%s), ServiceAccount (%s) and ConfigMap (%s) namespaces differ",
			names->namespace_, names->sa_namespace, names->configmap_namespace);
	if (!scalar_is(child(doc, path_get(doc, root, "spec.selector.matchLabels"), "app.kubernetes.io/name"), "evictd"))
		problem(p, "selector does not match app.kubernetes.io/name=evictd");
	if (!scalar_is(child(doc, pod, "serviceAccountName"), names->sa_name))
		problem(p, "serviceAccountName is not the RBAC ServiceAccount %s", names->sa_name);
	if (!scalar_is(child(doc, pod, "priorityClassName"), "system-node-critical"))
		problem(p, "priorityClassName is not system-node-critical");
	if (!scalar_is(child(doc, child(doc, pod, "nodeSelector"), "kubernetes.io/os"), "linux"))
		problem(p, "no nodeSelector kubernetes.io/os: linux");
	if (!scalar_is(child(doc, pod, "hostPID"), "true"))
		problem(p, "hostPID is not true");
	/* The API must stay reachable while the node shuts down and the pod network goes. */
	if (!scalar_is(child(doc, pod, "hostNetwork"), "true"))
		problem(p, "hostNetwork is not true");
	else if (!scalar_is(child(doc, pod, "dnsPolicy"), "ClusterFirstWithHostNet"))
		problem(p, "hostNetwork without dnsPolicy ClusterFirstWithHostNet");

	/* Tolerate every taint: an entry with operator Exists, no key and no effect. */
	tolerations = child(doc, pod, "tolerations");
	for (size_t i = 0; i < seq_len(tolerations); i++) {
		yaml_node_t *t = seq_at(doc, tolerations, i);

		if (scalar_is(child(doc, t, "operator"), "Exists") && !child(doc, t, "key") && !child(doc, t, "effect"))
			tolerates_all = true;
	}
	if (!tolerates_all)
		problem(p, "no toleration {operator: Exists} without key and effect: some taints are not tolerated");

	if (seq_len(child(doc, pod, "containers")) != 1) {
		problem(p, "expected exactly one container");
		return;
	}
	container = seq_at(doc, child(doc, pod, "containers"), 0);
	if (!scalar_is(path_get(doc, container, "securityContext.privileged"), "true"))
		problem(p, "container is not privileged");
	env = child(doc, container, "env");
	for (size_t i = 0; i < seq_len(env); i++) {
		yaml_node_t *e = seq_at(doc, env, i);

		if (scalar_is(child(doc, e, "name"), "NODE_NAME") &&
		    scalar_is(path_get(doc, e, "valueFrom.fieldRef.fieldPath"), "spec.nodeName"))
			node_name = true;
	}
	if (!node_name)
		problem(p, "no NODE_NAME from fieldRef spec.nodeName");

	/* Requests, and no CPU limit: a CFS quota would throttle evictd under pressure. */
	if (!path_scalar(doc, container, "resources.requests.cpu") ||
	    !path_scalar(doc, container, "resources.requests.memory"))
		problem(p, "no cpu and memory requests");
	if (path_get(doc, container, "resources.limits.cpu"))
		problem(p, "a CPU limit: throttled exactly when the node is under pressure");

	/* Liveness on /healthz, readiness on /readyz, on the metrics port evictd binds. */
	live_port = probe_port(doc, container, "livenessProbe", "/healthz", p);
	ready_port = probe_port(doc, container, "readinessProbe", "/readyz", p);
	if (live_port && ready_port && live_port != ready_port)
		problem(p, "liveness and readiness probe different ports (%d, %d): evictd serves both on one",
			live_port, ready_port);
	if (live_port) {
		char wanted[64];

		snprintf(wanted, sizeof(wanted), "--metrics-address=0.0.0.0:%d", live_port);
		if (!arg_present(doc, child(doc, container, "args"), wanted, NULL))
			problem(p, "args lack %s: the probe could not reach a loopback-only server", wanted);
	}
	check_mounts(doc, pod, container, p);
	check_pods_identity(doc, pod, container, p);
	check_config_source(doc, pod, container, names, p);
}

/* ---- RBAC ------------------------------------------------------------------------------- */

static void check_rbac(struct docs *docs, const char **sa_name, const char **sa_namespace, struct problems *p)
{
	yaml_node_t *sa_root, *role_root, *binding_root, *rules, *subjects;
	yaml_document_t *sa = find_kind(docs, "ServiceAccount", &sa_root);
	yaml_document_t *role = find_kind(docs, "ClusterRole", &role_root);
	yaml_document_t *binding = find_kind(docs, "ClusterRoleBinding", &binding_root);
	char granted[64][64];

	size_t n_granted = 0;
	bool bound = false;

	*sa_name = *sa_namespace = "";
	if (!sa || !role || !binding) {
		problem(p, "rbac.yaml needs a ServiceAccount, a ClusterRole and a ClusterRoleBinding");
		return;
	}
	*sa_name = path_scalar(sa, sa_root, "metadata.name") ?: "";
	*sa_namespace = path_scalar(sa, sa_root, "metadata.namespace") ?: "";

	rules = child(role, role_root, "rules");
	for (size_t r = 0; r < seq_len(rules); r++) {
		yaml_node_t *rule = seq_at(role, rules, r);
		yaml_node_t *groups = child(role, rule, "apiGroups"), *resources = child(role, rule, "resources");
		yaml_node_t *verbs = child(role, rule, "verbs");

		if (child(role, rule, "nonResourceURLs"))
			problem(p, "rule %zu grants nonResourceURLs", r);
		for (size_t g = 0; g < seq_len(groups); g++)
			for (size_t res = 0; res < seq_len(resources); res++)
				for (size_t v = 0; v < seq_len(verbs); v++) {
					const char *group = scalar(seq_at(role, groups, g));
					const char *resource = scalar(seq_at(role, resources, res));
					const char *verb = scalar(seq_at(role, verbs, v));

					if (!group || !resource || !verb || strchr(group, '*') || strchr(resource, '*') ||
					    strchr(verb, '*')) {
						problem(p, "rule %zu: wildcard or malformed entry", r);
						continue;
					}
					if (n_granted < 64)
						snprintf(granted[n_granted++], 64, "%s/%s:%s", group, resource, verb);
				}
	}
	for (size_t i = 0; i < n_granted; i++) {
		bool expected = false;

		for (size_t e = 0; e < sizeof(expected_grants) / sizeof(expected_grants[0]); e++)
			expected |= !strcmp(granted[i], expected_grants[e]);
		if (!expected && (!strcmp(granted[i], "/pods:list") || !strcmp(granted[i], "/pods:watch")))
			problem(p, "grants %s cluster-wide: evictd reads its node's pods with the kubelet's client "
				"certificate, tools/overlays/cluster-wide-pod-read adds it where it cannot", granted[i]);
		else if (!expected)
			problem(p, "grants %s, which no evictd code path uses", granted[i]);
	}
	for (size_t e = 0; e < sizeof(expected_grants) / sizeof(expected_grants[0]); e++) {
		bool present = false;

		for (size_t i = 0; i < n_granted; i++)
			present |= !strcmp(granted[i], expected_grants[e]);
		if (!present)
			problem(p, "does not grant %s, which evictd needs", expected_grants[e]);
	}

	if (!scalar_is(path_get(binding, binding_root, "roleRef.kind"), "ClusterRole") ||
	    !scalar_is(path_get(binding, binding_root, "roleRef.name"), path_scalar(role, role_root, "metadata.name") ?: "?"))
		problem(p, "the ClusterRoleBinding does not refer to the ClusterRole");
	subjects = child(binding, binding_root, "subjects");
	for (size_t i = 0; i < seq_len(subjects); i++) {
		yaml_node_t *s = seq_at(binding, subjects, i);

		bound |= scalar_is(child(binding, s, "kind"), "ServiceAccount") &&
			 scalar_is(child(binding, s, "name"), *sa_name) &&
			 scalar_is(child(binding, s, "namespace"), *sa_namespace);
	}
	if (!bound)
		problem(p, "the ClusterRoleBinding does not bind the ServiceAccount %s/%s", *sa_namespace, *sa_name);
}


/* Run every checker on the four texts. */
static int check_texts(char *const texts[N_MANIFESTS], struct problems *p)
{
	struct docs docs[N_MANIFESTS];
	struct names names;
	const char *sa_name, *sa_namespace;

	memset(p, 0, sizeof(*p));
	memset(&names, 0, sizeof(names));
	for (int i = 0; i < N_MANIFESTS; i++)
		load_docs(texts[i], &docs[i]);
	check_namespace(&docs[NAMESPACE], &names, p);
	check_rbac(&docs[RBAC], &sa_name, &sa_namespace, p);
	snprintf(names.sa_name, sizeof(names.sa_name), "%s", sa_name);
	snprintf(names.sa_namespace, sizeof(names.sa_namespace), "%s", sa_namespace);
	check_configmap(&docs[CONFIGMAP], &names, p);
	check_daemonset(&docs[DAEMONSET], &names, p);
	for (int i = 0; i < N_MANIFESTS; i++)
		free_docs(&docs[i]);
	return p->n;
}

static void read_all(char *texts[N_MANIFESTS])
{
	for (int i = 0; i < N_MANIFESTS; i++)
		texts[i] = read_text(manifest_files[i]);
}

static void free_all(char *texts[N_MANIFESTS])
{
	for (int i = 0; i < N_MANIFESTS; i++)
		free(texts[i]);
}

static void test_shipped_manifests_pass(void **state)
{
	char *texts[N_MANIFESTS];
	struct problems p;

	read_all(texts);
	if (check_texts(texts, &p))
		fail_msg("tools/deploy problems:\n%s", p.text);
	free_all(texts);
}

struct mutation {
	enum manifest file;
	const char *from;
	const char *to;
	const char *expect;	/* a substring of the problem it must cause */
};

/* One item taken out or bent at a time: each must be reported. */
static void test_checkers_catch_breakage(void **state)
{
	static const struct mutation mutations[] = {
		{ NAMESPACE, "enforce: privileged", "enforce: baseline", "pod-security.kubernetes.io/enforce" },
		{ NAMESPACE, "name: evictd-system", "name: evictd", "namespaces differ" },
		{ DAEMONSET, "hostPID: true", "hostPID: false", "hostPID" },
		{ DAEMONSET, "hostNetwork: true", "hostNetwork: false", "hostNetwork" },
		{ DAEMONSET, "dnsPolicy: ClusterFirstWithHostNet", "dnsPolicy: ClusterFirst", "ClusterFirstWithHostNet" },
		{ DAEMONSET, "priorityClassName: system-node-critical", "priorityClassName: high", "priorityClassName" },
		{ DAEMONSET, "kubernetes.io/os: linux", "kubernetes.io/arch: amd64", "nodeSelector" },
		{ DAEMONSET, "privileged: true", "privileged: false", "privileged" },
		{ DAEMONSET, "- operator: Exists", "- operator: Exists\n          effect: NoSchedule", "taints" },
		{ DAEMONSET, "mountPropagation: Bidirectional", "mountPropagation: HostToContainer", "Bidirectional" },
		{ DAEMONSET, "path: /run/dbus", "path: /run/dbus-elsewhere", "/run/dbus" },
		{ DAEMONSET, "path: /var/log/pods", "path: /var/log/containers", "/var/log/pods" },
		{ DAEMONSET, "path: /run/crio\n", "path: /var/run/crio\n", "CRI-O" },
		{ DAEMONSET, "path: /run/containerd\n", "path: /run/containerd/containerd.sock\n", "containerd" },
		{ DAEMONSET, "path: /var/lib/evictd\n            type: DirectoryOrCreate",
		  "path: /var/lib/evictd\n            type: Directory", "DirectoryOrCreate" },
		{ DAEMONSET, "              mountPath: /var/lib/kubelet\n              readOnly: true",
		  "              mountPath: /var/lib/kubelet", "read-only" },
		{ DAEMONSET, "mountPropagation: HostToContainer", "mountPropagation: None", "HostToContainer" },
		{ DAEMONSET, "      volumes:\n", "      volumes:\n        - name: btf\n          hostPath:\n"
		  "            path: /sys/kernel/btf\n", "without BTF" },
		{ DAEMONSET, "      volumes:\n", "      volumes:\n        - name: btf\n          hostPath:\n"
		  "            path: /sys/kernel/btf\n            type: DirectoryOrCreate\n", "without BTF" },
		{ DAEMONSET, "fieldPath: spec.nodeName", "fieldPath: metadata.name", "NODE_NAME" },
		{ DAEMONSET, "            limits:\n", "            limits:\n              cpu: 250m\n", "CPU limit" },
		{ DAEMONSET, "              cpu: 50m\n", "", "requests" },
		{ DAEMONSET, "path: /healthz", "path: /metricz", "/healthz" },
		{ DAEMONSET, "path: /readyz", "path: /healthz", "/readyz" },
		{ DAEMONSET, "          readinessProbe:", "          startupProbe:", "readinessProbe" },
		{ DAEMONSET, "--metrics-address=0.0.0.0:9808", "--metrics-address=127.0.0.1:9808", "metrics-address" },
		{ DAEMONSET, "serviceAccountName: evictd", "serviceAccountName: default", "serviceAccountName" },
		{ DAEMONSET, "--config=/etc/evictd/config.yaml", "--config=/var/lib/kubelet/config.yaml", "kubelet's file" },
		{ DAEMONSET, "- --kubelet-config=/var/lib/kubelet/config.yaml", "- --dry-run", "--kubelet-config" },
		{ DAEMONSET, "name: evictd-config", "name: other-config", "not mounted" },
		{ CONFIGMAP, "memory.available: \"500Mi\"", "memory.available: \"100Mi\"", "no later than" },
		{ CONFIGMAP, "nodefs.available: \"15%\"", "nodefs.available: \"20Gi\"", "cannot be compared" },
		{ CONFIGMAP, "    shutdownGracePeriod: 30s\n    shutdownGracePeriodCriticalPods: 10s\n", "", "neither" },
		{ CONFIGMAP, "oomGuard: \"10%\"", "oomGuard: \"lots\"", "not a valid evictd configuration" },
		{ CONFIGMAP, "  config.yaml: |", "  evictd.yaml: |", "no data config.yaml" },
		{ RBAC, "resources: [\"pods/status\"]\n    verbs: [\"patch\"]",
		  "resources: [\"pods/status\", \"pods\"]\n    verbs: [\"patch\", \"update\"]", "/pods:update" },
		/* evictd deletes no pod (doc/DESIGN.md §8): granting it again is caught. */
		{ RBAC, "resources: [\"pods/status\"]\n    verbs: [\"patch\"]",
		  "resources: [\"pods/status\", \"pods\"]\n    verbs: [\"patch\", \"delete\"]", "/pods:delete" },
		/* Pod reads cluster-wide are the overlay's, not the base's. */
		{ RBAC, "  - apiGroups: [\"apps\"]",
		  "  - apiGroups: [\"\"]\n    resources: [\"pods\"]\n    verbs: [\"list\", \"watch\"]\n  - apiGroups: [\"apps\"]",
		  "cluster-wide-pod-read" },
		{ RBAC, "resources: [\"pods/status\"]\n    verbs: [\"patch\"]",
		  "resources: [\"pods/status\"]\n    verbs: [\"list\"]", "/pods/status:patch" },
		{ DAEMONSET, "- --root-dir=/var/lib/kubelet", "- --root-dir=/srv/kubelet", "client certificate /srv/kubelet" },
		{ DAEMONSET, "- --root-dir=/var/lib/kubelet", "- --root-dir=/var/lib/kubelet\n            - --kube-pods-client-cert=none",
		  "cluster-wide-pod-read" },
		{ DAEMONSET, "            privileged: true", "            privileged: true\n            runAsUser: 1000", "runAsUser" },
		{ RBAC, "resources: [\"pods/status\"]", "resources: [\"pods/*\"]", "wildcard" },
		{ RBAC, "resources: [\"nodes\"]\n    verbs: [\"get\", \"patch\"]", "resources: [\"nodes\"]\n    verbs: [\"*\"]",
		  "wildcard" },
		{ RBAC, "apiGroups: [\"\"]", "apiGroups: [\"*\"]", "wildcard" },
		{ RBAC, "resources: [\"events\"]", "resources: [\"events\", \"secrets\"]", "/secrets:create" },
		{ RBAC, "    name: evictd\n    namespace: evictd-system\n", "    name: other\n    namespace: evictd-system\n",
		  "does not bind" },
	};
	char *texts[N_MANIFESTS];

	read_all(texts);
	for (size_t i = 0; i < sizeof(mutations) / sizeof(mutations[0]); i++) {
		const struct mutation *m = &mutations[i];
		char *original = texts[m->file];
		struct problems p;

		texts[m->file] = mutate(original, m->from, m->to);
		check_texts(texts, &p);
		if (!p.n || !strstr(p.text, m->expect))
			fail_msg("mutation %zu (%s -> %s) not caught as \"%s\"; problems:\n%s", i, m->from, m->to,
				 m->expect, p.text);
		free(texts[m->file]);
		texts[m->file] = original;
	}
	free_all(texts);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shipped_manifests_pass),
		cmocka_unit_test(test_checkers_catch_breakage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
