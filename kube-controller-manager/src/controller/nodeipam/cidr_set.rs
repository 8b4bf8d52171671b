//! One cluster CIDR cut into equal node subnets, as upstream's cidrset: a bitmap of the
//! subnets in use and a rotating start so a released subnet is not handed out again at once.

use anyhow::{Context, bail};
use std::net::IpAddr;

/// Upstream refuses to split a cluster CIDR into more than 2^16 node subnets.
const MAX_SUBNET_BITS: u8 = 16;

#[derive(Debug)]
pub struct CidrSet {
    v6: bool,
    base: u128,
    cluster_prefix: u8,
    node_prefix: u8,
    used: Vec<bool>,
    in_use: usize,
    next: usize,
}

pub fn parse_cidr(cidr: &str) -> anyhow::Result<(IpAddr, u8)> {
    let (addr, prefix) = cidr
        .trim()
        .split_once('/')
        .with_context(|| format!("invalid CIDR {cidr:?}: no prefix length"))?;
    let addr: IpAddr = addr
        .parse()
        .with_context(|| format!("invalid CIDR {cidr:?}"))?;
    let prefix: u8 = prefix
        .parse()
        .with_context(|| format!("invalid CIDR {cidr:?}"))?;
    if prefix > bits(addr.is_ipv6()) {
        bail!("invalid CIDR {cidr:?}: prefix length too long");
    }
    Ok((addr, prefix))
}

fn bits(v6: bool) -> u8 {
    if v6 { 128 } else { 32 }
}

fn to_u128(addr: IpAddr) -> u128 {
    match addr {
        IpAddr::V4(a) => u32::from(a) as u128,
        IpAddr::V6(a) => u128::from(a),
    }
}

fn full(width: u8) -> u128 {
    if width == 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    }
}

fn mask(prefix: u8, width: u8) -> u128 {
    if prefix == 0 {
        0
    } else {
        full(width) & !((1u128 << (width - prefix)) - 1)
    }
}

/// The first and last address of a CIDR.
fn bounds(value: u128, prefix: u8, width: u8) -> (u128, u128) {
    let lo = value & mask(prefix, width);
    (lo, lo | (full(width) & !mask(prefix, width)))
}

impl CidrSet {
    pub fn new(cluster_cidr: &str, node_prefix: u8) -> anyhow::Result<Self> {
        let (addr, cluster_prefix) = parse_cidr(cluster_cidr)?;
        let v6 = addr.is_ipv6();
        if node_prefix < cluster_prefix || node_prefix > bits(v6) {
            bail!("node CIDR mask size /{node_prefix} does not fit in cluster CIDR {cluster_cidr}");
        }
        if node_prefix - cluster_prefix > MAX_SUBNET_BITS {
            bail!(
                "CIDRSetSubNetTooBig: /{node_prefix} subnets of {cluster_cidr} would be more than 2^{MAX_SUBNET_BITS}"
            );
        }
        let count = 1usize << (node_prefix - cluster_prefix);
        Ok(Self {
            v6,
            base: to_u128(addr) & mask(cluster_prefix, bits(v6)),
            cluster_prefix,
            node_prefix,
            used: vec![false; count],
            in_use: 0,
            next: 0,
        })
    }

    pub fn is_v6(&self) -> bool {
        self.v6
    }

    fn subnet(&self, index: usize) -> String {
        let shift = bits(self.v6) - self.node_prefix;
        let value = self.base + ((index as u128) << shift);
        let addr: IpAddr = if self.v6 {
            IpAddr::V6(value.into())
        } else {
            IpAddr::V4((value as u32).into())
        };
        format!("{addr}/{}", self.node_prefix)
    }

    /// The next free subnet, or None when all are taken.
    pub fn allocate(&mut self) -> Option<String> {
        let count = self.used.len();
        if self.in_use == count {
            return None;
        }
        for offset in 0..count {
            let i = (self.next + offset) % count;
            if !self.used[i] {
                self.used[i] = true;
                self.in_use += 1;
                self.next = (i + 1) % count;
                return Some(self.subnet(i));
            }
        }
        None
    }

    /// The subnet indices `cidr` covers, if it lies in this set.
    fn range(&self, cidr: &str) -> anyhow::Result<std::ops::Range<usize>> {
        let (addr, prefix) = parse_cidr(cidr)?;
        if addr.is_ipv6() != self.v6 {
            bail!("{cidr} is not of the family of this cluster CIDR");
        }
        let width = bits(self.v6);
        let value = to_u128(addr) & mask(prefix, width);
        if prefix < self.cluster_prefix || value & mask(self.cluster_prefix, width) != self.base {
            bail!("{cidr} is out of the cluster CIDR");
        }
        let shift = width - self.node_prefix;
        let first = ((value - self.base) >> shift) as usize;
        let count = if prefix >= self.node_prefix {
            1
        } else {
            1usize << (self.node_prefix - prefix)
        };
        Ok(first..(first + count).min(self.used.len()))
    }

