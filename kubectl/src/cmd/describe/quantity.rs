//! Resource quantities, as far as describe computes with them: a container's resource value
//! for `resourceFieldRef` environment variables, and the QoS class of a pod.

use super::writer::{arr, obj, s, scalar};
use serde_json::Value;

/// A quantity (`250m`, `128Mi`, `1e3`) as a number; `None` when it does not parse.
pub use api_types::validation::parse_quantity as parse;

/// `ExtractContainerResourceValue`: the value a `resourceFieldRef` resolves to, in units of
/// its divisor, rounded up; "" for a resource it cannot name.
pub fn container_resource_value(container: &Value, field_ref: &Value) -> String {
    let divisor = scalar(field_ref.get("divisor"));
    let divisor = parse(&divisor).filter(|d| *d != 0.0).unwrap_or(1.0);
    let resource = s(field_ref, "/resource");
    let Some((kind, name)) = resource.split_once('.') else {
        return String::new();
    };
    if kind != "limits" && kind != "requests" {
        return String::new();
    }
    let amount = scalar(container.pointer(&format!("/resources/{kind}/{name}")));
    let amount = parse(&amount).unwrap_or(0.0);
    if name == "cpu" {
        // Upstream divides milli-values, so a divisor below 1m still rounds as milli-cores.
        let milli = (amount * 1000.0).ceil();
        let divisor_milli = (divisor * 1000.0).ceil().max(1.0);
        return format!("{}", (milli / divisor_milli).ceil() as i64);
    }
    format!(
        "{}",
        (amount.ceil() / divisor.ceil().max(1.0)).ceil() as i64
    )
}

/// The pod's QoS class: the one the server recorded, else upstream's computation.
pub fn qos_class(pod: &Value) -> String {
    let recorded = s(pod, "/status/qosClass");
    if !recorded.is_empty() {
        return recorded.to_owned();
    }
    let containers: Vec<&Value> = arr(pod, "/spec/containers")
        .iter()
        .chain(arr(pod, "/spec/initContainers"))
        .collect();
    let mut any = false;
    let mut guaranteed = true;
    for c in containers {
        let limits = obj(c, "/resources/limits");
        let requests = obj(c, "/resources/requests");
        for name in ["cpu", "memory"] {
            let limit = limits.and_then(|l| l.get(name)).map(|v| scalar(Some(v)));
            let request = requests.and_then(|r| r.get(name)).map(|v| scalar(Some(v)));
            let nonzero =
                |q: &Option<String>| q.as_deref().and_then(parse).is_some_and(|v| v != 0.0);
            any |= nonzero(&limit) || nonzero(&request);
            let same = match (&limit, &request) {
                (Some(l), Some(r)) => parse(l) == parse(r),
                (Some(_), None) => true,
                _ => false,
            };
            guaranteed &= nonzero(&limit) && same;
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
    .to_owned()
}

/// A sum of quantities kept as upstream's `Quantity.Add` keeps it: in the first operand's
/// format (binary `Mi`, decimal `M`), printed canonically.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sum {
    /// In milli-units, so `250m` CPUs stay exact.
    milli: i128,
    binary: bool,
    set: bool,
}

impl Sum {
    /// Adds `text` (ignored when it does not parse).
    pub fn add(&mut self, text: &str) {
        let Some(value) = parse(text) else {
            return;
        };
        if !self.set {
            self.binary = text.trim().ends_with('i');
            self.set = true;
        }
        self.milli += (value * 1000.0).round() as i128;
    }

    /// The larger of two sums (a pod's init containers against its app containers).
    pub fn max(self, other: Sum) -> Sum {
        if other.milli > self.milli {
            other
        } else {
            self
        }
    }

    /// True once a quantity was added.
    pub fn is_set(&self) -> bool {
        self.set
    }

    /// The value in base units (for percentages).
    pub fn value(&self) -> f64 {
        self.milli as f64 / 1000.0
    }

    /// The value in milli-units.
    pub fn milli_value(&self) -> i128 {
        self.milli
    }

    /// `Quantity.String()`.
    pub fn canonical(&self) -> String {
        let m = self.milli;
        if m == 0 {
            return "0".to_owned();
        }
        if m % 1000 != 0 {
            return format!("{m}m");
        }
        let v = m / 1000;
        let suffixes: &[(&str, i128)] = if self.binary {
            &[
                ("Ei", 1 << 60),
                ("Pi", 1 << 50),
                ("Ti", 1 << 40),
                ("Gi", 1 << 30),
                ("Mi", 1 << 20),
                ("Ki", 1 << 10),
            ]
        } else {
            &[
                ("E", 1_000_000_000_000_000_000),
                ("P", 1_000_000_000_000_000),
                ("T", 1_000_000_000_000),
                ("G", 1_000_000_000),
                ("M", 1_000_000),
                ("k", 1_000),
            ]
        };
        for (suffix, unit) in suffixes {
            if v % unit == 0 {
                return format!("{}{suffix}", v / unit);
            }
        }
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quantities() {
        for (text, want) in [
            ("250m", 0.25),
            ("128Mi", 134217728.0),
            ("1", 1.0),
            ("1e3", 1000.0),
            ("2k", 2000.0),
        ] {
            assert_eq!(parse(text), Some(want), "{text}");
        }
        assert_eq!(parse("x"), None);
    }

    #[test]
    fn resource_values_and_qos() {
        let c = json!({"resources": {"limits": {"cpu": "250m", "memory": "64Mi"}}});
        let cases = [
            (json!({"resource": "limits.cpu"}), "1"),
            (json!({"resource": "limits.cpu", "divisor": "1m"}), "250"),
            (json!({"resource": "limits.memory", "divisor": "1Mi"}), "64"),
            (json!({"resource": "requests.memory"}), "0"),
        ];
        for (r, want) in cases {
            assert_eq!(container_resource_value(&c, &r), want, "{r}");
        }
        let pod = |resources: Value| json!({"spec": {"containers": [{"resources": resources}]}});
        assert_eq!(qos_class(&pod(json!({}))), "BestEffort");
        assert_eq!(
            qos_class(&pod(json!({"limits": {"cpu": "1", "memory": "1Gi"}}))),
            "Guaranteed"
        );
        assert_eq!(
            qos_class(&pod(json!({"requests": {"cpu": "1"}}))),
            "Burstable"
        );
    }

    #[test]
    fn sums() {
        for (items, want) in [
            (vec!["250m", "250m"], "500m"),
            (vec!["500m", "500m"], "1"),
            (vec!["128Mi", "64Mi"], "192Mi"),
            (vec!["1G", "500M"], "1500M"),
            (vec![], "0"),
            (vec!["100"], "100"),
        ] {
            let mut sum = Sum::default();
            items.iter().for_each(|i| sum.add(i));
            assert_eq!(sum.canonical(), want, "{items:?}");
        }
    }
}
