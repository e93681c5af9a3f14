/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Shared by meta.c (one Pod object) and podlist.c (the document around it). Not an API. */
#ifndef EVICTD_PODS_PODLIST_H
#define EVICTD_PODS_PODLIST_H

#include <json.h>
#include <stdbool.h>
#include <stddef.h>

#include "pods/pods.h"

struct parse_ctx {
	const char *name;	/* file name for messages */
	char *errbuf;
	size_t errlen;
	char message[512];
};

/* Sets ctx->message to "<name>: <path>: <detail>"; returns -EINVAL. */
int __attribute__((format(printf, 3, 4)))
parse_fail(struct parse_ctx *ctx, const char *path, const char *fmt, ...);
const char *json_kind(const struct json_object *obj);
/* "parent[index]" into buf. */
const char *path_index(char *buf, size_t len, const char *parent, size_t index);
/* Member key of obj with the wanted type: 1 found, 0 absent (or null), negative on a wrong
 * type (message set). */
int get_member(struct parse_ctx *ctx, struct json_object *obj, const char *path, const char *key,
	       enum json_type type, struct json_object **out);
/* A string member copied into dst: 1 found, 0 absent (not required), negative errno. */
int get_string(struct parse_ctx *ctx, struct json_object *obj, const char *path, const char *key,
	       bool required, char *dst, size_t dst_len);
/* One Pod object into *meta: 1 keep it, 0 skip it (node_name set and another node), negative
 * errno (message set). */
int parse_pod(struct parse_ctx *ctx, struct json_object *pod, const char *path,
	      const char *node_name, struct pod_meta *meta);

#endif
