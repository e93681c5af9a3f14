/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The pods (Kubernetes mode) or workloads (standalone mode) evictd may evict, as struct pod
 * (rank.h): cgroups discovered under the kubelet's kubepods tree or under --workload-root
 * dirs, usage re-read from cgroup v2 files on every refresh, metadata from a pluggable
 * source (a PodList file now; the API server later) joined by pod UID.
 */
#ifndef EVICTD_PODS_H
#define EVICTD_PODS_H

#include <limits.h>
#include <sys/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/rank.h"
#include "pods/prefs.h"

#define PODS_MAX_WORKLOAD_ROOTS 16

/* Kubelet annotations (pkg/kubelet/types/pod_update.go). */
#define POD_ANNOTATION_CONFIG_SOURCE "kubernetes.io/config.source"
#define POD_ANNOTATION_CONFIG_MIRROR "kubernetes.io/config.mirror"
#define POD_ANNOTATION_CONFIG_HASH "kubernetes.io/config.hash"

/*
 * Standalone workloads: cgroup xattrs, both optional (default 0). trusted.evictd.* (only a
 * process with CAP_SYS_ADMIN can set trusted.* xattrs) is read on every workload cgroup and
 * wins; user.evictd.* only on a cgroup directory owned by root. A delegated cgroup's owner can
 * set user.* xattrs on it and must not be able to opt out of eviction that way (pods.c,
 * workload_xattr). An ignored user.* value, or a value holding a NUL byte, is logged once and
 * the workload keeps 0.
 */
#define PODS_XATTR_PRIORITY "user.evictd.priority"
#define PODS_XATTR_MEMORY_REQUEST "user.evictd.memory_request"
#define PODS_XATTR_TRUSTED_PRIORITY "trusted.evictd.priority"
#define PODS_XATTR_TRUSTED_MEMORY_REQUEST "trusted.evictd.memory_request"

/*
 * The largest --pods-file read. A node runs at most a few hundred pods: the kubelet's maxPods
 * defaults to 110 and Kubernetes' large-cluster limits stay at 110 per node
 * (kubernetes.io/docs/setup/best-practices/cluster-large), dense setups raise it to a few
 * hundred. `kubectl get pods -o json` spends 5-20 KiB per pod with managedFields, so 500 pods
 * are at most ~10 MiB; 16 MiB leaves room and still parses in about a second in the worker.
 * Anything larger is not this node's pod list, and is refused with one line naming the file.
 */
#define PODS_FILE_MAX_BYTES (16u << 20)

/* One pod as a metadata source describes it, before the join with the cgroup tree. */
struct pod_meta {
	char uid[64];		/* metadata.uid */
	/* The UID the kubelet names the pod cgroup after. For a mirror pod that is the static
	 * pod's UID, i.e. the config.mirror (= config.hash) annotation, not the API server's
	 * metadata.uid; every other pod uses metadata.uid. */
	char cgroup_uid[64];
	char namespace_[64];
	char name[256];
	enum pod_qos qos;	/* status.qosClass when qos_known */
	bool qos_known;
	int32_t priority;	/* spec.priority, default 0 */
	bool is_static;
	bool is_mirror;
	bool is_daemonset;	/* an ownerReference kind DaemonSet with controller: true */
	char daemonset_uid[64];	/* that ownerReference's uid ("" if none or too long) */
	bool terminal;		/* status.phase Succeeded or Failed: no cgroup is expected */
	int64_t termination_grace_period_s;	/* -1: unset */
	int64_t memory_request;			/* bytes, rank_pod_request() */
	int64_t ephemeral_storage_request;	/* bytes, rank_pod_request() */
	struct pod_container containers[POD_MAX_NAMED_CONTAINERS];	/* pods/containers.c */
	size_t n_containers;
	bool joined;		/* set by pods_refresh: a cgroup was found for it */
};

/* A pod of a list refused alone (doc/DESIGN.md §5, "Pod identity"): its cgroup, if any, is
 * then without metadata (fails closed). key: its metadata.uid when readable, else its path. */
