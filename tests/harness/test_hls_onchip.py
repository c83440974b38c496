"""The on-chip storage measurement (eagle4.budget.onchip): static arrays read from the DWARF of a
synthesis-mode build, rounded to BRAM36/URAM288 words of their element width."""

from __future__ import annotations

import pytest

from eagle4.backends import csim_build
from eagle4.budget import onchip
from eagle4.budget.onchip import Array

pytestmark = pytest.mark.csim


def test_rounding_to_block_ram_words():
    # 16-bit elements use the 18-bit RAMB18 configuration (1024 deep): 1025 of them need two halves
    assert onchip.bram_blocks(1024, 16) == 1 and onchip.bram_blocks(1025, 16) == 2
    # URAM words are 72 bits: a 32-bit array wastes 40 of them, a 128-bit one needs two words side by side
    a = Array("x", 4096, 32)
    assert onchip.physical_bytes(a, "uram") == 288 * 1024 // 8
    assert onchip.uram_blocks(4096, 128) == 2
    assert onchip.physical_bytes(Array("y", 1024, 64), "bram") == 2 * 36 * 1024 // 8  # 72-bit x 512 deep BRAM36s
    assert onchip.physical_bytes(Array("z", 128, 32), "bram") == 18 * 1024 // 8  # a small array: one RAMB18


def test_static_arrays_of_a_planted_source(tmp_path):
    if csim_build.tools_missing():
        pytest.fail(csim_build.tools_missing(), pytrace=False)
    src = tmp_path / "t.cpp"
    src.write_text("""#include <cstdint>
namespace ns { struct S { int64_t a[7][3]; float b[5]; int c; }; static S st; static uint16_t w[1000]; }
int use(int i) { static float local_row[33]; float stack[9] = {0}; local_row[i] = stack[i];
  return ns::st.c + (int)ns::st.a[i][0] + ns::w[i] + (int)ns::st.b[i] + (int)local_row[i]; }
""")
    obj = tmp_path / "t.o"
    p = csim_build.run_cxx([csim_build.find_cxx(), *onchip.SYNTH_FLAGS, "-c", str(src), "-o", str(obj)], "test", tmp_path)
    assert p.returncode == 0, p.stderr
    got = {a.name: (a.elems, a.elem_bits) for a in onchip.static_arrays(obj)}
    assert got == {"ns::st.a": (21, 64), "ns::st.b": (5, 32), "ns::w": (1000, 16), "use::local_row": (33, 32),
                   "use::stack": (9, 32)}  # a local array is on-chip memory too


def test_every_design_is_measured_and_the_fused_pair_is_placed():
    from eagle4.contract import load_contract

    c = load_contract(csim_build.REPO / "contracts" / "default.toml")
    parts = {p.design: p for p in onchip.measure(c)}
    assert set(parts) == set(csim_build.all_designs())
    draft = {x.array.name: x.array for x in parts["fused_draft"].placements}
    # the synthesized draft design keeps the hidden rows as 16-bit words and no f32 copy of them, and the
    # logits tile as pairs of f32 in 64-bit words (URAM words are 72 bits)
    # hidden rows: 16-bit elements aggregated into the MAC array's 64-element words, one bank per row it reads
    hid = next(a for n, a in draft.items() if n.startswith("e4f::draft::hid_bits"))
    assert hid.elem_bits == 64 * 16 and hid.banks > 1
    assert not any("hid_f" in n for n in draft)
    assert next(a for n, a in draft.items() if n.startswith("e4f::draft::logits2")).elem_bits == 64
    # the ping-pong weight tiles: two memories of 512-bit words (AGGREGATE), partitioned by rows into the
    # MAC array's E4F_LMH_VP banks (one word of each of VP vocabulary rows per cycle)
    tiles = [a for n, a in draft.items() if n.split(" ")[0] in ("e4f::draft::wping", "e4f::draft::wpong")]
    assert len(tiles) == 2 and all(a.elem_bits == 512 and a.banks == 8 for a in tiles), tiles
    pair = onchip.combined([parts["fused_draft"], parts["fused_verify"]], "pair")
    assert pair.payload == parts["fused_draft"].payload + parts["fused_verify"].payload
    print("\n" + "\n".join(onchip.summary_line(p) for p in (*parts.values(), pair)))


