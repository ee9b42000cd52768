/* A yielder and a spinner pinned to CPU 0 for 3 s: how long one sched_yield() takes to come back.
 * The measurement behind schedulers/README.md's table, not a schedlab workload. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(void) {
  cpu_set_t cpu0;
  CPU_ZERO(&cpu0);
  CPU_SET(0, &cpu0);
  sched_setaffinity(0, sizeof(cpu0), &cpu0); /* the child inherits it */
  pid_t spinner = fork();
  if (spinner == 0)
    for (;;) {
    }
  long yields = 0;
  const double start = now();
  while (now() - start < 3) {
    sched_yield();
    yields++;
  }
  kill(spinner, SIGKILL);
  printf("yields=%ld ns_per_yield=%.0f\n", yields, 3e9 / (double)yields);
  return 0;
}