struct pod_refusal {
	char key[80];
	char message[256];
};

#define POD_REFUSALS_KEPT 32	/* messages kept per list; n_refused counts them all */

struct pod_meta_list {
	struct pod_meta *items;
	size_t n_items;
	struct pod_refusal *refused;	/* the first POD_REFUSALS_KEPT refusals, or NULL */
	size_t n_refused;		/* pods of the document refused */
};

/* Pods refused by every parse so far (any source, any thread): evictd_pods_refused_total. */
uint64_t pods_refused_total(void);

void pod_meta_list_free(struct pod_meta_list *list);

/*
 * Parse `kubectl get pods -o json` output: kind List or PodList with items[], or one Pod.
 * `name` (the file) prefixes messages. node_name non-NULL: keep only pods bound to that node
 * (spec.nodeName). Malformed JSON rejects the whole document with -EINVAL and one message
 * naming the byte ("pods.json: malformed JSON at byte 12: ..."), logged and copied to errbuf
 * when given; *list is then untouched. A well-formed list with one bad pod (a wrong type, an
 * out-of-range number, a field over its buffer, missing metadata.uid/name, or a mirror claim on
 * another pod's UID) refuses that pod alone: the rest is kept, the refusal is in
 * list->refused (message naming the field path, "pods.json: items[2].spec.priority: expected
 * int, got string"), counted in pods_refused_total() and logged here (once per parse). A single
 * Pod document that is bad is -EINVAL as before. Returns 0, -EINVAL or -ENOMEM.
 */
int pods_parse_podlist(const char *json, size_t len, const char *name, const char *node_name,
		       struct pod_meta_list *list, char *errbuf, size_t errlen);

/*
 * A metadata source (Kubernetes mode). refresh() is called on every pods_refresh() and must be
 * cheap when nothing changed. It returns 1 after replacing *list (freeing the old items), 0
 * when the list is unchanged, or negative errno when it could not be brought up to date; the
 * last good list then stays in use and the source logs the failure once, not every call.
 * The API-server source will be one more implementation of this.
 */
struct pods_meta_source {
	const char *name;	/* for messages: the file path, "apiserver" */
	/* May also return -EINPROGRESS: there is no list yet and one is being read (the
	 * first one); pods_refresh() then holds (see there). */
	int (*refresh)(struct pods_meta_source *source, struct pod_meta_list *list);
	/* Optional: block until the read in progress (if any) has finished or timeout_ns has
	 * passed, so that the next refresh() takes its outcome. 0 or -ETIMEDOUT. For --once
	 * and tests only: never on the daemon's loop. */
	int (*wait)(struct pods_meta_source *source, int64_t timeout_ns);
	/* Optional: true while a newer version than the list in force exists and is being read
	 * (the pods file changed, its parse has not been swapped in yet). Cheap (a stat); on the
	 * loop. */
	bool (*pending)(struct pods_meta_source *source);
	void (*destroy)(struct pods_meta_source *source);
};

/*
 * --pods-file: re-read and re-parsed only when the file's mtime, size, ctime or inode changes,
 * and then in a worker thread (every signal blocked) on its own copy of what it needs: refresh()
 * only stats the path, starts the worker for a new version and swaps a finished list in, so it
 * never waits; the previous list stays in force meanwhile. The first read starts here. A
 * non-regular file (a FIFO, a device) and a file over PODS_FILE_MAX_BYTES are refused with one
 * line naming the file, once per version; nothing ever opens them without O_NONBLOCK.
 * Returns NULL on allocation failure. node_name as for pods_parse_podlist (copied).
 */
struct pods_meta_source *pods_file_source_new(const char *path, const char *node_name);

