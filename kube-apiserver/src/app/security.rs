//! Who is who and who may do what, from the flags: the authenticator chain, the authorizer
//! chain (RBAC kept current from the watch caches), admission, and the service account token
//! signer; installed on the API state before the server accepts requests.

use super::config::{AuthorizationMode, Config};
use crate::admission::Chain;
use crate::auth::node::NodeAuthorizer;
use crate::auth::rbac::sync as rbac_sync;
use crate::auth::rbac::{RbacAuthorizer, RbacStore, reconcile_bootstrap_policy};
use crate::http::StackConfig;
use crate::http::auth::authenticator::Authenticator;
use crate::http::auth::authorizer::{
    AlwaysAllow, AlwaysDeny, Authorizer, Union, with_privileged_groups,
};
use crate::http::auth::bootstrap_token::BootstrapTokenAuthenticator;
use crate::http::auth::service_account::{
    EXPIRATION_EXTENSION_SECONDS, ServiceAccountTokenAuthenticator, TokenSigner,
    load_verification_keys,
};
use crate::http::auth::token_file::TokenFile;
use crate::registry::ObjectLookup;
use crate::rest::reviews::{Reviewers, RuleSource};
use crate::rest::state::{ApiState, Security};
use anyhow::Context;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Builds the authenticator, authorizers and admission chain, installs them on `state`, and
/// returns the request path's settings and what the review APIs consult.
pub async fn install(
    config: &Config,
    state: &Arc<ApiState>,
    shutdown: &CancellationToken,
) -> anyhow::Result<(StackConfig, Reviewers)> {
    let tokens = config
        .token_auth_file
        .as_deref()
        .map(TokenFile::load)
        .transpose()
        .context("reading --token-auth-file")?;
    let mut authenticator = Authenticator::new(tokens, config.anonymous_auth)
        .with_audiences(config.api_audiences.clone());
    let lookup: Arc<dyn ObjectLookup> = state.clone();
    let accounts = &config.service_accounts;
    let token_signer = match &accounts.signing_key_file {
        Some(file) => {
            let issuer = accounts.issuers.first().cloned().unwrap_or_default();
            let signer = TokenSigner::load(file, issuer, accounts.max_token_expiration)?
                .with_extended_expiration(Some(EXPIRATION_EXTENSION_SECONDS));
            Some(Arc::new(signer))
        }
        None => None,
    };
    let mut keys = load_verification_keys(&accounts.key_files)
        .context("reading --service-account-key-file")?;
    if keys.is_empty()
        && let Some(signer) = &token_signer
    {
        keys.push(signer.verification_key());
    }
    if !keys.is_empty() {
        let source = ServiceAccountTokenAuthenticator::new(
            accounts.issuers.clone(),
            keys,
            config.api_audiences.clone(),
            lookup.clone(),
        )
        .with_legacy_lookup(accounts.lookup)
        .with_storage_fallback(state.clone());
        authenticator = authenticator.with_token_source(Arc::new(source));
    }
    if config.enable_bootstrap_token_auth {
        authenticator = authenticator.with_token_source(Arc::new(
            BootstrapTokenAuthenticator::new(lookup.clone())
                .with_api_audiences(config.api_audiences.clone()),
        ));
    }

    let mut rbac = None;
    let mut authorizers: Vec<Box<dyn Authorizer>> = Vec::new();
    let mut rule_sources = Vec::new();
    for mode in &config.authorization_modes {
        match mode {
            AuthorizationMode::AlwaysAllow => {
                authorizers.push(Box::new(AlwaysAllow));
                rule_sources.push(RuleSource::AlwaysAllow);
            }
            AuthorizationMode::AlwaysDeny => {
                authorizers.push(Box::new(AlwaysDeny));
                rule_sources.push(RuleSource::AlwaysDeny);
            }
            AuthorizationMode::Rbac => {
                reconcile_bootstrap_policy(state)
                    .await
                    .context("reconciling the bootstrap RBAC policy")?;
                let store = Arc::new(RbacStore::new(Vec::new()));
                // Requests are served only once the authorizer has every RBAC object.
                rbac_sync::start(state.clone(), store.clone(), shutdown.clone())
                    .await
                    .context("loading the RBAC objects")?;
                authorizers.push(Box::new(RbacAuthorizer::new(store.clone())));
                rule_sources.push(RuleSource::Rbac(store.clone()));
                rbac = Some(store);
            }
            AuthorizationMode::Node => {
                authorizers.push(Box::new(NodeAuthorizer::new(lookup.clone())));
                rule_sources.push(RuleSource::Node);
            }
        }
    }
    let authorizer: Arc<dyn Authorizer> = Arc::new(with_privileged_groups(Union(authorizers)));
    let admission = Chain::new(&config.admission).map_err(anyhow::Error::msg)?;
    tracing::info!(plugins = ?admission.names(), "admission plugins");
    state.set_security(Security {
        admission: Arc::new(admission),
        authorizer: authorizer.clone(),
        rbac,
        token_signer,
        api_audiences: config.api_audiences.clone(),
    });
    let authenticator = Arc::new(authenticator);
    let reviewers = Reviewers {
        authenticator: authenticator.clone(),
        authorizer: authorizer.clone(),
        rule_sources,
    };
    let stack = StackConfig {
        authenticator,
        authorizer,
        max_requests_inflight: config.max_requests_inflight,
        max_mutating_requests_inflight: config.max_mutating_requests_inflight,
        request_timeout: config.request_timeout,
        // The run phase opens the audit log (server.rs).
        audit: None,
    };
    Ok((stack, reviewers))
}
