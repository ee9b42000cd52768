/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What schedlab's sched_ext schedulers share: the 6.12 kfuncs they call, the struct_ops macros and
 * the recording of the kernel's exit info for the loader (schedulers/loader).
 *
 * Written for the linux 6.12 interface: later kernels renamed scx_bpf_dispatch/_vtime/consume to
 * scx_bpf_dsq_insert/_vtime/scx_bpf_dsq_move_to_local (and kept the old names as deprecated aliases
 * for a while). The BTF of these kfuncs is checked by the verifier at load time, so a mismatch
 * shows up as a load failure, not as silent misbehaviour.
 */
#ifndef SCHEDLAB_SCX_COMMON_BPF_H
#define SCHEDLAB_SCX_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "exit_info.h"

/* kfuncs (kernel/sched/ext.c); only those our schedulers call. */
s32 scx_bpf_create_dsq(u64 dsq_id, s32 node) __ksym;
void scx_bpf_dispatch(struct task_struct *p, u64 dsq_id, u64 slice, u64 enq_flags) __ksym;
void scx_bpf_dispatch_vtime(struct task_struct *p, u64 dsq_id, u64 slice, u64 vtime,
			    u64 enq_flags) __ksym;
bool scx_bpf_consume(u64 dsq_id) __ksym;

/*
 * One callback of struct sched_ext_ops. BPF_PROG unpacks the u64 context array into typed
 * arguments; the section name tells libbpf it belongs to a struct_ops map.
 */
#define SCHEDLAB_OP(name, args...) SEC("struct_ops/" #name) BPF_PROG(name, ##args)
/* The same for the callbacks the kernel calls where sleeping is allowed (init, init_task, ...). */
#define SCHEDLAB_OP_SLEEPABLE(name, args...) SEC("struct_ops.s/" #name) BPF_PROG(name, ##args)

/*
 * The scheduler itself. ".struct_ops.link" (not ".struct_ops") makes libbpf attach it through a
 * BPF link, so the kernel detaches it when the loader's link fd closes, even if the loader is
 * killed.
 */
#define SCHEDLAB_OPS_DEFINE(var, ...)                                                              \
	SEC(".struct_ops.link") struct sched_ext_ops var = {__VA_ARGS__}

/*
 * Why the kernel ended the scheduler, for the loader to report. In a section of its own so that
 * libbpf makes it a map of its own, whose layout at offset 0 is struct schedlab_exit_info.
 */
struct schedlab_exit_info schedlab_exit SEC(".data.schedlab_exit");

/* Call from ops.exit. kind is written last, with a full barrier: nonzero means the rest is there.
 */
static __always_inline void schedlab_record_exit(struct scx_exit_info *ei)
{
	bpf_probe_read_kernel_str(schedlab_exit.reason, sizeof(schedlab_exit.reason), ei->reason);
	bpf_probe_read_kernel_str(schedlab_exit.msg, sizeof(schedlab_exit.msg), ei->msg);
	schedlab_exit.exit_code = ei->exit_code;
	__sync_val_compare_and_swap(&schedlab_exit.kind, schedlab_exit.kind, ei->kind);
}

#endif /* SCHEDLAB_SCX_COMMON_BPF_H */
