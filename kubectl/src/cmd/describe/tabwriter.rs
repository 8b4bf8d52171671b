//! Go's `text/tabwriter` over free text, as upstream's describers configure it (min width 0,
//! padding 2, spaces): a cell is text ended by a tab; consecutive lines holding a cell in the
//! same column form a block aligned to its widest cell; the text after a line's last tab is
//! never padded. Unlike `printers::tabwriter` (pre-split rows), a line without tabs here ends
//! every block, which is what lays out describe's nested sections.

const PADDING: usize = 2;

/// Aligns `text` (tabs separate cells, newlines lines).
pub fn align(text: &str) -> String {
    let lines: Vec<Vec<&str>> = text.split('\n').map(|l| l.split('\t').collect()).collect();
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    let mut widths = Vec::new();
    format(&lines, &mut out, &mut widths, 0, lines.len());
    out
}

/// Go's `Writer.format`: finds the block of column `widths.len()` starting at each line that
/// has it, sizes it, and recurses into the next column for that block.
fn format(
    lines: &[Vec<&str>],
    out: &mut String,
    widths: &mut Vec<usize>,
    mut line0: usize,
    line1: usize,
) {
    let column = widths.len();
    let mut this = line0;
    while this < line1 {
        if column + 1 >= lines[this].len() {
            this += 1;
            continue;
        }
        write_lines(lines, out, widths, line0, this);
        line0 = this;
        let mut width = 0;
        while this < line1 && column + 1 < lines[this].len() {
            width = width.max(lines[this][column].chars().count() + PADDING);
            this += 1;
        }
        widths.push(width);
        format(lines, out, widths, line0, this);
        widths.pop();
        line0 = this;
    }
    write_lines(lines, out, widths, line0, line1);
}

fn write_lines(
    lines: &[Vec<&str>],
    out: &mut String,
    widths: &[usize],
    line0: usize,
    line1: usize,
) {
    for (i, line) in lines.iter().enumerate().take(line1).skip(line0) {
        for (j, cell) in line.iter().enumerate() {
            out.push_str(cell);
            if j < widths.len() {
                let pad = widths[j].saturating_sub(cell.chars().count());
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        if i + 1 < lines.len() {
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::align;

    #[test]
    fn blocks_like_go() {
        let cases = [
            (
                "Name:\ta\nNamespace:\tb\n",
                "Name:       a\nNamespace:  b\n",
            ),
            (
                "Labels:\tx=1\n\ty=2\nContainers:\n  app:\n    Image:\tnginx\n",
                "Labels:  x=1\n         y=2\nContainers:\n  app:\n    Image:  nginx\n",
            ),
            ("IP:\t\nIPs:\t<none>\n", "IP:   \nIPs:  <none>\n"),
            (
                "  Type\tStatus\n  Ready \tTrue \n",
                "  Type    Status\n  Ready   True \n",
            ),
            ("no tabs\n", "no tabs\n"),
            ("a\tb\tc\nlonger\tb\nx\n", "a       b  c\nlonger  b\nx\n"),
        ];
        for (input, want) in cases {
            assert_eq!(align(input), want, "{input:?}");
        }
    }
}
