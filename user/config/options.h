/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Inside config/: the option table and the setters every source (flags, KubeletConfiguration,
 * EvictdConfiguration) goes through. Not for other modules: they use config/config.h. */
#ifndef EVICTD_CONFIG_OPTIONS_H
#define EVICTD_CONFIG_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

#define KUBELET_API_VERSION "kubelet.config.k8s.io/v1beta1"
#define EVICTD_API_VERSION "evictd.io/v1alpha1"

enum option_kind {
	OPT_THRESHOLD_MAP,	/* flag "sig<q,sig<q"; YAML map signal: q */
	OPT_SIGNAL_MAP,		/* flag "sig=v,sig=v"; YAML map signal: v */
	OPT_DURATION,		/* Go duration */
	OPT_SECONDS,		/* whole seconds, >= 0 */
	OPT_PRIORITY_LIST,	/* shutdownGracePeriodByPodPriority */
	OPT_WORD_LIST,		/* enforceNodeAllocatable: flag "a,b"; YAML list */
	OPT_PATH,		/* a char array of size bytes, NUL included */
	OPT_NODE_NAME,		/* OPT_PATH that must be a DNS-1123 subdomain */
	OPT_STRING_LIST,	/* repeatable; a struct string_list */
	OPT_BOOL,
	OPT_OUTPUT,
	OPT_LOG_LEVEL,
	OPT_OOM_GUARD,		/* threshold value or "off" */
	OPT_HOST_GUARD,		/* a struct host_guard: threshold value or "off" */
	OPT_QUANTITY,		/* a quantity stored in a threshold_value's cap */
	OPT_BYTES,		/* a quantity (10Mi) into an int64_t, range-checked */
	OPT_COUNT,		/* a whole number >= 0 into an int64_t, range-checked */
	OPT_WORKLOAD_PREFS,	/* repeatable PATTERN=SETTING; YAML list of maps (pods/prefs.h) */
	OPT_CONFIG_FILE,
	OPT_HELP,
	OPT_VERSION,
};

/* The values an option accepts (doc/DESIGN.md §9: every bad value one line, exit 2). In the
 * option's unit: nanoseconds for OPT_DURATION and the soft grace periods, seconds for
 * OPT_SECONDS and the shutdown priority groups. No duration reaches 24 h, so none overflows
 * int64 nanoseconds when added to a monotonic clock reading. text is shown in --help and in
 * the error line. */
struct option_range {
	int64_t min, max;
	bool zero_ok;			/* 0 (off) is accepted besides [min, max] */
	const char *text;		/* "100ms to 24h" */
};

#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL
#define DAY_S (24LL * 3600)
#define DAY_NS (DAY_S * NS_PER_S)

struct option_spec {
	const char *flag;		/* long option, without "--" */
	const char *kubelet_key;	/* KubeletConfiguration field, or NULL */
	const char *evictd_key;		/* EvictdConfiguration field, or NULL */
	enum option_kind kind;
	size_t offset;			/* into struct evictd_config */
	size_t size;			/* of that field: no setter writes past it */
	const char *arg;		/* argument name for --help; NULL for bools */
	const char *help;
};

extern const struct option_spec config_options[];
extern const size_t config_n_options;

/* A value as echoed in a message: at most ECHO_MAX bytes, control characters as '?', so a
 * 128 KiB or multi-line value still makes one short line. Returned by value: the text lives
 * until the end of the full expression, long enough for a log call. */
#define ECHO_MAX 64
struct echo {
	char text[ECHO_MAX + sizeof("...")];
};
struct echo value_echo(const char *value);

/* The option a YAML key names in a KubeletConfiguration (kubelet) or EvictdConfiguration. */
const struct option_spec *option_by_key(const char *key, bool kubelet);
/* Apply a scalar (or one repeated) value to an option; key names the source for messages.
 * 0 or negative errno, after one error line. */
int option_apply(struct evictd_config *config, const struct option_spec *spec, const char *key,
		 const char *value);

/* Record where an option's value came from ("--flag", "file: key"), for --validate. */
void option_note_source(struct evictd_config *config, const struct option_spec *spec,
			const char *source);
/* Signal maps: start one (clearing what an earlier source set), add signal -> text. */
void signal_map_begin(struct signal_text_map *map, const char *origin);
int signal_map_put(struct signal_text_map *map, const char *key, const char *signal_text,
		   const char *value);
/* Set an enforceNodeAllocatable list (comma-separated) into field, or one error line. */
int word_list_set(char *field, size_t size, const char *key, const char *value);
int shutdown_group_add(struct evictd_config *config, const char *key, const char *priority_text,
		       const char *seconds_text);
/* A non-negative Go duration, or one error line naming key and value. */
int option_parse_duration(const char *key, const char *value, int64_t *out);
/* The range of an option, or NULL when it has none. */
const struct option_range *option_range_of(const struct option_spec *spec);
/* The row of a flag (without "--"), or NULL. */
const struct option_spec *option_by_flag(const char *flag);
/* Whether value (parsed from text) is within spec's range: 0, or -ERANGE after one error line
 * naming key, text and the range. */
int option_check_range(const struct option_spec *spec, const char *key, const char *text, int64_t value);

/* config/options_help.c: the --help group a flag is listed in (NULL: none), the flag closest
 * to a mistyped one (NULL: none close), and one usage-error line for a command-line argument
 * getopt refused (arg as given; short_opt for a "-x"). */
const char *option_group_of(const char *flag);
const char *option_suggest(const char *typed);
void option_usage_error(const char *arg, int short_opt);

#endif
