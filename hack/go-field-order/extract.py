#!/usr/bin/env python3
"""Writes the JSON field order of the Kubernetes API's Go structs, read from a kubectl binary.

Upstream kubectl prints the objects it decodes into Go structs (what `create deployment`,
`run`, `expose`... build or get back) with `encoding/json`, so their `-o json` keys come in
struct declaration order, with zero values for fields that lack `omitempty`. Ours needs that
order as data. A Go binary keeps every reflect-visible type: its `.typelink` section lists
offsets of type descriptors, and a struct's descriptor lists its fields in declaration order,
each with its name, tag and type. This walks them (Go 1.24, amd64 layout) and prints one line
per struct of the API packages:

    apps/v1.DeploymentSpec replicas,o=*i selector,o=*@meta/v1.LabelSelector ...

Field types: s string, i integer, f float, b bool, B []byte, ? anything else (interface,
func...), *X pointer, []X slice or array, m:X map to X, @P.T a struct listed in the file,
!P.T a type that marshals itself (Time, Quantity, IntOrString...). `,o` marks omitempty;
`,e` an embedded (promoted) struct. Usage: extract.py KUBECTL_BINARY > OUT
"""
import os
import struct
import sys

KEEP = {  # Go package path prefix -> short prefix in the output
    "k8s.io/api/": "",
    "k8s.io/apimachinery/pkg/apis/meta/v1": "meta/v1",
    "k8s.io/apimachinery/pkg/runtime": "runtime",
    "k8s.io/apimachinery/pkg/api/resource": "resource",
    "k8s.io/apimachinery/pkg/util/intstr": "intstr",
    "k8s.io/apimachinery/pkg/version": "version",
}
# Types with their own MarshalJSON: the struct's fields say nothing about their JSON.
SELF_MARSHALLED = {
    "meta/v1.Time", "meta/v1.MicroTime", "meta/v1.Duration", "meta/v1.FieldsV1",
    "runtime.RawExtension", "runtime.Unknown", "resource.Quantity", "intstr.IntOrString",
}

KIND_MASK = 31
BOOL, INT_KINDS, FLOAT_KINDS = 1, set(range(2, 13)), {13, 14}
ARRAY, INTERFACE, MAP, PTR, SLICE, STRING, STRUCT = 17, 20, 21, 22, 23, 24, 25
TFLAG_UNCOMMON, TFLAG_EXTRA_STAR, TFLAG_NAMED = 1, 2, 4


