// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* PodList documents (`kubectl get pods -o json`, the API server's list) walked one pod at a
 * time; meta.c parses each Pod. */
#include <errno.h>
#include <json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/log.h"
#include "pods/internal.h"
#include "pods/podlist.h"

/*
 * The document is parsed one pod at a time (doc/DESIGN.md, "Hostile input": the pods file). A
 * DOM of the whole PodList costs json-c some 40 times the text (an object with its hash table
 * per `{`, and kubectl's managedFields are mostly small objects): a 13 MB file took 546 MB. So
 * the top-level object and the items array are walked here, and json-c's strict tokener parses
 * one value at a time (each item, each other top-level member); an item's DOM is freed as
 * soon as its pod_meta is taken. Peak: the text, one pod's DOM and the kept pod_metas.
 */
struct podlist_stream {
	struct parse_ctx *ctx;
	struct json_tokener *tok;
	const char *json;
	size_t len, pos;
};

#define PODLIST_MAX_DEPTH 64	/* kubectl output nests managedFields deeply; json-c's default is 32 */
#define PODLIST_SCALAR_MAX 512

static void stream_skip_ws(struct podlist_stream *s)
{
	while (s->pos < s->len && (s->json[s->pos] == ' ' || s->json[s->pos] == '\n' ||
				   s->json[s->pos] == '\r' || s->json[s->pos] == '\t'))
		s->pos++;
}

static int stream_truncated(struct podlist_stream *s)
{
	return parse_fail(s->ctx, "", "truncated JSON at byte %zu", s->len);
}

static int stream_malformed(struct podlist_stream *s, size_t at, const char *what)
{
	return parse_fail(s->ctx, "", "malformed JSON at byte %zu: %s", at, what);
}

/* Where the value starting at s->pos ends: past its closing quote or bracket, or at the
 * delimiter after a number or literal. Strings are skipped with their escapes; brackets are
 * matched (a mismatch ends the extent there, for the tokener to name). 0 or -EINVAL. */
static int stream_extent(struct podlist_stream *s, size_t *end)
{
	char stack[PODLIST_MAX_DEPTH];
	size_t depth = 0, i = s->pos;

	*end = s->pos;
	bool in_string = false;

	if (i >= s->len)
		return stream_truncated(s);
	if (s->json[i] != '{' && s->json[i] != '[' && s->json[i] != '"') {
		while (i < s->len && !strchr(",]} \t\r\n", s->json[i]))
			i++;
		*end = i;
		return 0;
	}
	for (; i < s->len; i++) {
		char c = s->json[i];

		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = false;
			else
				continue;
			if (depth == 0 && !in_string) {
				*end = i + 1;
				return 0;
			}
			continue;
		}
		if (c == '"') {
			in_string = true;
		} else if (c == '{' || c == '[') {
			if (depth == sizeof(stack))
				return stream_malformed(s, i, "nesting too deep");
			stack[depth++] = c == '{' ? '}' : ']';
		} else if (c == '}' || c == ']') {
			/* A stray or mismatched bracket, or the value's last one. */
			if (depth == 0 || stack[--depth] != c || depth == 0) {
				*end = i + 1;
				return 0;
			}
		}
	}
	return stream_truncated(s);
}

/* The one value at s->pos, parsed strictly by json-c; s->pos moves past it. *out is NULL for
 * JSON null. 0 or -EINVAL (message set) or -ENOMEM. */
static int stream_value(struct podlist_stream *s, struct json_object **out)
{
	char scalar[PODLIST_SCALAR_MAX + 1];
	enum json_tokener_error jerr;
	const char *text = s->json + s->pos;
	size_t end, n;
	int err = stream_extent(s, &end);

	if (err)
		return err;
	n = end - s->pos;
	if (text[0] != '{' && text[0] != '[' && text[0] != '"') {
		/* A number or literal ends only at a delimiter: give the tokener its NUL. */
		if (n > PODLIST_SCALAR_MAX)
			return stream_malformed(s, s->pos, "value too long");
		memcpy(scalar, text, n);
		scalar[n] = '\0';
		text = scalar;
		n++;
	}
	json_tokener_reset(s->tok);
	*out = json_tokener_parse_ex(s->tok, text, (int)n);
	jerr = json_tokener_get_error(s->tok);
	if (jerr == json_tokener_continue && end == s->len)
		return stream_truncated(s);
	if (jerr != json_tokener_success)
		return stream_malformed(s, s->pos + json_tokener_get_parse_end(s->tok),
					json_tokener_error_desc(jerr == json_tokener_continue ?
								json_tokener_error_parse_eof : jerr));
	s->pos = end;
	return 0;
}

