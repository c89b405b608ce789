"""A small GGUF (v3) reader and writer for the zoo's scripts: metadata of every type, and F32 or
F16 tensors (numpy float32 or float16 arrays; zoo-wide stores its matrices in F16). It follows the conventions of llama.cpp and of vkllm's
own writer (engine/gguf): little-endian, 32-byte alignment, tensor dims in ggml order (dims[0] is
the row length, so a numpy array of shape (rows, cols) has dims [cols, rows])."""
import struct

import numpy as np

MAGIC = b"GGUF"
ALIGNMENT = 32
# GGUF metadata value types
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
SCALAR_FORMATS = {UINT8: "<B", INT8: "<b", UINT16: "<H", INT16: "<h", UINT32: "<I", INT32: "<i",
                  FLOAT32: "<f", BOOL: "<?", UINT64: "<Q", INT64: "<q", FLOAT64: "<d"}
GGML_TYPE_F32 = 0
GGML_TYPE_F16 = 1
DTYPES = {GGML_TYPE_F32: np.float32, GGML_TYPE_F16: np.float16}  # the tensor types the zoo reads and writes


class Value:
    """A typed metadata value: `kind` is a GGUF type; arrays also carry `element` (their items' type)."""

    def __init__(self, kind, value, element=None):
        self.kind, self.value, self.element = kind, value, element

    def __repr__(self):
        return f"Value({self.kind}, {self.value!r})"


def string(v):
    return Value(STRING, v)


def u32(v):
    return Value(UINT32, int(v))


def f32(v):
    return Value(FLOAT32, float(v))


def boolean(v):
    return Value(BOOL, bool(v))


def array(element, items):
    return Value(ARRAY, list(items), element)


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ValueError("GGUF file ends early")
        v = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += size
        return v

    def string(self):
        n = self.take("<Q")
        if self.pos + n > len(self.data):
            raise ValueError("GGUF string runs past the end")
        s = self.data[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def value(self, kind):
        if kind == STRING:
            return Value(STRING, self.string())
        if kind == ARRAY:
            element, n = self.take("<I"), self.take("<Q")
            return Value(ARRAY, [self.value(element).value for _ in range(n)], element)
        if kind not in SCALAR_FORMATS:
            raise ValueError(f"unknown GGUF value type {kind}")
        return Value(kind, self.take(SCALAR_FORMATS[kind]))


def read(path):
    """Returns (metadata: dict key -> Value in file order, tensors: dict name -> np.ndarray, float32
    for an F32 tensor, float16 for an F16 one). Tensors come back in numpy order (shape = reversed
    ggml dims)."""
    data = open(path, "rb").read()
    r = Reader(data)
    if data[:4] != MAGIC:
        raise ValueError(f"{path}: not a GGUF file")
    r.pos = 4
    version, n_tensors, n_kv = r.take("<I"), r.take("<Q"), r.take("<Q")
    if version not in (2, 3):
        raise ValueError(f"{path}: GGUF version {version} not supported")
    metadata = {}
    for _ in range(n_kv):
        key = r.string()
        metadata[key] = r.value(r.take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.take("<Q") for _ in range(r.take("<I"))]
        infos.append((name, dims, r.take("<I"), r.take("<Q")))
    alignment = metadata["general.alignment"].value if "general.alignment" in metadata else ALIGNMENT
    start = (r.pos + alignment - 1) // alignment * alignment
    tensors = {}
    for name, dims, kind, offset in infos:
        if kind not in DTYPES:
            raise ValueError(f"{path}: tensor {name} is of type {kind}; the zoo reads F32 and F16 only")
        count = int(np.prod(dims))
        a = np.frombuffer(data, DTYPES[kind], count, start + offset)
        tensors[name] = a.reshape(list(reversed(dims))).copy()
    return metadata, tensors


def _pack_value(v):
    if v.kind == STRING:
        b = v.value.encode("utf-8")
        return struct.pack("<Q", len(b)) + b
    if v.kind == ARRAY:
        return struct.pack("<IQ", v.element, len(v.value)) + b"".join(
            _pack_value(Value(v.element, item)) for item in v.value)
    return struct.pack(SCALAR_FORMATS[v.kind], v.value)


def write(path, metadata, tensors):
    """metadata: dict key -> Value (written in order); tensors: dict name -> numpy array, written as
    F16 when its dtype is float16, else as F32."""
    out = bytearray(MAGIC + struct.pack("<IQQ", 3, len(tensors), len(metadata)))
    for key, v in metadata.items():
        out += _pack_value(string(key)) + struct.pack("<I", v.kind) + _pack_value(v)
    offset, blobs = 0, []
    for name, a in tensors.items():
        kind = GGML_TYPE_F16 if a.dtype == np.float16 else GGML_TYPE_F32
        a = np.ascontiguousarray(a, dtype=DTYPES[kind])
        dims = list(reversed(a.shape))
        out += _pack_value(string(name)) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", kind, offset)
        blob = a.tobytes()
        blobs.append(blob)
        offset += (len(blob) + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
    out += bytes(-len(out) % ALIGNMENT)
    for blob in blobs:
        out += blob + bytes(-len(blob) % ALIGNMENT)
    with open(path, "wb") as f:
        f.write(out)
