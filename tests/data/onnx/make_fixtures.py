#!/usr/bin/python3
"""Writes the small .onnx files tests/test_onnx.c reads. Run it by hand from the
repository root when a fixture has to change, then commit the files it writes:

    /usr/bin/python3 tests/data/onnx/make_fixtures.py

It needs Debian's python3-onnx and python3-torch (apt-get install -y python3-onnx
python3-torch), which only /usr/bin/python3 sees. The tests themselves need no
Python: they read the committed files.

Every weight is given by a formula (fval, ival below) instead of random numbers,
so the C test recomputes the exact values on its own rather than trusting
numbers this script prints; the formulas give values float32 holds exactly.
Besides files from torch.onnx.export and onnx.helper, one file (wire.onnx) is
encoded byte by byte here, to show the reader takes the protobuf encodings other
writers use: packed `dims`, unpacked `float_data`, fields out of order.
"""

import os
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.dirname(os.path.abspath(__file__))


def fval(j, k):
    """Element k of weight tensor j: multiples of 1/16 in [-0.5, 0.5]."""
    return ((k * 7 + j * 3) % 17 - 8) / 16.0


def write(name, model, check=True):
    if check:
        onnx.checker.check_model(model)
    data = model.SerializeToString()
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
    print(f"{name}: {len(data)} bytes")


# ---- 1. convnet.onnx: conv -> bn -> relu -> gap -> gemm, exported by torch ----------

def convnet():
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(4)
            self.relu = torch.nn.ReLU()
            self.gap = torch.nn.AdaptiveAvgPool2d(1)
            self.fc = torch.nn.Linear(4, 3)

        def forward(self, x):
            return self.fc(torch.flatten(self.gap(self.relu(self.bn(self.conv(x)))), 1))

    net = Net().eval()
    # Tensor j of this list gets fval(j, k); the running variance must be positive.
    params = [net.conv.weight, net.conv.bias, net.bn.weight, net.bn.bias,
              net.bn.running_mean, net.fc.weight, net.fc.bias]
    with torch.no_grad():
        for j, p in enumerate(params):
            v = [fval(j, k) for k in range(p.numel())]
            p.copy_(torch.tensor(v, dtype=torch.float32).reshape(p.shape))
        net.bn.running_var.copy_(torch.tensor([0.5, 0.75, 1.0, 1.25]))
    path = os.path.join(OUT, "convnet.onnx")
    # PRESERVE keeps the BatchNormalization node; the default EVAL mode folds it
    # into the convolution, and the mapper wants to see a real BN.
    torch.onnx.export(net, torch.zeros(1, 3, 8, 8), path, opset_version=12,
                      do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE,
                      input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    m = onnx.load(path)
    onnx.checker.check_model(m)
    print(f"convnet.onnx: {os.path.getsize(path)} bytes, producer {m.producer_name} "
          f"{m.producer_version}, ir {m.ir_version}, opset {m.opset_import[0].version}")
    for n in m.graph.node:
        print(f"  node {n.op_type} {n.name} {list(n.input)} -> {list(n.output)}")
    for t in m.graph.initializer:
        print(f"  init {t.name} {list(t.dims)} raw={t.HasField('raw_data')}")

    # 2. convnet_typed.onnx: the same model with every initializer moved from
    # raw_data into the typed field (float_data), as other writers do.
    typed = onnx.load(path)
    for t in typed.graph.initializer:
        a = numpy_helper.to_array(t)
        t.ClearField("raw_data")
        assert t.data_type == TensorProto.FLOAT
        t.float_data.extend(a.flatten().tolist())
    write("convnet_typed.onnx", typed)


# ---- 3. constant.onnx: Constant nodes, every attribute kind, optional inputs -------

def constant():
    X = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 12])
    Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3, 4, 1])
    nodes = [
        helper.make_node("Constant", [], ["shape"], name="c_shape",
                         value=helper.make_tensor("shape_value", TensorProto.INT64, [3],
                                                  [-1, 3, 4])),
        helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
        helper.make_node("Constant", [], ["half"], name="c_half", value_float=0.5),
        helper.make_node("Mul", ["r", "half"], ["m"], name="mul", domain="ai.onnx"),
        helper.make_node("Constant", [], ["bias4"], name="c_bias",
                         value_floats=[1.0, -2.0, 0.25, 8.0]),
        helper.make_node("Add", ["m", "bias4"], ["a"]),  # no name
        helper.make_node("Constant", [], ["axes"], name="c_axes", value_ints=[3]),
        helper.make_node("Unsqueeze", ["a", "axes"], ["u"], name="unsqueeze"),
        # Clip with its optional min left out ("") and max given.
        helper.make_node("Clip", ["u", "", "cmax"], ["y"], name="clip"),
        # A node of another domain, carrying one attribute of every kind.
        helper.make_node("AllAttrs", ["a"], ["side", ""], name="all_attrs", domain="petal.test",
                         f=-1.5, i=-7, s=b"same", ints=[1, -2, 1 << 40], floats=[0.5, -0.25],
                         strings=[b"ab", b"", b"xyz"],
                         t=helper.make_tensor("t_attr", TensorProto.INT32, [2], [5, -6]),
                         tensors=[helper.make_tensor("t0", TensorProto.FLOAT, [1], [2.5]),
                                  helper.make_tensor("t1", TensorProto.INT64, [], [9])],
                         g=helper.make_graph(
                             [helper.make_node("Identity", ["gi"], ["go"])], "sub",
                             [helper.make_tensor_value_info("gi", TensorProto.FLOAT, [1])],
                             [helper.make_tensor_value_info("go", TensorProto.FLOAT, [1])])),
    ]
    cmax = helper.make_tensor("cmax", TensorProto.FLOAT, [], [6.0])
    vi = [helper.make_tensor_value_info("r", TensorProto.FLOAT, ["batch", 3, 4])]
    g = helper.make_graph(nodes, "constants", [X], [Y], [cmax], value_info=vi)
    m = helper.make_model(g, producer_name="make_fixtures.py", producer_version="1",
                          opset_imports=[helper.make_opsetid("", 13),
                                         helper.make_opsetid("petal.test", 1)])
    m.ir_version = 8
    # The checker does not know petal.test's AllAttrs; check the rest of the graph.
    write("constant.onnx", m, check=False)


