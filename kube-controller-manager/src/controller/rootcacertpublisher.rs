//! root-ca-certificate-publisher-controller: the `kube-root-ca.crt` ConfigMap in every
//! namespace, holding `--root-ca-file`, restored when edited or deleted.

mod publisher;

use super::{ControllerContext, InitResult};
use futures::future::BoxFuture;

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(publisher::init(ctx))
}

/// The CA bundle of the apiserver as upstream finds it: `--root-ca-file`, else the CA the
/// controller manager's own kubeconfig trusts. `None` when there is neither.
pub(crate) fn root_ca(ctx: &ControllerContext) -> anyhow::Result<Option<Vec<u8>>> {
    use anyhow::Context as _;
    if let Some(path) = &ctx.settings.root_ca_file {
        return std::fs::read(path)
            .map(Some)
            .with_context(|| format!("reading --root-ca-file {}", path.display()));
    }
    let kube = &ctx.client_config.kube;
    if let Some(path) = &kube.root_cert_file {
        return std::fs::read(path)
            .map(Some)
            .with_context(|| format!("reading the kubeconfig's CA {}", path.display()));
    }
    Ok(kube
        .root_cert
        .as_ref()
        .filter(|c| !c.is_empty())
        .map(|certs| {
            let blocks: Vec<pem::Pem> = certs
                .iter()
                .map(|der| pem::Pem::new("CERTIFICATE", der.clone()))
                .collect();
            pem::encode_many_config(
                &blocks,
                pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF),
            )
            .into_bytes()
        }))
}
