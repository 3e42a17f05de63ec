//! Per-client caps (`[session]`/`[workspace] max_per_client`) counted with the starts still
//! under way: a start reserves its slot under a lock before it starts a jail (which takes
//! long, and is done without the lock), and gives it back when it fails or once the new
//! session or workspace is in its map. Without the reservation, parallel starts from one
//! client each count the same open ones and all pass.

use crate::pipeline::session::Owner;
use std::sync::Mutex;

/// The starts under way, by owner.
#[derive(Default)]
pub struct Pending(Mutex<Vec<Owner>>);

/// A reserved slot; dropping it gives the slot back (after the insert, or on failure).
pub struct Slot<'a> {
    pending: &'a Pending,
    owner: Owner,
}

impl Pending {
    /// A slot for `owner` when its client's open ones (`open`, given whether an owner is
    /// that client, counts them under this lock) and starts under way are fewer than `max`;
    /// else their count.
    pub fn reserve(
        &self,
        owner: Owner,
        open: impl FnOnce(&dyn Fn(&Owner) -> bool) -> u64,
        max: u64,
    ) -> Result<Slot<'_>, u64> {
        let same = |o: &Owner| same_client(&owner, o);
        let mut list = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let held = open(&same) + list.iter().filter(|o| same(o)).count() as u64;
        if held >= max {
            return Err(held);
        }
        list.push(owner);
        Ok(Slot {
            pending: self,
            owner,
        })
    }
}

/// A uid on a socket is one client however many connections it opens; without a uid, the
/// connection is.
pub fn same_client(a: &Owner, b: &Owner) -> bool {
    match a.uid {
        Some(uid) => b.uid == Some(uid),
        None => b.connection == a.connection,
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut list = self.pending.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = list.iter().position(|o| *o == self.owner) {
            list.swap_remove(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_under_way_count_until_their_slot_is_dropped() {
        let p = Pending::default();
        let me = Owner {
            connection: 1,
            uid: Some(7),
        };
        let other_conn = Owner {
            connection: 2,
            ..me
        };
        let a = p.reserve(me, |_| 0, 2).unwrap();
        let b = p.reserve(other_conn, |_| 0, 2).unwrap();
        assert_eq!(
            p.reserve(me, |_| 0, 2).err(),
            Some(2),
            "one uid, one client"
        );
        drop(a);
        let c = p.reserve(me, |_| 1, 2);
        assert_eq!(c.err(), Some(2), "one open and one under way");
        drop(b);
        assert!(p.reserve(me, |_| 1, 2).is_ok());
    }
}