# ---- 4. quant.onnx: int8/uint8 quantized conv, every storage form ---------------------

def quant():
    X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])
    Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])
    # int8 weights covering the whole range, -128 and 127 included, in raw_data.
    w = np.array([((k * 15) % 256) - 128 for k in range(18)], dtype=np.int8).reshape(2, 1, 3, 3)
    inits = [
        helper.make_tensor("x_scale", TensorProto.FLOAT, [], [0.125]),          # float_data
        helper.make_tensor("x_zp", TensorProto.UINT8, [], [200]),               # int32_data
        numpy_helper.from_array(w, "w"),                                        # raw_data
        helper.make_tensor("w_scale", TensorProto.FLOAT, [2], [0.5, 0.25]),
        helper.make_tensor("w_zp", TensorProto.INT8, [2], [0, 0]),              # int32_data
        numpy_helper.from_array(np.array(3, dtype=np.uint8), "y_zp"),           # raw_data
        helper.make_tensor("y_scale", TensorProto.FLOAT, [], struct.pack("<f", 0.0625), raw=True),
        helper.make_tensor("bias", TensorProto.INT32, [2], [-100000, 123456]),  # int32_data
        numpy_helper.from_array(np.array([-2147483648, 2147483647], dtype=np.int32), "i32raw"),
        helper.make_tensor("i64", TensorProto.INT64, [2], [-(1 << 40), 7]),     # int64_data
        numpy_helper.from_array(np.array([-(1 << 62), 1], dtype=np.int64), "i64raw"),
        helper.make_tensor("i8typed", TensorProto.INT8, [3], [-128, 0, 127]),
        numpy_helper.from_array(np.array([0, 128, 255], dtype=np.uint8), "u8raw"),
        helper.make_tensor("u8typed", TensorProto.UINT8, [3], [0, 128, 255]),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["xq"], name="q"),
        helper.make_node("QLinearConv", ["xq", "x_scale", "x_zp", "w", "w_scale", "w_zp",
                                         "y_scale", "y_zp", "bias"], ["yq"], name="qconv",
                         pads=[1, 1, 1, 1], group=1),
        helper.make_node("DequantizeLinear", ["yq", "y_scale", "y_zp"], ["y"], name="dq"),
    ]
    g = helper.make_graph(nodes, "quant", [X], [Y], inits)
    m = helper.make_model(g, producer_name="make_fixtures.py", producer_version="1",
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    write("quant.onnx", m)


# ---- 5. broken files, each with one fault --------------------------------------------

def tiny(inits, nodes=None, domain_imports=None, inputs=None, outputs=None):
    """x -> Identity -> y plus the given initializers; not run through the checker."""
    X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    nodes = nodes or [helper.make_node("Identity", ["x"], ["y"], name="id")]
    g = helper.make_graph(nodes, "tiny", inputs or [X], outputs or [Y], inits)
    opsets = [helper.make_opsetid("", 13)] + (domain_imports or [])
    m = helper.make_model(g, producer_name="make_fixtures.py", opset_imports=opsets)
    m.ir_version = 8
    return m


def bare(name, dtype, dims):
    """A TensorProto built field by field: onnx.helper refuses inconsistent ones."""
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    return t


def broken():
    t = bare("w", TensorProto.FLOAT, [2, 3])
    t.raw_data = b"\0" * 20
    write("bad_raw_size.onnx", tiny([t]), check=False)

    t = bare("w", TensorProto.FLOAT, [2, 3])
    t.float_data.extend([1.0] * 5)
    write("bad_float_count.onnx", tiny([t]), check=False)

    t = bare("w", TensorProto.FLOAT, [2, 3])
    t.data_location = TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", "w.bin"
    write("external.onnx", tiny([t]), check=False)

    write("no_op_type.onnx", tiny([], nodes=[
        helper.make_node("Identity", ["x"], ["h"], name="first"),
        helper.make_node("", ["h"], ["y"], name="nameless_op")]), check=False)

    t = bare("w", TensorProto.FLOAT, [-2, -3])
    t.float_data.extend([1.0] * 6)
    write("negative_dim.onnx", tiny([t]), check=False)

    t = bare("w", TensorProto.FLOAT, [100000, 100000])
    write("huge_dims.onnx", tiny([t]), check=False)

    # 1e6 elements: under the element limit but far more than the file holds.
    t = bare("w", TensorProto.FLOAT, [1000, 1000])
    write("dims_beyond_file.onnx", tiny([t]), check=False)

    t = bare("zp", TensorProto.UINT8, [2])
    t.int32_data.extend([7, 300])
    write("uint8_range.onnx", tiny([t]), check=False)

    write("undefined_input.onnx", tiny([], nodes=[
        helper.make_node("Identity", ["x"], ["h"], name="first"),
        helper.make_node("Add", ["h", "nowhere"], ["y"], name="add")]), check=False)

    write("unknown_domain.onnx", tiny([], nodes=[
        helper.make_node("Fancy", ["x"], ["y"], name="fancy", domain="com.example")]),
        check=False)

    # A valid model with a FLOAT16 initializer: it loads; only reading its data fails.
    t = helper.make_tensor("half", TensorProto.FLOAT16, [2], np.array([1.0, -2.0],
                           dtype=np.float16).view(np.uint16).tolist())
    write("float16.onnx", tiny([t]))


# ---- 6. wire.onnx: encoded by hand --------------------------------------------------

def varint(v):
    v &= (1 << 64) - 1  # negative int64s are ten-byte varints
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wt):
    return varint(field << 3 | wt)


