/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fifo: one global first-in first-out queue and no notion of fairness. Every runnable task goes to
 * the end of SCX_DSQ_GLOBAL with the default 20 ms slice (SCX_SLICE_DFL); a CPU that needs work
 * takes the head. A task that yields goes to the back and waits for everything ahead of it to run
 * its whole slice: a yielder queued behind a spinner waits 20 ms per sched_yield(), where EEVDF
 * lets it back within about a millisecond. That is the behaviour the suite's yield workloads probe.
 */
#include "scx_common.bpf.h"

char _license[] SEC("license") = "GPL";

void SCHEDLAB_OP(fifo_enqueue, struct task_struct *p, u64 enq_flags)
{
	/* No ops.dispatch: the kernel itself moves tasks from SCX_DSQ_GLOBAL to idle CPUs. */
	scx_bpf_dispatch(p, SCX_DSQ_GLOBAL, SCX_SLICE_DFL, enq_flags);
}

void SCHEDLAB_OP(fifo_exit, struct scx_exit_info *ei)
{
	schedlab_record_exit(ei);
}

SCHEDLAB_OPS_DEFINE(fifo_ops, .enqueue = (void *)fifo_enqueue, .exit = (void *)fifo_exit,
		    .name = "fifo");