/*
 * Static pods known from the node itself (pods/static_pods.c, doc/DESIGN.md §5): the kubelet's
 * static pod manifests give their namespace and name, the kubelet's pod log directories
 * "<namespace>_<name>-<node>_<uid>" the UID their cgroup is named after. Wraps inner (the
 * pods file or the API server; NULL = none) and owns it: a listed pod found static gets
 * is_static, a static pod the list lacks (API server down) is added as a static entry. So a
 * static pod is never evicted even with the API server unreachable. On allocation failure
 * inner is returned as is (logged).
 */
#define PODS_DEFAULT_STATIC_POD_PATH "/etc/kubernetes/manifests"	/* kubelet staticPodPath (kubeadm) */

struct pods_static_options {
	const char *root;		/* prefix of both dirs; NULL, "" or "/" = this machine */
	const char *manifest_dir;	/* NULL or "": PODS_DEFAULT_STATIC_POD_PATH */
	const char *log_dir;		/* NULL or "": PODS_DEFAULT_LOG_DIR */
	const char *node_name;		/* the mirror pods' name suffix */
};

struct pods_meta_source *pods_static_source_new(struct pods_meta_source *inner,
						const struct pods_static_options *options);

struct pods_options {
	const char *root;		/* prefix for every path; NULL, "" or "/" = this machine */
	/* The cgroup v2 mount relative to root; NULL = detect (/sys/fs/cgroup, then
	 * /sys/fs/cgroup/unified). */
	const char *cgroup_dir;
	/* The kubelet's --cgroup-root relative to the mount; NULL = "/". */
	const char *kubelet_cgroup_root;
	/* Standalone mode when n_workload_roots > 0: the units below each root (a host path,
	 * joined under root; slices and user managers descended into, workloads.c) are the
	 * workloads and the kubepods tree is not scanned. */
	const char *const *workload_roots;
	size_t n_workload_roots;
	/* Kubernetes mode: where metadata comes from; NULL = none (every pod is "without
	 * metadata", see pods_refresh). Owned by the pods table from pods_open() on, even when
	 * it fails. */
	struct pods_meta_source *meta_source;
	/* Refreshes read only what is cheap per pod (cgroup.events, memory.current,
	 * pids.current): working_set_unrefined / processes_unrefined (rank.h) until
	 * pods_refine_usage() reads memory.stat and walks cgroup.threads for the pods the
	 * ranking reaches (doc/DESIGN.md §5, "Ranking 1,000 pods"). false: read everything. */
	bool cheap_usage;
	/* Standalone: workloadPreferences (pods/prefs.h), copied; NULL = none. */
	const struct workload_prefs *workload_prefs;
};

struct pods;

/* Returns 0 and *out, -ENOMEM, -EINVAL (bad options), or -ENOENT when no cgroup v2 mount
 * is found. Nothing is scanned until pods_refresh(). */
int pods_open(struct pods **out, const struct pods_options *options);
void pods_close(struct pods *pods);

/*
 * Bring the table up to date: refresh metadata (the source decides whether anything is
 * re-read), rediscover the cgroups, re-read every pod's usage, mark evictd's own pod
 * (is_self). Every pod and workload gets its cgroup_id (the cgroup directory's inode, read
 * through the same fd as its usage). Disk use measured earlier (disk_bytes, disk_inodes)
 * is kept for a pod with the same UID and cgroup_id; a cgroup recreated at the same path
 * (a new id) starts at 0. Allocates only when the number of pods grows. Pointers from an
 * earlier pods_list() are invalid afterwards.
 *
 * Kubernetes mode joins by UID. A pod the source lists without a cgroup is skipped (nothing
 * to kill) and logged once. A cgroup without metadata gets meta_unknown (rank.h: no kubelet
 * threshold evicts it, only the OOM guard), logged once, with priority 0, its QoS from the
 * path, and as request what the kubelet wrote into the cgroup:
 * memory.max for a Guaranteed pod (its limit equals its request), memory.min for a Burstable
 * one (set with MemoryQoS; else 0), 0 for BestEffort. Static pods are known without the API
 * server from the node's static pod manifests (pods_static_source_new).
 *
 * Returns 0, or negative errno when nothing could be scanned (the table is then empty).
 * -EINPROGRESS: the metadata source has no list yet and is reading its first one (the
 * pods-file worker). The table is then empty on purpose, logged once: without the list static
 * pods would rank as ordinary pods, so nothing is evictable until it is in; a later refresh
 * takes it. The hold lasts one parse (bounded by PODS_FILE_MAX_BYTES); a failed read ends it.
 */
