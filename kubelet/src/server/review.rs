//! The apiserver's verdicts the secure port relies on: TokenReview for bearer tokens and
//! SubjectAccessReview for authorization.

use super::attributes::Attributes;
use super::auth::UserInfo;
use anyhow::Context;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Api;
use kube::api::PostParams;

/// Answers the two reviews; the apiserver in production, a stub in tests.
#[async_trait::async_trait]
pub trait Reviewer: Send + Sync {
    /// The user the token belongs to; None when the apiserver does not vouch for it.
    async fn review_token(&self, token: &str) -> anyhow::Result<Option<UserInfo>>;
    /// Whether `user` may do `attr`.
    async fn review_access(&self, user: &UserInfo, attr: &Attributes) -> anyhow::Result<bool>;
}

/// Reviews through the kubelet's own apiserver client.
pub struct ApiReviewer {
    client: kube::Client,
}

impl ApiReviewer {
    pub fn new(client: kube::Client) -> Self {
        Self { client }
    }
}

#[async_trait::async_trait]
impl Reviewer for ApiReviewer {
    async fn review_token(&self, token: &str) -> anyhow::Result<Option<UserInfo>> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                audiences: None,
            },
            ..Default::default()
        };
        let api: Api<TokenReview> = Api::all(self.client.clone());
        let answer = api
            .create(&PostParams::default(), &review)
            .await
            .context("creating a TokenReview")?;
        let Some(status) = answer.status else {
            return Ok(None);
        };
        if status.authenticated != Some(true) {
            return Ok(None);
        }
        let user = status.user.unwrap_or_default();
        Ok(Some(UserInfo {
            name: user.username.unwrap_or_default(),
            uid: user.uid.unwrap_or_default(),
            groups: user.groups.unwrap_or_default(),
            extra: user.extra.unwrap_or_default(),
        }))
    }

    async fn review_access(&self, user: &UserInfo, attr: &Attributes) -> anyhow::Result<bool> {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.name.clone()),
                uid: (!user.uid.is_empty()).then(|| user.uid.clone()),
                groups: Some(user.groups.clone()),
                extra: (!user.extra.is_empty()).then(|| user.extra.clone()),
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(attr.verb.clone()),
                    group: Some(String::new()),
                    version: Some("v1".into()),
                    resource: Some("nodes".into()),
                    subresource: Some(attr.subresource.clone()),
                    name: Some(attr.name.clone()),
                    namespace: Some(String::new()),
                    ..Default::default()
                }),
                non_resource_attributes: None,
            },
            ..Default::default()
        };
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let answer = api
            .create(&PostParams::default(), &review)
            .await
            .context("creating a SubjectAccessReview")?;
        Ok(answer.status.is_some_and(|s| s.allowed))
    }
}
