/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The Kubernetes manifests in tools/deploy, as libyaml documents: loading a multi-document
 * file, a small DOM (child, path, scalar, sequence), collecting problems, and mutating a copy
 * of a file so the checkers can be shown to catch what they claim to. For test_deploy.c and
 * test_admission.c. */
#ifndef EVICTD_TEST_DEPLOY_YAML_H
#define EVICTD_TEST_DEPLOY_YAML_H

#include "testutil.h"

#include <stdbool.h>
#include <yaml.h>

#define DEPLOY_DIR EVICTD_SRCDIR "/tools/deploy/"
#define MAX_DOCS 8

struct docs {
	yaml_document_t doc[MAX_DOCS];
	int n;
};

struct problems {
	char text[4096];
	int n;
};

static inline void problem(struct problems *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void problem(struct problems *p, const char *fmt, ...)
{
	size_t used = strlen(p->text);
	va_list ap;

	va_start(ap, fmt);
	if (used < sizeof(p->text) - 2) {
		vsnprintf(p->text + used, sizeof(p->text) - used - 1, fmt, ap);
		strcat(p->text, "\n");
	}
	va_end(ap);
	p->n++;
}

static inline void load_docs(const char *text, struct docs *docs)
{
	yaml_parser_t parser;

	memset(docs, 0, sizeof(*docs));
	assert_true(yaml_parser_initialize(&parser));
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
	for (;;) {
		yaml_document_t *doc = &docs->doc[docs->n];

		if (!yaml_parser_load(&parser, doc))
			fail_msg("YAML error: %s at line %zu", parser.problem, parser.problem_mark.line + 1);
		if (!yaml_document_get_root_node(doc)) {
			yaml_document_delete(doc);
			break;
		}
		assert_true(++docs->n < MAX_DOCS);
	}
	yaml_parser_delete(&parser);
}

static inline void free_docs(struct docs *docs)
{
	for (int i = 0; i < docs->n; i++)
		yaml_document_delete(&docs->doc[i]);
}

static inline char *read_text(const char *path)
{
	FILE *file = fopen(path, "r");
	char *text;
	long len;

	if (!file)
		fail_msg("%s: %s (tests run from the repository root)", path, strerror(errno));
	fseek(file, 0, SEEK_END);
	len = ftell(file);
	rewind(file);
	text = calloc(1, (size_t)len + 1);
	assert_int_equal(fread(text, 1, (size_t)len, file), (size_t)len);
	fclose(file);
	return text;
}

/* ---- a small DOM over libyaml's document ------------------------------------------------ */

static inline yaml_node_t *child(yaml_document_t *doc, yaml_node_t *node, const char *key)
{
	if (!node || node->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *pair = node->data.mapping.pairs.start; pair < node->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = yaml_document_get_node(doc, pair->key);

		if (k && k->type == YAML_SCALAR_NODE && !strcmp((const char *)k->data.scalar.value, key))
			return yaml_document_get_node(doc, pair->value);
	}
	return NULL;
}

/* "spec.template.spec.hostPID" */
static inline yaml_node_t *path_get(yaml_document_t *doc, yaml_node_t *node, const char *path)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *key = strtok_r(buf, ".", &save); key && node; key = strtok_r(NULL, ".", &save))
		node = child(doc, node, key);
	return node;
}

static inline const char *scalar(yaml_node_t *node)
{
	return node && node->type == YAML_SCALAR_NODE ? (const char *)node->data.scalar.value : NULL;
}

static inline const char *path_scalar(yaml_document_t *doc, yaml_node_t *node, const char *path)
{
	return scalar(path_get(doc, node, path));
}

static inline bool scalar_is(yaml_node_t *node, const char *value)
{
	return scalar(node) && !strcmp(scalar(node), value);
}

static inline size_t seq_len(yaml_node_t *node)
{
	return node && node->type == YAML_SEQUENCE_NODE ?
		       (size_t)(node->data.sequence.items.top - node->data.sequence.items.start) : 0;
}

static inline yaml_node_t *seq_at(yaml_document_t *doc, yaml_node_t *node, size_t i)
{
	return i < seq_len(node) ? yaml_document_get_node(doc, node->data.sequence.items.start[i]) : NULL;
}

static inline yaml_document_t *find_kind(struct docs *docs, const char *kind, yaml_node_t **root)
{
	for (int i = 0; i < docs->n; i++) {
		yaml_node_t *r = yaml_document_get_root_node(&docs->doc[i]);

		if (scalar_is(child(&docs->doc[i], r, "kind"), kind)) {
			*root = r;
			return &docs->doc[i];
		}
	}
	*root = NULL;
	return NULL;
}

/* The text with the first occurrence of `from` replaced by `to`. */
static inline char *mutate(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	char *out;

	if (!at)
		fail_msg("mutation anchor not found: %s", from);
	out = malloc(strlen(text) + strlen(to) + 1);
	sprintf(out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
	return out;
}

/* Whether any item of a sequence of scalars is value. */
static inline bool seq_has(yaml_document_t *doc, yaml_node_t *seq, const char *value)
{
	for (size_t i = 0; i < seq_len(seq); i++)
		if (scalar_is(seq_at(doc, seq, i), value))
			return true;
	return false;
}

#endif