int pods_refresh(struct pods *pods);

/* Block until the metadata source's read in progress has finished (its wait op), at most
 * timeout_ns: for --once, which decides once and must see the pods file. 0 (also without a
 * source or a wait op) or -ETIMEDOUT. Never call it from the daemon's loop. */
int pods_meta_wait(struct pods *pods, int64_t timeout_ns);

/* A live pod cgroup of the last refresh that no metadata explains (meta_unknown), while the
 * metadata source is reading a newer version (its pending op): that pod may be named in it.
 * The name of one such pod's cgroup in *example (may be NULL). */
bool pods_meta_settling(const struct pods *pods, const char **example);

/* Re-read only the usage of the pods found by the last pods_refresh(): no readdir, no
 * metadata. A pod whose cgroup has gone is marked stats_missing; one whose cgroup was
 * recreated (another cgroup_id at the path) also exited, with its old cgroup_id kept: it is
 * no victim until pods_refresh() finds the new cgroup. Returns 0. */
int pods_refresh_usage(struct pods *pods);

/* Read what a cheap refresh left out for pod (a pointer from pods_list()): memory.stat for
 * its working set, the thread walk for processes without pids.current. 0, or -EINVAL for a
 * pod not in the table. */
int pods_refine_usage(struct pods *pods, struct pod *pod);

/* The pods of the last refresh, as an array of pointers the caller may reorder (rank_pods)
 * until the next refresh. */
struct pod **pods_list(struct pods *pods, size_t *n_pods);

/* The roots a kill must stay strictly below (kill_config.allowed_roots): the kubepods
 * dirs of both drivers, or the workload roots. Absolute, root-joined; valid until
 * pods_close(). Returns the count (<= max). */
size_t pods_kill_roots(const struct pods *pods, const char **roots, size_t max);
/* The root-joined cgroup v2 mount in use. */
const char *pods_cgroup_mount(const struct pods *pods);

/* ---- disk usage (DESIGN.md §5: disk and inode ranking) ------------------------------------- */

#define PODS_DEFAULT_KUBELET_DIR "/var/lib/kubelet"	/* kubelet --root-dir */
#define PODS_DEFAULT_LOG_DIR "/var/log/pods"		/* kubelet podLogsDir */
#define PODS_DISK_MAX_ENTRIES 1000000			/* per directory tree walked */
#define PODS_CRICTL_DEFAULT_TIMEOUT_NS (5ll * 1000000000)
#define PODS_CRICTL_MAX_OUTPUT (64u << 20)		/* a larger answer is refused */

/* Which parts of struct pod_disk_usage to measure (pods_disk_options.parts). */
enum {
	PODS_DISK_VOLUMES = 1u << 0,	/* walk the pod's local volumes */
	PODS_DISK_LOGS = 1u << 1,	/* walk the pod's log dir */
	PODS_DISK_WRITABLE = 1u << 2,	/* ask the runtime (crictl stats) */
	PODS_DISK_ALL = PODS_DISK_VOLUMES | PODS_DISK_LOGS | PODS_DISK_WRITABLE,
};

