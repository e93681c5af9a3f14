// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target for evictctl's reading of a control reply (ops/ctl_view.h): whatever
 * listens on the socket path may answer anything. Beyond "no crash, no UB, no leak", it
 * checks that the result is one of the documented ones, that an error is one line, and that
 * the rendered tables hold no raw control character (only \n ending lines) and no invalid
 * UTF-8: a reply cannot write escape sequences to the operator's terminal.
 * The input is tried as it is for all three commands.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ctl_view.h"
#include "ops/textsafe.h"

#define CHECK(cond, ...)                                                            \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "fuzz_ctl_reply: %s: ", #cond);             \
			fprintf(stderr, __VA_ARGS__);                               \
			fputc('\n', stderr);                                        \
			abort();                                                    \
		}                                                                   \
	} while (0)

static void check_terminal_safe(const char *text, size_t len, const char *what)
{
	const unsigned char *p = (const unsigned char *)text;

	for (size_t i = 0; i < len;) {
		size_t seq = textsafe_utf8_len(p + i, len - i);

		CHECK(seq > 0, "%s: invalid UTF-8 at byte %zu", what, i);
		CHECK(seq > 1 || p[i] == '\n' || (p[i] >= 0x20 && p[i] != 0x7f), "%s: control 0x%02x at %zu", what,
		      p[i], i);
		CHECK(!(seq == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0), "%s: C1 control at %zu", what, i);
		i += seq;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const commands[] = { "status", "pods", "events" };
	struct json_object *reply = NULL;
	char err[1200], *text;
	int ret;

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	err[0] = '\0';
	ret = ctl_view_parse(text, &reply, err, sizeof(err));
	CHECK(ret == 0 || ret == -EPROTO || ret == -EREMOTEIO, "parse -> %d", ret);
	if (ret) {
		CHECK(!reply, "a reply with an error");
		CHECK(err[0] && !strchr(err, '\n'), "the error is not one line: \"%s\"", err);
		check_terminal_safe(err, strlen(err), "parse error");
	}
	for (size_t c = 0; reply && c < sizeof(commands) / sizeof(commands[0]); c++) {
		char *out_text = NULL;
		size_t out_len = 0;
		FILE *out = open_memstream(&out_text, &out_len);

		CHECK(out, "open_memstream");
		err[0] = '\0';
		ret = ctl_view_render(out, commands[c], reply, err, sizeof(err));
		fclose(out);
		CHECK(ret == 0 || ret == -EPROTO, "%s -> %d", commands[c], ret);
		if (ret)
			CHECK(err[0] && !strchr(err, '\n') && out_len == 0, "%s: \"%s\"", commands[c], err);
		check_terminal_safe(out_text, out_len, commands[c]);
		free(out_text);
	}
	ctl_view_pin_dir(reply, "/sys/fs/bpf/evictd");
	json_object_put(reply);
	free(text);
	return 0;
}
