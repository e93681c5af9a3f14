// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The YAML reader: KubeletConfiguration and EvictdConfiguration documents, their keys
 * looked up in the one option table and applied through its setters. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config/options.h"
#include "sys/fileio.h"
#include "sys/log.h"

struct yaml_ctx {
	yaml_document_t *doc;
	const char *name;	/* file name for messages */
	int doc_index;
};

static const char *scalar_of(yaml_node_t *node)
{
	return node && node->type == YAML_SCALAR_NODE ? (const char *)node->data.scalar.value : NULL;
}

static const char *node_kind_name(yaml_node_t *node)
{
	if (!node)
		return "nothing";
	switch (node->type) {
	case YAML_SCALAR_NODE: return "a scalar";
	case YAML_SEQUENCE_NODE: return "a list";
	case YAML_MAPPING_NODE: return "a map";
	default: return "nothing";
	}
}

static int yaml_apply_map(struct yaml_ctx *ctx, struct signal_text_map *map, const char *key,
			  yaml_node_t *value)
{
	int err = 0;

	if (value->type != YAML_MAPPING_NODE) {
		log_err("%s: %s: expected a map of signal: value, got %s", ctx->name, key,
			node_kind_name(value));
		return -EINVAL;
	}
	signal_map_begin(map, key);
	for (yaml_node_pair_t *pair = value->data.mapping.pairs.start;
	     pair < value->data.mapping.pairs.top; pair++) {
		const char *signal = scalar_of(yaml_document_get_node(ctx->doc, pair->key));
		const char *text = scalar_of(yaml_document_get_node(ctx->doc, pair->value));

		if (!signal || !text) {
			log_err("%s: %s: entries must be signal: value scalars", ctx->name, key);
			err = -EINVAL;
			continue;
		}
		if (signal_map_put(map, key, signal, text))
			err = -EINVAL;
	}
	return err;
}

static int yaml_apply_priority_list(struct yaml_ctx *ctx, struct evictd_config *config,
				    const char *key, yaml_node_t *value)
{
	int err = 0;

	if (value->type != YAML_SEQUENCE_NODE) {
		log_err("%s: %s: expected a list of {priority, shutdownGracePeriodSeconds}, got %s",
			ctx->name, key, node_kind_name(value));
		return -EINVAL;
	}
	config->n_shutdown_groups = 0;
	for (yaml_node_item_t *item = value->data.sequence.items.start;
	     item < value->data.sequence.items.top; item++) {
		yaml_node_t *entry = yaml_document_get_node(ctx->doc, *item);
		const char *priority = NULL, *seconds = NULL;

		if (!entry || entry->type != YAML_MAPPING_NODE) {
			log_err("%s: %s: each entry must be a map", ctx->name, key);
			err = -EINVAL;
			continue;
		}
		for (yaml_node_pair_t *pair = entry->data.mapping.pairs.start;
		     pair < entry->data.mapping.pairs.top; pair++) {
			const char *field = scalar_of(yaml_document_get_node(ctx->doc, pair->key));
			const char *text = scalar_of(yaml_document_get_node(ctx->doc, pair->value));

			if (field && !strcmp(field, "priority"))
				priority = text;
			else if (field && !strcmp(field, "shutdownGracePeriodSeconds"))
				seconds = text;
		}
		if (!priority || !seconds) {
			log_err("%s: %s: each entry needs priority and shutdownGracePeriodSeconds",
				ctx->name, key);
			err = -EINVAL;
			continue;
		}
		if (shutdown_group_add(config, key, priority, seconds))
			err = -EINVAL;
	}
	return err;
}

