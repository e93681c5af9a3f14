// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Standalone workload preferences (prefs.h, doc/DESIGN.md §5 "Workload preferences").
 * Patterns are fnmatch(3) globs rather than earlyoom's POSIX regexes (earlyoom main.c
 * --prefer/--avoid, kill.c: BADNESS_PREFER +300 / BADNESS_AVOID -300 on a process name):
 * unit names are globbed everywhere else on a systemd host (systemctl list-units 'a*'), and a
 * glob cannot be slow on a long name.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pods/internal.h"
#include "pods/prefs.h"
#include "sys/log.h"

const char *workload_pref_name(enum pod_preference preference)
{
	switch (preference) {
	case POD_PREF_PREFER:
		return "prefer";
	case POD_PREF_AVOID:
		return "avoid";
	case POD_PREF_NEVER:
		return "never";
	case POD_PREF_NONE:
		break;
	}
	return "";
}

static int parse_priority(const char *key, const char *text, int32_t *out)
{
	char *end;
	long long value;

	errno = 0;
	value = strtoll(text, &end, 10);
	if (errno || end == text || *end || value < INT32_MIN || value > INT32_MAX) {
		log_err("%s: priority \"%.64s\": expected a 32-bit integer", key, text);
		return -EINVAL;
	}
	*out = (int32_t)value;
	return 0;
}

int workload_pref_set(const char *key, const char *field, const char *value, struct workload_pref *pref)
{
	static const struct {
		const char *name;
		enum pod_preference preference;
	} words[] = {
		{ "prefer", POD_PREF_PREFER }, { "avoid", POD_PREF_AVOID }, { "never", POD_PREF_NEVER },
	};

	if (!strcmp(field, "priority")) {
		if (!value || parse_priority(key, value, &pref->priority))
			return -EINVAL;
		pref->has_priority = true;
		return 0;
	}
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (strcmp(field, words[i].name))
			continue;
		/* YAML "prefer: true"; the flag's bare word means true. */
		if (value && strcmp(value, "true")) {
			if (!strcmp(value, "false"))
				return 0;
			log_err("%s: %s: \"%.64s\": expected true or false", key, field, value);
			return -EINVAL;
		}
		if (pref->preference != POD_PREF_NONE && pref->preference != words[i].preference) {
			log_err("%s: %s and %s in one entry: expected one of prefer, avoid, never", key,
				workload_pref_name(pref->preference), field);
			return -EINVAL;
		}
		pref->preference = words[i].preference;
		return 0;
	}
	log_err("%s: unknown field \"%.64s\": expected match, priority, prefer, avoid or never", key, field);
	return -EINVAL;
}

int workload_pref_check(const char *key, const struct workload_pref *pref)
{
	if (!pref->match[0]) {
		log_err("%s: an entry without match: expected a unit or cgroup name pattern", key);
		return -EINVAL;
	}
	/* fnmatch has no syntax error to report: an unbalanced '[' is taken literally, which
	 * is never what was meant. */
	for (const char *p = pref->match; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
		} else if (*p == '[' && !strchr(p + 1, ']')) {
			log_err("%s: match \"%.64s\": '[' without ']'", key, pref->match);
			return -EINVAL;
		}
	}
	if (!pref->has_priority && pref->preference == POD_PREF_NONE) {
		log_err("%s: match \"%.64s\" sets nothing: expected priority, prefer, avoid or never",
			key, pref->match);
		return -EINVAL;
	}
	return 0;
}

int workload_pref_parse(const char *key, const char *text, struct workload_pref *out)
{
	const char *eq = strrchr(text, '=');
	char settings[128], *save = NULL;
	size_t len;

	memset(out, 0, sizeof(*out));
	if (!eq || eq == text) {
		log_err("%s: \"%.64s\": expected PATTERN=prefer|avoid|never|priority:N[,...]", key, text);
		return -EINVAL;
	}
	len = (size_t)(eq - text);
	if (len >= sizeof(out->match) || strlen(eq + 1) >= sizeof(settings)) {
		log_err("%s: \"%.64s...\": too long (pattern at most %zu bytes)", key, text,
			sizeof(out->match) - 1);
		return -EINVAL;
	}
	memcpy(out->match, text, len);
	out->match[len] = '\0';
	strcpy(settings, eq + 1);
	for (char *word = strtok_r(settings, ",", &save); word; word = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(word, ':');

		if (colon)
			*colon = '\0';
		if (workload_pref_set(key, word, colon ? colon + 1 : NULL, out))
			return -EINVAL;
	}
	return workload_pref_check(key, out);
}

bool workload_pref_matches(const char *pattern, const char *name, const char *rel_path)
{
	if (strchr(pattern, '/'))
		return fnmatch(pattern[0] == '/' ? pattern + 1 : pattern, rel_path, 0) == 0;
	return fnmatch(pattern, name, 0) == 0;
}

void workload_prefs_apply(const struct workload_prefs *prefs, struct pod *pod, const char *name,
			  const char *rel_path, bool priority_set)
{
	bool preference_set = false;

	if (!prefs)
		return;
	for (size_t i = 0; i < prefs->n && !(priority_set && preference_set); i++) {
		const struct workload_pref *pref = &prefs->items[i];

		if (!workload_pref_matches(pref->match, name, rel_path))
			continue;
		if (!priority_set && pref->has_priority) {
			pod->priority = pref->priority;
			priority_set = true;
		}
		if (!preference_set && pref->preference != POD_PREF_NONE) {
			preference_set = true;
			/* systemd's omit is kept: a pattern may not expose what systemd protects. */
			if (pod->preference == POD_PREF_NEVER)
				continue;
			pod->preference = pref->preference;
			snprintf(pod->preference_from, sizeof(pod->preference_from),
				 "workloadPreferences[%zu] %s", i, workload_pref_name(pref->preference));
		}
	}
}

/* systemd's parse_boolean (src/basic/parse-util.c): what cg_get_xattr_bool accepts. 1, 0, or
 * -EINVAL. */
static int systemd_boolean(const char *text)
{
	static const char *const yes[] = { "1", "yes", "y", "true", "t", "on" };
	static const char *const no[] = { "0", "no", "n", "false", "f", "off" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(text, yes[i]))
			return 1;
		if (!strcasecmp(text, no[i]))
			return 0;
	}
	return -EINVAL;
}

enum pod_preference pods_oomd_preference(int fd, uid_t owner, uid_t root_owner, const char **name)
{
	enum pod_preference preference = POD_PREF_NONE;
	char value[64];

	*name = NULL;
	/* oomd_fetch_cgroup_oom_preference: uid != 0 and uid != prefix_uid -> NONE. */
	if (owner != 0 && owner != root_owner)
		return POD_PREF_NONE;
	/* Errors other than absence are ignored there too ("usually unset"). */
	if (pods_read_xattr(fd, PODS_XATTR_OOMD_AVOID, value, sizeof(value)) > 0 &&
	    systemd_boolean(value) > 0) {
		preference = POD_PREF_AVOID;
		*name = PODS_XATTR_OOMD_AVOID;
	}
	if (pods_read_xattr(fd, PODS_XATTR_OOMD_OMIT, value, sizeof(value)) > 0 &&
	    systemd_boolean(value) > 0) {
		preference = POD_PREF_NEVER;
		*name = PODS_XATTR_OOMD_OMIT;
	}
	return preference;
}