def test_partitions_and_aggregates_shape_the_memories():
    a = Array("x", 1024, 32, (64, 16))
    cyc = onchip.partition(a, ("cyclic", "E4F_F", 1), {"E4F_F": 8})
    assert cyc.banks == 8 and cyc.elems == 128 and cyc.payload_bytes == a.payload_bytes
    assert onchip.physical_bytes(cyc, "bram") == 8 * onchip.physical_bytes(Array("b", 128, 32), "bram")
    comp = onchip.partition(a, ("complete", "0", 2), {})
    assert comp.banks == 16 and comp.elems == 64
    assert onchip.partition(a, ("complete", "0", 0), {}) is None  # registers
    with pytest.raises(ValueError, match="factor"):
        onchip.partition(a, ("cyclic", "UNKNOWN", 1), {})
    parts, agg = onchip.storage_pragmas(["#pragma HLS ARRAY_PARTITION variable = w type = cyclic factor = 4 dim = 2\n"
                                         "#pragma HLS AGGREGATE variable = w compact = bit\n"])
    assert parts == {"w": ("cyclic", "4", 2)} and agg == {"w"}


def test_fifos_are_bound_like_vitis_defaults():
    """SRL when depth <= 2 and depth x width <= 1024 bits (config_storage defaults); other FIFOs are RAMs:
    LUTRAM up to 64 deep, block RAM beyond (placed and counted with the arrays)."""
    from eagle4.budget.onchip import Fifo

    assert Fifo("a", 2, 512).impl == "srl" and Fifo("b", 2, 1024).impl == "lutram" and Fifo("c", 3, 8).impl == "lutram"
    assert Fifo("d", 64, 6144).impl == "lutram" and Fifo("e", 65, 32).impl == "bram"
    assert Fifo("a", 2, 512).lut_bytes == 512 * 32 // 8 and Fifo("d", 4, 100, count=2).lut_bytes == 2 * 100 * 64 // 8
    s = onchip.storage_of("t", [Array("arr", 1024, 32), Fifo("deep", 1024, 64), Fifo("shallow", 4, 64)], 16.5e6, 67.6e6)
    names = {x.array.name for x in s.placements}
    assert names == {"arr", "fifo deep"} and [f.name for f in s.lut_fifos] == ["shallow"]
    assert s.used("bram") + s.used("uram") == (onchip.physical_bytes(Array("arr", 1024, 32), "bram")
                                               + onchip.physical_bytes(Array("f", 1024, 64), "bram"))
    assert s.fifo_count == 2 and "fifo deep" in {r["array"] for r in onchip.rows([s], "x")}


def test_fifos_of_a_planted_source(tmp_path):
    """A stream's depth and element width come from its template arguments in the DWARF."""
    if csim_build.tools_missing():
        pytest.fail(csim_build.tools_missing(), pytrace=False)
    src = tmp_path / "t.cpp"
    src.write_text("""#include <cstdint>
namespace eagle4 { template <typename T, int DEPTH> class stream { public: T last; void write(const T& x) { last = x; } }; }
struct Rec { float p[3]; int64_t t; };
int use(int i) { eagle4::stream<Rec, 8> s; eagle4::stream<uint16_t, 2> q; Rec r = {}; s.write(r); q.write(i);
  return (int)s.last.t + q.last; }
""")
    obj = tmp_path / "t.o"
    p = csim_build.run_cxx([csim_build.find_cxx(), *onchip.SYNTH_FLAGS, "-c", str(src), "-o", str(obj)], "test", tmp_path)
    assert p.returncode == 0, p.stderr
    got = {a.name: (a.depth, a.width_bits) for a in onchip.static_arrays(obj) if isinstance(a, onchip.Fifo)}
    assert got == {"use::s": (8, 24 * 8), "use::q": (2, 16)}