class Binary:
    def __init__(self, path):
        self.data = open(path, "rb").read()
        self.sections = {}
        shoff, = struct.unpack_from("<Q", self.data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", self.data, 0x3A)
        headers = []
        for i in range(shnum):
            name, _, _, addr, off, size = struct.unpack_from(
                "<IIQQQQ", self.data, shoff + i * shentsize)
            headers.append((name, addr, off, size))
        strtab = headers[shstrndx][2]
        for name, addr, off, size in headers:
            end = self.data.index(b"\0", strtab + name)
            self.sections[self.data[strtab + name:end].decode()] = (addr, off, size)
        self.types_base = self.sections[".rodata"][0]

    def at(self, addr):
        for addr0, off, size in self.sections.values():
            if addr0 <= addr < addr0 + size and off:
                return off + addr - addr0
        raise ValueError(hex(addr))

    def u8(self, a): return self.data[self.at(a)]
    def u64(self, a): return struct.unpack_from("<Q", self.data, self.at(a))[0]
    def i32(self, a): return struct.unpack_from("<i", self.data, self.at(a))[0]
    def u16(self, a): return struct.unpack_from("<H", self.data, self.at(a))[0]

    def varint(self, a):
        value = shift = 0
        while True:
            b = self.u8(a)
            a += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return value, a

    def name(self, a):
        """(flags, name, tag) of an abi.Name."""
        flags = self.u8(a)
        n, p = self.varint(a + 1)
        off = self.at(p)
        text = self.data[off:off + n].decode()
        tag = ""
        if flags & 2:
            t, q = self.varint(p + n)
            off = self.at(q)
            tag = self.data[off:off + t].decode()
        return flags, text, tag

    def typelinks(self):
        addr, off, size = self.sections[".typelink"]
        return [self.types_base + struct.unpack_from("<i", self.data, off + 4 * i)[0]
                for i in range(size // 4)]


class Walker:
    def __init__(self, binary):
        self.b = binary
        self.structs = {}
        self.seen = set()

    def kind(self, t): return self.b.u8(t + 23) & KIND_MASK

    def type_name(self, t):
        tflag = self.b.u8(t + 20)
        _, text, _ = self.b.name(self.b.types_base + self.b.i32(t + 40))
        return text[1:] if tflag & TFLAG_EXTRA_STAR else text

    def qualified(self, t):
        """`apps/v1.Deployment` for a named type of a kept package, else None."""
        tflag = self.b.u8(t + 20)
        if not tflag & TFLAG_UNCOMMON or not tflag & TFLAG_NAMED:
            return None
        extra = {STRUCT: 32, PTR: 8, SLICE: 8, MAP: 64, ARRAY: 24}.get(self.kind(t), 0)
        pkg_off = self.b.i32(t + 48 + extra)
        if pkg_off == 0:
            return None
        _, pkg, _ = self.b.name(self.b.types_base + pkg_off)
        for prefix, short in KEEP.items():
            if pkg == prefix or (prefix.endswith("/") and pkg.startswith(prefix)):
                rest = pkg[len(prefix):] if prefix.endswith("/") else ""
                local = self.type_name(t).split(".")[-1]
                return f"{short or rest}.{local}" if (short or rest) else None
        return None

    def expr(self, t):
        k = self.kind(t)
        q = self.qualified(t)
        if q in SELF_MARSHALLED:
            return "!" + q
        if k == STRUCT:
            if q is None:
                return "?"
            self.visit(t)
            return "@" + q
        if k == PTR:
            return "*" + self.expr(self.b.u64(t + 48))
        if k in (SLICE, ARRAY):
            elem = self.b.u64(t + 48)
            if self.kind(elem) == 8 and k == SLICE:  # uint8
                return "B"
            return "[]" + self.expr(elem)
        if k == MAP:
            return "m:" + self.expr(self.b.u64(t + 56))
        if k == STRING:
            return "s"
        if k == BOOL:
            return "b"
        if k in INT_KINDS:
            return "i"
        if k in FLOAT_KINDS:
            return "f"
        return "?"

    def visit(self, t):
        q = self.qualified(t)
        if q is None or q in self.seen or q in SELF_MARSHALLED or q.split(".")[-1][0].islower():
            return
        self.seen.add(q)
        fields_ptr, count = self.b.u64(t + 56), self.b.u64(t + 64)
        fields = []
        for i in range(count):
            f = fields_ptr + 24 * i
            flags, go_name, tag = self.b.name(self.b.u64(f))
            ftype = self.b.u64(f + 8)
            embedded = bool(flags & 8)
            json_tag = None
            for part in tag.split(" "):
                if part.startswith('json:"'):
                    json_tag = part[6:-1]
            name, opts = go_name, []
            if json_tag is not None:
                name, *opts = json_tag.split(",")
                if name == "-" and not opts:
                    continue
            if not flags & 1 and not embedded:  # unexported
                continue
            marks = ""
            if "omitempty" in opts:
                marks += ",o"
            if embedded and (json_tag is None or name == ""):
                marks += ",e"
                name = go_name.split(".")[-1]
            elif name == "":
                name = go_name
            fields.append(f"{name}{marks}={self.expr(ftype)}")
        self.structs[q] = fields


def main():
    binary = Binary(sys.argv[1])
    walker = Walker(binary)
    for t in binary.typelinks():
        try:
            walker.expr(t)
        except (ValueError, UnicodeDecodeError, IndexError, struct.error):
            continue
    print("# Go struct field order of the API types, extracted by hack/go-field-order/extract.py")
    print(f"# from {os.path.basename(sys.argv[1])}. Do not edit; regenerate.")
    for q in sorted(walker.structs):
        print(q, " ".join(walker.structs[q]))


if __name__ == "__main__":
    main()
