//! The read budget: what every response being read at once, from every server and over every
//! transport (a stdio line, an HTTP JSON body, an SSE event), may hold together.
//!
//! Each response being read holds a [`Lease`] that grows as its bytes arrive; a complete
//! message keeps its lease until the last copy of its bytes is dropped (the reply parsed and
//! handed over: [`leased`] ties the lease to the `Bytes`). A response whose next bytes would
//! take the total over the budget while another response holds some fails at once (its call
//! gets an error naming the server and the budget); one response alone may always grow to its
//! server's `maxMessageBytes`, so a single big reply never fails for the budget. The bound
//! that holds: raw bytes in flight <= max(budget, the largest `maxMessageBytes`) plus one read
//! chunk per response.

use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;

/// The default budget: 512 MiB, two messages of the default maximum size.
pub const DEFAULT_READ_BUDGET: usize = 512 * 1024 * 1024;

/// A budget and what is held of it.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: AtomicUsize,
    held: AtomicUsize,
}

impl Budget {
    const fn new(limit: usize) -> Self {
        Self {
            limit: AtomicUsize::new(limit),
            held: AtomicUsize::new(0),
        }
    }
}

/// The process's budget.
static GLOBAL: Budget = Budget::new(DEFAULT_READ_BUDGET);

/// Sets the process's read budget in bytes (at least 1 MiB); the session sets it once from
/// `HARNESS9_READ_BUDGET_MB`.
pub fn set_read_budget(bytes: usize) {
    GLOBAL
        .limit
        .store(bytes.max(1024 * 1024), Ordering::Relaxed);
}

/// The process's read budget in bytes.
pub fn read_budget() -> usize {
    GLOBAL.limit.load(Ordering::Relaxed)
}

/// The error a response over the budget gets.
pub(crate) fn over_budget(server: &str) -> String {
    format!(
        "the reply of server \"{server}\" was dropped: the replies being read at once went over \
         the read budget of {} MiB; retry with fewer calls at once, or raise \
         HARNESS9_READ_BUDGET_MB",
        read_budget() / (1024 * 1024)
    )
}

/// One response's share of the budget; given back when dropped.
#[derive(Debug)]
pub(crate) struct Lease {
    budget: &'static Budget,
    held: usize,
}

impl Lease {
    /// A lease of the process's budget holding nothing.
    pub(crate) fn new() -> Self {
        Self::of(&GLOBAL)
    }

    fn of(budget: &'static Budget) -> Self {
        Self { budget, held: 0 }
    }

    /// Makes this response hold `total` bytes. Refused (holding what it held) when that takes
    /// every response's bytes over the budget and another response holds some.
    pub(crate) fn hold(&mut self, total: usize) -> Result<(), ()> {
        let held = &self.budget.held;
        if total <= self.held {
            held.fetch_sub(self.held - total, Ordering::Relaxed);
            self.held = total;
            return Ok(());
        }
        let more = total - self.held;
        let before = held.fetch_add(more, Ordering::Relaxed);
        let others = before.saturating_sub(self.held);
        if before + more > self.budget.limit.load(Ordering::Relaxed) && others > 0 {
            held.fetch_sub(more, Ordering::Relaxed);
            return Err(());
        }
        self.held = total;
        Ok(())
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.budget.held.fetch_sub(self.held, Ordering::Relaxed);
    }
}

/// `bytes` holding `lease` until their last copy is dropped.
pub(crate) fn leased(bytes: Bytes, mut lease: Lease) -> Bytes {
    // Grown without asking (they are here already), never shrunk: what the lease holds may be
    // the buffer's capacity, which the bytes keep.
    let more = bytes.len().saturating_sub(lease.held);
    lease.budget.held.fetch_add(more, Ordering::Relaxed);
    lease.held += more;
    Bytes::from_owner(Leased {
        bytes,
        _lease: lease,
    })
}

struct Leased {
    bytes: Bytes,
    _lease: Lease,
}

impl AsRef<[u8]> for Leased {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_share_the_budget_and_one_alone_may_pass_it() {
        let mb = 1024 * 1024;
        let budget: &'static Budget = Box::leak(Box::new(Budget::new(2 * mb)));
        let held = || budget.held.load(Ordering::Relaxed);
        let mut a = Lease::of(budget);
        let mut b = Lease::of(budget);
        assert!(a.hold(mb + mb / 2).is_ok());
        // b would take the total over 2 MiB while a holds some: refused, holding nothing.
        assert!(b.hold(mb).is_err());
        assert_eq!(held(), mb + mb / 2);
        // a alone may grow past the budget.
        drop(b);
        assert!(a.hold(3 * mb).is_ok());
        // Handed over as bytes: held until the last copy goes.
        let bytes = leased(Bytes::from(vec![0u8; 3 * mb]), a);
        let copy = bytes.clone();
        drop(bytes);
        assert_eq!(held(), 3 * mb);
        drop(copy);
        assert_eq!(held(), 0);
    }
}
