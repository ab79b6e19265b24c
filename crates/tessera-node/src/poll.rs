//! Waiting for something another thread makes true where nothing notifies it (the copies of a
//! shard becoming active, a newer cluster state reaching this node): look again every so often
//! until a deadline, without holding a thread.

use std::time::{Duration, Instant};

/// Whether `ready` became true before `deadline`, looking every `every`.
pub async fn until(deadline: Instant, every: Duration, mut ready: impl FnMut() -> bool) -> bool {
    loop {
        if ready() {
            return true;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        tokio::time::sleep(every.min(left)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<T>(future: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn true_at_once_or_once_it_becomes_true() {
        let deadline = Instant::now() + Duration::from_secs(5);
        assert!(run(until(deadline, Duration::from_millis(1), || true)));
        let mut looks = 0;
        assert!(run(until(deadline, Duration::from_millis(1), || {
            looks += 1;
            looks == 3
        })));
        assert_eq!(looks, 3);
    }

    #[test]
    fn false_at_the_deadline() {
        let deadline = Instant::now() + Duration::from_millis(30);
        assert!(!run(until(deadline, Duration::from_millis(5), || false)));
        assert!(Instant::now() >= deadline);
        // a deadline already gone still looks once
        let mut looked = false;
        assert!(run(until(Instant::now(), Duration::from_secs(1), || {
            looked = true;
            true
        })));
        assert!(looked);
    }
}
