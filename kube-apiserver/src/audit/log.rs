//! The log backend (`--audit-log-*`): events as JSON lines (or upstream's `legacy` text) to a
//! rotated file or stdout, written in the request (`blocking`, the default, and
//! `blocking-strict`) or by a writer thread from a bounded buffer (`batch`).

use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::{SyncSender, TrySendError};

use parking_lot::Mutex;

use super::event::Event;
use super::rotate::{RotatingFile, Rotation};

/// `--audit-log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// One JSON event per line (the default).
    #[default]
    Json,
    /// Upstream's one-line text.
    Legacy,
}

impl Format {
    /// The formats upstream knows, as its error lists them.
    pub const ALLOWED: &str = "legacy,json";

    /// Parses a flag value.
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "json" => Some(Format::Json),
            "legacy" => Some(Format::Legacy),
            _ => None,
        }
    }
}

/// `--audit-log-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// A writer thread drains a bounded buffer; events beyond it are dropped.
    Batch,
    /// Each event is written before the request goes on; write errors are logged.
    #[default]
    Blocking,
    /// As blocking, and a request whose first event cannot be written fails with 500.
    BlockingStrict,
}

impl Mode {
    /// The modes upstream knows, as its error lists them.
    pub const ALLOWED: &str = "batch,blocking,blocking-strict";

    /// Parses a flag value.
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "batch" => Some(Mode::Batch),
            "blocking" => Some(Mode::Blocking),
            "blocking-strict" => Some(Mode::BlockingStrict),
            _ => None,
        }
    }
}

/// The validated `--audit-log-*` flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// The file; `-` is stdout.
    pub path: PathBuf,
    /// Rotation of the file.
    pub rotation: Rotation,
    /// The line format.
    pub format: Format,
    /// When events are written.
    pub mode: Mode,
    /// `--audit-log-batch-buffer-size` (batch mode).
    pub batch_buffer_size: usize,
}

/// Upstream's `--audit-log-batch-buffer-size` default.
pub const DEFAULT_BATCH_BUFFER_SIZE: usize = 10_000;

enum Output {
    Direct(Mutex<Box<dyn Write + Send>>),
    /// The buffer (None once shut down) and the writer thread draining it.
    Batch(
        Mutex<Option<SyncSender<Vec<u8>>>>,
        Mutex<Option<std::thread::JoinHandle<()>>>,
    ),
}

/// Writes events; shared by every request.
pub struct LogBackend {
    format: Format,
    mode: Mode,
    output: Output,
}

