"""csynth-readiness static checks (eagle4.backends.hls_checks): the designs pass, and each rule catches
a planted violation the way Vitis would ignore or reject it."""

from __future__ import annotations

import pytest

from eagle4.backends import hls_checks


def test_the_designs_pass_the_static_checks():
    assert hls_checks.check_designs() == []


PLANTS = {
    "interface": ("""void helper(int* p) {
#pragma HLS INTERFACE m_axi port = p bundle = gmem0
  p[0] = 1;
}
extern "C" void my_top(int* p) {
#pragma HLS INTERFACE m_axi port = p bundle = gmem0
  helper(p);
}
""", "interface: INTERFACE pragma in helper()"),
    "dataflow-in-loop": ("""void my_top(int n) {
  for (int b = 0; b < n; ++b) {
#pragma HLS DATAFLOW
    a(); b_();
  }
}
""", "dataflow-first"),
    "conditional-task": ("""void region(bool bypass) {
#pragma HLS DATAFLOW
  hls_stream s;
  if (bypass)
    produce_a(s);
  else
    produce_b(s);
  consume(s);
}
""", "dataflow-tasks: 'if'"),
    "statement-before-dataflow": ("""void region() {
  int x = 0;
#pragma HLS DATAFLOW
  a(x);
}
""", "statements precede the DATAFLOW pragma"),
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_planted_violation_fails(tmp_path, plant):
    code, msg = PLANTS[plant]
    f = tmp_path / "x.cpp"
    f.write_text("// a comment with #pragma HLS DATAFLOW in it is not a pragma\n" + code)
    problems = hls_checks.check_file(f, {"my_top"})
    assert any(msg in p for p in problems), problems
    assert all(p.startswith(str(f) + ":") for p in problems)


def test_canonical_forms_pass(tmp_path):
    f = tmp_path / "ok.cpp"
    f.write_text("""template <typename T>
void region(T* p, int n) {
#pragma HLS DATAFLOW
  hls_stream s;
  produce(p, n, s);  // unconditional tasks, the branch lives inside them
  consume(s, p);
}
extern "C" void my_top(int* p, int n) {
#pragma HLS INTERFACE m_axi port = p bundle = gmem0
  for (int i = 0; i < n; ++i) region(p, i);
}
""")
    assert hls_checks.check_file(f, {"my_top"}) == []


# ---- the loop rules of the per-kernel tops and the hot-bundle rule (ports: the top's m_axi ports)
LOOP_PLANTS = {
    "conditional-port-if": ("""void my_top(const float* logits, float* out, int V) {
#pragma HLS INTERFACE m_axi port = logits bundle = gmem0 max_widen_bitwidth = 512
  for (int c = 0; c < (V + 15) / 16; ++c) {
#pragma HLS PIPELINE II = 1
    for (int l = 0; l < 16; ++l) {
#pragma HLS UNROLL
      const int v = c * 16 + l;
      if (v < V) out[v] = logits[v];
    }
  }
}
""", "conditional-port: logits[...] under 'if'"),
    "conditional-port-ternary-write": ("""void my_top(float* probas, int V, int best) {
  for (int c = 0; c < V / 16; ++c) {
#pragma HLS PIPELINE II = 1
    for (int l = 0; l < 16; ++l) {
#pragma HLS UNROLL
      const int v = c * 16 + l;
      v == best ? probas[v] = 1.0f : probas[v] = 0.0f;
    }
  }
}
""", "conditional-port: probas[...] under '?:'"),
    "conditional-port-block": ("""template <typename P>
void core(P mask_bool, int n, bool debug) {
  for (int k = 0; k < n; ++k) {
#pragma HLS PIPELINE II = 1
    for (int i = 0; i < 8; ++i) {
#pragma HLS UNROLL
      if (debug) {
        mask_bool[8 * k + i] = 1;
      }
    }
  }
}
""", "conditional-port: mask_bool[...] under 'if'"),
    "mod64": ("""void core(const long* in, int* out, int K, int n) {
  for (int r = 0; r < n; ++r) {
#pragma HLS PIPELINE II = 1
    const int64_t oi = in[r];
    out[r] = static_cast<int>(oi % K);
  }
}
""", "mod64: '%' on a 64-bit operand inside the pipelined loop"),
    "mod64-cast": ("""void core(const int* in, int* out, int K, int n) {
  for (int r = 0; r < n; ++r) {
#pragma HLS PIPELINE II = 1
    out[r] = static_cast<int>(int64_t(in[r]) % K);
  }
}
""", "mod64"),
    "invariant-condition": ("""void core(const float* delta, float* out, int K, bool write_per_req) {
  for (int w = 0; w <= K; ++w) {
#pragma HLS PIPELINE II = 1
    if (write_per_req) out[w] = delta[w];
  }
}
""", "invariant-condition: out[...] under the loop-invariant test 'write_per_req'"),
    "invariant-condition-ternary": ("""template <typename PTok>
void core(PTok tokens, long* out, const long* tok, const int* top, int K, bool hot) {
  for (int r = 0; r < K; ++r) {
#pragma HLS PIPELINE II = 1
    const int p = top[r];
    out[r] = hot ? tok[p] : tokens[p];
  }
}
""", "invariant-condition: tokens[...] under the loop-invariant test 'hot'"),
    "index64": ("""void core(int* out, int n) {
  for (int64_t p = 0; p < n; ++p) {
#pragma HLS PIPELINE II = 1
    out[p] = 0;
  }
}
""", "index64: int64_t induction variable p"),
}


@pytest.mark.parametrize("plant", sorted(LOOP_PLANTS))
def test_a_planted_loop_violation_fails(tmp_path, plant):
    code, msg = LOOP_PLANTS[plant]
    f = tmp_path / "x.cpp"
    f.write_text(code)
    problems = hls_checks.check_loops(f, {"logits", "probas", "mask_bool", "out", "tokens"})
    assert any(msg in p for p in problems), problems
    assert all(p.startswith(str(f) + ":") for p in problems)


def test_canonical_loops_pass(tmp_path):
    """Whole beats unconditional, the masked tail in its own loop, a select on chip, a 32-bit modulo, a
    conditional scatter outside any unrolled loop and a documented 64-bit loop are all fine."""
    f = tmp_path / "ok.cpp"
    f.write_text("""void my_top(const float* logits, float* probas, int64_t* free_slots, int V, int K, int n) {
  float row_buf[1024];
  const int n_full = V / 16;
  for (int c = 0; c < n_full; ++c) {
#pragma HLS PIPELINE II = 1
    for (int l = 0; l < 16; ++l) {
#pragma HLS UNROLL
      const float x = logits[c * 16 + l];
      row_buf[c * 16 + l] = x > 0.0f ? x : 0.0f;  // a select in registers, on chip
    }
  }
  for (int l = 0; l < V - n_full * 16; ++l) {
#pragma HLS PIPELINE II = 1
    probas[n_full * 16 + l] = row_buf[n_full * 16 + l];
  }
  int nfree = 0;
  for (int i = 0; i < n; ++i) {
#pragma HLS PIPELINE II = 1
    const int r = i % K;  // 32-bit
    if (r == 0) free_slots[i] = -1;  // a data-dependent test in a pipelined (not unrolled) loop
    free_slots[n + i] = i < nfree ? logits[i] : -1;  // the test changes with the loop variable
    nfree += r;
  }
  for (int64_t j = 0; j < n; ++j) {  // 64-bit: the trip count exceeds 2^31 at the bounds
#pragma HLS PIPELINE II = 1
    free_slots[j] = 0;
  }
}
""")
    assert hls_checks.check_loops(f, {"logits", "probas", "free_slots"}) == []


def test_core_accessors_count_as_ports():
    assert hls_checks.accessor_params("""template <typename PTok, typename PHot>
void score(PTok tokens, PHot hot_token_id, PORT(float) curr, int K, int64_t cc, float* scratch) {}
""") == {"tokens", "hot_token_id", "curr"}


def test_a_planted_shared_hot_bundle_fails(tmp_path):
    f = tmp_path / "x.cpp"
    f.write_text("""extern "C" void my_top(const float* logits, const float* temps, float* probas) {
#pragma HLS INTERFACE m_axi port = logits offset = slave bundle = gmem0 max_widen_bitwidth = 512
#pragma HLS INTERFACE m_axi port = temps offset = slave bundle = gmem0
#pragma HLS INTERFACE m_axi port = probas offset = slave bundle = gmem1 max_widen_bitwidth = 512
  probas[0] = logits[0] / temps[0];
}
""")
    problems = hls_checks.check_hot_bundles(f)
    assert len(problems) == 1 and "hot-bundle: hot port logits (512-bit) shares bundle gmem0 with temps" in problems[0]
    f.write_text(f.read_text().replace("port = temps offset = slave bundle = gmem0", "port = temps offset = slave bundle = gmem2"))
    assert hls_checks.check_hot_bundles(f) == []


def test_the_loop_rules_see_the_per_kernel_ports():
    """The per-kernel tops' m_axi ports are found (the loop rules would pass vacuously without them)."""
    from eagle4.backends import csim_build, hls_designs

    ds = hls_designs.designs(csim_build.HLS_DIR)
    per_kernel = {n: d for n, d in ds.items() if d.tb}
    assert len(per_kernel) == 7
    for name in per_kernel:
        ports = {p for f in hls_designs.synth_sources(name, ds) for p, _, _ in hls_checks.maxi_ports(f.read_text())}
        assert len(ports) >= 3, (name, ports)


# ---- the rules that follow calls (eagle4.backends.hls_dataflow over eagle4.backends.hls_calltree)
def _program(tmp_path, code: str):
    from eagle4.backends import hls_calltree

    f = tmp_path / "x.cpp"
    f.write_text(code)
    return hls_calltree.Program([f]), f


_REGION_HEAD = """#include "eagle4_stream.h"
struct Rec { int v[4]; };
struct Cfg { int n; };
void produce(const int* in, Cfg c, EAGLE4_STREAM(Rec, 2) & s) { for (int i = 0; i < c.n; ++i) { Rec r; r.v[0] = in[i]; s.write(r); } }
void consume(EAGLE4_STREAM(Rec, 2) & s, Cfg c, int* out) { for (int i = 0; i < c.n; ++i) out[i] = s.read().v[0]; }
void forward(EAGLE4_STREAM(Rec, 2) & s, Cfg c, int* out) { consume(s, c, out); }
"""
REGION_PLANTS = {
    "stream-two-readers": ("""void region(const int* in, Cfg c, int* out, int* out2) {
#pragma HLS DATAFLOW
  EAGLE4_STREAM(Rec, 2) s;
  produce(in, c, s);
  consume(s, c, out);
  forward(s, c, out2);
}
""", "dataflow-streams: stream s of the DATAFLOW region of region() has writers ['produce'] and readers "
     "['consume', 'forward']"),
    "stream-no-writer": ("""void region(Cfg c, int* out) {
#pragma HLS DATAFLOW
  EAGLE4_STREAM(Rec, 2) s;
  consume(s, c, out);
}
""", "dataflow-streams: stream s"),
    "shared-static": ("""static int state[16];
void stage_a(const int* in, Cfg c) { for (int i = 0; i < c.n; ++i) state[i] = in[i]; }
void stage_b(Cfg c, int* out) { for (int i = 0; i < c.n; ++i) out[i] = state[i]; }
void region(const int* in, Cfg c, int* out) {
#pragma HLS DATAFLOW
  stage_a(in, c);
  stage_b(c, out);
}
""", "dataflow-shared: static state is touched by tasks stage_a, stage_b"),
    "shared-static-as-argument": ("""static int locs[16];
void stage_a(const int* in, Cfg c) { for (int i = 0; i < c.n; ++i) locs[i] = in[i]; }
void stage_b(const int* l, Cfg c, int* out) { for (int i = 0; i < c.n; ++i) out[i] = l[i]; }
void region(const int* in, Cfg c, int* out) {
#pragma HLS DATAFLOW
  stage_a(in, c);
  stage_b(locs, c, out);
}
""", "dataflow-shared: static locs is touched by tasks stage_a, stage_b"),
    "two-readers-of-an-argument": ("""void stage_a(const int* in, int* x, Cfg c) { for (int i = 0; i < c.n; ++i) x[i] = in[i]; }
void stage_b(const int* in, const int* x, Cfg c, int* out) { for (int i = 0; i < c.n; ++i) out[i] = in[i] + x[i]; }
void region(const int* in, Cfg c, int* out) {
#pragma HLS DATAFLOW
  int x[16];
  stage_a(in, x, c);
  stage_b(in, x, c, out);
}
""", "dataflow-args: read-only in reaches tasks stage_a, stage_b"),
    "config-by-reference": ("""void stage_a(const int* in, int* x, const Cfg& c) { for (int i = 0; i < c.n; ++i) x[i] = in[i]; }
void stage_b(const int* x, const Cfg& c, int* out) { for (int i = 0; i < c.n; ++i) out[i] = x[i]; }
void region(const int* in, const Cfg& c, int* out) {
#pragma HLS DATAFLOW
  int x[16];
  stage_a(in, x, c);
  stage_b(x, c, out);
}
""", "dataflow-args: read-only c reaches tasks stage_a, stage_b"),
    "three-users-of-a-local": ("""void stage_a(const int* in, int* x, Cfg c) { for (int i = 0; i < c.n; ++i) x[i] = in[i]; }
void stage_b(const int* x, Cfg c, int* out) { for (int i = 0; i < c.n; ++i) out[i] = x[i]; }
void region(const int* in, Cfg c, int* out, int* out2) {
#pragma HLS DATAFLOW
  int x[16];
  stage_a(in, x, c);
  stage_b(x, c, out);
  stage_b(x, c, out2);
}
""", "dataflow-args: x reaches tasks stage_a, stage_b, stage_b"),
    "inlined-task": ("""void stage_a(const int* in, Cfg c, int* out) {
#pragma HLS INLINE
  for (int i = 0; i < c.n; ++i) out[i] = in[i];
}
void region(const int* in, Cfg c, int* out) {
#pragma HLS DATAFLOW
  stage_a(in, c, out);
}
""", "dataflow-inline: task stage_a() of the DATAFLOW region of region() is INLINE'd"),
    "task-returns-a-value": ("""int stage_a(const int* in, Cfg c, int* out) { for (int i = 0; i < c.n; ++i) out[i] = in[i]; return 0; }
void region(const int* in, Cfg c, int* out) {
#pragma HLS DATAFLOW
  stage_a(in, c, out);
}
""", "dataflow-void: task stage_a() of the DATAFLOW region of region() returns 'int', not void"),
    "region-returns-a-value": ("""void stage_a(const int* in, Cfg c, int* out) { for (int i = 0; i < c.n; ++i) out[i] = in[i]; }
int region(const int* in, Cfg c, int* out) {
#pragma HLS DATAFLOW
  stage_a(in, c, out);
  return 0;
}
""", "dataflow-void: the DATAFLOW region of region() returns a value"),
    "argument-written-before-read": ("""void stage_a(const int* in, int* state, Cfg c) { for (int i = 0; i < c.n; ++i) state[i] = in[i]; }
void stage_b(const int* state, Cfg c, int* out) { for (int i = 0; i < c.n; ++i) out[i] = state[i]; }
void region(const int* in, int* state, Cfg c, int* out) {
#pragma HLS DATAFLOW
  stage_a(in, state, c);
  stage_b(state, c, out);
}
""", "dataflow-args: state is write in stage_a() and read in stage_b() in the DATAFLOW region of region(); a "
     "region argument has one reader and one writer, read before it is written"),
    "local-read-before-written": ("""void stage_a(const int* x, Cfg c, int* out) { for (int i = 0; i < c.n; ++i) out[i] = x[i]; }
void stage_b(const int* in, int* x, Cfg c) { for (int i = 0; i < c.n; ++i) x[i] = in[i]; }
void region(const int* in, Cfg c, int* out) {
#pragma HLS DATAFLOW
  int x[16];
  stage_a(x, c, out);
  stage_b(in, x, c);
}
""", "dataflow-args: x is read in stage_a() and write in stage_b()"),
    "reader-also-writes": ("""void stage_a(const int* st, Cfg c, int* out) { for (int i = 0; i < c.n; ++i) out[i] = st[i]; }
void stage_b(const int* in, int* st, Cfg c) { for (int i = 0; i < c.n; ++i) st[i] = st[i] + in[i]; }
void region(const int* in, int* st, Cfg c, int* out) {
#pragma HLS DATAFLOW
  stage_a(st, c, out);
  stage_b(in, st, c);
}
""", "dataflow-args: st is read in stage_a() and read/write in stage_b()"),
    "struct-of-ports": ("""template <class T> using VPort = PORT(T);
struct OutPorts { VPort<int> a; VPort<int> b; };
void stage_a(const int* in, const OutPorts& o, Cfg c) { for (int i = 0; i < c.n; ++i) o.a[i] = in[i]; }
void region(const int* in, const OutPorts& o, Cfg c) {
#pragma HLS DATAFLOW
  stage_a(in, o, c);
}
""", "port-struct: parameter o of stage_a() (DATAFLOW region of region()) is a OutPorts holding m_axi ports"),
}


@pytest.mark.parametrize("plant", sorted(REGION_PLANTS))
def test_a_planted_region_violation_fails(tmp_path, plant):
    from eagle4.backends import hls_dataflow

    code, msg = REGION_PLANTS[plant]
    prog, f = _program(tmp_path, _REGION_HEAD + code)
    problems = hls_dataflow.check_regions(prog, f)
    assert any(msg in p for p in problems), problems
    assert all(p.startswith(str(f.resolve()) + ":") for p in problems)


def test_a_canonical_region_passes(tmp_path):
    """Two tasks per local stream (the consumer through a forwarding call), a static private to one task, an
    argument read by one task before another writes it, a scalar struct by value read by all: canonical."""
    from eagle4.backends import hls_dataflow

    prog, f = _program(tmp_path, _REGION_HEAD + """static int own[16];
void stage_a(const int* in, int* state, Cfg c, EAGLE4_STREAM(Rec, 2) & s) {
  for (int i = 0; i < c.n; ++i) { own[i] = in[i] + state[i]; Rec r; r.v[0] = own[i]; s.write(r); }
}
void stage_b(EAGLE4_STREAM(Rec, 2) & s, int* state, Cfg c, int* out) {
  for (int i = 0; i < c.n; ++i) { const int v = s.read().v[0]; out[i] = v; state[i] = v; }
}
void region(const int* in, const int* in2, int* state, Cfg c, int* out, int* out2) {
#pragma HLS DATAFLOW
  EAGLE4_STREAM(Rec, 2) s;
  EAGLE4_STREAM(Rec, 2) t;
  stage_a(in, state, c, s);
  stage_b(s, state, c, out);
  produce(in2, c, t);
  forward(t, c, out2);
}
""")
    assert hls_dataflow.check_regions(prog, f) == []


UNSYNTH_PLANTS = {
    "new": ("int* buf = new int[n];", "unsynthesizable: dynamic allocation 'new' in helper(), which my_top() calls"),
    "malloc": ("int* buf = (int*)malloc(n * 4);", "unsynthesizable: dynamic memory (malloc) in helper()"),
    "vector": ("std::vector<int> buf(n);", "unsynthesizable: std::vector (dynamic memory) in helper()"),
    "file-io": ("FILE* f = fopen(\"x\", \"r\");", "unsynthesizable: operating-system call fopen() in helper()"),
    "recursion": ("if (n > 0) helper(p, n - 1);", "unsynthesizable: recursion helper -> helper in the call tree of my_top()"),
}


@pytest.mark.parametrize("plant", sorted(UNSYNTH_PLANTS))
def test_a_planted_unsynthesizable_construct_fails(tmp_path, plant):
    from eagle4.backends import hls_dataflow

    stmt, msg = UNSYNTH_PLANTS[plant]
    prog, f = _program(tmp_path, f"""#include <vector>
void helper(int* p, int n) {{
  {stmt}
  p[0] = n;
}}
void unused_csim_only(int n) {{ std::vector<int> v(n); }}  // not in the top's call tree: not judged
extern "C" void my_top(int* p, int n) {{
#pragma HLS INTERFACE m_axi port = p bundle = gmem0
  helper(p, n);
}}
""")
    problems = hls_dataflow.check_unsynthesizable(prog, "my_top")
    assert any(msg in p for p in problems), problems
    assert not any("unused_csim_only" in p for p in problems)


def test_the_synthesis_view_drops_csim_only_branches(tmp_path):
    """The checks judge what Vitis compiles: a C-sim-only branch (not EAGLE4_SYNTHESIS / __SYNTHESIS__, or
    EAGLE4_CSIM_COUNTERS) is not judged, the synthesis branch is."""
    from eagle4.backends import hls_calltree, hls_dataflow

    src = """#ifndef EAGLE4_SYNTHESIS
csim_a
#else
synth_a
#endif
#if defined(EAGLE4_CSIM_COUNTERS) && !defined(EAGLE4_SYNTHESIS)
csim_b
#elif defined(__SYNTHESIS__)
synth_b
#endif
#ifndef E4F_MAX_B
kept_unknown
#endif
"""
    view = hls_calltree.synthesis_view(src)
    assert "synth_a" in view and "synth_b" in view and "kept_unknown" in view
    assert "csim_a" not in view and "csim_b" not in view
    assert view.count("\n") == src.count("\n") and len(view) == len(src)  # lines and offsets kept
    prog, _ = _program(tmp_path, """void helper(int* p, int n) {
#ifndef EAGLE4_SYNTHESIS
  int* dbg = new int[n];  // C-sim only
  delete[] dbg;
#endif
  p[0] = n;
}
extern "C" void my_top(int* p, int n) { helper(p, n); }
""")
    assert hls_dataflow.check_unsynthesizable(prog, "my_top") == []


def test_loops_below_a_pipelined_loop_are_unrolled(tmp_path):
    """Vitis unrolls every loop nested in a pipelined one: a conditional port access there is reported
    like one in an explicitly unrolled loop."""
    f = tmp_path / "x.cpp"
    f.write_text("""void core(float* out, const float* acc, int R, int V) {
  for (int r = 0; r < R; ++r) {
#pragma HLS PIPELINE II = 1
    for (int il = 0; il < 4; il += 2) {
      if (il < V) out[r * V + il] = acc[il];
    }
  }
}
""")
    problems = hls_checks.check_loops(f, {"out"})
    assert any("conditional-port: out[...] under 'if' inside the (pipelined, so unrolled) nested loop" in p
               for p in problems), problems


def test_fused_ports_are_found_by_scope(tmp_path):
    """A fused stage's m_axi ports are its port-typed parameters and the port members of its struct; an
    on-chip array of the same name elsewhere is not a port."""
    from eagle4.backends import hls_dataflow

    prog, f = _program(tmp_path, """template <class T> using VPort = PORT(T);
struct Lazy {
  VPort<const float> logits;
  float buf[64];
  void load(int n) {
    for (int v0 = 0; v0 < n; v0 += 16) {
#pragma HLS PIPELINE II = 1
      for (int j = 0; j < 16; ++j) {
#pragma HLS UNROLL
        if (v0 + j < n) buf[v0 + j] = logits[v0 + j];
      }
    }
  }
};
void stage(VPort<const float> coins_p, int n) {
  float coins[16];
  for (int v0 = 0; v0 < n; v0 += 16) {
#pragma HLS PIPELINE II = 1
    for (int j = 0; j < 16; ++j) {
#pragma HLS UNROLL
      if (v0 + j < n) coins[j] = 1.0f;
      if (v0 + j < n) coins[j] = coins_p[v0 + j];
    }
  }
}
""")
    problems = hls_checks.check_loops(f, hls_dataflow.port_scope(prog, f, {}))
    assert any("conditional-port: logits[...]" in p for p in problems), problems
    assert any("conditional-port: coins_p[...]" in p for p in problems), problems
    assert not any("coins[...]" in p for p in problems), problems


BEAT_SRC = """template <class T> using Port = PORT(T);
#define LANES 32
template <typename WT>
void load(Port<const WT> w, Port<const float> s, WT* buf, float* sb, int n) {
  for (int j = 0; j < n; ++j) {
#pragma HLS PIPELINE II = 1
    for (int k = 0; k < LANES; ++k) {
#pragma HLS UNROLL factor = LANES
      buf[j * LANES + k] = w[j * LANES + k];
      sb[j * LANES + k] = s[j * LANES + k];
    }
  }
}
extern "C" void my_top(const float* w, const float* s, float* buf, float* sb, int n) {
  load<float>(w, s, buf, sb, n);
}
"""


def test_a_planted_beat_width_violation_fails(tmp_path):
    """32 lanes of f32 (1024 bits) per II-1 iteration: two 512-bit beats, on both ports (the template's WT
    bound by the top's call); at II 2 they fit."""
    from eagle4.backends import hls_dataflow

    prog, f = _program(tmp_path, BEAT_SRC)
    problems = hls_dataflow.check_beat_width(prog, f, "my_top")
    assert len(problems) == 2 and all("beat-width: 32 lanes x 32-bit" in p and "1024 bits" in p for p in problems)
    assert {p.split("-bit ")[1].split(" ")[0] for p in problems} == {"w", "s"}
    prog, f = _program(tmp_path, BEAT_SRC.replace("II = 1", "II = 2"))
    assert hls_dataflow.check_beat_width(prog, f, "my_top") == []


def test_beat_width_sees_the_fused_port_loops(monkeypatch):
    """Not vacuous: with a 256-bit beat the fused designs' full-beat port loops (the draft spill rows, the verify
    logits rows) are reported."""
    from eagle4.backends import csim_build, hls_calltree, hls_dataflow, hls_designs

    monkeypatch.setattr(hls_dataflow, "BEAT_BITS", 256)
    ds = hls_designs.designs(csim_build.HLS_DIR)
    found = set()
    for name in ("fused_draft", "fused_verify"):
        prog = hls_calltree.design_program(hls_designs.synth_sources(name, ds), csim_build.HLS_DIR)
        for f in prog.files:
            found |= {p.split("-bit ")[1].split(" ")[0] for p in hls_dataflow.check_beat_width(prog, f, ds[name].top)}
    # + the LM head's hidden-row load; its weight ports (an array of ports of a template element type) are not
    # judged: the element width is not resolved lexically
    assert found >= {"spill", "logits"}, found


def test_every_design_is_judged_by_its_rule_set():
    """The rule sets name every rule the checks can report, and both fused designs get the loop, dataflow
    and call-tree rules (not only the file rules)."""
    from eagle4.backends import csim_build, hls_designs

    ds = hls_designs.designs(csim_build.HLS_DIR)
    fused = [n for n, d in ds.items() if hls_checks.design_kind(d) == "fused"]
    assert sorted(fused) == ["fused_draft", "fused_verify"]
    for rule in hls_checks.LOOP_RULES + hls_checks.CALL_RULES + hls_checks.FILE_RULES:
        assert rule in hls_checks.RULESETS["fused"] and rule in hls_checks.RULESETS["per-kernel"]


def test_a_stale_exemption_is_reported(tmp_path):
    stale = hls_checks.Exemption("mod64", "fused/verify_pipeline/verify_pipeline.cpp", "no-such-place", "test")
    problems = hls_checks.check_designs(exemptions=hls_checks.EXEMPTIONS + (stale,))
    assert any("exemption: the exemption of rule mod64 at no-such-place matches no problem" in p for p in problems)


def test_exemptions_are_reviewed_and_open_findings_have_an_owner(record_property):
    """Every exemption names a rule of the rule sets, a place and a reason; the findings left open for their
    owner are listed (the designs pass the checks less exactly these)."""
    rules = set(hls_checks.RULESETS["fused"]) | set(hls_checks.RULESETS["per-kernel"])
    for e in hls_checks.EXEMPTIONS:
        assert e.rule in rules and e.where and len(e.why) > 40, e
    record_property("open_findings", "; ".join(f"{e.rule} at {e.file} {e.where}: {e.open}"
                                               for e in hls_checks.EXEMPTIONS if e.open))
