//! The positional arguments of resource commands: `TYPE[,TYPE...] [NAME...]` or
//! `TYPE/NAME...`, checked as upstream's builder checks them.

/// What the arguments name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgSpec {
    /// Nothing (objects come from `-f`).
    None,
    /// `TYPE1,TYPE2 [NAME...]`.
    Types {
        types: Vec<String>,
        names: Vec<String>,
    },
    /// `TYPE/NAME...`, in order.
    Pairs(Vec<(String, String)>),
}

/// Parses the arguments.
pub fn parse(args: &[String]) -> anyhow::Result<ArgSpec> {
    if args.is_empty() {
        return Ok(ArgSpec::None);
    }
    if args.iter().any(|a| a.contains('/')) {
        let mut pairs = Vec::new();
        for arg in args {
            let Some((kind, name)) = arg.split_once('/') else {
                anyhow::bail!(
                    "there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'kubectl get resource/<resource_name>' instead of 'kubectl get resource resource/<resource_name>'"
                );
            };
            if kind.is_empty() || name.is_empty() || name.contains('/') {
                anyhow::bail!(
                    "arguments in resource/name form must have a single resource and name"
                );
            }
            pairs.push((kind.to_owned(), name.to_owned()));
        }
        return Ok(ArgSpec::Pairs(pairs));
    }
    let types: Vec<String> = args[0]
        .split(',')
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect();
    Ok(ArgSpec::Types {
        types,
        names: args[1..].to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn forms() {
        assert_eq!(parse(&[]).unwrap(), ArgSpec::None);
        assert_eq!(
            parse(&s(&["pods,svc", "a", "b"])).unwrap(),
            ArgSpec::Types {
                types: s(&["pods", "svc"]),
                names: s(&["a", "b"])
            }
        );
        assert_eq!(
            parse(&s(&["po/a", "deployments.apps/b"])).unwrap(),
            ArgSpec::Pairs(vec![
                ("po".into(), "a".into()),
                ("deployments.apps".into(), "b".into())
            ])
        );
        assert!(parse(&s(&["pods", "po/a"])).is_err());
        assert!(parse(&s(&["po/a/b"])).is_err());
        assert!(parse(&s(&["/a"])).is_err());
    }
}