impl std::fmt::Debug for LogBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogBackend")
            .field("format", &self.format)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl LogBackend {
    /// Opens the file (creating it and its directory) or stdout.
    pub fn open(config: &LogConfig) -> std::io::Result<Self> {
        let writer: Box<dyn Write + Send> = if config.path.as_os_str() == "-" {
            Box::new(std::io::stdout())
        } else {
            Box::new(RotatingFile::open(&config.path, config.rotation)?)
        };
        Ok(Self::with_writer(
            writer,
            config.format,
            config.mode,
            config.batch_buffer_size,
        ))
    }

    /// A backend writing to `writer` (tests write to memory).
    pub fn with_writer(
        writer: Box<dyn Write + Send>,
        format: Format,
        mode: Mode,
        batch_buffer_size: usize,
    ) -> Self {
        let output = match mode {
            Mode::Blocking | Mode::BlockingStrict => Output::Direct(Mutex::new(writer)),
            Mode::Batch => {
                let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(batch_buffer_size.max(1));
                let mut writer = writer;
                let spawned =
                    std::thread::Builder::new()
                        .name("audit-log".into())
                        .spawn(move || {
                            while let Ok(line) = rx.recv() {
                                if let Err(err) = writer.write_all(&line) {
                                    tracing::error!(%err, "writing the audit log");
                                }
                            }
                            let _ = writer.flush();
                        });
                let thread = spawned
                    .inspect_err(|err| {
                        tracing::error!(%err, "starting the audit log writer; events are dropped");
                    })
                    .ok();
                Output::Batch(Mutex::new(Some(tx)), Mutex::new(thread))
            }
        };
        LogBackend {
            format,
            mode,
            output,
        }
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Writes one event; false when it was lost (write error, or a full batch buffer).
    pub fn process(&self, event: &Event) -> bool {
        let mut line = match self.format {
            Format::Json => event.to_json(),
            Format::Legacy => event.to_legacy().into_bytes(),
        };
        line.push(b'\n');
        match &self.output {
            Output::Direct(writer) => match writer.lock().write_all(&line) {
                Ok(()) => true,
                Err(err) => {
                    tracing::error!(%err, audit_id = %event.audit_id, "writing the audit log");
                    false
                }
            },
            Output::Batch(tx, _) => match tx.lock().as_ref().map(|tx| tx.try_send(line)) {
                None => false,
                Some(sent) => match sent {
                    Ok(()) => true,
                    Err(TrySendError::Full(_)) => {
                        tracing::error!(audit_id = %event.audit_id, "audit buffer full: event dropped");
                        false
                    }
                    Err(TrySendError::Disconnected(_)) => false,
                },
            },
        }
    }
}

impl LogBackend {
    /// Writes what the batch buffer still holds and stops its writer thread (at shutdown);
    /// later events are lost. Nothing to do in the blocking modes.
    pub fn shutdown(&self) {
        if let Output::Batch(tx, thread) = &self.output {
            drop(tx.lock().take());
            if let Some(thread) = thread.lock().take() {
                let _ = thread.join();
            }
        }
    }
}

/// A writer into shared memory, for tests of the audit path.
#[derive(Debug, Clone, Default)]
pub struct MemoryWriter(pub std::sync::Arc<Mutex<Vec<u8>>>);

impl MemoryWriter {
    /// The events written so far, one JSON value per line.
    pub fn events(&self) -> Vec<serde_json::Value> {
        String::from_utf8_lossy(&self.0.lock())
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

impl Write for MemoryWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::event::{EventUser, ResponseStatus};
    use crate::audit::policy::{Level, Stage};

    fn event(id: &str) -> Event {
        Event {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level: Level::Metadata,
            audit_id: id.into(),
            stage: Stage::ResponseComplete,
            request_uri: "/version".into(),
            verb: "get".into(),
            user: EventUser::default(),
            impersonated_user: None,
            source_ips: vec![],
            user_agent: String::new(),
            object_ref: None,
            response_status: Some(ResponseStatus::code(200)),
            request_object: None,
            response_object: None,
            request_received_timestamp: jiff::Timestamp::UNIX_EPOCH,
            stage_timestamp: jiff::Timestamp::UNIX_EPOCH,
            annotations: Default::default(),
        }
    }

    #[test]
    fn blocking_writes_lines_at_once() {
        let mem = MemoryWriter::default();
        let backend =
            LogBackend::with_writer(Box::new(mem.clone()), Format::Json, Mode::Blocking, 1);
        assert!(backend.process(&event("a")));
        assert!(backend.process(&event("b")));
        let ids: Vec<_> = mem.events().iter().map(|e| e["auditID"].clone()).collect();
        assert_eq!(ids, ["a", "b"]);
    }

    #[test]
    fn batch_writes_in_the_background() {
        let mem = MemoryWriter::default();
        let backend =
            LogBackend::with_writer(Box::new(mem.clone()), Format::Legacy, Mode::Batch, 100);
        for i in 0..10 {
            assert!(backend.process(&event(&i.to_string())));
        }
        backend.shutdown();
        assert_eq!(
            String::from_utf8_lossy(&mem.0.lock()).lines().count(),
            10,
            "flushed"
        );
        assert!(!backend.process(&event("late")), "nothing after shutdown");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let text = String::from_utf8_lossy(&mem.0.lock()).to_string();
            if text.lines().count() == 10 {
                assert!(text.lines().all(|l| l.contains(" AUDIT: id=")), "{text}");
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{text}");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}
