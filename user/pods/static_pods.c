// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Static pods known from the node itself, without the API server (doc/DESIGN.md §5, "pods
 * without metadata"). A static pod's mirror pod lives in the API server, and on a control-plane
 * node that API server is itself a static pod: with it down, the API cannot say which pod
 * cgroups are etcd or kube-apiserver. The kubelet never evicts them ([pod_update.go]
 * IsStaticPod: kubernetes.io/config.source != "api"), so evictd must know them locally.
 *
 * The local source: the kubelet's static pod manifest directory (staticPodPath, kubeadm's
 * /etc/kubernetes/manifests) gives each static pod's namespace and name, and the kubelet's pod
 * log directories give the UID it runs under:
 *  - pkg/kubelet/config/file.go extractFromDir: every regular file not starting with "." is
 *    one Pod (or a PodList);
 *  - pkg/kubelet/config/common.go applyDefaults: the pod's name becomes generatePodName(name,
 *    nodeName) = "<name>-<lower(nodeName)>", an empty namespace "default", and an empty UID
 *    an md5 over the Go object dump (hash.DeepHashObject), which cannot be recomputed outside
 *    Go - so the UID is not computed but looked up;
 *  - pkg/kubelet/kuberuntime/helpers.go BuildPodLogsDirectory: the kubelet creates
 *    <podLogsDir>/<namespace>_<name>_<uid> for every pod sandbox it starts, static ones
 *    included, before the pod's cgroup holds a container.
 * A log directory whose namespace and name are a manifest's is a static pod: that UID (the
 * cgroup's name) is marked static. A manifest with metadata.uid set is taken at its word
 * (applyDefaults keeps it). The plain "<name>" form is matched too (a kubelet that stops
 * appending the node name locally). Every error leans to protection: a pod wrongly marked
 * static is never evicted, which is the kubelet's own treatment of static pods.
 *
 * The source wraps the real metadata source (pods file or API server) and adds what it
 * knows: is_static on a listed pod, or an entry of its own for a pod the list lacks (the
 * API server is down). Re-scanned when the manifest or log directory changes (its mtime) and
 * at least every STATIC_RESCAN_NS; a scan reads a few small local files.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "pods/internal.h"
#include "sys/clock.h"
#include "sys/fileio.h"
#include "sys/log.h"

#define STATIC_RESCAN_NS (30LL * 1000000000)
/* kubeadm writes four manifests; anything beyond these limits is not a manifest dir. */
#define STATIC_MAX_MANIFESTS 256
#define STATIC_MAX_MANIFEST_BYTES (1u << 20)
#define STATIC_MAX_DEPTH 64
#define STATIC_MAX_PODS 1024

struct static_pod {
	char namespace_[64];
	char name[256];		/* as in the manifest, without the node suffix */
	char uid[64];		/* metadata.uid when the manifest sets it, else "" */
};

struct static_source {
	struct pods_meta_source source;	/* first: pods.c hands us back this pointer */
	struct pods_meta_source *inner;	/* may be NULL */
	char manifest_dir[PATH_MAX];
	char log_dir[PATH_MAX];
	char node_lower[256];
	char name[PATH_MAX + 32];

	struct pod_meta_list inner_list;	/* the inner source's last list */
	struct pod_meta_list found;		/* the static pods found by the last scan */
	bool scanned;
	int64_t scanned_ns;
	struct timespec manifest_mtime, log_mtime;
	ino_t manifest_ino, log_ino;
	bool warned_manifests;
};

/* ---- one manifest ------------------------------------------------------------------------ */

enum frame_role { ROLE_OTHER, ROLE_ROOT, ROLE_META, ROLE_ITEMS, ROLE_ITEM, ROLE_ITEM_META };

struct frame {
	enum frame_role role;
	bool mapping;
	bool expect_key;
	char key[32];
};

static void set_field(struct static_pod *pod, const char *key, const char *value)
{
	if (!strcmp(key, "name"))
		snprintf(pod->name, sizeof(pod->name), "%s", value);
	else if (!strcmp(key, "namespace"))
		snprintf(pod->namespace_, sizeof(pod->namespace_), "%s", value);
	else if (!strcmp(key, "uid"))
		snprintf(pod->uid, sizeof(pod->uid), "%s", value);
}