/* What one pods_disk_usage call did; for tests, metrics and the decision log. */
struct pods_disk_report {
	size_t pods;			/* Kubernetes pods measured */
	size_t walks;			/* directory trees walked (volumes + log dirs) */
	size_t capped_walks;		/* walks stopped at max_entries or the depth limit */
	size_t memory_volumes_skipped;	/* emptyDirs on tmpfs/ramfs/hugetlbfs (medium: Memory) */
	/* crictl: 0 ok; > 0 its exit status (128 + N: killed by signal N); -ENOENT not in
	 * PATH (or options.crictl ""), -ETIMEDOUT killed at the timeout, -EINVAL output not
	 * the expected JSON, -E2BIG output over PODS_CRICTL_MAX_OUTPUT, other negative errno:
	 * it could not be run. 1 (not asked) when PODS_DISK_WRITABLE was not in parts. */
	int crictl_status;
	size_t crictl_containers;	/* stats entries attributed to one of our pods */
	int64_t elapsed_ns;
};

struct pods_disk_options {
	/* Host paths, joined under pods_options.root like every other path. */
	const char *kubelet_dir;	/* NULL or "": PODS_DEFAULT_KUBELET_DIR */
	const char *log_dir;		/* NULL or "": PODS_DEFAULT_LOG_DIR */
	/* The crictl to run: a name looked up in $PATH, or a path with '/'. NULL: "crictl";
	 * "": do not ask the runtime (writable layers count 0). It is run as
	 * `crictl [--runtime-endpoint EP] stats -o json`, not through a shell, in its own
	 * process group, killed at crictl_timeout_ns (<= 0: PODS_CRICTL_DEFAULT_TIMEOUT_NS). */
	const char *crictl;
	const char *runtime_endpoint;	/* NULL or "": crictl's own config/autodetection */
	int64_t crictl_timeout_ns;
	size_t max_entries;		/* per walk; 0: PODS_DISK_MAX_ENTRIES */
	unsigned int parts;		/* PODS_DISK_* mask; 0: PODS_DISK_ALL */
	struct pods_disk_report *report;	/* optional, filled */
};

/*
 * Fill disk_bytes and disk_inodes of every pod of the last pods_refresh() (Kubernetes mode;
 * standalone workloads are left at 0) the way the kubelet's summary API feeds its
 * podDiskUsage (pkg/kubelet/eviction/helpers.go):
 *  volumes   podLocalVolumeUsage over localVolumeNames: the volumes IsLocalEphemeralVolume
 *            accepts (pkg/volume/util/util.go: emptyDir of the default medium, configMap,
 *            gitRepo; hostPath volumes report no metrics) = every dir <name> in
 *            <kubelet_dir>/pods/<uid>/volumes/kubernetes.io~{empty-dir,configmap,git-repo}/
 *            that is not on tmpfs/ramfs/hugetlbfs, measured as fs.DiskUsage does
 *            (pkg/volume/util/fs/fs.go): the tree including its top dir, bytes =
 *            st_blocks * 512, one inode per entry, same st_dev only.
 *  logs      container Logs (pkg/kubelet/stats/host_stats_provider.go fileMetricsByDir):
 *            the files, not the dirs, in <log_dir>/<namespace>_<name>_<uid>/ and in each of
 *            its container dirs (found by the "_<uid>" suffix, so pods without metadata
 *            count too).
 *  writable  container Rootfs (cri_stats_provider.go makeContainerStats): the runtime's
 *            writableLayer.usedBytes / inodesUsed from `crictl stats -o json`, summed over
 *            the containers labelled io.kubernetes.pod.uid = the pod's UID.
 *  images    always 0: the kubelet attributes no image storage to pods (podDiskUsage adds
 *            only Rootfs, Logs and local volumes).
 * Walks never follow symlinks (a symlink counts as the one inode it is), stay on the
 * starting dir's filesystem, count a hard-linked inode once across a pod's volumes (the
 * kubelet: once per volume) and once per log dir, and stop after
 * max_entries entries or 128 dirs deep (logged once per dir, partial sums kept). A missing
 * or failing crictl leaves writable at 0 and logs one line (repeats at debug level).
 * Parts not asked for are set to 0. Allocates only transiently; may take a few ms per
 * pod plus one crictl run (bounded by crictl_timeout_ns plus PODS_CRICTL_REAP_NS): it
 * blocks, so the daemon's loop uses pods_disk_usage_start() below instead.
 * Returns 0, or -EINVAL (pods NULL).
 */
