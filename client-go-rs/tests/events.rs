//! The event recorder against an in-memory sink: aggregation, combining, spam filter and
//! the non-blocking queue.

use std::sync::Arc;
use std::time::Duration;

use client_go_rs::events::{
    BroadcasterOptions, COMBINED_PREFIX, EventBroadcaster, EventSink, EventType, InMemoryEventSink,
    RecordedEvent, SinkError, SinkWrite,
};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ObjectReference;
use tokio::sync::Semaphore;

fn pod(name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some("ns".into()),
        name: Some(name.into()),
        uid: Some(format!("uid-{name}")),
        ..Default::default()
    }
}

fn creates(writes: &[SinkWrite]) -> usize {
    writes
        .iter()
        .filter(|w| matches!(w, SinkWrite::Create(_)))
        .count()
}

#[tokio::test(start_paused = true)]
async fn repeats_become_one_event_with_a_count() {
    let sink = Arc::new(InMemoryEventSink::new());
    let broadcaster = EventBroadcaster::new(sink.clone());
    let recorder = broadcaster.new_recorder("kubelet", "node-1");
    for _ in 0..5 {
        recorder.event(
            &pod("p"),
            EventType::Warning,
            "BackOff",
            "Back-off pulling image",
        );
    }
    drop(recorder);
    broadcaster.shutdown().await;

    let events = sink.events();
    assert_eq!(events.len(), 1, "{events:#?}");
    let e = &events[0];
    assert_eq!(e.count, 5);
    assert_eq!(e.reason, "BackOff");
    assert_eq!(e.reporting_controller, "kubelet");
    assert_eq!(e.reporting_instance, "node-1");
    assert_eq!(e.namespace, "ns");
    assert!(e.name.starts_with("p."), "{}", e.name);
    assert!(
        u128::from_str_radix(&e.name[2..], 16).is_ok(),
        "name suffix is not hex: {}",
        e.name
    );
    let writes = sink.writes();
    assert_eq!(creates(&writes), 1);
    assert_eq!(writes.len(), 5, "one create and four count updates");
    let v1 = e.to_events_v1();
    assert_eq!(v1.series.map(|s| s.count), Some(5));
    assert_eq!(e.to_core_v1().count, Some(5));
}

#[tokio::test(start_paused = true)]
async fn different_objects_and_messages_are_separate_events() {
    let sink = Arc::new(InMemoryEventSink::new());
    let broadcaster = EventBroadcaster::new(sink.clone());
    let recorder = broadcaster.new_recorder("c", "i");
    recorder.event(&pod("a"), EventType::Normal, "Created", "x");
    recorder.event(&pod("b"), EventType::Normal, "Created", "x");
    recorder.event(&pod("a"), EventType::Normal, "Created", "y");
    recorder.event(&pod("a"), EventType::Warning, "Created", "x");
    drop(recorder);
    broadcaster.shutdown().await;
    let events = sink.events();
    assert_eq!(events.len(), 4);
    assert!(events.iter().all(|e| e.count == 1));
}

#[tokio::test(start_paused = true)]
async fn cluster_scoped_objects_get_events_in_default() {
    let sink = Arc::new(InMemoryEventSink::new());
    let broadcaster = EventBroadcaster::new(sink.clone());
    let recorder = broadcaster.new_recorder("c", "i");
    let node = ObjectReference {
        kind: Some("Node".into()),
        name: Some("n1".into()),
        ..Default::default()
    };
    recorder.event(&node, EventType::Normal, "NodeReady", "ready");
    drop(recorder);
    broadcaster.shutdown().await;
    assert_eq!(sink.events()[0].namespace, "default");
}

#[tokio::test(start_paused = true)]
async fn similar_events_are_combined_after_ten() {
    let sink = Arc::new(InMemoryEventSink::new());
    let broadcaster = EventBroadcaster::new(sink.clone());
    let recorder = broadcaster.new_recorder("scheduler", "s1");
    for i in 0..12 {
        recorder.event(
            &pod("p"),
            EventType::Warning,
            "FailedScheduling",
            format!("0/{i} nodes available"),
        );
    }
    drop(recorder);
    broadcaster.shutdown().await;

    let events = sink.events();
    // Nine distinct messages, then the tenth and later are folded into one combined event.
    assert_eq!(events.len(), 10, "{events:#?}");
    let plain: Vec<&RecordedEvent> = events
        .iter()
        .filter(|e| !e.note.starts_with(COMBINED_PREFIX))
        .collect();
    assert_eq!(plain.len(), 9);
    assert!(plain.iter().all(|e| e.count == 1));
    let combined = events
        .iter()
        .find(|e| e.note.starts_with(COMBINED_PREFIX))
        .expect("a combined event");
    assert_eq!(combined.count, 3);
    assert_eq!(
        combined.note,
        format!("{COMBINED_PREFIX}0/11 nodes available")
    );
}

