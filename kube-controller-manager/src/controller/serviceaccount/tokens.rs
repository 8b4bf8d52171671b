//! serviceaccount-token-controller (upstream's `TokensController`): fills legacy token secrets
//! (`kubernetes.io/service-account-token` secrets naming a service account) with a signed token,
//! the root CA and the namespace, and deletes them when their service account is gone.
//!
//! It writes with the controller manager's own client, as upstream does: under
//! `--use-service-account-credentials` the other controllers' identities depend on it.

use super::super::worker::run_workers;
use super::super::{ControllerContext, InitResult};
use super::is_not_found;
use super::jwt::{LegacySubject, LegacyTokenSigner};
use anyhow::Context as _;
use client_go_rs::informers::{Deleted, EventHandlerFuncs};
use client_go_rs::listers::Lister;
use client_go_rs::workqueue::RateLimitingQueue;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use std::sync::Arc;

const NAME: &str = "serviceaccount-token-controller";
pub(crate) const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";
pub(crate) const SA_NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
pub(crate) const SA_UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";

struct Tokens {
    client: kube::Client,
    signer: LegacyTokenSigner,
    root_ca: Option<Vec<u8>>,
    accounts: Lister<ServiceAccount>,
    secrets: Lister<Secret>,
}

pub(crate) async fn init(ctx: ControllerContext) -> InitResult {
    let Some(key_file) = ctx.settings.service_account_private_key_file.clone() else {
        tracing::warn!(
            controller = NAME,
            "controller is disabled because there is no private key (--service-account-private-key-file)"
        );
        return Ok(None);
    };
    let signer = LegacyTokenSigner::load(&key_file)?;
    let root_ca = crate::controller::rootcacertpublisher::root_ca(&ctx)?;
    let accounts = ctx.informers.informer::<ServiceAccount>();
    let secrets = ctx.informers.informer::<Secret>();
    let account_queue: RateLimitingQueue<String> =
        RateLimitingQueue::default_controller("serviceaccount_tokens_service");
    let secret_queue: RateLimitingQueue<String> =
        RateLimitingQueue::default_controller("serviceaccount_tokens_secret");

    let q = account_queue.clone();
    accounts.add_event_handler(EventHandlerFuncs::new().on_delete(
        move |deleted: &Deleted<ServiceAccount>| {
            let meta = &deleted.object().metadata;
            if let (Some(ns), Some(name)) = (&meta.namespace, &meta.name) {
                q.add(format!("{ns}/{name}/{}", meta.uid.as_deref().unwrap_or("")));
            }
        },
    ));
    let q = secret_queue.clone();
    let q2 = secret_queue.clone();
    secrets.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |s: &Arc<Secret>, _| enqueue_secret(&q, s))
            .on_update(move |_, s: &Arc<Secret>| enqueue_secret(&q2, s)),
    );

    let shutdown = ctx.shutdown.clone();
    let workers = ctx.settings.concurrent_serviceaccount_token_syncs;
    let client = ctx.client.clone();
    Ok(Some(Box::pin(async move {
        if !accounts.wait_for_cache_sync(&shutdown).await
            || !secrets.wait_for_cache_sync(&shutdown).await
        {
            return;
        }
        let tokens = Arc::new(Tokens {
            client,
            signer,
            root_ca,
            accounts: accounts.lister(),
            secrets: secrets.lister(),
        });
        let t = tokens.clone();
        let account_workers = run_workers(
            "serviceaccount-token-controller(accounts)",
            account_queue,
            workers,
            shutdown.clone(),
            move |key: String| {
                let t = t.clone();
                async move { t.sync_deleted_account(&key).await }
            },
        );
        let secret_workers = run_workers(NAME, secret_queue, workers, shutdown, move |key| {
            let t = tokens.clone();
            async move { t.sync_secret(&key).await }
        });
        futures::future::join(account_workers, secret_workers).await;
    })))
}

fn enqueue_secret(queue: &RateLimitingQueue<String>, secret: &Secret) {
    if secret.type_.as_deref() != Some(TOKEN_SECRET_TYPE) {
        return;
    }
    if let (Some(ns), Some(name)) = (&secret.metadata.namespace, &secret.metadata.name) {
        queue.add(format!("{ns}/{name}"));
    }
}

fn annotation<'a>(secret: &'a Secret, key: &str) -> &'a str {
    secret
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
        .unwrap_or("")
}

