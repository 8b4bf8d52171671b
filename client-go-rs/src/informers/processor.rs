//! Fan-out of cache changes to handlers, each with its own unbounded queue and task, as
//! client-go's `sharedProcessor`/`processorListener`: a slow handler only delays itself.

use std::sync::Arc;

use tokio::runtime::Handle;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::handler::{Notification, ResourceEventHandler};

/// Identifies a registered handler, to remove it later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HandlerRegistration(pub(crate) u64);

type Pending<K> = (
    UnboundedReceiver<Notification<K>>,
    Arc<dyn ResourceEventHandler<K>>,
);

pub(crate) struct Processor<K> {
    next_id: u64,
    listeners: Vec<(u64, UnboundedSender<Notification<K>>)>,
    /// Handlers registered outside any runtime: their tasks start with the informer.
    pending: Vec<Pending<K>>,
}

impl<K: Send + Sync + 'static> Processor<K> {
    pub(crate) fn new() -> Self {
        Self {
            next_id: 0,
            listeners: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// Registers `handler`; `initial` is queued to it before any later notification.
    pub(crate) fn add(
        &mut self,
        handler: Arc<dyn ResourceEventHandler<K>>,
        initial: impl IntoIterator<Item = Notification<K>>,
    ) -> HandlerRegistration {
        let (tx, rx) = unbounded_channel();
        for n in initial {
            // The receiver is alive (we hold it), so this cannot fail.
            let _ = tx.send(n);
        }
        let id = self.next_id;
        self.next_id += 1;
        self.listeners.push((id, tx));
        match Handle::try_current() {
            Ok(rt) => {
                rt.spawn(pump(rx, handler));
            }
            Err(_) => self.pending.push((rx, handler)),
        }
        HandlerRegistration(id)
    }

    /// Unregisters a handler; its queued notifications are still delivered.
    pub(crate) fn remove(&mut self, reg: HandlerRegistration) -> bool {
        let before = self.listeners.len();
        self.listeners.retain(|(id, _)| *id != reg.0);
        before != self.listeners.len()
    }

    /// Starts the tasks of handlers registered before a runtime was available.
    pub(crate) fn spawn_pending(&mut self, rt: &Handle) {
        for (rx, handler) in self.pending.drain(..) {
            rt.spawn(pump(rx, handler));
        }
    }

    pub(crate) fn distribute(&mut self, n: &Notification<K>) {
        // A closed queue means its task died (a handler panicked): drop the listener.
        self.listeners.retain(|(_, tx)| tx.send(n.clone()).is_ok());
    }

    /// Closes every queue: each handler task ends after draining its queue.
    pub(crate) fn stop(&mut self) {
        self.listeners.clear();
        self.pending.clear();
    }

    pub(crate) fn len(&self) -> usize {
        self.listeners.len()
    }
}

async fn pump<K>(
    mut rx: UnboundedReceiver<Notification<K>>,
    handler: Arc<dyn ResourceEventHandler<K>>,
) {
    while let Some(n) = rx.recv().await {
        n.deliver(handler.as_ref());
    }
}