struct podlist_items {
	struct pod_meta *metas;
	size_t kept, cap, count;
	struct pod_refusal *refused;	/* the first POD_REFUSALS_KEPT */
	size_t n_refused;
};

static _Atomic uint64_t refused_total;

uint64_t pods_refused_total(void)
{
	return refused_total;
}

/* One pod refused alone: counted, its message kept (the first POD_REFUSALS_KEPT). key: its
 * metadata.uid when it has a string one, else its path in the document. */
static int refuse(struct podlist_items *items, const char *key, const char *message)
{
	refused_total++;
	if (!items->refused) {
		items->refused = calloc(POD_REFUSALS_KEPT, sizeof(*items->refused));
		if (!items->refused)
			return -ENOMEM;
	}
	if (items->n_refused < POD_REFUSALS_KEPT) {
		struct pod_refusal *r = &items->refused[items->n_refused];

		snprintf(r->key, sizeof(r->key), "%s", key);
		snprintf(r->message, sizeof(r->message), "%s", message);
	}
	items->n_refused++;
	return 0;
}

/* The key a refused pod is logged once under: metadata.uid if it is a short string. */
static void refusal_key(struct json_object *pod, const char *path, char *key, size_t len)
{
	struct json_object *metadata, *uid;

	if (json_object_is_type(pod, json_type_object) &&
	    json_object_object_get_ex(pod, "metadata", &metadata) &&
	    json_object_is_type(metadata, json_type_object) &&
	    json_object_object_get_ex(metadata, "uid", &uid) && json_object_is_type(uid, json_type_string) &&
	    (size_t)json_object_get_string_len(uid) < len - 4)
		snprintf(key, len, "uid %s", json_object_get_string(uid));
	else
		snprintf(key, len, "%s", path);
}

/* "items": [ ... ]: each pod parsed and its DOM freed before the next one is read. */
static int stream_items(struct podlist_stream *s, const char *node_name, struct podlist_items *items)
{
	char item_path[64];
	int err;

	/* A repeated "items" key: the last one wins, as in json-c's objects. */
	items->kept = items->count = items->n_refused = 0;
	s->pos++;	/* '[' */
	stream_skip_ws(s);
	if (s->pos < s->len && s->json[s->pos] == ']') {
		s->pos++;
		return 0;
	}
	for (;;) {
		struct json_object *pod;

		err = stream_value(s, &pod);
		if (err)
			return err;
		if (items->kept == items->cap) {
			size_t cap = items->cap ? items->cap * 2 : 64;
			struct pod_meta *grown = realloc(items->metas, cap * sizeof(*grown));

			if (!grown) {
				json_object_put(pod);
				return -ENOMEM;
			}
			items->metas = grown;
			items->cap = cap;
		}
		path_index(item_path, sizeof(item_path), "items", items->count);
		err = parse_pod(s->ctx, pod, item_path, node_name, &items->metas[items->kept]);
		if (err == -EINVAL) {
			/* This pod alone (doc/DESIGN.md §5, "Pod identity"): the rest is kept. */
			char key[80];

			refusal_key(pod, item_path, key, sizeof(key));
			err = refuse(items, key, s->ctx->message);
		} else if (err >= 0) {
			items->kept += (size_t)err;
			err = 0;
		}
		json_object_put(pod);
		if (err)
			return err;
		items->count++;
		stream_skip_ws(s);
		if (s->pos >= s->len)
			return stream_truncated(s);
		if (s->json[s->pos] == ']') {
			s->pos++;
			return 0;
		}
		if (s->json[s->pos] != ',')
			return stream_malformed(s, s->pos, "expected ',' or ']'");
		s->pos++;
		stream_skip_ws(s);
	}
}

/* The top-level object: every member but an "items" array goes into *rest (small: kind,
 * apiVersion, metadata; or a single Pod's fields); the items are parsed as they come. */
static int stream_document(struct podlist_stream *s, const char *node_name, struct json_object **rest,
			   struct podlist_items *items, bool *items_streamed)
{
	int err;