static int yaml_apply_document(struct evictd_config *config, struct yaml_ctx *ctx)
{
	yaml_node_t *root = yaml_document_get_root_node(ctx->doc);
	const char *kind = NULL, *api_version = NULL;
	bool kubelet;
	int err = 0;

	if (!root)
		return 0;	/* empty document */
	if (root->type != YAML_MAPPING_NODE) {
		log_err("%s: document %d: expected a map at the top, got %s", ctx->name,
			ctx->doc_index, node_kind_name(root));
		return -EINVAL;
	}
	for (yaml_node_pair_t *pair = root->data.mapping.pairs.start; pair < root->data.mapping.pairs.top;
	     pair++) {
		const char *key = scalar_of(yaml_document_get_node(ctx->doc, pair->key));
		const char *value = scalar_of(yaml_document_get_node(ctx->doc, pair->value));

		if (key && !strcmp(key, "kind"))
			kind = value;
		else if (key && !strcmp(key, "apiVersion"))
			api_version = value;
	}
	if (kind && !strcmp(kind, "KubeletConfiguration")) {
		kubelet = true;
		if (api_version && strcmp(api_version, KUBELET_API_VERSION))
			log_warn("%s: apiVersion \"%s\": expected %s; reading the fields anyway",
				 ctx->name, value_echo(api_version).text, KUBELET_API_VERSION);
	} else if (kind && !strcmp(kind, "EvictdConfiguration")) {
		kubelet = false;
	} else {
		log_err("%s: document %d: kind \"%s\": expected KubeletConfiguration or EvictdConfiguration",
			ctx->name, ctx->doc_index, value_echo(kind ? kind : "").text);
		return -EINVAL;
	}

	for (yaml_node_pair_t *pair = root->data.mapping.pairs.start; pair < root->data.mapping.pairs.top;
	     pair++) {
		const char *key = scalar_of(yaml_document_get_node(ctx->doc, pair->key));
		yaml_node_t *value = yaml_document_get_node(ctx->doc, pair->value);
		const struct option_spec *spec;

		if (!key || !strcmp(key, "kind") || !strcmp(key, "apiVersion"))
			continue;
		spec = option_by_key(key, kubelet);
		if (!spec) {
			/* The kubelet file carries much we do not use; our own file must be exact. */
			if (kubelet)
				continue;
			log_err("%s: unknown EvictdConfiguration field \"%s\"", ctx->name, value_echo(key).text);
			err = -EINVAL;
			continue;
		}
		switch (spec->kind) {
		case OPT_THRESHOLD_MAP:
		case OPT_SIGNAL_MAP:
			if (yaml_apply_map(ctx, (struct signal_text_map *)((char *)config + spec->offset),
					   kubelet ? spec->kubelet_key : spec->evictd_key, value))
				err = -EINVAL;
			break;
		case OPT_PRIORITY_LIST:
			if (yaml_apply_priority_list(ctx, config, key, value))
				err = -EINVAL;
			break;
		case OPT_STRING_LIST:
			if (value->type == YAML_SEQUENCE_NODE) {
				((struct string_list *)((char *)config + spec->offset))->n = 0;
				for (yaml_node_item_t *item = value->data.sequence.items.start;
				     item < value->data.sequence.items.top; item++) {
					const char *text = scalar_of(yaml_document_get_node(ctx->doc, *item));

					if (!text || option_apply(config, spec, key, text))
						err = -EINVAL;
				}
				break;
			}
			__attribute__((fallthrough)); /* a single path */
		default:
			if (value->type != YAML_SCALAR_NODE) {
				log_err("%s: %s: expected a single value, got %s", ctx->name, key,
					node_kind_name(value));
				err = -EINVAL;
			} else if (option_apply(config, spec, key, scalar_of(value))) {
				err = -EINVAL;
			}
		}
	}
	return err;
}

int config_load_yaml(struct evictd_config *config, const char *yaml, size_t len, const char *name)
{
	yaml_parser_t parser;
	int err = 0;

	if (!yaml_parser_initialize(&parser)) {
		log_err("%s: cannot initialise the YAML parser", name);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	for (int index = 1;; index++) {
		struct yaml_ctx ctx = { .name = name, .doc_index = index };
		yaml_document_t doc;

		if (!yaml_parser_load(&parser, &doc)) {
			log_err("%s: line %zu column %zu: %s %s", name, parser.problem_mark.line + 1,
				parser.problem_mark.column + 1, parser.problem ? parser.problem : "YAML error",
				parser.context ? parser.context : "");
			err = -EINVAL;
			break;
		}
		if (!yaml_document_get_root_node(&doc)) {	/* end of stream */
			yaml_document_delete(&doc);
			break;
		}
		ctx.doc = &doc;
		if (yaml_apply_document(config, &ctx))
			err = -EINVAL;
		yaml_document_delete(&doc);
	}
	yaml_parser_delete(&parser);
	return err;
}

/* DESIGN.md §7: a configuration file is small; anything larger is a mistake, not a config. */
#define CONFIG_FILE_MAX (4u << 20)

int config_load_file(struct evictd_config *config, const char *path)
{
	char *buf = malloc(CONFIG_FILE_MAX + 2);	/* one byte over tells "too large" */
	ssize_t len;
	int err;

	if (!buf)
		return -ENOMEM;
	len = fileio_read_at(AT_FDCWD, path, buf, CONFIG_FILE_MAX + 2);
	if (len < 0) {
		errno = (int)-len;
		log_err("config %s: %m", path);
		err = (int)len;
	} else if ((size_t)len > CONFIG_FILE_MAX) {
		log_err("config %s: larger than 4 MiB", path);
		err = -EFBIG;
	} else {
		err = config_load_yaml(config, buf, (size_t)len, path);
	}
	free(buf);
	return err;
}

