/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The memory pressure criterion (DESIGN.md §1 "Memory pressure"): PSI some/full averages of
 * the node (/proc/pressure/memory) or a workload (memory.pressure) held above a limit for a
 * duration, as systemd-oomd's ManagedOOMMemoryPressureLimit= and
 * ManagedOOMMemoryPressureDurationSec= (src/oom/oomd-util.c oomd_pressure_above). Pure logic
 * with an injected clock: no I/O. */
#ifndef EVICTD_CORE_PRESSURE_H
#define EVICTD_CORE_PRESSURE_H

#include <stdbool.h>
#include <stdint.h>

/* One line of a PSI file: "some avg10=1.23 avg60=0.50 avg300=0.10 total=12345". Averages in
 * hundredths of a percent (1.23% = 123), total in microseconds of stall. */
struct psi_line {
	int32_t avg10, avg60, avg300;
	uint64_t total_us;
};
struct psi_reading {
	struct psi_line some, full;
	bool has_full;		/* the "full" line: absent before Linux 5.13 for CPU, always for memory */
};
/* Parse a whole pressure file's text. 0, or -EINVAL for anything else. */
int pressure_parse(const char *text, struct psi_reading *out);

enum pressure_kind { PRESSURE_SOME, PRESSURE_FULL };
/* What is compared to the limit: an average the kernel keeps, or the stall share computed
 * from two totals over the criterion's own duration ("total": no 10 s smoothing lag). */
enum pressure_window { PRESSURE_AVG10, PRESSURE_AVG60, PRESSURE_TOTAL };

struct pressure_criterion {
	bool on;
	enum pressure_kind kind;	/* systemd-oomd: full */
	enum pressure_window window;	/* systemd-oomd: avg10 */
	int32_t limit;			/* hundredths of a percent: 6000 = 60% */
	int64_t duration_ns;		/* systemd-oomd: 30 s */
};

/* One node or workload's memory of the criterion between readings. */
struct pressure_state {
	int64_t above_since_ns;		/* -1: not above the limit */
	int64_t last_ns;		/* the previous reading (PRESSURE_TOTAL), -1: none */
	uint64_t last_total_us;
	int32_t last_value;		/* the value compared, hundredths of a percent */
};
void pressure_state_init(struct pressure_state *state);

/* Feed one reading taken at now_ns; true when the pressure has stayed above the limit for the
 * criterion's duration (oomd_pressure_above: the first reading above starts the clock, one
 * at or below the limit resets it). */
bool pressure_update(const struct pressure_criterion *criterion, struct pressure_state *state,
		     const struct psi_reading *reading, int64_t now_ns);

/* "full avg10>60% for 30s", "off". */
int pressure_criterion_format(const struct pressure_criterion *criterion, char *buf, unsigned long len);
/* Parse "[some|full] [avg10|avg60|total] LIMIT%": "60%", "full avg10 60%", "some total 20%".
 * The duration is a separate option. 0 or -EINVAL. "off" turns it off. */
int pressure_criterion_parse(const char *text, struct pressure_criterion *criterion);

#endif
