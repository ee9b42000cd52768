// schedlab-unit-work: the compiler wrapper behind kernbench.unit_work_ms, an injected slowdown of known
// size (issue #19). `schedlab-unit-work LOOPS COMPILER ARGS...` does LOOPS rounds of a dependent
// multiply-add chain, a fixed amount of CPU work, then execs the compiler: every compile unit of the
// build costs that much more, whatever the scheduler does with it. `schedlab-unit-work --calibrate`
// prints the CPU nanoseconds one round takes here (the fastest of several timed runs), so that the workload
// turns milliseconds into rounds with the very code that runs them.
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t chain(uint64_t rounds, uint64_t x) {
  for (uint64_t i = 0; i < rounds; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    __asm__ volatile("" : "+r"(x));  // neither folded nor vectorised
  }
  return x;
}

static double cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);  // CPU time: a preempted run does not count as slow
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "--calibrate") == 0) {
    const uint64_t rounds = 20000000;
    double best = 0;
    uint64_t sink = 1;
    for (int i = 0; i < 7; ++i) {
      const double start = cpu_ns();
      sink = chain(rounds, sink);
      const double ns = (cpu_ns() - start) / (double)rounds;
      if (i == 0 || ns < best) best = ns;
    }
    printf("%.6f %" PRIu64 "\n", best, sink & 1);
    return 0;
  }
  if (argc < 3) {
    fprintf(stderr, "usage: schedlab-unit-work LOOPS COMPILER [ARGS...] | --calibrate\n");
    return 2;
  }
  char* end = NULL;
  errno = 0;
  const unsigned long long rounds = strtoull(argv[1], &end, 10);
  if (errno != 0 || end == argv[1] || *end != '\0') {
    fprintf(stderr, "schedlab-unit-work: '%s' is not a number of rounds\n", argv[1]);
    return 2;
  }
  volatile uint64_t keep = chain(rounds, (uint64_t)getpid());
  (void)keep;
  execvp(argv[2], argv + 2);
  fprintf(stderr, "schedlab-unit-work: cannot run %s: %s\n", argv[2], strerror(errno));
  return 127;
}
