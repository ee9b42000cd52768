/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vtime: weighted fair queueing by virtual time, the smallest scheduler that is fair. Each task's
 * p->scx.dsq_vtime grows by the time it ran divided by its weight (nice 0 = 100), and the shared
 * queue hands out the task with the smallest vtime first. The suite uses it as the fair counterpart
 * to fifo: same plumbing, one idea changed.
 */
#include "scx_common.bpf.h"

char _license[] SEC("license") = "GPL";

/* Built-in DSQs cannot be ordered by vtime, so the scheduler creates its own. */
#define SHARED_DSQ 0

/*
 * The vtime of the task most recently started: the "now" of virtual time. Updated from every CPU
 * without a lock; a lost update only delays the clock by one task, which the next start repairs.
 */
static u64 vtime_now;

static __always_inline bool vtime_before(u64 a, u64 b)
{
	return (s64)(a - b) < 0; /* wrap-safe */
}

void SCHEDLAB_OP(vtime_enqueue, struct task_struct *p, u64 enq_flags)
{
	u64 vtime = p->scx.dsq_vtime;

	/*
	 * A task that slept kept its old, small vtime: left alone it would run ahead of everyone
	 * for as long as it slept. Let it bank at most one slice of credit.
	 */
	if (vtime_before(vtime, vtime_now - SCX_SLICE_DFL))
		vtime = vtime_now - SCX_SLICE_DFL;

	scx_bpf_dispatch_vtime(p, SHARED_DSQ, SCX_SLICE_DFL, vtime, enq_flags);
}

void SCHEDLAB_OP(vtime_dispatch, s32 cpu, struct task_struct *prev)
{
	/* Moves the smallest-vtime task to this CPU's local queue. */
	scx_bpf_consume(SHARED_DSQ);
}

void SCHEDLAB_OP(vtime_running, struct task_struct *p)
{
	if (vtime_before(vtime_now, p->scx.dsq_vtime))
		vtime_now = p->scx.dsq_vtime;
}

void SCHEDLAB_OP(vtime_stopping, struct task_struct *p, bool runnable)
{
	/*
	 * The kernel counts p->scx.slice down while the task runs, so what is gone of SCX_SLICE_DFL
	 * is what it used. A yield sets the slice to 0: a yielder is charged a full slice, which is
	 * this scheduler's answer to sched_yield() (tasks that yield give way to everyone else).
	 */
	p->scx.dsq_vtime += (SCX_SLICE_DFL - p->scx.slice) * 100 / p->scx.weight;
}

void SCHEDLAB_OP(vtime_enable, struct task_struct *p)
{
	/* A task new to this scheduler starts at now, neither ahead nor behind. */
	p->scx.dsq_vtime = vtime_now;
}

s32 SCHEDLAB_OP_SLEEPABLE(vtime_init)
{
	return scx_bpf_create_dsq(SHARED_DSQ, -1 /* any NUMA node */);
}

void SCHEDLAB_OP(vtime_exit, struct scx_exit_info *ei)
{
	schedlab_record_exit(ei);
}

SCHEDLAB_OPS_DEFINE(vtime_ops, .enqueue = (void *)vtime_enqueue, .dispatch = (void *)vtime_dispatch,
		    .running = (void *)vtime_running, .stopping = (void *)vtime_stopping,
		    .enable = (void *)vtime_enable, .init = (void *)vtime_init,
		    .exit = (void *)vtime_exit, .name = "vtime");
