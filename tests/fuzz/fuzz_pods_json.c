// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer: the PodList parser (pods_parse_podlist, user/pods/meta.c), the --pods-file and
 * API-server metadata front end. Any input must either be rejected with -EINVAL and a message
 * naming the file, or give a list of valid, sorted, NUL-terminated entries. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pods/pods.h"
#include "sys/log.h"

#define TERMINATED(field) (memchr((field), '\0', sizeof(field)) != NULL)

static void check(const struct pod_meta_list *list, const char *node)
{
	for (size_t i = 0; i < list->n_items; i++) {
		const struct pod_meta *m = &list->items[i];

		if (!TERMINATED(m->uid) || !TERMINATED(m->cgroup_uid) || !TERMINATED(m->namespace_) ||
		    !TERMINATED(m->name) || !m->uid[0] || !m->cgroup_uid[0])
			abort();
		if (m->memory_request < 0 || m->ephemeral_storage_request < 0 ||
		    m->termination_grace_period_s < -1)
			abort();
		if ((unsigned int)m->qos > POD_QOS_BESTEFFORT)
			abort();
		/* Sorted by the join key, no duplicates (pods.c bsearches it). */
		if (i && strcmp(list->items[i - 1].cgroup_uid, m->cgroup_uid) >= 0)
			abort();
	}
	(void)node;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pod_meta_list list = { 0 };
	char err[512];
	int ret;

	log_set_level((enum log_level)0);	/* rejections are the point; keep the run quiet */
	/* Once without and once with the node filter, which takes another path per pod. */
	for (int pass = 0; pass < 2; pass++) {
		const char *node = pass ? "node-a" : NULL;

		ret = pods_parse_podlist((const char *)data, size, "fuzz.json", node, &list, err,
					 sizeof(err));
		if (ret == -EINVAL) {
			if (strncmp(err, "fuzz.json: ", 11) != 0 || list.n_items)
				abort();
			continue;
		}
		if (ret == -ENOMEM)
			continue;
		if (ret != 0)
			abort();
		check(&list, node);
		pod_meta_list_free(&list);
	}
	return 0;
}