#[tokio::test(start_paused = true)]
async fn similar_events_outside_the_window_are_not_combined() {
    let sink = Arc::new(InMemoryEventSink::new());
    let broadcaster = EventBroadcaster::new(sink.clone());
    let recorder = broadcaster.new_recorder("scheduler", "s1");
    for i in 0..9 {
        recorder.event(&pod("p"), EventType::Warning, "R", format!("m{i}"));
    }
    tokio::time::sleep(Duration::from_secs(11 * 60)).await;
    recorder.event(&pod("p"), EventType::Warning, "R", "m9");
    drop(recorder);
    broadcaster.shutdown().await;
    let events = sink.events();
    assert_eq!(events.len(), 10);
    assert!(events.iter().all(|e| !e.note.starts_with(COMBINED_PREFIX)));
}

#[tokio::test(start_paused = true)]
async fn spam_filter_drops_past_the_burst_and_refills_slowly() {
    let sink = Arc::new(InMemoryEventSink::new());
    let broadcaster = EventBroadcaster::new(sink.clone());
    let recorder = broadcaster.new_recorder("c", "i");
    // Distinct reasons, so nothing aggregates: each is a new event.
    for i in 0..30 {
        recorder.event(&pod("noisy"), EventType::Normal, &format!("R{i}"), "m");
    }
    // Another object has its own bucket.
    recorder.event(&pod("quiet"), EventType::Normal, "R", "m");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let names = |sink: &InMemoryEventSink, obj: &str| {
        sink.events()
            .iter()
            .filter(|e| e.regarding.name.as_deref() == Some(obj))
            .count()
    };
    assert_eq!(names(&sink, "noisy"), 25);
    assert_eq!(names(&sink, "quiet"), 1);

    // One token per five minutes.
    tokio::time::sleep(Duration::from_secs(300)).await;
    recorder.event(&pod("noisy"), EventType::Normal, "Later1", "m");
    recorder.event(&pod("noisy"), EventType::Normal, "Later2", "m");
    drop(recorder);
    broadcaster.shutdown().await;
    assert_eq!(names(&sink, "noisy"), 26);
    assert!(sink.events().iter().any(|e| e.reason == "Later1"));
    assert!(!sink.events().iter().any(|e| e.reason == "Later2"));
}

/// A sink whose writes wait for a permit, to hold the writer task up.
struct GatedSink {
    inner: InMemoryEventSink,
    gate: Semaphore,
}

impl EventSink for GatedSink {
    fn create(&self, event: &RecordedEvent) -> BoxFuture<'_, Result<(), SinkError>> {
        let event = event.clone();
        Box::pin(async move {
            let _permit = self.gate.acquire().await;
            self.inner.create(&event).await
        })
    }
    fn update(&self, event: &RecordedEvent) -> BoxFuture<'_, Result<(), SinkError>> {
        let event = event.clone();
        Box::pin(async move {
            let _permit = self.gate.acquire().await;
            self.inner.update(&event).await
        })
    }
}

#[tokio::test(start_paused = true)]
async fn recording_never_blocks_and_drops_when_the_queue_is_full() {
    let sink = Arc::new(GatedSink {
        inner: InMemoryEventSink::new(),
        gate: Semaphore::new(0),
    });
    let options = BroadcasterOptions {
        queue_capacity: 2,
        ..Default::default()
    };
    let broadcaster = EventBroadcaster::with_options(sink.clone(), options);
    let recorder = broadcaster.new_recorder("c", "i");
    recorder.event(&pod("p"), EventType::Normal, "R0", "m");
    // Let the writer take the first event and block in the sink.
    tokio::time::sleep(Duration::from_millis(10)).await;
    for i in 1..20 {
        recorder.event(&pod("p"), EventType::Normal, &format!("R{i}"), "m");
    }
    sink.gate.add_permits(100);
    drop(recorder);
    broadcaster.shutdown().await;
    // The one being written plus the two that fit in the queue.
    assert_eq!(sink.inner.events().len(), 3);
}

/// A sink that forgets events, as the apiserver does when they expire.
#[derive(Default)]
struct ForgetfulSink {
    inner: InMemoryEventSink,
    created: parking_lot::Mutex<usize>,
}

impl EventSink for ForgetfulSink {
    fn create(&self, event: &RecordedEvent) -> BoxFuture<'_, Result<(), SinkError>> {
        *self.created.lock() += 1;
        self.inner.create(event)
    }
    fn update(&self, _event: &RecordedEvent) -> BoxFuture<'_, Result<(), SinkError>> {
        Box::pin(async { Err(SinkError::NotFound) })
    }
}

#[tokio::test(start_paused = true)]
async fn update_of_an_expired_event_recreates_it() {
    let sink = Arc::new(ForgetfulSink::default());
    let broadcaster = EventBroadcaster::new(sink.clone());
    let recorder = broadcaster.new_recorder("c", "i");
    recorder.event(&pod("p"), EventType::Normal, "R", "m");
    recorder.event(&pod("p"), EventType::Normal, "R", "m");
    drop(recorder);
    broadcaster.shutdown().await;
    // The first create plus the re-create; the second is refused as existing in this
    // sink (same name), which the broadcaster treats as done.
    assert_eq!(*sink.created.lock(), 2);
    assert_eq!(creates(&sink.inner.writes()), 2);
}
