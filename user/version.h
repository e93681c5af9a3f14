/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The one version string: `evictd --version`, `evictctl --version`, the control socket's and
 * the metrics' version (evictd_build_info), the image tag. The Makefile writes it into
 * $(BUILD)/evictd-version.h from `git describe --tags` (no tag: VERSION plus "-g<commit>",
 * "-dirty" for a modified tree; no git: VERSION alone), rewriting that file only when the
 * string changes, so a new commit rebuilds only what includes this header. A compiler
 * -DEVICTD_VERSION='"x"' wins (README "Install"). */
#ifndef EVICTD_VERSION_H
#define EVICTD_VERSION_H

#ifndef EVICTD_VERSION
#include "evictd-version.h"
#endif
#ifndef EVICTD_COMMIT
#define EVICTD_COMMIT "unknown"	/* a hand-given -DEVICTD_VERSION without one */
#endif

#endif
