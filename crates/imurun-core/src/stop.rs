//! [`StopFlag`]: the Stop button, the kill switch, or a parent agent stopping — a flag to
//! check between steps, and a future to await beside work that should end when it flips.
//! Only `std`: the core names no async runtime.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Waker};

/// A shared stop signal. Cloning shares the flag; stopping is for good.
#[derive(Clone, Default)]
pub struct StopFlag(Arc<Shared>);

#[derive(Default)]
struct Shared {
    stopped: AtomicBool,
    /// The wakers of the [`Stopped`] futures waiting now, by their id. A future removes its
    /// own entry when dropped, so the map holds at most one entry per live future.
    waiting: Mutex<HashMap<u64, Waker>>,
    next_id: AtomicU64,
    /// The flags made by [`StopFlag::child`] that are still alive: stopped with this one.
    children: Mutex<Vec<Weak<Shared>>>,
}

impl StopFlag {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stops, and wakes every future waiting in [`StopFlag::stopped`]; every child flag
    /// stops too.
    pub fn stop(&self) {
        self.0.stopped.store(true, Ordering::SeqCst);
        let wakers: Vec<Waker> = self.0.waiting().drain().map(|(_, waker)| waker).collect();
        for waker in wakers {
            waker.wake();
        }
        let children: Vec<Weak<Shared>> = std::mem::take(&mut *self.0.children());
        for child in children.iter().filter_map(Weak::upgrade) {
            StopFlag(child).stop();
        }
    }

    /// A flag that stops when this one does, and may also be stopped on its own without
    /// stopping this one: one generation's stop inside a turn's.
    pub fn child(&self) -> StopFlag {
        let child = StopFlag::new();
        let mut children = self.0.children();
        // Checked under the lock: `stop` sets the flag before it takes the children, so
        // either this sees the flag or `stop` sees the child.
        if self.is_stopped() {
            drop(children);
            child.stop();
            return child;
        }
        children.retain(|weak| weak.strong_count() > 0);
        children.push(Arc::downgrade(&child.0));
        child
    }

    pub fn is_stopped(&self) -> bool {
        self.0.stopped.load(Ordering::SeqCst)
    }

    /// A future that completes once the flag is stopped (at once if it already is). Await it
    /// in a `select!` beside the work it should end.
    pub fn stopped(&self) -> Stopped {
        Stopped {
            flag: self.clone(),
            id: self.0.next_id.fetch_add(1, Ordering::Relaxed),
        }
    }
}

/// Two flags are equal when they are the same flag (clones of one another).
impl PartialEq for StopFlag {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for StopFlag {}

impl fmt::Debug for StopFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("StopFlag").field(&self.is_stopped()).finish()
    }
}

impl Shared {
    fn waiting(&self) -> MutexGuard<'_, HashMap<u64, Waker>> {
        // Every critical section is one map operation, so a poisoned lock holds a whole map.
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn children(&self) -> MutexGuard<'_, Vec<Weak<Shared>>> {
        self.children.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Completes when its [`StopFlag`] is stopped.
#[must_use = "a future does nothing unless awaited"]
pub struct Stopped {
    flag: StopFlag,
    id: u64,
}

impl Future for Stopped {
    type Output = ();

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<()> {
        let shared = &self.flag.0;
        if shared.stopped.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        let mut waiting = shared.waiting();
        // Checked again under the lock: `stop` sets the flag before it takes the lock, so
        // either this sees the flag or `stop` sees this waker.
        if shared.stopped.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        waiting.insert(self.id, context.waker().clone());
        Poll::Pending
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        self.flag.0.waiting().remove(&self.id);
    }
}

impl fmt::Debug for Stopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stopped")
            .field("stopped", &self.flag.is_stopped())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_child_stops_with_its_parent_and_alone_without_it() {
        let parent = StopFlag::new();
        let alone = parent.child();
        alone.stop();
        assert!(alone.is_stopped());
        assert!(!parent.is_stopped(), "a child never stops its parent");
        let child = parent.child();
        let grandchild = child.child();
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&count));
        let mut context = Context::from_waker(&waker);
        let mut stopped = Box::pin(grandchild.stopped());
        assert_eq!(stopped.as_mut().poll(&mut context), Poll::Pending);
        parent.stop();
        assert!(child.is_stopped() && grandchild.is_stopped());
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(stopped.as_mut().poll(&mut context), Poll::Ready(()));
        assert!(
            parent.child().is_stopped(),
            "a child of a stopped flag starts stopped"
        );
    }

    #[test]
    fn dropped_children_are_not_kept() {
        let parent = StopFlag::new();
        for _ in 0..1000 {
            drop(parent.child());
        }
        let _kept = parent.child();
        assert_eq!(parent.0.children().len(), 1);
    }

    #[test]
    fn a_waiting_future_is_woken_once_and_then_ready() {
        let flag = StopFlag::new();
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&count));
        let mut context = Context::from_waker(&waker);
        let mut stopped = Box::pin(flag.stopped());
        assert_eq!(stopped.as_mut().poll(&mut context), Poll::Pending);
        assert_eq!(stopped.as_mut().poll(&mut context), Poll::Pending);
        flag.clone().stop();
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(stopped.as_mut().poll(&mut context), Poll::Ready(()));
        // Already stopped: ready at the first poll.
        assert_eq!(
            Box::pin(flag.stopped()).as_mut().poll(&mut context),
            Poll::Ready(())
        );
    }

    #[test]
    fn dropped_futures_leave_nothing_behind() {
        let flag = StopFlag::new();
        let waker = Waker::from(Arc::new(Count(AtomicUsize::new(0))));
        let mut context = Context::from_waker(&waker);
        for _ in 0..1000 {
            let mut stopped = Box::pin(flag.stopped());
            assert_eq!(stopped.as_mut().poll(&mut context), Poll::Pending);
        }
        assert!(flag.0.waiting().is_empty());
    }
}
