#include <stdio.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/membarrier.h>
#include <time.h>
#include <pthread.h>
static volatile int stop;
static void *spin(void *a){ while(!stop); return 0; }
static void *sleeper(void *a){ while(!stop) usleep(1000); return 0; }
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
int main(int argc,char**argv){
  printf("query %ld\n", syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0));
  printf("reg %ld\n", syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0));
  pthread_t t; pthread_create(&t,0,argc>1?spin:sleeper,0);
  usleep(10000);
  int n=20000; double a=now();
  for(int i=0;i<n;i++) syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  printf("%s: %.0f ns per membarrier\n", argc>1?"other thread spinning":"other thread sleeping", (now()-a)/n);
  stop=1; pthread_join(t,0); return 0; }
