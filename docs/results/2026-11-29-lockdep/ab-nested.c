#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define N 64
static pthread_mutex_t m[N]; static long cnt[N]; static long iters;
static void *run(void *arg) { unsigned s = (unsigned)(long)arg * 2654435761u + 1;
  for (long i = 0; i < iters; i++) { int d = 2 + (s = s*1103515245u+12345u) % 3; int idx[4]; int base = (s >> 8) % (N - 16);
    for (int k = 0; k < d; k++) { base += 1 + ((s >> (12 + 3*k)) & 3); idx[k] = base; }
    for (int k = 0; k < d; k++) { pthread_mutex_lock(&m[idx[k]]); cnt[idx[k]]++; }
    for (int k = d-1; k >= 0; k--) pthread_mutex_unlock(&m[idx[k]]); }
  return 0; }
int main(int argc, char **argv) { iters = argc > 1 ? atol(argv[1]) : 200000; for (int i = 0; i < N; i++) pthread_mutex_init(&m[i], 0);
  struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a); pthread_t t[8]; for (long i = 0; i < 8; i++) pthread_create(&t[i], 0, run, (void*)i); for (int i = 0; i < 8; i++) pthread_join(t[i], 0);
  clock_gettime(CLOCK_MONOTONIC, &b); printf("%.3f s\n", (b.tv_sec-a.tv_sec)+(b.tv_nsec-a.tv_nsec)/1e9); return 0; }