    pub fn occupy(&mut self, cidr: &str) -> anyhow::Result<()> {
        for i in self.range(cidr)? {
            if !self.used[i] {
                self.used[i] = true;
                self.in_use += 1;
            }
        }
        Ok(())
    }

    /// Takes every subnet overlapping `cidr` (of either family), as upstream keeps the
    /// service range out of pod CIDRs; returns how many subnets it covers.
    pub fn occupy_overlapping(&mut self, cidr: &str) -> anyhow::Result<usize> {
        let (addr, prefix) = parse_cidr(cidr)?;
        if addr.is_ipv6() != self.v6 {
            return Ok(0);
        }
        let width = bits(self.v6);
        let (lo, hi) = bounds(to_u128(addr), prefix, width);
        let (cluster_lo, cluster_hi) = bounds(self.base, self.cluster_prefix, width);
        let (lo, hi) = (lo.max(cluster_lo), hi.min(cluster_hi));
        if lo > hi {
            return Ok(0);
        }
        let shift = width - self.node_prefix;
        let (first, last) = (
            ((lo - self.base) >> shift) as usize,
            ((hi - self.base) >> shift) as usize,
        );
        for i in first..=last {
            if !self.used[i] {
                self.used[i] = true;
                self.in_use += 1;
            }
        }
        Ok(last - first + 1)
    }

    pub fn release(&mut self, cidr: &str) -> anyhow::Result<()> {
        for i in self.range(cidr)? {
            if self.used[i] {
                self.used[i] = false;
                self.in_use -= 1;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocates_distinct_subnets_until_full() {
        let mut set = CidrSet::new("10.244.0.0/22", 24).unwrap();
        set.occupy("10.244.1.0/24").unwrap();
        assert_eq!(set.allocate().as_deref(), Some("10.244.0.0/24"));
        assert_eq!(set.allocate().as_deref(), Some("10.244.2.0/24"));
        assert_eq!(set.allocate().as_deref(), Some("10.244.3.0/24"));
        assert_eq!(set.allocate(), None);
        set.release("10.244.1.0/24").unwrap();
        assert_eq!(set.allocate().as_deref(), Some("10.244.1.0/24"));
    }

    #[test]
    fn ipv6_and_bad_input() {
        let mut set = CidrSet::new("fd00:10:244::/56", 64).unwrap();
        assert!(set.is_v6());
        assert_eq!(set.allocate().as_deref(), Some("fd00:10:244::/64"));
        assert_eq!(set.allocate().as_deref(), Some("fd00:10:244:1::/64"));
        assert!(set.occupy("10.0.0.0/24").is_err());
        assert!(set.occupy("fd00:10:245::/64").is_err());
        assert!(
            CidrSet::new("10.0.0.0/8", 26).is_err(),
            "more than 2^16 subnets"
        );
        assert!(CidrSet::new("10.0.0.0/24", 16).is_err());
        assert!(CidrSet::new("nonsense", 24).is_err());
        assert!(CidrSet::new("10.0.0.0/33", 24).is_err());
    }

    #[test]
    fn service_range_is_kept_out() {
        let mut set = CidrSet::new("10.0.0.0/22", 24).unwrap();
        assert_eq!(set.occupy_overlapping("10.0.1.128/25").unwrap(), 1);
        assert_eq!(set.occupy_overlapping("fd00::/112").unwrap(), 0);
        assert_eq!(set.occupy_overlapping("192.168.0.0/16").unwrap(), 0);
        assert_eq!(set.allocate().as_deref(), Some("10.0.0.0/24"));
        assert_eq!(set.allocate().as_deref(), Some("10.0.2.0/24"));
        // A service range wider than the cluster CIDR takes all of it.
        let mut set = CidrSet::new("10.0.0.0/23", 24).unwrap();
        assert_eq!(set.occupy_overlapping("10.0.0.0/8").unwrap(), 2);
        assert_eq!(set.allocate(), None);
        let mut set = CidrSet::new("fd00::/120", 124).unwrap();
        assert_eq!(set.occupy_overlapping("::/0").unwrap(), 16);
    }

    #[test]
    fn occupying_a_wider_cidr_takes_all_it_covers() {
        let mut set = CidrSet::new("10.0.0.0/16", 24).unwrap();
        set.occupy("10.0.0.0/23").unwrap();
        assert_eq!(set.allocate().as_deref(), Some("10.0.2.0/24"));
    }
}