/// Whether a token secret belongs to the service account `name` with `uid`.
pub(crate) fn references(secret: &Secret, name: &str, uid: &str) -> bool {
    if secret.type_.as_deref() != Some(TOKEN_SECRET_TYPE)
        || annotation(secret, SA_NAME_ANNOTATION) != name
    {
        return false;
    }
    let secret_uid = annotation(secret, SA_UID_ANNOTATION);
    secret_uid.is_empty() || uid.is_empty() || secret_uid == uid
}

/// What a token secret needs.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    Nothing,
    /// Its service account does not exist (or is another one of the same name).
    Delete,
    Update {
        set_uid: bool,
        token: bool,
        ca: bool,
        namespace: bool,
    },
}

/// `account_uid` is the uid of the service account the secret names, `None` when it does not
/// exist.
pub(crate) fn plan(secret: &Secret, account_uid: Option<&str>, root_ca: Option<&[u8]>) -> Plan {
    let Some(account_uid) = account_uid else {
        return Plan::Delete;
    };
    let secret_uid = annotation(secret, SA_UID_ANNOTATION);
    if !secret_uid.is_empty() && secret_uid != account_uid {
        return Plan::Delete;
    }
    let data = secret.data.as_ref();
    let get = |k: &str| data.and_then(|d| d.get(k)).map(|v| v.0.as_slice());
    let ns = secret.metadata.namespace.as_deref().unwrap_or("");
    let set_uid = secret_uid.is_empty();
    let token = get("token").is_none_or(<[u8]>::is_empty);
    let ca = root_ca.is_some_and(|ca| !ca.is_empty() && get("ca.crt") != Some(ca));
    let namespace = get("namespace") != Some(ns.as_bytes());
    if set_uid || token || ca || namespace {
        Plan::Update {
            set_uid,
            token,
            ca,
            namespace,
        }
    } else {
        Plan::Nothing
    }
}

impl Tokens {
    /// The uid of `ns/name`, from the cache or (on a miss, as the cache may lag) the apiserver.
    async fn account_uid(
        &self,
        ns: &str,
        name: &str,
        want_uid: &str,
    ) -> anyhow::Result<Option<String>> {
        if let Some(sa) = self.accounts.namespace(ns).get(name) {
            let uid = sa.metadata.uid.clone().unwrap_or_default();
            if want_uid.is_empty() || uid == want_uid {
                return Ok(Some(uid));
            }
        }
        let api: Api<ServiceAccount> = Api::namespaced(self.client.clone(), ns);
        match api.get_opt(name).await {
            Ok(sa) => Ok(sa.map(|sa| sa.metadata.uid.unwrap_or_default())),
            Err(err) => Err(err).with_context(|| format!("getting service account {ns}/{name}")),
        }
    }

    async fn sync_secret(&self, key: &str) -> anyhow::Result<()> {
        let Some((ns, name)) = key.split_once('/') else {
            return Ok(());
        };
        let Some(secret) = self.secrets.namespace(ns).get(name) else {
            return Ok(());
        };
        if secret.type_.as_deref() != Some(TOKEN_SECRET_TYPE)
            || secret.metadata.deletion_timestamp.is_some()
        {
            return Ok(());
        }
        let account_name = annotation(&secret, SA_NAME_ANNOTATION);
        let account_uid = if account_name.is_empty() {
            None
        } else {
            self.account_uid(ns, account_name, annotation(&secret, SA_UID_ANNOTATION))
                .await?
        };
        let api: Api<Secret> = Api::namespaced(self.client.clone(), ns);
        match plan(&secret, account_uid.as_deref(), self.root_ca.as_deref()) {
            Plan::Nothing => Ok(()),
            Plan::Delete => self.delete(&api, &secret).await,
            Plan::Update {
                set_uid,
                token,
                ca,
                namespace,
            } => {
                let account_uid = account_uid.unwrap_or_default();
                let mut updated = (*secret).clone();
                if set_uid {
                    updated
                        .metadata
                        .annotations
                        .get_or_insert_default()
                        .insert(SA_UID_ANNOTATION.into(), account_uid.clone());
                }
                let data = updated.data.get_or_insert_default();
                if token {
                    let jwt = self.signer.legacy_token(&LegacySubject {
                        namespace: ns,
                        secret_name: name,
                        service_account_name: account_name,
                        service_account_uid: &account_uid,
                    })?;
                    data.insert("token".into(), ByteString(jwt.into_bytes()));
                }
                if ca && let Some(root_ca) = &self.root_ca {
                    data.insert("ca.crt".into(), ByteString(root_ca.clone()));
                }
                if namespace {
                    data.insert("namespace".into(), ByteString(ns.as_bytes().to_vec()));
                }
                match api.replace(name, &PostParams::default(), &updated).await {
                    Ok(_) => Ok(()),
                    Err(err) if is_not_found(&err) => Ok(()),
                    Err(err) => Err(err).with_context(|| format!("updating token secret {key}")),
                }
            }
        }
    }

