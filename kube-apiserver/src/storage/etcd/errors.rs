//! What etcd's errors mean to a caller of the backend.

use crate::storage::backend::StorageError;

/// An etcd failure, sorted by what the backend does with it.
#[derive(Debug)]
pub(super) enum EtcdFailure {
    /// The revision asked for was compacted away; the caller fills in the revisions.
    Compacted,
    /// The revision asked for is ahead of the store; the caller fills in the revisions.
    FutureRevision,
    /// Anything else, already mapped.
    Other(StorageError),
}

const GRPC_CANCELLED: i32 = 1;
const GRPC_DEADLINE_EXCEEDED: i32 = 4;
const GRPC_RESOURCE_EXHAUSTED: i32 = 8;
const GRPC_ABORTED: i32 = 10;
const GRPC_UNAVAILABLE: i32 = 14;

/// Sorts an etcd client error. Errors reaching etcd at all, and etcd's "try again" answers
/// (no leader, timeouts, too many requests), are `Unavailable`.
pub(super) fn classify(e: etcd_client::Error) -> EtcdFailure {
    use etcd_client::Error as E;
    match e {
        E::GRpcStatus(status) => {
            let msg = status.message();
            if msg.contains("required revision has been compacted") {
                return EtcdFailure::Compacted;
            }
            if msg.contains("required revision is a future revision") {
                return EtcdFailure::FutureRevision;
            }
            // gRPC's numeric codes, so as not to depend on tonic directly.
            let code: i32 = status.code().into();
            // A status with an underlying error was made by the client from a failed
            // connection (etcd's own answers carry none): etcd is not reachable.
            let transport = std::error::Error::source(&status).is_some();
            let err = match code {
                _ if transport => StorageError::Unavailable(format!("etcd: {msg}")),
                GRPC_CANCELLED
                | GRPC_DEADLINE_EXCEEDED
                | GRPC_RESOURCE_EXHAUSTED
                | GRPC_ABORTED
                | GRPC_UNAVAILABLE => StorageError::Unavailable(format!("etcd: {msg}")),
                _ => StorageError::Internal(format!("etcd: {:?}: {msg}", status.code())),
            };
            EtcdFailure::Other(err)
        }
        E::TransportError(e) => EtcdFailure::Other(StorageError::Unavailable(format!("etcd: {e}"))),
        E::IoError(e) => EtcdFailure::Other(StorageError::Unavailable(format!("etcd: {e}"))),
        E::WatchError(e) => {
            EtcdFailure::Other(StorageError::Unavailable(format!("etcd watch: {e}")))
        }
        other => EtcdFailure::Other(StorageError::Internal(format!("etcd: {other}"))),
    }
}

/// An error that is not about a revision (or where the caller has no revision to report).
pub(super) fn plain(e: etcd_client::Error) -> StorageError {
    match classify(e) {
        EtcdFailure::Other(err) => err,
        EtcdFailure::Compacted => {
            StorageError::Internal("etcd: unexpected compaction error".into())
        }
        EtcdFailure::FutureRevision => {
            StorageError::Internal("etcd: unexpected future revision error".into())
        }
    }
}
