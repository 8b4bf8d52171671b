//! One containerd instance's CNI network: a slot number held by a file lock (so concurrent
//! tests, even in other processes, never share a bridge or subnet), the conflist made from the
//! template, and the removal of what a crashed run may have left (bridge, masquerade rules).

use std::fs::{File, OpenOptions};
use std::path::Path;
use std::process::Command;

/// Slots 1..=250: subnets `10.231.<slot>.0/24`.
const SLOTS: u16 = 250;

/// Takes the first free slot; the lock is released when the returned file is closed (also when
/// the process dies, so a crashed test frees its slot).
pub fn claim_slot() -> anyhow::Result<(u16, File)> {
    // One place for every process whatever its TMPDIR: bridges and subnets are host-wide.
    let dir = Path::new("/run/k8s-rs-e2e-cni");
    std::fs::create_dir_all(dir)?;
    for slot in 1..=SLOTS {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(format!("slot-{slot}.lock")))?;
        if file.try_lock().is_ok() {
            return Ok((slot, file));
        }
    }
    anyhow::bail!("all {SLOTS} CNI slots are in use")
}

/// The network of one slot.
pub struct Network {
    pub slot: u16,
    /// The CNI network name (also in the masquerade rules' comments).
    pub name: String,
    pub bridge: String,
}

impl Network {
    pub fn for_slot(slot: u16) -> Self {
        Self {
            slot,
            name: format!("kt-cni{slot}"),
            bridge: format!("ktcni{slot}"),
        }
    }

    pub fn subnet(&self) -> String {
        format!("10.231.{}.0/24", self.slot)
    }

    pub fn gateway(&self) -> String {
        format!("10.231.{}.1", self.slot)
    }

    /// The conflist from `template` with host-local's data in `ipam_dir`.
    pub fn conflist(&self, template: &str, ipam_dir: &Path) -> String {
        template
            .replace("@NETWORK@", &self.name)
            .replace("@BRIDGE@", &self.bridge)
            .replace("@IPAM_DIR@", &ipam_dir.display().to_string())
            .replace("@SUBNET@", &self.subnet())
            .replace("@GATEWAY@", &self.gateway())
    }

    /// Deletes the bridge (its veths go with it) and the masquerade rules naming this network.
    /// Called with the slot held: nothing else uses them.
    pub fn remove_leftovers(&self) {
        if Path::new("/sys/class/net").join(&self.bridge).exists() {
            let _ = Command::new("ip")
                .args(["link", "del", &self.bridge])
                .status();
        }
        self.remove_masquerade_rules();
    }

    fn remove_masquerade_rules(&self) {
        let Ok(out) = Command::new("iptables")
            .args(["-w", "-t", "nat", "-S", "POSTROUTING"])
            .output()
        else {
            return;
        };
        // The bridge plugin comments each rule `name: "<network>" id: "<container>"`.
        let marker = format!(r#"name: \"{}\""#, self.name);
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if !line.contains(&marker) {
                continue;
            }
            let words = split_words(line);
            let Some(rest) = words.strip_prefix(&["-A".to_string(), "POSTROUTING".to_string()])
            else {
                continue;
            };
            let _ = Command::new("iptables")
                .args(["-w", "-t", "nat", "-D", "POSTROUTING"])
                .args(rest)
                .output();
            if let Some(pos) = rest.iter().position(|w| w == "-j")
                && let Some(chain) = rest.get(pos + 1).filter(|c| c.starts_with("CNI-"))
            {
                for op in ["-F", "-X"] {
                    let _ = Command::new("iptables")
                        .args(["-w", "-t", "nat", op, chain])
                        .output();
                }
            }
        }
    }
}

/// Splits an `iptables -S` line into words as a shell would (double quotes, backslash escapes).
fn split_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quoted = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
                in_word = true;
            }
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iptables_lines_split_as_a_shell_would() {
        let cases: &[(&str, &[&str])] = &[
            ("-A POSTROUTING -j X", &["-A", "POSTROUTING", "-j", "X"]),
            (
                r#"-A POSTROUTING -s 10.231.5.2/32 -m comment --comment "name: \"kt-cni5\" id: \"ab\"" -j CNI-1"#,
                &[
                    "-A",
                    "POSTROUTING",
                    "-s",
                    "10.231.5.2/32",
                    "-m",
                    "comment",
                    "--comment",
                    r#"name: "kt-cni5" id: "ab""#,
                    "-j",
                    "CNI-1",
                ],
            ),
            (r#"a "" b"#, &["a", "", "b"]),
        ];
        for (line, want) in cases {
            assert_eq!(split_words(line), *want, "{line}");
        }
    }

    #[test]
    fn slots_name_distinct_bridges_within_linux_limits() {
        for slot in [1, 99, SLOTS] {
            let net = Network::for_slot(slot);
            assert!(net.bridge.len() <= 15, "{}", net.bridge);
            assert_eq!(net.subnet(), format!("10.231.{slot}.0/24"));
        }
        let conf = Network::for_slot(7).conflist(
            "@NETWORK@ @BRIDGE@ @IPAM_DIR@ @SUBNET@ @GATEWAY@",
            Path::new("/x"),
        );
        assert_eq!(conf, "kt-cni7 ktcni7 /x 10.231.7.0/24 10.231.7.1");
    }
}
