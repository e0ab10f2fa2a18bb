//! klock: the Linux kernel's lock designs in user space.
#![warn(missing_docs)]
