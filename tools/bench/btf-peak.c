// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* btf-peak - what one parse of the kernel's BTF costs a process in peak RSS: the part of
 * evictd's peak that libbpf adds while it loads BTF-typed programs (tools/bench/footprint.sh).
 * Prints: btf-peak: N types, FILE kB file, VmHWM +X kB, RssAnon +Y kB while parsed */
#include <bpf/btf.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static long status_kib(const char *key)
{
	char line[256];
	size_t len = strlen(key);
	long value = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) && line[len] == ':')
			sscanf(line + len + 1, "%ld", &value);
	fclose(f);
	return value;
}

int main(void)
{
	long hwm0 = status_kib("VmHWM"), anon0 = status_kib("RssAnon"), hwm1, anon1;
	struct stat st = { 0 };
	struct btf *btf;

	stat("/sys/kernel/btf/vmlinux", &st);
	btf = btf__load_vmlinux_btf();
	if (!btf) {
		perror("btf-peak: btf__load_vmlinux_btf");
		return 1;
	}
	hwm1 = status_kib("VmHWM");
	anon1 = status_kib("RssAnon");
	printf("btf-peak: %u types, %lld kB file, VmHWM +%ld kB, RssAnon +%ld kB while parsed\n",
	       btf__type_cnt(btf), (long long)st.st_size / 1024, hwm1 - hwm0, anon1 - anon0);
	btf__free(btf);
	return 0;
}
