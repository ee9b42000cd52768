/* SPDX-License-Identifier: GPL-2.0 */
/*
 * broken: deliberately loses every task, so that the tests and the loader exercise the kernel's
 * safety net. ops.enqueue takes a task and puts it nowhere, ops.dispatch supplies nothing, and the
 * sched_ext watchdog ejects the scheduler once a runnable task has waited timeout_ms
 * ("runnable task stall"): the system falls back to the fair class and the loader reports why.
 */
#include "scx_common.bpf.h"

char _license[] SEC("license") = "GPL";

s32 SCHEDLAB_OP(broken_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	/*
	 * Without ops.select_cpu the kernel's default would place a waking task directly on an idle
	 * CPU, bypassing ops.enqueue. Keep the CPU and dispatch nothing, so that every task is
	 * lost.
	 */
	return prev_cpu;
}

void SCHEDLAB_OP(broken_enqueue, struct task_struct *p, u64 enq_flags)
{
	/* The bug: no scx_bpf_dispatch(). The task stays runnable and never runs. */
}

void SCHEDLAB_OP(broken_dispatch, s32 cpu, struct task_struct *prev)
{
	/* Nothing to hand out either. */
}

void SCHEDLAB_OP(broken_exit, struct scx_exit_info *ei)
{
	schedlab_record_exit(ei);
}

SCHEDLAB_OPS_DEFINE(broken_ops, .select_cpu = (void *)broken_select_cpu,
		    .enqueue = (void *)broken_enqueue, .dispatch = (void *)broken_dispatch,
		    .exit = (void *)broken_exit,
		    .timeout_ms = 3000, /* the watchdog's limit; the default is 30 s */
		    .name = "broken");