static enum frame_role child_role(const struct frame *parent)
{
	if (!parent)
		return ROLE_ROOT;
	if (parent->role == ROLE_ROOT && parent->mapping && !strcmp(parent->key, "metadata"))
		return ROLE_META;
	if (parent->role == ROLE_ROOT && parent->mapping && !strcmp(parent->key, "items"))
		return ROLE_ITEMS;
	if (parent->role == ROLE_ITEMS && !parent->mapping)
		return ROLE_ITEM;
	if (parent->role == ROLE_ITEM && parent->mapping && !strcmp(parent->key, "metadata"))
		return ROLE_ITEM_META;
	return ROLE_OTHER;
}

/*
 * The pods one manifest describes (file.go tryDecodeSinglePod, then tryDecodePodList): the
 * first YAML (or JSON) document, its metadata, or each items[].metadata. Events, not a
 * document tree: bounded depth, nothing expanded. Returns the number added or -EINVAL.
 */
static int parse_manifest(const char *text, size_t len, struct static_pod *out, size_t max)
{
	struct frame stack[STATIC_MAX_DEPTH];
	struct static_pod root = { 0 }, item = { 0 };
	yaml_parser_t parser;
	yaml_event_t event;
	size_t depth = 0, n = 0;
	bool has_items = false, done = false;
	int err = 0;

	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	while (!done && !err) {
		struct frame *top = depth ? &stack[depth - 1] : NULL;

		if (!yaml_parser_parse(&parser, &event)) {
			err = -EINVAL;
			break;
		}
		switch (event.type) {
		case YAML_MAPPING_START_EVENT:
		case YAML_SEQUENCE_START_EVENT:
			if (depth == STATIC_MAX_DEPTH) {
				err = -EINVAL;
				break;
			}
			stack[depth] = (struct frame){
				.role = child_role(top),
				.mapping = event.type == YAML_MAPPING_START_EVENT,
				.expect_key = true,
			};
			if (stack[depth].role == ROLE_ITEMS)
				has_items = true;
			if (stack[depth].role == ROLE_ITEM)
				memset(&item, 0, sizeof(item));
			depth++;
			break;
		case YAML_MAPPING_END_EVENT:
		case YAML_SEQUENCE_END_EVENT:
			if (!depth) {
				err = -EINVAL;
				break;
			}
			depth--;
			if (stack[depth].role == ROLE_ITEM && item.name[0] && n < max)
				out[n++] = item;
			if (depth && stack[depth - 1].mapping)
				stack[depth - 1].expect_key = true;
			break;
		case YAML_SCALAR_EVENT:
		case YAML_ALIAS_EVENT:
			if (!top || !top->mapping)
				break;
			if (top->expect_key) {
				snprintf(top->key, sizeof(top->key), "%s",
					 event.type == YAML_SCALAR_EVENT ? (const char *)event.data.scalar.value : "");
				top->expect_key = false;
				break;
			}
			if (event.type == YAML_SCALAR_EVENT && top->role == ROLE_META)
				set_field(&root, top->key, (const char *)event.data.scalar.value);
			else if (event.type == YAML_SCALAR_EVENT && top->role == ROLE_ITEM_META)
				set_field(&item, top->key, (const char *)event.data.scalar.value);
			top->expect_key = true;
			break;
		case YAML_DOCUMENT_END_EVENT:
		case YAML_STREAM_END_EVENT:
			done = true;	/* the first document only, as yaml.ToJSON reads */
			break;
		default:
			break;
		}
		yaml_event_delete(&event);
	}
	yaml_parser_delete(&parser);
	if (err)
		return err;
	if (!has_items && root.name[0] && n < max)
		out[n++] = root;
	for (size_t i = 0; i < n; i++)
		if (!out[i].namespace_[0])
			strcpy(out[i].namespace_, "default");	/* applyDefaults */
	return (int)n;
}

/* ---- the scan ------------------------------------------------------------------------------- */

