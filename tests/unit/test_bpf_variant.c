// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Which mark_victim program the loader loads (bpf_loader_mark_victim_shape in
 * user/bpf_loader/probe.c): the kernel's tracepoint passes a struct task_struct * on Debian
 * 6.1 and 6.9+ (TP_PROTO(struct task_struct *task, uid_t uid)) but an int pid on 6.2 .. 6.8
 * (TP_PROTO(int pid), include/trace/events/oom.h). Each shape is built as the kernel's BTF
 * describes it (typedef btf_trace_mark_victim -> pointer -> func proto (void *__data, args)),
 * with libbpf's BTF writer, plus the shapes the chooser must refuse; and the running kernel's
 * own BTF, its expected shape read from the tracepoint's event record in that BTF.
 */
#include "testutil.h"

#include <string.h>

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

/*
 * The running kernel: the expected shape comes from the event record the same BTF describes
 * (struct trace_event_raw_mark_victim, TP_STRUCT__entry in include/trace/events/oom.h), not
 * from the typedef the chooser reads nor a kernel-version table. TP_PROTO(int pid) records
 * the pid alone; TP_PROTO(struct task_struct *task, uid_t uid) (6.9+, Debian's 6.1) records
 * what it reads from the task: comm, total_vm, the rss counters, uid, pgtables, oom_score_adj.
 */
static enum bpf_loader_mark_victim_shape shape_from_event_record(const struct btf *btf)
{
	const struct btf_member *member;
	const struct btf_type *t;
	bool pid = false, uid = false;
	int id;

	id = btf__find_by_name_kind(btf, "trace_event_raw_mark_victim", BTF_KIND_STRUCT);
	if (id < 0)
		return BPF_MARK_VICTIM_UNKNOWN;	/* no oom:mark_victim tracepoint */
	t = btf__type_by_id(btf, id);
	member = btf_members(t);
	for (int i = 0; i < btf_vlen(t); i++, member++) {
		const char *name = btf__name_by_offset(btf, member->name_off);

		pid |= name && !strcmp(name, "pid");
		uid |= name && !strcmp(name, "uid");
	}
	if (!pid)
		return BPF_MARK_VICTIM_UNKNOWN;
	return uid ? BPF_MARK_VICTIM_TASK : BPF_MARK_VICTIM_PID;
}

static void test_running_kernel(void **state)
{
	struct btf *btf;
	enum bpf_loader_mark_victim_shape expect;

	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		print_message("# skip: this kernel has no BTF (/sys/kernel/btf/vmlinux)\n");
		skip();
	}
	btf = btf__load_vmlinux_btf();
	assert_non_null(btf);
	expect = shape_from_event_record(btf);
	print_message("# mark_victim's event record says %s; the chooser says %s\n",
		      bpf_loader_mark_victim_shape_name(expect),
		      bpf_loader_mark_victim_shape_name(bpf_loader_mark_victim_shape(btf)));
	assert_int_equal(bpf_loader_mark_victim_shape(btf), expect);
	btf__free(btf);
}

/* The record-based expectation itself, on built records of both kinds. */
static void test_event_record_shapes(void **state)
{
	struct base b;
	int rec;

	base_new(&b);
	assert_int_equal(shape_from_event_record(b.btf), BPF_MARK_VICTIM_UNKNOWN);
	rec = btf__add_struct(b.btf, "trace_event_raw_mark_victim", 16);
	assert_true(rec > 0);
	assert_int_equal(btf__add_field(b.btf, "ent", b.long_id, 0, 0), 0);
	assert_int_equal(btf__add_field(b.btf, "pid", b.int_id, 64, 0), 0);
	assert_int_equal(shape_from_event_record(b.btf), BPF_MARK_VICTIM_PID);
	btf__free(b.btf);

	base_new(&b);
	rec = btf__add_struct(b.btf, "trace_event_raw_mark_victim", 24);
	assert_true(rec > 0);
	assert_int_equal(btf__add_field(b.btf, "ent", b.long_id, 0, 0), 0);
	assert_int_equal(btf__add_field(b.btf, "pid", b.int_id, 64, 0), 0);
	assert_int_equal(btf__add_field(b.btf, "uid", b.uint_id, 96, 0), 0);
	assert_int_equal(btf__add_field(b.btf, "total_vm", b.long_id, 128, 0), 0);
	assert_int_equal(shape_from_event_record(b.btf), BPF_MARK_VICTIM_TASK);
	btf__free(b.btf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_task_shape),
		cmocka_unit_test(test_pid_shape),
		cmocka_unit_test(test_shapes_through_typedefs),
		cmocka_unit_test(test_unknown_shapes),
		cmocka_unit_test(test_event_record_shapes),
		cmocka_unit_test(test_running_kernel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
