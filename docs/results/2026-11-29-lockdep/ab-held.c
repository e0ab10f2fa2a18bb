#include <pthread.h>
#include <stdio.h>
#include <time.h>
static pthread_mutex_t h[3] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER}, x = PTHREAD_MUTEX_INITIALIZER;
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec*1e9+t.tv_nsec;}
int main(void){ for (int held = 0; held <= 3; held += (held==1?2:1)) { for (int i=0;i<held;i++) pthread_mutex_lock(&h[i]);
  double best=1e9; for (int r=0;r<7;r++){ double a=now(); for (int i=0;i<1000000;i++){ pthread_mutex_lock(&x); pthread_mutex_unlock(&x);} double d=(now()-a)/1e6; if(d<best)best=d; }
  printf("held=%d %.1f ns\n", held, best); for (int i=held-1;i>=0;i--) pthread_mutex_unlock(&h[i]); } return 0; }
