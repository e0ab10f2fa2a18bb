//! Spinlocks: test-and-set, ticket and the queued spinlock family (native, PV, unfair).
