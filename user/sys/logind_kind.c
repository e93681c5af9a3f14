// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What a shutdown is for (logind.h): the names systemd gives it. Pure, apart from logind.c
 * so that it stays testable without a bus. */
#include <string.h>

#include "sys/logind.h"

enum logind_shutdown_kind logind_kind_from_type(const char *type)
{
	if (!type)
		return LOGIND_SHUTDOWN_UNKNOWN;
	/* systemd's handle_action_to_string(): "poweroff", "halt", "reboot", "kexec",
	 * "soft-reboot" (and the spellings of the matching targets). */
	if (!strcmp(type, "poweroff") || !strcmp(type, "power-off") || !strcmp(type, "halt"))
		return LOGIND_SHUTDOWN_POWEROFF;
	if (!strcmp(type, "reboot") || !strcmp(type, "kexec") || !strcmp(type, "soft-reboot"))
		return LOGIND_SHUTDOWN_REBOOT;
	return LOGIND_SHUTDOWN_UNKNOWN;
}

enum logind_shutdown_kind logind_kind_from_unit(const char *unit)
{
	/* The targets logind's execute_shutdown_or_sleep starts (handle_action_to_unit). */
	if (!unit)
		return LOGIND_SHUTDOWN_UNKNOWN;
	if (!strcmp(unit, "poweroff.target") || !strcmp(unit, "halt.target"))
		return LOGIND_SHUTDOWN_POWEROFF;
	if (!strcmp(unit, "reboot.target") || !strcmp(unit, "kexec.target") || !strcmp(unit, "soft-reboot.target"))
		return LOGIND_SHUTDOWN_REBOOT;
	return LOGIND_SHUTDOWN_UNKNOWN;
}

const char *logind_kind_name(enum logind_shutdown_kind kind)
{
	switch (kind) {
	case LOGIND_SHUTDOWN_POWEROFF: return "power-off";
	case LOGIND_SHUTDOWN_REBOOT: return "reboot";
	case LOGIND_SHUTDOWN_UNKNOWN: break;
	}
	return "unknown";
}