static bool same_stamp(const struct stat *st, const struct timespec *mtime, ino_t ino)
{
	return st->st_ino == ino && st->st_mtim.tv_sec == mtime->tv_sec && st->st_mtim.tv_nsec == mtime->tv_nsec;
}

/* One manifest file's pods into pods[0..max): the count, -1 when it is skipped (logged), -2
 * when it is no regular file (a directory, a FIFO: skipped silently, as file.go does; a FIFO
 * is never opened blocking). */
static int read_manifest(const char *path, char *text, struct static_pod *pods, size_t max)
{
	ssize_t len;
	int fd, got;

	fd = fileio_open_regular(path, O_RDONLY, 0, NULL);
	if (fd < 0)
		return -2;
	len = fileio_pread_fd(fd, text, STATIC_MAX_MANIFEST_BYTES + 1);
	close(fd);
	if (len < 0 || (size_t)len > STATIC_MAX_MANIFEST_BYTES) {
		log_warn("pods: static pod manifest %s: %s; skipped", path,
			 len < 0 ? strerror((int)-len) : "larger than 1 MiB");
		return -1;
	}
	got = parse_manifest(text, (size_t)len, pods, max);
	if (got < 0) {
		log_warn("pods: static pod manifest %s: not a Pod in YAML or JSON; skipped", path);
		return -1;
	}
	return got;
}

/*
 * The manifests' pods. staticPodPath is a directory or a single file, as the kubelet reads it
 * (pkg/kubelet/config/file.go sourceFile.extractFromPath: os.Stat, a directory entry by entry
 * (extractFromDir), a regular file as one manifest (extractFromFile)). Returns the count;
 * problems are logged once per scan that finds them.
 */
static size_t read_manifests(struct static_source *s, struct static_pod *pods, size_t max)
{
	struct dirent *entry;
	struct stat st;
	size_t n = 0, files = 0;
	char *text;
	DIR *dir;
	int got;

	if (stat(s->manifest_dir, &st) == 0 && S_ISREG(st.st_mode)) {
		text = malloc(STATIC_MAX_MANIFEST_BYTES + 1);
		got = text ? read_manifest(s->manifest_dir, text, pods, max) : -1;
		free(text);
		return got > 0 ? (size_t)got : 0;
	}
	dir = opendir(s->manifest_dir);
	if (!dir) {
		if (errno != ENOENT && !s->warned_manifests)
			log_warn("pods: static pod manifests %s: %m; static pods are known only from the API",
				 s->manifest_dir);
		s->warned_manifests = true;
		return 0;
	}
	text = malloc(STATIC_MAX_MANIFEST_BYTES + 1);
	while (text && (entry = readdir(dir)) && files < STATIC_MAX_MANIFESTS) {
		char path[PATH_MAX + 256];

		if (entry->d_name[0] == '.')	/* file.go: hidden files are ignored */
			continue;
		snprintf(path, sizeof(path), "%s/%s", s->manifest_dir, entry->d_name);
		got = read_manifest(path, text, pods + n, max - n);
		if (got == -2)
			continue;	/* not counted: no regular file */
		files++;
		if (got > 0)
			n += (size_t)got;
	}
	free(text);
	closedir(dir);
	return n;
}

/* Whether a log dir "<namespace>_<name>_<uid>" is one of pods; its UID in uid. */
static const struct static_pod *match_log_dir(const struct static_source *s, const char *entry,
					      const struct static_pod *pods, size_t n, char *uid, size_t uid_len)
{
	const char *first = strchr(entry, '_'), *last = strrchr(entry, '_');
	char namespace_[64], name[256];

	if (!first || first == last || (size_t)(first - entry) >= sizeof(namespace_) ||
	    (size_t)(last - first - 1) >= sizeof(name) || !pods_uid_is_valid(last + 1) ||
	    strlen(last + 1) >= uid_len)
		return NULL;
	memcpy(namespace_, entry, (size_t)(first - entry));
	namespace_[first - entry] = '\0';
	memcpy(name, first + 1, (size_t)(last - first - 1));
	name[last - first - 1] = '\0';
	for (size_t i = 0; i < n; i++) {
		char full[600];

		if (strcmp(pods[i].namespace_, namespace_))
			continue;
		snprintf(full, sizeof(full), "%s-%s", pods[i].name, s->node_lower);
		if (!strcmp(name, full) || !strcmp(name, pods[i].name)) {
			snprintf(uid, uid_len, "%s", last + 1);
			return &pods[i];
		}
	}
	return NULL;
}

