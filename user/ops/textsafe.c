// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/textsafe.h"

/* RFC 3629 §4: the well-formed byte sequences. */
size_t textsafe_utf8_len(const unsigned char *p, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t need;

	if (!n)
		return 0;
	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		need = 2;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		need = 3;
		if (p[0] == 0xe0)
			lo = 0xa0;	/* overlong */
		else if (p[0] == 0xed)
			hi = 0x9f;	/* surrogates */
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		need = 4;
		if (p[0] == 0xf0)
			lo = 0x90;	/* overlong */
		else if (p[0] == 0xf4)
			hi = 0x8f;	/* above U+10FFFF */
	} else {
		return 0;
	}
	if (n < need || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < need; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return need;
}

char *textsafe_json_utf8(const char *json)
{
	const unsigned char *p = (const unsigned char *)json;
	size_t n = strlen(json), used = 0, bad = 0;
	char *out;

	for (size_t i = 0; i < n;) {
		size_t len = textsafe_utf8_len(p + i, n - i);

		if (!len) {
			bad++;
			i++;
		} else {
			i += len;
		}
	}
	out = malloc(n + bad * 5 + 1);
	if (!out)
		return NULL;
	if (!bad) {
		memcpy(out, json, n + 1);
		return out;
	}
	for (size_t i = 0; i < n;) {
		size_t len = textsafe_utf8_len(p + i, n - i);

		if (!len) {
			/* Only inside strings: json-c writes nothing else above 0x7f. */
			used += (size_t)sprintf(out + used, "\\\\x%02x", p[i]);
			i++;
		} else {
			memcpy(out + used, p + i, len);
			used += len;
			i += len;
		}
	}
	out[used] = '\0';
	return out;
}

char *textsafe_display(const char *text, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)(text ? text : "");
	size_t n = strlen((const char *)p), used = 0;

	if (!len)
		return buf;
	for (size_t i = 0; i < n;) {
		size_t seq = textsafe_utf8_len(p + i, n - i);
		char piece[20];
		size_t piece_len;

		if (seq == 1 && p[i] >= 0x20 && p[i] != 0x7f) {
			piece[0] = (char)p[i];
			piece_len = 1;
		} else if (seq == 1 && (p[i] == '\n' || p[i] == '\t' || p[i] == '\r')) {
			piece_len = (size_t)snprintf(piece, sizeof(piece), "\\%c",
						     p[i] == '\n' ? 'n' : p[i] == '\t' ? 't' : 'r');
		} else if (seq == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0) {
			/* C1 controls: U+009B is CSI on terminals that honour 8-bit controls. */
			piece_len = (size_t)snprintf(piece, sizeof(piece), "\\xc2\\x%02x", p[i + 1]);
		} else if (seq > 1) {
			memcpy(piece, p + i, seq);
			piece_len = seq;
		} else {
			piece_len = (size_t)snprintf(piece, sizeof(piece), "\\x%02x", p[i]);
			seq = 1;
		}
		if (used + piece_len >= len)
			break;
		memcpy(buf + used, piece, piece_len);
		used += piece_len;
		i += seq;
	}
	buf[used] = '\0';
	return buf;
}

size_t textsafe_width(const char *text)
{
	size_t width = 0;

	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		width += (*p & 0xc0) != 0x80;
	return width;
}
