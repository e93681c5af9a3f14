/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A listen address as the flags give it: "HOST:PORT" or "[V6]:PORT" with a numeric host. */
#ifndef EVICTD_SYS_NETADDR_H
#define EVICTD_SYS_NETADDR_H

#include <sys/socket.h>

/* Returns 0 and fills addr/len, 1 for a disabled address (NULL, "", "off"), or -EINVAL
 * (logged, naming what as the option and the value). */
int netaddr_parse_listen(const char *what, const char *text, struct sockaddr_storage *addr,
			 socklen_t *len);

#endif
