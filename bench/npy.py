"""The (d, 2) float64 tables of agld and the oracles (posterior.npy, an oracle's --out: mean,
sd a row, C order, as encode_npy_f64 writes them), read without numpy: read_npy(path) returns
(means, sds). The bench scripts import it (PYTHONPATH=bench for a script on stdin)."""
import ast
import struct


def read_npy(path):
    raw = open(path, "rb").read()
    header_len = struct.unpack("<H", raw[8:10])[0]
    rows, cols = ast.literal_eval(raw[10:10 + header_len].decode())["shape"]
    if cols != 2:
        raise ValueError(f"{path}: a ({rows}, {cols}) table, not (d, 2)")
    values = struct.unpack(f"<{2 * rows}d", raw[10 + header_len:10 + header_len + 16 * rows])
    return values[0::2], values[1::2]