/* One static pod's UID, once; named as its mirror pod is in the API: "<name>-<node>"
 * (common.go generatePodName). 0 or -ENOMEM. */
static int add_found(struct pod_meta_list *list, const struct static_pod *pod, const char *uid,
		     const char *node_lower)
{
	struct pod_meta *items, *meta;

	for (size_t i = 0; i < list->n_items; i++)
		if (!strcmp(list->items[i].cgroup_uid, uid))
			return 0;
	items = realloc(list->items, (list->n_items + 1) * sizeof(*items));
	if (!items)
		return -ENOMEM;
	list->items = items;
	meta = &items[list->n_items++];
	memset(meta, 0, sizeof(*meta));
	snprintf(meta->uid, sizeof(meta->uid), "%s", uid);
	snprintf(meta->cgroup_uid, sizeof(meta->cgroup_uid), "%s", uid);
	snprintf(meta->namespace_, sizeof(meta->namespace_), "%s", pod->namespace_);
	snprintf(meta->name, sizeof(meta->name), "%.*s%s%.*s", 120, pod->name, node_lower[0] ? "-" : "",
		 120, node_lower);
	meta->is_static = true;
	meta->termination_grace_period_s = -1;
	return 0;
}

/* 1 when the set of static pods was scanned again, 0 when the last scan stands. */
static int scan(struct static_source *s)
{
	struct stat manifest_st = { 0 }, log_st = { 0 };
	struct pod_meta_list found = { 0 };
	struct static_pod *pods;
	struct dirent *entry;
	int64_t now = clock_monotonic_ns();
	size_t n;
	DIR *dir;

	stat(s->manifest_dir, &manifest_st);
	stat(s->log_dir, &log_st);
	if (s->scanned && now - s->scanned_ns < STATIC_RESCAN_NS &&
	    same_stamp(&manifest_st, &s->manifest_mtime, s->manifest_ino) &&
	    same_stamp(&log_st, &s->log_mtime, s->log_ino))
		return 0;
	s->scanned = true;
	s->scanned_ns = now;
	s->manifest_mtime = manifest_st.st_mtim;
	s->manifest_ino = manifest_st.st_ino;
	s->log_mtime = log_st.st_mtim;
	s->log_ino = log_st.st_ino;

	pods = calloc(STATIC_MAX_PODS, sizeof(*pods));
	if (!pods)
		return 0;
	n = read_manifests(s, pods, STATIC_MAX_PODS);
	for (size_t i = 0; i < n; i++)
		if (pods[i].uid[0] && pods_uid_is_valid(pods[i].uid))
			add_found(&found, &pods[i], pods[i].uid, s->node_lower);
	dir = n ? opendir(s->log_dir) : NULL;
	while (dir && (entry = readdir(dir))) {
		const struct static_pod *pod;
		char uid[64];

		if (entry->d_name[0] == '.')
			continue;
		pod = match_log_dir(s, entry->d_name, pods, n, uid, sizeof(uid));
		if (pod && add_found(&found, pod, uid, s->node_lower))
			break;
	}
	if (dir)
		closedir(dir);
	if (found.n_items != s->found.n_items)
		log_info("pods: %zu static pods known from %s and %s", found.n_items, s->manifest_dir,
			 s->log_dir);
	free(pods);
	pod_meta_list_free(&s->found);
	s->found = found;
	return 1;
}

/* ---- the source ------------------------------------------------------------------------------- */

