/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * evictctl's side of the control socket (ops/control.h): the reply checked and rendered as
 * tables. A separate module so that it can be fuzzed (tests/fuzz/fuzz_ctl_reply.c): the
 * reply comes from whatever listens on the socket path, so nothing in it is trusted.
 * - Every field may be missing or of another type: it shows as a placeholder ("?", "-").
 *   Only a reply without the command's main part (status: "signals", pods: "pods",
 *   events: "events") is refused, with a one-line error.
 * - Every string is shown through textsafe_display: newlines and escape sequences in pod
 *   names, namespaces, cgroup paths or xattr values appear as \n, \x1b, never raw.
 */
#ifndef EVICTD_CTL_VIEW_H
#define EVICTD_CTL_VIEW_H

#include <stddef.h>
#include <stdio.h>

struct json_object;

/* Parse one reply. Returns 0 and *reply (an object with "ok": true; caller puts), -EPROTO
 * when the text is not a JSON object, or -EREMOTEIO when the daemon answered "ok": false (or
 * gave no "ok"); err then holds a one-line message safe to print. */
int ctl_view_parse(const char *text, struct json_object **reply, char *err, size_t err_len);

/* Render the reply to command ("status", "pods", "events") on out. Returns 0, -EINVAL for
 * an unknown command, or -EPROTO when the reply lacks the command's main part (err says
 * which). */
int ctl_view_render(FILE *out, const char *command, struct json_object *reply, char *err, size_t err_len);

/* The reply's bpf.pin_dir when it is a string, else fallback. */
const char *ctl_view_pin_dir(struct json_object *reply, const char *fallback);

#endif
