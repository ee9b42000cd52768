/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The exit info a schedlab scheduler records in ops.exit, as both sides see it: the BPF programs
 * (schedulers/bpf, built against vmlinux.h) and the loader (schedulers/loader, C++). Fixed-width
 * members only, so the layout is the same for -target bpf and x86-64.
 */
#ifndef SCHEDLAB_EXIT_INFO_H
#define SCHEDLAB_EXIT_INFO_H

#ifdef __bpf__
typedef s32 schedlab_s32;
typedef s64 schedlab_s64;
#else
#include <stdint.h>
typedef int32_t schedlab_s32;
typedef int64_t schedlab_s64;
#endif

enum {
  SCHEDLAB_EXIT_REASON_LEN = 128, /* the kernel's reason strings are short constants */
  SCHEDLAB_EXIT_MSG_LEN = 1024,   /* SCX_EXIT_MSG_LEN in kernel/sched/ext.c */
};

struct schedlab_exit_info {
  schedlab_s32 kind; /* enum scx_exit_kind; 0 while the scheduler runs */
  schedlab_s32 pad;
  schedlab_s64 exit_code; /* scx_bpf_exit()'s code, or a SCX_ECODE_* from the kernel */
  char reason[SCHEDLAB_EXIT_REASON_LEN];
  char msg[SCHEDLAB_EXIT_MSG_LEN];
};

#endif /* SCHEDLAB_EXIT_INFO_H */