/* The inner list with the static pods folded in, sorted by cgroup_uid as pods.c joins. */
static int merge(struct static_source *s, struct pod_meta_list *list)
{
	size_t n = s->inner_list.n_items;
	struct pod_meta *items = malloc((n + s->found.n_items + 1) * sizeof(*items));

	if (!items)
		return -ENOMEM;
	if (n)
		memcpy(items, s->inner_list.items, n * sizeof(*items));
	qsort(items, n, sizeof(*items), pods_cmp_meta_cgroup_uid);
	for (size_t i = 0, listed_n = n; i < s->found.n_items; i++) {
		/* Only the inner list's part is sorted: search that. */
		struct pod_meta *listed = bsearch(&s->found.items[i], items, listed_n, sizeof(*items),
						  pods_cmp_meta_cgroup_uid);

		if (listed)
			listed->is_static = true;	/* its mirror pod, or a list that missed it */
		else
			items[n++] = s->found.items[i];	/* the API does not know it (now) */
	}
	qsort(items, n, sizeof(*items), pods_cmp_meta_cgroup_uid);
	pod_meta_list_free(list);
	list->items = items;
	list->n_items = n;
	/* The inner list's refusals, for join.c to log once per pod. */
	if (s->inner_list.n_refused) {
		list->refused = calloc(POD_REFUSALS_KEPT, sizeof(*list->refused));
		if (!list->refused)
			return -ENOMEM;
		memcpy(list->refused, s->inner_list.refused, POD_REFUSALS_KEPT * sizeof(*list->refused));
		list->n_refused = s->inner_list.n_refused;
	}
	return 0;
}

static int static_refresh(struct pods_meta_source *source, struct pod_meta_list *list)
{
	struct static_source *s = (struct static_source *)source;
	int inner = s->inner ? s->inner->refresh(s->inner, &s->inner_list) : 0;
	int rescanned;

	if (inner == -EINPROGRESS)
		return inner;
	rescanned = scan(s);
	if (inner != 1 && !rescanned)
		return inner;
	if (merge(s, list))
		return -ENOMEM;
	return 1;
}

static int static_wait(struct pods_meta_source *source, int64_t timeout_ns)
{
	struct static_source *s = (struct static_source *)source;

	return s->inner && s->inner->wait ? s->inner->wait(s->inner, timeout_ns) : 0;
}

static bool static_pending(struct pods_meta_source *source)
{
	struct static_source *s = (struct static_source *)source;

	return s->inner && s->inner->pending && s->inner->pending(s->inner);
}

static void static_destroy(struct pods_meta_source *source)
{
	struct static_source *s = (struct static_source *)source;

	if (s->inner && s->inner->destroy)
		s->inner->destroy(s->inner);
	pod_meta_list_free(&s->inner_list);
	pod_meta_list_free(&s->found);
	free(s);
}

struct pods_meta_source *pods_static_source_new(struct pods_meta_source *inner,
						const struct pods_static_options *options)
{
	struct static_source *s = calloc(1, sizeof(*s));
	const char *manifest_dir = options && options->manifest_dir && options->manifest_dir[0] ?
				   options->manifest_dir : PODS_DEFAULT_STATIC_POD_PATH;
	const char *log_dir = options && options->log_dir && options->log_dir[0] ? options->log_dir :
			      PODS_DEFAULT_LOG_DIR;
	const char *root = options ? options->root : NULL;
	const char *node = options && options->node_name ? options->node_name : "";

	if (!s || fileio_join_root(s->manifest_dir, sizeof(s->manifest_dir), root, manifest_dir) ||
	    fileio_join_root(s->log_dir, sizeof(s->log_dir), root, log_dir) ||
	    strlen(node) >= sizeof(s->node_lower)) {
		free(s);
		log_err("pods: cannot set up the static pod source; static pods are known only from %s",
			inner ? inner->name : "nowhere");
		return inner;
	}
	for (size_t i = 0; node[i]; i++)
		s->node_lower[i] = (char)(node[i] >= 'A' && node[i] <= 'Z' ? node[i] - 'A' + 'a' : node[i]);
	s->inner = inner;
	snprintf(s->name, sizeof(s->name), "%s", inner ? inner->name : s->manifest_dir);
	s->source.name = s->name;
	s->source.refresh = static_refresh;
	s->source.wait = static_wait;
	s->source.pending = static_pending;
	s->source.destroy = static_destroy;
	return &s->source;
}