def ld(field, payload):
    return key(field, 2) + varint(len(payload)) + payload


def vint(field, v):
    return key(field, 0) + varint(v)


def wire():
    # W: FLOAT [2, 2], dims packed (one length-delimited record), float_data
    # unpacked (one fixed32 record per value), name written last.
    w_vals = [1.5, -2.0, 0.25, 1024.0]
    w = ld(1, varint(2) + varint(2)) + vint(2, TensorProto.FLOAT)
    for v in w_vals:
        w += key(4, 5) + struct.pack("<f", v)
    w += ld(8, b"W")
    # K: INT64 [3], dims unpacked, int64_data unpacked varints (one negative).
    k = ld(8, b"K") + vint(1, 3) + vint(2, TensorProto.INT64)
    for v in [-5, 0, 1 << 33]:
        k += vint(7, v)
    # Add(x, W) -> s, then Transpose(s) -> y with a packed INTS attribute (ONNX
    # declares ints unpacked), the node's fields out of order.
    add = ld(1, b"x") + ld(1, b"W") + ld(2, b"s") + ld(4, b"Add") + ld(3, b"add")
    perm = ld(1, b"perm") + vint(20, 7) + ld(8, varint(1) + varint(0))
    tr = ld(5, perm) + ld(4, b"Transpose") + ld(2, b"y") + ld(1, b"s")
    # TypeProto{tensor_type: {elem_type: FLOAT, shape: {dim: [{dim_value: d}...]}}}
    def tensor_type(dims):
        shape = b"".join(ld(1, vint(1, d)) for d in dims)
        return ld(1, vint(1, TensorProto.FLOAT) + ld(2, shape))

    vin = ld(1, b"x") + ld(2, tensor_type([2, 2]))
    vout = ld(1, b"y") + ld(2, tensor_type([2, 2]))
    # Graph fields out of number order: output, initializers, node, input, name.
    graph = ld(12, vout) + ld(5, w) + ld(5, k) + ld(1, add) + ld(1, tr) + ld(11, vin) + ld(2, b"wire")
    # Model: opset first, graph, then ir_version.
    model = ld(8, ld(1, b"") + vint(2, 13)) + ld(7, graph) + vint(1, 7)
    with open(os.path.join(OUT, "wire.onnx"), "wb") as f:
        f.write(model)
    # Cross-check with the onnx package's own parser.
    m = onnx.load(os.path.join(OUT, "wire.onnx"))
    assert list(m.graph.initializer[0].dims) == [2, 2]
    assert list(m.graph.initializer[0].float_data) == w_vals
    assert list(m.graph.initializer[1].int64_data) == [-5, 0, 1 << 33]
    assert list(m.graph.node[1].attribute[0].ints) == [1, 0]
    onnx.checker.check_model(m)
    print(f"wire.onnx: {len(model)} bytes")


if __name__ == "__main__":
    print(f"onnx {onnx.__version__}, numpy {np.__version__}, python {sys.version.split()[0]}")
    convnet()
    constant()
    quant()
    broken()
    wire()
