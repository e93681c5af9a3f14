// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "sys/log.h"
#include "sys/netaddr.h"

int netaddr_parse_listen(const char *what, const char *text, struct sockaddr_storage *addr,
			 socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *port_text, *host_start;
	size_t host_len;
	unsigned long port;
	char *end;

	if (!text || !text[0] || !strcmp(text, "off"))
		return 1;
	memset(addr, 0, sizeof(*addr));
	if (text[0] == '[') {
		const char *close = strchr(text, ']');

		if (!close || close[1] != ':')
			goto invalid;
		host_start = text + 1;
		host_len = (size_t)(close - host_start);
		port_text = close + 2;
	} else {
		const char *colon = strrchr(text, ':');

		if (!colon || memchr(text, ':', (size_t)(colon - text)))
			goto invalid;	/* a bare IPv6 address needs brackets */
		host_start = text;
		host_len = (size_t)(colon - text);
		port_text = colon + 1;
	}
	if (host_len == 0 || host_len >= sizeof(host) || !*port_text)
		goto invalid;
	memcpy(host, host_start, host_len);
	host[host_len] = '\0';
	errno = 0;
	port = strtoul(port_text, &end, 10);
	if (errno || *end || port > 65535 || *port_text == '-' || *port_text == '+')
		goto invalid;

	if (text[0] == '[') {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)addr;

		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
			goto invalid;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*in6);
	} else {
		struct sockaddr_in *in4 = (struct sockaddr_in *)addr;

		if (inet_pton(AF_INET, host, &in4->sin_addr) != 1)
			goto invalid;
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)port);
		*len = sizeof(*in4);
	}
	return 0;
invalid:
	log_err("%s: \"%s\": expected HOST:PORT with a numeric host (127.0.0.1:9808, "
		"[::1]:9808, 0.0.0.0:9808) or \"off\"", what, text);
	return -EINVAL;
}