int pods_read_disk_usage(struct pods *pods, const struct pods_disk_options *options);

/*
 * The same measurement off the caller's thread, for the event loop (which never blocks):
 *
 * pods_disk_usage_start() snapshots what the measurement needs (every pod's UID and
 * cgroup_id, the root-joined kubelet and log dirs, crictl resolved in $PATH now, a copy of
 * the options) and starts a detached worker thread with every signal blocked. The worker
 * never touches the table, which may be refreshed or closed meanwhile, and logs nothing:
 * its messages are logged by pods_disk_usage_finish(). options->report, when given, must
 * stay valid until finish (it is filled there) or cancel (never written).
 * Returns 0 and *out, -EINVAL, -ENOMEM, or the eventfd/pthread_create error (logged).
 *
 * pods_disk_job_fd(): an eventfd (non-blocking, owned by the job: watch it, do not close
 * it) that becomes readable when the worker is done. pods_disk_job_done() says the same.
 *
 * pods_disk_usage_finish(): apply the results to the pods of the table now, as
 * pods_read_disk_usage() would have: a pod gets the numbers measured for the same UID and
 * cgroup_id; a pod that is new since the start, or whose cgroup was recreated, keeps what it
 * has (0 after a refresh). Then free the job; stop watching its fd first. Returns 0;
 * -EBUSY when the worker is not done yet (the job stays valid; it never waits); -EINVAL.
 *
 * pods_disk_job_cancel(): drop a job, done or not (NULL is fine). A running worker is told
 * to stop (a running crictl is killed within ~100 ms) and frees the job itself when it
 * ends; the caller must not use the job or its fd afterwards.
 *
 * A crictl that does not die of SIGKILL within PODS_CRICTL_REAP_NS is left unreaped (logged
 * as an error); nothing ever waits for it.
 */
struct pods_disk_job;

int pods_disk_usage_start(struct pods *pods, const struct pods_disk_options *options,
			  struct pods_disk_job **out);
int pods_disk_job_fd(const struct pods_disk_job *job);
bool pods_disk_job_done(struct pods_disk_job *job);
int pods_disk_usage_finish(struct pods *pods, struct pods_disk_job *job);
void pods_disk_job_cancel(struct pods_disk_job *job);
/* Worker threads still running (cancelled ones included): for metrics and tests. */
size_t pods_disk_jobs_running(void);

/* ---- helpers shared with kill.c and the tests ----------------------------------------- */

/* Find the cgroup v2 mount under root (a dir with cgroup.controllers): /sys/fs/cgroup, then
 * /sys/fs/cgroup/unified. Writes the root-joined path. 0, -ENOENT or -ENAMETOOLONG. */
int pods_detect_cgroup_mount(const char *root, char *buf, size_t len);

/* evictd's own cgroup: the "0::" line of <root>/proc/self/cgroup joined under mount
 * (already root-joined). 0, -ENOENT (no v2 line) or the read error. */
int pods_read_self_cgroup(const char *root, const char *mount, char *buf, size_t len);
/* The same for any process (pid 0: self): <root>/proc/<pid>/cgroup. */
int pods_read_pid_cgroup(const char *root, const char *mount, pid_t pid, char *buf, size_t len);

/* Re-read pod->cgroup_path's memory.current, memory.stat (working set = current -
 * inactive_file, floored at 0) and pids.current (or cgroup.threads counted through the
 * subtree when the pids controller is absent). stats_missing when memory cannot be read.
 * When pod->cgroup_id is set and the directory's id differs (recreated), nothing is read:
 * stats_missing and exited, -ESTALE. 0 or negative errno of the open or the memory read.
 * No allocation. */
int pods_read_usage(struct pod *pod);

/* true when `ancestor` is `path` or one of its parent directories (lexically, both
 * canonical absolute paths). */
bool pods_path_is_ancestor(const char *ancestor, const char *path);

#endif