    async fn delete(&self, api: &Api<Secret>, secret: &Secret) -> anyhow::Result<()> {
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: secret.metadata.uid.clone(),
                resource_version: None,
            }),
            ..Default::default()
        };
        let name = secret.metadata.name.as_deref().unwrap_or("");
        match api.delete(name, &params).await {
            Ok(_) => {
                tracing::info!(
                    secret = name,
                    "deleted token secret of a missing service account"
                );
                Ok(())
            }
            Err(err) if is_not_found(&err) => Ok(()),
            Err(err) => Err(err).with_context(|| format!("deleting token secret {name}")),
        }
    }

    /// `key` is `namespace/name/uid` of a deleted service account: its token secrets go too.
    async fn sync_deleted_account(&self, key: &str) -> anyhow::Result<()> {
        let mut parts = key.splitn(3, '/');
        let (Some(ns), Some(name), Some(uid)) = (parts.next(), parts.next(), parts.next()) else {
            return Ok(());
        };
        if let Some(sa) = self.accounts.namespace(ns).get(name)
            && sa.metadata.uid.as_deref().unwrap_or("") == uid
        {
            return Ok(());
        }
        let api: Api<Secret> = Api::namespaced(self.client.clone(), ns);
        for secret in self
            .secrets
            .namespace(ns)
            .list_matching(|s| references(s, name, uid))
        {
            self.delete(&api, &secret).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use std::collections::BTreeMap;

    fn secret(uid_annotation: Option<&str>, data: &[(&str, &str)]) -> Secret {
        let mut annotations = BTreeMap::from([(SA_NAME_ANNOTATION.to_string(), "sa".to_string())]);
        if let Some(uid) = uid_annotation {
            annotations.insert(SA_UID_ANNOTATION.into(), uid.into());
        }
        Secret {
            metadata: ObjectMeta {
                name: Some("sa-token".into()),
                namespace: Some("ns".into()),
                annotations: Some(annotations),
                ..Default::default()
            },
            type_: Some(TOKEN_SECRET_TYPE.into()),
            data: Some(
                data.iter()
                    .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
                    .collect(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn plans_follow_the_account_and_the_missing_data() {
        let full = [("token", "t"), ("ca.crt", "CA"), ("namespace", "ns")];
        let cases = [
            ("no account", secret(Some("u1"), &full), None, Plan::Delete),
            (
                "other account uid",
                secret(Some("u1"), &full),
                Some("u2"),
                Plan::Delete,
            ),
            (
                "complete",
                secret(Some("u1"), &full),
                Some("u1"),
                Plan::Nothing,
            ),
            (
                "empty",
                secret(None, &[]),
                Some("u1"),
                Plan::Update {
                    set_uid: true,
                    token: true,
                    ca: true,
                    namespace: true,
                },
            ),
            (
                "stale ca only",
                secret(
                    Some("u1"),
                    &[("token", "t"), ("ca.crt", "OLD"), ("namespace", "ns")],
                ),
                Some("u1"),
                Plan::Update {
                    set_uid: false,
                    token: false,
                    ca: true,
                    namespace: false,
                },
            ),
        ];
        for (what, s, uid, want) in cases {
            assert_eq!(plan(&s, uid, Some(b"CA")), want, "{what}");
        }
    }

    #[test]
    fn secrets_reference_their_account_by_name_and_uid() {
        assert!(references(&secret(Some("u1"), &[]), "sa", "u1"));
        assert!(references(&secret(None, &[]), "sa", "u1"));
        assert!(!references(&secret(Some("u2"), &[]), "sa", "u1"));
        assert!(!references(&secret(Some("u1"), &[]), "other", "u1"));
    }
}
