//! Running many validator calls at once: each is a separate process, so the cores stay busy.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `items.iter().map(f)` on every available core, results in the items' order.
pub fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(items.len().max(1));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    results.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().map(|r| r.expect("every item ran")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn keeps_the_order() {
        let items: Vec<u32> = (0..100).collect();
        assert_eq!(super::par_map(&items, |x| x * 2), items.iter().map(|x| x * 2).collect::<Vec<_>>());
        assert!(super::par_map(&[] as &[u32], |x| *x).is_empty());
    }
}
