//! The protobuf wire format, read-only: tags, varints, fixed-width and length-delimited values.
//! Every read is bounds-checked; malformed input is an error, never a panic.

use std::fmt;

/// Why bytes are not a protobuf message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError(pub String);

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One value on the wire.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WireValue<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1 (`double`, `fixed64`).
    Fixed64(u64),
    /// Wire type 2: strings, bytes, messages, packed repeated scalars.
    Bytes(&'a [u8]),
    /// Wire type 5 (`float`, `fixed32`).
    Fixed32(u32),
}

impl WireValue<'_> {
    /// The wire type's name, for error messages.
    pub fn wire_name(&self) -> &'static str {
        match self {
            WireValue::Varint(_) => "varint",
            WireValue::Fixed64(_) => "fixed64",
            WireValue::Bytes(_) => "length-delimited",
            WireValue::Fixed32(_) => "fixed32",
        }
    }
}

/// A cursor over one message's bytes.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Reads `buf` from its start.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Whether every byte was read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Reads a base-128 varint (at most 10 bytes).
    pub fn varint(&mut self) -> Result<u64, WireError> {
        let mut value: u64 = 0;
        for i in 0..10 {
            let Some(&byte) = self.buf.get(self.pos) else {
                return Err(WireError("unexpected end of data in a varint".into()));
            };
            self.pos += 1;
            // The 10th byte may only carry the top bit of a 64-bit value.
            if i == 9 && byte > 1 {
                return Err(WireError("varint overflows 64 bits".into()));
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(WireError("varint overflows 64 bits".into()))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.buf.len())
            .ok_or_else(|| {
                WireError(format!(
                    "unexpected end of data: {n} bytes announced, {} left",
                    self.buf.len() - self.pos
                ))
            })?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    /// Reads the next field: its tag and value; `None` at the end of the message.
    pub fn field(&mut self) -> Result<Option<(u32, WireValue<'a>)>, WireError> {
        if self.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let tag = u32::try_from(key >> 3)
            .ok()
            .filter(|&t| t != 0 && t < (1 << 29))
            .ok_or_else(|| WireError(format!("invalid field number {}", key >> 3)))?;
        let value = match key & 7 {
            0 => WireValue::Varint(self.varint()?),
            1 => {
                let b = self.take(8)?;
                WireValue::Fixed64(u64::from_le_bytes(b.try_into().map_err(|_| short())?))
            }
            2 => {
                let len = usize::try_from(self.varint()?)
                    .map_err(|_| WireError("length does not fit in memory".into()))?;
                WireValue::Bytes(self.take(len)?)
            }
            5 => {
                let b = self.take(4)?;
                WireValue::Fixed32(u32::from_le_bytes(b.try_into().map_err(|_| short())?))
            }
            // Groups (3, 4) are deprecated and never used by Kubernetes; 6 and 7 do not exist.
            other => {
                return Err(WireError(format!(
                    "unsupported wire type {other} for field {tag}"
                )));
            }
        };
        Ok(Some((tag, value)))
    }
}

fn short() -> WireError {
    WireError("unexpected end of data".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields_and_rejects_malformed_input() {
        // field 1 varint 150, field 2 "hi", field 3 fixed64, field 4 fixed32
        let mut buf = vec![0x08, 0x96, 0x01, 0x12, 2, b'h', b'i', 0x19];
        buf.extend_from_slice(&7u64.to_le_bytes());
        buf.push(0x25);
        buf.extend_from_slice(&9u32.to_le_bytes());
        let mut r = Reader::new(&buf);
        assert_eq!(r.field(), Ok(Some((1, WireValue::Varint(150)))));
        assert_eq!(r.field(), Ok(Some((2, WireValue::Bytes(b"hi")))));
        assert_eq!(r.field(), Ok(Some((3, WireValue::Fixed64(7)))));
        assert_eq!(r.field(), Ok(Some((4, WireValue::Fixed32(9)))));
        assert_eq!(r.field(), Ok(None));

        for bad in [
            &[0x08, 0x96][..], // truncated varint
            &[0x12, 5, b'a'],  // length past the end
            &[0x0b],           // group start
            &[0x00, 0x01],     // field number 0
            &[
                0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
            ], // > 64 bits
            &[0x19, 1, 2],     // short fixed64
        ] {
            let mut r = Reader::new(bad);
            assert!(r.field().is_err(), "{bad:?}");
        }
    }
}
