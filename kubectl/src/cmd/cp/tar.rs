//! The ustar subset `kubectl cp` needs: writing a local file or tree under a new top name
//! (upstream's `makeTar`), and reading entries back (regular files, directories, links).

use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

const BLOCK: usize = 512;

/// One entry read from an archive.
#[derive(Debug, PartialEq)]
pub struct Entry {
    pub name: String,
    pub kind: Kind,
    pub mode: u32,
    pub data: Vec<u8>,
    pub link: String,
}

#[derive(Debug, PartialEq, Clone, Copy)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    Other,
}

fn octal(field: &mut [u8], value: u64) {
    let text = format!("{:0width$o}", value, width = field.len() - 1);
    let bytes = text.as_bytes();
    let digits = field.len() - 1;
    let start = bytes.len().saturating_sub(digits);
    field[..digits].copy_from_slice(&bytes[start..]);
    field[digits] = 0;
}

/// A ustar header; names too long for `prefix`+`name` are refused.
pub fn header(
    name: &str,
    kind: Kind,
    mode: u32,
    size: u64,
    mtime: u64,
    link: &str,
) -> io::Result<[u8; BLOCK]> {
    let mut h = [0u8; BLOCK];
    let (prefix, base) = split_name(name).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("file name too long: {name}"),
        )
    })?;
    h[..base.len()].copy_from_slice(base.as_bytes());
    octal(&mut h[100..108], u64::from(mode & 0o7777));
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    octal(&mut h[124..136], size);
    octal(&mut h[136..148], mtime);
    h[156] = match kind {
        Kind::File | Kind::Other => b'0',
        Kind::Symlink => b'2',
        Kind::Dir => b'5',
    };
    if link.len() > 100 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "link target too long",
        ));
    }
    h[157..157 + link.len()].copy_from_slice(link.as_bytes());
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[345..345 + prefix.len()].copy_from_slice(prefix.as_bytes());
    h[148..156].fill(b' ');
    let sum: u64 = h.iter().map(|b| u64::from(*b)).sum();
    octal(&mut h[148..155], sum);
    h[155] = b' ';
    Ok(h)
}

fn split_name(name: &str) -> Option<(&str, &str)> {
    if name.len() <= 100 {
        return Some(("", name));
    }
    name.char_indices()
        .filter(|(_, c)| *c == '/')
        .map(|(i, _)| (&name[..i], &name[i + 1..]))
        .find(|(p, n)| p.len() <= 155 && n.len() <= 100 && !n.is_empty())
}

/// Archives `src` (file, directory tree or symlink) with `top` as its name inside.
pub fn archive(src: &Path, top: &str, out: &mut Vec<u8>) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(src)?;
    let mtime = meta.mtime().max(0) as u64;
    if meta.is_dir() {
        let mut children: Vec<_> = std::fs::read_dir(src)?.collect::<Result<_, _>>()?;
        children.sort_by_key(|e| e.file_name());
        if children.is_empty() {
            out.extend_from_slice(&header(top, Kind::Dir, meta.mode(), 0, mtime, "")?);
        }
        for child in children {
            let name = child.file_name().to_string_lossy().into_owned();
            archive(&child.path(), &format!("{top}/{name}"), out)?;
        }
    } else if meta.file_type().is_symlink() {
        let target = std::fs::read_link(src)?.to_string_lossy().into_owned();
        out.extend_from_slice(&header(top, Kind::Symlink, meta.mode(), 0, mtime, &target)?);
    } else {
        let data = std::fs::read(src)?;
        out.extend_from_slice(&header(
            top,
            Kind::File,
            meta.mode(),
            data.len() as u64,
            mtime,
            "",
        )?);
        out.extend_from_slice(&data);
        let pad = (BLOCK - data.len() % BLOCK) % BLOCK;
        out.extend(std::iter::repeat_n(0u8, pad));
    }
    Ok(())
}

/// Ends an archive (two zero blocks).
pub fn finish(out: &mut Vec<u8>) {
    out.extend(std::iter::repeat_n(0u8, 2 * BLOCK));
}

fn text(field: &[u8]) -> String {
    let end = field.iter().position(|b| *b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

fn number(field: &[u8]) -> u64 {
    let t = text(field);
    u64::from_str_radix(t.trim_matches(|c: char| c == ' ' || c == '\0'), 8).unwrap_or(0)
}

/// Reads every entry of an archive (ustar, with GNU long names as busybox writes them).
pub fn read_all(mut r: impl Read) -> io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    let mut long_name: Option<String> = None;
    let mut long_link: Option<String> = None;
    loop {
        let mut h = [0u8; BLOCK];
        match r.read_exact(&mut h) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e),
        }
        if h.iter().all(|b| *b == 0) {
            break;
        }
        let size = number(&h[124..136]);
        let mut data = vec![0u8; size as usize];
        r.read_exact(&mut data)?;
        let pad = (BLOCK - data.len() % BLOCK) % BLOCK;
        io::copy(&mut (&mut r).take(pad as u64), &mut io::sink())?;
        let flag = h[156];
        if flag == b'L' || flag == b'K' {
            let value = text(&data);
            if flag == b'L' {
                long_name = Some(value);
            } else {
                long_link = Some(value);
            }
            continue;
        }
        let prefix = text(&h[345..500]);
        let base = text(&h[..100]);
        let name = long_name.take().unwrap_or_else(|| {
            if prefix.is_empty() {
                base
            } else {
                format!("{prefix}/{base}")
            }
        });
        let kind = match flag {
            b'0' | 0 | b'7' => Kind::File,
            b'5' => Kind::Dir,
            b'2' => Kind::Symlink,
            _ => Kind::Other,
        };
        out.push(Entry {
            name,
            kind,
            mode: number(&h[100..108]) as u32,
            data,
            link: long_link.take().unwrap_or_else(|| text(&h[157..257])),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_of_a_tree() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir_all(src.join("sub")).unwrap();
        std::fs::create_dir_all(src.join("empty")).unwrap();
        std::fs::write(src.join("a.txt"), "alpha\n").unwrap();
        std::fs::write(src.join("sub/b.txt"), vec![7u8; 1000]).unwrap();
        std::os::unix::fs::symlink("a.txt", src.join("link")).unwrap();
        let mut out = Vec::new();
        archive(&src, "top", &mut out).unwrap();
        finish(&mut out);
        assert_eq!(out.len() % BLOCK, 0);
        let entries = read_all(&out[..]).unwrap();
        let summary: Vec<(String, Kind, usize, String)> = entries
            .iter()
            .map(|e| (e.name.clone(), e.kind, e.data.len(), e.link.clone()))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("top/a.txt".into(), Kind::File, 6, String::new()),
                ("top/empty".into(), Kind::Dir, 0, String::new()),
                ("top/link".into(), Kind::Symlink, 0, "a.txt".into()),
                ("top/sub/b.txt".into(), Kind::File, 1000, String::new()),
            ]
        );
    }

    #[test]
    fn long_names_use_the_prefix_field() {
        let name = format!("{}/{}", "d".repeat(120), "f".repeat(50));
        let h = header(&name, Kind::File, 0o644, 0, 0, "").unwrap();
        let mut out = h.to_vec();
        finish(&mut out);
        assert_eq!(read_all(&out[..]).unwrap()[0].name, name);
        assert!(header(&"x".repeat(300), Kind::File, 0, 0, 0, "").is_err());
    }
}