def test_the_fused_designs_fifos_are_counted():
    from eagle4.contract import load_contract

    c = load_contract(csim_build.REPO / "contracts" / "default.toml")
    parts = {p.design: p for p in onchip.measure(c, ["fused_draft", "fused_verify"])}
    draft = {f.name.split("::")[-1]: f for f in parts["fused_draft"].lut_fifos}
    assert set(draft) == {"cand_s", "k1_s", "work_s", "front_s"}  # the draft DATAFLOW region's four streams
    assert all(f.depth == 4 and f.impl == "lutram" for f in draft.values())
    assert draft["cand_s"].width_bits == 64 * (4 + 8) * 8  # CandRec: 64 f32 probabilities + 64 int64 tokens
    # the verify region's two channels into K7: K4's per-request record and K6's result
    assert sorted(f.name.split("::")[-1] for f in parts["fused_verify"].lut_fifos) == ["k4_s", "k6_s"]
    pair = onchip.combined(list(parts.values()), "pair")
    assert pair.lut_fifo_bytes == parts["fused_draft"].lut_fifo_bytes + parts["fused_verify"].lut_fifo_bytes > 0
    assert "FIFOs" in onchip.summary_line(pair)


def test_an_overflowing_pool_moves_the_cheapest_set():
    """Block RAM over capacity: the arrays whose move to URAM costs the least extra while freeing enough move
    (here one small 32-bit array), not the one with the best ratio that frees far more than needed."""
    big = Array("big", 5120, 1024, (), 16)  # 16 banks of wide words: cheaper in BRAM, ratio URAM/BRAM 1.6
    small = [Array(f"s{i}", 131072, 32) for i in range(4)]  # ratio 2 each
    bram = sum(onchip.physical_bytes(a, "bram") for a in [big, *small])
    cap = bram - onchip.physical_bytes(small[0], "bram") // 2  # half a small array too much
    pl = {x.array.name: x.pool for x in onchip.place([big, *small], cap, 1e9)}
    assert pl["big"] == "bram" and sorted(pl.values()).count("uram") == 1
    total = sum(x.physical_bytes for x in onchip.place([big, *small], cap, 1e9))
    assert total == bram + onchip.physical_bytes(small[0], "uram") - onchip.physical_bytes(small[0], "bram")


def test_bind_storage_pins_an_array():
    """An array the code binds (BIND_STORAGE impl = uram / bram) stays in that pool: the model neither places it
    where it would cost less nor moves it when the pool overflows; unbound URAM arrays are listed."""
    assert onchip.bind_pragmas(["#pragma HLS BIND_STORAGE variable = w type = ram_2p impl = uram\n"
                                "#pragma HLS BIND_STORAGE variable = f type = fifo impl = srl\n"]) == {"w": "uram"}
    small = Array("small", 128, 32, (), 1, "uram")  # one RAMB18 in BRAM, a whole URAM288 when bound there
    assert {x.array.name: x.pool for x in onchip.place([small], 1e9, 1e9)} == {"small": "uram"}
    big = Array("big", 5120, 1024, (), 16, "bram")
    s = Array("s", 131072, 32)
    cap = onchip.physical_bytes(big, "bram")  # only the bound array fits: the unbound one must move
    pl = {x.array.name: x for x in onchip.place([big, s], cap, 1e9)}
    assert pl["big"].pool == "bram" and pl["s"].pool == "uram"
    st = onchip.DesignStorage("d", list(pl.values()), cap, 1e9)
    assert [x.array.name for x in st.unbound_uram] == ["s"]
    from eagle4.contract import load_contract

    c = load_contract(csim_build.REPO / "contracts" / "default.toml")
    draft = {x.array.name.split(" ")[0]: x for x in onchip.measure(c, ["fused_draft"])[0].placements}
    assert draft["e4f::draft::logits2"].array.bind == "uram" and draft["e4f::draft::logits2"].pool == "uram"
