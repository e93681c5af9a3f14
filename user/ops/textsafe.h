/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Text that comes from outside evictd (pod names, namespaces and uids from the API server or
 * a pods file, cgroup directory names, xattr values) is shown in two places where its bytes
 * must not be taken as given:
 *
 * - JSON (control replies, the decision log): json-c escapes control characters but copies
 *   every byte >= 0x80 as it is, so invalid UTF-8 in a name makes the whole line invalid
 *   JSON (RFC 8259 §8.1). textsafe_json_utf8 rewrites each byte of an invalid sequence as the
 *   six characters \\xNN, which read back as the text \xNN.
 * - A terminal (evictctl's tables): a newline breaks a table row, an escape sequence (ESC,
 *   C1 CSI) repaints the screen. textsafe_display writes them visibly: \n, \t, \r, \xNN.
 */
#ifndef EVICTD_TEXTSAFE_H
#define EVICTD_TEXTSAFE_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at p (at most n bytes): 1..4, or 0 when the bytes there
 * are not one (overlong forms, surrogates and code points above U+10FFFF are invalid). */
size_t textsafe_utf8_len(const unsigned char *p, size_t n);

/* A serialized JSON text from json-c with every byte of an invalid UTF-8 sequence written
 * as \\xNN. Returns a malloc'd copy (caller frees), or NULL when out of memory. */
char *textsafe_json_utf8(const char *json);

/* text made safe for a terminal into buf: C0 controls, DEL, C1 controls (U+0080..U+009F) and
 * the bytes of invalid UTF-8 as \n, \t, \r or \xNN; valid printable UTF-8 as it is. Always
 * NUL-terminated when len > 0, truncated at a character boundary. Returns buf. */
char *textsafe_display(const char *text, char *buf, size_t len);

/* Columns text takes once displayed: its UTF-8 code points (wide characters count one). */
size_t textsafe_width(const char *text);

#endif
