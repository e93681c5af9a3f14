/* bpfcheck - prove that this kernel lets root run what evictd's BPF side needs:
 * a BPF_MAP_TYPE_RINGBUF map, a raw tracepoint program calling
 * bpf_ringbuf_output(), attached to sched_process_fork, delivering records
 * that user space reads through the mmap'ed ring.  Raw syscalls only, so it
 * builds statically without libbpf.
 *
 *   bpfcheck [--tp TRACEPOINT]     (default sched_process_fork)
 *
 * Prints one line per step to stdout; exit 0 when a fork produced a record
 * with the expected payload, 1 otherwise (with the verifier log if loading failed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define RB_SIZE (64 * 1024)
#define MAGIC 0x65766963u /* "evic" */

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

#define INSN(c, d, s, o, i) \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })

int main(int argc, char **argv)
{
	const char *tp = "sched_process_fork";
	static char log[65536];
	union bpf_attr a;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--tp") && argv[i + 1])
			tp = argv[++i];
		else {
			fprintf(stderr, "usage: bpfcheck [--tp TRACEPOINT]\n");
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_RINGBUF;
	a.max_entries = RB_SIZE;
	int map = sys_bpf(BPF_MAP_CREATE, &a);
	if (map < 0) {
		printf("bpfcheck: BPF_MAP_CREATE ringbuf failed: %s\n", strerror(errno));
		return 1;
	}
	printf("bpfcheck: ringbuf map fd=%d size=%d\n", map, RB_SIZE);

	struct bpf_insn prog[] = {
		/* *(u32 *)(r10 - 8) = MAGIC; *(u32 *)(r10 - 4) = 0 */
		INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -8, (int32_t)MAGIC),
		INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -4, 0),
		/* r1 = map (ld_imm64 with a map fd) */
		INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, map),
		INSN(0, 0, 0, 0, 0),
		/* r2 = r10 - 8; r3 = 8; r4 = 0 */
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -8),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_3, 0, 0, 8),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0, 0),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_ringbuf_output),
		/* return 0 */
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT;
	a.insns = (uintptr_t)prog;
	a.insn_cnt = sizeof(prog) / sizeof(prog[0]);
	a.license = (uintptr_t)"GPL";
	a.log_buf = (uintptr_t)log;
	a.log_size = sizeof(log);
	a.log_level = 1;
	int pfd = sys_bpf(BPF_PROG_LOAD, &a);
	if (pfd < 0) {
		printf("bpfcheck: BPF_PROG_LOAD raw_tracepoint failed: %s\n%s\n", strerror(errno), log);
		return 1;
	}
	printf("bpfcheck: raw_tracepoint program loaded fd=%d\n", pfd);

	memset(&a, 0, sizeof(a));
	a.raw_tracepoint.name = (uintptr_t)tp;
	a.raw_tracepoint.prog_fd = pfd;
	int lfd = sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &a);
	if (lfd < 0) {
		printf("bpfcheck: BPF_RAW_TRACEPOINT_OPEN %s failed: %s\n", tp, strerror(errno));
		return 1;
	}
	printf("bpfcheck: attached to raw tracepoint %s\n", tp);

	long psz = sysconf(_SC_PAGESIZE);
	volatile unsigned long *cons = mmap(NULL, psz, PROT_READ | PROT_WRITE, MAP_SHARED, map, 0);
	char *prod = mmap(NULL, psz + 2 * RB_SIZE, PROT_READ, MAP_SHARED, map, psz);
	if (cons == MAP_FAILED || prod == MAP_FAILED) {
		printf("bpfcheck: mmap of the ring buffer failed: %s\n", strerror(errno));
		return 1;
	}

	for (int i = 0; i < 3; i++) {
		pid_t c = fork();
		if (c == 0)
			_exit(0);
		if (c > 0)
			waitpid(c, NULL, 0);
	}

	unsigned long pp = __atomic_load_n((unsigned long *)prod, __ATOMIC_ACQUIRE);
	unsigned long cp = *cons;
	int records = 0, good = 0;
	while (cp < pp) {
		uint32_t len = *(volatile uint32_t *)(prod + psz + (cp & (RB_SIZE - 1)));
		if (len & BPF_RINGBUF_BUSY_BIT)
			break;
		uint32_t dlen = len & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
		uint32_t v = *(uint32_t *)(prod + psz + ((cp + BPF_RINGBUF_HDR_SZ) & (RB_SIZE - 1)));
		records++;
		if (!(len & BPF_RINGBUF_DISCARD_BIT) && dlen == 8 && v == MAGIC)
			good++;
		cp += (BPF_RINGBUF_HDR_SZ + dlen + 7) & ~7ul;
	}
	*cons = cp;
	printf("bpfcheck: %d ring buffer record(s) after 3 forks, %d with the expected payload\n",
	       records, good);
	return good >= 3 ? 0 : 1;
}
