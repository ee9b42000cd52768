/* SPDX-License-Identifier: GPL-2.0 */
/* A valid BPF object with no sched_ext_ops: the loader must refuse it before loading. */
// vmlinux.h first: libbpf's headers use its types.
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>

char _license[] SEC("license") = "GPL";

SEC("socket")
int accept_all(void* ctx) {
  return 0;
}
