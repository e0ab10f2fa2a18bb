// Independent lock-nesting recorder: per-thread held stack, global set of
// (held, taken, modes, tried) pairs by address; dumped at exit/_exit.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <execinfo.h>
static _Atomic int bt_done;

#define NSET (1u<<22)
static _Atomic uint64_t key[NSET];
static uint64_t pa[NSET], pb[NSET]; static uint32_t pf[NSET];
static _Atomic uint64_t lkey[NSET]; static _Atomic uint64_t akey[NSET]; static _Atomic uint64_t n_adj;
static _Atomic uint64_t n_acq, n_nested, n_pairs, n_locks, max_depth, n_overflow;
struct ent { void *l; int mode; };   // mode: 0 mutex, 1 read, 2 write, 3 spin
static __thread struct ent held[4096]; static __thread int nheld;

static uint64_t h64(uint64_t x){x^=x>>33;x*=0xff51afd7ed558ccdULL;x^=x>>33;x*=0xc4ceb9fe1a85ec53ULL;x^=x>>33;return x|1;}
static void add_lock(void *l){uint64_t k=h64((uint64_t)l);for(uint64_t i=k;;i++){uint64_t z=0,v=atomic_load(&lkey[i&(NSET-1)]);if(v==k)return;if(v==0&&atomic_compare_exchange_strong(&lkey[i&(NSET-1)],&z,k)){n_locks++;return;}if(atomic_load(&lkey[i&(NSET-1)])==k)return;}}
static void add_adj(void*a,int ma,void*b,int mb){uint64_t k=h64(h64((uint64_t)a)^((uint64_t)b*31)^(ma<<4|mb<<1));for(uint64_t i=k;;i++){uint64_t s=i&(NSET-1),z=0,v=atomic_load(&akey[s]);if(v==k)return;if(v==0&&atomic_compare_exchange_strong(&akey[s],&z,k)){n_adj++;return;}if(atomic_load(&akey[s])==k)return;}}
static void add_pair(void *a,int ma,void *b,int mb,int tried){
  uint64_t k=h64(h64((uint64_t)a)^((uint64_t)b*31)^(ma<<4|mb<<1|tried));
  for(uint64_t i=k;;i++){uint64_t s=i&(NSET-1),z=0,v=atomic_load(&key[s]);if(v==k)return;
    if(v==0&&atomic_compare_exchange_strong(&key[s],&z,k)){pa[s]=(uint64_t)a;pb[s]=(uint64_t)b;pf[s]=ma<<4|mb<<1|tried;n_pairs++;return;}
    if(atomic_load(&key[s])==k)return;}
}
static void taken(void *l,int mode,int tried){
  n_acq++; add_lock(l);
  int rec=0; for(int i=0;i<nheld;i++) if(held[i].l==l) rec=1;
  if(nheld>0 && !rec){ n_nested++; if(!tried) add_adj(held[nheld-1].l,held[nheld-1].mode,l,mode); for(int i=0;i<nheld;i++) add_pair(held[i].l,held[i].mode,l,mode,tried); }
  if(nheld==49 && !atomic_exchange(&bt_done,1)){void*f[40];int n=backtrace(f,40);backtrace_symbols_fd(f,n,2);char b[2048];int o=0;for(int i=0;i<nheld;i++)o+=snprintf(b+o,sizeof b-o,"%p:%d ",held[i].l,held[i].mode);b[o++]=10;write(2,b,o);}
  if(nheld<4096){held[nheld].l=l;held[nheld].mode=mode;nheld++; if((uint64_t)nheld>max_depth)max_depth=nheld;} else n_overflow++;
}
static void released(void *l){ for(int i=nheld-1;i>=0;i--) if(held[i].l==l){ memmove(&held[i],&held[i+1],(nheld-i-1)*sizeof held[0]); nheld--; return; } }

