/* MUST REPORT (one report): two C11 mtx_t (mtx_plain) in both orders, in
 * C11 threads (thrd_create/thrd_join), one after the other. */
#include "ld.h"

#include <threads.h>

static mtx_t c11_a;
static mtx_t c11_b;

#define TOK(expr)                                                             \
    do {                                                                      \
        int r_ = (expr);                                                      \
        if (r_ != thrd_success)                                               \
            FAIL("%s returned %d, expected thrd_success", #expr, r_);         \
    } while (0)

__attribute__((noinline)) static int c11_a_then_b(void *arg) {
    (void)arg;
    TOK(mtx_lock(&c11_a));
    TOK(mtx_lock(&c11_b));
    TOK(mtx_unlock(&c11_b));
    TOK(mtx_unlock(&c11_a));
    return 0;
}

__attribute__((noinline)) static int c11_b_then_a(void *arg) {
    (void)arg;
    TOK(mtx_lock(&c11_b));
    TOK(mtx_lock(&c11_a));
    TOK(mtx_unlock(&c11_a));
    TOK(mtx_unlock(&c11_b));
    return 0;
}

static void run_c11(thrd_start_t fn) {
    thrd_t t;
    int res = -1;
    TOK(thrd_create(&t, fn, NULL));
    TOK(thrd_join(t, &res));
    CHECK(res == 0, "thread returned %d", res);
}

int main(void) {
    watchdog(30);
    TOK(mtx_init(&c11_a, mtx_plain));
    TOK(mtx_init(&c11_b, mtx_plain));
    ld_phase("mtx A then B");
    run_c11(c11_a_then_b);
    ld_phase("mtx B then A (closes the cycle)");
    run_c11(c11_b_then_a);
    ld_phase("done");
    mtx_destroy(&c11_a);
    mtx_destroy(&c11_b);
    pass("c11_cycle: both orders ran, one after the other");
    return 0;
}
