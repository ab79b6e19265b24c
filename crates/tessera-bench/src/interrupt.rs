//! Ctrl-C: the first one asks the run to stop and write its partial report; a second one ends
//! the process at once (exit status 130).
//!
//! Long-running loops poll [`flag`]; nothing blocks on the signal itself, and every HTTP call has
//! a timeout, so a stop request is honoured within one request's time at most.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// The process-wide stop flag, with the SIGINT/SIGTERM handlers installed on first use.
pub fn flag() -> Arc<AtomicBool> {
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // Order matters: the conditional shutdown fires only when the flag is already set.
            let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, flag.clone());
            let _ = signal_hook::flag::register(sig, flag.clone());
        }
        flag
    })
    .clone()
}

#[cfg(test)]
mod tests {
    #[test]
    fn flag_starts_clear() {
        assert!(!super::flag().load(std::sync::atomic::Ordering::Relaxed));
    }
}
