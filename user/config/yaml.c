// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The YAML reader: KubeletConfiguration and EvictdConfiguration documents, their keys
 * looked up in the one option table and applied through its setters. */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "config/options.h"
#include "sys/log.h"

struct yaml_ctx {
	yaml_document_t *doc;
	const char *name;	/* file name for messages */
	int doc_index;
	bool merge;		/* a --config-dir drop-in: maps merge key by key */
	bool kubelet;		/* a KubeletConfiguration (lenient) or an EvictdConfiguration */
};

/* A plain null scalar: "null", "~", "Null", "NULL" or nothing (YAML 1.2 core schema). */
static bool is_yaml_null(yaml_node_t *node)
{
	const char *text = (const char *)node->data.scalar.value;

	if (node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	return !*text || !strcmp(text, "~") || !strcmp(text, "null") || !strcmp(text, "Null") ||
	       !strcmp(text, "NULL");
}

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

struct yaml_key {
	const char *text;
	yaml_node_t *value;
	size_t index;		/* position in the mapping: the later one is the repeat */
};

static int yaml_key_cmp(const void *a, const void *b)
{
	const struct yaml_key *x = a, *y = b;
	int diff = strcmp(x->text, y->text);

	return diff ? diff : (x->index > y->index) - (x->index < y->index);
}

/* A value for a message: a scalar quoted and echoed short, else its kind. */
static void describe_value(yaml_node_t *node, char *buf, size_t len)
{
	const char *text = scalar_of(node);

	if (text)
		snprintf(buf, len, "\"%s\"", value_echo(text).text);
	else
		snprintf(buf, len, "%s", node_kind_name(node));
}

/* A scalar key given twice in one mapping. The kubelet's strict decoding (sigs.k8s.io/yaml,
 * "key already set in map") refuses it, but for a v1beta1 KubeletConfiguration it then falls
 * back to lenient decoding, where the last value wins, and only logs
 * (pkg/kubelet/kubeletconfig/util/codec DecodeKubeletConfiguration). So: a warning and the
 * last value in a KubeletConfiguration, which must keep reading the kubelet's own file; an
 * error in evictd's own EvictdConfiguration, whose every field evictd defines. Sorted, so a
 * mapping of many keys costs n log n. Returns 0 or -EINVAL (strict only), after one line. */
static int yaml_check_duplicate_keys(struct yaml_ctx *ctx, yaml_node_t *mapping, const char *where,
				     bool strict)
{
	size_t n = (size_t)(mapping->data.mapping.pairs.top - mapping->data.mapping.pairs.start), used = 0;
	struct yaml_key *keys;
	int err = 0;

	if (n < 2)
		return 0;
	keys = calloc(n, sizeof(*keys));
	if (!keys) {
		log_err("%s: out of memory checking for repeated keys", ctx->name);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		yaml_node_pair_t *pair = &mapping->data.mapping.pairs.start[i];
		const char *key = scalar_of(yaml_document_get_node(ctx->doc, pair->key));

		if (key)
			keys[used++] = (struct yaml_key){
				.text = key, .index = i,
				.value = yaml_document_get_node(ctx->doc, pair->value),
			};
	}
	qsort(keys, used, sizeof(*keys), yaml_key_cmp);
	for (size_t i = 1; i < used; i++) {
		char first[80], second[80];

		if (strcmp(keys[i - 1].text, keys[i].text))
			continue;
		describe_value(keys[i - 1].value, first, sizeof(first));
		describe_value(keys[i].value, second, sizeof(second));
		if (strict) {
			log_err("%s: %s: key \"%s\" given twice in one map (%s, then %s): expected each "
				"key once", ctx->name, where, value_echo(keys[i].text).text, first, second);
			err = -EINVAL;
		} else {
			log_warn("%s: %s: key \"%s\" given twice in one map (%s, then %s); the last "
				 "value wins, as in the kubelet's lenient decoding", ctx->name, where,
				 value_echo(keys[i].text).text, first, second);
		}
		break;	/* one line is enough to find the mistake */
	}
	free(keys);
	return err;
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
	/* Each signal once: evictionHard's own keys are checked like the top level's. */
	if (yaml_check_duplicate_keys(ctx, value, key, !ctx->kubelet))
		return -EINVAL;
	char source[96];

	snprintf(source, sizeof(source), "%s: %s", ctx->name, key);
	if (!ctx->merge)
		signal_map_begin(map, source);
	else if (!map->set)	/* a drop-in merges into what is there (JSON merge patch) */
		signal_map_begin(map, source);
	for (yaml_node_pair_t *pair = value->data.mapping.pairs.start;
	     pair < value->data.mapping.pairs.top; pair++) {
		const char *signal = scalar_of(yaml_document_get_node(ctx->doc, pair->key));
		const char *text = scalar_of(yaml_document_get_node(ctx->doc, pair->value));

		yaml_node_t *value_node = yaml_document_get_node(ctx->doc, pair->value);

		/* A drop-in's null removes the key from the merge patch, but the kubelet then
		 * json.Unmarshals the result into its existing configuration, which keeps what
		 * it had (mergeKubeletConfigurations): a null changes nothing. */
		if (ctx->merge && signal && value_node && value_node->type == YAML_SCALAR_NODE &&
		    is_yaml_null(value_node))
			continue;
		if (!signal || !text) {
			log_err("%s: %s: entries must be signal: value scalars", ctx->name, key);
			err = -EINVAL;
			continue;
		}
		if (signal_map_put(map, source, signal, text))
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
		yaml_check_duplicate_keys(ctx, entry, key, false);
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

/* workloadPreferences: [{match: "*.service", priority: 100}, {match: "sshd.service", never: true}] */
static int yaml_apply_workload_prefs(struct yaml_ctx *ctx, struct workload_prefs *prefs,
				     const char *key, yaml_node_t *value)
{
	char where[160];
	int err = 0;

	if (value->type != YAML_SEQUENCE_NODE) {
		log_err("%s: %s: expected a list of {match, priority|prefer|avoid|never}, got %s",
			ctx->name, key, node_kind_name(value));
		return -EINVAL;
	}
	prefs->n = 0;
	for (yaml_node_item_t *item = value->data.sequence.items.start;
	     item < value->data.sequence.items.top; item++) {
		yaml_node_t *entry = yaml_document_get_node(ctx->doc, *item);
		struct workload_pref pref = { 0 };
		bool bad = false;

		snprintf(where, sizeof(where), "%s: %s[%zu]", ctx->name, key,
			 (size_t)(item - value->data.sequence.items.start));
		if (!entry || entry->type != YAML_MAPPING_NODE) {
			log_err("%s: expected a map", where);
			err = -EINVAL;
			continue;
		}
		if (yaml_check_duplicate_keys(ctx, entry, key, true)) {
			err = -EINVAL;
			continue;
		}
		for (yaml_node_pair_t *pair = entry->data.mapping.pairs.start;
		     pair < entry->data.mapping.pairs.top; pair++) {
			const char *field = scalar_of(yaml_document_get_node(ctx->doc, pair->key));
			const char *text = scalar_of(yaml_document_get_node(ctx->doc, pair->value));

			if (!field || !text) {
				log_err("%s: expected single values", where);
				bad = true;
			} else if (!strcmp(field, "match")) {
				if (strlen(text) >= sizeof(pref.match)) {
					log_err("%s: match: at most %zu bytes", where, sizeof(pref.match) - 1);
					bad = true;
				} else {
					strcpy(pref.match, text);
				}
			} else if (workload_pref_set(where, field, text, &pref)) {
				bad = true;
			}
		}
		if (bad || workload_pref_check(where, &pref)) {
			err = -EINVAL;
			continue;
		}
		if (prefs->n >= PODS_MAX_WORKLOAD_PREFS) {
			log_err("%s: expected at most %d entries", where, PODS_MAX_WORKLOAD_PREFS);
			return -E2BIG;
		}
		prefs->items[prefs->n++] = pref;
	}
	return err;
}

static int yaml_apply_document(struct evictd_config *config, struct yaml_ctx *ctx)
{
	yaml_node_t *root = yaml_document_get_root_node(ctx->doc);
	const char *kind = NULL, *api_version = NULL;
	bool kubelet;
	int err = 0, prior_err;

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
	} else if (kind && !strcmp(kind, "EvictdConfiguration") && !ctx->merge) {
		kubelet = false;
	} else {
		log_err("%s: document %d: kind \"%s\": expected %s", ctx->name, ctx->doc_index,
			value_echo(kind ? kind : "").text, ctx->merge ?
			"KubeletConfiguration (a --config-dir drop-in)" :
			"KubeletConfiguration or EvictdConfiguration");
		return -EINVAL;
	}

	ctx->kubelet = kubelet;
	err = yaml_check_duplicate_keys(ctx, root, kubelet ? "KubeletConfiguration" : "EvictdConfiguration",
					!kubelet);
	if (err)
		return err;

	for (yaml_node_pair_t *pair = root->data.mapping.pairs.start; pair < root->data.mapping.pairs.top;
	     pair++) {
		const char *key = scalar_of(yaml_document_get_node(ctx->doc, pair->key));
		yaml_node_t *value = yaml_document_get_node(ctx->doc, pair->value);
		const struct option_spec *spec;

		if (!key || !strcmp(key, "kind") || !strcmp(key, "apiVersion"))
			continue;
		/* A null leaves the field as it was: in a KubeletConfiguration it decodes to the
		 * zero value that defaulting then fills ("evictionHard:" alone gets the defaults),
		 * and a drop-in's null changes nothing (see yaml_apply_map). */
		if (kubelet && value && value->type == YAML_SCALAR_NODE && is_yaml_null(value))
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
		prior_err = err;	/* err below: this key's own */
		err = 0;
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
		case OPT_WORKLOAD_PREFS:
			if (yaml_apply_workload_prefs(ctx, &config->workload_prefs, key, value))
				err = -EINVAL;
			break;
		case OPT_WORD_LIST: {
			char joined[256] = "";

			if (value->type != YAML_SEQUENCE_NODE) {
				log_err("%s: %s: expected a list, got %s", ctx->name, key, node_kind_name(value));
				err = -EINVAL;
				break;
			}
			for (yaml_node_item_t *item = value->data.sequence.items.start;
			     item < value->data.sequence.items.top; item++) {
				const char *text = scalar_of(yaml_document_get_node(ctx->doc, *item));

				if (!text || strchr(text, ',') ||
				    strlen(joined) + strlen(text) + 2 > sizeof(joined)) {
					log_err("%s: %s: expected a list of names", ctx->name, key);
					err = -EINVAL;
					break;
				}
				if (joined[0])
					strcat(joined, ",");
				strcat(joined, text);
			}
			if (!err && word_list_set((char *)config + spec->offset, spec->size, key, joined))
				err = -EINVAL;
			break;
		}
		case OPT_STRING_LIST:
			if (value->type == YAML_SEQUENCE_NODE) {
				((struct string_list *)((char *)config + spec->offset))->n = 0;
				for (yaml_node_item_t *item = value->data.sequence.items.start;
				     item < value->data.sequence.items.top; item++) {
					yaml_node_t *entry = yaml_document_get_node(ctx->doc, *item);
					const char *text = scalar_of(entry);

					if (!text) {
						log_err("%s: %s: expected a list of single values, got %s in it",
							ctx->name, key, node_kind_name(entry));
						err = -EINVAL;
					} else if (option_apply(config, spec, key, text)) {
						err = -EINVAL;
					}
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
			} else if (kubelet && spec->offset == offsetof(struct evictd_config,
								      pressure_transition_period_ns) &&
				   config->pressure_transition_period_ns == 0) {
				/* v1beta1 SetDefaults_KubeletConfiguration: a zero
				 * evictionPressureTransitionPeriod in a file is defaulted to 5m. */
				log_info("%s: %s: 0 means the default, 5m0s, as in the kubelet",
					 ctx->name, key);
				config->pressure_transition_period_ns = 5LL * 60 * NS_PER_S;
			}
		}
		if (!err) {
			char source[96];

			snprintf(source, sizeof(source), "%s: %s", ctx->name, key);
			option_note_source(config, spec, source);
		}
		if (prior_err)
			err = prior_err;
	}
	return err;
}

/* The deepest a configuration goes is a list of maps in a map (shutdownGracePeriodByPodPriority;
 * a full KubeletConfiguration: reservedMemory's limits, 4): 32 leaves room and nothing more. */
#define CONFIG_YAML_MAX_DEPTH 32

/* Nesting depth on the event stream, before any document is built: libyaml's loader and
 * scanner are quadratic in nesting (100,000 levels of "[": 17 s), so a deep file is refused
 * at its 33rd level, having read only that far. A syntax error is left to the loader, which
 * reports it with its position. Returns 0 or -EINVAL after one line. */
static int yaml_check_depth(const char *yaml, size_t len, const char *name)
{
	yaml_parser_t parser;
	int depth = 0, err = 0;

	if (!yaml_parser_initialize(&parser)) {
		log_err("%s: cannot initialise the YAML parser", name);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	for (;;) {
		yaml_event_t event;
		yaml_event_type_t type;

		if (!yaml_parser_parse(&parser, &event))
			break;
		type = event.type;
		if (type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT) {
			if (++depth > CONFIG_YAML_MAX_DEPTH) {
				log_err("%s: line %zu column %zu: nested more than %d levels deep: expected "
					"a configuration (a few levels of maps and lists)", name,
					event.start_mark.line + 1, event.start_mark.column + 1,
					CONFIG_YAML_MAX_DEPTH);
				err = -EINVAL;
			}
		} else if (type == YAML_SEQUENCE_END_EVENT || type == YAML_MAPPING_END_EVENT) {
			depth--;
		}
		yaml_event_delete(&event);
		if (err || type == YAML_STREAM_END_EVENT)
			break;
	}
	yaml_parser_delete(&parser);
	return err;
}

static int load_yaml(struct evictd_config *config, const char *yaml, size_t len, const char *name,
		     bool merge)
{
	yaml_parser_t parser;
	int err;

	err = yaml_check_depth(yaml, len, name);
	if (err)
		return err;

	if (!yaml_parser_initialize(&parser)) {
		log_err("%s: cannot initialise the YAML parser", name);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	for (int index = 1;; index++) {
		struct yaml_ctx ctx = { .name = name, .doc_index = index, .merge = merge };
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

int config_load_yaml(struct evictd_config *config, const char *yaml, size_t len, const char *name)
{
	return load_yaml(config, yaml, len, name, false);
}

/* DESIGN.md §7: a configuration file is small; anything larger is a mistake, not a config. */
#define CONFIG_FILE_MAX (4u << 20)

static const char *file_type_name(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR: return "a directory";
	case S_IFIFO: return "a FIFO";
	case S_IFSOCK: return "a socket";
	case S_IFCHR: return "a character device";
	case S_IFBLK: return "a block device";
	default: return "not a regular file";
	}
}

/* Open without blocking (a FIFO's open waits for a writer; O_NONBLOCK does not), then refuse
 * anything but a regular file: a FIFO, a device or /proc/self/fd/0 would hang or feed evictd
 * whatever arrives. Returns the fd or negative errno, after one line. */
static int open_config_file(const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0) {
		int err = -errno;

		log_err("config %s: %m", value_echo(path).text);
		return err;
	}
	if (fstat(fd, st)) {
		int err = -errno;

		log_err("config %s: %m", value_echo(path).text);
		close(fd);
		return err;
	}
	if (!S_ISREG(st->st_mode)) {
		log_err("config %s: %s: expected a regular file", value_echo(path).text,
			file_type_name(st->st_mode));
		close(fd);
		return -EINVAL;
	}
	return fd;
}

static int load_file(struct evictd_config *config, const char *path, bool merge)
{
	struct stat st;
	size_t len = 0;
	char *buf;
	int fd, err = 0;

	fd = open_config_file(path, &st);
	if (fd < 0)
		return fd;
	if (st.st_size > (off_t)CONFIG_FILE_MAX) {
		log_err("config %s: larger than 4 MiB", value_echo(path).text);
		close(fd);
		return -EFBIG;
	}
	buf = malloc(CONFIG_FILE_MAX + 2);	/* one byte over tells "too large" (a growing file) */
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (len < CONFIG_FILE_MAX + 1) {
		ssize_t n = read(fd, buf + len, CONFIG_FILE_MAX + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			log_err("config %s: %m", value_echo(path).text);
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (!err && len > CONFIG_FILE_MAX) {
		log_err("config %s: larger than 4 MiB", value_echo(path).text);
		err = -EFBIG;
	} else if (!err) {
		buf[len] = '\0';
		/* The name in every message is echoed like any value: short, one line. */
		err = load_yaml(config, buf, len, value_echo(path).text, merge);
	}
	free(buf);
	return err;
}


int config_load_file(struct evictd_config *config, const char *path)
{
	return load_file(config, path, false);
}

int config_load_dropin_file(struct evictd_config *config, const char *path)
{
	return load_file(config, path, true);
}