	*rest = json_object_new_object();
	if (!*rest)
		return -ENOMEM;
	s->pos++;	/* '{' */
	stream_skip_ws(s);
	if (s->pos < s->len && s->json[s->pos] == '}') {
		s->pos++;
		return 0;
	}
	for (;;) {
		struct json_object *key, *value;

		if (s->pos >= s->len)
			return stream_truncated(s);
		if (s->json[s->pos] != '"')
			return stream_malformed(s, s->pos, "expected a member name");
		err = stream_value(s, &key);
		if (err)
			return err;
		stream_skip_ws(s);
		if (s->pos >= s->len) {
			json_object_put(key);
			return stream_truncated(s);
		}
		if (s->json[s->pos] != ':') {
			json_object_put(key);
			return stream_malformed(s, s->pos, "expected ':'");
		}
		s->pos++;
		stream_skip_ws(s);
		if (strcmp(json_object_get_string(key), "items") == 0 && s->pos < s->len &&
		    s->json[s->pos] == '[') {
			json_object_object_del(*rest, "items");
			*items_streamed = true;
			err = stream_items(s, node_name, items);
		} else {
			err = stream_value(s, &value);
			if (!err && json_object_object_add(*rest, json_object_get_string(key), value)) {
				json_object_put(value);
				err = -ENOMEM;
			}
			if (!err && strcmp(json_object_get_string(key), "items") == 0)
				*items_streamed = false;
		}
		json_object_put(key);
		if (err)
			return err;
		stream_skip_ws(s);
		if (s->pos >= s->len)
			return stream_truncated(s);
		if (s->json[s->pos] == '}') {
			s->pos++;
			return 0;
		}
		if (s->json[s->pos] != ',')
			return stream_malformed(s, s->pos, "expected ',' or '}'");
		s->pos++;
		stream_skip_ws(s);
	}
}

/*
 * Pods naming the same cgroup (items sorted by cgroup_uid). Only a mirror pod names a cgroup
 * other than its own UID, and any user may forge one (meta.c apply_identity), so a claim on
 * the UID of a listed ordinary pod loses: that pod is kept, the claimants are refused. With
 * no such pod (two mirrors, two pods with one UID) all of them are refused and the cgroup is
 * without metadata, which fails closed (a static pod stays known from the node's manifests,
 * static_pods.c). 0 or -ENOMEM.
 */
static int refuse_claims(struct parse_ctx *ctx, struct podlist_items *items)
{
	size_t kept = 0;

	for (size_t a = 0, b; a < items->kept; a = b) {
		const struct pod_meta *owner = NULL;
		size_t owners = 0;

		for (b = a + 1; b < items->kept &&
		     !strcmp(items->metas[a].cgroup_uid, items->metas[b].cgroup_uid); b++)
			;
		if (b - a == 1) {
			items->metas[kept++] = items->metas[a];
			continue;
		}
		for (size_t i = a; i < b; i++) {
			if (!items->metas[i].is_mirror) {
				owner = &items->metas[i];
				owners++;
			}
		}
		for (size_t i = a; i < b; i++) {
			const struct pod_meta *m = &items->metas[i];
			char key[80];
			int err;

			if (owners == 1 && m == owner)
				continue;
			snprintf(key, sizeof(key), "uid %s", m->uid);
			parse_fail(ctx, "items", "%s/%s (uid %s%s) names the cgroup of pod UID %s, which "
				   "%zu listed pods name; refused", m->namespace_, m->name, m->uid,
				   m->is_mirror ? ", a mirror pod" : "", m->cgroup_uid, b - a);
			err = refuse(items, key, ctx->message);
			if (err)
				return err;
		}
		if (owners == 1)
			items->metas[kept++] = *owner;
	}
	items->kept = kept;
	return 0;
}

