//! Go's `text/tabwriter` as kubectl configures it (min width 6, padding 3, spaces): every cell
//! but a line's last is padded to its column's widest cell plus three; an empty line ends
//! the block of lines whose columns align.

/// Minimum cell width, padding included.
const MIN_WIDTH: usize = 6;
/// Spaces after the widest cell.
const PADDING: usize = 3;

/// Aligns `rows` (cells already split) into text, one line per row.
pub fn align(rows: &[Vec<String>]) -> String {
    Aligner::default().align(rows)
}

/// Alignment across several flushes: kubectl's tabwriter fork remembers the widest cell of
/// each column (`RememberWidths`), so `get -w` lines stay aligned with the listing above.
#[derive(Debug, Default)]
pub struct Aligner {
    remembered: Vec<usize>,
}

impl Aligner {
    /// Aligns `rows` as one flush.
    pub fn align(&mut self, rows: &[Vec<String>]) -> String {
        let mut out = String::new();
        // Blocks separated by empty rows align independently, as Go's column blocks do.
        for block in rows.split(|r| r.is_empty()).enumerate() {
            let (i, block) = block;
            if i > 0 {
                out.push('\n');
            }
            let mut widths: Vec<usize> = self.remembered.clone();
            for row in block {
                for (c, cell) in row.iter().enumerate().take(row.len().saturating_sub(1)) {
                    let w = (cell.chars().count() + PADDING).max(MIN_WIDTH);
                    if widths.len() <= c {
                        widths.resize(c + 1, MIN_WIDTH);
                    }
                    widths[c] = widths[c].max(w);
                }
            }
            for row in block {
                let last = row.len().saturating_sub(1);
                for (c, cell) in row.iter().enumerate() {
                    out.push_str(cell);
                    if c < last {
                        let pad = widths[c] - cell.chars().count();
                        out.push_str(&" ".repeat(pad));
                    }
                }
                out.push('\n');
            }
            self.remembered = widths;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[&str]) -> Vec<String> {
        cells.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn aligns_like_go() {
        let rows = vec![
            row(&["NAME", "DATA", "AGE"]),
            row(&["a", "1", "0s"]),
            row(&["kube-root-ca.crt", "1", "10m"]),
        ];
        assert_eq!(
            align(&rows),
            "NAME               DATA   AGE\na                  1      0s\nkube-root-ca.crt   1      10m\n"
        );
        let blocks = vec![row(&["A", "B"]), vec![], row(&["LONGER", "C"])];
        assert_eq!(align(&blocks), "A     B\n\nLONGER   C\n");
    }
}
