/* The peer of schedlab's yield workload: the same raw sched_yield() loop with nothing around
 * it, timed in-process as PEERS.md's yieldt.c does.
 *
 *   bare_yield YIELDS [THREADS [CPU [HOGS]]]
 *
 * THREADS threads each make YIELDS calls; CPU >= 0 pins every thread (and the hogs) to that CPU;
 * HOGS spinning processes compete on it. Prints one line of key=value pairs:
 *   ns_per_yield (sum of thread loop times / yields), elapsed_s, yields, voluntary, involuntary
 * (getrusage deltas of the yielding threads). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct thread_result {
  long long ns, yields;
  long voluntary, involuntary;
  long long start, end;
};

static long long g_yields;
static int g_cpu = -1;
static pthread_barrier_t g_barrier;

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void pin(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    perror("sched_setaffinity");
    exit(1);
  }
}

static void* yielder(void* arg) {
  struct thread_result* r = arg;
  struct rusage r0, r1;
  pin(g_cpu);
  pthread_barrier_wait(&g_barrier);
  getrusage(RUSAGE_THREAD, &r0);
  r->start = now_ns();
  for (long long i = 0; i < g_yields; i++) syscall(SYS_sched_yield);
  r->end = now_ns();
  getrusage(RUSAGE_THREAD, &r1);
  r->yields = g_yields;
  r->ns = r->end - r->start;
  r->voluntary = r1.ru_nvcsw - r0.ru_nvcsw;
  r->involuntary = r1.ru_nivcsw - r0.ru_nivcsw;
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bare_yield YIELDS [THREADS [CPU [HOGS]]]\n");
    return 2;
  }
  g_yields = atoll(argv[1]);
  int threads = argc > 2 ? atoi(argv[2]) : 1;
  g_cpu = argc > 3 ? atoi(argv[3]) : -1;
  int hogs = argc > 4 ? atoi(argv[4]) : 0;
  if (g_yields < 1 || threads < 1 || threads > 64 || hogs < 0 || hogs > 64) {
    fprintf(stderr, "bare_yield: bad arguments\n");
    return 2;
  }
  pid_t hog_pids[64];
  for (int h = 0; h < hogs; h++) {
    hog_pids[h] = fork();
    if (hog_pids[h] == 0) {
      pin(g_cpu);
      volatile unsigned long x = 0;
      for (;;) x++;
    }
  }
  if (hogs) usleep(20000); /* let the hogs start spinning */
  pthread_t tids[64];
  struct thread_result results[64] = {{0}};
  pthread_barrier_init(&g_barrier, NULL, (unsigned)threads);
  for (int t = 0; t < threads; t++) pthread_create(&tids[t], NULL, yielder, &results[t]);
  for (int t = 0; t < threads; t++) pthread_join(tids[t], NULL);
  for (int h = 0; h < hogs; h++) {
    kill(hog_pids[h], SIGKILL);
    waitpid(hog_pids[h], NULL, 0);
  }
  long long ns = 0, yields = 0, first = results[0].start, last = results[0].end;
  long vol = 0, invol = 0;
  for (int t = 0; t < threads; t++) {
    ns += results[t].ns;
    yields += results[t].yields;
    vol += results[t].voluntary;
    invol += results[t].involuntary;
    if (results[t].start < first) first = results[t].start;
    if (results[t].end > last) last = results[t].end;
  }
  printf("ns_per_yield=%.3f elapsed_s=%.6f yields=%lld voluntary=%ld involuntary=%ld\n",
         (double)ns / (double)yields, (double)(last - first) * 1e-9, yields, vol, invol);
  return 0;
}