/* kind List or PodList with items[] (streamed), or one Pod (rest is the pod). */
static int parse_document(struct podlist_stream *s, const char *node_name, struct pod_meta_list *out)
{
	struct podlist_items items = { 0 };
	struct json_object *rest = NULL;
	bool items_streamed = false;
	char kind[64] = "";
	int err;

	stream_skip_ws(s);
	if (s->pos < s->len && s->json[s->pos] != '{') {
		/* Not an object: only the JSON error or the type is left to report. */
		err = stream_value(s, &rest);
		stream_skip_ws(s);
		if (!err && s->pos < s->len)
			err = stream_malformed(s, s->pos, "trailing data");
		if (!err)
			err = parse_fail(s->ctx, "", "expected a PodList object, got %s", json_kind(rest));
		json_object_put(rest);
		return err;
	}
	if (s->pos >= s->len)
		return stream_truncated(s);
	err = stream_document(s, node_name, &rest, &items, &items_streamed);
	stream_skip_ws(s);
	if (!err && s->pos < s->len)
		err = stream_malformed(s, s->pos, "trailing data");
	if (!err)
		err = get_string(s->ctx, rest, "", "kind", false, kind, sizeof(kind));
	if (err >= 0 && strcmp(kind, "Pod") == 0) {
		/* One Pod: refusing it alone is refusing the document. */
		free(items.metas);
		free(items.refused);
		items = (struct podlist_items){ 0 };
		items.metas = calloc(1, sizeof(*items.metas));
		err = items.metas ? parse_pod(s->ctx, rest, "", node_name, items.metas) : -ENOMEM;
		items.kept = err > 0 ? (size_t)err : 0;
	} else if (err >= 0) {
		if (kind[0] && strcmp(kind, "List") != 0 && strcmp(kind, "PodList") != 0)
			err = parse_fail(s->ctx, "kind", "\"%s\" is not List, PodList or Pod", kind);
		else if (!items_streamed) {
			struct json_object *unused;

			err = get_member(s->ctx, rest, "", "items", json_type_array, &unused);
			if (err == 0)
				err = parse_fail(s->ctx, "items", "missing");
		}
	}
	json_object_put(rest);
	if (err >= 0) {
		/* Sorted by the join key: the join is a bsearch per cgroup. */
		if (items.kept > 1)	/* qsort(NULL, 0) is undefined */
			qsort(items.metas, items.kept, sizeof(*items.metas), pods_cmp_meta_cgroup_uid);
		err = refuse_claims(s->ctx, &items);
	}
	if (err < 0) {
		free(items.metas);
		free(items.refused);
		return err;
	}
	out->items = items.metas;
	out->n_items = items.kept;
	out->refused = items.refused;
	out->n_refused = items.n_refused;
	return 0;
}

/* pods_parse_podlist without the logging: the message goes to ctx->message only. The
 * pods-file worker thread uses this and leaves the logging to the loop's thread. */
static int parse_podlist_quiet(struct parse_ctx *ctx, const char *json, size_t len,
			       const char *node_name, struct pod_meta_list *list)
{
	struct pod_meta_list parsed = { 0 };
	struct podlist_stream s = { .ctx = ctx, .json = json, .len = len };
	int err;

	if (len > INT32_MAX)
		return parse_fail(ctx, "", "too large (%zu bytes)", len);
	s.tok = json_tokener_new_ex(PODLIST_MAX_DEPTH);
	if (!s.tok)
		return -ENOMEM;
	json_tokener_set_flags(s.tok, JSON_TOKENER_STRICT);
	err = parse_document(&s, node_name, &parsed);
	json_tokener_free(s.tok);
	if (err)
		return err;
	pod_meta_list_free(list);
	*list = parsed;
	return 0;
}

int pods_parse_podlist_quiet(const char *json, size_t len, const char *name, const char *node_name,
			     struct pod_meta_list *list, char *message, size_t message_len)
{
	struct parse_ctx ctx = { .name = name };
	int err = parse_podlist_quiet(&ctx, json, len, node_name, list);

	if (err == -EINVAL)
		snprintf(message, message_len, "%s", ctx.message);
	return err;
}

int pods_parse_podlist(const char *json, size_t len, const char *name, const char *node_name,
		       struct pod_meta_list *list, char *errbuf, size_t errlen)
{
	struct parse_ctx ctx = { .name = name ? name : "pods", .errbuf = errbuf, .errlen = errlen };
	int err;

	if (!json || !list)
		return -EINVAL;
	if (errbuf && errlen)
		errbuf[0] = '\0';
	err = parse_podlist_quiet(&ctx, json, len, node_name, list);
	/* Once per parse (an API list, a watch event), never per refresh. */
	for (size_t i = 0; !err && i < list->n_refused && i < POD_REFUSALS_KEPT; i++)
		log_warn("pods: %s; the rest of the list is kept", list->refused[i].message);
	if (!err && list->n_refused > POD_REFUSALS_KEPT)
		log_warn("pods: %s: %zu more pods refused", ctx.name, list->n_refused - POD_REFUSALS_KEPT);
	if (err == -EINVAL) {
		log_err("%s", ctx.message);
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "%s", ctx.message);
	}
	return err;
}
