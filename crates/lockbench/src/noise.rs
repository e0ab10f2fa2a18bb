//! `--noise N`: CPU-hog threads running beside the workload, like a host stealing CPU
//! from its guest.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

/// Running noise threads; stopped and joined by [`Noise::stop`] or on drop.
pub struct Noise {
    stop: Arc<AtomicBool>,
    handles: Vec<JoinHandle<()>>,
}

impl Noise {
    /// Starts `n` threads that burn CPU (busy arithmetic) until stopped.
    ///
    /// ```
    /// let n = lockbench::noise::Noise::start(1);
    /// n.stop();
    /// ```
    pub fn start(n: usize) -> Noise {
        let stop = Arc::new(AtomicBool::new(false));
        let handles = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    // Relaxed: a plain flag; nothing is published with it.
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::black_box(crate::work::spin_work(1000));
                    }
                })
            })
            .collect();
        Noise { stop, handles }
    }
    /// Stops and joins the threads (as dropping does).
    pub fn stop(self) {}
}

impl Drop for Noise {
    fn drop(&mut self) {
        // Relaxed: pairs with nothing; the join below is the synchronisation.
        self.stop.store(true, Ordering::Relaxed);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}
