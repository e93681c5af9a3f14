// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* pods/containers.c: container cgroups below a pod, their working sets, and the match to the
 * pod's containers that the kubelet's eviction message sentences need (helpers.go
 * evictionMessage), through to the message itself. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "kube/kube_report.h"
#include "pods/containers.h"
#include "pods/pods.h"

static void test_container_id_from_cgroup(void **state)
{
	static const struct {
		const char *name, *id;
	} ok[] = {
		{ "cri-containerd-0123abcd.scope", "0123abcd" },
		{ "crio-beef.scope", "beef" },
		{ "docker-cafe.scope", "cafe" },
		{ "0123abcd", "0123abcd" },	/* cgroupfs driver */
	};
	static const char *const bad[] = { "", "crio-conmon-beef.scope", "session-1.scope",
					   "cri-containerd-.scope" };
	char id[80];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(container_id_from_cgroup(ok[i].name, id, sizeof(id)), 0);
		assert_string_equal(id, ok[i].id);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (container_id_from_cgroup(bad[i], id, sizeof(id)) != -EINVAL)
			fail_msg("accepted \"%s\"", bad[i]);
	/* An id that does not fit is refused, not cut. */
	assert_int_equal(container_id_from_cgroup("0123456789", id, 5), -EINVAL);
}

static void test_read_and_match(void **state)
{
	char root[PATH_MAX];
	struct container_usage usages[POD_MAX_CONTAINERS];
	const struct container_spec specs[] = {
		{ "app", "containerd://aaa", 100 << 20 },
		{ "sidecar", "containerd://bbb", 0 },
		{ "gone", "containerd://ccc", 0 },	/* no cgroup: not matched */
		{ "not-started", "", 0 },
	};
	const char *names[4];
	int64_t usage[4], request[4];
	int fd, n;

	fixture_tmpdir(root, "containers");
	fixture_write(root, "cri-containerd-aaa.scope/memory.current", "%d\n", 150 << 20);
	fixture_write(root, "cri-containerd-aaa.scope/memory.stat", "anon 1\ninactive_file %d\n", 20 << 20);
	fixture_write(root, "cri-containerd-bbb.scope/memory.current", "4096\n");
	fixture_write(root, "cri-containerd-bbb.scope/memory.stat", "inactive_file 8192\n");
	fixture_write(root, "crio-conmon-aaa.scope/memory.current", "1\n");
	fixture_write(root, "cri-containerd-ddd.scope/cgroup.procs", "%s", "");	/* no memory.current */
	fixture_write(root, "memory.current", "1\n");
	fd = open(root, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	n = pod_containers_read_at(fd, usages, POD_MAX_CONTAINERS);
	assert_int_equal(n, 2);
	assert_int_equal(pod_containers_read_at(fd, usages, 1), 1);	/* bounded by max */
	n = pod_containers_read_at(fd, usages, POD_MAX_CONTAINERS);
	close(fd);
	assert_int_equal(containers_match(usages, (size_t)n, specs, 4, names, usage, request, 4), 2);
	/* In spec order; bbb's working set floored at 0. */
	assert_string_equal(names[0], "app");
	assert_int_equal(usage[0], 130 << 20);
	assert_int_equal(request[0], 100 << 20);
	assert_string_equal(names[1], "sidecar");
	assert_int_equal(usage[1], 0);
	fixture_rm_rf(root);
}

/* The kubelet's sentences for the matched containers: only those above their request. */
static void test_message_names_the_containers(void **state)
{
	struct kube_container_usage containers[] = {
		{ "app", 130 << 20, 100 << 20 },
		{ "sidecar", 0, 0 },
		{ "batch", 64 << 20, 0 },
	};
	struct threshold_value value = { .quantity = 100 << 20, .text = "100Mi" };
	struct kube_eviction eviction = {
		.signal = EV_SIGNAL_MEMORY_AVAILABLE, .threshold = &value,
		.threshold_quantity = 100 << 20, .available = 50 << 20,
		.containers = containers, .n_containers = 3,
	};
	char buf[1024];

	assert_true(kube_eviction_message(&eviction, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "The node was low on resource: memory. Threshold quantity: 100Mi, "
				 "available: 50Mi. Container app was using 130Mi, request is 100Mi, has "
				 "larger consumption of memory. Container batch was using 64Mi, request "
				 "is 0, has larger consumption of memory. ");
	/* allocatableMemory.available starves memory too. */
	eviction.signal = EV_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE;
	eviction.n_containers = 0;
	assert_true(kube_eviction_message(&eviction, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "The node was low on resource: memory. Threshold quantity: 100Mi, "
				 "available: 50Mi. ");
}

/* From the pod list to the victim's sentences: spec names and requests, status container ids,
 * container cgroups below the pod cgroup. */
static void test_pod_metadata_to_usage(void **state)
{
	static const char json[] =
		"{\"kind\":\"List\",\"items\":[{\"metadata\":{\"uid\":\"u-1\",\"name\":\"web\"},"
		"\"spec\":{\"containers\":["
		"{\"name\":\"app\",\"resources\":{\"requests\":{\"memory\":\"100Mi\"}}},"
		"{\"name\":\"sidecar\"}],"
		"\"initContainers\":[{\"name\":\"init\"}]},"
		"\"status\":{\"containerStatuses\":["
		"{\"name\":\"app\",\"containerID\":\"containerd://aaa\"},"
		"{\"name\":\"sidecar\",\"containerID\":\"containerd://bbb\"}],"
		"\"initContainerStatuses\":[{\"name\":\"init\",\"containerID\":\"containerd://iii\"}]}}]}";
	struct pod_meta_list list = { 0 };
	static struct pod pod;
	const char *names[POD_MAX_NAMED_CONTAINERS];
	int64_t usage[POD_MAX_NAMED_CONTAINERS], request[POD_MAX_NAMED_CONTAINERS];
	char root[PATH_MAX];

	assert_int_equal(pods_parse_podlist(json, sizeof(json) - 1, "p", NULL, &list, NULL, 0), 0);
	assert_int_equal(list.items[0].n_containers, 3);
	assert_string_equal(list.items[0].containers[0].name, "app");
	assert_string_equal(list.items[0].containers[0].id, "aaa");
	assert_int_equal(list.items[0].containers[0].memory_request, 100 << 20);
	assert_string_equal(list.items[0].containers[2].id, "iii");

	fixture_tmpdir(root, "podcontainers");
	fixture_write(root, "cri-containerd-aaa.scope/memory.current", "%d\n", 120 << 20);
	fixture_write(root, "cri-containerd-bbb.scope/memory.current", "%d\n", 1 << 20);
	memcpy(pod.containers, list.items[0].containers, sizeof(pod.containers));
	pod.n_containers = list.items[0].n_containers;
	snprintf(pod.cgroup_path, sizeof(pod.cgroup_path), "%s", root);
	/* The init container has finished: no cgroup, no sentence. */
	assert_int_equal(pod_container_usage(&pod, names, usage, request, POD_MAX_NAMED_CONTAINERS), 2);
	assert_string_equal(names[0], "app");
	assert_int_equal(usage[0], 120 << 20);
	assert_int_equal(request[0], 100 << 20);
	/* A pod whose cgroup is gone gives no containers. */
	fixture_rm_rf(root);
	assert_int_equal(pod_container_usage(&pod, names, usage, request, POD_MAX_NAMED_CONTAINERS), 0);
	pod_meta_list_free(&list);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_container_id_from_cgroup),
		cmocka_unit_test(test_read_and_match),
		cmocka_unit_test(test_message_names_the_containers),
		cmocka_unit_test(test_pod_metadata_to_usage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
