// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Which mark_victim program the loader loads (bpf_loader_mark_victim_shape in
 * user/bpf_loader/probe.c): the kernel's tracepoint passes a struct task_struct * on Debian
 * 6.1 and 6.9+ (TP_PROTO(struct task_struct *task, uid_t uid)) but an int pid on 6.2 .. 6.8
 * (TP_PROTO(int pid), include/trace/events/oom.h). Each shape is built as the kernel's BTF
 * describes it (typedef btf_trace_mark_victim -> pointer -> func proto (void *__data, args)),
 * with libbpf's BTF writer, plus the shapes the chooser must refuse; and the running kernel's
 * own BTF.
 */
#include "testutil.h"

#include <sys/utsname.h>

#include <bpf/btf.h>

#include "bpf_loader/bpf_loader.h"

/* A BTF with int, unsigned int, void * and struct task_struct / struct mm_struct. */
struct base {
	struct btf *btf;
	int int_id, uint_id, long_id, void_ptr, task, mm;
};

static void base_new(struct base *b)
{
	b->btf = btf__new_empty();
	assert_non_null(b->btf);
	b->int_id = btf__add_int(b->btf, "int", 4, BTF_INT_SIGNED);
	b->uint_id = btf__add_int(b->btf, "unsigned int", 4, 0);
	b->long_id = btf__add_int(b->btf, "long int", 8, BTF_INT_SIGNED);
	b->void_ptr = btf__add_ptr(b->btf, 0);
	b->task = btf__add_struct(b->btf, "task_struct", 8);
	assert_int_equal(btf__add_field(b->btf, "pid", b->int_id, 0, 0), 0);
	b->mm = btf__add_struct(b->btf, "mm_struct", 8);
	assert_int_equal(btf__add_field(b->btf, "users", b->int_id, 0, 0), 0);
	assert_true(b->int_id > 0 && b->uint_id > 0 && b->long_id > 0 && b->void_ptr > 0 &&
		    b->task > 0 && b->mm > 0);
}

/* typedef void (*btf_trace_mark_victim)(void *__data, <arg1> [, unsigned int uid]) */
static void add_trace_typedef(struct base *b, int arg1, bool with_uid)
{
	int proto = btf__add_func_proto(b->btf, 0), ptr;

	assert_true(proto > 0);
	assert_int_equal(btf__add_func_param(b->btf, "__data", b->void_ptr), 0);
	if (arg1 >= 0)
		assert_int_equal(btf__add_func_param(b->btf, "arg", arg1), 0);
	if (with_uid)
		assert_int_equal(btf__add_func_param(b->btf, "uid", b->uint_id), 0);
	ptr = btf__add_ptr(b->btf, proto);
	assert_true(ptr > 0);
	assert_true(btf__add_typedef(b->btf, "btf_trace_mark_victim", ptr) > 0);
}

static void test_task_shape(void **state)
{
	struct base b;

	base_new(&b);
	add_trace_typedef(&b, btf__add_ptr(b.btf, b.task), true);
	assert_int_equal(bpf_loader_mark_victim_shape(b.btf), BPF_MARK_VICTIM_TASK);
	assert_string_equal(bpf_loader_mark_victim_shape_name(BPF_MARK_VICTIM_TASK),
			    "task_struct *");
	btf__free(b.btf);
}

static void test_pid_shape(void **state)
{
	struct base b;

	base_new(&b);
	add_trace_typedef(&b, b.int_id, false);
	assert_int_equal(bpf_loader_mark_victim_shape(b.btf), BPF_MARK_VICTIM_PID);
	btf__free(b.btf);
}

/* Typedefs and qualifiers in between are looked through: const pid_t, a typedef'd pointer. */
static void test_shapes_through_typedefs(void **state)
{
	struct base b;
	int pid_t_id, const_pid;

	base_new(&b);
	pid_t_id = btf__add_typedef(b.btf, "pid_t", b.int_id);
	const_pid = btf__add_const(b.btf, pid_t_id);
	add_trace_typedef(&b, const_pid, false);
	assert_int_equal(bpf_loader_mark_victim_shape(b.btf), BPF_MARK_VICTIM_PID);
	btf__free(b.btf);

	base_new(&b);
	add_trace_typedef(&b, btf__add_ptr(b.btf, btf__add_volatile(b.btf, b.task)), true);
	assert_int_equal(bpf_loader_mark_victim_shape(b.btf), BPF_MARK_VICTIM_TASK);
	btf__free(b.btf);
}

/* Anything else is refused (the loader then skips mark_victim rather than misread it). */
static void test_unknown_shapes(void **state)
{
	struct base b;

	assert_int_equal(bpf_loader_mark_victim_shape(NULL), BPF_MARK_VICTIM_UNKNOWN);

	base_new(&b);		/* no btf_trace_mark_victim at all */
	assert_int_equal(bpf_loader_mark_victim_shape(b.btf), BPF_MARK_VICTIM_UNKNOWN);
	btf__free(b.btf);

	base_new(&b);		/* a pointer, but to another struct */
	add_trace_typedef(&b, btf__add_ptr(b.btf, b.mm), false);
	assert_int_equal(bpf_loader_mark_victim_shape(b.btf), BPF_MARK_VICTIM_UNKNOWN);
	btf__free(b.btf);

	base_new(&b);		/* an 8-byte integer is no pid */
	add_trace_typedef(&b, b.long_id, false);
	assert_int_equal(bpf_loader_mark_victim_shape(b.btf), BPF_MARK_VICTIM_UNKNOWN);
	btf__free(b.btf);

	base_new(&b);		/* only the __data argument */
	add_trace_typedef(&b, -1, false);
	assert_int_equal(bpf_loader_mark_victim_shape(b.btf), BPF_MARK_VICTIM_UNKNOWN);
	btf__free(b.btf);

	base_new(&b);		/* the typedef names an int, not a function pointer */
	assert_true(btf__add_typedef(b.btf, "btf_trace_mark_victim", b.int_id) > 0);
	assert_int_equal(bpf_loader_mark_victim_shape(b.btf), BPF_MARK_VICTIM_UNKNOWN);
	btf__free(b.btf);
}

/* The running kernel: pid on 6.2 .. 6.8 (no distribution backport known), else the task. */
static void test_running_kernel(void **state)
{
	struct utsname uts;
	struct btf *btf;
	int major = 0, minor = 0;
	enum bpf_loader_mark_victim_shape expect;

	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		print_message("# skip: this kernel has no BTF (/sys/kernel/btf/vmlinux)\n");
		skip();
	}
	btf = btf__load_vmlinux_btf();
	assert_non_null(btf);
	assert_int_equal(uname(&uts), 0);
	assert_int_equal(sscanf(uts.release, "%d.%d", &major, &minor), 2);
	expect = major == 6 && minor >= 2 && minor <= 8 ? BPF_MARK_VICTIM_PID : BPF_MARK_VICTIM_TASK;
	print_message("# kernel %s: mark_victim passes %s\n", uts.release,
		      bpf_loader_mark_victim_shape_name(bpf_loader_mark_victim_shape(btf)));
	assert_int_equal(bpf_loader_mark_victim_shape(btf), expect);
	btf__free(btf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_task_shape),
		cmocka_unit_test(test_pid_shape),
		cmocka_unit_test(test_shapes_through_typedefs),
		cmocka_unit_test(test_unknown_shapes),
		cmocka_unit_test(test_running_kernel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
