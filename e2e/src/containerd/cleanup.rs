//! What a stopped containerd leaves behind when CRI could not remove it: shims (they outlive
//! containerd by design), runc containers (they outlive their shim), and mounts under the
//! instance's directories (rootfs overlays, shm, network namespaces).

use std::path::Path;
use std::process::Command;

/// Kills and deletes every runc container under `runc_root` (`<root>/<namespace>/<id>`), then
/// kills the shims started by the containerd listening on `socket`.
pub fn kill_leftovers(socket: &Path, runc_root: &Path) {
    let namespaces = std::fs::read_dir(runc_root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path());
    for ns_root in namespaces {
        let Ok(out) = Command::new("runc")
            .arg("--root")
            .arg(&ns_root)
            .args(["list", "-q"])
            .output()
        else {
            continue;
        };
        for id in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            let _ = Command::new("runc")
                .arg("--root")
                .arg(&ns_root)
                .args(["delete", "--force", id])
                .output();
        }
    }
    for shim in shims_of(socket) {
        let _ = Command::new("kill")
            .args(["-KILL", &shim.pid.to_string()])
            .output();
        // A shim removes its socket when told to shut down, not when killed. Its path is
        // containerd's: /run/containerd/s/<sha256 of "<address>/<namespace>/<id>">.
        use sha2::Digest as _;
        let key = format!("{}/{}/{}", socket.display(), shim.namespace, shim.id);
        let hash: String = sha2::Sha256::digest(key.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let _ = std::fs::remove_file(Path::new("/run/containerd/s").join(hash));
    }
}

struct Shim {
    pid: u32,
    namespace: String,
    id: String,
}

/// The `containerd-shim-runc-v2` processes whose `-address` is `socket`.
fn shims_of(socket: &Path) -> Vec<Shim> {
    let socket = socket.display().to_string();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            let is_shim = args
                .first()
                .is_some_and(|a| a.ends_with(b"containerd-shim-runc-v2"));
            let ours = args
                .windows(2)
                .any(|w| w[0] == b"-address" && w[1] == socket.as_bytes());
            let flag = |name: &[u8]| {
                args.windows(2)
                    .find(|w| w[0] == name)
                    .map(|w| String::from_utf8_lossy(w[1]).into_owned())
                    .unwrap_or_default()
            };
            (is_shim && ours).then(|| Shim {
                pid,
                namespace: flag(b"-namespace"),
                id: flag(b"-id"),
            })
        })
        .collect()
}

/// Unmounts everything mounted below `dir`, deepest first.
pub fn unmount_under(dir: &Path) {
    let prefix = format!("{}/", dir.display());
    let mut points: Vec<String> = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.split(' ').nth(4).map(unescape))
        .filter(|p| p.starts_with(&prefix))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    points.dedup();
    for point in points {
        let ok = Command::new("umount")
            .arg(&point)
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            let _ = Command::new("umount").args(["-l", &point]).output();
        }
    }
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && let Some(digits) = bytes.get(i + 1..i + 4)
            && let Ok(digits) = std::str::from_utf8(digits)
            && let Ok(v) = u8::from_str_radix(digits, 8)
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::unescape;

    #[test]
    fn mountinfo_escapes_are_decoded() {
        let cases = [
            ("/a/b", "/a/b"),
            (r"/a\040b", "/a b"),
            (r"/x\134y", r"/x\y"),
            (r"/end\04", r"/end\04"),
        ];
        for (raw, want) in cases {
            assert_eq!(unescape(raw), want, "{raw}");
        }
    }
}
