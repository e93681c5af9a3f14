// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "core/observations.h"

const char *fs_layout_name(enum fs_layout layout)
{
	switch (layout) {
	case FS_LAYOUT_SINGLE: return "single";
	case FS_LAYOUT_SPLIT_DISK: return "split-disk";
	case FS_LAYOUT_SPLIT_IMAGE: return "split-image";
	default: return "unknown";
	}
}

const char *cgroup_layout_name(enum cgroup_layout layout)
{
	switch (layout) {
	case CGROUP_LAYOUT_V2: return "v2";
	case CGROUP_LAYOUT_V1: return "v1";
	default: return "unknown";
	}
}