static _Atomic int dumped;
static void dump(void){
  if(atomic_exchange(&dumped,1))return;
  const char *d=getenv("SHIM_DIR"); if(!d)return;
  char p[512]; snprintf(p,sizeof p,"%s/pairs.%d",d,getpid());
  FILE *f=fopen(p,"w"); if(!f)return;
  char exe[256]={0}; readlink("/proc/self/exe",exe,255);
  fprintf(f,"# %s acq=%lu nested=%lu locks=%lu pairs=%lu maxdepth=%lu overflow=%lu adjacent=%lu\n",exe,n_acq,n_nested,n_locks,n_pairs,max_depth,n_overflow,n_adj);
  for(uint64_t s=0;s<NSET;s++) if(key[s]) fprintf(f,"%lx %lx %u\n",pa[s],pb[s],pf[s]);
  fclose(f);
}
__attribute__((destructor)) static void fin(void){dump();}
#define REAL(name) static typeof(name) *r_##name; if(!r_##name) r_##name=dlsym(RTLD_NEXT,#name)
void _exit(int c){ REAL(_exit); dump(); r__exit(c); __builtin_unreachable(); }
int pthread_mutex_lock(pthread_mutex_t *m){REAL(pthread_mutex_lock);int r=r_pthread_mutex_lock(m);if(!r)taken(m,0,0);return r;}
int pthread_mutex_timedlock(pthread_mutex_t *m,const struct timespec *t){REAL(pthread_mutex_timedlock);int r=r_pthread_mutex_timedlock(m,t);if(!r)taken(m,0,0);return r;}
int pthread_mutex_trylock(pthread_mutex_t *m){REAL(pthread_mutex_trylock);int r=r_pthread_mutex_trylock(m);if(!r)taken(m,0,1);return r;}
int pthread_mutex_unlock(pthread_mutex_t *m){REAL(pthread_mutex_unlock);released(m);return r_pthread_mutex_unlock(m);}
int pthread_rwlock_rdlock(pthread_rwlock_t *m){REAL(pthread_rwlock_rdlock);int r=r_pthread_rwlock_rdlock(m);if(!r)taken(m,1,0);return r;}
int pthread_rwlock_tryrdlock(pthread_rwlock_t *m){REAL(pthread_rwlock_tryrdlock);int r=r_pthread_rwlock_tryrdlock(m);if(!r)taken(m,1,1);return r;}
int pthread_rwlock_wrlock(pthread_rwlock_t *m){REAL(pthread_rwlock_wrlock);int r=r_pthread_rwlock_wrlock(m);if(!r)taken(m,2,0);return r;}
int pthread_rwlock_trywrlock(pthread_rwlock_t *m){REAL(pthread_rwlock_trywrlock);int r=r_pthread_rwlock_trywrlock(m);if(!r)taken(m,2,1);return r;}
int pthread_rwlock_unlock(pthread_rwlock_t *m){REAL(pthread_rwlock_unlock);released(m);return r_pthread_rwlock_unlock(m);}
int pthread_spin_lock(pthread_spinlock_t *m){REAL(pthread_spin_lock);int r=r_pthread_spin_lock(m);if(!r)taken((void*)m,3,0);return r;}
int pthread_spin_trylock(pthread_spinlock_t *m){REAL(pthread_spin_trylock);int r=r_pthread_spin_trylock(m);if(!r)taken((void*)m,3,1);return r;}
int pthread_spin_unlock(pthread_spinlock_t *m){REAL(pthread_spin_unlock);released((void*)m);return r_pthread_spin_unlock(m);}
int pthread_cond_wait(pthread_cond_t *c,pthread_mutex_t *m){REAL(pthread_cond_wait);released(m);int r=r_pthread_cond_wait(c,m);taken(m,0,0);return r;}
int pthread_cond_timedwait(pthread_cond_t *c,pthread_mutex_t *m,const struct timespec *t){REAL(pthread_cond_timedwait);released(m);int r=r_pthread_cond_timedwait(c,m,t);taken(m,0,0);return r;}
int pthread_cond_clockwait(pthread_cond_t *c,pthread_mutex_t *m,clockid_t k,const struct timespec *t){REAL(pthread_cond_clockwait);released(m);int r=r_pthread_cond_clockwait(c,m,k,t);taken(m,0,0);return r;}
